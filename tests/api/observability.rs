//! Traces and metrics as an operator receives them: the binary's OTLP export decoded by a real
//! OTLP receiver (tests/otlp_receiver.py, on PyPI's `opentelemetry-proto`), and its EMF records
//! validated against the EMF specification's JSON schema (tests/fixtures/emf/emf-schema.json).

use crate::dynamo_local;
use crate::helpers::*;
use agui_lambda::testing::telemetry::emf::Emf;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

/// The EMF specification's schema, compiled.
fn emf_schema() -> jsonschema::Validator {
    let schema: Value = serde_json::from_slice(
        &std::fs::read(repo_path("tests/fixtures/emf/emf-schema.json")).unwrap(),
    )
    .unwrap();
    jsonschema::draft7::new(&schema).unwrap()
}

/// Checks `line` against the schema and against its own directive: every metric it names has a
/// number, every dimension a string.
fn valid_emf(line: &str) -> Value {
    let record: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"));
    let errors: Vec<String> = emf_schema()
        .iter_errors(&record)
        .map(|error| error.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?} in {line}");
    let directive = &record["_aws"]["CloudWatchMetrics"][0];
    for metric in directive["Metrics"].as_array().unwrap() {
        let name = metric["Name"].as_str().unwrap();
        assert!(record[name].is_number(), "{name} has no value in {line}");
    }
    for set in directive["Dimensions"].as_array().unwrap() {
        for dimension in set.as_array().unwrap() {
            let name = dimension.as_str().unwrap();
            assert!(record[name].is_string(), "{name} has no value in {line}");
        }
    }
    record
}

/// The OTLP receiver (Python, `opentelemetry-proto`), one per test binary.
pub(crate) async fn receiver() -> &'static str {
    static URL: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    URL.get_or_init(|| async {
        let python = repo_path(".venv/bin/python");
        assert!(
            python.exists(),
            "the test venv is missing: run scripts/install-test-tools.sh"
        );
        let port = free_port();
        spawn_watched(&format!(
            "'{python}' '{script}' --port {port}",
            python = python.display(),
            script = repo_path("tests/otlp_receiver.py").display(),
        ));
        let url = format!("http://127.0.0.1:{port}");
        await_ready(&format!("{url}/health"), "the OTLP receiver").await;
        url
    })
    .await
}

