//! CopilotKit's routes under `/copilotkit`: each parsed once from its path segments, its ids
//! percent-decoded, with what the door needs to know of it (a run, its body's limit, the shape
//! of its refusals).

use super::settings::CopilotKitSettings;
use crate::dialects::copilotkit::envelope::AgentAction;
use http::Method;

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
