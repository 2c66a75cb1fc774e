//! Run checkpoints and claims, on both stores: a run's progress stored under its lease, the
//! run handed from runner to runner, and the lease's epoch fencing every runner that lost it.

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    Claim, Lease, RunCheckpoint, RunClaim, RunFinish, RunStart, StoreError, ThreadActivity,
    ThreadStore,
};

use crate::both_stores::{Subject, on_both_stores};

on_both_stores!(
    runs_are_checkpointed_and_handed_from_runner_to_runner,
    a_stalled_run_is_taken_over_once_its_lease_expired
);

fn user(id: &str) -> Message {
    Message::User {
        id: MessageId::parse(id, 128).unwrap(),
        content: UserContent::Text(format!("message {id}")),
        name: None,
    }
}

fn now() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

async fn begin(store: &dyn ThreadStore, owner: &Principal, thread: &ThreadId, until: i64) -> Lease {
    store
        .begin_run(RunStart {
            owner,
            thread_id: thread,
            run_id: &RunId::parse("r1", 128).unwrap(),
            loaded: None,
            lease_expires_at_ms: until,
            new_messages: &[user("u1")],
            state: None,
            title: None,
            at_ms: now(),
            copied_at_ms: &[],
        })
        .await
        .unwrap()
}

async fn checkpoint(
    store: &dyn ThreadStore,
    lease: &Lease,
    messages: &[Message],
    record: &str,
    hand_off: bool,
    until: i64,
) -> Result<u64, StoreError> {
    store
        .checkpoint_run(RunCheckpoint {
            lease,
            new_messages: messages,
            state: None,
            interrupts: None,
            context: None,
            record,
            at_ms: now(),
            lease_until_ms: until,
            hand_off,
        })
        .await
}

fn claim<'a>(
    owner: &'a Principal,
    thread: &'a ThreadId,
    run: &'a RunId,
    handed_off_by: Option<u64>,
) -> RunClaim<'a> {
    RunClaim {
        owner,
        thread_id: thread,
        run_id: run,
        handed_off_by,
        lease_expires_at_ms: now() + 60_000,
    }
}

/// The lease a checkpoint leaves its runner with.
fn after(lease: &Lease, version: u64, stored: usize) -> Lease {
    let mut next = lease.clone();
    next.version = version;
    next.next_seq += stored;
    next.input_messages += stored;
    next.checkpointed = true;
    next
}

async fn runs_are_checkpointed_and_handed_from_runner_to_runner(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    let run = RunId::parse("r1", 128).unwrap();
    let first = checkpointed_then_handed_off(store, &alice, &thread, &run).await;
    let second = taken_over_once(store, &alice, &thread, &run, &first).await;
    fenced_then_finished(store, &alice, &thread, &run, &first, second).await;
}

/// A run checkpointed twice, the second time handed off; returns its first runner's lease.
async fn checkpointed_then_handed_off(
    store: &dyn ThreadStore,
    alice: &Principal,
    thread: &ThreadId,
    run: &RunId,
) -> Lease {
    let first = begin(store, alice, thread, now() + 60_000).await;
    assert_eq!(first.epoch, 1);
    // A checkpoint stores the step's messages and the record, under the lease.
    let version = checkpoint(
        store,
        &first,
        &[user("a1")],
        "{\"at\":1}",
        false,
        now() + 60_000,
    )
    .await
    .unwrap();
    let first = after(&first, version, 1);
    assert_eq!(
        store
            .load(alice, thread)
            .await
            .unwrap()
            .unwrap()
            .messages
            .len(),
        2
    );
    // Not handed off: a claim finds the run held, a claim for another epoch too.
    for from in [Some(1), Some(7), None] {
        let held = store
            .claim_run(claim(alice, thread, run, from))
            .await
            .unwrap();
        assert!(matches!(held, Claim::Held { epoch: 1, .. }), "{held:?}");
    }
    // Between runners the run can be cancelled; the next runner sees it.
    let version = checkpoint(
        store,
        &first,
        &[user("a2")],
        "{\"at\":2}",
        true,
        now() + 60_000,
    )
    .await
    .unwrap();
    let first = after(&first, version, 1);
    let runner = store.history(agui_lambda::testing::store::HistoryQuery {
        owner: alice,
        thread_id: thread,
        after: None,
        limit: 10,
    });
    let page = runner.await.unwrap();
    assert_eq!(page.active_run.as_ref(), Some(run));
    assert_eq!(
        page.runner,
        Some(agui_lambda::testing::store::Runner {
            epoch: 1,
            handed_off: true
        })
    );
    first
}