/// The spans of trace `trace_id` the receiver has, once the run's `invoke_agent` span is there.
pub(crate) async fn trace(trace_id: &str) -> Vec<Value> {
    let url = receiver().await;
    for _ in 0..100 {
        let spans: Vec<Value> = reqwest::get(format!("{url}/spans"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let mine: Vec<Value> = spans
            .into_iter()
            .filter(|span| span["traceId"] == trace_id)
            .collect();
        let ended = mine.iter().any(|span| span["name"] == "POST")
            && mine
                .iter()
                .any(|span| span["name"].as_str().unwrap().starts_with("invoke_agent"));
        if ended {
            return mine;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("trace {trace_id} did not arrive");
}

/// The binary as a local server on DynamoDB Local and aimock, exporting to the receiver and
/// printing EMF records; its stdout lines are collected.
struct Binary {
    _child: tokio::process::Child,
    url: String,
    stdout: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Binary {
    async fn start(aimock: &Aimock, capture_content: bool) -> Self {
        Self::start_with(aimock, capture_content, &[]).await
    }

    /// [`Binary::start`] with more settings.
    async fn start_with(aimock: &Aimock, capture_content: bool, extra: &[(&str, &str)]) -> Self {
        let (_, table) = dynamo_local::new_table().await;
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_agui-lambda"));
        command.env_clear().envs(extra.iter().copied());
        let mut child = command
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PORT", "0")
            .env("THREADS_TABLE", &table)
            .env("AWS_ENDPOINT_URL_DYNAMODB", dynamo_local::endpoint().await)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "local")
            .env("AWS_SECRET_ACCESS_KEY", "local")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env("OPENAI_BASE_URL", format!("{}/v1", aimock.url))
            .env("OPENAI_API_KEY", "test-key")
            .env("AGENT_MODEL", "test-model")
            .env("MODEL_MAX_RETRIES", "0")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver().await)
            .env("OTEL_SERVICE_NAME", "observed")
            .env("OTEL_BSP_SCHEDULE_DELAY", "100")
            .env("OTEL_CAPTURE_CONTENT", capture_content.to_string())
            .env("EMF_METRICS", "true")
            .env("METRICS_NAMESPACE", "AguiTests")
            .env("RUST_LOG", "info")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let url = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(at) = line.find("listening on http://") {
                    let rest = &line[at + "listening on ".len()..];
                    return rest.split_whitespace().next().unwrap().to_owned();
                }
            }
            panic!("the binary exited before it listened");
        })
        .await
        .expect("the binary listens within 30 s");
        let stdout = Arc::new(std::sync::Mutex::new(Vec::new()));
        let collected = stdout.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                collected.lock().unwrap().push(line);
            }
        });
        Self {
            _child: child,
            url,
            stdout,
        }
    }

    /// Runs `text` as a new thread's first message: the trace id header and the events.
    async fn run(&self, text: &str, headers: &[(&str, &str)]) -> (String, Vec<Value>) {
        let thread = new_thread();
        let mut request = reqwest::Client::new()
            .post(format!("{}/agent", self.url))
            .json(&run_input(
                &thread,
                "run-1",
                json!([{"id": "u1", "role": "user", "content": text}]),
            ));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let trace_id = response.headers()["x-trace-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.text().await.unwrap();
        let events = agui_lambda::testing::protocol::verify::parse_sse(&body).unwrap();
        (trace_id, events)
    }

    /// The EMF record of `run_id` on `thread` once printed.
    async fn emf_record(&self, trace_id: &str) -> Value {
        for _ in 0..100 {
            let found = self
                .stdout
                .lock()
                .unwrap()
                .iter()
                .find(|line| line.starts_with("{\"_aws\"") && line.contains(trace_id))
                .cloned();
            if let Some(line) = found {
                return valid_emf(&line);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no EMF record for trace {trace_id}");
    }
}

fn by_name<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|span| span["name"] == name).collect()
}

fn one<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found = by_name(spans, name);
    assert_eq!(found.len(), 1, "one {name} span in {spans:#?}");
    found[0]
}

fn children<'a>(spans: &'a [Value], parent: &Value) -> Vec<&'a Value> {
    spans
        .iter()
        .filter(|span| span["parentSpanId"] == parent["spanId"])
        .collect()
}

