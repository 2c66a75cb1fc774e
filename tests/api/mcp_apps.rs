//! MCP Apps through the real handler: a real MCP server with a view (tests/node/mcp-apps-server.mjs,
//! the official SDK and ext-apps' server helpers) on loopback, one per test (so these need Node
//! and are named `wire_…`), and the fixture model calling its UI tool. What the client sees next
//! to the call, what the model is offered and told, and the view's requests coming back through
//! CopilotKit's proxied run and assistant-ui's route. The refusals that need no server run in
//! the Node-less pass.

use super::copilotkit_runs::{input, post};
use super::helpers::*;
use agui_lambda::testing::auth::hash_api_key;
use agui_lambda::testing::protocol::verify::parse_sse;
use serde_json::{Value, json};
use std::time::Duration;

/// The MCP App server of tests/node/mcp-apps-server.mjs; killed when dropped.
struct WeatherServer {
    _child: tokio::process::Child,
    url: String,
}

impl WeatherServer {
    async fn start() -> Self {
        let node_modules = repo_path("tests/node/node_modules/@modelcontextprotocol/ext-apps");
        assert!(
            node_modules.exists(),
            "the MCP App server's packages are not installed: run `npm ci` in tests/node \
             (scripts/test.sh does)"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = tokio::process::Command::new("node")
            .arg(repo_path("tests/node/mcp-apps-server.mjs"))
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts the MCP App server");
        let base = format!("http://127.0.0.1:{port}");
        await_ready(&format!("{base}/health"), "the MCP App server").await;
        Self {
            _child: child,
            url: format!("{base}/mcp"),
        }
    }

    /// `MCP_SERVERS` naming this server `weather`, with `extra` fields.
    fn servers(&self, extra: Value) -> String {
        let mut entry = json!({"name": "weather", "url": self.url});
        if let (Some(entry), Some(extra)) = (entry.as_object_mut(), extra.as_object()) {
            entry.extend(extra.clone());
        }
        json!([entry]).to_string()
    }
}

const ASK: &str = "[mcp-apps] show the weather in Oslo";

fn ask(thread: &str) -> Value {
    run_input(
        thread,
        "r1",
        json!([{"id": "u1", "role": "user", "content": ASK}]),
    )
}

fn one<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    let found = of_type(events, kind);
    assert_eq!(found.len(), 1, "one {kind}: {events:#?}");
    found[0]
}

/// A view's request as CopilotKit sends it: a run on the thread carrying it.
/// The first run of `thread`: the user says hello (a thread for a view's requests to name).
fn said_hello(thread: &str) -> Value {
    run_input(
        thread,
        "r1",
        json!([{"id": "u1", "role": "user", "content": "hello"}]),
    )
}

fn proxied(thread: &str, method: &str, params: Value, server: Value) -> Value {
    let mut request = json!({"method": method, "params": params});
    if let Some(server) = server.as_object() {
        request.as_object_mut().unwrap().extend(server.clone());
    }
    json!({"threadId": thread, "runId": uuid::Uuid::new_v4().to_string(), "state": {},
           "messages": [{"id": "u1", "role": "user", "content": ASK}], "tools": [], "context": [],
           "forwardedProps": {"__proxiedMCPRequest": request}})
}

fn by_name() -> Value {
    json!({"serverHash": "ignored-when-named", "serverId": "weather"})
}

/// The `result` a proxied request was answered with: the stream is exactly the run's start and
/// its finish.
fn proxied_result(events: &[Value]) -> Value {
    assert_eq!(
        types(events),
        ["RUN_STARTED", "RUN_FINISHED"],
        "{events:#?}"
    );
    events[1]["result"].clone()
}

