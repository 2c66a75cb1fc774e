//! An A2A 1.0 agent as a child: the task is a message to the agent of a card (in the context an
//! earlier delegation of the same parent thread had with it), and the task's frames are the
//! child's events. A task that waits for input or authorization suspends the child on one
//! interrupt: its answer is the next message on the same task, or (authorization, which the user
//! gives out of band) following the task again. A stop cancels the remote task.

use super::child::{ChildAgent, ChildCall, ChildEnd, ChildError, ChildEvent, ChildStream};
use super::record::{AUTH_REQUIRED, INPUT_REQUIRED, RemoteTask};
use crate::a2a::client::{self as client, A2aClient, ClientError, Credentials, Delegation};
use crate::a2a::types::TaskState;
use crate::protocol::events::TokenUsage;
use crate::protocol::interrupt::{Interrupt, ResumeEntry, ResumeStatus};
use futures_util::{FutureExt, StreamExt};
use serde_json::{Map, Value, json};
use std::collections::HashSet;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// `ACTIVITY_SNAPSHOT.activityType` of an A2A data part.
const DATA_ACTIVITY: &str = "a2a-data";

/// An A2A agent as `AGENT_PROFILES` declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct A2aAgentSettings {
    /// Its agent card's URL (`https://…/.well-known/agent-card.json`), read when first called
    /// and kept as its cache headers allow.
    pub card_url: String,
    /// A Secrets Manager secret holding its credentials (`{"bearer": …}`, `{"apiKey": …}`, or
    /// one string), read once per cold start and presented as its card's security scheme asks.
    pub credentials_secret_id: Option<String>,
}

/// An A2A agent, ready to call: its credentials resolved once, the process's client (and its
/// card cache) shared.
pub(crate) struct A2aAgent {
    name: String,
    card_url: String,
    credentials: Credentials,
    client: Arc<A2aClient>,
}

impl std::fmt::Debug for A2aAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aAgent")
            .field("name", &self.name)
            .field("card_url", &self.card_url)
            .finish_non_exhaustive()
    }
}

/// The A2A client a process's sub-agents share: one card cache per warm instance.
pub(crate) fn shared_client(http: reqwest::Client) -> Arc<A2aClient> {
    Arc::new(A2aClient::new(http))
}

/// How a call reaches the remote agent.
enum Start {
    /// A message: a new task, or the answer to a task waiting for input.
    Send(Delegation),
    /// Following a task again (authorization given out of band).
    Follow(RemoteTask),
    /// The user declined to answer: the task is canceled.
    Decline(RemoteTask),
}

impl A2aAgent {
    /// The agent `settings` declare as sub-agent `name`, with its secret's string.
    pub(crate) fn new(
        name: &str,
        settings: &A2aAgentSettings,
        secret: Option<&str>,
        client: Arc<A2aClient>,
    ) -> Self {
        Self {
            name: name.to_owned(),
            card_url: settings.card_url.clone(),
            credentials: secret.map(Credentials::from_secret).unwrap_or_default(),
            client,
        }
    }

    fn start(&self, call: &ChildCall) -> Result<Start, ChildError> {
        if let Some(task) = &call.task {
            return Ok(Start::Send(Delegation {
                card_url: self.card_url.clone(),
                credentials: self.credentials.clone(),
                text: task.clone(),
                context_id: call.context_id.clone(),
                ..Delegation::default()
            }));
        }
        let Some(remote) = call.remote.clone() else {
            return Err(ChildError {
                code: "AGENT_ERROR",
                message: format!("the {} agent has no task to continue", self.name),
            });
        };
        let answer = call
            .resume
            .iter()
            .find(|entry| entry.status == ResumeStatus::Resolved);
        Ok(match answer {
            None => Start::Decline(remote),
            Some(_) if remote.waiting.as_deref() == Some(AUTH_REQUIRED) => Start::Follow(remote),
            Some(entry) => {
                let (text, data) = answer_parts(entry);
                Start::Send(Delegation {
                    card_url: self.card_url.clone(),
                    credentials: self.credentials.clone(),
                    text,
                    data,
                    context_id: Some(remote.context_id.clone()),
                    task_id: Some(remote.task_id.clone()),
                    earlier: remote.shown,
                })
            }
        })
    }

