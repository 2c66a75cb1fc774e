use super::*;
use crate::agent::{Agent, AgentSettings, StartError, ToolRegistry};
use crate::auth::Principal;
use crate::model::scripted::{ScriptedModel, ScriptedTurn};
use crate::model::{FinishReason, ModelDelta, ModelError};
use crate::protocol::ToolCall;
use crate::protocol::input::BusyThreadPolicy;
use crate::protocol::input::{ForwardedProps, RunInput};
use crate::protocol::{ClientTool, MessageId, RunId, ThreadId, UserContent};
use crate::store::{History, HistoryQuery, MemoryStore, Threads};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

struct Harness {
    model: ScriptedModel,
    store: Arc<MemoryStore>,
    agent: Agent,
}

fn harness(turns: Vec<ScriptedTurn>, emit_steps: bool) -> Harness {
    let model = ScriptedModel::new(turns);
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::new(
        Arc::new(model.clone()),
        Arc::new(ToolRegistry::with_builtins().unwrap()),
        store.clone(),
        AgentSettings {
            system_prompt: Some("Be brief.".into()),
            max_steps: 3,
            emit_steps,
            busy_thread_policy: BusyThreadPolicy::Reject,
            ..AgentSettings::default()
        },
    );
    Harness {
        model,
        store,
        agent,
    }
}

fn user(id: &str, text: &str) -> Message {
    Message::User {
        id: MessageId::parse(id, 128).unwrap(),
        content: UserContent::Text(text.into()),
        name: None,
    }
}