fn text_result(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn wire_mcp_apps_a_ui_tools_call_shows_its_view_and_the_model_gets_its_result() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;

    let events = app.run(&ask(&new_thread())).await.events();
    let start = one(&events, "TOOL_CALL_START");
    assert_eq!(start["toolCallName"], "weather__weather_view");
    let result = one(&events, "TOOL_CALL_RESULT");
    assert_eq!(result["content"], "Weather in Oslo: 4 °C, light rain");
    // The view, right after the call's result.
    let kinds = types(&events);
    let at = kinds.iter().position(|k| *k == "TOOL_CALL_RESULT").unwrap();
    assert_eq!(kinds[at + 1], "ACTIVITY_SNAPSHOT");
    let view = one(&events, "ACTIVITY_SNAPSHOT");
    assert_eq!(view["activityType"], "mcp-apps");
    assert_eq!(
        view["messageId"],
        format!("{}-mcp-app", start["toolCallId"].as_str().unwrap())
    );
    let content = &view["content"];
    assert_eq!(content["resourceUri"], "ui://weather/view.html");
    assert_eq!(content["serverId"], "weather");
    assert_eq!(content["serverHash"].as_str().unwrap().len(), 32);
    assert_eq!(content["toolInput"], json!({"city": "Oslo"}));
    assert_eq!(content["toolCallId"], start["toolCallId"]);
    assert_eq!(
        content["result"]["structuredContent"],
        json!({"city": "Oslo", "celsius": 4, "sky": "light rain"})
    );
    // Nothing about where the server is reaches the client.
    assert!(
        !serde_json::to_string(&events)
            .unwrap()
            .contains(&server.url)
    );
    // The loop went on: the model's next turn was answered only because it held the result.
    assert_eq!(
        text_of(&events),
        "The weather view shows Oslo at 4 °C with light rain."
    );
    let asked = app.fixture_requests_about(ASK);
    assert_eq!(asked.len(), 2);
    let offered: Vec<&str> = asked[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert!(offered.contains(&"weather__weather_view"), "{offered:?}");
    assert!(offered.contains(&"weather__forecast_text"), "{offered:?}");
    assert!(
        !offered.iter().any(|name| name.contains("refresh_weather")),
        "a tool only views may call is never offered to the model: {offered:?}"
    );
}

#[tokio::test]
async fn wire_mcp_apps_an_app_only_tool_is_not_in_the_capabilities() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;
    let capabilities = app.get("/capabilities").await.json();
    let names: Vec<&str> = capabilities["tools"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"weather__weather_view"), "{names:?}");
    assert!(
        !names.iter().any(|n| n.contains("refresh_weather")),
        "{names:?}"
    );
}

#[tokio::test]
async fn wire_mcp_apps_a_reloaded_thread_shows_the_view_again() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;
    let thread = new_thread();
    let first = app.run(&ask(&thread)).await.events();
    let view = one(&first, "ACTIVITY_SNAPSHOT").clone();

    // A client that kept only the first message (a reload, another tab): the snapshot that
    // catches it up holds the view right after the call's result.
    let behind = run_input(
        &thread,
        "r2",
        json!([{"id": "u1", "role": "user", "content": ASK},
               {"id": "u2", "role": "user", "content": "hello"}]),
    );
    let second = app.run(&behind).await.events();
    let snapshot = one(&second, "MESSAGES_SNAPSHOT");
    let messages = snapshot["messages"].as_array().unwrap();
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    let shown = &messages[tool + 1];
    assert_eq!(shown["role"], "activity");
    assert_eq!(shown["id"], view["messageId"]);
    assert_eq!(shown["activityType"], "mcp-apps");
    assert_eq!(shown["content"], view["content"]);
    assert!(
        messages[tool].get("metadata").is_none(),
        "the tool message does not carry the view twice: {}",
        messages[tool]
    );
}

