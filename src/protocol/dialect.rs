//! Dialects: the same run spoken in other protocols. A dialect is an input transform into the
//! one validated [`RunInput`](super::RunInput) plus an [`Encoder`] over the run's AG-UI events.
//! AG-UI itself is the identity dialect.

use super::events::Event;
use super::sse;
use bytes::Bytes;

/// Turns a run's AG-UI events into a dialect's wire frames.
pub trait Encoder: Send + 'static {
    /// Zero or more complete SSE frames (`data: <json>\n\n`) for one event.
    fn encode(&mut self, event: &Event) -> Vec<Bytes>;
}

impl<T: Encoder + ?Sized> Encoder for Box<T> {
    fn encode(&mut self, event: &Event) -> Vec<Bytes> {
        (**self).encode(event)
    }
}

/// AG-UI on the wire, with integer epoch-millisecond timestamps.
pub struct AguiEncoder;

impl Encoder for AguiEncoder {
    fn encode(&mut self, event: &Event) -> Vec<Bytes> {
        vec![sse::encode_event(event, sse::now_ms())]
    }
}

/// Frames a JSON value as one SSE event.
pub fn data_frame(value: &serde_json::Value) -> Bytes {
    let mut frame = Vec::with_capacity(96);
    frame.extend_from_slice(b"data: ");
    // A `Value` always serialises.
    let _ = serde_json::to_writer(&mut frame, value);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}
