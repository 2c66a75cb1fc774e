//! Sampling options a client may set for a run: `temperature`, `top_p`, `max_tokens`, `stop` and
//! `seed`, from `RunAgentInput.forwardedProps` (or an AgentScope request's own fields). Checked
//! here, once; the providers pass them on as they are.

use super::error::InputError;
use serde_json::Value;

/// The most stop sequences a run may set (OpenAI's limit, and Bedrock's is larger).
pub(crate) const MAX_STOP_SEQUENCES: usize = 4;
/// The longest stop sequence accepted, in characters.
pub(crate) const MAX_STOP_CHARS: usize = 256;

/// Checked sampling options; `None`/empty leaves the provider's default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sampling {
    /// 0–2.
    pub temperature: Option<f64>,
    /// Above 0, at most 1.
    pub top_p: Option<f64>,
    /// At least 1; capped by the server's `MAX_OUTPUT_TOKENS`.
    pub max_tokens: Option<u32>,
    /// Up to [`MAX_STOP_SEQUENCES`] non-empty strings.
    pub stop: Vec<String>,
    /// Sent to providers that take one (OpenAI-compatible); Bedrock's Converse API has none.
    pub seed: Option<i64>,
}

impl Sampling {
    /// Reads the options from an object's fields; `prefix` names the object in errors
    /// (`forwardedProps`). Both snake_case and camelCase names are accepted.
    pub(crate) fn from_fields(fields: Option<&Value>, prefix: &str) -> Result<Self, InputError> {
        let Some(fields) = fields.and_then(Value::as_object) else {
            return Ok(Self::default());
        };
        let get = |snake: &str, camel: &str| {
            fields
                .get(snake)
                .or_else(|| fields.get(camel))
                .filter(|value| !value.is_null())
                .map(|value| (value, format!("{prefix}.{snake}")))
        };
        let invalid = |field: String, message: &str| InputError::Invalid {
            field,
            message: message.to_owned(),
        };
        let temperature = match get("temperature", "temperature") {
            None => None,
            Some((value, field)) => Some(
                value
                    .as_f64()
                    .filter(|t| (0.0..=2.0).contains(t))
                    .ok_or_else(|| invalid(field, "must be a number from 0 to 2"))?,
            ),
        };
        let top_p = match get("top_p", "topP") {
            None => None,
            Some((value, field)) => Some(
                value
                    .as_f64()
                    .filter(|p| *p > 0.0 && *p <= 1.0)
                    .ok_or_else(|| invalid(field, "must be a number above 0 and at most 1"))?,
            ),
        };
        let max_tokens = match get("max_tokens", "maxTokens") {
            None => None,
            Some((value, field)) => Some(
                value
                    .as_u64()
                    .filter(|n| *n >= 1)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| invalid(field, "must be a whole number of at least 1"))?,
            ),
        };
        let stop = match get("stop", "stop") {
            None => Vec::new(),
            Some((value, field)) => stop_sequences(value, &field)?,
        };
        let seed = match get("seed", "seed") {
            None => None,
            Some((value, field)) => Some(
                value
                    .as_i64()
                    .ok_or_else(|| invalid(field, "must be a whole number"))?,
            ),
        };
        Ok(Self {
            temperature,
            top_p,
            max_tokens,
            stop,
            seed,
        })
    }

    /// Applies the server's output cap: a client may ask for fewer tokens, never more; without
    /// a request the cap itself is sent.
    pub(crate) fn capped(mut self, max_output_tokens: Option<u32>) -> Self {
        if let Some(cap) = max_output_tokens {
            self.max_tokens = Some(self.max_tokens.map_or(cap, |asked| asked.min(cap)));
        }
        self
    }
}

/// `stop`: one string or an array of at most [`MAX_STOP_SEQUENCES`].
fn stop_sequences(value: &Value, field: &str) -> Result<Vec<String>, InputError> {
    match value {
        Value::String(one) => Ok(vec![stop_sequence(one, field)?]),
        Value::Array(many) => {
            if many.len() > MAX_STOP_SEQUENCES {
                return Err(InputError::invalid(
                    field,
                    format!("at most {MAX_STOP_SEQUENCES} stop sequences"),
                ));
            }
            many.iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(text) => stop_sequence(text, &format!("{field}[{index}]")),
                    _ => Err(InputError::invalid(
                        format!("{field}[{index}]"),
                        "must be a string",
                    )),
                })
                .collect()
        }
        _ => Err(InputError::invalid(
            field,
            "must be a string or an array of strings",
        )),
    }
}

fn stop_sequence(text: &str, field: &str) -> Result<String, InputError> {
    if text.is_empty() || text.chars().count() > MAX_STOP_CHARS {
        return Err(InputError::Invalid {
            field: field.to_owned(),
            message: format!("a stop sequence has 1 to {MAX_STOP_CHARS} characters"),
        });
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Sampling, InputError> {
        Sampling::from_fields(Some(&value), "forwardedProps")
    }

    #[test]
    fn accepts_both_spellings_and_leaves_the_rest_default() {
        let sampling = parse(json!({
            "temperature": 0.2, "topP": 0.9, "max_tokens": 300, "stop": "END", "seed": 7,
            "somethingElse": true
        }))
        .unwrap();
        assert_eq!(
            sampling,
            Sampling {
                temperature: Some(0.2),
                top_p: Some(0.9),
                max_tokens: Some(300),
                stop: vec!["END".into()],
                seed: Some(7),
            }
        );
        assert_eq!(parse(json!({})).unwrap(), Sampling::default());
        assert_eq!(
            Sampling::from_fields(None, "x").unwrap(),
            Sampling::default()
        );
    }

    #[test]
    fn out_of_range_values_name_their_field() {
        for (body, field) in [
            (json!({"temperature": 2.5}), "forwardedProps.temperature"),
            (json!({"temperature": "hot"}), "forwardedProps.temperature"),
            (json!({"top_p": 0}), "forwardedProps.top_p"),
            (json!({"top_p": 1.5}), "forwardedProps.top_p"),
            (json!({"max_tokens": 0}), "forwardedProps.max_tokens"),
            (json!({"max_tokens": 1.5}), "forwardedProps.max_tokens"),
            (
                json!({"maxTokens": 5_000_000_000u64}),
                "forwardedProps.max_tokens",
            ),
            (
                json!({"stop": ["a", "b", "c", "d", "e"]}),
                "forwardedProps.stop",
            ),
            (json!({"stop": [""]}), "forwardedProps.stop[0]"),
            (json!({"stop": [1]}), "forwardedProps.stop[0]"),
            (json!({"stop": 3}), "forwardedProps.stop"),
            (json!({"seed": "x"}), "forwardedProps.seed"),
        ] {
            let error = parse(body.clone()).unwrap_err();
            assert_eq!(error.field(), Some(field), "{body}");
        }
    }

    #[test]
    fn the_server_cap_bounds_max_tokens() {
        let asked = |n| Sampling {
            max_tokens: n,
            ..Sampling::default()
        };
        assert_eq!(asked(Some(100)).capped(Some(50)).max_tokens, Some(50));
        assert_eq!(asked(Some(10)).capped(Some(50)).max_tokens, Some(10));
        assert_eq!(asked(None).capped(Some(50)).max_tokens, Some(50));
        assert_eq!(asked(None).capped(None).max_tokens, None);
    }
}
