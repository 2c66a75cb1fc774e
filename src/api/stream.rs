//! SSE transport: a run's event batches as body chunks with `: ping` while silent, following a
//! run that lives in another process through its log in the store (asking for the run's
//! recovery when its runner stopped), and ending a stream that must end before its run with the
//! notice that says where to follow it.

use crate::agent::Agent;
use crate::auth::Principal;
use crate::dialects::Encoder;
use crate::protocol::events::{Event, RecordedEvent, RunErrorCode};
use crate::protocol::open_items::OpenItems;
use crate::protocol::sse::PING_FRAME;
use crate::protocol::{RunId, ThreadId};
use crate::store::{EventPage, RunRef, ThreadActivity};
use bytes::{Bytes, BytesMut};
use futures_util::{FutureExt, Stream, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Events that arrived together.
pub(crate) type Batch = Vec<Arc<RecordedEvent>>;

/// `batches` until `end`: a stream still open then ends with the notice that its run goes on
/// (where to follow it, after the last event sent); `after` is the last event sent before.
pub(crate) fn until<S>(
    batches: S,
    end: Option<Instant>,
    thread_id: &ThreadId,
    run_id: &RunId,
    after: u64,
) -> impl Stream<Item = Batch> + Send + 'static
where
    S: Stream<Item = Batch> + Send + 'static,
{
    let (thread_id, run_id) = (thread_id.clone(), run_id.clone());
    let mut batches = Box::pin(batches);
    async_stream::stream! {
        let mut last = after;
        loop {
            let next = match end {
                Some(end) => match tokio::time::timeout_at(end, batches.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        yield vec![Arc::new(notice(&thread_id, &run_id, last))];
                        break;
                    }
                },
                None => batches.next().await,
            };
            let Some(batch) = next else { break };
            let ended = batch.last().is_some_and(|event| event.terminal);
            if let Some(event) = batch.iter().rev().find(|event| !event.notice) {
                last = event.seq;
            }
            yield batch;
            if ended {
                break;
            }
        }
    }
}

/// The notice that ends a stream while its run goes on, after event `after`.
fn notice(thread_id: &ThreadId, run_id: &RunId, after: u64) -> RecordedEvent {
    RecordedEvent::continues(
        thread_id,
        run_id,
        after,
        &crate::agent::events_path(thread_id, run_id),
        chrono::Utc::now().timestamp_millis(),
    )
}

/// The shortest gap between two body chunks while events keep coming. A frame after a quiet
/// spell goes out at once; during a burst (a model streaming faster than one chunk per
/// millisecond), what arrives within the gap shares one chunk. Without it, a runtime with one
/// thread writes one chunk (one syscall) per event: the run and the writer take turns.
const MIN_CHUNK_GAP: Duration = Duration::from_millis(1);

/// Turns a run's event batches into SSE frames with `encoder`, one body chunk per batch (a
/// burst of model chunks then costs one socket write, not one per frame), and sends a ping
/// whenever `ping_interval` passes without a frame.
pub fn frames<S, E>(
    batches: S,
    ping_interval: Duration,
    mut encoder: E,
) -> impl Stream<Item = Bytes> + Send
where
    S: Stream<Item = Vec<Arc<RecordedEvent>>> + Send + 'static,
    E: Encoder,
{
    let mut batches = Box::pin(batches);
    let mut open = OpenItems::default();
    async_stream::stream! {
        let mut last_chunk: Option<Instant> = None;
        loop {
            match tokio::time::timeout(ping_interval, batches.next()).await {
                Ok(Some(batch)) => {
                    let mut batch = closed_before_notice(batch, &mut open);
                    let ends = batch.last().is_some_and(|event| event.terminal);
                    if let Some(ready_at) = last_chunk.map(|at| at + MIN_CHUNK_GAP)
                        && !ends
                        && Instant::now() < ready_at
                    {
                        tokio::time::sleep_until(ready_at).await;
                        // What joins the chunk is observed too, or a notice in it would
                        // leave open what those batches opened.
                        while let Some(Some(more)) = batches.next().now_or_never() {
                            batch.extend(closed_before_notice(more, &mut open));
                        }
                    }
                    let mut chunk = BytesMut::new();
                    for event in &batch {
                        for frame in encoder.encode_recorded(event) {
                            chunk.extend_from_slice(&frame);
                        }
                    }
                    if !chunk.is_empty() {
                        last_chunk = Some(Instant::now());
                        yield chunk.freeze();
                    }
                }
                Ok(None) => break,
                Err(_elapsed) => yield Bytes::from_static(PING_FRAME),
            }
        }
    }
}

