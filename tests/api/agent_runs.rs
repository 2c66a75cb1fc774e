use crate::helpers::*;
use serde_json::{Value, json};

#[tokio::test]
async fn wire_plain_chat_streams_the_models_text() {
    let app = spawn_wire_app().await;
    let thread = new_thread();
    let events = app
        .run(&run_input(
            &thread,
            "run_1",
            json!([{"id": "u1", "role": "user", "content": "hello"}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "Hello! How can I help you today?");
    assert!(
        events
            .iter()
            .filter(|e| e["type"] == "TEXT_MESSAGE_CONTENT")
            .count()
            > 1,
        "text arrives in pieces"
    );
    assert_eq!(events[0]["threadId"], thread.as_str());
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");

    let sent = app.aimock().requests_about("hello").await;
    assert_eq!(sent.len(), 1);
    let body = &sent[0]["body"];
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["messages"][0]["role"], "system");
    let tool_names: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tool_names,
        ["get_current_time", "search_local_files", "confirmAction"]
    );
}

#[tokio::test]
async fn wire_a_server_tool_runs_inside_and_its_result_goes_back_to_the_model() {
    let app = spawn_wire_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "what time is it"}]),
        ))
        .await
        .events();
    let kinds = types(&events);
    let result_at = kinds.iter().position(|t| *t == "TOOL_CALL_RESULT").unwrap();
    assert!(kinds[..result_at].contains(&"TOOL_CALL_END"));
    let result: Value =
        serde_json::from_str(events[result_at]["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["timezone"], "Europe/Paris");
    assert!(text_of(&events).ends_with("It is now the time shown in Paris."));
    let start = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    let first_text = events
        .iter()
        .find(|e| e["type"] == "TEXT_MESSAGE_START")
        .unwrap();
    assert_eq!(start["parentMessageId"], first_text["messageId"]);

    let sent = app.aimock().requests_about("what time is it").await;
    assert_eq!(sent.len(), 2);
    let history = sent[1]["body"]["messages"].as_array().unwrap();
    let tool_message = history.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool_message["tool_call_id"], "call_time_1");
    assert!(
        tool_message["content"]
            .as_str()
            .unwrap()
            .contains("Europe/Paris")
    );
}

/// CopilotKit's loop: the run stops at the frontend tool, the client runs it and posts again
/// with the whole history and a `tool` message.
async fn frontend_round_trip(user_text: &str, tool: &str, answer: &str, expected_reply: &str) {
    let app = spawn_app().await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": user_text});
    let first = app
        .run(&run_input(&thread, "run_a", json!([user.clone()])))
        .await
        .events();
    let kinds = types(&first);
    assert_eq!(
        &kinds[kinds.len() - 3..],
        ["STEP_FINISHED", "TOOL_CALL_END", "RUN_FINISHED"]
    );
    assert!(
        !kinds.contains(&"TOOL_CALL_RESULT"),
        "never a result for a frontend tool"
    );
    let start = first
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    assert_eq!(start["toolCallName"], tool);

    let assistant = assistant_from(&first);
    let call_id = assistant["toolCalls"][0]["id"].clone();
    let result = json!({"id": "t1", "role": "tool", "toolCallId": call_id, "content": answer});
    let second = app
        .run(&run_input(
            &thread,
            "run_b",
            json!([user, assistant, result]),
        ))
        .await
        .events();
    assert_eq!(text_of(&second), expected_reply);
    assert!(
        !types(&second).contains(&"MESSAGES_SNAPSHOT"),
        "a full-history client needs no snapshot"
    );

    let history = app.get(&format!("/threads/{thread}")).await.json();
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "each message stored exactly once"
    );
}

#[tokio::test]
async fn frontend_tool_round_trip() {
    frontend_round_trip(
        "search my local files",
        "search_local_files",
        r#"["annual-report.pdf"]"#,
        "I found 2 files: annual-report.pdf and q3-report.docx.",
    )
    .await;
}

#[tokio::test]
async fn human_in_the_loop_confirmation() {
    frontend_round_trip(
        "delete the temporary files",
        "confirmAction",
        "confirmed",
        "Deleted 15 temporary files.",
    )
    .await;
}

#[tokio::test]
async fn wire_parallel_server_and_frontend_calls_stop_after_the_server_result() {
    let app = spawn_wire_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "time and files"}]),
        ))
        .await
        .events();
    let starts: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_START")
        .map(|e| e["toolCallName"].as_str().unwrap())
        .collect();
    assert_eq!(starts, ["get_current_time", "search_local_files"]);
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .collect();
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["toolCallId"], "call_par_1");
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert_eq!(app.aimock().requests_about("time and files").await.len(), 1);
}

