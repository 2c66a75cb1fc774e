//! Server-Sent Events framing: `data: <json>\n\n` with LF only, plus `: ping` comments while
//! the run is silent so proxies and clients keep the connection open.

use super::events::Event;
use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use serde::Serialize;
use std::time::Duration;

pub const CONTENT_TYPE: &str = "text/event-stream";
pub const PING_FRAME: &[u8] = b": ping\n\n";

#[derive(Serialize)]
struct Stamped<'a> {
    #[serde(flatten)]
    event: &'a Event,
    timestamp: i64,
}

/// Encodes one event as an SSE frame. JSON never contains a raw newline, so one `data:` line
/// always suffices.
pub fn encode_event(event: &Event, timestamp_ms: i64) -> Bytes {
    let mut frame = Vec::with_capacity(160);
    frame.extend_from_slice(b"data: ");
    if let Err(err) = serde_json::to_writer(
        &mut frame,
        &Stamped {
            event,
            timestamp: timestamp_ms,
        },
    ) {
        // Our event types always serialise; if one ever does not, the client must still get a
        // terminal event rather than a torn frame.
        tracing::error!(error = %err, "event serialisation failed");
        return Bytes::from_static(
            b"data: {\"type\":\"RUN_ERROR\",\"message\":\"something went wrong\",\"code\":\"INVALID_REQUEST\"}\n\n",
        );
    }
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Turns a run's event batches into SSE frames with `encoder`, one body chunk per batch (a
/// burst of model chunks then costs one socket write, not one per frame), and sends a ping
/// whenever `ping_interval` passes without a frame.
pub fn frames<S, E>(
    batches: S,
    ping_interval: Duration,
    mut encoder: E,
) -> impl Stream<Item = Bytes> + Send
where
    S: Stream<Item = Vec<Event>> + Send + 'static,
    E: super::dialect::Encoder,
{
    let mut batches = Box::pin(batches);
    async_stream::stream! {
        loop {
            match tokio::time::timeout(ping_interval, batches.next()).await {
                Ok(Some(batch)) => {
                    let mut chunk = BytesMut::new();
                    for event in &batch {
                        chunk.extend(encoder.encode(event));
                    }
                    if !chunk.is_empty() {
                        yield chunk.freeze();
                    }
                }
                Ok(None) => break,
                Err(_elapsed) => yield Bytes::from_static(PING_FRAME),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ids::{RunId, ThreadId};

    fn finished() -> Event {
        Event::RunFinished {
            thread_id: ThreadId::parse("t1", 128).unwrap(),
            run_id: RunId::parse("r1", 128).unwrap(),
            usage: Default::default(),
        }
    }

    #[test]
    fn frames_are_exact_bytes_with_lf_only() {
        let frame = encode_event(&finished(), 1_700_000_000_123);
        assert_eq!(
            &frame[..],
            b"data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\",\"timestamp\":1700000000123}\n\n"
        );
    }

    #[test]
    fn newlines_inside_content_stay_escaped() {
        let event = Event::RunError {
            message: "line\r\nnext".into(),
            code: crate::protocol::events::RunErrorCode::ModelError,
            usage: Default::default(),
        };
        let frame = encode_event(&event, 1);
        let body = &frame[..frame.len() - 2];
        assert!(!body.contains(&b'\n') && !body.contains(&b'\r'));
        assert!(frame.ends_with(b"\n\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn pings_while_silent_then_forwards_events() {
        let events = async_stream::stream! {
            tokio::time::sleep(Duration::from_secs(25)).await;
            yield vec![finished()];
        };
        let out: Vec<Bytes> = frames(
            events,
            Duration::from_secs(10),
            crate::protocol::dialect::AguiEncoder,
        )
        .collect()
        .await;
        assert_eq!(out.len(), 3);
        assert_eq!(&out[0][..], PING_FRAME);
        assert_eq!(&out[1][..], PING_FRAME);
        assert!(out[2].starts_with(b"data: {\"type\":\"RUN_FINISHED\""));
    }

    #[tokio::test]
    async fn a_batch_is_one_chunk() {
        let batches = futures_util::stream::iter(vec![
            vec![finished(), finished(), finished()],
            vec![finished()],
        ]);
        let out: Vec<Bytes> = frames(
            batches,
            Duration::from_secs(10),
            crate::protocol::dialect::AguiEncoder,
        )
        .collect()
        .await;
        let count = |chunk: &Bytes| chunk.windows(6).filter(|w| w == b"data: ").count();
        assert_eq!(out.iter().map(count).collect::<Vec<_>>(), [3, 1]);
    }

    #[tokio::test(start_paused = true)]
    async fn no_ping_when_events_keep_flowing() {
        let events = async_stream::stream! {
            for _ in 0..3 {
                tokio::time::sleep(Duration::from_secs(5)).await;
                yield vec![finished()];
            }
        };
        let out: Vec<Bytes> = frames(
            events,
            Duration::from_secs(10),
            crate::protocol::dialect::AguiEncoder,
        )
        .collect()
        .await;
        assert!(out.iter().all(|frame| frame.starts_with(b"data: ")));
    }
}
