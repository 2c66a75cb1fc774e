//! Sub-agents over HTTP: a coordinator profile that delegates to a researcher (which delegates
//! to a factchecker), on the fixture model; the threads on DynamoDB Local (stored, linked,
//! owner-only, deleted with their parent, usage summed), a grandchild, a cancel mid-child, the
//! three visibilities, a 0.0.x client's approval through its confirm tool, a remote AG-UI child
//! (a second app), and a crash mid-child.

use agui_lambda::testing::auth::{Principal, hash_api_key};
use agui_lambda::testing::protocol::verify::{parse_sse, verify_run};
use agui_lambda::testing::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use agui_lambda::testing::store::{DynamoStore, MemoryStore, RunStart, ThreadLink, ThreadStore};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

use crate::dynamo_local;
use crate::helpers::*;

const ALICE: &str = "alice-secret-key";
const BOB: &str = "bob-secret-key";

const PROFILES: &str = r#"{
    "coordinator": {"systemPrompt": "You coordinate.", "subagents": ["researcher"]},
    "researcher": {"description": "Finds facts.", "systemPrompt": "You research.", "subagents": ["factchecker"]},
    "factchecker": {"description": "Checks facts."}
}"#;

fn keys() -> String {
    format!("alice={},bob={}", hash_api_key(ALICE), hash_api_key(BOB))
}

/// The coordinator as the served agent, with two API-key principals, on `store`.
async fn coordinator_app(extra: &[(&str, &str)], store: Arc<dyn ThreadStore>) -> TestApp {
    let keys = keys();
    let mut overrides = vec![
        ("AUTH_MODE", "api-key"),
        ("API_KEYS", keys.as_str()),
        ("AGENT_PROFILES", PROFILES),
        ("AGENT_DEFAULT_PROFILE", "coordinator"),
        ("APPROVAL_REQUIRED_TOOLS", "get_current_time"),
    ];
    overrides.extend_from_slice(extra);
    spawn_app_on(&overrides, Some(store)).await
}

async fn dynamo_store() -> (Arc<dyn ThreadStore>, aws_sdk_dynamodb::Client, String) {
    let (client, table) = dynamo_local::new_table().await;
    let store: Arc<dyn ThreadStore> = Arc::new(DynamoStore::new(client.clone(), table.clone(), 0));
    (store, client, table)
}

fn body(thread: &str, run: &str, text: &str, v1: bool) -> Value {
    let mut body = json!({
        "threadId": thread, "runId": run,
        "messages": [{"id": format!("{run}-m1"), "role": "user", "content": text}],
        "tools": [], "context": [], "state": {}, "forwardedProps": {},
    });
    if v1 {
        body["protocolVersion"] = json!("1.0");
    }
    body
}

/// A run as `key`; its events, checked against the clients' rules.
async fn run_as(app: &TestApp, key: &str, body: &Value) -> Vec<Value> {
    let answer = call(app, key, "POST", "/agent", Some(body.clone())).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let events = parse_sse(&answer.body).unwrap();
    verify_run(&events).unwrap_or_else(|err| panic!("{err}\n{}", answer.body));
    events
}

