//! The AgentScope "Agent API" dialect (the AgentScope Agent API document, `agentscope_runtime.engine.schemas.agent_schemas`
//! 1.1.6): an `AgentRequest` decoded into the one validated [`RunInput`](crate::protocol::RunInput), and an encoder that
//! speaks a run's AG-UI events as the Agent API's `response` / `message` / `content` objects.
//!
//! Stream shape, per run:
//!
//! - `response` `created`, then `in_progress` (on `RUN_STARTED`; `session_id` is the thread id);
//! - per assistant text (`TEXT_MESSAGE_*`): a `message` of type `message`, role `assistant`,
//!   `created` → `in_progress`, text `content` objects with `delta: true`, `index: 0` and
//!   `msg_id`, then the `completed` content with the full text (`delta: false`) and the
//!   `completed` message carrying it;
//! - reasoning (`REASONING_MESSAGE_*`): the same, as a message of type `reasoning`;
//! - per tool call: a `function_call` message whose one `data` content is
//!   `{call_id, name, arguments}` (arguments streamed as `delta: true` data pieces
//!   `{arguments: piece}`, merged by string concatenation as the runtime's `ContentBuilder`
//!   does); parallel calls are serialised, one message after the other;
//! - per server tool result: a `function_call_output` message, role `tool`, whose data is
//!   `{call_id, name, output}`;
//! - `response` `completed` (with `usage`, `completed_at` and every completed message in
//!   `output`) or `failed` with `error {code, message}`.
//!
//! Every object carries an integer `sequence_number`, 0 first, one more per frame. Steps, state
//! and message snapshots have no Agent API form and are not sent: the thread keeps them, and
//! `GET /threads/{id}` shows the history.

mod encoder;
mod origins;
mod request;

pub use encoder::AgentScopeEncoder;
pub(crate) use encoder::error_response_body;
pub(crate) use request::from_json;
#[cfg(test)]
use request::parse_request;

#[cfg(test)]
mod tests;
