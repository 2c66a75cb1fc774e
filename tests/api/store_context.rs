//! Checkpoints at the store level, on both stores: a run stores the compaction it made and the
//! provider's count of its last model call; the next run's load reads only the checkpoint and
//! the messages after it, while every message stays stored and readable; deleting the thread
//! removes its checkpoint.

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    Checkpoint, ContextMark, ContextUpdate, Deletion, HistoryQuery, RunFinish, RunStart,
    ThreadStore,
};

use crate::both_stores::{Subject, on_both_stores};

on_both_stores!(
    a_checkpoint_bounds_the_recent_load_and_every_message_stays,
    deleting_the_thread_removes_its_checkpoint,
);

fn text(id: &str, role: &str) -> Message {
    let id = MessageId::parse(id, 128).unwrap();
    match role {
        "user" => Message::User {
            id,
            content: UserContent::Text("hello there".into()),
            name: None,
        },
        _ => Message::Assistant {
            id,
            content: Some("hi".into()),
            tool_calls: Vec::new(),
            name: None,
            encrypted_value: None,
        },
    }
}

/// One run of a user message and an answer; `context` goes with its output.
async fn exchange(
    store: &dyn ThreadStore,
    owner: &Principal,
    thread: &ThreadId,
    n: usize,
    context: Option<&ContextUpdate>,
) {
    let loaded = store.load_recent(owner, thread).await.unwrap();
    let lease = store
        .begin_run(RunStart {
            owner,
            thread_id: thread,
            run_id: &RunId::parse(format!("run-{n}"), 128).unwrap(),
            loaded: loaded.as_ref(),
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: &[text(&format!("u{n}"), "user")],
            state: None,
            title: None,
            at_ms: 1_000 + n as i64,
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[text(&format!("a{n}"), "assistant")],
            state: None,
            interrupts: None,
            at_ms: 2_000 + n as i64,
            context,
        })
        .await
        .unwrap();
}

fn ids(messages: &[Message]) -> Vec<String> {
    messages.iter().map(|m| m.id().to_string()).collect()
}

async fn a_checkpoint_bounds_the_recent_load_and_every_message_stays(subject: Subject) {
    let store = subject.store.as_ref();
    let owner = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    for n in 0..9 {
        exchange(store, &owner, &thread, n, None).await;
    }
    let checkpoint = Checkpoint {
        covers: 12,
        summary: Some("The user said hello nine times.".into()),
        cleared_before: 14,
        at_ms: 5_000,
    };
    let mark = ContextMark {
        input_tokens: 1_234,
        seen: 19,
        covers: 12,
        cleared_before: 14,
    };
    let update = ContextUpdate {
        checkpoint: Some(checkpoint.clone()),
        mark: Some(mark),
    };
    exchange(store, &owner, &thread, 9, Some(&update)).await;

    let recent = store.load_recent(&owner, &thread).await.unwrap().unwrap();
    assert_eq!(recent.first_seq, 12);
    assert_eq!(
        ids(&recent.messages),
        ["u6", "a6", "u7", "a7", "u8", "a8", "u9", "a9"]
    );
    assert_eq!(recent.message_at_ms.len(), recent.messages.len());
    assert_eq!(recent.checkpoint.as_ref(), Some(&checkpoint));
    assert_eq!(recent.context, Some(mark));

    // Nothing is shortened: the whole thread and its history still hold every message.
    let whole = store.load(&owner, &thread).await.unwrap().unwrap();
    assert_eq!(whole.messages.len(), 20);
    assert_eq!(whole.first_seq, 0);
    let page = store
        .history(HistoryQuery {
            owner: &owner,
            thread_id: &thread,
            after: None,
            limit: 100,
        })
        .await
        .unwrap();
    assert_eq!(page.messages.len(), 20);

    // A run that compacts nothing keeps the checkpoint; the next checkpoint replaces it.
    exchange(store, &owner, &thread, 10, None).await;
    let recent = store.load_recent(&owner, &thread).await.unwrap().unwrap();
    assert_eq!(recent.checkpoint.as_ref(), Some(&checkpoint));
    assert_eq!(recent.messages.len(), 10);
    let later = Checkpoint {
        covers: 18,
        summary: Some("The user said hello twelve times.".into()),
        cleared_before: 18,
        at_ms: 6_000,
    };
    let update = ContextUpdate {
        checkpoint: Some(later.clone()),
        mark: None,
    };
    exchange(store, &owner, &thread, 11, Some(&update)).await;
    let recent = store.load_recent(&owner, &thread).await.unwrap().unwrap();
    assert_eq!(recent.checkpoint, Some(later));
    assert_eq!(
        ids(&recent.messages),
        ["u9", "a9", "u10", "a10", "u11", "a11"]
    );
    assert_eq!(
        recent.context,
        Some(mark),
        "a run without a count keeps the last one"
    );

    // Another principal reads nothing.
    assert!(
        store
            .load_recent(&Principal::new("bob"), &thread)
            .await
            .unwrap()
            .is_none()
    );
}

async fn deleting_the_thread_removes_its_checkpoint(subject: Subject) {
    let store = subject.store.as_ref();
    let owner = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    exchange(store, &owner, &thread, 0, None).await;
    let update = ContextUpdate {
        checkpoint: Some(Checkpoint {
            covers: 2,
            summary: Some("Hello.".into()),
            cleared_before: 2,
            at_ms: 1,
        }),
        mark: None,
    };
    exchange(store, &owner, &thread, 1, Some(&update)).await;
    assert_eq!(
        store.delete_thread(&owner, &thread).await.unwrap(),
        Deletion::Deleted
    );
    assert!(store.load_recent(&owner, &thread).await.unwrap().is_none());
    // The id starts over: a new thread on it has no checkpoint of the old one.
    exchange(store, &owner, &thread, 0, None).await;
    let recent = store.load_recent(&owner, &thread).await.unwrap().unwrap();
    assert_eq!(recent.checkpoint, None);
    assert_eq!(recent.first_seq, 0);
    assert_eq!(ids(&recent.messages), ["u0", "a0"]);
    if let Some((client, table)) = &subject.table {
        let items = client
            .scan()
            .table_name(table)
            .send()
            .await
            .unwrap()
            .items
            .unwrap_or_default();
        let checkpoints = items
            .iter()
            .filter(|item| item["sk"].as_s().is_ok_and(|sk| sk.starts_with("CKPT#")))
            .count();
        assert_eq!(checkpoints, 0, "the deleted thread's checkpoint is gone");
    }
}