#[tokio::test]
async fn reasoning_streams_before_the_answer() {
    let app = spawn_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "think step by step"}]),
        ))
        .await
        .events();
    let reasoning: String = events
        .iter()
        .filter(|e| e["type"] == "REASONING_MESSAGE_CONTENT")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(reasoning, "First I consider the question.");
    assert_eq!(text_of(&events), "The answer is 42.");
    let kinds = types(&events);
    assert!(
        kinds.iter().position(|t| *t == "REASONING_END")
            < kinds.iter().position(|t| *t == "TEXT_MESSAGE_START")
    );
}

#[tokio::test]
async fn wire_a_rate_limited_model_is_retried_then_reported_as_rate_limited() {
    let app = spawn_wire_app().await;
    let thread = new_thread();
    let events = app
        .run(&run_input(
            &thread,
            "r",
            json!([{"id": "u1", "role": "user", "content": "rate limit me"}]),
        ))
        .await
        .events();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "MODEL_RATE_LIMITED");
    assert!(last["message"].as_str().unwrap().contains("429"));
    assert_eq!(
        app.aimock().requests_about("rate limit me").await.len(),
        3,
        "one try and MODEL_MAX_RETRIES=2 retries"
    );
    let history = app.get(&format!("/threads/{thread}")).await.json();
    assert_eq!(
        history["messages"].as_array().unwrap().len(),
        1,
        "the user's message is kept"
    );
}

#[tokio::test]
async fn wire_a_transient_429_before_the_first_token_is_retried_transparently() {
    let app = spawn_wire_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "flaky once"}]),
        ))
        .await
        .events();
    assert_eq!(text_of(&events), "Recovered after a retry.");
    let statuses: Vec<u64> = app
        .aimock()
        .requests_about("flaky once")
        .await
        .iter()
        .map(|e| e["response"]["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, [429, 200]);
}

#[tokio::test]
async fn wire_a_connection_dropped_mid_stream_is_a_model_error_not_a_success() {
    let app = spawn_wire_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "drop the connection"}]),
        ))
        .await
        .events();
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "MODEL_ERROR");
    assert_eq!(
        app.aimock()
            .requests_about("drop the connection")
            .await
            .len(),
        1,
        "never retried after output was streamed"
    );
}

#[tokio::test]
async fn wire_a_server_error_is_retried_then_reported() {
    let app = spawn_wire_app().await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": "server error please"}]),
        ))
        .await
        .events();
    assert_eq!(events.last().unwrap()["code"], "MODEL_UNAVAILABLE");
    assert_eq!(
        app.aimock()
            .requests_about("server error please")
            .await
            .len(),
        3
    );
}

#[tokio::test]
async fn wire_an_incremental_client_continues_the_thread_without_a_snapshot() {
    let app = spawn_wire_app().await;
    let thread = new_thread();
    app.run(&run_input(
        &thread,
        "r1",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    ))
    .await
    .events();
    // A client that sends only its new message (AG-Kit, curl, a fresh tab) names nothing the
    // thread holds: it gets its run, not the thread back.
    let events = app
        .run(&run_input(
            &thread,
            "r2",
            json!([{"id": "u2", "role": "user", "content": "hello again"}]),
        ))
        .await
        .events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert!(
        !types(&events).contains(&"MESSAGES_SNAPSHOT"),
        "{:?}",
        types(&events)
    );
    // The model reads the whole stored history all the same …
    let sent = app.aimock().requests_about("hello again").await;
    assert_eq!(
        sent[0]["body"]["messages"].as_array().unwrap().len(),
        4,
        "system + the whole stored history"
    );
    // … and a client that wants the history reads it from the thread.
    let history = app.get(&format!("/threads/{thread}")).await.json();
    let ids: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4);
    assert_eq!((ids[0], ids[2]), ("u1", "u2"));
}

#[tokio::test]
async fn the_history_endpoint_pages_through_a_thread() {
    let app = spawn_app().await;
    let thread = new_thread();
    app.run(&run_input(
        &thread,
        "r1",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    ))
    .await
    .events();
    let first = app.get(&format!("/threads/{thread}?limit=1")).await.json();
    assert_eq!(first["messages"].as_array().unwrap().len(), 1);
    let next = first["next"].as_str().unwrap();
    let second = app
        .get(&format!("/threads/{thread}?limit=1&after={next}"))
        .await
        .json();
    assert_eq!(second["messages"][0]["role"], "assistant");
    assert!(second.get("next").is_none());
    assert_eq!(app.get("/threads/does-not-exist").await.status, 404);
}
