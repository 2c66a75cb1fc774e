//! The run loop with server tools: state, retries, confirmations, the reference stream and
//! tools that may not run in parallel.

use super::*;

/// A server tool that changes the thread's state.
struct Counter;

#[async_trait::async_trait]
impl crate::agent::tools::ServerTool for Counter {
    fn name(&self) -> &str {
        "increment"
    }
    fn description(&self) -> &str {
        "Adds one to the counter"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn call(
        &self,
        _arguments: Value,
        context: &crate::agent::tools::ToolContext,
    ) -> Result<crate::agent::tools::ToolOutput, crate::agent::tools::ToolError> {
        let count = context.state["count"].as_i64().unwrap_or(0);
        let patch: json_patch::Patch = serde_json::from_value(
            json!([{"op": "replace", "path": "/count", "value": count + 1}]),
        )
        .unwrap();
        Ok(crate::agent::tools::ToolOutput {
            content: format!("{}", count + 1),
            state_patch: Some(patch),
        })
    }
}

#[tokio::test]
async fn a_tool_changes_state_with_a_state_delta_that_is_stored() {
    let model = ScriptedModel::new(vec![
        ScriptedTurn::tool_calls(None, &[("c1", "increment", "{}")]),
        ScriptedTurn::text("done"),
    ]);
    let store = Arc::new(MemoryStore::new());
    let mut tools = ToolRegistry::with_builtins().unwrap();
    tools.register(Arc::new(Counter)).unwrap();
    let agent = Agent::new(
        Arc::new(model),
        Arc::new(tools),
        store.clone(),
        AgentSettings {
            emit_steps: false,
            ..AgentSettings::default()
        },
    );
    let h = Harness {
        model: ScriptedModel::default(),
        store: store.clone(),
        agent,
    };
    let mut request = input("t", "r", vec![user("u", "count")], &[]);
    request.state = Some(json!({"count": 41}));
    let events = run(&h, request).await;
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types[1], "STATE_SNAPSHOT");
    let delta = events.iter().find(|e| e["type"] == "STATE_DELTA").unwrap();
    assert_eq!(
        delta["delta"],
        json!([{"op": "replace", "path": "/count", "value": 42}])
    );
    assert!(
        types.iter().position(|t| *t == "STATE_DELTA")
            > types.iter().position(|t| *t == "TOOL_CALL_RESULT")
    );
    let stored = store
        .load(&Principal::anonymous(), &ThreadId::parse("t", 128).unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.state, Some(json!({"count": 42})));
}

#[tokio::test]
async fn a_retried_run_never_stores_the_users_message_twice() {
    let h = harness(
        vec![ScriptedTurn::text("one"), ScriptedTurn::text("two")],
        false,
    );
    run(&h, input("t", "same-run", vec![user("u1", "hi")], &[])).await;
    run(&h, input("t", "same-run", vec![user("u1", "hi")], &[])).await;
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
    let users = history
        .messages
        .iter()
        .filter(|m| m.role() == crate::protocol::message::Role::User)
        .count();
    assert_eq!(users, 1);
}

