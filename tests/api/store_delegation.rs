//! A sub-agent's start carrying its parent's step, on both stores: the child's thread begun and
//! linked, and the parent's checkpoint and pending events, all stored or none; on DynamoDB in one
//! transaction, and, when they are too large for one, in an order a crash cannot reverse.

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    Claim, Lease, LinkedRun, ParentStep, RunCheckpoint, RunClaim, RunStart, StoreError, ThreadLink,
    ThreadStore,
};
use bytes::Bytes;

use crate::both_stores::{Subject, on_both_stores};

on_both_stores!(
    a_childs_start_stores_its_parents_step_in_one_write,
    a_parent_that_lost_its_lease_stores_nothing_and_starts_no_child,
    a_step_too_large_for_one_transaction_is_stored_events_first
);

fn user(id: &str, text: &str) -> Message {
    Message::User {
        id: MessageId::parse(id, 128).unwrap(),
        content: UserContent::Text(text.to_owned()),
        name: None,
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn start<'a>(
    owner: &'a Principal,
    thread: &'a ThreadId,
    run: &'a RunId,
    messages: &'a [Message],
) -> RunStart<'a> {
    RunStart {
        owner,
        thread_id: thread,
        run_id: run,
        loaded: None,
        lease_expires_at_ms: now() + 60_000,
        new_messages: messages,
        state: None,
        title: None,
        at_ms: now(),
        copied_at_ms: &[],
    }
}

/// `count` events of about `bytes` each, as a run's log holds them.
fn events(count: usize, bytes: usize) -> Vec<Bytes> {
    (0..count)
        .map(|n| {
            let delta = "x".repeat(bytes);
            Bytes::from(format!(
                r#"{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m{n}","delta":"{delta}"}}"#
            ))
        })
        .collect()
}

/// A parent run that began with one message, and the link its delegation makes.
async fn parent(store: &dyn ThreadStore, owner: &Principal) -> (Lease, ThreadLink) {
    let thread = ThreadId::new_uuid();
    let run = RunId::parse("r-parent", 128).unwrap();
    let input = [user("u1", "research the moon")];
    let lease = store
        .begin_run(start(owner, &thread, &run, &input))
        .await
        .unwrap();
    let link = ThreadLink {
        thread_id: thread,
        created_at_ms: lease.created_at_ms,
        run_id: run,
        tool_call_id: agui_lambda::testing::protocol::ToolCallId::parse("call_1", 128).unwrap(),
        agent: "researcher".into(),
    };
    (lease, link)
}

fn step<'a>(
    lease: &'a Lease,
    messages: &'a [Message],
    record: &'a str,
    events: &'a [Bytes],
) -> ParentStep<'a> {
    ParentStep {
        lease,
        new_messages: messages,
        state: None,
        interrupts: None,
        context: None,
        record,
        at_ms: now(),
        // Expired at once: a claim shows what the step stored.
        lease_until_ms: now() - 1,
        events_from: 1,
        events,
    }
}

fn writes(subject: &Subject) -> u64 {
    subject
        .dynamo
        .as_ref()
        .map_or(0, |dynamo| dynamo.usage().write_calls)
}

/// What the parent's thread holds after the step: its messages, its record (through a claim)
/// and its event log.
async fn parent_holds(
    store: &dyn ThreadStore,
    owner: &Principal,
    lease: &Lease,
) -> (usize, Option<String>, usize) {
    let thread = store.load(owner, &lease.thread_id).await.unwrap().unwrap();
    let claim = store
        .claim_run(RunClaim {
            owner,
            thread_id: &lease.thread_id,
            run_id: &lease.run_id,
            handed_off_by: None,
            lease_expires_at_ms: now() + 60_000,
        })
        .await
        .unwrap();
    let record = match claim {
        Claim::Taken(taken) => Some(taken.record),
        _ => None,
    };
    let events = store.read_events(&lease.run_ref(), None).await.unwrap();
    (thread.messages.len(), record, events.events.len())
}

