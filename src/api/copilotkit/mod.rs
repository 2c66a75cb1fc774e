//! CopilotKit's runtime protocol under `/copilotkit` (what `<CopilotKitProvider runtimeUrl>`
//! calls), so CopilotKit needs no Node server in front of us: `/info`, the agent routes (run,
//! connect, stop, suggest), the thread routes of `useThreads` and the inspector, voice input,
//! and the single-route envelope. Runs are AG-UI runs of the agent the id names; the shapes are
//! `dialects::copilotkit`'s. Same authentication, owner checks, CORS and error door as every
//! other route.

mod agents;
mod connect;
mod envelope;
mod threads;
mod transcribe;

pub(crate) use transcribe::transcription_refusal;

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use super::response::json_response;
use crate::agent::Agent;
use crate::auth::Principal;
use crate::dialects::copilotkit::envelope::AgentAction;
use crate::dialects::copilotkit::{self as dialect, AgentEntry, DEFAULT_AGENT, Features};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use tokio::time::Instant;

/// Where CopilotKit's runtime is mounted: its client's `runtimeUrl` is the function's URL and
/// this path.
pub(super) const PREFIX: &str = "/copilotkit";

/// One of CopilotKit's routes, its ids percent-decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CopilotKitRoute {
    /// `POST /copilotkit`: the single-route envelope.
    Envelope,
    /// `GET /copilotkit/info`
    Info,
    /// `POST /copilotkit/agent/{agentId}/run`, `…/connect`, `…/suggest`
    Agent { agent_id: String, action: Action },
    /// `POST /copilotkit/agent/{agentId}/stop/{threadId}`
    Stop { agent_id: String, thread_id: String },
    /// `POST /copilotkit/transcribe`
    Transcribe,
    /// `GET /copilotkit/threads?agentId&limit&cursor&includeArchived`
    Threads,
    /// `PATCH` and `DELETE /copilotkit/threads/{threadId}`
    Thread(String),
    /// `POST /copilotkit/threads/{threadId}/archive`
    Archive(String),
    /// `GET /copilotkit/threads/{threadId}/messages` (CopilotKit's inspector)
    Messages(String),
    /// `GET /copilotkit/threads/{threadId}/state` (CopilotKit's inspector)
    State(String),
}

/// What an agent route asks for.
pub(crate) type Action = AgentAction;

impl CopilotKitRoute {
    /// The routes of the path segments after `copilotkit`, by method; empty for no route.
    pub(crate) fn routes(segments: &[&str]) -> Vec<(Method, Self)> {
        let decoded: Option<Vec<String>> = segments.iter().map(|segment| decode(segment)).collect();
        let Some(segments) = decoded else {
            return Vec::new();
        };
        let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
        let owned = |id: &str| id.to_owned();
        let agent = |id: &str, action| CopilotKitRoute::Agent {
            agent_id: id.to_owned(),
            action,
        };
        match parts.as_slice() {
            [] => vec![(Method::POST, Self::Envelope)],
            ["info"] => vec![(Method::GET, Self::Info)],
            ["transcribe"] => vec![(Method::POST, Self::Transcribe)],
            ["agent", id, "run"] => vec![(Method::POST, agent(id, Action::Run))],
            ["agent", id, "connect"] => vec![(Method::POST, agent(id, Action::Connect))],
            ["agent", id, "suggest"] => vec![(Method::POST, agent(id, Action::Suggest))],
            ["agent", id, "stop", thread] => vec![(
                Method::POST,
                Self::Stop {
                    agent_id: owned(id),
                    thread_id: owned(thread),
                },
            )],
            ["threads"] => vec![(Method::GET, Self::Threads)],
            ["threads", thread] => vec![
                (Method::PATCH, Self::Thread(owned(thread))),
                (Method::DELETE, Self::Thread(owned(thread))),
            ],
            ["threads", thread, "archive"] => vec![(Method::POST, Self::Archive(owned(thread)))],
            ["threads", thread, "messages"] => vec![(Method::GET, Self::Messages(owned(thread)))],
            ["threads", thread, "state"] => vec![(Method::GET, Self::State(owned(thread)))],
            _ => Vec::new(),
        }
    }

    /// Starts a run: refused while the server is stopping. The envelope may carry one.
    pub(crate) fn starts_a_run(&self) -> bool {
        matches!(
            self,
            Self::Envelope
                | Self::Agent {
                    action: Action::Run,
                    ..
                }
        )
    }

    /// Carries a whole `RunAgentInput` (CopilotKit resends the thread): the AG-UI routes' body
    /// limit applies.
    pub(crate) fn carries_history(&self) -> bool {
        matches!(self, Self::Envelope | Self::Agent { .. })
    }

    /// Refused in CopilotKit's transcription shape, which its chat reads.
    pub(crate) fn is_transcription(&self) -> bool {
        matches!(self, Self::Transcribe)
    }

    /// The largest body the route takes when it is not the history's: a recording, as base64
    /// JSON at most (a third larger than its bytes) with room for the form around it.
    pub(crate) fn body_limit(&self, settings: &CopilotKitSettings) -> Option<usize> {
        match (self, settings.transcription_max_bytes) {
            (Self::Transcribe, Some(max)) => Some(max / 3 * 4 + 64 * 1024),
            _ => None,
        }
    }
}

/// A path segment percent-decoded (the client encodes ids with `encodeURIComponent`); `None`
/// when it is not UTF-8.
fn decode(segment: &str) -> Option<String> {
    percent_encoding::percent_decode_str(segment)
        .decode_utf8()
        .ok()
        .map(|text| text.into_owned())
}

