//! The errors a newcomer meets first, each checked word for word where it says what to do: a
//! run route asked with GET, a port already taken, a number out of range, a provider without its
//! key, a model API nobody answers, memory asked of a server that keeps none.

use crate::helpers::*;
use serde_json::json;
use std::process::Output;
use std::time::Duration;

/// The binary as `cargo run` starts it, with nothing but `vars` set; it must exit within 30 s.
async fn start_with(vars: &[(&str, &str)]) -> Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"));
    command
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .kill_on_drop(true);
    for (name, value) in vars {
        command.env(name, value);
    }
    tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("the binary stops at once")
        .unwrap()
}

/// The last line the binary printed on stderr: its `Error: …`.
fn error_line(output: &Output) -> String {
    assert!(!output.status.success(), "it started");
    String::from_utf8_lossy(&output.stderr)
        .lines()
        .rfind(|line| line.starts_with("Error: "))
        .unwrap_or_else(|| panic!("no error line: {}", String::from_utf8_lossy(&output.stderr)))
        .to_owned()
}

#[tokio::test]
async fn get_on_a_run_route_is_a_405_that_says_use_post_and_allows_post() {
    let app = spawn_app().await;
    let response = reqwest::get(app.url("/agent")).await.unwrap();
    assert_eq!(response.status(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");
    assert_eq!(
        body["error"]["message"],
        "GET /agent is not served: use POST, with a JSON RunAgentInput body and content-type: \
         application/json (curl -N -H 'content-type: application/json' -d '{\"messages\":[…]}' …)"
    );
    let threads = reqwest::Client::new()
        .post(app.url("/threads/t1"))
        .send()
        .await
        .unwrap();
    assert_eq!(threads.status(), 405);
    assert_eq!(threads.headers()["allow"], "GET, PATCH, DELETE");
    let body: serde_json::Value = threads.json().await.unwrap();
    assert_eq!(
        body["error"]["message"],
        "POST /threads/t1 is not served: use GET or PATCH or DELETE"
    );
}

#[tokio::test]
async fn a_port_already_taken_names_port_and_how_to_choose_another() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let output = start_with(&[("PORT", &port)]).await;
    assert_eq!(
        error_line(&output),
        format!(
            "Error: could not listen on 127.0.0.1:{port}: the address is already in use (another \
             agui-lambda, or another server, has port {port}); stop it, or choose another port \
             with PORT (PORT={} cargo run)",
            port.parse::<u16>().unwrap() + 1
        )
    );
}

#[tokio::test]
async fn run_max_secs_zero_says_the_range_in_words() {
    let output = start_with(&[("RUN_MAX_SECS", "0")]).await;
    assert_eq!(
        error_line(&output),
        "Error: RUN_MAX_SECS=0 is out of range: it takes a whole number from 1 to 86400 \
         (docs/configuration.md)"
    );
}

#[tokio::test]
async fn anthropic_without_its_key_names_anthropic_api_key() {
    let output = start_with(&[("MODEL_PROVIDER", "anthropic")]).await;
    assert_eq!(
        error_line(&output),
        "Error: MODEL_PROVIDER=anthropic needs ANTHROPIC_API_KEY (or ANTHROPIC_API_KEY_SECRET_ID, \
         a Secrets Manager secret; or ANTHROPIC_BASE_URL for a gateway that holds the key)"
    );
}

#[tokio::test]
async fn a_model_api_nobody_answers_ends_the_run_with_the_cause() {
    let nobody = format!("http://127.0.0.1:{}/v1", free_port());
    let store = std::sync::Arc::new(agui_lambda::testing::store::MemoryStore::new());
    let app = spawn_app_on_model_url(&nobody, &[], store, tools(), None).await;
    let events = app
        .run(&run_input(
            &new_thread(),
            "r1",
            json!([{"id": "u1", "role": "user", "content": "hello"}]),
        ))
        .await
        .events();
    let end = events.last().unwrap();
    assert_eq!(end["type"], "RUN_ERROR");
    assert_eq!(end["code"], "MODEL_UNAVAILABLE");
    let message = end["message"].as_str().unwrap();
    assert!(
        message.starts_with("the model API could not be reached: Connection refused"),
        "{message}"
    );
    assert!(
        !message.contains("127.0.0.1"),
        "no URL reaches a client: {message}"
    );
}

#[tokio::test]
async fn memory_asked_of_a_server_without_it_says_how_to_turn_it_on() {
    let app = spawn_app().await;
    let reply = app.get("/memories").await;
    assert_eq!(reply.status, 404);
    assert_eq!(reply.json()["error"]["code"], "memory_disabled");
    assert_eq!(
        reply.json()["error"]["message"],
        "memory is off on this server: start it with MEMORY=on (or give a profile \"memory\": \
         true) to keep memories across threads"
    );
}

fn tools() -> agui_lambda::testing::agent::ToolRegistry {
    agui_lambda::testing::agent::ToolRegistry::with_builtins().unwrap()
}

#[tokio::test]
async fn a_table_without_aws_settings_names_them_and_the_local_way() {
    // No AWS settings at all; the metadata service off, so no machine's own role can stand in.
    let output = start_with(&[
        ("THREADS_TABLE", "threads"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ])
    .await;
    assert_eq!(
        error_line(&output),
        "Error: THREADS_TABLE=threads needs an AWS region: set AWS_REGION (or AWS_PROFILE with a \
         region). For a local table set AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000 instead \
         (bash scripts/dynamodb-local.sh starts DynamoDB Local there)"
    );
}
