//! The encoder: a run's AG-UI events as Agent API `response` / `message` / `content` objects,
//! in the lifecycle the module documentation describes.

use super::request::AgentScopeRequest;
use crate::dialects::{Encoder, data_frame};
use crate::protocol::events::{Event, RunErrorCode, RunUsage};
use crate::protocol::ids::MessageId;
use bytes::Bytes;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// A failed `AgentResponse`, the body of a refusal on `/process`.
pub(crate) fn error_response_body(code: &str, message: &str) -> Value {
    json!({
        "object": "response",
        "id": new_response_id(),
        "status": "failed",
        "created_at": now_secs(),
        "output": [],
        "error": {"code": code, "message": message},
    })
}

fn new_response_id() -> String {
    format!("response_{}", uuid::Uuid::new_v4())
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A text or reasoning message being streamed.
struct OpenText {
    agui_id: String,
    msg_id: String,
    kind: &'static str,
    text: String,
}

/// A tool call being streamed. Only the first open call is live on the wire; the calls after it
/// are buffered until it completes, so messages never interleave.
struct OpenCall {
    call_id: String,
    name: String,
    msg_id: String,
    arguments: String,
    live: bool,
    ended: bool,
}

/// Encodes a run's AG-UI events as Agent API objects; see the module docs for the shape.
pub struct AgentScopeEncoder {
    sequence: u64,
    response_id: String,
    created_at: i64,
    completed_at: Option<i64>,
    session_id: Option<String>,
    status: &'static str,
    output: Vec<Value>,
    usage: Option<Value>,
    error: Option<Value>,
    started: bool,
    ended: bool,
    used_ids: HashSet<String>,
    text: Option<OpenText>,
    reasoning: Option<OpenText>,
    calls: Vec<OpenCall>,
    call_names: HashMap<String, String>,
}

impl Default for AgentScopeEncoder {
    fn default() -> Self {
        Self::new()
    }
}

impl AgentScopeEncoder {
    pub fn new() -> Self {
        Self {
            sequence: 0,
            response_id: new_response_id(),
            created_at: now_secs(),
            completed_at: None,
            session_id: None,
            status: "created",
            output: Vec::new(),
            usage: None,
            error: None,
            started: false,
            ended: false,
            used_ids: HashSet::new(),
            text: None,
            reasoning: None,
            calls: Vec::new(),
            call_names: HashMap::new(),
        }
    }

    /// An encoder whose response has the client's id (`response_id`, else the request `id`).
    pub(crate) fn for_request(request: &AgentScopeRequest) -> Self {
        let mut encoder = Self::new();
        if let Some(id) = &request.response_id {
            encoder.response_id = id.clone();
        }
        encoder
    }

    /// The complete response object as it stands: what `stream: false` returns once the run has
    /// ended.
    pub(crate) fn response(&self) -> Value {
        let mut response = json!({
            "object": "response",
            "id": self.response_id,
            "status": self.status,
            "created_at": self.created_at,
            "output": self.output,
        });
        if let Some(session) = &self.session_id {
            response["session_id"] = json!(session);
        }
        if let Some(at) = self.completed_at {
            response["completed_at"] = json!(at);
        }
        if let Some(usage) = &self.usage {
            response["usage"] = usage.clone();
        }
        if let Some(error) = &self.error {
            response["error"] = error.clone();
        }
        response
    }

    fn emit(&mut self, mut value: Value, out: &mut Vec<Bytes>) {
        value["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        out.push(data_frame(&value));
    }

    fn emit_response(&mut self, out: &mut Vec<Bytes>) {
        let response = self.response();
        self.emit(response, out);
    }

    /// A message id not used yet in this response: `base`, else `base_2`, `base_3`, …
    fn unique_id(&mut self, base: &str) -> String {
        let mut id = base.to_owned();
        let mut n = 2;
        while self.used_ids.contains(&id) {
            id = format!("{base}_{n}");
            n += 1;
        }
        self.used_ids.insert(id.clone());
        id
    }

    fn start(&mut self, session: Option<String>, out: &mut Vec<Bytes>) {
        if self.started {
            return;
        }
        self.started = true;
        if session.is_some() {
            self.session_id = session;
        }
        self.status = "created";
        self.emit_response(out);
        self.status = "in_progress";
        self.emit_response(out);
    }

    fn open_message(&mut self, id: &str, kind: &str, role: &str, out: &mut Vec<Bytes>) {
        for status in ["created", "in_progress"] {
            let message = message_object(id, kind, role, status, None);
            self.emit(message, out);
        }
    }

    fn complete_message(
        &mut self,
        id: &str,
        kind: &str,
        role: &str,
        content: Value,
        out: &mut Vec<Bytes>,
    ) {
        self.emit(content.clone(), out);
        let message = message_object(id, kind, role, "completed", Some(vec![content]));
        self.output.push(message.clone());
        self.emit(message, out);
    }

    fn open_text(&mut self, agui_id: &str, kind: &'static str, out: &mut Vec<Bytes>) {
        let msg_id = self.unique_id(agui_id);
        self.open_message(&msg_id, kind, "assistant", out);
        let open = OpenText {
            agui_id: agui_id.to_owned(),
            msg_id,
            kind,
            text: String::new(),
        };
        if kind == "reasoning" {
            self.reasoning = Some(open);
        } else {
            self.text = Some(open);
        }
    }

    fn text_delta(&mut self, agui_id: &str, kind: &'static str, delta: &str, out: &mut Vec<Bytes>) {
        let slot = if kind == "reasoning" {
            &self.reasoning
        } else {
            &self.text
        };
        if slot.as_ref().is_none_or(|open| open.agui_id != agui_id) {
            self.close_text(kind, out);
            self.open_text(agui_id, kind, out);
        }
        let slot = if kind == "reasoning" {
            &mut self.reasoning
        } else {
            &mut self.text
        };
        let Some(open) = slot.as_mut() else {
            return;
        };
        open.text.push_str(delta);
        let content = text_content(&open.msg_id, "in_progress", true, delta);
        self.emit(content, out);
    }

    fn close_text(&mut self, kind: &'static str, out: &mut Vec<Bytes>) {
        let open = if kind == "reasoning" {
            self.reasoning.take()
        } else {
            self.text.take()
        };
        if let Some(open) = open {
            let content = text_content(&open.msg_id, "completed", false, &open.text);
            self.complete_message(&open.msg_id, open.kind, "assistant", content, out);
        }
    }

    fn call_data(call: &OpenCall, arguments: &str) -> Value {
        json!({"call_id": call.call_id, "name": call.name, "arguments": arguments})
    }

    /// Puts a buffered call on the wire: its message, its data content, and the arguments so
    /// far as one piece.
    fn make_live(&mut self, index: usize, out: &mut Vec<Bytes>) {
        let Some(call) = self.calls.get_mut(index) else {
            return;
        };
        if call.live {
            return;
        }
        call.live = true;
        let msg_id = call.msg_id.clone();
        let initial = data_content(&msg_id, "in_progress", false, Self::call_data(call, ""));
        let arguments = call.arguments.clone();
        self.open_message(&msg_id, "function_call", "assistant", out);
        self.emit(initial, out);
        if !arguments.is_empty() {
            let delta = data_content(
                &msg_id,
                "in_progress",
                true,
                json!({"arguments": arguments}),
            );
            self.emit(delta, out);
        }
    }

    /// Completes the calls at the front that have ended, and puts the next one live.
    fn drain_calls(&mut self, out: &mut Vec<Bytes>) {
        while self.calls.first().is_some_and(|call| call.ended) {
            self.make_live(0, out);
            let call = self.calls.remove(0);
            self.finish_call(&call, out);
        }
        if !self.calls.is_empty() {
            self.make_live(0, out);
        }
    }

    fn finish_call(&mut self, call: &OpenCall, out: &mut Vec<Bytes>) {
        let content = data_content(
            &call.msg_id,
            "completed",
            false,
            Self::call_data(call, &call.arguments),
        );
        self.complete_message(&call.msg_id, "function_call", "assistant", content, out);
    }

    /// Marks what is still open at a failure as `incomplete`.
    fn abandon_open(&mut self, out: &mut Vec<Bytes>) {
        let mut open: Vec<(String, &'static str)> = Vec::new();
        for text in [self.reasoning.take(), self.text.take()]
            .into_iter()
            .flatten()
        {
            open.push((text.msg_id, text.kind));
        }
        for call in std::mem::take(&mut self.calls) {
            if call.live {
                open.push((call.msg_id, "function_call"));
            }
        }
        for (id, kind) in open {
            let message = message_object(&id, kind, "assistant", "incomplete", None);
            self.emit(message, out);
        }
    }

    fn set_usage(&mut self, usage: &RunUsage) {
        let (input_tokens, output_tokens) = usage.totals();
        self.usage = Some(json!({
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens.saturating_add(output_tokens),
        }));
    }
}

fn message_object(
    id: &str,
    kind: &str,
    role: &str,
    status: &str,
    content: Option<Vec<Value>>,
) -> Value {
    let mut message = json!({
        "object": "message",
        "id": id,
        "type": kind,
        "role": role,
        "status": status,
    });
    if let Some(content) = content {
        message["content"] = Value::Array(content);
    }
    message
}

fn text_content(msg_id: &str, status: &str, delta: bool, text: &str) -> Value {
    json!({
        "object": "content",
        "type": "text",
        "index": 0,
        "delta": delta,
        "msg_id": msg_id,
        "status": status,
        "text": text,
    })
}

fn data_content(msg_id: &str, status: &str, delta: bool, data: Value) -> Value {
    json!({
        "object": "content",
        "type": "data",
        "index": 0,
        "delta": delta,
        "msg_id": msg_id,
        "status": status,
        "data": data,
    })
}

fn error_code(code: RunErrorCode) -> String {
    match serde_json::to_value(code) {
        Ok(Value::String(code)) => code,
        _ => "INTERNAL_ERROR".to_owned(),
    }
}

impl Encoder for AgentScopeEncoder {
    fn encode(&mut self, event: &Event) -> Vec<Bytes> {
        let mut out = Vec::new();
        if self.ended {
            return out;
        }
        if let Event::RunStarted { thread_id, .. } = event {
            self.start(Some(thread_id.to_string()), &mut out);
            return out;
        }
        self.start(None, &mut out);
        match event {
            // Opaque reasoning artefacts and AG-UI's UI-only activities have no place in
            // AgentScope's messages.
            // A sub-agent's work: AgentScope's messages have no place for another agent's
            // output; the delegation shows as its tool call and result.
            Event::RunStarted { .. }
            | Event::ReasoningEncryptedValue { .. }
            | Event::ActivitySnapshot { .. }
            | Event::ActivityDelta { .. }
            | Event::SubagentStarted { .. }
            | Event::SubagentFinished { .. }
            | Event::SubagentError { .. }
            | Event::Forwarded(_) => {}
            Event::TextMessageStart { message_id, .. } => {
                self.close_text("message", &mut out);
                self.open_text(message_id.as_str(), "message", &mut out);
            }
            Event::TextMessageContent { message_id, delta } => {
                self.text_delta(message_id.as_str(), "message", delta, &mut out);
            }
            Event::TextMessageEnd { .. } => self.close_text("message", &mut out),
            Event::ReasoningMessageStart { message_id, .. } => {
                self.close_text("reasoning", &mut out);
                self.open_text(message_id.as_str(), "reasoning", &mut out);
            }
            Event::ReasoningMessageContent { message_id, delta } => {
                self.text_delta(message_id.as_str(), "reasoning", delta, &mut out);
            }
            Event::ReasoningMessageEnd { .. } => self.close_text("reasoning", &mut out),
            Event::ToolCallStart {
                tool_call_id,
                tool_call_name,
                parent_message_id,
            } => {
                let call_id = tool_call_id.as_str();
                let parent = parent_message_id.as_ref().map(MessageId::as_str);
                self.start_call(call_id, tool_call_name, parent, &mut out);
            }
            Event::ToolCallArgs {
                tool_call_id,
                delta,
            } => self.call_arguments(tool_call_id.as_str(), delta, &mut out),
            Event::ToolCallEnd { tool_call_id } => self.end_call(tool_call_id.as_str(), &mut out),
            Event::ToolCallResult {
                message_id,
                tool_call_id,
                content,
                ..
            } => self.call_result(
                message_id.as_str(),
                tool_call_id.as_str(),
                content,
                &mut out,
            ),
            Event::RunFinished { usage, .. } => self.complete(usage, &mut out),
            Event::RunError {
                message,
                code,
                usage,
            } => self.fail(message, *code, usage, &mut out),
            // No Agent API form: the thread keeps state and history (`GET /threads/{id}`).
            Event::StepStarted { .. }
            | Event::StepFinished { .. }
            | Event::ReasoningStart { .. }
            | Event::ReasoningEnd { .. }
            | Event::StateSnapshot { .. }
            | Event::StateDelta { .. }
            | Event::MessagesSnapshot { .. } => {}
        }
        out
    }
}

/// What each event does to the response.
impl AgentScopeEncoder {
    fn start_call(
        &mut self,
        call_id: &str,
        name: &str,
        parent_message_id: Option<&str>,
        out: &mut Vec<Bytes>,
    ) {
        // The turn's message id when the turn said nothing, so that an echoed turn maps back
        // onto the stored assistant message.
        let msg_id = self.unique_id(parent_message_id.unwrap_or(call_id));
        self.call_names.insert(call_id.to_owned(), name.to_owned());
        self.calls.push(OpenCall {
            call_id: call_id.to_owned(),
            name: name.to_owned(),
            msg_id,
            arguments: String::new(),
            live: false,
            ended: false,
        });
        if self.calls.len() == 1 {
            self.make_live(0, out);
        }
    }

    /// A piece of a call's arguments, streamed if the call is live and kept either way.
    fn call_arguments(&mut self, call_id: &str, delta: &str, out: &mut Vec<Bytes>) {
        let Some(call) = self.calls.iter_mut().find(|call| call.call_id == call_id) else {
            return;
        };
        call.arguments.push_str(delta);
        if call.live {
            let data = json!({"arguments": delta});
            let piece = data_content(&call.msg_id, "in_progress", true, data);
            self.emit(piece, out);
        }
    }

    fn end_call(&mut self, call_id: &str, out: &mut Vec<Bytes>) {
        if let Some(call) = self.calls.iter_mut().find(|call| call.call_id == call_id) {
            call.ended = true;
        }
        self.drain_calls(out);
    }

    fn call_result(&mut self, message_id: &str, call_id: &str, output: &str, out: &mut Vec<Bytes>) {
        let msg_id = self.unique_id(message_id);
        let name = self.call_names.get(call_id).cloned().unwrap_or_default();
        self.open_message(&msg_id, "function_call_output", "tool", out);
        let data = json!({"call_id": call_id, "name": name, "output": output});
        let content = data_content(&msg_id, "completed", false, data);
        self.complete_message(&msg_id, "function_call_output", "tool", content, out);
    }

    /// Closes whatever is open and sends the completed response.
    fn complete(&mut self, usage: &RunUsage, out: &mut Vec<Bytes>) {
        self.close_text("reasoning", out);
        self.close_text("message", out);
        for call in &mut self.calls {
            call.ended = true;
        }
        self.drain_calls(out);
        self.set_usage(usage);
        self.status = "completed";
        self.completed_at = Some(now_secs());
        self.ended = true;
        self.emit_response(out);
    }

    fn fail(&mut self, message: &str, code: RunErrorCode, usage: &RunUsage, out: &mut Vec<Bytes>) {
        self.abandon_open(out);
        self.set_usage(usage);
        self.status = "failed";
        self.error = Some(json!({"code": error_code(code), "message": message}));
        self.ended = true;
        self.emit_response(out);
    }
}