fn input(thread: &str, run: &str, messages: Vec<Message>, tools: &[&str]) -> RunInput {
    RunInput {
        thread_id: Some(ThreadId::parse(thread, 128).unwrap()),
        run_id: RunId::parse(run, 128).unwrap(),
        parent_run_id: None,
        state: None,
        messages,
        tools: tools
            .iter()
            .map(|name| ClientTool {
                name: (*name).into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .collect(),
        context: vec![],
        forwarded_props: ForwardedProps::default(),
        protocol_version: None,
        resume: Vec::new(),
        new_message_limits: None,
        skipped_parts: Vec::new(),
        skips_unusable_parts: false,
    }
}

async fn run(h: &Harness, input: RunInput) -> Vec<Value> {
    let prepared = h
        .agent
        .start(
            Principal::anonymous(),
            input,
            Instant::now() + Duration::from_secs(30),
        )
        .await
        .unwrap();
    let events: Vec<Event> = prepared.into_events().collect().await;
    let values: Vec<Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    crate::protocol::verify::verify_run(&values).unwrap_or_else(|err| panic!("{err}: {values:#?}"));
    values
}

/// Event types with ids left out, to compare against the protocol document's transcripts.
fn shape(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|event| {
            let mut fields: Vec<String> = event
                .as_object()
                .unwrap()
                .iter()
                .filter(|(key, _)| {
                    ![
                        "messageId",
                        "toolCallId",
                        "parentMessageId",
                        "threadId",
                        "runId",
                        "timestamp",
                    ]
                    .contains(&key.as_str())
                })
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            fields.sort();
            fields.join(" ")
        })
        .collect()
}

#[tokio::test]
async fn plain_chat_streams_one_text_message_between_run_started_and_run_finished() {
    let h = harness(
        vec![ScriptedTurn::Stream(vec![
            ModelDelta::Text("你好".into()),
            ModelDelta::Text("!有什么可以帮你的吗?".into()),
            ModelDelta::Finish(FinishReason::Stop),
        ])],
        false,
    );
    let events = run(
        &h,
        input("thread_001", "run_001", vec![user("msg_1", "你好")], &[]),
    )
    .await;
    assert_eq!(
        shape(&events),
        [
            "protocolVersion=\"1.1\" type=\"RUN_STARTED\"",
            "role=\"assistant\" type=\"TEXT_MESSAGE_START\"",
            "delta=\"你好\" type=\"TEXT_MESSAGE_CONTENT\"",
            "delta=\"!有什么可以帮你的吗?\" type=\"TEXT_MESSAGE_CONTENT\"",
            "type=\"TEXT_MESSAGE_END\"",
            "type=\"RUN_FINISHED\"",
        ]
    );
    assert_eq!(events[0]["threadId"], "thread_001");
    assert_eq!(events[5]["runId"], "run_001");
    let sent = h.model.requests();
    assert_eq!(sent[0].system.as_deref(), Some("Be brief."));
    assert_eq!(sent[0].messages.len(), 1);
}

#[tokio::test]
async fn frontend_tool_call_ends_the_run_and_its_result_continues_the_thread() {
    let h = harness(
        vec![
            ScriptedTurn::tool_calls(
                None,
                &[("call_002", "search_local_files", r#"{"keyword":"报告"}"#)],
            ),
            ScriptedTurn::text("找到了 2 个文件"),
        ],
        false,
    );
    let first = run(
        &h,
        input(
            "thread_003",
            "run_003",
            vec![user("msg_1", "帮我搜索本地的报告文件")],
            &["search_local_files"],
        ),
    )
    .await;
    assert_eq!(
        shape(&first),
        [
            "protocolVersion=\"1.1\" type=\"RUN_STARTED\"",
            "toolCallName=\"search_local_files\" type=\"TOOL_CALL_START\"",
            "delta=\"{\\\"keyword\\\":\\\"报告\\\"}\" type=\"TOOL_CALL_ARGS\"",
            "type=\"TOOL_CALL_END\"",
            "type=\"RUN_FINISHED\"",
        ]
    );
    assert_eq!(first[1]["toolCallId"], "call_002");
    let parent = first[1]["parentMessageId"].as_str().unwrap().to_owned();

    // The client sends the whole history back with the tool result.
    let assistant = Message::Assistant {
        id: MessageId::parse(parent, 128).unwrap(),
        content: None,
        tool_calls: vec![ToolCall::new(
            ToolCallId::parse("call_002", 128).unwrap(),
            "search_local_files".into(),
            r#"{"keyword":"报告"}"#.into(),
        )],
        name: None,
        encrypted_value: None,
    };
    let result = Message::Tool {
        id: MessageId::parse("msg_3", 128).unwrap(),
        tool_call_id: ToolCallId::parse("call_002", 128).unwrap(),
        content: r#"["2024年度报告.pdf"]"#.into(),
        error: None,
        metadata: None,
    };
    let second = run(
        &h,
        input(
            "thread_003",
            "run_004",
            vec![user("msg_1", "帮我搜索本地的报告文件"), assistant, result],
            &["search_local_files"],
        ),
    )
    .await;
    assert_eq!(
        shape(&second),
        [
            "protocolVersion=\"1.1\" type=\"RUN_STARTED\"",
            "role=\"assistant\" type=\"TEXT_MESSAGE_START\"",
            "delta=\"找到了 2 个文件\" type=\"TEXT_MESSAGE_CONTENT\"",
            "type=\"TEXT_MESSAGE_END\"",
            "type=\"RUN_FINISHED\"",
        ]
    );
    let sent = h.model.requests();
    assert_eq!(
        sent[1].messages.len(),
        3,
        "the model sees user, assistant tool call, tool result once each"
    );
}

#[tokio::test]
async fn server_tool_result_is_streamed_and_fed_back_within_steps() {
    let h = harness(
        vec![
            ScriptedTurn::tool_calls(
                Some("让我查一下"),
                &[(
                    "call_001",
                    "get_current_time",
                    r#"{"timezone":"Asia/Shanghai"}"#,
                )],
            ),
            ScriptedTurn::text("北京现在是晚上。"),
        ],
        true,
    );
    let events = run(
        &h,
        input(
            "thread_002",
            "run_002",
            vec![user("msg_1", "北京几点了?")],
            &[],
        ),
    )
    .await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "RUN_STARTED",
            "STEP_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "STEP_FINISHED",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "STEP_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "RUN_FINISHED",
        ]
    );
    assert_eq!(
        events[5]["parentMessageId"], events[2]["messageId"],
        "the call hangs off this turn's text message"
    );
    assert_ne!(
        events[2]["messageId"], events[11]["messageId"],
        "each turn has a fresh message id"
    );
    let result: Value = serde_json::from_str(events[9]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["timezone"], "Asia/Shanghai");
    assert_eq!(events[9]["role"], "tool");

    let history = h
        .store
        .history(HistoryQuery {
            owner: &Principal::anonymous(),
            thread_id: &ThreadId::parse("thread_002", 128).unwrap(),
            after: None,
            limit: 100,
        })
        .await
        .unwrap();
    let roles: Vec<_> = history.messages.iter().map(|m| m.role()).collect();
    use crate::protocol::message::Role::*;
    assert_eq!(roles, [User, Assistant, Tool, Assistant]);
}

#[tokio::test]
async fn mixed_server_and_frontend_calls_run_the_server_ones_then_stop() {
    let h = harness(
        vec![ScriptedTurn::tool_calls(
            None,
            &[
                ("c1", "get_current_time", "{}"),
                ("c2", "confirmAction", r#"{"action":"x"}"#),
            ],
        )],
        false,
    );
    let events = run(
        &h,
        input("t", "r", vec![user("u", "do both")], &["confirmAction"]),
    )
    .await;
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["toolCallId"], "c1");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(
        h.model.requests().len(),
        1,
        "no second model turn at the frontend boundary"
    );
}

#[tokio::test]
async fn an_unknown_tool_goes_back_to_the_model_as_an_error() {
    let h = harness(
        vec![
            ScriptedTurn::tool_calls(None, &[("c1", "launch_rockets", "{}")]),
            ScriptedTurn::text("Sorry."),
        ],
        false,
    );
    let events = run(&h, input("t", "r", vec![user("u", "go")], &[])).await;
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap();
    assert!(result["content"].as_str().unwrap().contains("unknown tool"));
    let second = &h.model.requests()[1];
    assert!(matches!(
        second.messages.last(),
        Some(Message::Tool { error: Some(_), .. })
    ));
}

#[tokio::test]
async fn the_step_bound_ends_the_run_with_max_steps_exceeded() {
    let turns = (0..3)
        .map(|i| ScriptedTurn::tool_calls(None, &[(&format!("c{i}"), "get_current_time", "{}")]))
        .collect();
    let h = harness(turns, true);
    let events = run(&h, input("t", "r", vec![user("u", "loop")], &[])).await;
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "MAX_STEPS_EXCEEDED");
}

