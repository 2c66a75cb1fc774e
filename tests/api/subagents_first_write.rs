//! A delegation's first write, on DynamoDB Local: from the coordinator's call of a sub-agent to
//! the child's first event the store sees one write (the child's start carrying the
//! coordinator's checkpoint and pending events), and a process that crashes between the two,
//! before that write or after it, leaves a run whose recovery runs the child once. Each app's
//! store calls go through a proxy (`dynamo_proxy`) that counts them and stands for the crash.

use crate::dynamo_local;
use crate::dynamo_proxy::{Call, CrashAt, DynamoProxy};
use agui_lambda::testing::config::Config;
use agui_lambda::testing::model::scripted::{ScriptedModel, ScriptedTurn};
use agui_lambda::testing::model::{ModelDelta, ModelProvider, ModelRequest};
use agui_lambda::testing::protocol::verify::parse_sse;
use agui_lambda::testing::startup;
use agui_lambda::testing::store::{DynamoStore, ThreadStore};
use agui_lambda::tools::ToolRegistry;
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

const PROFILES: &str = r#"{"coordinator": {"subagents": ["researcher"]}, "researcher": {"systemPrompt": "Research."}}"#;

/// The scripted model, pausing 100 ms before each turn's end: the test reads the store's calls
/// while the coordinator's call is made and its turn not over yet, and a child's first event
/// comes well before its run ends.
#[derive(Clone)]
struct Paced(ScriptedModel);

