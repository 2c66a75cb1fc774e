//! Long-term memory: the store contract on both stores, and on DynamoDB Local with the fixture
//! model a fact saved by the tool in one thread, given to the next thread's runs, found by the
//! search tool, and gone after `DELETE /memories/{id}`; an open question given what another
//! thread saved; other principals, bounds, erasure, the cached prompt prefix, and store reads per run whatever the number of memories.

use agui_lambda::testing::auth::{Principal, hash_api_key};
use agui_lambda::testing::model::ModelRequest;
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use agui_lambda::testing::protocol::{Message, UserContent, UserPart};
use agui_lambda::testing::store::{DynamoStore, MemoryEdit, NewMemory, StoreError, ThreadStore};
use agui_lambda::testing::telemetry::emf::Emf;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

use crate::both_stores::{Subject, on_both_stores};
use crate::dynamo_local;
use crate::helpers::*;

const ALICE: &str = "alice-secret-key";
const BOB: &str = "bob-secret-key";
const FACT: &str = "[fact] Sam is vegetarian";

fn new_memory(text: &str) -> NewMemory {
    NewMemory {
        text: text.to_owned(),
        pinned: false,
        thread_id: None,
        run_id: None,
        expires_at_ms: None,
    }
}

on_both_stores!(memories_are_per_principal_bounded_and_erasable);

