//! AG-UI 1.0 on the wire: tool approvals as interrupts (and the confirm-tool fallback for 0.0.x
//! clients), `pendingToolCallIds`, usage on the terminal events, `protocolVersion`, and
//! `GET /capabilities`. In-process fixture model, in-memory store.

use crate::helpers::*;
use serde_json::{Value, json};

const GATED: &[(&str, &str)] = &[("APPROVAL_REQUIRED_TOOLS", "get_current_time")];

fn v1_input(thread: &str, run: &str, messages: Value) -> Value {
    let mut input = run_input(thread, run, messages);
    input["protocolVersion"] = json!("1.0");
    input
}

fn ask_time() -> Value {
    json!({"id": "u1", "role": "user", "content": "what time is it"})
}

fn terminal(events: &[Value]) -> &Value {
    events.last().unwrap()
}

fn results(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .collect()
}

/// Run 1 of an approval: the model calls the gated tool and the run ends with an interrupt.
async fn interrupted(app: &TestApp, thread: &str) -> (Vec<Value>, Value) {
    let events = app
        .run(&v1_input(thread, "run_1", json!([ask_time()])))
        .await
        .events();
    let outcome = terminal(&events)["outcome"].clone();
    assert_eq!(outcome["type"], "interrupt", "{outcome}");
    (events, outcome["interrupts"][0].clone())
}

fn resume(thread: &str, run: &str, first: &[Value], answer: Value) -> Value {
    let mut input = v1_input(thread, run, json!([ask_time(), assistant_from(first)]));
    input["resume"] = json!([answer]);
    input
}

#[tokio::test]
async fn an_approval_required_tool_interrupts_the_run_and_runs_once_approved() {
    let app = spawn_app_with(GATED).await;
    let thread = new_thread();
    let (first, interrupt) = interrupted(&app, &thread).await;

    assert_eq!(first[0]["protocolVersion"], "1.0");
    let call_id = first
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap()["toolCallId"]
        .clone();
    assert!(results(&first).is_empty(), "the tool must not run yet");
    assert_eq!(interrupt["reason"], "tool_call");
    assert_eq!(interrupt["toolCallId"], call_id);
    assert!(
        interrupt["message"]
            .as_str()
            .unwrap()
            .contains("get_current_time")
    );
    let schema = &interrupt["responseSchema"];
    assert_eq!(schema["required"], json!(["approved"]));
    assert_eq!(
        schema["properties"]["editedArgs"]["properties"]["timezone"]["type"], "string",
        "edits are described by the tool's own schema"
    );
    let expires =
        chrono::DateTime::parse_from_rfc3339(interrupt["expiresAt"].as_str().unwrap()).unwrap();
    assert!(expires > chrono::Utc::now());

    let second = app
        .run(&resume(
            &thread,
            "run_2",
            &first,
            json!({"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}),
        ))
        .await
        .events();
    let answered = results(&second);
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["toolCallId"], call_id);
    assert!(
        answered[0]["content"]
            .as_str()
            .unwrap()
            .contains("Europe/Paris")
    );
    assert_eq!(text_of(&second), "It is now the time shown in Paris.");
    assert!(terminal(&second).get("outcome").is_none());

    // The thread holds the call and its one result, in order.
    let history = app.get(&format!("/threads/{thread}")).await.json();
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);

    // The same resume again (a retried request) runs nothing twice.
    let calls_before = app.model_requests().await;
    let repeated = app
        .run(&resume(
            &thread,
            "run_3",
            &first,
            json!({"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": true}}),
        ))
        .await
        .events();
    assert!(results(&repeated).is_empty());
    assert_eq!(app.model_requests().await, calls_before);
    assert_eq!(terminal(&repeated)["type"], "RUN_FINISHED");
    let after = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(after["messages"].as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn a_denial_is_told_to_the_model_and_edited_arguments_are_used() {
    let app = spawn_app_with(GATED).await;

    let thread = new_thread();
    let (first, interrupt) = interrupted(&app, &thread).await;
    let denied = app
        .run(&resume(
            &thread,
            "run_2",
            &first,
            json!({"interruptId": interrupt["id"], "status": "resolved",
                   "payload": {"approved": false, "reason": "not now"}}),
        ))
        .await
        .events();
    let result = results(&denied)[0]["content"].as_str().unwrap().to_owned();
    assert!(
        result.contains("denied") && result.contains("not now"),
        "{result}"
    );
    let asked = app.fixture_requests_about("what time is it");
    let told = serde_json::to_value(&asked.last().unwrap().messages).unwrap();
    assert!(
        told.to_string().contains("not now"),
        "the model hears the denial: {told}"
    );

    let thread = new_thread();
    let (first, interrupt) = interrupted(&app, &thread).await;
    let edited = app
        .run(&resume(
            &thread,
            "run_2",
            &first,
            json!({"interruptId": interrupt["id"], "status": "resolved",
                   "payload": {"approved": true, "editedArgs": {"timezone": "Asia/Tokyo"}}}),
        ))
        .await
        .events();
    let content = results(&edited)[0]["content"].as_str().unwrap().to_owned();
    assert!(content.contains("Asia/Tokyo"), "{content}");
}

/// A stream that opens with RUN_ERROR and holds nothing else.
fn refusal(reply: &Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.content_type, "text/event-stream");
    let events = reply.events();
    assert_eq!(types(&events), ["RUN_ERROR"]);
    events[0].clone()
}

