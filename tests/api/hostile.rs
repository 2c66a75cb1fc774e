//! Hostile input: every case gets a clear 4xx (or RUN_ERROR once streaming), never a panic or a
//! 500, and leaves the store and the model untouched. No URL a client gives is ever fetched, and
//! secrets never reach logs or bodies.

use agui_lambda::testing::auth::hash_api_key;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use std::time::Duration;

use crate::helpers::*;

#[tokio::test]
async fn the_hostile_input_table() {
    let app = spawn_app().await;
    let thread = new_thread();
    let with = |messages: Value| {
        json!({"threadId": thread, "runId": "r", "messages": messages})
            .to_string()
            .into_bytes()
    };
    let nested = format!(
        "{{\"threadId\":\"{thread}\",\"messages\":[],\"state\":{}{}}}",
        "[".repeat(50_000),
        "]".repeat(50_000)
    );
    let mut invalid_utf8 = format!(
        "{{\"threadId\":\"{thread}\",\"messages\":[{{\"id\":\"u\",\"role\":\"user\",\"content\":\""
    )
    .into_bytes();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe, 0xfd]);
    invalid_utf8.extend_from_slice(b"\"}]}");
    let many: Vec<Value> = (0..1000)
        .map(|i| json!({"id": format!("m{i}"), "role": "user", "content": "x"}))
        .collect();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        ("empty body", Vec::new(), 400),
        ("not an object", b"[1,2,3]".to_vec(), 422),
        ("a bare string", b"\"hello\"".to_vec(), 422),
        ("deeply nested JSON", nested.into_bytes(), 400),
        ("invalid UTF-8", invalid_utf8, 400),
        ("a huge id", json!({"threadId": "t".repeat(200_000), "messages": []}).to_string().into_bytes(), 422),
        ("control characters in an id", with(json!([{"id": "a\u{0000}b", "role": "user", "content": "x"}])), 422),
        ("non-ASCII id", with(json!([{"id": "ид", "role": "user", "content": "x"}])), 422),
        ("unknown role", with(json!([{"id": "u", "role": "root", "content": "x"}])), 422),
        ("role of the wrong type", with(json!([{"id": "u", "role": 7, "content": "x"}])), 422),
        ("too many messages", with(json!(many)), 422),
        ("tool result for an unknown call", with(json!([{"id": "t", "role": "tool", "toolCallId": "call_x", "content": "x"}])), 422),
        ("tool call answered twice", with(json!([
            {"id": "u", "role": "user", "content": "x"},
            {"id": "a", "role": "assistant", "toolCalls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "x"},
            {"id": "t2", "role": "tool", "toolCallId": "c1", "content": "again"}])), 422),
        ("a tool schema that is not a schema", json!({"threadId": thread, "messages": [], "tools": [{"name": "f", "parameters": {"type": "nonsense"}}]}).to_string().into_bytes(), 422),
        ("a data: URL that is not base64", with(json!([{"id": "u", "role": "user", "content": [{"type": "image", "source": {"type": "url", "value": "data:text/html,<script>alert(1)</script>"}}]}])), 422),
        ("too large", vec![b' '; 6_300_000], 413),
    ];
    for (name, body, status) in cases {
        let reply = app.post_raw("/agent", "application/json", body).await;
        assert_eq!(reply.status, status, "{name}: {}", reply.body);
        let error = reply.json();
        assert!(
            error["error"]["code"].is_string() && error["error"]["message"].is_string(),
            "{name}: {}",
            reply.body
        );
    }
    assert_eq!(
        app.get(&format!("/threads/{thread}")).await.status,
        404,
        "nothing was stored"
    );
    assert!(
        app.model_requests().await == 0,
        "the model was never called"
    );
}

/// A body larger than the limit is refused as soon as the limit is passed: the server does not
/// wait for (or buffer) the rest, which here never ends.
#[tokio::test]
async fn an_endless_body_is_cut_off_at_the_limit() {
    let app = spawn_app().await;
    let endless = futures_util::stream::repeat_with(|| {
        Ok::<_, std::io::Error>(bytes::Bytes::from_static(&[b' '; 16 * 1024]))
    });
    let sent = app
        .http
        .post(app.url("/agent"))
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(endless))
        .send();
    match tokio::time::timeout(Duration::from_secs(10), sent)
        .await
        .expect("answered without reading forever")
    {
        Ok(response) => assert_eq!(response.status(), 413),
        // The server may close the connection while the client is still writing.
        Err(error) => assert!(error.is_request() || error.is_body(), "{error}"),
    }
}