    /// Asks the agent to cancel `task_id`; a failure is logged, since the child ends anyway.
    async fn cancel(&self, task_id: &str) {
        if let Err(error) = self
            .client
            .cancel(&self.card_url, &self.credentials, task_id)
            .await
        {
            tracing::warn!(agent = %self.name, %error, "A2A: CancelTask failed");
        }
    }
}

/// What an answer to an input request sends: a string payload as a text part, any other JSON as
/// a data part, no payload as the text `yes`.
fn answer_parts(entry: &ResumeEntry) -> (String, Option<Value>) {
    match &entry.payload {
        None | Some(Value::Null) => ("yes".to_owned(), None),
        Some(Value::String(text)) => (text.clone(), None),
        Some(other) => (String::new(), Some(other.clone())),
    }
}

#[async_trait::async_trait]
impl ChildAgent for Arc<A2aAgent> {
    async fn run(&self, call: ChildCall) -> Result<ChildStream, ChildError> {
        let start = self.start(&call)?;
        let mut follower = Follower {
            agent: self.clone(),
            speaks_v1: call.speaks_v1,
            task: call.remote.clone(),
            data_seen: HashSet::new(),
            usage: Vec::new(),
            stopping: false,
        };
        let started = match start {
            Start::Decline(remote) => return Ok(declined(self.clone(), remote).boxed()),
            Start::Send(delegation) => FutureExt::boxed(self.client.delegate(delegation)),
            Start::Follow(remote) => {
                let agent = self.clone();
                FutureExt::boxed(async move {
                    agent
                        .client
                        .follow(
                            &agent.card_url,
                            &agent.credentials,
                            &remote.task_id,
                            remote.shown,
                        )
                        .await
                })
            }
        };
        let stop = call.stop;
        let events = tokio::select! {
            biased;
            () = stop.cancelled() => {
                // Whatever the agent started is unknown yet; a known task is canceled.
                follower.stopping = true;
                return Ok(futures_util::stream::iter(follower.end_stopped().await).boxed());
            }
            started = started => started,
        };
        Ok(follow(follower, events, stop).boxed())
    }
}

/// A task the user declined to answer: canceled, and the child fails.
fn declined(
    agent: Arc<A2aAgent>,
    mut remote: RemoteTask,
) -> impl futures_util::Stream<Item = ChildEvent> {
    async_stream::stream! {
        agent.cancel(&remote.task_id).await;
        remote.waiting = None;
        yield ChildEvent::Remote(remote);
        yield ChildEvent::End(ChildEnd::Failed {
            code: "A2A_TASK_CANCELED".to_owned(),
            message: format!(
                "the user declined to answer the {} agent, so its task was canceled",
                agent.name
            ),
            usage: Vec::new(),
        });
    }
}

/// The child's events from the remote task's, until it stops, fails or is stopped.
fn follow(
    mut follower: Follower,
    started: Result<client::ChildStream, ClientError>,
    stop: CancellationToken,
) -> impl futures_util::Stream<Item = ChildEvent> {
    async_stream::stream! {
        let mut events = match started {
            Ok(events) => events,
            Err(error) => {
                for event in follower.ended(failed(&error)) {
                    yield event;
                }
                return;
            }
        };
        loop {
            let next = tokio::select! {
                biased;
                () = stop.cancelled() => {
                    follower.stopping = true;
                    for event in follower.end_stopped().await {
                        yield event;
                    }
                    return;
                }
                next = events.next() => next,
            };
            let out = match next {
                None => follower.ended(ChildEnd::Failed {
                    code: "AGENT_UNAVAILABLE".to_owned(),
                    message: "the agent's stream ended before its task stopped".to_owned(),
                    usage: Vec::new(),
                }),
                Some(Err(error)) => follower.ended(failed(&error)),
                Some(Ok(event)) => follower.take(event).await,
            };
            let ended = out.iter().any(|event| matches!(event, ChildEvent::End(_)));
            for event in out {
                yield event;
            }
            if ended {
                return;
            }
        }
    }
}