#[expect(
    clippy::too_many_lines,
    reason = "one scenario told top to bottom: each step's assertions sit beside the step"
)]
#[tokio::test]
async fn wire_a_server_tool_round_trip_is_one_trace_of_genai_spans_and_one_emf_record() {
    let aimock = Aimock::start().await;
    let binary = Binary::start(&aimock, true).await;
    // A W3C parent from the client: the trace continues it.
    let parent_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let (trace_id, events) = binary
        .run(
            "what time is it",
            &[(
                "traceparent",
                &format!("00-{parent_trace}-00f067aa0ba902b7-01"),
            )],
        )
        .await;
    assert_eq!(trace_id, parent_trace);
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let spans = trace(&trace_id).await;

    // POST (server) → invoke_agent → chat ×2, execute_tool, DynamoDB.*
    let request = one(&spans, "POST");
    assert_eq!(request["kind"], "SPAN_KIND_SERVER");
    assert_eq!(request["parentSpanId"], "00f067aa0ba902b7");
    assert_eq!(request["attributes"]["http.response.status_code"], 200);
    assert_eq!(request["resource"]["service.name"], "observed");
    let agent = one(&spans, "invoke_agent agui-lambda");
    assert_eq!(agent["parentSpanId"], request["spanId"]);
    assert_eq!(agent["kind"], "SPAN_KIND_INTERNAL");
    let thread_id = events[0]["threadId"].as_str().unwrap();
    let attributes = &agent["attributes"];
    assert_eq!(attributes["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(attributes["gen_ai.conversation.id"], thread_id);
    assert_eq!(attributes["gen_ai.provider.name"], "openai");
    assert_eq!(attributes["gen_ai.request.model"], "test-model");
    assert_eq!(attributes["agui.run.outcome"], "finished");
    let finished = events.last().unwrap();
    let usage = &finished["usage"][0];
    assert_eq!(
        attributes["gen_ai.usage.input_tokens"],
        usage["inputTokens"]
    );
    assert_eq!(
        attributes["gen_ai.usage.output_tokens"],
        usage["outputTokens"]
    );

    let chats = by_name(&spans, "chat test-model");
    assert_eq!(chats.len(), 2, "two model turns");
    for chat in &chats {
        assert_eq!(chat["parentSpanId"], agent["spanId"]);
        assert_eq!(chat["kind"], "SPAN_KIND_CLIENT");
        let attributes = &chat["attributes"];
        assert_eq!(attributes["gen_ai.operation.name"], "chat");
        assert_eq!(attributes["gen_ai.provider.name"], "openai");
        assert_eq!(attributes["gen_ai.request.model"], "test-model");
        assert!(attributes["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0);
        assert!(
            attributes["gen_ai.response.time_to_first_chunk"]
                .as_f64()
                .unwrap()
                > 0.0
        );
        // Content capture is on: the prompt is on the span.
        assert!(
            attributes["gen_ai.input.messages"]
                .as_str()
                .unwrap()
                .contains("what time is it")
        );
    }
    let mut response_ids: Vec<&str> = chats
        .iter()
        .map(|chat| chat["attributes"]["gen_ai.response.id"].as_str().unwrap())
        .collect();
    response_ids.sort_unstable();
    assert_eq!(
        response_ids,
        ["chatcmpl-server-tool-1", "chatcmpl-server-tool-2"]
    );
    let mut reasons: Vec<Value> = chats
        .iter()
        .map(|chat| chat["attributes"]["gen_ai.response.finish_reasons"].clone())
        .collect();
    reasons.sort_by_key(ToString::to_string);
    assert_eq!(reasons, [json!(["stop"]), json!(["tool_call"])]);

    let tool = one(&spans, "execute_tool get_current_time");
    assert_eq!(tool["parentSpanId"], agent["spanId"]);
    assert_eq!(tool["attributes"]["gen_ai.tool.name"], "get_current_time");
    assert_eq!(tool["attributes"]["gen_ai.tool.call.id"], "call_time_1");
    assert!(
        tool["attributes"]["gen_ai.tool.call.arguments"]
            .as_str()
            .unwrap()
            .contains("timezone")
    );

    // Every store call, from admission (under POST) to the end of the run (under invoke_agent).
    let store_calls: Vec<&Value> = spans
        .iter()
        .filter(|span| span["name"].as_str().unwrap().starts_with("DynamoDB."))
        .collect();
    assert!(store_calls.len() >= 3, "{store_calls:#?}");
    for call in &store_calls {
        assert_eq!(call["kind"], "SPAN_KIND_CLIENT");
        assert_eq!(call["attributes"]["db.system.name"], "aws.dynamodb");
        assert_eq!(call["attributes"]["rpc.service"], "DynamoDB");
        let operation = call["attributes"]["db.operation.name"].as_str().unwrap();
        assert_eq!(call["name"], format!("DynamoDB.{operation}"));
        assert!(
            call["attributes"]["aws.dynamodb.table_names"]
                .as_str()
                .unwrap()
                .starts_with("threads-")
        );
        assert!(
            call["parentSpanId"] == agent["spanId"] || call["parentSpanId"] == request["spanId"],
            "{call:#?}"
        );
    }
    assert!(
        children(&spans, agent)
            .iter()
            .any(|span| span["name"] == "DynamoDB.TransactWriteItems"),
        "the run's output is stored inside invoke_agent: {:?}",
        children(&spans, agent)
            .iter()
            .map(|span| span["name"].clone())
            .collect::<Vec<_>>()
    );

    // The EMF record of the same run.
    let record = binary.emf_record(&trace_id).await;
    let directive = &record["_aws"]["CloudWatchMetrics"][0];
    assert_eq!(directive["Namespace"], "AguiTests");
    assert_eq!(
        directive["Dimensions"],
        json!([["service"], ["service", "outcome", "model", "dialect"]])
    );
    assert_eq!(record["service"], "observed");
    assert_eq!(record["outcome"], "finished");
    assert_eq!(record["model"], "test-model");
    assert_eq!(record["dialect"], "ag-ui");
    assert_eq!(record["runId"], "run-1");
    assert_eq!(record["threadId"], thread_id);
    assert_eq!(record["Runs"], 1);
    assert_eq!(record["Errors"], 0);
    assert_eq!(record["Steps"], 2);
    assert_eq!(record["ToolCalls"], 1);
    assert_eq!(record["Cancels"], 0);
    assert_eq!(record["Resumes"], 0);
    assert_eq!(record["InputTokens"], usage["inputTokens"]);
    assert_eq!(record["OutputTokens"], usage["outputTokens"]);
    let number = |name: &str| record[name].as_f64().unwrap();
    assert!(number("StoreReadCalls") >= 1.0 && number("StoreWriteCalls") >= 2.0);
    // DynamoDB Local reports no capacity for reading an item that does not exist (a new thread).
    assert!(
        number("StoreReadCapacity") >= 0.0 && number("StoreWriteCapacity") > 0.0,
        "{record}"
    );
    assert!(number("StoreReadTime") > 0.0 && number("StoreWriteTime") > 0.0);
    assert!(number("TimeToFirstByte") > 0.0);
    assert!(number("TimeToFirstToken") >= number("TimeToFirstByte"));
    assert!(number("Duration") >= number("TimeToFirstToken"));
}

#[tokio::test]
async fn wire_a_failed_run_is_an_error_span_and_an_error_record_and_content_stays_off() {
    let aimock = Aimock::start().await;
    let binary = Binary::start(&aimock, false).await;
    let (trace_id, events) = binary.run("server error please", &[]).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_ERROR");
    let spans = trace(&trace_id).await;
    let request = one(&spans, "POST");
    assert_eq!(request["parentSpanId"], "", "no parent: a trace of its own");
    let agent = one(&spans, "invoke_agent agui-lambda");
    assert_eq!(agent["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(agent["attributes"]["error.type"], "MODEL_UNAVAILABLE");
    assert_eq!(agent["attributes"]["agui.run.outcome"], "error");
    let chat = one(&spans, "chat test-model");
    assert_eq!(chat["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(chat["attributes"]["error.type"], "model_error");
    assert!(
        chat["attributes"].get("gen_ai.input.messages").is_none(),
        "no content without OTEL_CAPTURE_CONTENT"
    );

    let record = binary.emf_record(&trace_id).await;
    assert_eq!(record["outcome"], "error");
    assert_eq!(record["Errors"], 1);
    assert_eq!(record["Runs"], 1);
    assert_eq!(record["Steps"], 1);
    assert_eq!(record["ToolCalls"], 0);
    assert!(
        record.get("TimeToFirstToken").is_none(),
        "the model said nothing"
    );

    // And a tool round trip without content capture carries no arguments.
    let (trace_id, _) = binary.run("what time is it", &[]).await;
    let spans = trace(&trace_id).await;
    let tool = one(&spans, "execute_tool get_current_time");
    assert!(
        tool["attributes"]
            .get("gen_ai.tool.call.arguments")
            .is_none()
    );
}

/// In process, without Node: the records of a run that is cancelled and rejoined.
#[tokio::test]
async fn a_cancelled_and_rejoined_run_counts_one_cancel_and_one_resume() {
    let (emf, lines) = Emf::in_memory("AguiTests", "in-process");
    let store = dynamo_local::new_store().await;
    let app = spawn_app_with_metrics(&[], store, emf).await;
    let thread = new_thread();
    let started = app
        .http
        .post(app.url("/agent"))
        .json(&run_input(
            &thread,
            "slow-run",
            json!([{"id": "u1", "role": "user", "content": "stream slowly"}]),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 200);
    // A second client rejoins the run while it streams, then the run is stopped.
    let rejoined = app
        .http
        .get(app.url(&format!("/threads/{thread}/runs/slow-run/events")))
        .send()
        .await
        .unwrap();
    assert_eq!(rejoined.status(), 200);
    let cancelled = app
        .http
        .post(app.url(&format!("/threads/{thread}/runs/slow-run/cancel")))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 202);
    let _ = started.text().await.unwrap();
    let _ = rejoined.text().await.unwrap();
    let record = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            if let Some(line) = lines.lock().unwrap().first().cloned() {
                return valid_emf(&line);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("an EMF record");
    assert_eq!(record["outcome"], "cancelled");
    assert_eq!(record["Cancels"], 1);
    assert_eq!(record["Resumes"], 1);
    assert_eq!(record["Errors"], 0);
    assert_eq!(record["service"], "in-process");
    assert!(record["StoreWriteCalls"].as_f64().unwrap() >= 2.0);
}

#[tokio::test]
async fn wire_a_delegation_nests_the_child_s_trace_under_the_parent_s_tool_call_and_counts_it() {
    let aimock = Aimock::start().await;
    let profiles = r#"{"coordinator": {"subagents": ["researcher"]}, "researcher": {}}"#;
    let binary = Binary::start_with(
        &aimock,
        false,
        &[
            ("AGENT_PROFILES", profiles),
            ("AGENT_DEFAULT_PROFILE", "coordinator"),
        ],
    )
    .await;
    let (trace_id, events) = binary.run("[subagents] research the moon", &[]).await;
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let mut spans = trace(&trace_id).await;
    for _ in 0..50 {
        if by_name(&spans, "invoke_agent researcher").len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        spans = trace(&trace_id).await;
    }
    // invoke_agent coordinator → execute_tool researcher → invoke_agent researcher → chat
    let parent = one(&spans, "invoke_agent coordinator");
    let call = one(&spans, "execute_tool researcher");
    assert_eq!(call["parentSpanId"], parent["spanId"]);
    let child = one(&spans, "invoke_agent researcher");
    assert_eq!(child["parentSpanId"], call["spanId"]);
    assert!(
        children(&spans, child)
            .iter()
            .any(|span| span["name"] == "chat test-model"),
        "the child's model turn is its own"
    );
    // One record per run, both in the trace: the parent counts its sub-agent run, the child's
    // says what it was.
    for _ in 0..100 {
        let records: Vec<Value> = binary
            .stdout
            .lock()
            .unwrap()
            .iter()
            .filter(|line| line.starts_with("{\"_aws\"") && line.contains(&trace_id))
            .map(|line| valid_emf(line))
            .collect();
        if records.len() == 2 {
            let (parent, child): (Vec<&Value>, Vec<&Value>) = records
                .iter()
                .partition(|record| record["dialect"] == "ag-ui");
            assert_eq!(parent[0]["SubagentRuns"], 1);
            assert_eq!(child[0]["dialect"], "subagent");
            assert_eq!(child[0]["SubagentRuns"], 0);
            assert_eq!(child[0]["outcome"], "finished");
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("not one EMF record for each of the two runs");
}