#[tokio::test]
async fn a_broken_base64_lambda_body_is_a_client_error() {
    let config = agui_lambda::testing::config::Config::from_map(
        &[
            ("MODEL_PROVIDER".to_owned(), "demo".to_owned()),
            (
                "CORS_ALLOWED_ORIGINS".to_owned(),
                "https://app.example".to_owned(),
            ),
        ]
        .into(),
    )
    .unwrap();
    let app = agui_lambda::testing::startup::AppBuilder::new(&config)
        .build()
        .await
        .unwrap();
    let mut event: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("events/plain-chat.json")).unwrap(),
    )
    .unwrap();
    event["isBase64Encoded"] = json!(true);
    event["body"] = json!("!!! this is not base64 ###");
    event["headers"]["origin"] = json!("https://app.example");
    let response = agui_lambda::testing::api::answer_event(
        &app,
        lambda_runtime::LambdaEvent::new(event, lambda_runtime::Context::default()),
    )
    .await;
    let status = response.status().as_u16();
    assert_eq!(
        response.headers()["access-control-allow-origin"],
        "https://app.example",
        "the adapter's own refusal carries CORS too"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(status, 400, "{body:?}");
    let error: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(error["error"]["code"], "invalid_body");

    // A valid base64 body is decoded and answered normally.
    let mut encoded: Value = serde_json::from_str(
        &std::fs::read_to_string(repo_path("events/plain-chat.json")).unwrap(),
    )
    .unwrap();
    let plain = encoded["body"].as_str().unwrap().to_owned();
    encoded["isBase64Encoded"] = json!(true);
    encoded["body"] = json!(base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        plain
    ));
    let response = agui_lambda::testing::api::answer_event(
        &app,
        lambda_runtime::LambdaEvent::new(encoded, lambda_runtime::Context::default()),
    )
    .await;
    assert_eq!(response.status(), 200);
}

/// Attachment URLs go to the model as URLs; the function itself never fetches them.
#[tokio::test]
async fn wire_attachment_urls_are_never_fetched_by_the_function() {
    let app = spawn_wire_app().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/latest/meta-data/iam/credentials.png");
    let body = run_input(
        &new_thread(),
        "r",
        json!([{"id": "u1", "role": "user", "content": [
        {"type": "text", "text": "hello"},
        {"type": "image", "source": {"type": "url", "value": url, "mimeType": "image/png"}}]}]),
    );
    let events = app.run(&body).await.events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let accepted = tokio::time::timeout(Duration::from_millis(300), listener.accept()).await;
    assert!(
        accepted.is_err(),
        "the function connected to a client-supplied URL"
    );
    let sent = &app.aimock().requests_about("hello").await[0]["body"];
    assert_eq!(
        sent["messages"][1]["content"][1]["image_url"]["url"],
        url.as_str(),
        "the model gets the URL itself"
    );
}

/// The real binary at debug level: neither the model key nor a client's API key appears in its
/// output or in any response body, on success and on every error path.
#[tokio::test]
async fn wire_secrets_never_reach_logs_or_bodies() {
    const MODEL_KEY: &str = "sk-test-MODELSECRET-4f9a1c";
    const CLIENT_KEY: &str = "client-CLIENTSECRET-77b2";
    let aimock = Aimock::start().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"))
        .env_clear()
        .env("PORT", port.to_string())
        .env("OPENAI_BASE_URL", format!("{}/v1", aimock.url))
        .env("OPENAI_API_KEY", MODEL_KEY)
        .env("AUTH_MODE", "api-key")
        .env("API_KEYS", format!("alice={}", hash_api_key(CLIENT_KEY)))
        .env("MODEL_MAX_RETRIES", "1")
        .env("RUST_LOG", "debug")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/agent");
    let mut bodies = Vec::new();
    for (authorization, text) in [
        (Some(format!("Bearer {CLIENT_KEY}")), "hello"),
        (Some(format!("Bearer {CLIENT_KEY}")), "what time is it"),
        (Some(format!("Bearer {CLIENT_KEY}")), "rate limit me"),
        (Some(format!("Bearer {CLIENT_KEY}")), "server error please"),
        (Some(format!("Bearer {CLIENT_KEY}x")), "hello"),
        (Some(MODEL_KEY.to_owned()), "hello"),
        (None, "hello"),
    ] {
        let body = run_input(
            &new_thread(),
            "r",
            json!([{"id": "u1", "role": "user", "content": text}]),
        );
        let response = loop {
            let mut request = http
                .post(&url)
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(value) = &authorization {
                request = request.header("authorization", value);
            }
            match request.send().await {
                Ok(response) => break response,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        bodies.push(response.text().await.unwrap());
    }
    assert!(
        bodies.iter().any(|body| body.contains("RUN_FINISHED")),
        "the runs happened: {bodies:?}"
    );
    assert!(bodies.iter().any(|body| body.contains("unauthorized")));
    let journal = aimock.journal().await;
    assert!(
        journal
            .iter()
            .all(|entry| entry["headers"]["authorization"] == "[REDACTED]")
    );
    let mut child = child;
    child.start_kill().unwrap();
    let output = child.wait_with_output().await.unwrap();
    let logs = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        logs.contains("run ended"),
        "debug logs were captured: {logs}"
    );
    for secret in [MODEL_KEY, CLIENT_KEY, "MODELSECRET", "CLIENTSECRET"] {
        assert!(!logs.contains(secret), "{secret} appears in the logs");
        assert!(
            bodies.iter().all(|body| !body.contains(secret)),
            "{secret} appears in a response body"
        );
    }
}