fn failed(error: &ClientError) -> ChildEnd {
    ChildEnd::Failed {
        code: error.code(),
        message: error.message.clone(),
        usage: Vec::new(),
    }
}

/// What a delegation's follower knows of the remote task.
struct Follower {
    agent: Arc<A2aAgent>,
    speaks_v1: bool,
    /// The task, once named (or the one a continued child waits on), with what was shown of it.
    task: Option<RemoteTask>,
    /// Data parts already shown, by their activity id and content.
    data_seen: HashSet<(String, String)>,
    usage: Vec<TokenUsage>,
    stopping: bool,
}

impl Follower {
    /// The child's events of one of the client's.
    async fn take(&mut self, event: client::ChildEvent) -> Vec<ChildEvent> {
        let content = |event: Value| match event {
            Value::Object(map) => vec![ChildEvent::Content(map)],
            _ => Vec::new(),
        };
        match event {
            client::ChildEvent::Task {
                task_id,
                context_id,
            } => {
                let shown = self
                    .task
                    .take()
                    .filter(|task| task.task_id == task_id)
                    .map(|task| task.shown)
                    .unwrap_or_default();
                self.task = Some(RemoteTask {
                    task_id,
                    context_id,
                    waiting: None,
                    shown,
                });
                Vec::new()
            }
            client::ChildEvent::TextStart { message_id } => content(
                json!({"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"}),
            ),
            client::ChildEvent::TextDelta { message_id, delta } => {
                if let Some(task) = &mut self.task {
                    *task.shown.entry(message_id.clone()).or_default() += delta.len();
                }
                content(
                    json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta}),
                )
            }
            client::ChildEvent::TextEnd { message_id } => {
                content(json!({"type": "TEXT_MESSAGE_END", "messageId": message_id}))
            }
            client::ChildEvent::Data { message_id, data } => {
                let id = format!("{message_id}-data");
                if !self.data_seen.insert((id.clone(), data.to_string())) {
                    return Vec::new();
                }
                let content_of = match data {
                    Value::Object(map) => map,
                    other => Map::from_iter([("value".to_owned(), other)]),
                };
                content(json!({
                    "type": "ACTIVITY_SNAPSHOT", "messageId": id,
                    "activityType": DATA_ACTIVITY, "content": content_of,
                }))
            }
            client::ChildEvent::Usage(usage) => {
                self.usage.extend(usage);
                Vec::new()
            }
            client::ChildEvent::Completed => {
                let usage = std::mem::take(&mut self.usage);
                self.ended(ChildEnd::Finished { usage })
            }
            client::ChildEvent::Failed { code, message } => {
                let usage = std::mem::take(&mut self.usage);
                self.ended(ChildEnd::Failed {
                    code,
                    message,
                    usage,
                })
            }
            client::ChildEvent::Interrupted {
                state,
                task_id,
                context_id,
                message,
                data,
            } => {
                self.interrupted(state, (task_id, context_id), message, data)
                    .await
            }
        }
    }

    /// A task waiting for the user: an interrupt for an AG-UI 1.0 client; a 0.0.x client cannot
    /// answer one, so the task is canceled and the child fails with the agent's question.
    async fn interrupted(
        &mut self,
        state: TaskState,
        (task_id, context_id): (String, String),
        message: String,
        data: Vec<Value>,
    ) -> Vec<ChildEvent> {
        let reason = if state == TaskState::AuthRequired {
            AUTH_REQUIRED
        } else {
            INPUT_REQUIRED
        };
        let shown = self.task.take().map(|task| task.shown).unwrap_or_default();
        self.task = Some(RemoteTask {
            task_id: task_id.clone(),
            context_id: context_id.clone(),
            waiting: Some(reason.to_owned()),
            shown,
        });
        let usage = std::mem::take(&mut self.usage);
        let name = &self.agent.name;
        if !self.speaks_v1 {
            self.agent.cancel(&task_id).await;
            if let Some(task) = &mut self.task {
                task.waiting = None;
            }
            let question = if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            };
            return self.ended(ChildEnd::Failed {
                code: format!("A2A_{}", reason.to_ascii_uppercase()),
                message: format!(
                    "the {name} agent asked for {}{question}, which this client cannot answer (AG-UI 1.0 clients answer interrupts); its task was canceled",
                    if reason == AUTH_REQUIRED { "authorization" } else { "input" }
                ),
                usage,
            });
        }
        let interrupt = interrupt(name, state, (&task_id, &context_id), message, data);
        self.ended(ChildEnd::Suspended {
            interrupts: vec![interrupt],
            usage,
        })
    }

    /// The child's last events: the remote task as it stands, then `end`.
    fn ended(&mut self, end: ChildEnd) -> Vec<ChildEvent> {
        let end = match end {
            // Canceled because we asked: the stop's end, not a failure.
            ChildEnd::Failed { usage, .. } if self.stopping => ChildEnd::Cancelled { usage },
            other => other,
        };
        self.task
            .take()
            .map(ChildEvent::Remote)
            .into_iter()
            .chain([ChildEvent::End(end)])
            .collect()
    }

    /// A stopped child's end: its known task canceled first.
    async fn end_stopped(&mut self) -> Vec<ChildEvent> {
        if let Some(task) = &mut self.task {
            self.agent.cancel(&task.task_id).await;
            task.waiting = None;
        }
        let usage = std::mem::take(&mut self.usage);
        self.ended(ChildEnd::Cancelled { usage })
    }
}