#[tokio::test]
async fn inputs_that_break_the_interrupt_rules_get_run_error_and_change_nothing() {
    let app = spawn_app_with(GATED).await;
    let thread = new_thread();
    let (first, interrupt) = interrupted(&app, &thread).await;
    let stored = app.get(&format!("/threads/{thread}")).await.json();

    // A new message that ignores the open interrupt.
    let ignoring = v1_input(
        &thread,
        "run_2",
        json!([ask_time(), assistant_from(&first), {"id": "u2", "role": "user", "content": "hello"}]),
    );
    let error = refusal(&app.run(&ignoring).await);
    assert_eq!(error["code"], "INTERRUPT_PENDING");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(interrupt["id"].as_str().unwrap())
    );

    // An edit that does not fit the tool's schema.
    let bad_edit = resume(
        &thread,
        "run_3",
        &first,
        json!({"interruptId": interrupt["id"], "status": "resolved",
               "payload": {"approved": true, "editedArgs": {"timezone": 7}}}),
    );
    assert_eq!(refusal(&app.run(&bad_edit).await)["code"], "INVALID_RESUME");

    // An interrupt this thread never raised is ignored: the open one is still unanswered.
    let unknown = resume(
        &thread,
        "run_4",
        &first,
        json!({"interruptId": "int-nope", "status": "resolved", "payload": {"approved": true}}),
    );
    assert_eq!(
        refusal(&app.run(&unknown).await)["code"],
        "INTERRUPT_PENDING"
    );

    // A payload that is not an approval at all.
    let no_payload = resume(
        &thread,
        "run_5",
        &first,
        json!({"interruptId": interrupt["id"], "status": "resolved"}),
    );
    assert_eq!(
        refusal(&app.run(&no_payload).await)["code"],
        "INVALID_RESUME"
    );

    assert_eq!(app.get(&format!("/threads/{thread}")).await.json(), stored);

    // Cancelling the interrupt moves the thread on, with the call refused.
    let cancelled = app
        .run(&resume(
            &thread,
            "run_6",
            &first,
            json!({"interruptId": interrupt["id"], "status": "cancelled"}),
        ))
        .await
        .events();
    assert_eq!(results(&cancelled).len(), 1);
    assert_eq!(terminal(&cancelled)["type"], "RUN_FINISHED");
}

#[tokio::test]
async fn a_legacy_client_approves_through_its_confirm_tool() {
    let app = spawn_app_with(GATED).await;
    let thread = new_thread();
    // 0.0.59: no protocolVersion, and it declares `confirmAction` (the AG-UI HTTP Agent document, scenario 4).
    let first = app
        .run(&run_input(&thread, "run_1", json!([ask_time()])))
        .await
        .events();
    // Told the version the server speaks all the same (0.0.59 passes it through).
    assert_eq!(first[0]["protocolVersion"], "1.1");
    assert!(
        terminal(&first).get("outcome").is_none(),
        "0.0.59 rejects outcomes"
    );
    let starts: Vec<&Value> = first
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .collect();
    assert_eq!(starts.len(), 2);
    assert_eq!(starts[1]["toolCallName"], "confirmAction");
    assert_eq!(starts[1]["parentMessageId"], starts[0]["parentMessageId"]);
    let confirm_id = starts[1]["toolCallId"].clone();
    let asked: Value = serde_json::from_str(
        &first
            .iter()
            .filter(|e| e["type"] == "TOOL_CALL_ARGS" && e["toolCallId"] == confirm_id)
            .map(|e| e["delta"].as_str().unwrap())
            .collect::<String>(),
    )
    .unwrap();
    assert!(
        asked["action"]
            .as_str()
            .unwrap()
            .contains("get_current_time")
    );
    // CopilotKit's rule: the last TOOL_CALL_END is followed by RUN_FINISHED.
    assert_eq!(first[first.len() - 2]["type"], "TOOL_CALL_END");
    assert!(results(&first).is_empty());

    let answer = |content: &str, run: &str| {
        run_input(
            &thread,
            run,
            json!([ask_time(), assistant_from(&first),
                   {"id": format!("t-{run}"), "role": "tool", "toolCallId": confirm_id, "content": content}]),
        )
    };
    let second = app.run(&answer("confirmed", "run_2")).await.events();
    let answered = results(&second);
    assert_eq!(answered.len(), 1);
    assert_eq!(answered[0]["toolCallId"], starts[0]["toolCallId"]);
    assert!(
        answered[0]["content"]
            .as_str()
            .unwrap()
            .contains("Europe/Paris")
    );
    assert_eq!(text_of(&second), "It is now the time shown in Paris.");
}