async fn a_childs_start_stores_its_parents_step_in_one_write(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let (lease, link) = parent(store, &alice).await;
    let call = [user("a1", "calling the researcher")];
    let sent = events(5, 100);
    let (child, child_run) = (ThreadId::new_uuid(), RunId::parse("r-child", 128).unwrap());
    let task = [user("t1", "find a moon fact")];
    let before = writes(&subject);
    let LinkedRun {
        lease: child_lease,
        parent_version,
    } = store
        .begin_linked_run(
            start(&alice, &child, &child_run, &task),
            &link,
            Some(step(&lease, &call, "{\"at\":\"tools\"}", &sent)),
        )
        .await
        .unwrap();
    if subject.dynamo.is_some() {
        assert_eq!(writes(&subject) - before, 1, "one transaction");
    }
    assert_eq!(parent_version, Some(lease.version + 1));
    assert_eq!(child_lease.thread_id, child);
    let stored = store.load(&alice, &child).await.unwrap().unwrap();
    assert_eq!(stored.messages, task);
    assert_eq!(
        parent_holds(store, &alice, &lease).await,
        (2, Some("{\"at\":\"tools\"}".to_owned()), 5)
    );
}

async fn a_parent_that_lost_its_lease_stores_nothing_and_starts_no_child(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let (lease, link) = parent(store, &alice).await;
    // Another write under the lease moved the thread on: this lease is stale.
    store
        .checkpoint_run(RunCheckpoint {
            lease: &lease,
            new_messages: &[],
            state: None,
            interrupts: None,
            context: None,
            record: "{\"at\":1}",
            at_ms: now(),
            lease_until_ms: now() + 60_000,
            hand_off: false,
        })
        .await
        .unwrap();
    let call = [user("a1", "calling the researcher")];
    let sent = events(3, 100);
    let (child, child_run) = (ThreadId::new_uuid(), RunId::parse("r-child", 128).unwrap());
    let task = [user("t1", "find a moon fact")];
    let refused = store
        .begin_linked_run(
            start(&alice, &child, &child_run, &task),
            &link,
            Some(step(&lease, &call, "{\"at\":\"tools\"}", &sent)),
        )
        .await;
    assert!(matches!(refused, Err(StoreError::LeaseLost)), "{refused:?}");
    assert!(
        store.load(&alice, &child).await.unwrap().is_none(),
        "no child"
    );
    let thread = store.load(&alice, &lease.thread_id).await.unwrap().unwrap();
    assert_eq!(thread.messages.len(), 1, "the parent's step is not stored");
    let logged = store.read_events(&lease.run_ref(), None).await.unwrap();
    assert!(logged.events.is_empty(), "nor its events");
}

async fn a_step_too_large_for_one_transaction_is_stored_events_first(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let (lease, link) = parent(store, &alice).await;
    let call = [user("a1", "calling the researcher")];
    // 4 MB of events: more than one transaction takes.
    let sent = events(40, 100_000);
    let (child, child_run) = (ThreadId::new_uuid(), RunId::parse("r-child", 128).unwrap());
    let task = [user("t1", "find a moon fact")];
    let before = writes(&subject);
    let linked = store
        .begin_linked_run(
            start(&alice, &child, &child_run, &task),
            &link,
            Some(step(&lease, &call, "{\"at\":\"tools\"}", &sent)),
        )
        .await
        .unwrap();
    if subject.dynamo.is_some() {
        // The events (in as many writes as they take), then the rest in one.
        assert!(writes(&subject) - before > 1);
    }
    assert!(store.load(&alice, &child).await.unwrap().is_some());
    assert_eq!(
        parent_holds(store, &alice, &lease).await,
        (2, Some("{\"at\":\"tools\"}".to_owned()), 40)
    );
    assert!(linked.parent_version.is_some());
}