/// `batch` as sent: a notice that ends the stream while its run goes on comes after the events
/// that close what the stream opened (messages, calls, reasoning, steps, sub-agents), so every
/// client that verifies a run sees a well-formed one end.
fn closed_before_notice(batch: Batch, open: &mut OpenItems) -> Batch {
    if !batch.iter().any(|event| event.notice) {
        batch.iter().for_each(|event| open.observe(event));
        return batch;
    }
    let mut sent = Vec::with_capacity(batch.len() + 4);
    for event in batch {
        if event.notice && event.terminal && !open.is_empty() {
            let continues = event.continues_at();
            let at = chrono::Utc::now().timestamp_millis();
            sent.extend(open.closings(&continues, at).into_iter().map(Arc::new));
            *open = OpenItems::default();
        }
        open.observe(&event);
        sent.push(event);
    }
    sent
}

/// How a follower of a stored run polls.
const FIRST_POLL: Duration = Duration::from_millis(100);
const LONGEST_POLL: Duration = Duration::from_secs(1);
/// Polls that find the run gone from its thread and no terminal event before the follower
/// gives up on it (its process died before writing the end, and it cannot be taken over).
const POLLS_AFTER_RELEASE: u32 = 3;
/// How often a follower asks again for the recovery of a run whose runner stopped, and how many
/// times before it gives up on it.
const RECOVERY_EVERY: Duration = Duration::from_secs(10);
const RECOVERY_ASKS: u32 = 3;

