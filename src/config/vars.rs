//! The environment as configuration reads it: every reader here trims a value and counts an
//! empty one as unset (SAM passes parameters left empty so), and names the variable in its error.

use super::ConfigError;
use std::collections::HashMap;
use std::fmt;
use std::ops::RangeInclusive;

/// The variables configuration is read from; tests pass their own map instead of the process
/// environment.
pub(crate) struct Vars<'a> {
    map: &'a HashMap<String, String>,
    /// Every name asked for, so a test can hold the settings list to what the parsers read.
    #[cfg(test)]
    read: std::cell::RefCell<std::collections::BTreeSet<&'static str>>,
}

impl<'a> Vars<'a> {
    pub(crate) fn new(map: &'a HashMap<String, String>) -> Self {
        Self {
            map,
            #[cfg(test)]
            read: Default::default(),
        }
    }

    /// The value as given, untrimmed; `None` only when the variable is absent.
    pub(crate) fn raw(&self, name: &'static str) -> Option<&'a str> {
        #[cfg(test)]
        self.read.borrow_mut().insert(name);
        self.map.get(name).map(String::as_str)
    }

    #[cfg(test)]
    pub(crate) fn names_read(&self) -> std::collections::BTreeSet<&'static str> {
        self.read.borrow().clone()
    }

    fn trimmed(&self, name: &'static str) -> Option<&'a str> {
        self.raw(name)
            .map(str::trim)
            .filter(|value| !value.is_empty())
    }

    /// The trimmed value; `None` when unset or empty.
    pub(crate) fn text(&self, name: &'static str) -> Option<String> {
        self.trimmed(name).map(str::to_owned)
    }

    /// Whether the process runs under Lambda (whose runtime API only Lambda sets).
    pub(crate) fn under_lambda(&self) -> bool {
        self.trimmed("AWS_LAMBDA_RUNTIME_API").is_some()
    }

    /// A comma-separated list, each item trimmed, empty items dropped.
    pub(crate) fn list(&self, name: &'static str) -> Vec<String> {
        self.trimmed(name)
            .map(|names| {
                names
                    .split(',')
                    .map(str::trim)
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(crate) fn number<T: std::str::FromStr>(
        &self,
        name: &'static str,
        default: T,
    ) -> Result<T, ConfigError> {
        match self.trimmed(name) {
            None => Ok(default),
            Some(value) => value.parse().map_err(|_| ConfigError::Invalid {
                name,
                expected: "a non-negative whole number",
                value: value.to_owned(),
            }),
        }
    }

    /// A whole number within `range`.
    pub(crate) fn bounded<T>(
        &self,
        name: &'static str,
        default: T,
        range: RangeInclusive<T>,
    ) -> Result<T, ConfigError>
    where
        T: std::str::FromStr + PartialOrd + fmt::Display + Copy,
    {
        let value = self.number(name, default)?;
        if range.contains(&value) {
            Ok(value)
        } else {
            Err(ConfigError::OutOfRange {
                name,
                value: value.to_string(),
                min: range.start().to_string(),
                max: range.end().to_string(),
            })
        }
    }

    /// A whole number within `range`, or `None` when the variable is unset.
    pub(crate) fn optional_bounded<T>(
        &self,
        name: &'static str,
        range: RangeInclusive<T>,
    ) -> Result<Option<T>, ConfigError>
    where
        T: std::str::FromStr + PartialOrd + fmt::Display + Copy,
    {
        if self.trimmed(name).is_none() {
            return Ok(None);
        }
        self.bounded(name, *range.start(), range).map(Some)
    }

    pub(crate) fn flag(&self, name: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self
            .raw(name)
            .map(|value| value.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("") => Ok(default),
            Some("1" | "true" | "yes" | "on") => Ok(true),
            Some("0" | "false" | "no" | "off") => Ok(false),
            Some(other) => Err(ConfigError::Invalid {
                name,
                expected: "true or false",
                value: other.to_owned(),
            }),
        }
    }

    /// An optional `http(s)://` endpoint, without a trailing slash.
    pub(crate) fn http_endpoint(&self, name: &'static str) -> Result<Option<String>, ConfigError> {
        let Some(value) = self.trimmed(name) else {
            return Ok(None);
        };
        if (value.starts_with("http://") || value.starts_with("https://"))
            && reqwest::Url::parse(value).is_ok()
        {
            Ok(Some(value.trim_end_matches('/').to_owned()))
        } else {
            Err(ConfigError::Invalid {
                name,
                expected: "an http:// or https:// URL",
                value: value.to_owned(),
            })
        }
    }
}
