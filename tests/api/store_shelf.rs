//! What CopilotKit's thread list and reload read, at the store level, on both stores: the shelf
//! (archiving hides a thread without moving it, pages fill up past archived threads, nobody
//! archives another's thread, a deleted thread's mark goes with it), and a whole thread read once
//! (the record and first page, then the messages alone, of that incarnation only).

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    AfterQuery, Archived, HistoryQuery, NewThread, RunFinish, RunStart, ShelfQuery, StoreError,
    ThreadStore,
};
use std::time::Duration;

use crate::both_stores::{Subject, on_both_stores};

on_both_stores!(
    archived_threads_leave_the_shelf_and_come_back,
    pages_fill_up_past_archived_threads,
    archiving_is_the_owners_and_ends_with_the_thread,
    a_thread_is_read_whole_page_after_page,
);

fn user(text: &str) -> Message {
    Message::User {
        id: MessageId::generate(),
        content: UserContent::Text(text.into()),
        name: None,
    }
}

/// A thread made by one whole run.
async fn thread(store: &dyn ThreadStore, owner: &Principal, title: &str) -> ThreadId {
    let thread_id = ThreadId::new_uuid();
    let lease = store
        .begin_run(RunStart {
            owner,
            thread_id: &thread_id,
            run_id: &RunId::generate(),
            loaded: None,
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: &[user(title)],
            state: None,
            title: Some(title),
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
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
    // Distinct update times, so the newest-first order is known.
    tokio::time::sleep(Duration::from_millis(3)).await;
    thread_id
}

async fn shelf(
    store: &dyn ThreadStore,
    owner: &Principal,
    archived: Archived,
) -> Vec<(ThreadId, bool)> {
    let page = store
        .shelf(
            owner,
            ShelfQuery {
                limit: 100,
                cursor: None,
                archived,
            },
        )
        .await
        .unwrap();
    assert_eq!(page.next, None);
    page.threads
        .into_iter()
        .map(|thread| (thread.summary.thread_id, thread.archived))
        .collect()
}

async fn archived_threads_leave_the_shelf_and_come_back(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let first = thread(store, &alice, "first").await;
    let second = thread(store, &alice, "second").await;
    let third = thread(store, &alice, "third").await;

    store.set_archived(&alice, &second, true).await.unwrap();
    // Twice is the same as once.
    store.set_archived(&alice, &second, true).await.unwrap();
    assert_eq!(
        shelf(store, &alice, Archived::Hidden).await,
        [(third.clone(), false), (first.clone(), false)]
    );
    assert_eq!(
        shelf(store, &alice, Archived::Shown).await,
        [
            (third.clone(), false),
            (second.clone(), true),
            (first.clone(), false)
        ],
        "archiving moves nothing"
    );
    // The plain list is not the shelf: every thread, as before.
    assert_eq!(
        store
            .list_threads(&alice, 10, None)
            .await
            .unwrap()
            .threads
            .len(),
        3
    );

    store.set_archived(&alice, &second, false).await.unwrap();
    store.set_archived(&alice, &second, false).await.unwrap();
    assert_eq!(
        shelf(store, &alice, Archived::Hidden).await,
        [(third, false), (second, false), (first, false)]
    );
}

async fn pages_fill_up_past_archived_threads(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let mut threads = Vec::new();
    for index in 0..9 {
        threads.push(thread(store, &alice, &format!("thread {index}")).await);
    }
    // Newest first: 8, 7, … 0. Archive 7, 6, 5 and 1: the first page of three must read past them.
    for index in [7, 6, 5, 1] {
        store
            .set_archived(&alice, &threads[index], true)
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..10 {
        let page = store
            .shelf(
                &alice,
                ShelfQuery {
                    limit: 3,
                    cursor: cursor.as_deref(),
                    archived: Archived::Hidden,
                },
            )
            .await
            .unwrap();
        assert!(page.threads.len() <= 3);
        assert!(page.threads.iter().all(|thread| !thread.archived));
        seen.extend(
            page.threads
                .into_iter()
                .map(|thread| thread.summary.thread_id),
        );
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let expected: Vec<ThreadId> = [8, 4, 3, 2, 0]
        .iter()
        .map(|index| threads[*index].clone())
        .collect();
    assert_eq!(seen, expected);
}

async fn archiving_is_the_owners_and_ends_with_the_thread(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let mallory = Principal::new("mallory");
    let thread_id = thread(store, &alice, "mine").await;
    assert!(matches!(
        store.set_archived(&mallory, &thread_id, true).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store
            .set_archived(&alice, &ThreadId::new_uuid(), true)
            .await,
        Err(StoreError::NotFound)
    ));
    assert!(shelf(store, &mallory, Archived::Shown).await.is_empty());
    assert_eq!(
        shelf(store, &alice, Archived::Hidden).await,
        [(thread_id.clone(), false)]
    );

    // Deleted while archived, then made again under the same id: a new thread, not archived.
    store.set_archived(&alice, &thread_id, true).await.unwrap();
    store.delete_thread(&alice, &thread_id).await.unwrap();
    assert!(matches!(
        store.set_archived(&alice, &thread_id, false).await,
        Err(StoreError::NotFound)
    ));
    let lease = store
        .begin_run(RunStart {
            owner: &alice,
            thread_id: &thread_id,
            run_id: &RunId::generate(),
            loaded: None,
            lease_expires_at_ms: chrono::Utc::now().timestamp_millis() + 60_000,
            new_messages: &[user("again")],
            state: None,
            title: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
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
        shelf(store, &alice, Archived::Hidden).await,
        [(thread_id, false)]
    );
}

async fn a_thread_is_read_whole_page_after_page(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let thread_id = ThreadId::new_uuid();
    let messages: Vec<Message> = (0..7)
        .map(|index| user(&format!("message {index}")))
        .collect();
    store
        .create_thread(NewThread {
            owner: &alice,
            thread_id: &thread_id,
            messages: &messages,
            state: None,
            title: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
        .unwrap();
    let first = store
        .history(HistoryQuery {
            owner: &alice,
            thread_id: &thread_id,
            after: None,
            limit: 3,
        })
        .await
        .unwrap();
    let created_at_ms = match store.activity(&alice, &thread_id).await.unwrap() {
        agui_lambda::testing::store::ThreadActivity::Idle { created_at_ms } => created_at_ms,
        other => panic!("{other:?}"),
    };
    let mut read = first.messages;
    let mut next = first.next;
    while let Some(after) = next.take() {
        let page = store
            .messages_after(AfterQuery {
                owner: &alice,
                thread_id: &thread_id,
                created_at_ms,
                after: &after,
                limit: 3,
            })
            .await
            .unwrap();
        read.extend(page.messages);
        next = page.next;
    }
    assert_eq!(read, messages);
    // Another incarnation's key reads nothing.
    let other = store
        .messages_after(AfterQuery {
            owner: &alice,
            thread_id: &thread_id,
            created_at_ms: created_at_ms - 1,
            after: "0",
            limit: 3,
        })
        .await
        .unwrap();
    assert!(other.messages.is_empty());
}