#[tokio::test]
async fn wire_mcp_apps_a_views_calls_come_back_through_a_proxied_run() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;
    let thread = new_thread();
    let first = app.run(&ask(&thread)).await.events();
    let hash = one(&first, "ACTIVITY_SNAPSHOT")["content"]["serverHash"].clone();
    let stored = app.get(&format!("/threads/{thread}")).await.json();
    let model_calls = app.fixture_requests_about(ASK).len();

    // The view's HTML, by the hash alone as the middleware's older content names servers.
    let read = app
        .run(&proxied(
            &thread,
            "resources/read",
            json!({"uri": "ui://weather/view.html"}),
            json!({"serverHash": hash}),
        ))
        .await
        .events();
    let read = proxied_result(&read);
    assert_eq!(read["contents"][0]["mimeType"], "text/html;profile=mcp-app");
    assert!(
        read["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Weather view")
    );
    assert_eq!(read["contents"][0]["_meta"]["ui"]["prefersBorder"], true);

    // The tool only views may call round-trips.
    let refresh = app
        .run(&proxied(
            &thread,
            "tools/call",
            json!({"name": "refresh_weather", "arguments": {"city": "Oslo"}}),
            by_name(),
        ))
        .await
        .events();
    let refresh = proxied_result(&refresh);
    assert!(
        text_result(&refresh).starts_with("Refreshed Oslo: Weather in Oslo"),
        "{refresh}"
    );
    assert_ne!(refresh["isError"], true);

    // A tool only the model may call is refused, as an MCP error result.
    let forbidden = app
        .run(&proxied(
            &thread,
            "tools/call",
            json!({"name": "forecast_text", "arguments": {"city": "Oslo"}}),
            by_name(),
        ))
        .await
        .events();
    let forbidden = proxied_result(&forbidden);
    assert_eq!(forbidden["isError"], true);
    assert_eq!(
        text_result(&forbidden),
        "forecast_text is not one of this server's tools a view may call"
    );

    // Other methods, other servers: refused the same way.
    for (method, server, expected) in [
        ("sampling/createMessage", by_name(), "a view may not call"),
        ("tools/list", by_name(), "a view may not call"),
        (
            "resources/read",
            json!({"serverId": "elsewhere"}),
            "no MCP server",
        ),
        (
            "resources/read",
            json!({"serverHash": "0123"}),
            "no MCP server",
        ),
    ] {
        let events = app
            .run(&proxied(
                &thread,
                method,
                json!({"uri": "ui://x/y"}),
                server,
            ))
            .await
            .events();
        let result = proxied_result(&events);
        assert_eq!(result["isError"], true, "{method}");
        assert!(
            text_result(&result).contains(expected),
            "{method}: {result}"
        );
    }

    // No model call, and the thread is as it was.
    assert_eq!(app.fixture_requests_about(ASK).len(), model_calls);
    assert_eq!(app.get(&format!("/threads/{thread}")).await.json(), stored);
}

#[tokio::test]
async fn wire_mcp_apps_a_views_call_is_answered_while_its_thread_runs() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;
    let thread = new_thread();
    app.run(&ask(&thread)).await.events();
    // A slow run on the same thread (the fixtures' "stream slowly", 10 chunks apart)...
    let slow = run_input(
        &thread,
        "r-slow",
        json!([{"id": "u9", "role": "user", "content": "stream slowly"}]),
    );
    let running = {
        let app_url = app.url("/agent");
        let http = app.http.clone();
        tokio::spawn(async move {
            http.post(app_url)
                .header("content-type", "application/json")
                .body(slow.to_string())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    // ...and a view's call meanwhile: answered, with no 409 and without stopping the run.
    let answered = app
        .run(&proxied(
            &thread,
            "tools/call",
            json!({"name": "refresh_weather", "arguments": {"city": "Lisbon"}}),
            by_name(),
        ))
        .await
        .events();
    assert!(text_result(&proxied_result(&answered)).starts_with("Refreshed Lisbon"));
    let slow = parse_sse(&running.await.unwrap()).unwrap();
    assert_eq!(
        text_of(&slow),
        "One, two, three, four, five, six, seven, eight, nine, ten."
    );
    let end = slow.last().unwrap();
    assert_eq!(end["type"], "RUN_FINISHED");
    assert!(end.get("outcome").is_none(), "finished, not stopped: {end}");
}

#[tokio::test]
async fn wire_mcp_apps_assistant_uis_route_answers_a_views_requests() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;
    let thread = new_thread();
    app.run(&ask(&thread)).await.events();
    let route = format!("/threads/{thread}/mcp-apps");
    let post = |body: Value| {
        let app = &app;
        let route = route.clone();
        async move {
            app.post_raw(&route, "application/json", body.to_string())
                .await
        }
    };

    let view = post(json!({"method": "mcp-apps/read-resource",
                           "params": {"uri": "ui://weather/view.html", "serverId": "weather"}}))
    .await;
    assert_eq!(view.status, 200, "{}", view.body);
    let view = view.json();
    assert_eq!(view["uri"], "ui://weather/view.html");
    assert_eq!(view["mimeType"], "text/html;profile=mcp-app");
    assert!(
        view["html"]
            .as_str()
            .unwrap()
            .contains("data-testid=\"refresh\"")
    );
    assert_eq!(view["meta"]["prefersBorder"], true);

    // Without a serverId: the one server whose tools name that view.
    let unnamed = post(json!({"method": "tools/call",
                              "params": {"name": "refresh_weather", "arguments": {"city": "Oslo"}}}))
    .await
    .json();
    assert!(
        text_result(&unnamed).starts_with("Refreshed Oslo"),
        "{unnamed}"
    );

    let listed = post(json!({"method": "resources/list", "params": {"serverId": "weather"}}))
        .await
        .json();
    assert_eq!(listed["resources"][0]["uri"], "ui://weather/view.html");

    let forbidden = post(json!({"method": "tools/call",
                                "params": {"name": "forecast_text", "arguments": {}, "serverId": "weather"}}))
    .await
    .json();
    assert_eq!(forbidden["isError"], true);

    let other = post(json!({"method": "prompts/list", "params": {}}))
        .await
        .json();
    assert_eq!(other["isError"], true);

    // A view that is not this server's: a 422 saying so (assistant-ui shows the message).
    let missing = post(json!({"method": "mcp-apps/read-resource",
                              "params": {"uri": "ui://weather/nope.html", "serverId": "weather"}}))
    .await;
    assert_eq!(missing.status, 502, "{}", missing.body);
    assert_eq!(missing.json()["error"]["code"], "view_failed");
}

#[tokio::test]
async fn wire_mcp_apps_a_server_without_apps_gets_plain_tools() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({"apps": false})))]).await;
    let events = app.run(&ask(&new_thread())).await.events();
    assert!(of_type(&events, "ACTIVITY_SNAPSHOT").is_empty());
    assert_eq!(
        one(&events, "TOOL_CALL_RESULT")["content"],
        "Weather in Oslo: 4 °C, light rain"
    );
    // Told nothing of views, the server offered no view and no app-only tool.
    let offered: Vec<String> = app.fixture_requests_about(ASK)[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        !offered.iter().any(|n| n.contains("refresh")),
        "{offered:?}"
    );
}

