//! A client that follows a run as our resumable client does, for the long-run tests and the
//! hand-off bench: the run's POST stream, then its events route after the last id seen, on the
//! notice that the run goes on or on a cut; what it saw, and the gaps between events.

use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;
use tokio::time::Instant;

/// One SSE frame: its id (none for a notice) and its event.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub id: Option<u64>,
    pub event: Value,
}

impl Frame {
    pub(crate) fn kind(&self) -> &str {
        self.event["type"].as_str().unwrap_or_default()
    }

    /// The notice that the stream ends while the run goes on.
    pub(crate) fn continues(&self) -> bool {
        self.event["metadata"]["agui-lambda"]["continues"].is_object()
    }

    pub(crate) fn terminal(&self) -> bool {
        matches!(self.kind(), "RUN_FINISHED" | "RUN_ERROR") && !self.continues()
    }
}

/// The frames of one response, until its end or a cut (`true` when it was cut).
pub(crate) async fn frames(
    response: reqwest::Response,
    mut on_frame: impl FnMut(&Frame),
) -> (Vec<Frame>, bool) {
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut frames = Vec::new();
    loop {
        match body.next().await {
            Some(Ok(chunk)) => buffer.push_str(&String::from_utf8_lossy(&chunk)),
            Some(Err(_)) => return (frames, true),
            None => return (frames, false),
        }
        while let Some(end) = buffer.find("\n\n") {
            let raw: String = buffer.drain(..end + 2).collect();
            let mut id = None;
            let mut data = None;
            for line in raw.lines() {
                if let Some(value) = line.strip_prefix("id: ") {
                    id = value.trim().parse().ok();
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = serde_json::from_str::<Value>(value).ok();
                }
            }
            if let Some(event) = data {
                let frame = Frame { id, event };
                on_frame(&frame);
                frames.push(frame);
            }
        }
    }
}

/// What a client that follows a run across its invocations saw.
#[derive(Debug, Default)]
pub(crate) struct Followed {
    pub frames: Vec<Frame>,
    /// Streams that ended with the notice that the run goes on.
    pub notices: usize,
    /// Streams cut without a terminal event (the function killed).
    pub cuts: usize,
    /// The longest wait between two events of the run, around hand-offs and cuts included.
    pub longest_gap: Duration,
    /// For each notice, the wait between the run's last event before it and its first after:
    /// the gap a client sees at a hand-off.
    pub notice_gaps: Vec<Duration>,
}

impl Followed {
    /// The run's own events (notices left out).
    pub(crate) fn events(&self) -> Vec<&Frame> {
        self.frames
            .iter()
            .filter(|frame| frame.id.is_some())
            .collect()
    }
}

/// Starts `input` and follows the run to its terminal event as our resumable client does: on
/// the notice, or a cut, it follows the events route after the last id it has.
pub(crate) async fn follow(url: &str, input: &Value, mut on_frame: impl FnMut(&Frame)) -> Followed {
    let http = reqwest::Client::new();
    let thread = input["threadId"].as_str().unwrap();
    let run = input["runId"].as_str().unwrap();
    let mut followed = Followed::default();
    let mut last_id = 0;
    // When each frame arrived, as the callback sees it: the gaps are the client's.
    let mut last_event = Instant::now();
    let mut after_notice = false;
    let mut gaps = (Duration::ZERO, Vec::new());
    let mut response = http
        .post(format!("{url}/agent"))
        .json(input)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    let give_up = Instant::now() + Duration::from_secs(150);
    loop {
        let (got, cut) = frames(response, |frame| {
            if frame.id.is_some() {
                gaps.0 = gaps.0.max(last_event.elapsed());
                if std::mem::take(&mut after_notice) {
                    gaps.1.push(last_event.elapsed());
                }
                last_event = Instant::now();
            } else if frame.continues() {
                after_notice = true;
            }
            on_frame(frame);
        })
        .await;
        followed.longest_gap = gaps.0;
        followed.notice_gaps.clone_from(&gaps.1);
        for frame in got {
            if let Some(id) = frame.id {
                assert_eq!(
                    id,
                    last_id + 1,
                    "ids without gaps or repeats: {:?}",
                    frame.event
                );
                last_id = id;
            }
            let terminal = frame.terminal();
            if frame.continues() {
                followed.notices += 1;
                assert_eq!(frame.event["result"]["lastEventId"], last_id);
            }
            followed.frames.push(frame);
            if terminal {
                return followed;
            }
        }
        if cut || !followed.frames.last().is_some_and(Frame::continues) {
            followed.cuts += 1;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(
            Instant::now() < give_up,
            "the run did not end: {followed:?}"
        );
        response = loop {
            let answer = http
                .get(format!("{url}/threads/{thread}/runs/{run}/events"))
                .header("last-event-id", last_id.to_string())
                .send()
                .await;
            match answer {
                Ok(answer) if answer.status() == 200 => break answer,
                _ => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
    }
}
