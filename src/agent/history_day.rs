//! The history by calendar day (the v1 agent API's `GET /api/v1/agent/history`): the latest day of a
//! thread's visible messages, read newest first from the store and stopping as soon as the day
//! is known to be complete. Depends on `store` and `protocol` only.

use crate::auth::Principal;
use crate::protocol::{Message, ThreadId};
use crate::store::{History, StoreError, TimedMessage, TimedQuery};
use chrono::NaiveDate;

/// Messages read per store call: most days fit in one page.
const PAGE: usize = 100;

/// One day of a thread's visible history.
#[derive(Debug, Clone, PartialEq)]
pub struct DaySlice {
    /// The day shown; `None` when there is no visible message (before `before`).
    pub day: Option<NaiveDate>,
    /// A visible message exists on an earlier day: ask again with `before = day`.
    pub has_more: bool,
    /// The day's visible messages, oldest first.
    pub messages: Vec<TimedMessage>,
}

/// Whether the history shows `message`: user messages, and assistant messages with text. Tool
/// results, tool-call-only assistant turns, system, developer and reasoning messages are the
/// runtime's context, not the conversation a person reads.
pub(crate) fn is_visible(message: &Message) -> bool {
    match message {
        Message::User { .. } => true,
        Message::Assistant { content, .. } => {
            content.as_deref().is_some_and(|text| !text.is_empty())
        }
        Message::System { .. }
        | Message::Developer { .. }
        | Message::Tool { .. }
        | Message::Reasoning { .. } => false,
    }
}

/// The calendar date of `at_ms` (epoch ms) in `tz`; `None` for a time chrono cannot represent.
fn local_day(at_ms: i64, tz: chrono_tz::Tz) -> Option<NaiveDate> {
    chrono::DateTime::from_timestamp_millis(at_ms).map(|at| at.with_timezone(&tz).date_naive())
}

