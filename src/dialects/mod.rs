//! Dialects: the same run spoken in other protocols (the AG-Kit `send-message` dialect, the
//! AgentScope Agent API, the v1 agent API's strict input and answers, CopilotKit's runtime
//! protocol). A dialect is an input transform into the
//! one validated [`RunInput`](crate::protocol::RunInput) plus an [`Encoder`] over the run's AG-UI events.
//! AG-UI itself is the identity dialect.

pub(crate) mod agentscope;
pub(crate) mod agkit;
pub(crate) mod copilotkit;
pub(crate) mod v1_agent;

use crate::protocol::events::{Event, RecordedEvent};
use crate::protocol::sse;
use bytes::Bytes;

/// Turns a run's AG-UI events into a dialect's wire frames.
pub trait Encoder: Send + 'static {
    /// Zero or more complete SSE frames (`data: <json>\n\n`) for one event.
    fn encode(&mut self, event: &Event) -> Vec<Bytes>;

    /// The frames of a recorded event. Other dialects' clients parse one `data:` line per
    /// frame and have no resume, so only AG-UI frames carry the sequence number as an SSE id.
    /// Events read back from the store (no `event`) have no frames in other dialects.
    fn encode_recorded(&mut self, recorded: &RecordedEvent) -> Vec<Bytes> {
        recorded
            .event
            .as_ref()
            .map(|event| self.encode(event))
            .unwrap_or_default()
    }
}

impl<T: Encoder + ?Sized> Encoder for Box<T> {
    fn encode(&mut self, event: &Event) -> Vec<Bytes> {
        (**self).encode(event)
    }

    fn encode_recorded(&mut self, recorded: &RecordedEvent) -> Vec<Bytes> {
        (**self).encode_recorded(recorded)
    }
}

/// AG-UI on the wire, with integer epoch-millisecond timestamps.
pub struct AguiEncoder;

impl Encoder for AguiEncoder {
    fn encode(&mut self, event: &Event) -> Vec<Bytes> {
        vec![sse::encode_event(event, sse::now_ms())]
    }

    fn encode_recorded(&mut self, recorded: &RecordedEvent) -> Vec<Bytes> {
        vec![sse::encode_recorded(recorded)]
    }
}

/// Frames a JSON value as one SSE event.
pub(crate) fn data_frame(value: &serde_json::Value) -> Bytes {
    let mut frame = Vec::with_capacity(96);
    frame.extend_from_slice(b"data: ");
    // A `Value` always serialises.
    let _ = serde_json::to_writer(&mut frame, value);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}