/// The events of a run held in the store after sequence number `after`, then the run's new
/// events as they are written (across its invocations), until its terminal event; at `end`, a
/// stream still open ends with the notice that the run goes on. A run whose runner stopped
/// without letting it go is asked to be taken over.
pub(crate) fn follow_stored(
    agent: Agent,
    owner: Principal,
    run: RunRef,
    first: EventPage,
    after: u64,
    end: Option<Instant>,
) -> impl Stream<Item = Vec<Arc<RecordedEvent>>> + Send + 'static {
    async_stream::stream! {
        let mut cursor = first.next;
        let mut last_seq = after;
        let mut ended = false;
        let mut page = first;
        let mut pause = FIRST_POLL;
        let mut released_polls = 0;
        let mut recovery: (u32, Option<Instant>) = (0, None);
        loop {
            let fresh: Vec<Arc<RecordedEvent>> = page
                .events
                .drain(..)
                .filter(|event| event.seq > last_seq)
                .map(Arc::new)
                .collect();
            if let Some(last) = fresh.last() {
                last_seq = last.seq;
                ended = last.terminal;
                pause = FIRST_POLL;
                released_polls = 0;
                yield fresh;
            } else {
                match agent.activity(&owner, &run.thread_id).await {
                    Ok(ThreadActivity::Running { run_id, .. }) if run_id == run.run_id => {
                        released_polls = 0;
                    }
                    Ok(ThreadActivity::Stalled { run_id, .. })
                        if run_id == run.run_id && recovery.0 < RECOVERY_ASKS =>
                    {
                        released_polls = 0;
                        if recovery.1.is_none_or(|at| at.elapsed() >= RECOVERY_EVERY) {
                            agent.recover(&owner, &run.thread_id, &run.run_id).await;
                            recovery = (recovery.0 + 1, Some(Instant::now()));
                        }
                    }
                    Ok(_) => released_polls += 1,
                    Err(error) => tracing::warn!(%error, "following a run: store read failed"),
                }
            }
            if ended {
                break;
            }
            if end.is_some_and(|end| Instant::now() >= end) {
                yield vec![Arc::new(notice(&run.thread_id, &run.run_id, last_seq))];
                break;
            }
            if released_polls >= POLLS_AFTER_RELEASE {
                let lost = Event::RunError {
                    message: "the run ended without a terminal event: its process stopped or the follow timed out".to_owned(),
                    code: RunErrorCode::RunLost,
                    usage: Default::default(),
                };
                yield vec![Arc::new(RecordedEvent::new(last_seq + 1, lost, chrono::Utc::now().timestamp_millis()))];
                break;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 3 / 2).min(LONGEST_POLL);
            page = match agent.run_events(&run, cursor).await {
                Ok(page) => page,
                Err(error) => {
                    tracing::warn!(%error, "following a run: store read failed");
                    EventPage::default()
                }
            };
            if page.next.is_some() {
                cursor = page.next;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialects::AguiEncoder;
    use crate::protocol::ids::{RunId, ThreadId};

    fn finished(seq: u64) -> Arc<RecordedEvent> {
        Arc::new(RecordedEvent::new(
            seq,
            Event::RunFinished {
                thread_id: ThreadId::parse("t1", 128).unwrap(),
                run_id: RunId::parse("r1", 128).unwrap(),
                outcome: None,
                usage: Default::default(),
            },
            1,
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn pings_while_silent_then_forwards_events() {
        let events = async_stream::stream! {
            tokio::time::sleep(Duration::from_secs(25)).await;
            yield vec![finished(1)];
        };
        let out: Vec<Bytes> = frames(events, Duration::from_secs(10), AguiEncoder)
            .collect()
            .await;
        assert_eq!(out.len(), 3);
        assert_eq!(&out[0][..], PING_FRAME);
        assert_eq!(&out[1][..], PING_FRAME);
        assert!(out[2].starts_with(b"id: 1\ndata: {\"type\":\"RUN_FINISHED\""));
    }

    #[tokio::test]
    async fn a_batch_is_one_chunk() {
        let batches = futures_util::stream::iter(vec![
            vec![finished(1), finished(2), finished(3)],
            vec![finished(4)],
        ]);
        let out: Vec<Bytes> = frames(batches, Duration::from_secs(10), AguiEncoder)
            .collect()
            .await;
        let count = |chunk: &Bytes| chunk.windows(6).filter(|w| w == b"data: ").count();
        assert_eq!(out.iter().map(count).collect::<Vec<_>>(), [3, 1]);
    }

    fn text(seq: u64) -> Arc<RecordedEvent> {
        let event = Event::TextMessageContent {
            message_id: crate::protocol::MessageId::parse("m1", 128).unwrap(),
            delta: "x".to_owned(),
        };
        Arc::new(RecordedEvent::new(seq, event, 1))
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_after_the_first_chunk_shares_one_chunk() {
        // All batches are ready at once: the first goes out alone, the rest wait out the gap
        // and leave together.
        let batches = futures_util::stream::iter(vec![
            vec![text(1)],
            vec![text(2)],
            vec![text(3)],
            vec![finished(4)],
        ]);
        let out: Vec<Bytes> = frames(batches, Duration::from_secs(10), AguiEncoder)
            .collect()
            .await;
        let count = |chunk: &Bytes| chunk.windows(6).filter(|w| w == b"data: ").count();
        assert_eq!(out.iter().map(count).collect::<Vec<_>>(), [1, 3]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_cut_inside_a_step_closes_what_it_opened_before_the_notice() {
        let thread_id = ThreadId::parse("t1", 128).unwrap();
        let run_id = RunId::parse("r1", 128).unwrap();
        let message_id = crate::protocol::MessageId::parse("m1", 128).unwrap();
        let opened = [
            Event::RunStarted {
                thread_id: thread_id.clone(),
                run_id: run_id.clone(),
                parent_run_id: None,
                protocol_version: Some("1.1"),
                metadata: None,
            },
            Event::StepStarted {
                step_name: "model_turn_1".to_owned(),
            },
            Event::TextMessageStart {
                message_id: message_id.clone(),
                role: crate::protocol::events::TextRole::Assistant,
            },
        ];
        let mut batch: Batch = opened
            .into_iter()
            .enumerate()
            .map(|(at, event)| Arc::new(RecordedEvent::new(at as u64 + 1, event, 1)))
            .collect();
        batch.push(text(4));
        // The model goes on streaming past the stream's end.
        let batches = async_stream::stream! {
            yield batch;
            tokio::time::sleep(Duration::from_secs(5)).await;
            yield vec![text(5)];
        };
        let cut = until(
            batches,
            Some(Instant::now() + Duration::from_secs(1)),
            &thread_id,
            &run_id,
            0,
        );
        let body: Vec<Bytes> = frames(cut, Duration::from_secs(10), AguiEncoder)
            .collect()
            .await;
        let body = String::from_utf8(body.concat()).unwrap();
        let events = crate::protocol::verify::parse_sse_with_ids(&body).unwrap();
        let kinds: Vec<(Option<u64>, &str)> = events
            .iter()
            .map(|(id, event)| (*id, event["type"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                (Some(1), "RUN_STARTED"),
                (Some(2), "STEP_STARTED"),
                (Some(3), "TEXT_MESSAGE_START"),
                (Some(4), "TEXT_MESSAGE_CONTENT"),
                (None, "TEXT_MESSAGE_END"),
                (None, "STEP_FINISHED"),
                (None, "RUN_FINISHED"),
            ]
        );
        let events: Vec<serde_json::Value> = events.into_iter().map(|(_, event)| event).collect();
        crate::protocol::verify::verify_run(&events).unwrap();
        for closing in &events[4..] {
            assert_eq!(
                closing["metadata"]["agui-lambda"]["continues"]["lastEventId"], 4,
                "{closing}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn what_opens_in_a_burst_that_shares_a_chunk_is_closed_before_the_notice() {
        // The step opens in a batch that joins the first chunk's burst: it is closed too.
        let thread_id = ThreadId::parse("t1", 128).unwrap();
        let run_id = RunId::parse("r1", 128).unwrap();
        let started = Event::StepStarted {
            step_name: "model_turn_1".to_owned(),
        };
        let batches = async_stream::stream! {
            yield vec![text(1)];
            yield vec![text(2)];
            yield vec![Arc::new(RecordedEvent::new(3, started, 1))];
            tokio::time::sleep(Duration::from_secs(5)).await;
            yield vec![text(4)];
        };
        let cut = until(
            batches,
            Some(Instant::now() + Duration::from_secs(1)),
            &thread_id,
            &run_id,
            0,
        );
        let body: Vec<Bytes> = frames(cut, Duration::from_secs(10), AguiEncoder)
            .collect()
            .await;
        let body = String::from_utf8(body.concat()).unwrap();
        let kinds: Vec<String> = crate::protocol::verify::parse_sse_with_ids(&body)
            .unwrap()
            .iter()
            .map(|(_, event)| event["type"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds[kinds.len() - 2..],
            ["STEP_FINISHED".to_owned(), "RUN_FINISHED".to_owned()]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn no_ping_when_events_keep_flowing() {
        let events = async_stream::stream! {
            for seq in 1..=3 {
                tokio::time::sleep(Duration::from_secs(5)).await;
                yield vec![finished(seq)];
            }
        };
        let out: Vec<Bytes> = frames(events, Duration::from_secs(10), AguiEncoder)
            .collect()
            .await;
        assert!(out.iter().all(|frame| frame.starts_with(b"id: ")));
    }
}