/// The latest day (strictly before `before` when given) with a visible message of `owner`'s
/// thread, its visible messages oldest first, and whether an earlier day has any. A message's
/// day is its time's calendar date in `tz`.
///
/// Messages are read newest first and a message's day is taken as the earliest of its own and
/// those of every newer visible message: times come from the writers' clocks, and one that is
/// a little behind (a message stored later but dated earlier) must neither be lost nor shown on
/// two days. With ordered times (the normal case) this is exactly the date of each message.
/// `NotFound` as `timed_messages`: another principal's, a missing or a deleted thread.
pub async fn history_day(
    store: &dyn History,
    owner: &Principal,
    thread_id: &ThreadId,
    before: Option<NaiveDate>,
    tz: chrono_tz::Tz,
) -> Result<DaySlice, StoreError> {
    let mut before_seq = None;
    // The earliest day seen so far, walking back: every older message counts on it or earlier.
    let mut floor: Option<NaiveDate> = None;
    let mut day = None;
    // Newest first while collecting.
    let mut messages = Vec::new();
    loop {
        let page = store
            .timed_messages(TimedQuery {
                owner,
                thread_id,
                before_seq,
                limit: PAGE,
            })
            .await?;
        for timed in page.messages {
            before_seq = Some(timed.seq);
            if !is_visible(&timed.message) {
                continue;
            }
            let Some(own_day) = local_day(timed.at_ms, tz) else {
                continue;
            };
            let effective = floor.map_or(own_day, |floor| floor.min(own_day));
            floor = Some(effective);
            if before.is_some_and(|before| effective >= before) {
                continue;
            }
            match day {
                None => {
                    day = Some(effective);
                    messages.push(timed);
                }
                Some(chosen) if effective == chosen => messages.push(timed),
                // An earlier day: the chosen one is complete, and there is more.
                Some(_) => {
                    messages.reverse();
                    return Ok(DaySlice {
                        day,
                        has_more: true,
                        messages,
                    });
                }
            }
        }
        if !page.more || before_seq.is_none() {
            break;
        }
    }
    messages.reverse();
    Ok(DaySlice {
        day,
        has_more: false,
        messages,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{MessageId, RunId, ToolCallId, UserContent};
    use crate::store::{MemoryStore, RunFinish, RunLeases, RunStart, Threads};
    use chrono::TimeZone;

    fn id(text: &str) -> MessageId {
        MessageId::parse(text, 128).unwrap()
    }

    fn user(name: &str) -> Message {
        Message::User {
            id: id(name),
            content: UserContent::Text(format!("{name} text")),
            name: None,
        }
    }

    fn assistant(name: &str, text: Option<&str>) -> Message {
        Message::Assistant {
            id: id(name),
            content: text.map(str::to_owned),
            tool_calls: Vec::new(),
            name: None,
            encrypted_value: None,
        }
    }

    fn tool(name: &str) -> Message {
        Message::Tool {
            id: id(name),
            tool_call_id: ToolCallId::parse("call-1", 128).unwrap(),
            content: "result".into(),
            error: None,
            metadata: None,
        }
    }

    fn utc_ms(y: i32, m: u32, d: u32, h: u32, min: u32) -> i64 {
        chrono::Utc
            .with_ymd_and_hms(y, m, d, h, min, 0)
            .unwrap()
            .timestamp_millis()
    }

    fn date(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).unwrap()
    }

    /// A thread whose runs stored `runs[i].1` at `runs[i].0` (each run's input and output).
    async fn thread_with(
        store: &MemoryStore,
        owner: &Principal,
        runs: &[(i64, Vec<Message>)],
    ) -> ThreadId {
        let thread = ThreadId::new_uuid();
        for (index, (at_ms, batch)) in runs.iter().enumerate() {
            let loaded = store.load(owner, &thread).await.unwrap();
            let lease = store
                .begin_run(RunStart {
                    owner,
                    thread_id: &thread,
                    run_id: &RunId::parse(format!("run-{index}"), 128).unwrap(),
                    loaded: loaded.as_ref(),
                    lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
                    new_messages: &batch[..1],
                    state: None,
                    title: None,
                    at_ms: *at_ms,
                    copied_at_ms: &[],
                })
                .await
                .unwrap();
            store
                .finish_run(RunFinish {
                    lease: &lease,
                    new_messages: &batch[1..],
                    state: None,
                    interrupts: None,
                    at_ms: *at_ms + 1_000,
                    context: None,
                })
                .await
                .unwrap();
        }
        thread
    }

    fn ids(slice: &DaySlice) -> Vec<String> {
        slice
            .messages
            .iter()
            .map(|timed| timed.message.id().as_str().to_owned())
            .collect()
    }

    /// Three days in UTC with a day between each: the 11th (with a tool round: a tool-call-only
    /// assistant turn and its result), the 13th, the 15th (with an assistant message of empty
    /// text).
    async fn three_days(store: &MemoryStore, owner: &Principal) -> ThreadId {
        thread_with(
            store,
            owner,
            &[
                (
                    utc_ms(2026, 3, 11, 10, 0),
                    vec![
                        user("u1"),
                        assistant("c1", None),
                        tool("t1"),
                        assistant("a1", Some("one")),
                    ],
                ),
                (
                    utc_ms(2026, 3, 13, 10, 0),
                    vec![user("u2"), assistant("a2", Some("two"))],
                ),
                (
                    utc_ms(2026, 3, 15, 10, 0),
                    vec![
                        user("u3"),
                        assistant("a3", Some("")),
                        assistant("a3b", Some("three")),
                    ],
                ),
            ],
        )
        .await
    }

    #[tokio::test]
    async fn the_latest_day_comes_first_with_only_its_visible_messages() {
        let store = MemoryStore::new();
        let owner = Principal::new("alice");
        let thread = three_days(&store, &owner).await;
        let slice = history_day(&store, &owner, &thread, None, chrono_tz::UTC)
            .await
            .unwrap();
        assert_eq!(slice.day, Some(date(2026, 3, 15)));
        assert!(slice.has_more);
        // The empty-text assistant message is not shown.
        assert_eq!(ids(&slice), ["u3", "a3b"]);
        assert!(
            slice
                .messages
                .windows(2)
                .all(|pair| pair[0].seq < pair[1].seq)
        );
    }

    #[tokio::test]
    async fn before_pages_back_day_by_day() {
        let store = MemoryStore::new();
        let owner = Principal::new("alice");
        let thread = three_days(&store, &owner).await;
        let page = |before| history_day(&store, &owner, &thread, before, chrono_tz::UTC);
        // At a day: strictly before it.
        let slice = page(Some(date(2026, 3, 15))).await.unwrap();
        assert_eq!((slice.day, slice.has_more), (Some(date(2026, 3, 13)), true));
        assert_eq!(ids(&slice), ["u2", "a2"]);
        // Between days: the one before.
        let slice = page(Some(date(2026, 3, 14))).await.unwrap();
        assert_eq!((slice.day, slice.has_more), (Some(date(2026, 3, 13)), true));
        let slice = page(Some(date(2026, 3, 12))).await.unwrap();
        assert_eq!(
            (slice.day, slice.has_more),
            (Some(date(2026, 3, 11)), false)
        );
        // Tool calls, tool results and tool-call-only assistant turns are never shown.
        assert_eq!(ids(&slice), ["u1", "a1"]);
        let slice = page(Some(date(2026, 3, 13))).await.unwrap();
        assert_eq!(slice.day, Some(date(2026, 3, 11)));
        // At and before the first day: nothing.
        let slice = page(Some(date(2026, 3, 11))).await.unwrap();
        assert_eq!(
            slice,
            DaySlice {
                day: None,
                has_more: false,
                messages: Vec::new()
            }
        );
        // After the last day: the last day.
        let slice = page(Some(date(2026, 3, 20))).await.unwrap();
        assert_eq!((slice.day, slice.has_more), (Some(date(2026, 3, 15)), true));
    }

    #[tokio::test]
    async fn days_are_calendar_days_of_the_time_zone() {
        let store = MemoryStore::new();
        let owner = Principal::new("alice");
        // 2026-03-14 23:30 UTC is 2026-03-15 08:30 in Tokyo (UTC+9), where both runs share a day.
        let thread = thread_with(
            &store,
            &owner,
            &[
                (
                    utc_ms(2026, 3, 14, 23, 30),
                    vec![user("late"), assistant("late-a", Some("x"))],
                ),
                (
                    utc_ms(2026, 3, 15, 1, 0),
                    vec![user("early"), assistant("early-a", Some("y"))],
                ),
            ],
        )
        .await;
        let utc = history_day(&store, &owner, &thread, None, chrono_tz::UTC)
            .await
            .unwrap();
        assert_eq!((utc.day, utc.has_more), (Some(date(2026, 3, 15)), true));
        assert_eq!(ids(&utc), ["early", "early-a"]);
        let tokyo = history_day(&store, &owner, &thread, None, chrono_tz::Asia::Tokyo)
            .await
            .unwrap();
        assert_eq!(
            (tokyo.day, tokyo.has_more),
            (Some(date(2026, 3, 15)), false)
        );
        assert_eq!(ids(&tokyo), ["late", "late-a", "early", "early-a"]);
        // In Los Angeles (UTC-7 in March) both fall on the 14th.
        let la = history_day(
            &store,
            &owner,
            &thread,
            Some(date(2026, 3, 15)),
            chrono_tz::America::Los_Angeles,
        )
        .await
        .unwrap();
        assert_eq!((la.day, la.has_more), (Some(date(2026, 3, 14)), false));
        assert_eq!(ids(&la).len(), 4);
    }

    #[tokio::test]
    async fn a_day_with_only_tool_messages_is_skipped() {
        let store = MemoryStore::new();
        let owner = Principal::new("alice");
        let thread = thread_with(
            &store,
            &owner,
            &[
                (
                    utc_ms(2026, 3, 13, 9, 0),
                    vec![user("u1"), assistant("a1", Some("one"))],
                ),
                (
                    utc_ms(2026, 3, 14, 9, 0),
                    vec![tool("t2"), assistant("c2", None)],
                ),
            ],
        )
        .await;
        let slice = history_day(&store, &owner, &thread, None, chrono_tz::UTC)
            .await
            .unwrap();
        assert_eq!(
            (slice.day, slice.has_more),
            (Some(date(2026, 3, 13)), false)
        );
        assert_eq!(ids(&slice), ["u1", "a1"]);
    }

    #[tokio::test]
    async fn a_day_longer_than_a_page_is_read_whole() {
        let store = MemoryStore::new();
        let owner = Principal::new("alice");
        let mut runs = vec![(
            utc_ms(2026, 3, 13, 9, 0),
            vec![user("old"), assistant("old-a", Some("o"))],
        )];
        for index in 0..(PAGE + 10) {
            let at = utc_ms(2026, 3, 14, 9, 0) + i64::try_from(index).unwrap() * 10_000;
            runs.push((
                at,
                vec![user(&format!("u{index}")), tool(&format!("t{index}"))],
            ));
        }
        let thread = thread_with(&store, &owner, &runs).await;
        let slice = history_day(&store, &owner, &thread, None, chrono_tz::UTC)
            .await
            .unwrap();
        assert_eq!((slice.day, slice.has_more), (Some(date(2026, 3, 14)), true));
        assert_eq!(slice.messages.len(), PAGE + 10);
        assert_eq!(slice.messages[0].message.id().as_str(), "u0");
    }

    #[tokio::test]
    async fn a_message_dated_after_a_newer_one_counts_on_the_newer_ones_day() {
        let store = MemoryStore::new();
        let owner = Principal::new("alice");
        // The second run's clock was behind: its messages are dated before the first run's.
        let thread = thread_with(
            &store,
            &owner,
            &[
                (
                    utc_ms(2026, 3, 15, 0, 1),
                    vec![user("ahead"), assistant("ahead-a", Some("x"))],
                ),
                (
                    utc_ms(2026, 3, 14, 23, 58),
                    vec![user("behind"), assistant("behind-a", Some("y"))],
                ),
            ],
        )
        .await;
        let latest = history_day(&store, &owner, &thread, None, chrono_tz::UTC)
            .await
            .unwrap();
        assert_eq!(latest.day, Some(date(2026, 3, 14)));
        assert_eq!(ids(&latest), ["ahead", "ahead-a", "behind", "behind-a"]);
        assert!(!latest.has_more);
    }

    #[tokio::test]
    async fn another_owner_gets_not_found() {
        let store = MemoryStore::new();
        let owner = Principal::new("alice");
        let thread = three_days(&store, &owner).await;
        let result = history_day(
            &store,
            &Principal::new("mallory"),
            &thread,
            None,
            chrono_tz::UTC,
        )
        .await;
        assert!(matches!(result, Err(StoreError::NotFound)));
    }
}