/// The child thread a delegation's `tool` message links to, from the parent's thread.
async fn child_of(app: &TestApp, key: &str, thread: &str, call_id: &str) -> String {
    let page = call(app, key, "GET", &format!("/threads/{thread}"), None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let page = page.json();
    let result = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| message["role"] == "tool" && message["toolCallId"] == call_id)
        .unwrap_or_else(|| panic!("no result of {call_id}: {page}"));
    result["metadata"]["agui-lambda"]["subagent"]["threadId"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_delegation_is_streamed_stored_linked_owner_only_counted_and_deleted_with_its_parent() {
    let (store, client, table) = dynamo_store().await;
    let app = coordinator_app(&[], store).await;
    let events = run_as(
        &app,
        ALICE,
        &body("t-sub-1", "r1", "[subagents] research the moon", true),
    )
    .await;
    let started = of_type(&events, "SUBAGENT_STARTED")[0];
    let sa = started["subagentRunId"].as_str().unwrap();
    assert_eq!(started["name"], "researcher");
    assert_eq!(started["description"], "Finds facts.");
    assert_eq!(started["parentToolCallId"], "call_sa_moon");
    let researched = of_type(&events, "TEXT_MESSAGE_CONTENT")
        .into_iter()
        .filter(|event| event["subagentRunId"] == sa)
        .map(|event| event["delta"].as_str().unwrap())
        .collect::<String>();
    assert_eq!(researched, "The moon is about 384,400 km away.");
    let finished = of_type(&events, "SUBAGENT_FINISHED")[0];
    assert_eq!(finished["result"], "The moon is about 384,400 km away.");
    // The parent's usage holds the child's tokens; the child's own are in its metadata.
    let usage = &events.last().unwrap()["usage"][0];
    assert_eq!(usage["inputTokens"], 20 + 60 + 30);
    assert_eq!(usage["outputTokens"], 10 + 18 + 9);
    assert_eq!(
        finished["metadata"]["agui-lambda"]["usage"][0]["inputTokens"],
        30
    );

    let child = child_of(&app, ALICE, "t-sub-1", "call_sa_moon").await;
    let page = call(&app, ALICE, "GET", &format!("/threads/{child}"), None).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let page = page.json();
    assert_eq!(
        page["parent"],
        json!({"threadId": "t-sub-1", "runId": "r1", "toolCallId": "call_sa_moon", "agent": "researcher"})
    );
    let said: Vec<&str> = page["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        said,
        [
            "[researcher] find a moon fact",
            "The moon is about 384,400 km away."
        ]
    );
    let bobs = call(&app, BOB, "GET", &format!("/threads/{child}"), None).await;
    assert_eq!(bobs.status, 404, "{}", bobs.body);
    let days = call(&app, ALICE, "GET", "/usage", None).await.json();
    assert_eq!(days["totals"]["runs"], 2, "{days}");
    assert_eq!(days["totals"]["inputTokens"], 110, "{days}");

    let deleted = call(&app, ALICE, "DELETE", "/threads/t-sub-1", None).await;
    assert!(deleted.status < 300, "{}", deleted.body);
    let gone = call(&app, ALICE, "GET", &format!("/threads/{child}"), None).await;
    assert_eq!(gone.status, 404);
    let left = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk")
        .expression_attribute_values(
            ":pk",
            aws_sdk_dynamodb::types::AttributeValue::S(format!("THREAD#{child}")),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(left.count(), 0, "nothing of the child's thread is left");
}

#[tokio::test]
async fn a_grandchild_names_its_parent_and_goes_with_the_grandparent() {
    let (store, _, _) = dynamo_store().await;
    let app = coordinator_app(&[], store).await;
    let events = run_as(
        &app,
        ALICE,
        &body("t-sub-deep", "r1", "[subagents] go deep", true),
    )
    .await;
    let started = of_type(&events, "SUBAGENT_STARTED");
    assert_eq!(started.len(), 2);
    let (child, grandchild) = (started[0], started[1]);
    assert_eq!(grandchild["name"], "factchecker");
    assert_eq!(grandchild["parentSubagentRunId"], child["subagentRunId"]);
    let child_id = child["subagentRunId"].as_str().unwrap();
    assert!(
        grandchild["parentToolCallId"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{child_id}:"))
    );
    let checked: String = of_type(&events, "TEXT_MESSAGE_CONTENT")
        .into_iter()
        .filter(|event| event["subagentRunId"] == grandchild["subagentRunId"])
        .map(|event| event["delta"].as_str().unwrap())
        .collect();
    assert_eq!(checked, "Yes, the moon is far.");
    let child_thread = child_of(&app, ALICE, "t-sub-deep", "call_sa_deep").await;
    let grandchild_thread = child_of(&app, ALICE, &child_thread, "call_sa_check").await;
    let page = call(
        &app,
        ALICE,
        "GET",
        &format!("/threads/{grandchild_thread}"),
        None,
    )
    .await
    .json();
    assert_eq!(page["parent"]["threadId"], child_thread.as_str());
    assert!(
        call(&app, ALICE, "DELETE", "/threads/t-sub-deep", None)
            .await
            .status
            < 300
    );
    for thread in [child_thread, grandchild_thread] {
        let gone = call(&app, ALICE, "GET", &format!("/threads/{thread}"), None).await;
        assert_eq!(gone.status, 404);
    }
}

/// A streamed response read as it arrives.
struct Stream {
    frames: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl Stream {
    fn new(response: reqwest::Response) -> Self {
        Self {
            frames: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    /// Events until (and with) the first for which `until` holds, or the end.
    async fn until(&mut self, until: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                for event in parse_sse(&frame).unwrap() {
                    let done = until(&event);
                    events.push(event);
                    if done {
                        return events;
                    }
                }
            }
            match self.frames.next().await {
                Some(chunk) => self
                    .buffer
                    .push_str(&String::from_utf8_lossy(&chunk.unwrap())),
                None => return events,
            }
        }
    }
}

#[tokio::test]
async fn cancelling_the_parent_cancels_its_child_and_closes_it_before_the_run_ends() {
    let store: Arc<dyn ThreadStore> = Arc::new(MemoryStore::new());
    let app = coordinator_app(&[], store).await;
    let response = app
        .http
        .post(app.url("/agent"))
        .bearer_auth(ALICE)
        .json(&body("t-sub-cancel", "r1", "[subagents] slow child", true))
        .send()
        .await
        .unwrap();
    let mut stream = Stream::new(response);
    let mut events = stream
        .until(|event| {
            event["type"] == "TEXT_MESSAGE_CONTENT" && event.get("subagentRunId").is_some()
        })
        .await;
    let cancel = call(
        &app,
        ALICE,
        "POST",
        "/threads/t-sub-cancel/runs/r1/cancel",
        Some(json!({})),
    )
    .await;
    assert_eq!(cancel.status, 202, "{}", cancel.body);
    events.extend(stream.until(|_| false).await);
    verify_run(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    let error = of_type(&events, "SUBAGENT_ERROR")[0];
    assert_eq!(error["code"], "CANCELLED");
    assert_eq!(events.last().unwrap()["outcome"]["type"], "cancelled");
    // The child's own run stopped too: its thread is idle, its answer cut short.
    let child = child_of(&app, ALICE, "t-sub-cancel", "call_sa_slow").await;
    let page = call(&app, ALICE, "GET", &format!("/threads/{child}"), None)
        .await
        .json();
    assert!(page["activeRunId"].is_null(), "{page}");
    let answer = page["messages"][1]["content"].as_str().unwrap_or_default();
    assert!(
        answer.len() < "One, two, three, four, five, six, seven, eight, nine, ten.".len(),
        "{page}"
    );
    let parent = call(&app, ALICE, "GET", "/threads/t-sub-cancel", None)
        .await
        .json();
    assert!(parent["activeRunId"].is_null());
}

#[tokio::test]
async fn a_child_that_fails_gives_its_error_and_the_coordinator_answers_anyway() {
    let app = coordinator_app(&[], Arc::new(MemoryStore::new())).await;
    let events = run_as(
        &app,
        ALICE,
        &body("t-sub-fail", "r1", "[subagents] this will fail", true),
    )
    .await;
    let error = of_type(&events, "SUBAGENT_ERROR")[0];
    assert_eq!(
        error["code"], "MODEL_UNAVAILABLE",
        "the researcher's model answered 500"
    );
    let result = of_type(&events, "TOOL_CALL_RESULT")[0];
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: the researcher agent failed")
    );
    assert!(
        of_type(&events, "TEXT_MESSAGE_CONTENT")
            .iter()
            .any(|event| event.get("subagentRunId").is_none())
    );
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test]
async fn inline_children_are_plain_events_and_what_a_client_sends_back_of_them_stays_theirs() {
    let app = coordinator_app(&[], Arc::new(MemoryStore::new())).await;
    // No protocolVersion: `auto` is inline.
    let first = run_as(
        &app,
        ALICE,
        &body("t-sub-inline", "r1", "[subagents] research the moon", false),
    )
    .await;
    assert!(first.iter().all(|event| {
        !event["type"].as_str().unwrap().starts_with("SUBAGENT_")
            && event.get("subagentRunId").is_none()
    }));
    let child_text = of_type(&first, "TEXT_MESSAGE_START")
        .into_iter()
        .find(|event| event["messageId"].as_str().unwrap().starts_with("sa-"))
        .unwrap();
    // A full-history client resends everything it was shown, the child's answer included.
    let mut resent = vec![
        json!({"id": "r1-m1", "role": "user", "content": "[subagents] research the moon"}),
        json!({"id": child_text["messageId"], "role": "assistant", "content": "The moon is about 384,400 km away."}),
        json!({"id": "r2-m1", "role": "user", "content": "[subagents] two at once"}),
    ];
    let mut second = body("t-sub-inline", "r2", "", false);
    second["messages"] = Value::Array(std::mem::take(&mut resent));
    run_as(&app, ALICE, &second).await;
    let asked = app.fixture_requests_about("[subagents] two at once");
    assert!(!asked.is_empty());
    for request in asked {
        assert!(
            !request.messages.iter().any(|message| matches!(message,
                Message::Assistant { id, .. } if id.as_str().starts_with("sa-"))),
            "the coordinator's model never sees the child's messages as its own"
        );
    }
    let thread = call(&app, ALICE, "GET", "/threads/t-sub-inline", None)
        .await
        .json();
    assert!(
        thread["messages"]
            .as_array()
            .unwrap()
            .iter()
            .all(|message| { !message["id"].as_str().unwrap().starts_with("sa-") })
    );
}

#[tokio::test]
async fn hidden_children_show_only_the_delegating_call_and_its_result() {
    let app = coordinator_app(
        &[("SUBAGENT_VISIBILITY", "hidden")],
        Arc::new(MemoryStore::new()),
    )
    .await;
    let events = run_as(
        &app,
        ALICE,
        &body("t-sub-hidden", "r1", "[subagents] research the moon", true),
    )
    .await;
    assert!(of_type(&events, "SUBAGENT_STARTED").is_empty());
    assert!(
        !events
            .iter()
            .any(|event| event["delta"] == "The moon is about 384,400 km away.")
    );
    let result = of_type(&events, "TOOL_CALL_RESULT")[0];
    assert_eq!(result["content"], "The moon is about 384,400 km away.");
}

#[tokio::test]
async fn a_0_0_x_client_approves_a_child_s_call_through_its_confirm_tool() {
    let app = coordinator_app(
        &[("SUBAGENT_VISIBILITY", "attributed")],
        Arc::new(MemoryStore::new()),
    )
    .await;
    let confirm = json!({"name": "confirmAction", "description": "Ask the user", "parameters": {"type": "object", "properties": {"action": {"type": "string"}}}});
    let mut first = body("t-sub-confirm", "r1", "[subagents] ask the time", false);
    first["tools"] = json!([confirm]);
    let events = run_as(&app, ALICE, &first).await;
    let ask = of_type(&events, "TOOL_CALL_START")
        .into_iter()
        .find(|event| event["toolCallName"] == "confirmAction")
        .unwrap_or_else(|| panic!("{events:#?}"));
    let ask_id = ask["toolCallId"].as_str().unwrap().to_owned();
    assert!(ask_id.starts_with("sa-"));
    assert_eq!(
        of_type(&events, "SUBAGENT_FINISHED")[0]["outcome"]["type"],
        "suspended"
    );
    assert!(
        events.last().unwrap().get("outcome").is_none(),
        "0.0.x: no outcome"
    );
    // The client answers its frontend tool: the answer reaches the child, which goes on.
    let mut second = body("t-sub-confirm", "r2", "", false);
    second["tools"] = json!([confirm]);
    second["messages"] =
        json!([{"id": "answer-1", "role": "tool", "toolCallId": ask_id, "content": "confirmed"}]);
    let events = run_as(&app, ALICE, &second).await;
    let time = of_type(&events, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|event| event["content"].as_str().unwrap().contains("iso"))
        .unwrap_or_else(|| panic!("the child ran its tool: {events:#?}"));
    assert!(time["subagentRunId"].is_string());
    let answered = of_type(&events, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|event| event["toolCallId"] == "call_sa_time")
        .unwrap();
    assert_eq!(answered["content"], "It is now the time shown in Paris.");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test]
async fn a_remote_ag_ui_agent_is_a_child_too() {
    // The remote agent: another app of ours, serving its default agent.
    let remote = spawn_app().await;
    let profiles = json!({
        "coordinator": {"subagents": [{
            "name": "remote_researcher",
            "description": "A researcher elsewhere.",
            "url": remote.url("/agent"),
            "cancelUrl": remote.url("/threads/{threadId}/runs/{runId}/cancel"),
            "timeoutMs": 30000
        }]}
    })
    .to_string();
    let keys = keys();
    let app = spawn_app_on(
        &[
            ("AUTH_MODE", "api-key"),
            ("API_KEYS", keys.as_str()),
            ("AGENT_PROFILES", profiles.as_str()),
            ("AGENT_DEFAULT_PROFILE", "coordinator"),
        ],
        Some(Arc::new(MemoryStore::new())),
    )
    .await;
    let events = run_as(
        &app,
        ALICE,
        &body(
            "t-sub-remote",
            "r1",
            "[subagents] ask the remote agent",
            true,
        ),
    )
    .await;
    let sa = of_type(&events, "SUBAGENT_STARTED")[0]["subagentRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer: String = of_type(&events, "TEXT_MESSAGE_CONTENT")
        .into_iter()
        .filter(|event| event["subagentRunId"] == sa.as_str())
        .map(|event| event["delta"].as_str().unwrap())
        .collect();
    assert_eq!(answer, "Paris is the capital of France.");
    let result = of_type(&events, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|event| event["toolCallId"] == "call_sa_remote")
        .unwrap();
    assert_eq!(result["content"], "Paris is the capital of France.");
    // The remote agent keeps the thread the link names.
    let child = child_of(&app, ALICE, "t-sub-remote", "call_sa_remote").await;
    let kept = remote.get(&format!("/threads/{child}")).await;
    assert_eq!(kept.status, 200, "{}", kept.body);
    assert_eq!(
        kept.json()["messages"][1]["content"],
        "Paris is the capital of France."
    );
}

/// A run's start that a crashed process began: its lease lapses in 1.5 s.
fn dead_start<'a>(
    owner: &'a Principal,
    thread_id: &'a ThreadId,
    run_id: &'a RunId,
    messages: &'a [Message],
) -> RunStart<'a> {
    let now = chrono::Utc::now().timestamp_millis();
    RunStart {
        owner,
        thread_id,
        run_id,
        loaded: None,
        lease_expires_at_ms: now + 1_500,
        new_messages: messages,
        state: None,
        title: None,
        at_ms: now,
        copied_at_ms: &[],
    }
}

#[tokio::test]
async fn a_crash_mid_child_frees_both_threads_within_their_lease_and_deleting_cleans_up() {
    let (store, _, _) = dynamo_store().await;
    let owner = Principal::new("alice");
    let said = [Message::User {
        id: MessageId::parse("m1", 128).unwrap(),
        content: UserContent::Text("[subagents] research the moon".into()),
        name: None,
    }];
    // A parent run and its child's run that a crashed process left holding their leases.
    let parent = ThreadId::parse("t-sub-crash", 128).unwrap();
    let parent_run = RunId::parse("r-dead", 128).unwrap();
    let lease = store
        .begin_run(dead_start(&owner, &parent, &parent_run, &said))
        .await
        .unwrap();
    let (child, child_run) = (
        ThreadId::new_uuid(),
        RunId::parse("r-dead-child", 128).unwrap(),
    );
    let link = ThreadLink {
        thread_id: parent.clone(),
        created_at_ms: lease.created_at_ms,
        run_id: parent_run.clone(),
        tool_call_id: agui_lambda::testing::protocol::ToolCallId::parse("call_x", 128).unwrap(),
        agent: "researcher".into(),
    };
    store
        .begin_linked_run(dead_start(&owner, &child, &child_run, &said), &link, None)
        .await
        .unwrap();
    // A link to a thread that is not there, or not the owner's, is refused.
    let nowhere = ThreadLink {
        thread_id: ThreadId::parse("t-nowhere", 128).unwrap(),
        ..link.clone()
    };
    let orphan = ThreadId::new_uuid();
    assert!(
        store
            .begin_linked_run(
                dead_start(&owner, &orphan, &child_run, &said),
                &nowhere,
                None,
            )
            .await
            .is_err()
    );
    let mallory = Principal::new("mallory");
    assert!(
        store
            .begin_linked_run(
                dead_start(&mallory, &orphan, &child_run, &said),
                &link,
                None,
            )
            .await
            .is_err()
    );
    let app = coordinator_app(&[], store.clone()).await;
    tokio::time::sleep(Duration::from_millis(1_600)).await;
    // Once the leases lapse, the parent's thread runs again as any thread does.
    let events = run_as(
        &app,
        ALICE,
        &body("t-sub-crash", "r2", "[subagents] research the moon", true),
    )
    .await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert!(
        call(&app, ALICE, "DELETE", "/threads/t-sub-crash", None)
            .await
            .status
            < 300
    );
    assert!(
        store.load(&owner, &child).await.unwrap().is_none(),
        "the crashed child went with it"
    );
}

#[tokio::test]
async fn capabilities_list_the_sub_agents_and_their_names_are_reserved() {
    let app = coordinator_app(&[], Arc::new(MemoryStore::new())).await;
    let capabilities = call(&app, ALICE, "GET", "/capabilities", None).await.json();
    assert_eq!(
        capabilities["multiAgent"],
        json!({"supported": true, "delegation": true, "handoffs": false,
               "subagents": [{"name": "researcher", "description": "Finds facts."}]})
    );
    // A frontend tool may not take a sub-agent's name: the model could not tell them apart.
    let mut clash = body("t-sub-clash", "r1", "hello", true);
    clash["tools"] =
        json!([{"name": "researcher", "description": "mine", "parameters": {"type": "object"}}]);
    let refused = call(&app, ALICE, "POST", "/agent", Some(clash)).await;
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.body.contains("researcher"), "{}", refused.body);
}

#[tokio::test]
async fn a_sub_agent_named_like_one_of_its_profile_s_tools_stops_start_up() {
    let vars = [(
        "AGENT_PROFILES".to_owned(),
        r#"{"a": {"subagents": [{"profile": "b", "name": "get_current_time"}]}, "b": {}}"#
            .to_owned(),
    )]
    .into_iter()
    .collect();
    let config = agui_lambda::testing::config::Config::from_map(&vars).unwrap();
    let model: Arc<dyn agui_lambda::testing::model::ModelProvider> =
        Arc::new(agui_lambda::testing::model::scripted::ScriptedModel::default());
    let built = agui_lambda::testing::startup::AppBuilder::new(&config)
        .model(model)
        .store(Arc::new(MemoryStore::new()))
        .tools(agui_lambda::tools::ToolRegistry::with_builtins().unwrap())
        .build()
        .await;
    let error = built.err().unwrap().to_string();
    assert_eq!(
        error,
        "AGENT_PROFILES: profile a: sub-agent get_current_time has the name of one of its server tools"
    );
}
