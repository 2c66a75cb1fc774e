//! Start-up's part of sub-agents: the headers of remote agents' secrets, read once per cold
//! start, and each profile's sub-agents as its agent takes them.

use super::{StartupError, read_secret};
use crate::agent::subagents::{RemoteAgent, Subagent, SubagentTarget};
use crate::config::{
    Config, ExposeSecret, ProfileConfig, SecretString, SubagentConfig, SubagentTargetConfig,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Every remote sub-agent's `headersSecretId`, read at once: the headers of each, by secret id.
pub(crate) async fn subagent_secrets(
    config: &Config,
) -> Result<BTreeMap<String, Vec<(String, SecretString)>>, StartupError> {
    let ids: std::collections::BTreeSet<&String> = config
        .profiles
        .values()
        .flat_map(|profile| &profile.subagents)
        .filter_map(|subagent| match &subagent.target {
            SubagentTargetConfig::Remote(remote) => remote.headers_secret_id.as_ref(),
            SubagentTargetConfig::Profile(_) => None,
        })
        .collect();
    let read = futures_util::future::try_join_all(ids.into_iter().map(|id| async move {
        let secret = read_secret(id).await?;
        Ok::<_, StartupError>((id.clone(), secret_headers(id, &secret)?))
    }))
    .await?;
    Ok(read.into_iter().collect())
}

/// A secret's JSON object of header names and values.
fn secret_headers(
    secret_id: &str,
    secret: &SecretString,
) -> Result<Vec<(String, SecretString)>, StartupError> {
    let failure = |reason: &str| StartupError::Secret {
        secret_id: secret_id.to_owned(),
        reason: reason.to_owned(),
    };
    let object: BTreeMap<String, String> = serde_json::from_str(secret.expose_secret())
        .map_err(|_| failure("a sub-agent's headers secret must be a JSON object of header names to string values"))?;
    object
        .into_iter()
        .map(|(name, value)| {
            crate::mcp::check_header_pair(&name, &value).map_err(failure)?;
            Ok((name, SecretString::from(value)))
        })
        .collect()
}

/// `profile`'s sub-agents, each a tool its model sees; `http` calls the remote ones.
pub(crate) fn subagents_of(
    config: &Config,
    profile: &ProfileConfig,
    http: &reqwest::Client,
) -> Result<Vec<Subagent>, StartupError> {
    profile
        .subagents
        .iter()
        .map(|subagent| {
            Ok(Subagent {
                name: subagent.name.clone(),
                description: description(config, subagent),
                target: match &subagent.target {
                    SubagentTargetConfig::Profile(name) => SubagentTarget::Profile(name.clone()),
                    SubagentTargetConfig::Remote(remote) => {
                        let secret = match &remote.headers_secret_id {
                            None => BTreeMap::new(),
                            Some(id) => config
                                .subagents
                                .secret_headers
                                .get(id)
                                .ok_or_else(|| StartupError::Secret {
                                    secret_id: id.clone(),
                                    reason: "it was not read at start-up".to_owned(),
                                })?
                                .iter()
                                .cloned()
                                .collect(),
                        };
                        SubagentTarget::Remote(Arc::new(RemoteAgent::new(
                            remote,
                            secret,
                            http.clone(),
                        )))
                    }
                },
                timeout: subagent.timeout,
            })
        })
        .collect()
}

/// What the delegating model reads about a sub-agent: its own description, else its profile's,
/// else a plain one.
fn description(config: &Config, subagent: &SubagentConfig) -> String {
    let profile = match &subagent.target {
        SubagentTargetConfig::Profile(name) => config
            .profiles
            .get(name)
            .and_then(|profile| profile.description.clone()),
        SubagentTargetConfig::Remote(_) => None,
    };
    subagent.description.clone().or(profile).unwrap_or_else(|| {
        format!(
            "Hands a task to the {} agent, which works on it on its own and answers with its result.",
            subagent.name
        )
    })
}

/// The HTTP client remote sub-agents share: built only when one is declared.
pub(crate) fn remote_client(config: &Config) -> Result<reqwest::Client, StartupError> {
    let any_remote = config
        .profiles
        .values()
        .flat_map(|profile| &profile.subagents)
        .any(|subagent| matches!(subagent.target, SubagentTargetConfig::Remote(_)));
    if !any_remote {
        return Ok(reqwest::Client::new());
    }
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|err| StartupError::HttpClient(err.to_string()))
}