#[tokio::test]
async fn confirmation_tool_pauses_the_run_until_the_user_answers() {
    let h = harness(
        vec![
            ScriptedTurn::tool_calls(
                Some("即将删除 15 个临时文件"),
                &[(
                    "call_003",
                    "confirmAction",
                    r#"{"action":"删除临时文件","count":15}"#,
                )],
            ),
            ScriptedTurn::text("已删除 15 个临时文件。"),
        ],
        false,
    );
    let first = run(
        &h,
        input(
            "thread_004",
            "run_005",
            vec![user("msg_1", "删除所有临时文件")],
            &["confirmAction"],
        ),
    )
    .await;
    assert_eq!(
        shape(&first),
        [
            "protocolVersion=\"1.1\" type=\"RUN_STARTED\"",
            "role=\"assistant\" type=\"TEXT_MESSAGE_START\"",
            "delta=\"即将删除 15 个临时文件\" type=\"TEXT_MESSAGE_CONTENT\"",
            "type=\"TEXT_MESSAGE_END\"",
            "toolCallName=\"confirmAction\" type=\"TOOL_CALL_START\"",
            "delta=\"{\\\"action\\\":\\\"删除临时文件\\\",\\\"count\\\":15}\" type=\"TOOL_CALL_ARGS\"",
            "type=\"TOOL_CALL_END\"",
            "type=\"RUN_FINISHED\"",
        ]
    );
    assert_eq!(first[4]["parentMessageId"], first[1]["messageId"]);
    let assistant = Message::Assistant {
        id: MessageId::parse(first[1]["messageId"].as_str().unwrap(), 128).unwrap(),
        content: Some("即将删除 15 个临时文件".into()),
        tool_calls: vec![ToolCall::new(
            ToolCallId::parse("call_003", 128).unwrap(),
            "confirmAction".into(),
            r#"{"action":"删除临时文件","count":15}"#.into(),
        )],
        name: None,
        encrypted_value: None,
    };
    let confirmed = Message::Tool {
        id: MessageId::parse("msg_3", 128).unwrap(),
        tool_call_id: ToolCallId::parse("call_003", 128).unwrap(),
        content: "confirmed".into(),
        error: None,
        metadata: None,
    };
    let second = run(
        &h,
        input(
            "thread_004",
            "run_006",
            vec![user("msg_1", "删除所有临时文件"), assistant, confirmed],
            &["confirmAction"],
        ),
    )
    .await;
    assert_eq!(
        shape(&second),
        [
            "protocolVersion=\"1.1\" type=\"RUN_STARTED\"",
            "role=\"assistant\" type=\"TEXT_MESSAGE_START\"",
            "delta=\"已删除 15 个临时文件。\" type=\"TEXT_MESSAGE_CONTENT\"",
            "type=\"TEXT_MESSAGE_END\"",
            "type=\"RUN_FINISHED\"",
        ]
    );
    let sent = h.model.requests();
    assert!(
        matches!(sent[1].messages.last(), Some(Message::Tool { content, .. }) if content == "confirmed")
    );
}

#[tokio::test]
async fn server_tool_run_matches_the_reference_stream_event_for_event() {
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
        false,
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
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
    );
}

/// A tool that notes when its calls start and end, in a log shared by the test.
fn logged_tool(
    name: &'static str,
    parallel: bool,
    log: Arc<std::sync::Mutex<Vec<String>>>,
) -> crate::agent::tools::FnTool {
    crate::agent::tools::ToolBuilder::new(name, "notes its calls")
        .parallel(parallel)
        .handler(move |_: Value, context: crate::agent::tools::ToolContext| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push(format!("start {name}"));
                tokio::time::sleep(Duration::from_millis(20)).await;
                log.lock().unwrap().push(format!("end {name}"));
                Ok(crate::agent::tools::ToolOutput::text(format!(
                    "{name} for {} (cancelled: {})",
                    context.principal.as_str(),
                    context.is_cancelled()
                )))
            }
        })
}

#[tokio::test]
async fn tools_that_may_not_run_in_parallel_run_after_the_others_one_at_a_time() {
    let log = Arc::new(std::sync::Mutex::new(Vec::new()));
    let model = ScriptedModel::new(vec![
        ScriptedTurn::tool_calls(
            None,
            &[
                ("c1", "serial_one", "{}"),
                ("c2", "parallel_a", "{}"),
                ("c3", "serial_two", "{}"),
                ("c4", "parallel_b", "{}"),
            ],
        ),
        ScriptedTurn::text("done"),
    ]);
    let mut tools = ToolRegistry::new();
    for (name, parallel) in [
        ("serial_one", false),
        ("parallel_a", true),
        ("serial_two", false),
        ("parallel_b", true),
    ] {
        tools.add(logged_tool(name, parallel, log.clone())).unwrap();
    }
    let agent = Agent::new(
        Arc::new(model),
        Arc::new(tools),
        Arc::new(MemoryStore::new()),
        AgentSettings::default(),
    );
    let h = Harness {
        model: ScriptedModel::default(),
        store: Arc::new(MemoryStore::new()),
        agent,
    };
    let events = run(&h, input("t", "r", vec![user("u", "go")], &[])).await;
    assert_eq!(
        *log.lock().unwrap(),
        [
            "start parallel_a",
            "start parallel_b",
            "end parallel_a",
            "end parallel_b",
            "start serial_one",
            "end serial_one",
            "start serial_two",
            "end serial_two",
        ]
    );
    let results: Vec<&str> = events
        .iter()
        .filter(|event| event["type"] == "TOOL_CALL_RESULT")
        .map(|event| event["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        results,
        [
            "serial_one for anonymous (cancelled: false)",
            "parallel_a for anonymous (cancelled: false)",
            "serial_two for anonymous (cancelled: false)",
            "parallel_b for anonymous (cancelled: false)",
        ],
        "results come back in the model's order, with the run's principal"
    );
}
