//! Start-up's part of sub-agents: the headers of remote agents' secrets, read once per cold
//! start, and each profile's sub-agents as its agent takes them.

use super::{StartupError, read_secret};
use crate::a2a::client::A2aClient;
use crate::agent::subagents::{A2aAgent, RemoteAgent, Subagent, SubagentTarget};
use crate::config::{
    Config, ExposeSecret, ProfileConfig, SecretString, SubagentConfig, SubagentTargetConfig,
};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// What remote sub-agents' secrets hold, read once per cold start.
pub(crate) struct SubagentSecrets {
    /// The headers of each remote AG-UI agent's `headersSecretId`, by secret id.
    pub(crate) headers: BTreeMap<String, Vec<(String, SecretString)>>,
    /// The credentials of each A2A agent's `credentialsSecretId`, by secret id.
    pub(crate) a2a: BTreeMap<String, SecretString>,
}

/// Every remote sub-agent's `headersSecretId` and `credentialsSecretId`, read at once.
pub(crate) async fn subagent_secrets(config: &Config) -> Result<SubagentSecrets, StartupError> {
    let targets = || {
        config
            .profiles
            .values()
            .flat_map(|profile| &profile.subagents)
            .map(|subagent| &subagent.target)
    };
    let header_ids: std::collections::BTreeSet<&String> = targets()
        .filter_map(|target| match target {
            SubagentTargetConfig::Remote(remote) => remote.headers_secret_id.as_ref(),
            _ => None,
        })
        .collect();
    let a2a_ids: std::collections::BTreeSet<&String> = targets()
        .filter_map(|target| match target {
            SubagentTargetConfig::A2a(agent) => agent.credentials_secret_id.as_ref(),
            _ => None,
        })
        .collect();
    let headers = futures_util::future::try_join_all(header_ids.into_iter().map(|id| async move {
        let secret = read_secret(id).await?;
        Ok::<_, StartupError>((id.clone(), secret_headers(id, &secret)?))
    }));
    let a2a = futures_util::future::try_join_all(
        a2a_ids
            .into_iter()
            .map(|id| async move { Ok::<_, StartupError>((id.clone(), read_secret(id).await?)) }),
    );
    let (headers, a2a) = tokio::try_join!(headers, a2a)?;
    Ok(SubagentSecrets {
        headers: headers.into_iter().collect(),
        a2a: a2a.into_iter().collect(),
    })
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

/// `profile`'s sub-agents, each a tool its model sees; `http` calls the remote AG-UI ones,
/// `a2a` (one per process, with its card cache) the A2A ones.
pub(crate) fn subagents_of(
    config: &Config,
    profile: &ProfileConfig,
    (http, a2a): (&reqwest::Client, &Arc<A2aClient>),
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
                    SubagentTargetConfig::A2a(settings) => {
                        let secret = a2a_credentials(config, settings)?;
                        SubagentTarget::A2a(Arc::new(A2aAgent::new(
                            &subagent.name,
                            settings,
                            secret.map(|secret| secret.expose_secret()),
                            a2a.clone(),
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
        SubagentTargetConfig::Remote(_) | SubagentTargetConfig::A2a(_) => None,
    };
    subagent.description.clone().or(profile).unwrap_or_else(|| {
        format!(
            "Hands a task to the {} agent, which works on it on its own and answers with its result.",
            subagent.name
        )
    })
}

/// An A2A agent's credentials: its `credentialsSecretId`'s, else `A2A_AGENT_CREDENTIALS`'
/// for its card, else none (a card that asks for none needs none).
fn a2a_credentials<'a>(
    config: &'a Config,
    settings: &crate::agent::subagents::A2aAgentSettings,
) -> Result<Option<&'a SecretString>, StartupError> {
    match &settings.credentials_secret_id {
        Some(id) => config
            .subagents
            .a2a_secrets
            .get(id)
            .map(Some)
            .ok_or_else(|| StartupError::Secret {
                secret_id: id.clone(),
                reason: "it was not read at start-up".to_owned(),
            }),
        None => Ok(config.subagents.a2a_credentials.get(&settings.card_url)),
    }
}

/// The HTTP client remote sub-agents share: built only when one is declared.
pub(crate) fn remote_client(config: &Config) -> Result<reqwest::Client, StartupError> {
    let any_remote = config
        .profiles
        .values()
        .flat_map(|profile| &profile.subagents)
        .any(|subagent| {
            matches!(
                subagent.target,
                SubagentTargetConfig::Remote(_) | SubagentTargetConfig::A2a(_)
            )
        });
    if !any_remote {
        return Ok(reqwest::Client::new());
    }
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|err| StartupError::HttpClient(err.to_string()))
}