async fn memories_are_per_principal_bounded_and_erasable(subject: Subject) {
    let store = subject.store;
    let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
    let lyon = store
        .save_memory(&alice, new_memory("lives in Lyon"), 2)
        .await
        .unwrap();
    // An expired memory is gone at once: not listed, not counted against the cap.
    let past = chrono::Utc::now().timestamp_millis() - 5_000;
    let expired = NewMemory {
        expires_at_ms: Some(past),
        ..new_memory("an old fact")
    };
    store.save_memory(&alice, expired, 2).await.unwrap();
    store
        .save_memory(&alice, new_memory("is vegetarian"), 2)
        .await
        .unwrap();
    let full = store.save_memory(&alice, new_memory("a third"), 2).await;
    assert!(
        matches!(full, Err(StoreError::TooManyMemories(2))),
        "{full:?}"
    );
    let listed = store.memories(&alice).await.unwrap();
    let texts: Vec<&str> = listed.memories.iter().map(|m| m.text.as_str()).collect();
    assert_eq!(texts, ["is vegetarian", "lives in Lyon"], "newest first");

    // Bob reaches none of it, whatever id he names.
    assert!(store.memories(&bob).await.unwrap().memories.is_empty());
    let edit = MemoryEdit {
        text: Some("hijacked".into()),
        pinned: None,
    };
    assert!(matches!(
        store.edit_memory(&bob, &lyon.id, edit.clone()).await,
        Err(StoreError::NotFound)
    ));
    assert!(matches!(
        store.delete_memory(&bob, &lyon.id).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(store.delete_memories(&bob).await.unwrap(), 0);

    let edited = store.edit_memory(&alice, &lyon.id, edit).await.unwrap();
    assert_eq!(edited.text, "hijacked");
    store.delete_memory(&alice, &lyon.id).await.unwrap();
    assert!(matches!(
        store.delete_memory(&alice, &lyon.id).await,
        Err(StoreError::NotFound)
    ));
    assert_eq!(store.memories(&alice).await.unwrap().memories.len(), 1);
    assert_eq!(store.delete_memories(&alice).await.unwrap(), 1);
    assert!(store.memories(&alice).await.unwrap().memories.is_empty());
}

fn api_keys() -> String {
    format!("alice={},bob={}", hash_api_key(ALICE), hash_api_key(BOB))
}

/// An app with memory on, two API-key principals (alice and bob), on `store`.
async fn memory_app(store: Arc<dyn ThreadStore>, extra: &[(&str, &str)]) -> TestApp {
    let keys = api_keys();
    let mut overrides = vec![
        ("AUTH_MODE", "api-key"),
        ("API_KEYS", keys.as_str()),
        ("MEMORY", "on"),
    ];
    overrides.extend_from_slice(extra);
    spawn_app_on(&overrides, Some(store)).await
}

/// A run of one user message as `key`; its events, checked.
async fn say(app: &TestApp, key: &str, thread: &str, text: &str) -> Vec<Value> {
    let body = run_input(
        thread,
        &format!("run-{}", uuid::Uuid::new_v4().simple()),
        json!([{"id": format!("u-{}", uuid::Uuid::new_v4().simple()), "role": "user", "content": text}]),
    );
    let answer = call(app, key, "POST", "/agent", Some(body)).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let events = parse_sse(&answer.body).unwrap();
    verify_run(&events).unwrap();
    assert_eq!(
        events.last().unwrap()["type"],
        "RUN_FINISHED",
        "{}",
        answer.body
    );
    events
}

/// The content of the run's tool results.
fn tool_results(events: &[Value]) -> String {
    events
        .iter()
        .filter(|event| event["type"] == "TOOL_CALL_RESULT")
        .map(|event| event["content"].as_str().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The text of the newest user message the model was sent, memory block included.
fn newest_user_text(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::User { content, .. } => Some(content.text()),
            _ => None,
        })
        .unwrap_or_default()
}

async fn list(app: &TestApp, key: &str) -> Vec<Value> {
    let answer = call(app, key, "GET", "/memories", None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    answer.json()["memories"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_fact_saved_in_one_thread_is_given_to_the_next_found_by_search_and_gone_once_deleted() {
    let app = memory_app(dynamo_local::new_store().await, &[]).await;
    let thread_a = new_thread();
    let saved = say(&app, ALICE, &thread_a, "[memory-save] I never eat meat").await;
    assert!(
        tool_results(&saved).contains(FACT),
        "streamed as a tool result"
    );
    let kept = list(&app, ALICE).await;
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["text"], FACT);
    assert_eq!(kept[0]["threadId"], thread_a.as_str());
    let id = kept[0]["id"].as_str().unwrap().to_owned();

    // A new thread: the model gets the fact without calling any tool.
    let thread_b = new_thread();
    let recalled = say(
        &app,
        ALICE,
        &thread_b,
        "[memory-recall] vegetarian dinner ideas?",
    )
    .await;
    assert!(!types(&recalled).contains(&"TOOL_CALL_START"));
    let asked = app.fixture_requests_about("[memory-recall] vegetarian dinner");
    assert!(
        newest_user_text(&asked[0]).contains(FACT),
        "{:?}",
        asked[0].messages
    );
    let searched = say(&app, ALICE, &thread_b, "[memory-search] what do you know?").await;
    assert!(tool_results(&searched).contains(FACT));

    // Bob: none of it, through the API or the tools, whatever id he names.
    assert!(list(&app, BOB).await.is_empty());
    let path = format!("/memories/{id}");
    let patched = call(&app, BOB, "PATCH", &path, Some(json!({"text": "mine now"}))).await;
    assert_eq!(
        (patched.status, patched.error_code().as_str()),
        (404, "memory_not_found")
    );
    assert_eq!(call(&app, BOB, "DELETE", &path, None).await.status, 404);
    let bob_thread = new_thread();
    let bob_search = say(&app, BOB, &bob_thread, "[memory-search] bob asks").await;
    assert!(!tool_results(&bob_search).contains(FACT));
    say(&app, BOB, &bob_thread, "[memory-recall] bob vegetarian?").await;
    let bob_asked = app.fixture_requests_about("[memory-recall] bob vegetarian");
    assert!(!newest_user_text(&bob_asked[0]).contains(FACT));

    // Deleting the thread that wrote it leaves the memory.
    let deleted = call(&app, ALICE, "DELETE", &format!("/threads/{thread_a}"), None).await;
    assert_eq!(deleted.status, 204);
    assert_eq!(list(&app, ALICE).await.len(), 1);

    // Deleting the memory: in neither the block nor the search.
    assert_eq!(call(&app, ALICE, "DELETE", &path, None).await.status, 204);
    say(
        &app,
        ALICE,
        &thread_b,
        "[memory-recall] after delete vegetarian?",
    )
    .await;
    let after = app.fixture_requests_about("[memory-recall] after delete");
    assert!(!newest_user_text(&after[0]).contains(FACT));
    let searched = say(&app, ALICE, &thread_b, "[memory-search] again").await;
    assert!(!tool_results(&searched).contains(FACT));
    assert_eq!(call(&app, ALICE, "DELETE", &path, None).await.status, 404);
}

#[tokio::test]
async fn an_open_question_in_a_new_thread_gets_what_was_saved_in_another() {
    let app = memory_app(dynamo_local::new_store().await, &[]).await;
    say(&app, ALICE, &new_thread(), "[memory-save] I never eat meat").await;
    // The question shares no word with the memory: it is given all the same.
    say(
        &app,
        ALICE,
        &new_thread(),
        "[memory-recall] What do you know about me?",
    )
    .await;
    let asked = app.fixture_requests_about("[memory-recall] What do you know about me?");
    assert!(
        newest_user_text(&asked[0]).contains(FACT),
        "{:?}",
        asked[0].messages
    );
    // Bob asks the same in his own thread: nothing of Alice's.
    say(
        &app,
        BOB,
        &new_thread(),
        "[memory-recall] Bob: what do you know about me?",
    )
    .await;
    let bob_asked = app.fixture_requests_about("[memory-recall] Bob: what do you know");
    assert!(!newest_user_text(&bob_asked[0]).contains("vegetarian"));
}

#[tokio::test]
async fn the_api_pages_edits_bounds_and_erases_memories() {
    let store: Arc<dyn ThreadStore> = Arc::new(agui_lambda::testing::store::MemoryStore::new());
    let bounds = [
        ("MEMORY_MAX_ITEMS", "3"),
        ("MEMORY_MAX_CHARS", "20"),
        ("MEMORY_TTL_DAYS", "7"),
    ];
    let app = memory_app(store, &bounds).await;
    let long = call(
        &app,
        ALICE,
        "POST",
        "/memories",
        Some(json!({"text": "x".repeat(21)})),
    )
    .await;
    assert_eq!(
        (long.status, long.json()["error"]["field"].clone()),
        (422, json!("text"))
    );
    let mut ids = Vec::new();
    for text in ["one", "two", "three"] {
        let saved = call(
            &app,
            ALICE,
            "POST",
            "/memories",
            Some(json!({"text": text})),
        )
        .await;
        assert_eq!(saved.status, 201, "{}", saved.body);
        assert!(
            saved.json()["expiresAt"].is_string(),
            "MEMORY_TTL_DAYS sets the expiry"
        );
        ids.push(saved.json()["id"].as_str().unwrap().to_owned());
    }
    let full = call(
        &app,
        ALICE,
        "POST",
        "/memories",
        Some(json!({"text": "four"})),
    )
    .await;
    assert_eq!(
        (full.status, full.error_code().as_str()),
        (409, "memory_full")
    );

    let first = call(&app, ALICE, "GET", "/memories?limit=2", None)
        .await
        .json();
    let texts: Vec<&str> = first["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts, ["three", "two"]);
    let next = first["next"].as_str().unwrap();
    let rest = call(
        &app,
        ALICE,
        "GET",
        &format!("/memories?limit=2&cursor={next}"),
        None,
    )
    .await
    .json();
    assert_eq!(rest["memories"][0]["text"], "one");
    assert_eq!(rest["next"], Value::Null);
    assert_eq!(
        call(&app, ALICE, "GET", "/memories?cursor=nope", None)
            .await
            .status,
        400
    );

    let path = format!("/memories/{}", ids[0]);
    let pinned = call(&app, ALICE, "PATCH", &path, Some(json!({"pinned": true}))).await;
    assert_eq!(
        (pinned.status, pinned.json()["pinned"].clone()),
        (200, json!(true))
    );
    let unknown = call(&app, ALICE, "PATCH", &path, Some(json!({"colour": "red"}))).await;
    assert_eq!(unknown.status, 422);
    assert_eq!(
        call(&app, ALICE, "DELETE", "/memories/mem_nope", None)
            .await
            .status,
        404
    );

    let erased = call(&app, ALICE, "DELETE", "/memories", None).await;
    assert_eq!(
        (erased.status, erased.json()["deleted"].clone()),
        (200, json!(3))
    );
    assert!(list(&app, ALICE).await.is_empty());
}

#[tokio::test]
async fn memory_is_off_by_default_and_its_routes_say_so() {
    let off = spawn_app().await;
    let answer = off.get("/memories").await;
    assert_eq!(
        (answer.status, answer.json()["error"]["code"].clone()),
        (404, json!("memory_disabled"))
    );
}

/// The request's prefix as the provider caches it: tools, system prompt, summary.
fn cached_prefix(request: &ModelRequest) -> String {
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| json!([tool.name, tool.description, tool.parameters]))
        .collect();
    json!([tools, request.system, request.summary]).to_string()
}

/// The messages without the memory block (the part after the newest user message's text).
fn without_block(request: &ModelRequest) -> (Vec<String>, String) {
    let mut block = String::new();
    let messages = request
        .messages
        .iter()
        .map(|message| match message {
            Message::User {
                content: UserContent::Parts(parts),
                id,
                ..
            } => {
                let kept: Vec<&UserPart> = parts
                    .iter()
                    .filter(|part| match part {
                        UserPart::Text { text } if text.starts_with("<memories>") => {
                            block.clone_from(text);
                            false
                        }
                        _ => true,
                    })
                    .collect();
                serde_json::to_string(&json!([id, serde_json::to_value(&kept).unwrap()])).unwrap()
            }
            Message::User {
                content: UserContent::Text(text),
                id,
                ..
            } => serde_json::to_string(&json!([id, [{"type": "text", "text": text}]])).unwrap(),
            other => serde_json::to_string(other).unwrap(),
        })
        .collect();
    (messages, block)
}

#[tokio::test]
async fn the_cached_prefix_is_byte_identical_when_the_relevant_memories_change() {
    let app = memory_app(dynamo_local::new_store().await, &[]).await;
    let saved = call(
        &app,
        ALICE,
        "POST",
        "/memories",
        Some(json!({"text": "Sam cooks vegetarian curry"})),
    )
    .await;
    assert_eq!(saved.status, 201);
    let thread = new_thread();
    say(
        &app,
        ALICE,
        &thread,
        "[memory-recall] first vegetarian question",
    )
    .await;
    let other = call(
        &app,
        ALICE,
        "POST",
        "/memories",
        Some(json!({"text": "Sam is vegetarian since 2019"})),
    )
    .await;
    assert_eq!(other.status, 201);
    say(
        &app,
        ALICE,
        &thread,
        "[memory-recall] second vegetarian question",
    )
    .await;
    let first = &app.fixture_requests_about("[memory-recall] first")[0];
    let second = &app.fixture_requests_about("[memory-recall] second")[0];
    assert_eq!(cached_prefix(first), cached_prefix(second));
    let (first_messages, first_block) = without_block(first);
    let (second_messages, second_block) = without_block(second);
    assert_ne!(first_block, second_block, "the relevant memories differ");
    assert!(second_block.contains("since 2019") && !first_block.contains("since 2019"));
    assert_eq!(
        second_messages[..first_messages.len()],
        first_messages[..],
        "earlier turns unchanged"
    );
    // The block is never stored with the thread.
    let history = call(&app, ALICE, "GET", &format!("/threads/{thread}"), None).await;
    assert!(!history.body.contains("<memories>"), "{}", history.body);
}

/// Run `n`'s EMF record (runs are numbered from 1 in the order they ended).
async fn record_of_run(lines: &Arc<Mutex<Vec<String>>>, n: usize) -> Value {
    for _ in 0..200 {
        if let Some(line) = lines.lock().unwrap().get(n - 1).cloned() {
            return serde_json::from_str(&line).unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no metrics record for run {n}");
}

/// (store reads, of which memory reads) of a record.
fn reads(record: &Value) -> (u64, u64) {
    (
        record["StoreReadCalls"].as_u64().unwrap(),
        record["MemoryReadCalls"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn a_run_reads_the_store_as_often_with_1000_memories_as_with_10() {
    let (client, table) = dynamo_local::new_table().await;
    let store = Arc::new(DynamoStore::new(client, table, 30));
    let facts = |count: usize| -> Vec<String> {
        (0..count)
            .map(|n| format!("fact number {n} about topic {}", n % 37))
            .collect()
    };
    store
        .seed_memories(&Principal::new("alice"), &facts(10))
        .await
        .unwrap();
    store
        .seed_memories(&Principal::new("bob"), &facts(1_000))
        .await
        .unwrap();
    let (emf, lines) = Emf::in_memory("AguiTests", "memory");
    let keys = api_keys();
    let overrides = [
        ("AUTH_MODE", "api-key"),
        ("API_KEYS", keys.as_str()),
        ("MEMORY", "on"),
    ];
    let app = spawn_app_with_metrics(&overrides, store, emf).await;
    // Cold (this process holds neither principal's memories), then warm; each in a new thread.
    let runs = [
        (ALICE, "[memory-recall] topic 3 cold"),
        (BOB, "[memory-recall] topic 3 cold"),
        (ALICE, "[memory-recall] topic 3 warm"),
        (BOB, "[memory-recall] topic 3 warm"),
        (ALICE, "[memory-save] and one more"),
    ];
    let mut records = Vec::new();
    for (n, (key, text)) in runs.iter().enumerate() {
        say(&app, key, &new_thread(), text).await;
        records.push(record_of_run(&lines, n + 1).await);
    }
    let (cold_10, cold_1000) = (reads(&records[0]), reads(&records[1]));
    let (warm_10, warm_1000) = (reads(&records[2]), reads(&records[3]));
    println!(
        "store reads per run (all, memory): cold 10 {cold_10:?} 1000 {cold_1000:?}; warm 10 {warm_10:?} 1000 {warm_1000:?}"
    );
    assert_eq!(cold_10, cold_1000, "cold: 10 memories vs 1,000");
    assert_eq!(warm_10, warm_1000, "warm: 10 memories vs 1,000");
    assert_eq!(
        (cold_10.1, warm_10.1),
        (2, 1),
        "GetItem + one Query page cold; GetItem warm"
    );
    let given = app.fixture_requests_about("[memory-recall] topic 3 warm");
    assert!(
        given
            .iter()
            .all(|request| newest_user_text(request).contains("about topic 3"))
    );
    // The save: its writes count as the run's memory writes in the EMF record.
    assert_eq!(records[4]["MemoryWriteCalls"], 1, "{}", records[4]);
}
