//! The thread list, titles, deletion, forks, run ends, quotas and usage, at the store level, on
//! every store: each scenario runs on the in-memory store and on DynamoDB (Local, a fresh table
//! made by `DynamoStore::create_table`). The DynamoDB runs also look at the table itself: what
//! a delete leaves behind, and how many calls each operation makes.

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    Deletion, DynamoStore, HistoryQuery, Lease, NewThread, QuotaExceeded, QuotaLimits, RunFinish,
    RunLeases, RunStart, RunTokens, Settlement, StoreError, StoreUsage, ThreadActivity,
    ThreadStore, Threads, UsageLedger, usage_day,
};
use aws_sdk_dynamodb::types::AttributeValue;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::dynamo_local;

use crate::both_stores::{Subject, on_both_stores};

on_both_stores!(
    list_pages_newest_first,
    titles,
    delete_removes_everything,
    forks,
    run_ends,
    runs_per_minute,
    tokens_per_day_and_usage,
);

fn user(id: &str, text: &str) -> Message {
    Message::User {
        id: MessageId::parse(id, 128).unwrap(),
        content: UserContent::Text(text.into()),
        name: None,
    }
}

fn messages(prefix: &str, count: usize) -> Vec<Message> {
    (0..count)
        .map(|index| user(&format!("{prefix}-{index}"), &format!("message {index}")))
        .collect()
}

fn run_id(id: &str) -> RunId {
    RunId::parse(id, 128).unwrap()
}

fn far_future() -> i64 {
    chrono::Utc::now().timestamp_millis() + 60_000
}

