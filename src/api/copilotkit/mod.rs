//! CopilotKit's runtime protocol under `/copilotkit` (what `<CopilotKitProvider runtimeUrl>`
//! calls), so CopilotKit needs no Node server in front of us: `/info`, the agent routes (run,
//! connect, stop, suggest), the thread routes of `useThreads` and the inspector, voice input,
//! and the single-route envelope. Runs are AG-UI runs of the agent the id names; the shapes are
//! `dialects::copilotkit`'s. Same authentication, owner checks, CORS and error door as every
//! other route.

mod agents;
mod connect;
mod envelope;
mod routes;
mod settings;
mod threads;
mod transcribe;

pub(crate) use routes::CopilotKitRoute;
pub(crate) use settings::CopilotKitSettings;

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use super::response::json_response;
use crate::agent::Agent;
use crate::auth::Principal;
use crate::dialects::copilotkit::{self as dialect, AgentEntry, DEFAULT_AGENT};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use routes::Action;
use tokio::time::Instant;

/// Where CopilotKit's runtime is mounted: its client's `runtimeUrl` is the function's URL and
/// this path.
pub(super) const PREFIX: &str = "/copilotkit";

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