impl App {
    /// Answers one of CopilotKit's routes for an authenticated caller.
    pub(super) async fn copilotkit(
        &self,
        principal: Principal,
        route: CopilotKitRoute,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        match route {
            CopilotKitRoute::Envelope => {
                self.single_route(principal, request, invocation_deadline)
                    .await
            }
            CopilotKitRoute::Info => Ok(self.runtime_info(false)),
            CopilotKitRoute::Agent { agent_id, action } => {
                let agent = self.copilotkit_agent(&agent_id)?;
                match action {
                    Action::Run => {
                        self.copilotkit_run(&agent, principal, &request, invocation_deadline)
                            .await
                    }
                    Action::Connect => {
                        self.connect(&principal, &request, invocation_deadline)
                            .await
                    }
                    Action::Suggest => self.suggest(&agent, &principal, &request).await,
                }
            }
            CopilotKitRoute::Stop {
                agent_id,
                thread_id,
            } => {
                self.copilotkit_agent(&agent_id)?;
                self.stop(&principal, &thread_id, request.body()).await
            }
            CopilotKitRoute::Transcribe => self.transcribe(&request).await,
            CopilotKitRoute::Threads => self.shelf(&principal, request.uri().query()).await,
            CopilotKitRoute::Thread(thread) if request.method() == Method::DELETE => {
                self.remove_thread(&principal, &thread, request.body())
                    .await
            }
            CopilotKitRoute::Thread(thread) => {
                self.patch_thread(&principal, &thread, request.headers(), request.body())
                    .await
            }
            CopilotKitRoute::Archive(thread) => {
                self.archive_thread(&principal, &thread, request.body())
                    .await
            }
            CopilotKitRoute::Messages(thread) => self.thread_messages(&principal, &thread).await,
            CopilotKitRoute::State(thread) => self.thread_state(&principal, &thread).await,
        }
    }

    /// The agent an agent id names: `default` is this deployment's default agent, any other id
    /// a profile (`AGENT_PROFILES`).
    pub(super) fn copilotkit_agent(&self, agent_id: &str) -> Result<Agent, ApiError> {
        if agent_id == DEFAULT_AGENT {
            return Ok(self.agent.clone());
        }
        if !self.agent.profile_names().contains(&agent_id) {
            return Err(ApiError::AgentNotFound(agent_id.chars().take(64).collect()));
        }
        self.agent
            .profile(agent_id)
            .map_err(|_| ApiError::AgentNotFound(agent_id.chars().take(64).collect()))
    }

    /// `GET /info`: the default agent and every profile with its capabilities, and the features
    /// this deployment serves. It reads no store: the mount of every page asks for it twice.
    pub(super) fn runtime_info(&self, single_route: bool) -> Response<ResponseBody> {
        let mut agents = vec![AgentEntry {
            id: DEFAULT_AGENT.to_owned(),
            description: self.copilotkit.description(None),
            capabilities: self.agent.capabilities(self.run_max),
        }];
        for name in self.agent.profile_names() {
            if let Ok(profile) = self.agent.profile(name) {
                agents.push(AgentEntry {
                    id: name.to_owned(),
                    description: self.copilotkit.description(Some(name)),
                    capabilities: profile.capabilities(self.run_max),
                });
            }
        }
        let info = dialect::runtime_info(&agents, &self.copilotkit.features(), single_route);
        json_response(StatusCode::OK, Bytes::from(info.to_string()))
    }
}

/// What CopilotKit's routes need beyond the agent: the agents' descriptions, and the optional
/// features this deployment serves (suggestions, voice input, generative UI), as start-up sets
/// them. The generative-UI flags are read from here alone.
#[derive(Debug, Clone, Default)]
pub(crate) struct CopilotKitSettings {
    /// Each profile's description (`AGENT_PROFILES`' `description`), by name.
    pub descriptions: std::collections::BTreeMap<String, String>,
    /// The default agent's description; a generic one when unset.
    pub default_description: Option<String>,
    /// `POST /agent/{agentId}/suggest` is answered.
    pub suggestions: bool,
    /// `POST /transcribe` is answered, taking recordings up to this many bytes (a transcription
    /// model is configured).
    pub transcription_max_bytes: Option<usize>,
    pub generative_ui: dialect::GenerativeUi,
}

impl CopilotKitSettings {
    fn description(&self, profile: Option<&str>) -> String {
        match profile {
            None => self
                .default_description
                .clone()
                .unwrap_or_else(|| "An AG-UI agent on AWS Lambda".to_owned()),
            Some(name) => self
                .descriptions
                .get(name)
                .cloned()
                .unwrap_or_else(|| format!("The agent profile {name}")),
        }
    }

    fn features(&self) -> Features {
        Features {
            suggestions: self.suggestions,
            transcription: self.transcription_max_bytes.is_some(),
            generative_ui: self.generative_ui.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_decode_their_ids() {
        assert_eq!(
            CopilotKitRoute::routes(&["agent", "my%20agent", "stop", "t%2F1"]),
            [(
                Method::POST,
                CopilotKitRoute::Stop {
                    agent_id: "my agent".into(),
                    thread_id: "t/1".into(),
                }
            )]
        );
        assert_eq!(
            CopilotKitRoute::routes(&[]),
            [(Method::POST, CopilotKitRoute::Envelope)]
        );
        assert!(CopilotKitRoute::routes(&["agent", "x", "fly"]).is_empty());
        assert!(CopilotKitRoute::routes(&["threads", "%FF"]).is_empty());
        let thread = CopilotKitRoute::routes(&["threads", "t1"]);
        assert_eq!(
            thread
                .iter()
                .map(|(method, _)| method.clone())
                .collect::<Vec<_>>(),
            [Method::PATCH, Method::DELETE]
        );
    }
}
