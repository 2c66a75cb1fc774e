//! Remote MCP servers as server tools, through the real handler: a real MCP server from npm,
//! `@modelcontextprotocol/server-everything` over streamable HTTP, one per test (the tests that
//! start it need Node, so they are named `wire_…`). The model is the fixture scenarios in
//! process, calling the namespaced tools. A server that is down or silent at cold start needs
//! no Node: those tests run in the Node-less pass too.

use super::helpers::*;
use agui_lambda::testing::config::Config;
use agui_lambda::testing::startup::{self, StartupError};
use agui_lambda::tools::{ToolBuilder, ToolContext, ToolOutput, ToolRegistry};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// server-everything serving streamable HTTP at `url`; killed when dropped.
struct Everything {
    _child: tokio::process::Child,
    url: String,
}

impl Everything {
    async fn start() -> Self {
        let bin = repo_path("tests/node/node_modules/.bin/mcp-server-everything");
        assert!(
            bin.exists(),
            "@modelcontextprotocol/server-everything is not installed: run `npm ci` in tests/node \
             (scripts/test.sh does)"
        );
        let port = free_port();
        let child = tokio::process::Command::new(bin)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("server-everything starts");
        let url = format!("http://127.0.0.1:{port}/mcp");
        let http = reqwest::Client::new();
        // Ready when /mcp answers at all (a GET without a session is its own 400).
        for _ in 0..200 {
            if http.get(&url).send().await.is_ok() {
                return Self { _child: child, url };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server-everything did not listen on port {port}");
    }

    /// `MCP_SERVERS` naming this server `everything`, with `extra` fields.
    fn servers(&self, extra: Value) -> String {
        let mut entry = json!({"name": "everything", "url": self.url});
        if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
            entry.extend(extra.clone());
        }
        json!([entry]).to_string()
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn ask(app: &TestApp, text: &str) -> Vec<Value> {
    app.run(&run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": text}]),
    ))
    .await
    .events()
}

fn tool_result(events: &[Value]) -> String {
    events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .unwrap_or_else(|| panic!("no TOOL_CALL_RESULT: {events:#?}"))["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn offered_tools(app: &TestApp) -> Vec<String> {
    let capabilities = app.get("/capabilities").await.json();
    capabilities["tools"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn wire_mcp_tools_are_listed_namespaced_and_offered_to_the_model() {
    let server = Everything::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;

    let offered = offered_tools(&app).await;
    for name in [
        "get_current_time",
        "everything__echo",
        "everything__get-sum",
        "everything__trigger-long-running-operation",
    ] {
        assert!(
            offered.iter().any(|tool| tool == name),
            "{name} in {offered:?}"
        );
    }
    let capabilities = app.get("/capabilities").await.json();
    let echo = capabilities["tools"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "everything__echo")
        .unwrap()
        .clone();
    assert_eq!(
        echo["parameters"]["properties"]["message"]["type"],
        "string"
    );

    ask(&app, "echo it through mcp").await;
    let asked = app.fixture_requests_about("echo it through mcp");
    assert!(
        asked[0]
            .tools
            .iter()
            .any(|tool| tool.name == "everything__echo"),
        "the model is offered the server's tools"
    );
}

#[tokio::test]
async fn wire_mcp_a_call_round_trips_and_its_result_is_used_in_the_answer() {
    let server = Everything::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;

    let events = ask(&app, "echo it through mcp").await;
    let start = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap();
    assert_eq!(start["toolCallName"], "everything__echo");
    assert_eq!(tool_result(&events), "Echo: ping from agui-lambda");
    assert_eq!(
        text_of(&events),
        "The MCP server echoed: ping from agui-lambda."
    );
    let asked = app.fixture_requests_about("echo it through mcp");
    assert_eq!(asked.len(), 2);
    let sent = serde_json::to_value(&asked[1].messages)
        .unwrap()
        .to_string();
    assert!(sent.contains("Echo: ping from agui-lambda"), "{sent}");
}

#[tokio::test]
async fn wire_mcp_an_error_of_the_server_goes_back_to_the_model() {
    let server = Everything::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;

    let events = ask(&app, "fetch mcp resource zero").await;
    let result = tool_result(&events);
    assert!(
        result.starts_with("Error: ") && result.contains("Invalid resourceId"),
        "{result}"
    );
    assert_eq!(
        text_of(&events),
        "The MCP server refused: resource ids start at 1."
    );
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn wire_mcp_arguments_that_break_the_servers_schema_never_reach_it() {
    let server = Everything::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;

    let events = ask(&app, "add with mcp badly").await;
    assert_eq!(
        tool_result(&events),
        r#"Error: arguments do not match the tool's schema: /a: "two" is not of type "number""#
    );
    assert_eq!(text_of(&events), "The sum tool needs numbers.");
}

#[tokio::test]
async fn wire_mcp_a_slow_tool_times_out_as_a_tool_error() {
    let server = Everything::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({"timeout_ms": 500})))]).await;

    let began = Instant::now();
    let events = ask(&app, "run the long mcp operation").await;
    assert_eq!(
        tool_result(&events),
        "Error: everything__trigger-long-running-operation did not answer within 500 ms"
    );
    assert_eq!(
        text_of(&events),
        "The operation took too long and was stopped."
    );
    // The operation asked for 10 s; the run went on after half a second.
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    // The session is still good for the next call.
    let events = ask(&app, "echo it through mcp").await;
    assert_eq!(tool_result(&events), "Echo: ping from agui-lambda");
}

#[tokio::test]
async fn wire_mcp_a_server_down_at_cold_start_is_skipped_and_the_others_are_offered() {
    let server = Everything::start().await;
    let servers = json!([
        {"name": "down", "url": format!("http://127.0.0.1:{}/mcp", free_port())},
        {"name": "everything", "url": server.url},
    ]);
    let app = spawn_app_with(&[("MCP_SERVERS", &servers.to_string())]).await;
    let offered = offered_tools(&app).await;
    assert!(offered.iter().any(|tool| tool == "everything__echo"));
    assert!(!offered.iter().any(|tool| tool.starts_with("down__")));
    assert_eq!(
        tool_result(&ask(&app, "echo it through mcp").await),
        "Echo: ping from agui-lambda"
    );
}

#[tokio::test]
async fn wire_mcp_a_tool_name_another_tool_has_stops_start_up_with_a_clear_error() {
    let server = Everything::start().await;
    let config = Config::from_map(&HashMap::from([(
        "MCP_SERVERS".to_owned(),
        server.servers(json!({})),
    )]))
    .unwrap();
    let mut tools = ToolRegistry::with_builtins().unwrap();
    tools
        .add(
            ToolBuilder::new("everything__echo", "mine")
                .handler(|_: Value, _: ToolContext| async { Ok(ToolOutput::text("")) }),
        )
        .unwrap();
    let model = startup::model_from_config(&config).await.unwrap();
    let err = startup::AppBuilder::new(&config)
        .model(model)
        .tools(tools)
        .build()
        .await
        .err()
        .unwrap();
    assert!(matches!(err, StartupError::ToolNameTaken { .. }), "{err}");
    assert_eq!(
        err.to_string(),
        "MCP_SERVERS: server everything offers the tool echo as everything__echo, a name another \
         tool already has (a built-in tool, one of yours or another server's); give the server \
         another name"
    );
}

#[tokio::test]
async fn mcp_a_server_down_or_silent_at_cold_start_is_skipped_within_the_timeout() {
    // One port nobody listens on, one that accepts connections and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_addr = silent.local_addr().unwrap();
    let _held = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = silent.accept().await {
            held.push(stream);
        }
    });
    let servers = json!([
        {"name": "down", "url": format!("http://127.0.0.1:{}/mcp", free_port())},
        {"name": "silent", "url": format!("http://{silent_addr}/mcp")},
    ]);
    let began = Instant::now();
    let app = spawn_app_with(&[
        ("MCP_SERVERS", &servers.to_string()),
        ("MCP_CONNECT_TIMEOUT_MS", "300"),
    ])
    .await;
    // Both were tried at once: the silent one's 300 ms bound the whole cold start.
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(offered_tools(&app).await, ["get_current_time"]);
    let events = ask(&app, "what time is it").await;
    assert_eq!(types(&events).last(), Some(&"RUN_FINISHED"));
}

