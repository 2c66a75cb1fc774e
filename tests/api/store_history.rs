//! Message times, the newest-first timed reads, the history by day and detached runs' task
//! records, at the store level, on every store: each scenario runs on the in-memory store and on
//! DynamoDB (Local, a fresh table made by `DynamoStore::create_table`). The DynamoDB runs also
//! look at the items themselves.

use agui_lambda::testing::agent::history_day;
use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{
    Message, MessageId, RunId, ThreadId, ToolCallId, UserContent,
};
use agui_lambda::testing::store::{
    DynamoStore, History, Lease, NewThread, RunFinish, RunStart, StoreError, TaskFailure,
    TaskRecord, TaskState, ThreadStore, Threads, TimedQuery,
};
use aws_sdk_dynamodb::types::AttributeValue;
use chrono::{NaiveDate, TimeZone};

use crate::dynamo_local;

use crate::both_stores::{Subject, on_both_stores};

on_both_stores!(
    message_times_round_trip,
    timed_messages_page_newest_first,
    timed_messages_of_others_and_deleted_threads_are_not_found,
    days_page_back_through_three_days,
    tasks_are_claimed_once_and_fail_for_good,
);

fn message_id(id: &str) -> MessageId {
    MessageId::parse(id, 128).unwrap()
}

fn user(id: &str) -> Message {
    Message::User {
        id: message_id(id),
        content: UserContent::Text(format!("{id} says hi")),
        name: None,
    }
}

fn assistant(id: &str, text: Option<&str>) -> Message {
    Message::Assistant {
        id: message_id(id),
        content: text.map(str::to_owned),
        tool_calls: Vec::new(),
        name: None,
        encrypted_value: None,
    }
}

fn tool(id: &str) -> Message {
    Message::Tool {
        id: message_id(id),
        tool_call_id: ToolCallId::parse("call-1", 128).unwrap(),
        content: "42".into(),
        error: None,
        metadata: None,
    }
}

fn run_id(id: &str) -> RunId {
    RunId::parse(id, 128).unwrap()
}

fn utc_ms(day: u32, hour: u32) -> i64 {
    chrono::Utc
        .with_ymd_and_hms(2026, 3, day, hour, 0, 0)
        .unwrap()
        .timestamp_millis()
}

fn date(day: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 3, day).unwrap()
}

/// A whole run: `input` stored by begin_run at `input_at`, `output` by finish_run at
/// `output_at`.
async fn run(
    store: &dyn ThreadStore,
    owner: &Principal,
    thread: &ThreadId,
    run: &str,
    (input, input_at): (&[Message], i64),
    (output, output_at): (&[Message], i64),
) -> Lease {
    let loaded = store.load(owner, thread).await.unwrap();
    let lease = store
        .begin_run(RunStart {
            owner,
            thread_id: thread,
            run_id: &run_id(run),
            loaded: loaded.as_ref(),
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: input,
            state: None,
            title: None,
            at_ms: input_at,
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: output,
            state: None,
            interrupts: None,
            at_ms: output_at,
            context: None,
        })
        .await
        .unwrap();
    lease
}

fn not_found<T>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::NotFound))
}

fn seqs_and_times(page: &agui_lambda::testing::store::TimedPage) -> Vec<(u64, i64)> {
    page.messages
        .iter()
        .map(|timed| (timed.seq, timed.at_ms))
        .collect()
}

