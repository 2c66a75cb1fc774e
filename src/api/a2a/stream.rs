//! A task's frames as Server-Sent Events: one `data:` line per frame (the JSON-RPC binding
//! wraps each in its response envelope), `: ping` while the run is silent, and a quiet end
//! before the invocation must answer, after which the client subscribes again.

use super::Binding;
use crate::a2a::types::StreamResponse;
use crate::protocol::sse::PING_FRAME;
use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};
use std::time::Duration;
use tokio::time::Instant;

/// One frame, in `binding`'s shape (`id` is the JSON-RPC request's).
pub(super) fn frame(binding: Binding, id: &Value, frame: &StreamResponse) -> Bytes {
    let value = match binding {
        Binding::JsonRpc => json!({"jsonrpc": "2.0", "id": id, "result": frame}),
        Binding::Rest => serde_json::to_value(frame).unwrap_or_default(),
    };
    crate::dialects::data_frame(&value)
}

/// `frames` as SSE chunks, pinging every `ping_interval` of silence, ending by `deadline`.
pub(super) fn sse(
    frames: std::pin::Pin<Box<dyn Stream<Item = StreamResponse> + Send>>,
    binding: Binding,
    id: Value,
    ping_interval: Duration,
    deadline: Instant,
) -> impl Stream<Item = Bytes> + Send + 'static {
    let mut frames = frames;
    async_stream::stream! {
        loop {
            let wait = (Instant::now() + ping_interval).min(deadline);
            match tokio::time::timeout_at(wait, frames.next()).await {
                Ok(Some(next)) => yield frame(binding, &id, &next),
                Ok(None) => break,
                Err(_) if Instant::now() >= deadline => break,
                Err(_) => yield Bytes::from_static(PING_FRAME),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_stream_pings_while_silent_and_ends_quietly_by_the_deadline() {
        // A task that never ends within the invocation: the client subscribes again later.
        let frames: std::pin::Pin<Box<dyn Stream<Item = StreamResponse> + Send>> =
            Box::pin(futures_util::stream::pending());
        let deadline = Instant::now() + Duration::from_secs(25);
        let out: Vec<Bytes> = sse(
            frames,
            Binding::Rest,
            Value::Null,
            Duration::from_secs(10),
            deadline,
        )
        .collect()
        .await;
        assert_eq!(
            out,
            [
                Bytes::from_static(PING_FRAME),
                Bytes::from_static(PING_FRAME)
            ]
        );
        assert!(Instant::now() >= deadline);
    }

    #[test]
    fn json_rpc_frames_are_wrapped_in_the_response_envelope() {
        let task = StreamResponse::Task(crate::a2a::types::Task::default());
        let framed = frame(Binding::JsonRpc, &json!("req-1"), &task);
        assert!(framed.starts_with(br#"data: {"jsonrpc":"2.0","id":"req-1","result":{"task":"#));
        assert!(frame(Binding::Rest, &Value::Null, &task).starts_with(br#"data: {"task":"#));
    }
}
