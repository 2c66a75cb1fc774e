//! Server-Sent Events encoding: `id: <seq>\ndata: <json>\n\n` with LF only. The `id` is the
//! event's place in its run, so a client can resume with `Last-Event-ID`. Pinging and
//! batching are transport work and live in `api`.

use super::events::{Event, RecordedEvent, Stamped};
use bytes::Bytes;
use futures_util::{Stream, StreamExt};

pub(crate) const CONTENT_TYPE: &str = "text/event-stream";
pub(crate) const PING_FRAME: &[u8] = b": ping\n\n";

/// Encodes one event as an SSE frame without an id. JSON never contains a raw newline, so one
/// `data:` line always suffices.
pub fn encode_event(event: &Event, timestamp_ms: i64) -> Bytes {
    let mut frame = Vec::with_capacity(160);
    frame.extend_from_slice(b"data: ");
    if let Err(err) = serde_json::to_writer(
        &mut frame,
        &Stamped {
            event,
            timestamp: timestamp_ms,
            metadata: None,
        },
    ) {
        tracing::error!(error = %err, "event serialisation failed");
        return Bytes::from_static(
            b"data: {\"type\":\"RUN_ERROR\",\"message\":\"something went wrong\",\"code\":\"INVALID_REQUEST\"}\n\n",
        );
    }
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

/// A recorded event as its AG-UI frame, with its sequence number as the SSE id (a notice, which
/// is not one of the run's events, has none).
pub(crate) fn encode_recorded(recorded: &RecordedEvent) -> Bytes {
    let mut frame = Vec::with_capacity(recorded.json.len() + 32);
    if !recorded.notice {
        push_id(&mut frame, recorded.seq);
    }
    frame.extend_from_slice(b"data: ");
    frame.extend_from_slice(&recorded.json);
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

fn push_id(out: &mut Vec<u8>, seq: u64) {
    out.extend_from_slice(b"id: ");
    out.extend_from_slice(seq.to_string().as_bytes());
    out.push(b'\n');
}

pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `eventsource-stream` 0.2.3 panics on a body that starts with a UTF-8 byte-order mark (it
/// slices one byte off the three-byte character; found by the `model_stream` fuzz target). The
/// marks are dropped here, however the first bytes are split into chunks.
pub(crate) fn without_leading_bom<S, E>(
    bytes: S,
) -> impl Stream<Item = Result<Bytes, E>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, E>> + Send + 'static,
    E: Send + 'static,
{
    async_stream::stream! {
        let mut bytes = Box::pin(bytes);
        let mut head = bytes::BytesMut::new();
        let mut past_head = false;
        while let Some(chunk) = bytes.next().await {
            let chunk = match chunk {
                Ok(chunk) => chunk,
                Err(error) => {
                    if !head.is_empty() {
                        yield Ok(head.split().freeze());
                    }
                    yield Err(error);
                    return;
                }
            };
            if past_head {
                yield Ok(chunk);
                continue;
            }
            head.extend_from_slice(&chunk);
            while head.starts_with(BOM) {
                let _ = head.split_to(BOM.len());
            }
            // Undecided while what is held could still be the start of a mark.
            if !head.is_empty() && !BOM.starts_with(&head) {
                past_head = true;
                yield Ok(head.split().freeze());
            }
        }
        if !head.is_empty() {
            yield Ok(head.freeze());
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
            outcome: None,
            usage: Default::default(),
            result: None,
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
    fn recorded_frames_carry_their_sequence_number_as_the_id() {
        let recorded = RecordedEvent::new(42, finished(), 1_700_000_000_123);
        assert!(recorded.terminal);
        assert_eq!(
            &encode_recorded(&recorded)[..],
            b"id: 42\ndata: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\",\"timestamp\":1700000000123,\"metadata\":{\"agui-lambda\":{\"eventId\":42}}}\n\n"
        );
        let stored = RecordedEvent::stored(42, recorded.json.clone());
        assert!(stored.terminal);
        assert_eq!(encode_recorded(&stored), encode_recorded(&recorded));
        let cancelled = Event::RunFinished {
            thread_id: ThreadId::parse("t1", 128).unwrap(),
            run_id: RunId::parse("r1", 128).unwrap(),
            outcome: Some(crate::protocol::events::RunOutcome::Cancelled),
            usage: Default::default(),
            result: None,
        };
        assert_eq!(
            &RecordedEvent::new(3, cancelled, 5).json[..],
            br#"{"type":"RUN_FINISHED","threadId":"t1","runId":"r1","outcome":{"type":"cancelled"},"timestamp":5,"metadata":{"agui-lambda":{"eventId":3}}}"#
        );
    }

    #[test]
    fn the_notice_that_the_run_goes_on_has_no_id_and_says_where_to_follow() {
        let thread_id = ThreadId::parse("t1", 128).unwrap();
        let run_id = RunId::parse("r1", 128).unwrap();
        let notice =
            RecordedEvent::continues(&thread_id, &run_id, 41, "/threads/t1/runs/r1/events", 9);
        assert!(notice.notice && notice.terminal);
        let frame = encode_recorded(&notice);
        assert!(
            frame.starts_with(b"data: {\"type\":\"RUN_FINISHED\""),
            "no id line"
        );
        let json: serde_json::Value = serde_json::from_slice(&notice.json).unwrap();
        assert_eq!(json["result"]["continues"], true);
        assert_eq!(json["result"]["lastEventId"], 41);
        assert_eq!(
            json["metadata"]["agui-lambda"]["continues"],
            serde_json::json!({"events": "/threads/t1/runs/r1/events", "lastEventId": 41})
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
}