async fn message_times_round_trip(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    run(
        store,
        &alice,
        &thread,
        "r1",
        (&[user("u1"), user("u2")], 1_000),
        (&[assistant("a1", Some("hello"))], 2_000),
    )
    .await;
    run(
        store,
        &alice,
        &thread,
        "r2",
        (&[user("u3")], 3_000),
        (&[], 4_000),
    )
    .await;

    let loaded = store.load(&alice, &thread).await.unwrap().unwrap();
    assert_eq!(loaded.message_at_ms, [1_000, 1_000, 2_000, 3_000]);
    let page = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        seqs_and_times(&page),
        [(3, 3_000), (2, 2_000), (1, 1_000), (0, 1_000)]
    );
    assert_eq!(page.messages[1].message, assistant("a1", Some("hello")));
    assert!(!page.more);

    // A fork keeps the copies' times; what it has no time for is stored at its own.
    let fork = ThreadId::new_uuid();
    store
        .create_thread(NewThread {
            owner: &alice,
            thread_id: &fork,
            messages: &loaded.messages,
            state: None,
            title: None,
            at_ms: 9_000,
            copied_at_ms: &loaded.message_at_ms[..3],
        })
        .await
        .unwrap();
    let forked = store.load(&alice, &fork).await.unwrap().unwrap();
    assert_eq!(forked.messages, loaded.messages);
    assert_eq!(forked.message_at_ms, [1_000, 1_000, 2_000, 9_000]);

    // So does a run that starts a thread as a copy (a fork from `parentRunId`).
    let branch = ThreadId::new_uuid();
    let mut input = loaded.messages.clone();
    input.push(user("u4"));
    let lease = store
        .begin_run(RunStart {
            owner: &alice,
            thread_id: &branch,
            run_id: &run_id("r3"),
            loaded: None,
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: &input,
            state: None,
            title: None,
            at_ms: 5_000,
            copied_at_ms: &loaded.message_at_ms,
        })
        .await
        .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            at_ms: 6_000,
            context: None,
        })
        .await
        .unwrap();
    let branched = store.load(&alice, &branch).await.unwrap().unwrap();
    assert_eq!(branched.message_at_ms, [1_000, 1_000, 2_000, 3_000, 5_000]);

    if let Some((client, table)) = &subject.table {
        let items = dynamo_local::scan(client, table).await;
        let messages: Vec<_> = items
            .iter()
            .filter(|item| matches!(item.get("sk"), Some(AttributeValue::S(sk)) if sk.starts_with("MSG#")))
            .collect();
        assert_eq!(messages.len(), 4 + 4 + 5);
        assert!(
            messages
                .iter()
                .all(|item| matches!(item.get("at"), Some(AttributeValue::N(_))))
        );
    }
}

async fn timed_messages_page_newest_first(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    let input: Vec<Message> = (0..25).map(|index| user(&format!("m{index}"))).collect();
    run(store, &alice, &thread, "r1", (&input, 7_000), (&[], 8_000)).await;

    let seqs = |page: &agui_lambda::testing::store::TimedPage| {
        page.messages
            .iter()
            .map(|timed| timed.seq)
            .collect::<Vec<_>>()
    };
    let first = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(seqs(&first), (15..25).rev().collect::<Vec<u64>>());
    assert!(first.more);
    assert_eq!(first.messages[0].message, user("m24"));
    let second = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: Some(15),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(seqs(&second), (5..15).rev().collect::<Vec<u64>>());
    assert!(second.more);
    let last = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: Some(5),
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(seqs(&last), [4, 3, 2, 1, 0]);
    assert!(!last.more);
    assert!(last.messages.iter().all(|timed| timed.at_ms == 7_000));

    // Nothing before the first message; a bound past the end bounds nothing; `limit` 0 only
    // tells whether there is anything.
    let none = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: Some(0),
            limit: 10,
        })
        .await
        .unwrap();
    assert!(none.messages.is_empty() && !none.more);
    let past = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: Some(1_000),
            limit: 3,
        })
        .await
        .unwrap();
    assert_eq!(seqs(&past), [24, 23, 22]);
    assert!(past.more);
    let peek = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: Some(1),
            limit: 0,
        })
        .await
        .unwrap();
    assert!(peek.messages.is_empty() && peek.more);

    // A thread with no messages.
    let empty = ThreadId::new_uuid();
    run(store, &alice, &empty, "r2", (&[], 1), (&[], 2)).await;
    let page = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &empty,
            before_seq: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert!(page.messages.is_empty() && !page.more);
}

async fn timed_messages_of_others_and_deleted_threads_are_not_found(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    run(
        store,
        &alice,
        &thread,
        "r1",
        (&[user("u1")], 1_000),
        (&[], 2_000),
    )
    .await;

    assert!(not_found(
        store
            .timed_messages(TimedQuery {
                owner: &Principal::new("mallory"),
                thread_id: &thread,
                before_seq: None,
                limit: 10
            })
            .await
    ));
    assert!(not_found(
        store
            .timed_messages(TimedQuery {
                owner: &alice,
                thread_id: &ThreadId::new_uuid(),
                before_seq: None,
                limit: 10
            })
            .await
    ));
    assert!(not_found(
        history_day(
            store,
            &Principal::new("mallory"),
            &thread,
            None,
            chrono_tz::UTC
        )
        .await
    ));
    store.delete_thread(&alice, &thread).await.unwrap();
    assert!(not_found(
        store
            .timed_messages(TimedQuery {
                owner: &alice,
                thread_id: &thread,
                before_seq: None,
                limit: 10
            })
            .await
    ));
}