async fn begin(
    store: &dyn ThreadStore,
    owner: &Principal,
    thread: &ThreadId,
    run: &str,
    input: &[Message],
    title: Option<&str>,
) -> Result<Lease, StoreError> {
    let loaded = store.load(owner, thread).await?;
    store
        .begin_run(RunStart {
            owner,
            thread_id: thread,
            run_id: &run_id(run),
            loaded: loaded.as_ref(),
            lease_expires_at_ms: far_future(),
            new_messages: input,
            state: None,
            title,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
}

/// A whole run: `input` stored by begin_run, a few event batches, `output` by finish_run.
async fn run(
    store: &dyn ThreadStore,
    owner: &Principal,
    thread: &ThreadId,
    run: &str,
    input: &[Message],
    output: &[Message],
) -> Lease {
    let lease = begin(store, owner, thread, run, input, None).await.unwrap();
    for batch in 0..3u64 {
        let events: Vec<Bytes> = (0..4)
            .map(|index| Bytes::from(format!(r#"{{"type":"CUSTOM","n":{index}}}"#)))
            .collect();
        store
            .append_events(&lease, 1 + batch * 4, &events)
            .await
            .unwrap();
    }
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: output,
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    lease
}

fn text_attribute<'a>(item: &'a HashMap<String, AttributeValue>, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(value)) => Some(value),
        _ => None,
    }
}

/// Waits for the next UTC minute when this one ends within 5 s, so a test's reservations all
/// fall in one minute.
async fn fresh_minute() {
    use chrono::Timelike;
    let second = chrono::Utc::now().second();
    if second >= 55 {
        tokio::time::sleep(Duration::from_millis(u64::from(61 - second) * 1000)).await;
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn list_pages_newest_first(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");

    let threads: Vec<ThreadId> = (0..250).map(|_| ThreadId::new_uuid()).collect();
    futures_util::stream::iter(threads.iter().enumerate())
        .for_each_concurrent(8, |(index, thread)| {
            let alice = &alice;
            async move {
                run(
                    store,
                    alice,
                    thread,
                    &format!("r{index}"),
                    &[user("q", "question")],
                    &[user("a", "answer")],
                )
                .await;
            }
        })
        .await;
    let bobs: Vec<ThreadId> = (0..3).map(|_| ThreadId::new_uuid()).collect();
    for thread in &bobs {
        run(store, &bob, thread, "rb", &[user("q", "bob's")], &[]).await;
    }

    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store
            .list_threads(&alice, 100, cursor.as_deref())
            .await
            .unwrap();
        pages.push(page.threads);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
        assert!(pages.len() < 10, "the list does not end");
    }
    let sizes: Vec<usize> = pages.iter().map(Vec::len).collect();
    assert_eq!(sizes, [100, 100, 50]);
    let listed: Vec<_> = pages.into_iter().flatten().collect();
    let ids: HashSet<&ThreadId> = listed.iter().map(|entry| &entry.thread_id).collect();
    assert_eq!(ids.len(), 250, "no thread is listed twice");
    assert_eq!(ids, threads.iter().collect::<HashSet<_>>());
    assert!(
        listed
            .windows(2)
            .all(|pair| pair[0].updated_at_ms >= pair[1].updated_at_ms),
        "newest first across pages"
    );
    for entry in &listed {
        assert_eq!(entry.message_count, 2);
        assert_eq!(entry.active_run, None);
        assert_eq!(entry.title, None);
        assert!(entry.created_at_ms <= entry.updated_at_ms);
    }

    let bob_list = store.list_threads(&bob, 100, None).await.unwrap();
    let bob_ids: HashSet<&ThreadId> = bob_list.threads.iter().map(|e| &e.thread_id).collect();
    assert_eq!(bob_ids, bobs.iter().collect::<HashSet<_>>());
    assert_eq!(bob_list.next, None);

    // The oldest thread, touched by a new run, moves to the top, running while it runs.
    let oldest = listed.last().unwrap().thread_id.clone();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let lease = begin(store, &alice, &oldest, "again", &[user("q2", "more")], None)
        .await
        .unwrap();
    let top = store.list_threads(&alice, 1, None).await.unwrap();
    assert_eq!(top.threads.len(), 1);
    assert_eq!(top.threads[0].thread_id, oldest);
    assert_eq!(top.threads[0].active_run, Some(run_id("again")));
    assert_eq!(top.threads[0].message_count, 3);
    assert!(top.next.is_some());
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    let top = store.list_threads(&alice, 1, None).await.unwrap();
    assert_eq!(top.threads[0].thread_id, oldest);
    assert_eq!(top.threads[0].active_run, None);

    for bad in ["garbage", "12.bad id", ".x", "x.y"] {
        assert!(
            matches!(
                store.list_threads(&alice, 10, Some(bad)).await,
                Err(StoreError::BadCursor)
            ),
            "cursor {bad:?}"
        );
    }
    let nobody = store
        .list_threads(&Principal::new("nobody"), 10, None)
        .await
        .unwrap();
    assert!(nobody.threads.is_empty());
    assert_eq!(nobody.next, None);
}

async fn title_of(store: &dyn ThreadStore, owner: &Principal, thread: &ThreadId) -> Option<String> {
    store.load(owner, thread).await.unwrap().unwrap().title
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn titles(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    let thread = ThreadId::new_uuid();

    let lease = begin(
        store,
        &alice,
        &thread,
        "r1",
        &[user("u1", "hi")],
        Some("First"),
    )
    .await
    .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    assert_eq!(
        title_of(store, &alice, &thread).await.as_deref(),
        Some("First")
    );

    let lease = begin(
        store,
        &alice,
        &thread,
        "r2",
        &[user("u2", "x")],
        Some("Second"),
    )
    .await
    .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    assert_eq!(
        title_of(store, &alice, &thread).await.as_deref(),
        Some("First"),
        "a later run does not replace the title"
    );
    let listed = store.list_threads(&alice, 10, None).await.unwrap();
    assert_eq!(listed.threads[0].title.as_deref(), Some("First"));

    store.set_title(&alice, &thread, "Renamed").await.unwrap();
    assert_eq!(
        title_of(store, &alice, &thread).await.as_deref(),
        Some("Renamed")
    );
    let history = store
        .history(HistoryQuery {
            owner: &alice,
            thread_id: &thread,
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(history.title.as_deref(), Some("Renamed"));
    let listed = store.list_threads(&alice, 10, None).await.unwrap();
    assert_eq!(listed.threads[0].title.as_deref(), Some("Renamed"));

    assert!(matches!(
        store.set_title(&bob, &thread, "Mine").await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store
            .set_title(&alice, &ThreadId::new_uuid(), "Nothing")
            .await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(
        title_of(store, &alice, &thread).await.as_deref(),
        Some("Renamed")
    );

    // A thread started without a title gets the first one a run brings.
    let untitled = ThreadId::new_uuid();
    let lease = begin(store, &alice, &untitled, "r3", &[user("u", "x")], None)
        .await
        .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    assert_eq!(
        store.load(&alice, &untitled).await.unwrap().unwrap().title,
        None
    );
    let lease = begin(
        store,
        &alice,
        &untitled,
        "r4",
        &[user("v", "y")],
        Some("Later"),
    )
    .await
    .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    assert_eq!(
        store
            .load(&alice, &untitled)
            .await
            .unwrap()
            .unwrap()
            .title
            .as_deref(),
        Some("Later")
    );
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn delete_removes_everything(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    let thread = ThreadId::new_uuid();
    let kept = ThreadId::new_uuid();

    // 1,000 messages in five runs (each input spans more than one transaction).
    for index in 0..5 {
        run(
            store,
            &alice,
            &thread,
            &format!("run{index}"),
            &messages(&format!("in{index}"), 100),
            &messages(&format!("out{index}"), 100),
        )
        .await;
    }
    run(store, &alice, &kept, "kept-run", &messages("k", 3), &[]).await;
    let loaded = store.load(&alice, &thread).await.unwrap().unwrap();
    assert_eq!(loaded.messages.len(), 1000);
    assert_eq!(
        store
            .run_end(&alice, &run_id("run4"))
            .await
            .unwrap()
            .map(|end| end.message_count),
        Some(1000)
    );

    // Another principal's delete is NotFound and removes nothing.
    assert!(matches!(
        store.delete_thread(&bob, &thread).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(
        store
            .load(&alice, &thread)
            .await
            .unwrap()
            .unwrap()
            .messages
            .len(),
        1000
    );

    // A thread whose run holds a live lease cannot be deleted.
    let busy = ThreadId::new_uuid();
    let lease = begin(store, &alice, &busy, "busy-run", &[user("b", "busy")], None)
        .await
        .unwrap();
    assert!(matches!(
        store.delete_thread(&alice, &busy).await,
        Err(StoreError::Conflict)
    ));
    assert!(store.load(&alice, &busy).await.unwrap().is_some());
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    assert_eq!(
        store.delete_thread(&alice, &busy).await.unwrap(),
        Deletion::Deleted
    );

    assert_eq!(
        store.delete_thread(&alice, &thread).await.unwrap(),
        Deletion::Deleted
    );
    assert!(store.load(&alice, &thread).await.unwrap().is_none());
    assert!(matches!(
        store
            .history(HistoryQuery {
                owner: &alice,
                thread_id: &thread,
                after: None,
                limit: 10
            })
            .await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(
        store.activity(&alice, &thread).await.unwrap(),
        ThreadActivity::Missing
    );
    for index in 0..5 {
        assert_eq!(
            store
                .run_end(&alice, &run_id(&format!("run{index}")))
                .await
                .unwrap(),
            None
        );
    }
    let listed = store.list_threads(&alice, 100, None).await.unwrap();
    let ids: Vec<&ThreadId> = listed.threads.iter().map(|e| &e.thread_id).collect();
    assert_eq!(ids, [&kept]);
    assert_eq!(
        store.delete_thread(&alice, &thread).await.unwrap(),
        Deletion::Absent
    );
    assert_eq!(
        store
            .delete_thread(&alice, &ThreadId::new_uuid())
            .await
            .unwrap(),
        Deletion::Absent
    );

    // Nothing of the thread is left in the table.
    if let Some((client, table)) = &subject.table {
        let items = crate::dynamo_local::scan(client, table).await;
        let thread_pk = format!("THREAD#{thread}");
        let busy_pk = format!("THREAD#{busy}");
        let left: Vec<_> = items
            .iter()
            .filter(|item| {
                let pk = text_attribute(item, "pk");
                pk == Some(thread_pk.as_str()) || pk == Some(busy_pk.as_str())
            })
            .collect();
        assert!(left.is_empty(), "left behind: {left:?}");
        let run_ends: Vec<_> = items
            .iter()
            .filter(|item| text_attribute(item, "pk").is_some_and(|pk| pk.starts_with("OWNER#")))
            .collect();
        let pointing: Vec<_> = run_ends
            .iter()
            .filter(|item| {
                let points_to = text_attribute(item, "thread");
                points_to == Some(thread.as_str()) || points_to == Some(busy.as_str())
            })
            .collect();
        assert!(pointing.is_empty(), "run ends left behind: {pointing:?}");
        assert_eq!(run_ends.len(), 1, "the kept thread's run end stays");
        let kept_pk = format!("THREAD#{kept}");
        assert!(
            items
                .iter()
                .filter(|item| text_attribute(item, "pk") == Some(kept_pk.as_str()))
                .count()
                > 4,
            "the other thread is untouched"
        );
    }

    // The id is free again: a new thread starts empty.
    run(
        store,
        &alice,
        &thread,
        "reborn",
        &[user("new", "again")],
        &[],
    )
    .await;
    let reborn = store.load(&alice, &thread).await.unwrap().unwrap();
    let ids: Vec<&str> = reborn.messages.iter().map(|m| m.id().as_str()).collect();
    assert_eq!(ids, ["new"]);
    assert_eq!(
        store
            .load(&alice, &kept)
            .await
            .unwrap()
            .unwrap()
            .messages
            .len(),
        3
    );
    assert!(
        store
            .run_end(&alice, &run_id("kept-run"))
            .await
            .unwrap()
            .is_some()
    );
}

async fn forks(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    let thread = ThreadId::new_uuid();
    let copied = messages("copy", 30);
    let state = json!({"step": 3});

    store
        .create_thread(NewThread {
            owner: &alice,
            thread_id: &thread,
            messages: &copied,
            state: Some(&state),
            title: Some("Fork of something"),
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    let loaded = store.load(&alice, &thread).await.unwrap().unwrap();
    assert_eq!(loaded.messages, copied);
    assert_eq!(loaded.state, Some(state.clone()));
    assert_eq!(loaded.title.as_deref(), Some("Fork of something"));
    assert_eq!(loaded.active_run, None);
    assert!(store.load(&bob, &thread).await.unwrap().is_none());
    let listed = store.list_threads(&alice, 10, None).await.unwrap();
    assert_eq!(listed.threads.len(), 1);
    assert_eq!(listed.threads[0].thread_id, thread);
    assert_eq!(listed.threads[0].message_count, 30);

    // The id is taken, whoever asks.
    for owner in [&alice, &bob] {
        assert!(matches!(
            store
                .create_thread(NewThread {
                    owner,
                    thread_id: &thread,
                    messages: &messages("other", 3),
                    state: None,
                    title: None,
                    at_ms: chrono::Utc::now().timestamp_millis(),
                    copied_at_ms: &[],
                })
                .await,
            Err(StoreError::Conflict)
        ));
    }
    assert_eq!(
        store.load(&alice, &thread).await.unwrap().unwrap().messages,
        copied
    );

    // A fork goes on like any thread.
    run(
        store,
        &alice,
        &thread,
        "next",
        &[user("more", "go on")],
        &[],
    )
    .await;
    let loaded = store.load(&alice, &thread).await.unwrap().unwrap();
    assert_eq!(loaded.messages.len(), 31);
    assert_eq!(loaded.title.as_deref(), Some("Fork of something"));

    // An empty fork is a thread too.
    let empty = ThreadId::new_uuid();
    store
        .create_thread(NewThread {
            owner: &alice,
            thread_id: &empty,
            messages: &[],
            state: None,
            title: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    let loaded = store.load(&alice, &empty).await.unwrap().unwrap();
    assert!(loaded.messages.is_empty());
    assert_eq!(loaded.title, None);

    // The refused forks' copies do not stay in the table.
    if let Some((client, table)) = &subject.table {
        let thread_pk = format!("THREAD#{thread}");
        let count = crate::dynamo_local::scan(client, table)
            .await
            .iter()
            .filter(|item| text_attribute(item, "pk") == Some(thread_pk.as_str()))
            .filter(|item| text_attribute(item, "sk").is_some_and(|sk| sk.starts_with("MSG#")))
            .count();
        assert_eq!(count, 31);
    }
}

async fn run_ends(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    let thread = ThreadId::new_uuid();

    run(
        store,
        &alice,
        &thread,
        "first",
        &messages("a", 2),
        &messages("b", 1),
    )
    .await;
    run(
        store,
        &alice,
        &thread,
        "second",
        &messages("c", 1),
        &messages("d", 2),
    )
    .await;
    let created_at_ms = store
        .load(&alice, &thread)
        .await
        .unwrap()
        .unwrap()
        .created_at_ms;
    let first = store
        .run_end(&alice, &run_id("first"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(first.thread_id, thread);
    assert_eq!(first.created_at_ms, created_at_ms);
    assert_eq!(first.message_count, 3);
    let second = store
        .run_end(&alice, &run_id("second"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.message_count, 6);

    // Another principal's run ids are not ours; a run that stored nothing has no record.
    assert_eq!(store.run_end(&bob, &run_id("first")).await.unwrap(), None);
    assert_eq!(store.run_end(&alice, &run_id("never")).await.unwrap(), None);
    run(store, &alice, &thread, "empty", &[], &[]).await;
    assert_eq!(store.run_end(&alice, &run_id("empty")).await.unwrap(), None);
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn runs_per_minute(subject: Subject) {
    let store = &subject.store;
    let alice = Principal::new("alice");
    fresh_minute().await;
    let now = chrono::Utc::now();
    let limits = QuotaLimits {
        tokens_per_day: None,
        runs_per_minute: Some(5),
        reserve_tokens: 0,
    };
    let attempts = futures_util::future::join_all((0..20).map(|_| {
        let store = Arc::clone(store);
        let alice = alice.clone();
        tokio::spawn(async move { store.reserve(&alice, &limits, now).await })
    }))
    .await;
    let mut admitted = 0;
    for attempt in attempts {
        match attempt.unwrap() {
            Ok(reservation) => {
                admitted += 1;
                assert_eq!(reservation.reserved_tokens, 0);
                assert_eq!(reservation.day, usage_day(now));
            }
            Err(StoreError::QuotaExceeded(QuotaExceeded::RunsPerMinute {
                limit,
                retry_after_secs,
            })) => {
                assert_eq!(limit, 5);
                assert!((1..=60).contains(&retry_after_secs), "{retry_after_secs}");
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(admitted, 5);

    // Another caller has a minute of their own.
    assert!(
        store
            .reserve(&Principal::new("bob"), &limits, now)
            .await
            .is_ok()
    );
    // A quota of 0 admits nothing; no quota admits everything.
    let none = QuotaLimits {
        runs_per_minute: Some(0),
        ..limits
    };
    assert!(matches!(
        store.reserve(&Principal::new("carol"), &none, now).await,
        Err(StoreError::QuotaExceeded(QuotaExceeded::RunsPerMinute {
            limit: 0,
            ..
        }))
    ));
    let unlimited = store
        .reserve(&alice, &QuotaLimits::default(), now)
        .await
        .unwrap();
    assert_eq!(unlimited.reserved_tokens, 0);

    // Both quotas: runs refused once the minute is full, whatever the tokens.
    let both = QuotaLimits {
        tokens_per_day: Some(1_000_000),
        runs_per_minute: Some(3),
        reserve_tokens: 10,
    };
    let dave = Principal::new("dave");
    for _ in 0..3 {
        assert_eq!(
            store
                .reserve(&dave, &both, now)
                .await
                .unwrap()
                .reserved_tokens,
            10
        );
    }
    assert!(matches!(
        store.reserve(&dave, &both, now).await,
        Err(StoreError::QuotaExceeded(QuotaExceeded::RunsPerMinute {
            limit: 3,
            ..
        }))
    ));

    // Both quotas under contention, with runs settling meanwhile: still exactly the quota.
    let erin = Principal::new("erin");
    let both = QuotaLimits {
        runs_per_minute: Some(5),
        ..both
    };
    let settled = store.reserve(&erin, &both, now).await.unwrap();
    let attempts = futures_util::future::join_all((0..20).map(|index| {
        let store = Arc::clone(store);
        let erin = erin.clone();
        let settled = settled.clone();
        tokio::spawn(async move {
            if index % 4 == 0 {
                store
                    .settle(Settlement {
                        reservation: &settled,
                        run: Some(&[RunTokens {
                            provider: "openai",
                            model: "gpt-4o",
                            input: 1,
                            output: 1,
                            reasoning: 0,
                            cached_input: 0,
                        }]),
                    })
                    .await
                    .unwrap();
            }
            store.reserve(&erin, &both, now).await
        })
    }))
    .await;
    let mut admitted = 0;
    for attempt in attempts {
        match attempt.unwrap() {
            Ok(_) => admitted += 1,
            Err(StoreError::QuotaExceeded(QuotaExceeded::RunsPerMinute { limit: 5, .. })) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(admitted, 4, "one of the five was taken before");
    let day = usage_day(now);
    let usage = store.usage(&erin, &day, &day).await.unwrap();
    assert_eq!(usage[0].models[0].runs, 5, "every settlement counted");
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn tokens_per_day_and_usage(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    fresh_minute().await;
    let now = chrono::Utc::now();
    let day = usage_day(now);
    let limits = QuotaLimits {
        tokens_per_day: Some(1000),
        runs_per_minute: None,
        reserve_tokens: 100,
    };
    let reservation = store.reserve(&alice, &limits, now).await.unwrap();
    assert_eq!(reservation.reserved_tokens, 100);
    assert_eq!(reservation.day, day);
    let claude = "anthropic.claude-3-5-sonnet-20240620-v1:0";
    store
        .settle(Settlement {
            reservation: &reservation,
            run: Some(&[RunTokens {
                provider: "bedrock",
                model: claude,
                input: 700,
                output: 300,
                reasoning: 50,
                cached_input: 200,
            }]),
        })
        .await
        .unwrap();
    match store.reserve(&alice, &limits, now).await {
        Err(StoreError::QuotaExceeded(QuotaExceeded::TokensPerDay {
            limit,
            retry_after_secs,
        })) => {
            assert_eq!(limit, 1000);
            assert!(
                (1..=86_400).contains(&retry_after_secs),
                "{retry_after_secs}"
            );
        }
        other => panic!("expected the daily quota to refuse, got {other:?}"),
    }

    // A run that never started gives its reservation back.
    let bob = Principal::new("bob");
    let first = store.reserve(&bob, &limits, now).await.unwrap();
    store
        .settle(Settlement {
            reservation: &first,
            run: None,
        })
        .await
        .unwrap();
    // 1000 - 100 reserved: admitted while at most 900 are spent.
    let bobs = store.reserve(&bob, &limits, now).await.unwrap();
    store
        .settle(Settlement {
            reservation: &bobs,
            run: Some(&[RunTokens {
                provider: "openai",
                model: "gpt-4o",
                input: 850,
                output: 50,
                reasoning: 0,
                cached_input: 0,
            }]),
        })
        .await
        .unwrap();
    assert!(store.reserve(&bob, &limits, now).await.is_ok(), "900 spent");
    assert!(matches!(
        store.reserve(&bob, &limits, now).await,
        Err(StoreError::QuotaExceeded(
            QuotaExceeded::TokensPerDay { .. }
        ))
    ));

    // Both quotas: tokens refused first.
    let tight = QuotaLimits {
        tokens_per_day: Some(5),
        runs_per_minute: Some(100),
        reserve_tokens: 10,
    };
    let carol = Principal::new("carol");
    assert_eq!(
        store
            .reserve(&carol, &tight, now)
            .await
            .unwrap()
            .reserved_tokens,
        5
    );
    assert!(matches!(
        store.reserve(&carol, &tight, now).await,
        Err(StoreError::QuotaExceeded(QuotaExceeded::TokensPerDay {
            limit: 5,
            ..
        }))
    ));
    let zero = QuotaLimits {
        tokens_per_day: Some(0),
        ..tight
    };
    assert!(matches!(
        store.reserve(&Principal::new("dan"), &zero, now).await,
        Err(StoreError::QuotaExceeded(QuotaExceeded::TokensPerDay {
            limit: 0,
            ..
        }))
    ));

    // Unlimited runs are counted too, per model.
    for model in [claude, "amazon.nova-pro-v1:0"] {
        let free = store
            .reserve(&alice, &QuotaLimits::default(), now)
            .await
            .unwrap();
        store
            .settle(Settlement {
                reservation: &free,
                run: Some(&[RunTokens {
                    provider: "bedrock",
                    model,
                    input: 10,
                    output: 5,
                    reasoning: 0,
                    cached_input: 1,
                }]),
            })
            .await
            .unwrap();
    }

    let usage = store.usage(&alice, &day, &day).await.unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].day, day);
    let models: Vec<_> = usage[0]
        .models
        .iter()
        .map(|model| {
            (
                model.provider.as_str(),
                model.model.as_str(),
                model.runs,
                model.input_tokens,
                model.output_tokens,
                model.reasoning_tokens,
                model.cached_input_tokens,
            )
        })
        .collect();
    assert_eq!(
        models,
        [
            ("bedrock", "amazon.nova-pro-v1:0", 1, 10, 5, 0, 1),
            ("bedrock", claude, 2, 710, 305, 50, 201),
        ]
    );
    let bob_usage = store.usage(&bob, "2000-01-01", "2999-12-31").await.unwrap();
    assert_eq!(bob_usage.len(), 1);
    assert_eq!(bob_usage[0].models.len(), 1);
    assert_eq!(bob_usage[0].models[0].runs, 1);
    assert!(
        store
            .usage(&alice, "2000-01-01", "2000-01-31")
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store.usage(&carol, &day, &day).await.unwrap().is_empty(),
        "a day with only a reservation has no model usage"
    );
}

/// A DynamoDB Local of this test's own. DynamoDB Local builds a new index of an existing table in
/// a job on a pool of 10 threads that every table with TTL on also holds one of for good: once
/// the other tests have made about seven such tables in the shared instance, an added index stays
/// CREATING forever.
async fn private_dynamo_local() -> String {
    dynamo_local::start().await
}

/// `create-table` on a table made before the thread list: the index is added, the table and its
/// threads kept; the start-up check says what to run until then.
#[tokio::test]
async fn dynamo_create_table_adds_the_thread_list_index_to_an_older_table() {
    use aws_sdk_dynamodb::types::{
        AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType,
    };
    let client = dynamo_local::client(&private_dynamo_local().await);
    let table = format!("threads-{}", uuid::Uuid::new_v4().simple());
    let key = |name: &str, kind| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(kind)
            .build()
            .unwrap()
    };
    let string = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .unwrap()
    };
    client
        .create_table()
        .table_name(&table)
        .billing_mode(BillingMode::PayPerRequest)
        .key_schema(key("pk", KeyType::Hash))
        .key_schema(key("sk", KeyType::Range))
        .attribute_definitions(string("pk"))
        .attribute_definitions(string("sk"))
        .send()
        .await
        .unwrap();
    let store = DynamoStore::new(client.clone(), table.clone(), 0);
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    run(&store, &alice, &thread, "old", &[user("u", "before")], &[]).await;

    let refused = DynamoStore::check_table(&client, &table)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("has no index byOwner"), "{refused}");
    assert!(refused.contains("create-table"), "{refused}");
    assert!(!refused.contains("delete-table"), "{refused}");

    let setup = DynamoStore::create_table(&client, &table).await.unwrap();
    assert_eq!(
        setup,
        agui_lambda::testing::store::dynamo::TableSetup::Existed
    );
    DynamoStore::check_table(&client, &table).await.unwrap();
    // Again: nothing more to do.
    assert_eq!(
        DynamoStore::create_table(&client, &table).await.unwrap(),
        agui_lambda::testing::store::dynamo::TableSetup::Existed
    );
    let listed = store.list_threads(&alice, 10, None).await.unwrap();
    assert_eq!(listed.threads.len(), 1);
    assert_eq!(listed.threads[0].thread_id, thread);
    assert!(store.load(&alice, &thread).await.unwrap().is_some());
}

fn calls(before: StoreUsage, after: StoreUsage) -> (u64, u64, f64, f64) {
    (
        after.read_calls - before.read_calls,
        after.write_calls - before.write_calls,
        after.read_capacity_units - before.read_capacity_units,
        after.write_capacity_units - before.write_capacity_units,
    )
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
/// The DynamoDB calls each new operation makes (printed for `--nocapture`), and the ones the
/// design fixes at one call.
#[tokio::test]
async fn dynamo_calls_per_operation() {
    let (client, table) = dynamo_local::new_table().await;
    let store = DynamoStore::new(client, table, 30);
    let alice = Principal::new("alice");
    let report = |name: &str, (reads, writes, rcu, wcu): (u64, u64, f64, f64)| {
        println!(
            "{name:<40} reads {reads:>3} ({rcu:>7.1} RCU)  writes {writes:>3} ({wcu:>7.1} WCU)"
        );
    };

    let thread = ThreadId::new_uuid();
    let before = store.usage();
    let lease = begin(
        &store,
        &alice,
        &thread,
        "r1",
        &messages("in", 10),
        Some("T"),
    )
    .await
    .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &messages("out", 10),
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    report(
        "run of 10+10 messages (load, begin, finish)",
        calls(before, store.usage()),
    );

    let before = store.usage();
    let listed = store.list_threads(&alice, 100, None).await.unwrap();
    assert_eq!(listed.threads.len(), 1);
    let used = calls(before, store.usage());
    report("list_threads (one page)", used);
    assert_eq!((used.0, used.1), (1, 0));

    let before = store.usage();
    store.set_title(&alice, &thread, "Renamed").await.unwrap();
    let used = calls(before, store.usage());
    report("set_title", used);
    assert_eq!((used.0, used.1), (0, 1));

    let before = store.usage();
    assert!(
        store
            .run_end(&alice, &run_id("r1"))
            .await
            .unwrap()
            .is_some()
    );
    let used = calls(before, store.usage());
    report("run_end", used);
    assert_eq!((used.0, used.1), (1, 0));

    let fork = ThreadId::new_uuid();
    let copied = messages("f", 100);
    let before = store.usage();
    store
        .create_thread(NewThread {
            owner: &alice,
            thread_id: &fork,
            messages: &copied,
            state: None,
            title: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    report(
        "create_thread of 100 messages",
        calls(before, store.usage()),
    );

    let before = store.usage();
    assert_eq!(
        store.delete_thread(&alice, &fork).await.unwrap(),
        Deletion::Deleted
    );
    report(
        "delete_thread of 100 messages",
        calls(before, store.usage()),
    );

    let big = ThreadId::new_uuid();
    for index in 0..5 {
        run(
            &store,
            &alice,
            &big,
            &format!("big{index}"),
            &messages(&format!("i{index}"), 100),
            &messages(&format!("o{index}"), 100),
        )
        .await;
    }
    let before = store.usage();
    assert_eq!(
        store.delete_thread(&alice, &big).await.unwrap(),
        Deletion::Deleted
    );
    report(
        "delete_thread of 1,000 messages, 5 runs",
        calls(before, store.usage()),
    );

    let now = chrono::Utc::now();
    for (name, limits) in [
        ("reserve, no quota", QuotaLimits::default()),
        (
            "reserve, tokens per day",
            QuotaLimits {
                tokens_per_day: Some(1_000_000),
                runs_per_minute: None,
                reserve_tokens: 1000,
            },
        ),
        (
            "reserve, runs per minute",
            QuotaLimits {
                tokens_per_day: None,
                runs_per_minute: Some(1000),
                reserve_tokens: 0,
            },
        ),
        (
            "reserve, both quotas",
            QuotaLimits {
                tokens_per_day: Some(1_000_000),
                runs_per_minute: Some(1000),
                reserve_tokens: 1000,
            },
        ),
    ] {
        let before = store.usage();
        let reservation = store.reserve(&alice, &limits, now).await.unwrap();
        let used = calls(before, store.usage());
        report(name, used);
        assert_eq!(
            (used.0, used.1),
            (0, u64::from(!limits.is_unlimited())),
            "{name}"
        );
        let before = store.usage();
        store
            .settle(Settlement {
                reservation: &reservation,
                run: Some(&[RunTokens {
                    provider: "openai",
                    model: "gpt-4o",
                    input: 100,
                    output: 10,
                    reasoning: 0,
                    cached_input: 0,
                }]),
            })
            .await
            .unwrap();
        let used = calls(before, store.usage());
        report("settle", used);
        assert_eq!((used.0, used.1), (0, 1));
    }

    let before = store.usage();
    let day = usage_day(now);
    let usage = UsageLedger::usage(&store, &alice, &day, &day)
        .await
        .unwrap();
    assert_eq!(usage[0].models[0].runs, 4);
    let used = calls(before, store.usage());
    report("usage (one day)", used);
    assert_eq!((used.0, used.1), (1, 0));
}