#[tokio::test]
async fn a_views_request_without_a_server_with_views_is_refused_as_an_error_result() {
    let app = spawn_app().await;
    let thread = new_thread();
    app.run(&said_hello(&thread)).await.events();
    let events = app
        .run(&proxied(
            &thread,
            "resources/read",
            json!({"uri": "ui://weather/view.html"}),
            by_name(),
        ))
        .await
        .events();
    let result = proxied_result(&events);
    assert_eq!(result["isError"], true);
    assert_eq!(
        text_result(&result),
        "no MCP server with views is listed here"
    );
}

#[tokio::test]
async fn a_views_request_on_someone_elses_thread_is_a_404_like_any_thread_route() {
    let keys = format!(
        "alice={},bob={}",
        hash_api_key("alice-secret-key"),
        hash_api_key("bob-secret-key")
    );
    let app = spawn_app_with(&[("AUTH_MODE", "api-key"), ("API_KEYS", &keys)]).await;
    let thread = new_thread();
    let as_ = |key: &'static str, path: &str, body: Value| {
        app.http
            .post(app.url(path))
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {key}"))
            .body(body.to_string())
            .send()
    };
    let made = as_("alice-secret-key", "/agent", said_hello(&thread))
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    made.text().await.unwrap();
    let proxied_as_bob = as_(
        "bob-secret-key",
        "/agent",
        proxied(&thread, "resources/list", json!({}), by_name()),
    )
    .await
    .unwrap();
    assert_eq!(proxied_as_bob.status(), 404);
    let route_as_bob = as_(
        "bob-secret-key",
        &format!("/threads/{thread}/mcp-apps"),
        json!({"method": "resources/list"}),
    )
    .await
    .unwrap();
    assert_eq!(route_as_bob.status(), 404);
    let route_as_alice = as_(
        "alice-secret-key",
        &format!("/threads/{thread}/mcp-apps"),
        json!({"method": "resources/list"}),
    )
    .await
    .unwrap();
    assert_eq!(route_as_alice.status(), 200);
    let body: Value = route_as_alice.json().await.unwrap();
    assert_eq!(body["isError"], true, "no server with views here: {body}");
}

#[tokio::test]
async fn wire_mcp_apps_a_views_request_costs_one_store_read_and_no_write() {
    use agui_lambda::testing::store::{DynamoStore, ThreadStore};
    let server = WeatherServer::start().await;
    let (client, table) = crate::dynamo_local::new_table().await;
    let dynamo = std::sync::Arc::new(DynamoStore::new(client, table, 0));
    let store: std::sync::Arc<dyn ThreadStore> = dynamo.clone();
    let app = spawn_app_on(&[("MCP_SERVERS", &server.servers(json!({})))], Some(store)).await;
    let thread = new_thread();
    app.run(&ask(&thread)).await.events();
    // What the run still settles after its stream ended, settled.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let before = dynamo.usage();
    let events = app
        .run(&proxied(
            &thread,
            "tools/call",
            json!({"name": "refresh_weather", "arguments": {"city": "Oslo"}}),
            by_name(),
        ))
        .await
        .events();
    assert!(text_result(&proxied_result(&events)).starts_with("Refreshed Oslo"));
    let proxied = dynamo.usage();
    let routed = app
        .post_raw(
            &format!("/threads/{thread}/mcp-apps"),
            "application/json",
            json!({"method": "resources/list", "params": {"serverId": "weather"}}).to_string(),
        )
        .await;
    assert_eq!(routed.status, 200);
    let after = dynamo.usage();
    assert_eq!(
        (
            proxied.read_calls - before.read_calls,
            proxied.write_calls - before.write_calls
        ),
        (1, 0),
        "CopilotKit's way: one read (the thread is the caller's), no write"
    );
    assert_eq!(
        (
            after.read_calls - proxied.read_calls,
            after.write_calls - proxied.write_calls
        ),
        (1, 0),
        "assistant-ui's route: the same"
    );
}