/// The continuation of the hand-off takes the run, once; returns the second runner's lease.
async fn taken_over_once(
    store: &dyn ThreadStore,
    alice: &Principal,
    thread: &ThreadId,
    run: &RunId,
    first: &Lease,
) -> Lease {
    // Another principal cannot take it, a claim for another epoch neither.
    let bob = Principal::new("bob");
    assert!(matches!(
        store
            .claim_run(claim(&bob, thread, run, Some(1)))
            .await
            .unwrap(),
        Claim::Gone
    ));
    assert!(matches!(
        store
            .claim_run(claim(alice, thread, run, Some(2)))
            .await
            .unwrap(),
        Claim::Held { .. }
    ));
    // The continuation for epoch 1 takes it: epoch 2, the thread as stored, the record.
    let Claim::Taken(taken) = store
        .claim_run(claim(alice, thread, run, Some(1)))
        .await
        .unwrap()
    else {
        panic!("the hand-off's continuation takes the run");
    };
    assert_eq!(taken.lease.epoch, 2);
    assert!(!taken.recovered);
    assert_eq!(taken.record, "{\"at\":2}");
    assert_eq!(taken.thread.messages.len(), 3);
    assert_eq!(taken.lease.next_seq, 3);
    assert_eq!(taken.lease.input_messages, 3);
    assert_eq!(taken.lease.started_at_ms, first.started_at_ms);
    // A second delivery of the same continuation does nothing.
    assert!(matches!(
        store
            .claim_run(claim(alice, thread, run, Some(1)))
            .await
            .unwrap(),
        Claim::Held { epoch: 2, .. }
    ));
    taken.lease
}

/// The first runner changes nothing any more; the second ends the run.
async fn fenced_then_finished(
    store: &dyn ThreadStore,
    alice: &Principal,
    thread: &ThreadId,
    run: &RunId,
    first: &Lease,
    second: Lease,
) {
    // The first runner is fenced: no checkpoint, no end, no renewal.
    assert!(matches!(
        checkpoint(store, first, &[user("late")], "{}", false, now() + 60_000).await,
        Err(StoreError::LeaseLost)
    ));
    assert!(matches!(
        store.pulse(first, Some(now() + 60_000)).await,
        Err(StoreError::LeaseLost)
    ));
    let stale_end = store
        .finish_run(RunFinish {
            lease: first,
            new_messages: &[user("stale")],
            state: None,
            interrupts: None,
            at_ms: now(),
            context: None,
        })
        .await;
    assert!(
        matches!(stale_end, Err(StoreError::LeaseLost)),
        "{stale_end:?}"
    );
    // The second renews and ends it; the record goes with the lease.
    store.pulse(&second, Some(now() + 60_000)).await.unwrap();
    store
        .finish_run(RunFinish {
            lease: &second,
            new_messages: &[user("a3")],
            state: None,
            interrupts: None,
            at_ms: now(),
            context: None,
        })
        .await
        .unwrap();
    let thread_after = store.load(alice, thread).await.unwrap().unwrap();
    let ids: Vec<&str> = thread_after
        .messages
        .iter()
        .map(|m| m.id().as_str())
        .collect();
    assert_eq!(ids, ["u1", "a1", "a2", "a3"]);
    assert!(thread_after.active_run.is_none());
    // A late continuation finds nothing to take.
    assert!(matches!(
        store
            .claim_run(claim(alice, thread, run, Some(1)))
            .await
            .unwrap(),
        Claim::Gone
    ));
    assert!(store.run_end(alice, run).await.unwrap().is_some());
}

async fn a_stalled_run_is_taken_over_once_its_lease_expired(subject: Subject) {
    let store = subject.store.as_ref();
    let alice = Principal::new("alice");
    let thread = ThreadId::new_uuid();
    let run = RunId::parse("r1", 128).unwrap();
    // A run whose lease expires soon, checkpointed once: its runner then "crashes".
    let first = begin(store, &alice, &thread, now() + 60_000).await;
    let version = checkpoint(
        store,
        &first,
        &[user("a1")],
        "{\"at\":1}",
        false,
        now() + 1_500,
    )
    .await
    .unwrap();
    let first = after(&first, version, 1);
    assert!(matches!(
        store.activity(&alice, &thread).await.unwrap(),
        ThreadActivity::Running { .. }
    ));
    tokio::time::sleep(std::time::Duration::from_millis(1_800)).await;
    assert!(matches!(
        store.activity(&alice, &thread).await.unwrap(),
        ThreadActivity::Stalled { run_id, .. } if run_id == run
    ));
    // A cancel still reaches it, for the runner that takes it over.
    assert_eq!(
        store.request_cancel(&alice, &thread, &run).await.unwrap(),
        agui_lambda::testing::store::CancelState::Requested
    );
    let Claim::Taken(taken) = store
        .claim_run(claim(&alice, &thread, &run, None))
        .await
        .unwrap()
    else {
        panic!("a stalled run is taken over");
    };
    assert!(taken.recovered);
    assert!(taken.cancel_requested);
    assert_eq!(taken.lease.epoch, 2);
    // One taker: the next claim finds it held.
    assert!(matches!(
        store
            .claim_run(claim(&alice, &thread, &run, None))
            .await
            .unwrap(),
        Claim::Held { epoch: 2, .. }
    ));
    assert!(matches!(
        store.pulse(&first, None).await,
        Err(StoreError::LeaseLost)
    ));
}