#[tokio::test]
async fn mcp_an_approval_for_a_tool_of_a_skipped_server_does_not_stop_start_up() {
    let servers = json!([{"name": "down", "url": format!("http://127.0.0.1:{}/mcp", free_port())}]);
    let app = spawn_app_with(&[
        ("MCP_SERVERS", &servers.to_string()),
        ("APPROVAL_REQUIRED_TOOLS", "down__delete_page"),
    ])
    .await;
    assert_eq!(offered_tools(&app).await, ["get_current_time"]);
}

#[tokio::test]
async fn wire_mcp_an_approval_for_a_tool_a_listed_server_lacks_stops_start_up() {
    let server = Everything::start().await;
    let config = Config::from_map(&HashMap::from([
        ("MCP_SERVERS".to_owned(), server.servers(json!({}))),
        (
            "APPROVAL_REQUIRED_TOOLS".to_owned(),
            "everything__no_such_tool".to_owned(),
        ),
    ]))
    .unwrap();
    let model = startup::model_from_config(&config).await.unwrap();
    let err = startup::AppBuilder::new(&config)
        .model(model)
        .tools(ToolRegistry::with_builtins().unwrap())
        .build()
        .await
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "no server tool is named everything__no_such_tool"
    );
}

#[tokio::test]
async fn wire_mcp_an_mcp_tool_that_needs_approval_runs_only_after_a_yes() {
    let server = Everything::start().await;
    let app = spawn_app_with(&[
        ("MCP_SERVERS", &server.servers(json!({}))),
        ("APPROVAL_REQUIRED_TOOLS", "everything__echo"),
    ])
    .await;
    let thread = new_thread();
    let user = json!({"id": "u1", "role": "user", "content": "echo it through mcp"});
    let mut input = run_input(&thread, "run_1", json!([user.clone()]));
    input["protocolVersion"] = json!("1.0");
    let first = app.run(&input).await.events();
    let outcome = &first.last().unwrap()["outcome"];
    assert_eq!(outcome["type"], "interrupt", "{outcome}");
    assert!(
        !first.iter().any(|e| e["type"] == "TOOL_CALL_RESULT"),
        "never called without a yes"
    );
    let interrupt = &outcome["interrupts"][0];
    assert_eq!(
        interrupt["responseSchema"]["properties"]["editedArgs"]["properties"]["message"]["type"],
        "string",
        "edits are described by the MCP tool's own schema"
    );

    let mut answer = run_input(&thread, "run_2", json!([user, assistant_from(&first)]));
    answer["protocolVersion"] = json!("1.0");
    answer["resume"] = json!([{
        "interruptId": interrupt["id"], "status": "resolved",
        "payload": {"approved": true, "editedArgs": {"message": "approved ping"}},
    }]);
    let second = app.run(&answer).await.events();
    assert_eq!(tool_result(&second), "Echo: approved ping");
}