/// CopilotKit's own routes take a view's request as `POST /agent` does: `/copilotkit/agent/{id}/run`
/// and the single route's `agent/run` answer it without a run (here, with no server with views,
/// as an MCP error result) and leave the thread as it was.
#[tokio::test]
async fn a_views_request_through_copilotkits_routes_is_answered_without_a_run() {
    let app = spawn_app().await;
    let thread = new_thread();
    app.run(&said_hello(&thread)).await.events();
    let before = app.get(&format!("/threads/{thread}")).await.json();
    let request = proxied(
        &thread,
        "resources/read",
        json!({"uri": "ui://weather/view.html"}),
        by_name(),
    );
    let rest = post(&app, "/copilotkit/agent/default/run", &request).await;
    let single = post(
        &app,
        "/copilotkit",
        &json!({"method": "agent/run", "params": {"agentId": "default"}, "body": request}),
    )
    .await;
    for reply in [rest, single] {
        assert_eq!(reply.status, 200, "{}", reply.body);
        let result = proxied_result(&reply.events());
        assert_eq!(result["isError"], true);
        assert_eq!(
            text_result(&result),
            "no MCP server with views is listed here"
        );
    }
    assert_eq!(app.get(&format!("/threads/{thread}")).await.json(), before);
}

/// `OPEN_GENERATIVE_UI` is what CopilotKit's `/info` says of Open Generative UI.
#[tokio::test]
async fn copilotkits_info_says_open_generative_ui_as_its_setting_does() {
    let off = spawn_app().await;
    let info = off.get("/copilotkit/info").await.json();
    assert_eq!(info["openGenerativeUIEnabled"], false);
    let on = spawn_app_with(&[("OPEN_GENERATIVE_UI", "true")]).await;
    let info = on.get("/copilotkit/info").await.json();
    assert_eq!(info["openGenerativeUIEnabled"], true);
}

/// Through CopilotKit's routes: the view shows after its call on `/run`, `/connect`'s replay
/// shows it again right after the call's result, and the view's request on `/run` is answered.
#[tokio::test]
async fn wire_mcp_apps_copilotkits_routes_show_the_view_and_answer_its_requests() {
    let server = WeatherServer::start().await;
    let app = spawn_app_with(&[("MCP_SERVERS", &server.servers(json!({})))]).await;
    let thread = new_thread();
    let first = post(&app, "/copilotkit/agent/default/run", &ask(&thread))
        .await
        .events();
    let view = one(&first, "ACTIVITY_SNAPSHOT").clone();
    assert_eq!(view["activityType"], "mcp-apps");

    let replay = post(
        &app,
        "/copilotkit/agent/default/connect",
        &input(&thread, "c1", json!([])),
    )
    .await
    .events();
    let messages = one(&replay, "MESSAGES_SNAPSHOT")["messages"]
        .as_array()
        .unwrap()
        .clone();
    let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
    let shown = &messages[tool + 1];
    assert_eq!(shown["role"], "activity");
    assert_eq!(shown["id"], view["messageId"]);
    assert_eq!(shown["activityType"], "mcp-apps");
    assert_eq!(shown["content"], view["content"]);
    assert!(
        messages[tool].get("metadata").is_none(),
        "the tool message does not carry the view twice: {}",
        messages[tool]
    );

    let read = post(
        &app,
        "/copilotkit/agent/default/run",
        &proxied(
            &thread,
            "resources/read",
            json!({"uri": "ui://weather/view.html"}),
            by_name(),
        ),
    )
    .await
    .events();
    let read = proxied_result(&read);
    assert_eq!(read["contents"][0]["mimeType"], "text/html;profile=mcp-app");
}