#[async_trait::async_trait]
impl ModelProvider for Paced {
    async fn stream(
        &self,
        request: &ModelRequest,
    ) -> Result<agui_lambda::testing::model::DeltaStream, agui_lambda::testing::model::ModelError>
    {
        let inner = self.0.stream(request).await?;
        Ok(Box::pin(inner.then(|delta| async move {
            if let Ok(ModelDelta::Finish(_)) = &delta {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            delta
        })))
    }

    fn describe(&self) -> String {
        "paced scripted model".to_owned()
    }

    fn identity(&self) -> agui_lambda::testing::model::ModelIdentity {
        self.0.identity()
    }
}

/// The coordinator on `table` through `proxy` (or DynamoDB Local itself), on `model`.
async fn coordinator(
    table: &str,
    through: &str,
    model: &ScriptedModel,
    extra: &[(&str, &str)],
) -> String {
    let mut vars: HashMap<String, String> = [
        ("AGENT_PROFILES", PROFILES),
        ("AGENT_DEFAULT_PROFILE", "coordinator"),
        // The recorder writes on its own only every 5 s: what is written in the window is what
        // the delegation waits for.
        ("RUN_EVENTS_RECORD_MS", "5000"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect();
    vars.extend(
        extra
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    );
    let config = Config::from_map(&vars).unwrap();
    let store: Arc<dyn ThreadStore> = Arc::new(DynamoStore::new(
        dynamo_local::client(through),
        table.to_owned(),
        0,
    ));
    let model: Arc<dyn ModelProvider> = Arc::new(Paced(model.clone()));
    let app = startup::AppBuilder::new(&config)
        .model(model)
        .store(store)
        .tools(ToolRegistry::with_builtins().unwrap())
        .build()
        .await
        .unwrap();
    let (addr, _server) =
        agui_lambda::testing::api::bind(Arc::new(app), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
    format!("http://{addr}")
}

fn input(thread: &str) -> Value {
    json!({
        "threadId": thread, "runId": "r1", "protocolVersion": "1.0",
        "state": {}, "tools": [], "context": [], "forwardedProps": {},
        "messages": [{"id": "u1", "role": "user", "content": "delegate"}],
    })
}

fn delegation(id: &str) -> ScriptedTurn {
    ScriptedTurn::tool_calls(None, &[(id, "researcher", r#"{"task": "find a fact"}"#)])
}

/// POSTs a run, calling `on_event` with each event as it arrives until it returns false.
async fn run_until(base: &str, body: &Value, mut on_event: impl FnMut(&Value) -> bool) {
    let response = reqwest::Client::new()
        .post(format!("{base}/agent"))
        .json(body)
        .send()
        .await
        .unwrap();
    let mut chunks = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(Ok(chunk)) = chunks.next().await {
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            for event in parse_sse(&frame).unwrap() {
                if !on_event(&event) {
                    return;
                }
            }
        }
    }
}

#[tokio::test]
async fn a_delegation_writes_once_before_its_childs_first_event() {
    let (_, table) = dynamo_local::new_table().await;
    let proxy = DynamoProxy::start(dynamo_local::endpoint().await).await;
    let model = ScriptedModel::default();
    let base = coordinator(&table, &proxy.url, &model, &[]).await;
    for run in 0..5 {
        model.push(delegation("c1"));
        model.push(ScriptedTurn::text("The moon is 384,400 km away."));
        model.push(ScriptedTurn::text("Done."));
        let (mut called, mut started, mut window) = (None, false, None);
        run_until(&base, &input(&format!("t-first-write-{run}")), |event| {
            if event["type"] == "TOOL_CALL_ARGS" && called.is_none() {
                called = Some(proxy.calls().len());
            } else if event["type"] == "SUBAGENT_STARTED" {
                started = true;
            } else if started && window.is_none() && event.get("subagentRunId").is_some() {
                window = Some(proxy.calls()[called.unwrap()..].to_vec());
            }
            true
        })
        .await;
        let window = window.expect("the child's first event");
        let writes: Vec<&Call> = window.iter().filter(|call| call.is_write()).collect();
        println!(
            "run {run}: store calls from the coordinator's call to the child's first event: {:?}",
            window
                .iter()
                .map(|call| &call.operation)
                .collect::<Vec<_>>()
        );
        assert_eq!(writes.len(), 1, "one write: {window:#?}");
        let write = writes[0];
        assert_eq!(write.operation, "TransactWriteItems");
        assert!(write.holds("parentCall"), "the child's start");
        assert!(write.holds("\"record\""), "the coordinator's checkpoint");
        assert!(write.holds("TOOL_CALL_ARGS"), "and its pending events");
    }
}

/// The child's threads on `table`, linked to `parent`.
async fn children(table: &str, parent: &str) -> usize {
    let client = dynamo_local::client(dynamo_local::endpoint().await);
    dynamo_local::scan(&client, table)
        .await
        .iter()
        .filter(|item| {
            item.get("sk")
                .and_then(|sk| sk.as_s().ok())
                .map(String::as_str)
                == Some("META")
                && item
                    .get("parentThread")
                    .and_then(|value| value.as_s().ok())
                    .map(String::as_str)
                    == Some(parent)
        })
        .count()
}

/// The run's events, followed from another process (which recovers the run).
async fn follow(base: &str, thread: &str) -> Vec<Value> {
    let body = reqwest::get(format!("{base}/threads/{thread}/runs/r1/events"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    parse_sse(&body).unwrap()
}

/// The coordinator's process crashes at its delegation's first write (before it reaches the
/// store, or after), and another process recovers the run: the events it followed, and how
/// many child threads exist.
async fn crash_and_recover(
    crash: CrashAt,
    first: &ScriptedModel,
    second: &ScriptedModel,
) -> (Vec<Value>, usize) {
    let (_, table) = dynamo_local::new_table().await;
    let proxy = DynamoProxy::start(dynamo_local::endpoint().await).await;
    proxy.crash_at(crash);
    let lease = [("RUN_LEASE_SECS", "2")];
    let crashing = coordinator(&table, &proxy.url, first, &lease).await;
    let thread = format!("t-crash-{}", uuid::Uuid::new_v4().simple());
    let body = input(&thread);
    let run = tokio::spawn(async move { run_until(&crashing, &body, |_| true).await });
    for _ in 0..200 {
        if proxy.crashed() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(proxy.crashed(), "the delegation reached its first write");
    run.abort();
    // The crashed runner's lease lapses; a follower on another process has the run recovered.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let recovering = coordinator(&table, dynamo_local::endpoint().await, second, &lease).await;
    let events = follow(&recovering, &thread).await;
    (events, children(&table, &thread).await)
}

fn is_first_write(call: &Call) -> bool {
    call.operation == "TransactWriteItems" && call.holds("parentCall")
}

#[tokio::test]
async fn a_crash_before_the_first_write_runs_the_child_once_after_recovery() {
    // A first step (a server tool) gives the run a checkpoint to be taken over from.
    let first = ScriptedModel::new([
        ScriptedTurn::tool_calls(None, &[("c0", "get_current_time", "{}")]),
        delegation("c1"),
    ]);
    let second = ScriptedModel::new([
        delegation("c1"),
        ScriptedTurn::text("The moon is 384,400 km away."),
        ScriptedTurn::text("Done."),
    ]);
    let crash = CrashAt {
        matches: is_first_write,
        forwarded: false,
    };
    let (events, children) = crash_and_recover(crash, &first, &second).await;
    assert_eq!(
        events.last().unwrap()["type"],
        "RUN_FINISHED",
        "{events:#?}"
    );
    assert_eq!(
        children, 1,
        "the child started once, by the recovering runner"
    );
    let finished: Vec<&Value> = events
        .iter()
        .filter(|event| event["type"] == "SUBAGENT_FINISHED")
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["result"], "The moon is 384,400 km away.");
    assert_eq!(
        second.requests().len(),
        3,
        "the model turn, the child's, the answer"
    );
}

#[tokio::test]
async fn a_crash_after_the_first_write_never_runs_the_child_again() {
    let first = ScriptedModel::new([delegation("c1")]);
    let second = ScriptedModel::new([ScriptedTurn::text("I could not reach the researcher.")]);
    let crash = CrashAt {
        matches: is_first_write,
        forwarded: true,
    };
    let (events, children) = crash_and_recover(crash, &first, &second).await;
    assert_eq!(
        events.last().unwrap()["type"],
        "RUN_FINISHED",
        "{events:#?}"
    );
    assert_eq!(children, 1, "the child's thread, begun once");
    // The recovering runner answers the delegation it finds started without a result as cut
    // off: it may or may not have happened, and it is not made again.
    assert!(
        !events.iter().any(
            |event| event["type"] == "SUBAGENT_STARTED" || event["type"] == "SUBAGENT_FINISHED"
        ),
        "{events:#?}"
    );
    let result = events
        .iter()
        .find(|event| event["type"] == "TOOL_CALL_RESULT" && event["toolCallId"] == "c1")
        .unwrap();
    assert!(
        result["content"].as_str().unwrap().contains("cut off"),
        "{result}"
    );
    assert_eq!(
        second.requests().len(),
        1,
        "the coordinator's answer only: the child never ran again"
    );
}