#[tokio::test]
async fn a_legacy_client_that_cannot_confirm_never_runs_the_tool() {
    let app = spawn_app_with(GATED).await;
    let mut input = run_input(&new_thread(), "run_1", json!([ask_time()]));
    input["tools"] = json!([]);
    let events = app.run(&input).await.events();
    let refused = results(&events);
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0]["content"]
            .as_str()
            .unwrap()
            .contains("needs a person's approval")
    );
    assert!(
        !refused[0]["content"]
            .as_str()
            .unwrap()
            .contains("Europe/Paris")
    );
    assert!(text_of(&events).ends_with("It is now the time shown in Paris."));
}

#[tokio::test]
async fn a_run_that_stops_at_frontend_tools_names_them_to_v1_clients_only() {
    let app = spawn_app().await;
    let ask = json!([{"id": "u1", "role": "user", "content": "search my local files"}]);
    let v1 = app
        .run(&v1_input(&new_thread(), "run_1", ask.clone()))
        .await
        .events();
    assert_eq!(
        terminal(&v1)["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["call_search_1"]})
    );
    let legacy = app
        .run(&run_input(&new_thread(), "run_1", ask))
        .await
        .events();
    assert!(terminal(&legacy).get("outcome").is_none());
    // No outcome when nothing is pending.
    let plain = app
        .run(&v1_input(
            &new_thread(),
            "run_1",
            json!([{"id": "u1", "role": "user", "content": "hello"}]),
        ))
        .await
        .events();
    assert!(terminal(&plain).get("outcome").is_none());
}

#[tokio::test]
async fn usage_on_the_terminal_events_is_what_the_model_reported() {
    let app = spawn_app_with(&[("AGENT_MAX_STEPS", "1")]).await;
    let hello = app
        .run(&run_input(
            &new_thread(),
            "run_1",
            json!([{"id": "u1", "role": "user", "content": "hello"}]),
        ))
        .await
        .events();
    assert_eq!(
        terminal(&hello)["usage"],
        json!([{"provider": "openai", "model": "aimock-fixture",
                "inputTokens": 10, "outputTokens": 9, "totalTokens": 19}])
    );
    // A run that fails after a model call still reports what it used.
    let failed = app
        .run(&run_input(&new_thread(), "run_1", json!([ask_time()])))
        .await
        .events();
    let error = terminal(&failed);
    assert_eq!(error["type"], "RUN_ERROR");
    assert_eq!(error["code"], "MAX_STEPS_EXCEEDED");
    let fixture = fixture_usage("what time is it", false);
    assert_eq!(error["usage"][0]["inputTokens"], fixture["prompt_tokens"]);
    assert_eq!(
        error["usage"][0]["outputTokens"],
        fixture["completion_tokens"]
    );
}

/// The usage a fixture of tests/fixtures/aimock-openai.json reports.
fn fixture_usage(user_message: &str, has_tool_result: bool) -> Value {
    let fixtures: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("tests/fixtures/aimock-openai.json")).unwrap(),
    )
    .unwrap();
    fixtures["fixtures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| {
            f["match"]["userMessage"] == user_message
                && f["match"]["hasToolResult"] == json!(has_tool_result)
        })
        .unwrap()["response"]["usage"]
        .clone()
}

#[tokio::test]
async fn capabilities_describe_this_deployment() {
    let app = spawn_app_with(GATED).await;
    let reply = app.get("/capabilities").await;
    assert_eq!(reply.status, 200);
    let capabilities = reply.json();
    assert_eq!(capabilities["transport"]["streaming"], true);
    assert_eq!(capabilities["transport"]["resumable"], true);
    assert_eq!(capabilities["humanInTheLoop"]["interrupts"], true);
    assert_eq!(capabilities["humanInTheLoop"]["approvals"], true);
    let tools = capabilities["tools"]["items"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "get_current_time"));
    assert_eq!(capabilities["tools"]["clientProvided"], true);

    let plain = spawn_app().await.get("/capabilities").await.json();
    assert_eq!(plain["humanInTheLoop"]["approvals"], false);
    assert_eq!(
        spawn_app()
            .await
            .post_raw("/capabilities", "application/json", "{}")
            .await
            .status,
        405
    );
}
