//! One behaviour suite for every `ThreadStore`: the in-memory one and DynamoDB (Local).

use agui_lambda::testing::auth::Principal;
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{
    DynamoStore, HistoryQuery, MemoryStore, RunFinish, RunStart, StoreError, ThreadStore,
};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::dynamo_local;

fn user(id: &str, text: &str) -> Message {
    Message::User {
        id: MessageId::parse(id, 128).unwrap(),
        content: UserContent::Text(text.into()),
        name: None,
    }
}

fn far_future() -> i64 {
    chrono::Utc::now().timestamp_millis() + 60_000
}

struct Ctx {
    store: Arc<dyn ThreadStore>,
    alice: Principal,
    bob: Principal,
    thread: ThreadId,
}

async fn begin(
    ctx: &Ctx,
    owner: &Principal,
    run: &str,
    messages: &[Message],
    state: Option<&Value>,
    lease_until: i64,
) -> Result<agui_lambda::testing::store::Lease, StoreError> {
    let loaded = ctx.store.load(owner, &ctx.thread).await?;
    ctx.store
        .begin_run(RunStart {
            owner,
            thread_id: &ctx.thread,
            run_id: &RunId::parse(run, 128).unwrap(),
            loaded: loaded.as_ref(),
            lease_expires_at_ms: lease_until,
            new_messages: messages,
            state,
            title: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
async fn behaves_like_a_thread_store(store: Arc<dyn ThreadStore>) {
    let ctx = Ctx {
        store,
        alice: Principal::new("alice"),
        bob: Principal::new("bob"),
        thread: ThreadId::new_uuid(),
    };
    assert!(
        ctx.store
            .load(&ctx.alice, &ctx.thread)
            .await
            .unwrap()
            .is_none()
    );

    // Create with input and state, finish with output.
    let lease = begin(
        &ctx,
        &ctx.alice,
        "r1",
        &[user("u1", "hi")],
        Some(&json!({"n": 1})),
        far_future(),
    )
    .await
    .unwrap();
    assert!(
        matches!(
            begin(
                &ctx,
                &ctx.alice,
                "r2",
                &[user("u2", "x")],
                None,
                far_future()
            )
            .await,
            Err(StoreError::Conflict)
        ),
        "one run at a time"
    );
    ctx.store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &[user("a1", "hello")],
            state: Some(&json!({"n": 2})),
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    let loaded = ctx
        .store
        .load(&ctx.alice, &ctx.thread)
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<&str> = loaded.messages.iter().map(|m| m.id().as_str()).collect();
    assert_eq!(ids, ["u1", "a1"]);
    assert_eq!(loaded.state, Some(json!({"n": 2})));
    assert!(
        matches!(
            ctx.store
                .finish_run(RunFinish {
                    lease: &lease,
                    new_messages: &[],
                    state: None,
                    interrupts: None,
                    at_ms: chrono::Utc::now().timestamp_millis(),
                    context: None,
                })
                .await,
            Err(StoreError::LeaseLost)
        ),
        "a released lease cannot write"
    );

    // Another principal sees nothing and cannot write.
    assert!(
        ctx.store
            .load(&ctx.bob, &ctx.thread)
            .await
            .unwrap()
            .is_none()
    );
    assert!(matches!(
        begin(
            &ctx,
            &ctx.bob,
            "rb",
            &[user("b1", "mine?")],
            None,
            far_future()
        )
        .await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        ctx.store
            .history(HistoryQuery {
                owner: &ctx.bob,
                thread_id: &ctx.thread,
                after: None,
                limit: 10
            })
            .await,
        Err(StoreError::NotFound)
    ));

    // A stale load loses; state is kept when a run does not replace it.
    let stale = ctx
        .store
        .load(&ctx.alice, &ctx.thread)
        .await
        .unwrap()
        .unwrap();
    let lease = begin(
        &ctx,
        &ctx.alice,
        "r3",
        &[user("u3", "again")],
        None,
        far_future(),
    )
    .await
    .unwrap();
    ctx.store
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
    let late = ctx
        .store
        .begin_run(RunStart {
            owner: &ctx.alice,
            thread_id: &ctx.thread,
            run_id: &RunId::parse("r4", 128).unwrap(),
            loaded: Some(&stale),
            lease_expires_at_ms: far_future(),
            new_messages: &[user("u4", "late")],
            state: None,
            title: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            copied_at_ms: &[],
        })
        .await;
    assert!(matches!(late, Err(StoreError::Conflict)));
    assert_eq!(
        ctx.store
            .load(&ctx.alice, &ctx.thread)
            .await
            .unwrap()
            .unwrap()
            .state,
        Some(json!({"n": 2}))
    );

    // An expired lease is taken over; the old holder can no longer write.
    let crashed = begin(
        &ctx,
        &ctx.alice,
        "r5",
        &[user("u5", "crash")],
        None,
        chrono::Utc::now().timestamp_millis() - 1,
    )
    .await
    .unwrap();
    let taker = begin(
        &ctx,
        &ctx.alice,
        "r6",
        &[user("u6", "take over")],
        None,
        far_future(),
    )
    .await
    .unwrap();
    assert!(matches!(
        ctx.store
            .finish_run(RunFinish {
                lease: &crashed,
                new_messages: &[user("x", "zombie")],
                state: None,
                interrupts: None,
                at_ms: chrono::Utc::now().timestamp_millis(),
                context: None,
            })
            .await,
        Err(StoreError::LeaseLost)
    ));
    ctx.store
        .finish_run(RunFinish {
            lease: &taker,
            new_messages: &[user("a6", "ok")],
            state: None,
            interrupts: None,
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();

    // More input than one DynamoDB transaction holds is stored whole and in order.
    let many: Vec<Message> = (0..250)
        .map(|i| user(&format!("bulk{i}"), &format!("message {i}")))
        .collect();
    let lease = begin(&ctx, &ctx.alice, "r7", &many, None, far_future())
        .await
        .unwrap();
    let output: Vec<Message> = (0..120).map(|i| user(&format!("out{i}"), "o")).collect();
    // The interrupt record rides on the last write of a long output too.
    let record = json!({"open": [{"interrupt": {"id": "int-1", "reason": "tool_call"}}]});
    ctx.store
        .finish_run(RunFinish {
            lease: &lease,
            new_messages: &output,
            state: None,
            interrupts: Some(&record),
            at_ms: chrono::Utc::now().timestamp_millis(),
            context: None,
        })
        .await
        .unwrap();
    let held = ctx
        .store
        .load(&ctx.alice, &ctx.thread)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(held.interrupts, Some(record));
    // The next run's finish replaces it; `None` removes it.
    let lease = begin(&ctx, &ctx.alice, "r7b", &[], None, far_future())
        .await
        .unwrap();
    ctx.store
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
    let loaded = ctx
        .store
        .load(&ctx.alice, &ctx.thread)
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<&str> = loaded.messages.iter().map(|m| m.id().as_str()).collect();
    assert_eq!(ids.len(), 6 + 250 + 120);
    assert_eq!(&ids[..7], ["u1", "a1", "u3", "u5", "u6", "a6", "bulk0"]);
    assert_eq!(ids[6 + 249], "bulk249");
    assert_eq!(ids.last(), Some(&"out119"));

    // History pages through every message exactly once.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = ctx
            .store
            .history(HistoryQuery {
                owner: &ctx.alice,
                thread_id: &ctx.thread,
                after: cursor.as_deref(),
                limit: 100,
            })
            .await
            .unwrap();
        assert!(page.messages.len() <= 100);
        seen.extend(page.messages.iter().map(|m| m.id().as_str().to_owned()));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(seen, ids);

    // Oversized writes are refused whole.
    let huge_state = json!({"blob": "x".repeat(400_000)});
    assert!(matches!(
        begin(
            &ctx,
            &ctx.alice,
            "r8",
            &[user("u8", "big")],
            Some(&huge_state),
            far_future()
        )
        .await,
        Err(StoreError::StateTooLarge(_))
    ));
    let lease = begin(&ctx, &ctx.alice, "r9", &[], None, far_future())
        .await
        .unwrap();
    let huge_message = user("big", &"y".repeat(400_000));
    assert!(matches!(
        ctx.store
            .finish_run(RunFinish {
                lease: &lease,
                new_messages: &[huge_message],
                state: None,
                interrupts: None,
                at_ms: chrono::Utc::now().timestamp_millis(),
                context: None,
            })
            .await,
        Err(StoreError::MessageTooLarge(_))
    ));
    let after = ctx
        .store
        .load(&ctx.alice, &ctx.thread)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        after.messages.len(),
        ids.len(),
        "nothing of a refused write is stored"
    );
}

#[tokio::test]
async fn the_memory_store_behaves_like_a_thread_store() {
    behaves_like_a_thread_store(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn the_dynamodb_store_behaves_like_a_thread_store() {
    let (client, table) = dynamo_local::new_table().await;
    behaves_like_a_thread_store(Arc::new(DynamoStore::new(client, table, 0))).await;
}

#[tokio::test]
async fn an_expired_dynamodb_thread_is_gone_and_its_id_starts_afresh() {
    let (client, table) = dynamo_local::new_table().await;
    let store = DynamoStore::new(client.clone(), table.clone(), 30);
    let ctx = Ctx {
        store: Arc::new(store),
        alice: Principal::new("alice"),
        bob: Principal::new("bob"),
        thread: ThreadId::new_uuid(),
    };
    let lease = begin(
        &ctx,
        &ctx.alice,
        "r1",
        &[user("old", "old")],
        None,
        far_future(),
    )
    .await
    .unwrap();
    ctx.store
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
    // Age the thread past its TTL, as DynamoDB's clock would (TTL deletion itself is lazy).
    client
        .update_item()
        .table_name(&table)
        .key(
            "pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("THREAD#{}", ctx.thread)),
        )
        .key(
            "sk",
            aws_sdk_dynamodb::types::AttributeValue::S("META".into()),
        )
        .update_expression("SET expiresAt = :past")
        .expression_attribute_values(
            ":past",
            aws_sdk_dynamodb::types::AttributeValue::N("1000".into()),
        )
        .send()
        .await
        .unwrap();
    assert!(
        ctx.store
            .load(&ctx.alice, &ctx.thread)
            .await
            .unwrap()
            .is_none()
    );
    // The id can be used again, and the old incarnation's messages never show up in it.
    let lease = begin(
        &ctx,
        &ctx.alice,
        "r2",
        &[user("new", "new")],
        None,
        far_future(),
    )
    .await
    .unwrap();
    ctx.store
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
    let fresh = ctx
        .store
        .load(&ctx.alice, &ctx.thread)
        .await
        .unwrap()
        .unwrap();
    let ids: Vec<&str> = fresh.messages.iter().map(|m| m.id().as_str()).collect();
    assert_eq!(ids, ["new"]);
}

/// `template.yaml` declares the table once; the tests (and `agui-lambda create-table`) create
/// the same one.
#[tokio::test]
async fn the_created_table_is_the_one_the_template_declares() {
    let (client, table) = dynamo_local::new_table().await;
    let described = client
        .describe_table()
        .table_name(&table)
        .send()
        .await
        .unwrap()
        .table
        .unwrap();
    let keys: Vec<(String, String)> = described
        .key_schema()
        .iter()
        .map(|key| {
            (
                key.attribute_name().to_owned(),
                key.key_type().as_str().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("pk".to_owned(), "HASH".to_owned()),
            ("sk".to_owned(), "RANGE".to_owned())
        ]
    );
    let ttl = client
        .describe_time_to_live()
        .table_name(&table)
        .send()
        .await
        .unwrap();
    assert_eq!(
        ttl.time_to_live_description().unwrap().attribute_name(),
        Some("expiresAt")
    );

    let template = std::fs::read_to_string(crate::helpers::repo_path("template.yaml")).unwrap();
    let table_section = &template
        [template.find("  ThreadsTable:").unwrap()..template.find("  AguiLogGroup:").unwrap()];
    let compact: String = table_section
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    for expected in [
        "BillingMode: PAY_PER_REQUEST",
        "- AttributeName: pk AttributeType: S - AttributeName: sk AttributeType: S",
        "- AttributeName: pk KeyType: HASH - AttributeName: sk KeyType: RANGE",
        "AttributeName: expiresAt Enabled: true",
        "PointInTimeRecoveryEnabled: true",
        "SSEEnabled: true",
    ] {
        assert!(
            compact.contains(expected),
            "template.yaml's table lacks `{expected}`"
        );
    }
}
