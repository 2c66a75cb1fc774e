//! Runs that outlast an invocation, under the Lambda emulator (`lambda_emulator`): the built
//! binary on DynamoDB Local, a loopback model whose answer depends only on the thread so far
//! (`step_model`), slow MCP tools that count their executions by key (`slow_tools`). A short
//! invocation timeout stands for Lambda's 15 minutes. Each scenario checks what a client sees
//! (one run, event ids without gaps or repeats) and what the store keeps.

use crate::dynamo_local;
use crate::lambda_emulator::{Delivery, Emulator, Settings};
use crate::slow_tools::SlowTools;
pub(crate) use crate::sse_follow::{Frame, follow};
use crate::step_model::{Answer, Asked, StepModel};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The invocation timeout that stands for Lambda's 15 minutes.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(5);

/// The function, its model and its tools.
pub(crate) struct Setup {
    pub emulator: Emulator,
    pub tools: SlowTools,
    /// Serving the function's model for as long as the setup lives.
    pub _model: StepModel,
}

/// A function under the emulator whose model answers `script(step)`.
pub(crate) async fn setup(
    delivery: Delivery,
    extra: &[(&str, &str)],
    script: impl Fn(&Asked) -> Answer + Send + Sync + 'static,
) -> Setup {
    setup_with(delivery, extra, script, 6).await
}

/// [`setup`] with up to `environments` execution environments at once.
pub(crate) async fn setup_with(
    delivery: Delivery,
    extra: &[(&str, &str)],
    script: impl Fn(&Asked) -> Answer + Send + Sync + 'static,
    environments: usize,
) -> Setup {
    let (_, table) = dynamo_local::new_table().await;
    let tools = SlowTools::start(400).await;
    let model = StepModel::start(Duration::from_millis(40), script).await;
    let mut env: Vec<(String, String)> = [
        ("THREADS_TABLE", table.as_str()),
        ("AWS_ENDPOINT_URL_DYNAMODB", dynamo_local::endpoint().await),
        ("OPENAI_BASE_URL", model.url.as_str()),
        ("OPENAI_API_KEY", "test-key"),
        ("AGENT_MODEL", "step-model"),
        ("MODEL_MAX_RETRIES", "0"),
        ("AGENT_MAX_STEPS", "60"),
        ("RUN_LEASE_SECS", "4"),
        ("DEADLINE_MARGIN_MS", "1000"),
        ("HANDOFF_STEP_SECS", "1"),
        ("RUST_LOG", "info"),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value.to_owned()))
    .collect();
    env.push(("MCP_SERVERS".into(), tools.servers(2_000)));
    env.extend(
        extra
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned())),
    );
    let emulator = Emulator::start(Settings {
        timeout: TIMEOUT,
        delivery,
        env,
        max_environments: environments,
    })
    .await;
    Setup {
        emulator,
        tools,
        _model: model,
    }
}

/// `steps` steps, each one call of `slow__step` (key `{tag}s{n}`, the tag the user message's
/// first word when it names one, as `tag:`), then the answer.
pub(crate) fn stepping(steps: usize) -> impl Fn(&Asked) -> Answer + Send + Sync + 'static {
    stepping_ms(steps, None)
}

/// [`stepping`], each call taking `ms` (the tools' default when `None`).
pub(crate) fn stepping_ms(
    steps: usize,
    ms: Option<u64>,
) -> impl Fn(&Asked) -> Answer + Send + Sync + 'static {
    move |asked| {
        let tag = asked
            .user
            .split_whitespace()
            .next()
            .and_then(|word| word.strip_suffix(':'))
            .map_or_else(String::new, |tag| format!("{tag}-"));
        let step = asked.step;
        if step < steps {
            let mut arguments = json!({"key": format!("{tag}s{step}")});
            if let Some(ms) = ms {
                arguments["ms"] = json!(ms);
            }
            Answer::Call {
                name: "slow__step".into(),
                arguments,
            }
        } else {
            Answer::Text {
                words: vec!["All".into(), " steps".into(), " done.".into()],
                every: Duration::from_millis(10),
            }
        }
    }
}