async fn days_page_back_through_three_days(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    // The 13th: a question, a tool round (a tool-call-only assistant turn and its result), an
    // answer. The 14th: a question and an answer. The 15th: a question and an answer, late in
    // the evening in Shanghai (UTC+8): there, it is already the 16th.
    run(
        store,
        &alice,
        &thread,
        "r13",
        (&[user("u13")], utc_ms(13, 9)),
        (
            &[
                assistant("call13", None),
                tool("tool13"),
                assistant("a13", Some("done")),
            ],
            utc_ms(13, 9) + 5_000,
        ),
    )
    .await;
    run(
        store,
        &alice,
        &thread,
        "r14",
        (&[user("u14")], utc_ms(14, 9)),
        (&[assistant("a14", Some("sure"))], utc_ms(14, 9) + 5_000),
    )
    .await;
    run(
        store,
        &alice,
        &thread,
        "r15",
        (&[user("u15")], utc_ms(15, 17)),
        (&[assistant("a15", Some("ok"))], utc_ms(15, 17) + 5_000),
    )
    .await;
    let ids = |messages: &[agui_lambda::testing::store::TimedMessage]| {
        messages
            .iter()
            .map(|timed| timed.message.id().as_str().to_owned())
            .collect::<Vec<_>>()
    };
    let day = |before| history_day(store, &alice, &thread, before, chrono_tz::UTC);

    let latest = day(None).await.unwrap();
    assert_eq!((latest.day, latest.has_more), (Some(date(15)), true));
    assert_eq!(ids(&latest.messages), ["u15", "a15"]);
    assert_eq!(latest.messages[0].seq, 6);
    assert_eq!(latest.messages[0].at_ms, utc_ms(15, 17));
    let middle = day(latest.day).await.unwrap();
    assert_eq!((middle.day, middle.has_more), (Some(date(14)), true));
    assert_eq!(ids(&middle.messages), ["u14", "a14"]);
    let first = day(middle.day).await.unwrap();
    assert_eq!((first.day, first.has_more), (Some(date(13)), false));
    assert_eq!(ids(&first.messages), ["u13", "a13"]);
    let none = day(first.day).await.unwrap();
    assert_eq!((none.day, none.has_more), (None, false));
    assert!(none.messages.is_empty());
    // A day after the last.
    let after = day(Some(date(30))).await.unwrap();
    assert_eq!(after.day, Some(date(15)));

    let shanghai = history_day(store, &alice, &thread, None, chrono_tz::Asia::Shanghai)
        .await
        .unwrap();
    assert_eq!(shanghai.day, Some(date(16)));
    assert_eq!(ids(&shanghai.messages), ["u15", "a15"]);
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn tasks_are_claimed_once_and_fail_for_good(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let mallory = Principal::new("mallory");
    let task = TaskRecord {
        owner: alice.clone(),
        run_id: run_id("detached-1"),
        thread_id: ThreadId::new_uuid(),
        created_thread: true,
        accepted_at_ms: utc_ms(15, 9),
        state: TaskState::Accepted,
    };
    store.create_task(&task).await.unwrap();
    assert_eq!(
        store.task(&alice, &task.run_id).await.unwrap(),
        Some(task.clone())
    );
    assert!(matches!(
        store.create_task(&task).await,
        Err(StoreError::Conflict)
    ));
    // Another principal may use the same run id, and sees nothing of alice's.
    assert_eq!(store.task(&mallory, &task.run_id).await.unwrap(), None);
    assert!(!store.claim_task(&mallory, &task.run_id).await.unwrap());
    assert!(matches!(
        store
            .fail_task(TaskFailure {
                owner: &mallory,
                run_id: &task.run_id,
                code: "x",
                message: "y"
            })
            .await,
        Err(StoreError::NotFound)
    ));

    assert!(store.claim_task(&alice, &task.run_id).await.unwrap());
    assert!(!store.claim_task(&alice, &task.run_id).await.unwrap());
    assert_eq!(
        store
            .task(&alice, &task.run_id)
            .await
            .unwrap()
            .unwrap()
            .state,
        TaskState::Started
    );
    assert!(
        !store
            .claim_task(&alice, &run_id("never-accepted"))
            .await
            .unwrap()
    );

    store
        .fail_task(TaskFailure {
            owner: &alice,
            run_id: &task.run_id,
            code: "model_error",
            message: "the model is down",
        })
        .await
        .unwrap();
    let failed = TaskState::Failed {
        code: "model_error".into(),
        message: "the model is down".into(),
    };
    assert_eq!(
        store
            .task(&alice, &task.run_id)
            .await
            .unwrap()
            .unwrap()
            .state,
        failed
    );
    // Terminal: the first reason stays, and it is never claimed again.
    store
        .fail_task(TaskFailure {
            owner: &alice,
            run_id: &task.run_id,
            code: "other",
            message: "later",
        })
        .await
        .unwrap();
    assert_eq!(
        store
            .task(&alice, &task.run_id)
            .await
            .unwrap()
            .unwrap()
            .state,
        failed
    );
    assert!(!store.claim_task(&alice, &task.run_id).await.unwrap());

    // A task that fails before it is claimed is never claimed either.
    let second = TaskRecord {
        run_id: run_id("detached-2"),
        created_thread: false,
        ..task.clone()
    };
    store.create_task(&second).await.unwrap();
    store
        .fail_task(TaskFailure {
            owner: &alice,
            run_id: &second.run_id,
            code: "dispatch_failed",
            message: "no queue",
        })
        .await
        .unwrap();
    assert!(!store.claim_task(&alice, &second.run_id).await.unwrap());
    assert!(matches!(
        store
            .fail_task(TaskFailure {
                owner: &alice,
                run_id: &run_id("missing"),
                code: "x",
                message: "y"
            })
            .await,
        Err(StoreError::NotFound)
    ));

    mallory_task_is_separate(store, &mallory, &task).await;

    if let Some((client, table)) = &subject.table {
        let item = client
            .get_item()
            .table_name(table)
            .key("pk", AttributeValue::S("OWNER#alice".into()))
            .key("sk", AttributeValue::S("TASK#detached-1".into()))
            .send()
            .await
            .unwrap()
            .item
            .unwrap();
        let number = |name: &str| match item.get(name) {
            Some(AttributeValue::N(value)) => value.parse::<i64>().unwrap(),
            other => panic!("{name} is {other:?}"),
        };
        // Kept as long as the run event logs (24 h by default), from when it was accepted.
        let ttl = number("expiresAt") - chrono::Utc::now().timestamp();
        assert!((23 * 3600..=24 * 3600).contains(&ttl), "TTL {ttl} s");
        assert_eq!(number("acceptedAt"), utc_ms(15, 9));
        assert_eq!(item.get("state"), Some(&AttributeValue::S("failed".into())));
        // Out of the thread list's index, which holds only items with `owner`.
        assert!(!item.contains_key("owner"));
    }
}

/// Mallory's task with alice's run id is its own.
async fn mallory_task_is_separate(store: &dyn ThreadStore, mallory: &Principal, task: &TaskRecord) {
    let theirs = TaskRecord {
        owner: mallory.clone(),
        ..task.clone()
    };
    store.create_task(&theirs).await.unwrap();
    assert_eq!(
        store.task(mallory, &task.run_id).await.unwrap(),
        Some(theirs)
    );
    assert!(store.claim_task(mallory, &task.run_id).await.unwrap());
}

#[tokio::test]
async fn dynamo_messages_without_a_time_count_at_thread_creation() {
    let (client, table) = dynamo_local::new_table().await;
    let store = DynamoStore::new(client.clone(), table.clone(), 30);
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    run(
        &store,
        &alice,
        &thread,
        "r1",
        (&[user("old"), user("new")], 5_000),
        (&[], 6_000),
    )
    .await;
    let loaded = store.load(&alice, &thread).await.unwrap().unwrap();
    // As a message stored before times were kept: no `at`.
    let sk = format!("MSG#{:013}#{:010}", loaded.created_at_ms, 0);
    client
        .update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(format!("THREAD#{thread}")))
        .key("sk", AttributeValue::S(sk))
        .update_expression("REMOVE #at")
        .expression_attribute_names("#at", "at")
        .send()
        .await
        .unwrap();

    let page = store
        .timed_messages(TimedQuery {
            owner: &alice,
            thread_id: &thread,
            before_seq: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        seqs_and_times(&page),
        [(1, 5_000), (0, loaded.created_at_ms)]
    );
    let reloaded = store.load(&alice, &thread).await.unwrap().unwrap();
    assert_eq!(reloaded.message_at_ms, [loaded.created_at_ms, 5_000]);
}