#[tokio::test]
async fn a_model_failure_mid_stream_is_run_error_and_keeps_the_users_message() {
    let h = harness(
        vec![ScriptedTurn::StreamThenFail(
            vec![ModelDelta::Text("partial".into())],
            ModelError::Stream,
        )],
        false,
    );
    let events = run(&h, input("t", "r", vec![user("u", "hi")], &[])).await;
    assert_eq!(events.last().unwrap()["code"], "MODEL_ERROR");
    let history = h
        .store
        .history(HistoryQuery {
            owner: &Principal::anonymous(),
            thread_id: &ThreadId::parse("t", 128).unwrap(),
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    assert_eq!(
        history.messages.len(),
        1,
        "the user's message is stored; the broken turn is not"
    );
}

#[tokio::test(start_paused = true)]
async fn the_deadline_ends_a_slow_model_with_timeout() {
    let h = harness(
        vec![ScriptedTurn::Delay(
            Duration::from_secs(600),
            vec![ModelDelta::Text("late".into())],
        )],
        false,
    );
    let prepared = h
        .agent
        .start(
            Principal::anonymous(),
            input("t", "r", vec![user("u", "hi")], &[]),
            Instant::now() + Duration::from_secs(5),
        )
        .await
        .unwrap();
    let events: Vec<Event> = prepared.into_events().collect().await;
    assert!(matches!(
        events.last(),
        Some(Event::RunError {
            code: RunErrorCode::Timeout,
            ..
        })
    ));
    // The lease was released: the next run starts.
    h.model.push(ScriptedTurn::text("ok"));
    let next = run(&h, input("t", "r2", vec![user("u2", "again")], &[])).await;
    assert_eq!(next.last().unwrap()["type"], "RUN_FINISHED");
}

#[tokio::test]
async fn a_second_run_on_a_busy_thread_is_refused_and_changes_nothing() {
    let h = harness(vec![ScriptedTurn::text("one")], false);
    let deadline = Instant::now() + Duration::from_secs(30);
    let first = h
        .agent
        .start(
            Principal::anonymous(),
            input("t", "r1", vec![user("u1", "a")], &[]),
            deadline,
        )
        .await
        .unwrap();
    let second = h
        .agent
        .start(
            Principal::anonymous(),
            input("t", "r2", vec![user("u2", "b")], &[]),
            deadline,
        )
        .await;
    assert!(matches!(second, Err(StartError::Busy)));
    let _: Vec<Event> = first.into_events().collect().await;
    let history = h
        .store
        .history(HistoryQuery {
            owner: &Principal::anonymous(),
            thread_id: &ThreadId::parse("t", 128).unwrap(),
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    let ids: Vec<&str> = history.messages.iter().map(|m| m.id().as_str()).collect();
    assert_eq!(ids.len(), 2);
    assert!(!ids.contains(&"u2"));
}

#[tokio::test]
async fn an_incremental_client_gets_the_state_snapshot_but_not_the_thread() {
    let h = harness(
        vec![ScriptedTurn::text("first"), ScriptedTurn::text("second")],
        false,
    );
    run(&h, input("t", "r1", vec![user("u1", "a")], &[])).await;
    let mut next = input("t", "r2", vec![user("u2", "b")], &[]);
    next.state = Some(json!({"count": 1}));
    let events = run(&h, next).await;
    assert_eq!(events[1]["type"], "STATE_SNAPSHOT");
    assert_eq!(events[1]["snapshot"], json!({"count": 1}));
    assert!(
        events
            .iter()
            .all(|event| event["type"] != "MESSAGES_SNAPSHOT")
    );
    assert_eq!(
        h.model.requests()[1].messages.len(),
        3,
        "the model reads it all"
    );
}

#[tokio::test]
async fn a_client_holding_a_stale_part_of_the_thread_gets_a_messages_snapshot() {
    let h = harness(
        vec![ScriptedTurn::text("first"), ScriptedTurn::text("second")],
        false,
    );
    run(&h, input("t", "r1", vec![user("u1", "a")], &[])).await;
    // It holds u1 but not the answer that followed.
    let events = run(
        &h,
        input("t", "r2", vec![user("u1", "a"), user("u2", "b")], &[]),
    )
    .await;
    assert_eq!(events[1]["type"], "MESSAGES_SNAPSHOT");
    assert_eq!(events[1]["messages"].as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn a_tool_result_for_an_unknown_call_is_refused_before_streaming() {
    let h = harness(vec![], false);
    let stray = Message::Tool {
        id: MessageId::parse("t1", 128).unwrap(),
        tool_call_id: ToolCallId::parse("nope", 128).unwrap(),
        content: "x".into(),
        error: None,
        metadata: None,
    };
    let result = h
        .agent
        .start(
            Principal::anonymous(),
            input("t", "r", vec![user("u", "a"), stray], &[]),
            Instant::now() + Duration::from_secs(5),
        )
        .await;
    assert!(matches!(result, Err(StartError::Merge(_))));
    assert!(
        h.store
            .load(&Principal::anonymous(), &ThreadId::parse("t", 128).unwrap())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn reasoning_streams_as_a_closed_block_before_the_text() {
    let h = harness(
        vec![ScriptedTurn::Stream(vec![
            ModelDelta::Reasoning("think".into()),
            ModelDelta::Text("answer".into()),
            ModelDelta::Finish(FinishReason::Stop),
        ])],
        false,
    );
    let events = run(&h, input("t", "r", vec![user("u", "q")], &[])).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "RUN_STARTED",
            "REASONING_START",
            "REASONING_MESSAGE_START",
            "REASONING_MESSAGE_CONTENT",
            "REASONING_MESSAGE_END",
            "REASONING_END",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
}

#[tokio::test]
async fn repeated_provider_call_ids_are_replaced_with_unique_ones() {
    let h = harness(
        vec![
            ScriptedTurn::tool_calls(None, &[("call_0", "get_current_time", "{}")]),
            ScriptedTurn::tool_calls(None, &[("call_0", "get_current_time", "{}")]),
            ScriptedTurn::text("done"),
        ],
        false,
    );
    let events = run(&h, input("t", "r", vec![user("u", "twice")], &[])).await;
    let ids: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| e["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1]);
}

#[path = "run_tools_tests.rs"]
mod tools;