pub(crate) fn input(thread: &str, run: &str) -> Value {
    json!({
        "threadId": thread,
        "runId": run,
        "protocolVersion": "1.0",
        "messages": [{"id": format!("u-{run}"), "role": "user", "content": "work through the steps"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    })
}

/// The thread as `GET /threads/{id}` returns it.
pub(crate) async fn thread(url: &str, thread: &str) -> Value {
    reqwest::get(format!("{url}/threads/{thread}?limit=500"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The run's recorded events from the start, as a client that joins late reads them.
pub(crate) async fn replay(url: &str, thread: &str, run: &str) -> Vec<Frame> {
    let response = reqwest::get(format!("{url}/threads/{thread}/runs/{run}/events"))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    crate::sse_follow::frames(response, |_| {}).await.0
}

/// One RUN_STARTED, one terminal event last, ids 1..=n.
pub(crate) fn assert_one_run(events: &[&Frame]) {
    let ids: Vec<u64> = events.iter().filter_map(|frame| frame.id).collect();
    assert_eq!(ids, (1..=events.len() as u64).collect::<Vec<_>>());
    let count = |kind: &str| events.iter().filter(|frame| frame.kind() == kind).count();
    assert_eq!(count("RUN_STARTED"), 1);
    assert_eq!(count("RUN_FINISHED") + count("RUN_ERROR"), 1);
    assert!(events.last().unwrap().terminal());
    for frame in events {
        assert_eq!(
            frame.event["metadata"]["agui-lambda"]["eventId"],
            json!(frame.id),
            "each event says where it is"
        );
    }
}

/// The emulator's asynchronous invocations that carried continuations: each one's event and
/// what it answered (`continued`, `held`, `gone`…).
pub(crate) fn continuations(emulator: &Emulator) -> Vec<(Value, String)> {
    emulator
        .records()
        .into_iter()
        .filter(|record| record.kind == "aguiContinuedRun")
        .map(|record| {
            let answer = record.answer.unwrap_or_default();
            let said = serde_json::from_str::<Value>(&answer)
                .ok()
                .and_then(|value| value["continuedRun"].as_str().map(str::to_owned))
                .unwrap_or(answer);
            (record.payload["aguiContinuedRun"].clone(), said)
        })
        .collect()
}

fn continuation_answers(emulator: &Emulator) -> Vec<String> {
    continuations(emulator)
        .into_iter()
        .map(|(_, answer)| answer)
        .collect()
}

fn log_tail(emulator: &Emulator) -> String {
    let log = emulator.log();
    log[log.len().saturating_sub(80)..].join("\n")
}

/// A 40-step run lasting at least four invocation timeouts, started twice at once: by our
/// resumable client, which must see one seamless run, and by `@ag-ui/client` 1.0.0's plain
/// `HttpAgent`, which must get a clean terminal event and then find the finished thread
/// (clients/resumable-agent/test/handoff.test.mjs). Then what the store kept of both.
#[tokio::test]
async fn wire_a_forty_step_run_outlasts_four_invocations_and_both_clients_follow_it() {
    const STEPS: usize = 40;
    let client = crate::helpers::repo_path("clients/resumable-agent");
    let built = std::process::Command::new(client.join("node_modules/.bin/tsc"))
        .args(["-p", "tsconfig.json"])
        .current_dir(&client)
        .status()
        .expect("the client's TypeScript compiler runs (npm ci in clients/resumable-agent)");
    assert!(built.success());
    let setup = setup_with(Delivery::default(), &[], stepping_ms(STEPS, Some(500)), 10).await;
    let started = Instant::now();
    let node = tokio::process::Command::new("node")
        .args(["--test", "test/handoff.test.mjs"])
        .current_dir(&client)
        .env("AGUI_HANDOFF_BASE", &setup.emulator.url)
        .env("AGUI_HANDOFF_STEPS", STEPS.to_string())
        .env("AGUI_HANDOFF_THREAD_RESUMABLE", "t-forty-resumable")
        .env("AGUI_HANDOFF_THREAD_PLAIN", "t-forty-plain")
        .output()
        .await
        .expect("node runs");
    let elapsed = started.elapsed();
    let report = String::from_utf8_lossy(&node.stdout);
    assert!(
        node.status.success() && report.contains("# pass 2"),
        "{report}\n{}\n{}",
        String::from_utf8_lossy(&node.stderr),
        log_tail(&setup.emulator)
    );
    assert!(elapsed >= TIMEOUT * 4, "the runs lasted {elapsed:?}");
    let executions = setup.tools.executions();
    for (tag, thread_id, run_id) in [
        ("resumable", "t-forty-resumable", "r-resumable"),
        ("plain", "t-forty-plain", "r-plain"),
    ] {
        // Every tool once.
        for step in 0..STEPS {
            assert_eq!(
                executions.get(&format!("step:{tag}-s{step}")),
                Some(&1),
                "{tag} s{step}"
            );
        }
        // One assistant message per step (and the answer), each step's result after it.
        let stored = thread(&setup.emulator.url, thread_id).await;
        let roles: Vec<&str> = stored["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|message| message["role"].as_str().unwrap())
            .collect();
        let mut expected = vec!["user"];
        for _ in 0..STEPS {
            expected.extend(["assistant", "tool"]);
        }
        expected.push("assistant");
        assert_eq!(roles, expected, "{tag}");
        // One run in the event log: one RUN_STARTED, one RUN_FINISHED, ids without gaps.
        let replayed = replay(&setup.emulator.url, thread_id, run_id).await;
        let replayed: Vec<&Frame> = replayed.iter().collect();
        assert_one_run(&replayed);
        assert_eq!(replayed.last().unwrap().kind(), "RUN_FINISHED");
        // Its invocations: the first, and one continuation per hand-off, each taken once.
        let continued = continuations(&setup.emulator)
            .into_iter()
            .filter(|(event, answer)| event["threadId"] == thread_id && answer == "continued")
            .count();
        assert!(continued >= 4, "{tag}: {continued} hand-offs");
    }
    let records = setup.emulator.records();
    let first = records.iter().map(|record| record.started).min().unwrap();
    println!(
        "forty steps, twice at once: {elapsed:?}, {} invocations ({} asynchronous) over {:?}",
        records.len(),
        records.iter().filter(|record| record.asynchronous).count(),
        first.elapsed()
    );
}

#[tokio::test]
async fn long_runs_duplicate_and_late_continuation_deliveries_change_nothing() {
    let delivery = Delivery {
        // Every continuation comes twice, the second long after the first took the run.
        duplicate_after: Some(Duration::from_millis(2_500)),
        ..Delivery::default()
    };
    let receiver = crate::observability::receiver().await;
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ("EMF_METRICS", "true"),
    ];
    let setup = setup(delivery, &otel, stepping(12)).await;
    let url = &setup.emulator.url;
    let followed = follow(url, &input("t-duplicates", "r1"), |_| {}).await;
    assert_one_run(&followed.events());
    assert_eq!(followed.events().last().unwrap().kind(), "RUN_FINISHED");
    assert!(followed.notices >= 1, "{}", log_tail(&setup.emulator));
    let executions = setup.tools.executions();
    assert_eq!(executions.len(), 12);
    assert!(
        executions.values().all(|count| *count == 1),
        "{executions:?}"
    );
    // Let the last duplicates arrive, then: each hand-off's continuation was delivered twice,
    // took the run once, and its other delivery did nothing.
    tokio::time::sleep(Duration::from_millis(4_000)).await;
    let delivered = continuations(&setup.emulator);
    let mut handoffs: Vec<&Value> = delivered.iter().map(|(event, _)| event).collect();
    handoffs.dedup();
    handoffs.sort_by_key(|event| event["handedOffBy"].as_u64());
    handoffs.dedup();
    assert!(!handoffs.is_empty());
    for handoff in &handoffs {
        let answers: Vec<&str> = delivered
            .iter()
            .filter(|(event, _)| event == *handoff)
            .map(|(_, answer)| answer.as_str())
            .collect();
        assert_eq!(answers.len(), 2, "{handoff}: {answers:?}");
        assert_eq!(
            answers.iter().filter(|a| **a == "continued").count(),
            1,
            "{handoff}: {answers:?}"
        );
        assert!(
            answers
                .iter()
                .all(|a| ["continued", "held", "gone"].contains(a)),
            "{answers:?}"
        );
    }
    assert_eq!(
        setup.tools.executions(),
        executions,
        "nothing ran after the run ended"
    );
    let stored = thread(url, "t-duplicates").await;
    assert!(stored["activeRunId"].is_null());
    let messages = stored["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1 + 12 * 2 + 1);
    let replayed = replay(url, "t-duplicates", "r1").await;
    let replayed: Vec<&Frame> = replayed.iter().collect();
    assert_one_run(&replayed);
    assert_eq!(replayed.len(), followed.events().len());
    assert_visible(&setup.emulator, receiver, handoffs.len()).await;
}

/// The run's invocations are one trace (each runner's span the child of the one before, each
/// saying which runner it is), and its one EMF record counts its hand-offs.
async fn assert_visible(emulator: &Emulator, receiver: &str, handoffs: usize) {
    let records: Vec<Value> = emulator
        .log()
        .iter()
        .filter_map(|line| line.split_once("] ").map(|(_, json)| json))
        .filter_map(|json| serde_json::from_str::<Value>(json).ok())
        .filter(|record| record["_aws"].is_object() && record["runId"] == "r1")
        .collect();
    assert_eq!(records.len(), 1, "one EMF record per run: {records:?}");
    assert_eq!(records[0]["Handoffs"], handoffs);
    assert_eq!(records[0]["Steps"], 13);
    let mut runners: Vec<Value> = Vec::new();
    let mut all: Vec<Value> = Vec::new();
    for _ in 0..100 {
        let spans: Vec<Value> = reqwest::get(format!("{receiver}/spans"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        all.clone_from(&spans);
        runners = spans
            .into_iter()
            .filter(|span| {
                span["name"]
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("invoke_agent")
                    && span["attributes"]["gen_ai.conversation.id"] == "t-duplicates"
            })
            .collect();
        if runners.len() > handoffs {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        runners.len(),
        handoffs + 1,
        "a span per runner: {:?}",
        all.iter()
            .map(|span| (&span["name"], &span["attributes"]))
            .collect::<Vec<_>>()
    );
    runners.sort_by_key(|span| span["attributes"]["agui.run.runner"].as_i64());
    for pair in runners.windows(2) {
        assert_eq!(pair[1]["traceId"], pair[0]["traceId"], "one trace");
        assert_eq!(
            pair[1]["parentSpanId"], pair[0]["spanId"],
            "linked runner to runner"
        );
    }
    let outcomes: Vec<&str> = runners
        .iter()
        .map(|span| {
            span["attributes"]["agui.run.outcome"]
                .as_str()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(outcomes.last(), Some(&"finished"));
    assert!(
        outcomes[..handoffs]
            .iter()
            .all(|outcome| *outcome == "handed_off"),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn long_runs_a_process_killed_inside_a_tool_call_resumes_and_never_runs_a_non_idempotent_call_twice()
 {
    // Step 1 reads a page (idempotent), step 4 charges a card (not); both long enough to be
    // killed in.
    let script = |asked: &Asked| match asked.step {
        1 => Answer::Call {
            name: "slow__fetch".into(),
            arguments: json!({"key": "page", "ms": 1_500}),
        },
        4 => Answer::Call {
            name: "slow__charge".into(),
            arguments: json!({"key": "card", "ms": 1_500}),
        },
        step if step < 7 => Answer::Call {
            name: "slow__step".into(),
            arguments: json!({"key": format!("s{step}")}),
        },
        _ => Answer::Text {
            words: vec!["Done.".into()],
            every: Duration::ZERO,
        },
    };
    let setup = setup(Delivery::default(), &[], script).await;
    let url = setup.emulator.url.clone();
    let mut starts = setup.tools.starts();
    let emulator = &setup.emulator;
    let killer = async {
        let mut kills = 0;
        while kills < 2 {
            let started = starts.recv().await.unwrap();
            if (started == "fetch:page" && kills == 0) || (started == "charge:card" && kills == 1) {
                tokio::time::sleep(Duration::from_millis(300)).await;
                assert!(
                    emulator.crash("/agent") || emulator.crash("aguiContinuedRun"),
                    "no invocation runs the run"
                );
                kills += 1;
            }
        }
    };
    let started = input("t-killed", "r1");
    let (followed, ()) = tokio::join!(follow(&url, &started, |_| {}), killer);
    assert_one_run(&followed.events());
    assert_eq!(
        followed.events().last().unwrap().kind(),
        "RUN_FINISHED",
        "{}",
        log_tail(emulator)
    );
    let executions = setup.tools.executions();
    assert_eq!(
        executions["fetch:page"], 2,
        "an idempotent call cut off runs again"
    );
    assert_eq!(
        executions["charge:card"], 1,
        "a non-idempotent one never does"
    );
    assert!(
        executions
            .iter()
            .filter(|(key, _)| key.starts_with("step:"))
            .all(|(_, count)| *count == 1),
        "{executions:?}"
    );
    let stored = thread(&url, "t-killed").await;
    let results: Vec<&str> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| message["content"].as_str().unwrap())
        .collect();
    assert!(results.contains(&"done fetch:page"), "{results:?}");
    let charged = results
        .iter()
        .find(|result| result.contains("cut off"))
        .unwrap();
    assert!(
        charged.contains("may or may not have happened"),
        "{charged}"
    );
    assert!(!results.contains(&"done charge:card"));
}

#[tokio::test]
async fn long_runs_a_cancel_during_a_hand_off_stops_the_run() {
    let delivery = Delivery {
        // The next invocation starts late: the cancel comes between the two.
        delay: Duration::from_millis(2_000),
        ..Delivery::default()
    };
    let setup = setup(delivery, &[], stepping(30)).await;
    let url = setup.emulator.url.clone();
    let http = reqwest::Client::new();
    let cancel_url = format!("{url}/threads/t-cancel/runs/r1/cancel");
    let mut cancelled_at = None;
    let thread_url = format!("{url}/threads/t-cancel");
    let between = Arc::new(std::sync::Mutex::new(Value::Null));
    let followed = follow(&url, &input("t-cancel", "r1"), |frame| {
        if frame.continues() && cancelled_at.is_none() {
            cancelled_at = Some(setup.tools.executions());
            let http = http.clone();
            let cancel_url = cancel_url.clone();
            let thread_url = thread_url.clone();
            let between = between.clone();
            tokio::spawn(async move {
                // Between two runners, the thread says where the run is and where to follow it.
                let thread: Value = http
                    .get(thread_url)
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                *between.lock().unwrap() = thread["activeRun"].clone();
                let answer = http.post(cancel_url).json(&json!({})).send().await.unwrap();
                assert_eq!(answer.status(), 202);
            });
        }
    })
    .await;
    let between = between.lock().unwrap().clone();
    assert_eq!(between["runId"], "r1", "{between}");
    assert_eq!(between["events"], "/threads/t-cancel/runs/r1/events");
    assert_eq!(between["runner"], 1);
    assert_eq!(between["handedOff"], true);
    assert_one_run(&followed.events());
    let last = followed.events().last().unwrap().event.clone();
    assert_eq!(
        last["type"],
        "RUN_FINISHED",
        "{last}\n{}",
        log_tail(&setup.emulator)
    );
    assert_eq!(last["outcome"]["type"], "cancelled", "{last}");
    assert_eq!(followed.notices, 1, "the run stops at its next runner");
    assert_eq!(
        Some(setup.tools.executions()),
        cancelled_at,
        "no call after the cancel"
    );
    let stored = thread(&url, "t-cancel").await;
    assert!(stored["activeRunId"].is_null());
    assert!(continuation_answers(&setup.emulator).contains(&"continued".to_owned()));
}

#[tokio::test]
async fn long_runs_reaching_run_max_secs_ends_cleanly_with_the_partial_answer_stored() {
    // A few steps, then an answer streamed slowly, cut by RUN_MAX_SECS in a later invocation.
    let script = |asked: &Asked| {
        let step = asked.step;
        if step < 3 {
            Answer::Call {
                name: "slow__step".into(),
                arguments: json!({"key": format!("s{step}")}),
            }
        } else {
            Answer::Text {
                words: (0..100).map(|n| format!("word{n} ")).collect(),
                every: Duration::from_millis(100),
            }
        }
    };
    let setup = setup(Delivery::default(), &[("RUN_MAX_SECS", "8")], script).await;
    let url = setup.emulator.url.clone();
    let started = Instant::now();
    let followed = follow(&url, &input("t-max", "r1"), |_| {}).await;
    assert_one_run(&followed.events());
    let last = followed.events().last().unwrap().event.clone();
    assert_eq!(last["type"], "RUN_ERROR", "{last}");
    assert_eq!(
        last["code"],
        "TIMEOUT",
        "{last}\n{}",
        log_tail(&setup.emulator)
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(
        followed.notices >= 1,
        "it ended in a later invocation than it began"
    );
    let stored = thread(&url, "t-max").await;
    assert!(stored["activeRunId"].is_null());
    let answer = stored["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(answer["role"], "assistant");
    let text = answer["content"].as_str().unwrap();
    assert!(text.starts_with("word0 word1 "), "{text}");
    assert!(!text.contains("word99"), "the answer was cut: {text}");
    // The answer cut by the run's deadline, as streamed (an answer cut by an invocation's end
    // before it is kept too, and the next invocation asks the model again).
    let events = followed.events();
    let last_message = events
        .iter()
        .rev()
        .find(|frame| frame.kind() == "TEXT_MESSAGE_START")
        .unwrap()
        .event["messageId"]
        .clone();
    assert_eq!(answer["id"], last_message);
    let streamed: String = events
        .iter()
        .filter(|frame| {
            frame.kind() == "TEXT_MESSAGE_CONTENT" && frame.event["messageId"] == last_message
        })
        .map(|frame| frame.event["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, streamed, "what the client saw is what is stored");
}