/// The interrupt of a task waiting for the user: its question as the message, a data part that
/// is a JSON schema as the answer's schema, and the task with its other data parts in metadata.
fn interrupt(
    name: &str,
    state: TaskState,
    (task_id, context_id): (&str, &str),
    message: String,
    mut data: Vec<Value>,
) -> Interrupt {
    let reason = if state == TaskState::AuthRequired {
        AUTH_REQUIRED
    } else {
        INPUT_REQUIRED
    };
    let is_schema = |value: &Value| {
        value.is_object()
            && ["type", "properties", "$schema"]
                .iter()
                .any(|key| value.get(*key).is_some())
    };
    // An agui-lambda agent sends its run's interrupts as a data part: the one interrupt's
    // schema (a tool approval's) is the answer's.
    let relayed_schema = || {
        data.iter()
            .find_map(|value| match value["interrupts"].as_array() {
                Some(list) if list.len() == 1 => list[0].get("responseSchema").cloned(),
                _ => None,
            })
    };
    let response_schema = match data.iter().position(is_schema) {
        Some(index) => Some(data.remove(index)),
        None => relayed_schema(),
    };
    let message = if message.trim().is_empty() {
        match reason {
            AUTH_REQUIRED => format!("The {name} agent needs you to sign in."),
            _ => format!("The {name} agent needs your input."),
        }
    } else {
        message
    };
    let mut a2a = json!({"taskId": task_id, "contextId": context_id, "state": state.as_str()});
    if !data.is_empty() {
        a2a["data"] = Value::Array(data);
    }
    Interrupt {
        id: format!("a2a-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]),
        reason: reason.to_owned(),
        message: Some(message),
        tool_call_id: None,
        response_schema,
        expires_at: None,
        subagent_run_id: None,
        metadata: json!({super::VENDOR_KEY: {"a2a": a2a}})
            .as_object()
            .cloned(),
    }
}

#[cfg(test)]
#[path = "a2a_tests.rs"]
mod tests;
