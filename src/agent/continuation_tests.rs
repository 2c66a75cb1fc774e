//! Runs handed from runner to runner in one process: short "invocations", a continuation sent
//! through a recording [`Continuations`], taken over by `continue_run`.

use crate::agent::continuation::{Continuation, Continuations, Continued};
use crate::agent::live::LiveRun;
use crate::agent::run::CUT_OFF;
use crate::agent::tools::{ToolBuilder, ToolContext, ToolOutput};
use crate::agent::{Agent, AgentSettings, ToolRegistry};
use crate::auth::Principal;
use crate::model::scripted::{ScriptedModel, ScriptedTurn};
use crate::protocol::events::RecordedEvent;
use crate::protocol::input::{ForwardedProps, RunInput};
use crate::protocol::{Message, MessageId, RunId, ThreadId, UserContent};
use crate::store::{MemoryStore, RunRef, Threads};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Keeps every continuation a runner sends.
#[derive(Default)]
struct Sent(Mutex<Vec<Continuation>>);

#[async_trait::async_trait]
impl Continuations for Sent {
    async fn send(&self, continuation: &Continuation) -> Result<(), String> {
        self.0.lock().unwrap().push(continuation.clone());
        Ok(())
    }
}

impl Sent {
    fn take(&self) -> Vec<Continuation> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct Bench {
    agent: Agent,
    store: Arc<MemoryStore>,
    sent: Arc<Sent>,
    /// Calls per argument `key`, by tool.
    calls: Arc<Mutex<HashMap<String, u32>>>,
}

/// A tool that takes `millis` and counts its calls by key.
fn counted(
    name: &'static str,
    millis: u64,
    idempotent: bool,
    calls: Arc<Mutex<HashMap<String, u32>>>,
) -> crate::agent::tools::FnTool {
    ToolBuilder::new(name, "counts its calls")
        .idempotent(idempotent)
        .handler(move |args: Value, _context: ToolContext| {
            let calls = calls.clone();
            async move {
                let key = format!("{name}:{}", args["key"].as_str().unwrap_or_default());
                *calls.lock().unwrap().entry(key.clone()).or_default() += 1;
                tokio::time::sleep(Duration::from_millis(millis)).await;
                Ok(ToolOutput::text(format!("done {key}")))
            }
        })
}

fn bench(turns: Vec<ScriptedTurn>, tool_millis: u64) -> Bench {
    let calls = Arc::new(Mutex::new(HashMap::new()));
    let mut tools = ToolRegistry::new();
    tools
        .add(counted("slow", tool_millis, false, calls.clone()))
        .unwrap();
    tools
        .add(counted("lookup", tool_millis, true, calls.clone()))
        .unwrap();
    let store = Arc::new(MemoryStore::new());
    let sent = Arc::new(Sent::default());
    let agent = Agent::new(
        Arc::new(ScriptedModel::new(turns)),
        Arc::new(tools),
        store.clone(),
        AgentSettings {
            max_steps: 50,
            lease: Duration::from_millis(600),
            cancel_poll: Duration::from_millis(50),
            record_interval: Duration::from_millis(20),
            step_estimate: Duration::from_millis(40),
            ..AgentSettings::default()
        },
    )
    .with_continuations(Some(sent.clone()));
    Bench {
        agent,
        store,
        sent,
        calls,
    }
}

fn steps(count: usize, tool: &str) -> Vec<ScriptedTurn> {
    let mut turns: Vec<ScriptedTurn> = (0..count)
        .map(|step| {
            let args = json!({"key": format!("k{step}")}).to_string();
            ScriptedTurn::tool_calls(None, &[(&format!("call_{step}"), tool, &args)])
        })
        .collect();
    turns.push(ScriptedTurn::text("all done"));
    turns
}

fn input(thread: &str) -> RunInput {
    RunInput {
        thread_id: Some(ThreadId::parse(thread, 128).unwrap()),
        run_id: RunId::parse("r1", 128).unwrap(),
        parent_run_id: None,
        state: None,
        messages: vec![Message::User {
            id: MessageId::parse("u1", 128).unwrap(),
            content: UserContent::Text("go".into()),
            name: None,
        }],
        tools: vec![],
        context: vec![],
        forwarded_props: ForwardedProps::default(),
        protocol_version: Some("1.0".into()),
        resume: Vec::new(),
        new_message_limits: None,
        skipped_parts: Vec::new(),
        skips_unusable_parts: false,
    }
}

/// Every event of one runner's log, until its terminal event or its notice.
async fn drain(live: Arc<LiveRun>) -> Vec<Arc<RecordedEvent>> {
    let events: Vec<_> = live.clone().follow(live.base()).collect().await;
    let events = events.into_iter().flatten().collect();
    live.done().await;
    events
}

fn json_of(event: &RecordedEvent) -> Value {
    serde_json::from_slice(&event.json).unwrap()
}

/// Runs the run from its start to its end, the first runner's part ending after `first`, the
/// others' after `part`; returns every event clients saw (notices included) and how many
/// runners it took.
async fn run_in_parts(
    bench: &Bench,
    thread: &str,
    first: Duration,
    part: Duration,
) -> (Vec<Arc<RecordedEvent>>, u32) {
    let mut prepared = bench
        .agent
        .start(
            Principal::anonymous(),
            input(thread),
            Instant::now() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    prepared.end_invocation_at(Instant::now() + first);
    let mut events = drain(prepared.spawn()).await;
    let mut runners = 1;
    while events.last().is_some_and(|event| event.notice) {
        let sent = bench.sent.take();
        assert_eq!(sent.len(), 1, "one continuation per hand-off");
        assert_eq!(sent[0].handed_off_by, Some(u64::from(runners)));
        let Continued::Started(live) = bench
            .agent
            .continue_run(&sent[0], Some(Instant::now() + part))
            .await
        else {
            panic!("the continuation did not take the run over");
        };
        events.extend(drain(live).await);
        runners += 1;
        assert!(runners < 40, "the run does not end");
    }
    (events, runners)
}

#[tokio::test]
async fn a_run_longer_than_its_invocations_goes_on_in_the_next_as_one_run() {
    let bench = bench(steps(6, "slow"), 60);
    let part = Duration::from_millis(150);
    let (events, runners) = run_in_parts(&bench, "t-parts", part, part).await;
    assert!(
        runners >= 3,
        "six 60 ms steps in 150 ms parts: {runners} runners"
    );
    let numbered: Vec<&Arc<RecordedEvent>> = events.iter().filter(|event| !event.notice).collect();
    let seqs: Vec<u64> = numbered.iter().map(|event| event.seq).collect();
    assert_eq!(
        seqs,
        (1..=numbered.len() as u64).collect::<Vec<_>>(),
        "no gap, no repeat"
    );
    let types: Vec<String> = numbered
        .iter()
        .map(|event| json_of(event)["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types.iter().filter(|t| *t == "RUN_STARTED").count(), 1);
    assert_eq!(types.last().map(String::as_str), Some("RUN_FINISHED"));
    assert_eq!(types.iter().filter(|t| *t == "RUN_FINISHED").count(), 1);
    // Each event says where it is, for clients that do not see SSE ids.
    for event in &numbered {
        assert_eq!(
            json_of(event)["metadata"]["agui-lambda"]["eventId"],
            event.seq
        );
    }
    // Every notice points after the last event before it.
    for (at, event) in events.iter().enumerate().filter(|(_, e)| e.notice) {
        let before = events[..at].iter().rev().find(|e| !e.notice).unwrap().seq;
        assert_eq!(json_of(event)["result"]["lastEventId"], before);
    }
    assert!(
        bench
            .calls
            .lock()
            .unwrap()
            .values()
            .all(|count| *count == 1)
    );
    assert_eq!(bench.calls.lock().unwrap().len(), 6);
    // The thread: the input, six turns with their results, the answer; the lease let go.
    let thread = bench
        .store
        .load(
            &Principal::anonymous(),
            &ThreadId::parse("t-parts", 128).unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(thread.messages.len(), 1 + 6 * 2 + 1);
    assert!(thread.active_run.is_none());
    // The event log holds the same run, in one sequence.
    let logged = bench
        .agent
        .run_events(
            &RunRef {
                thread_id: ThreadId::parse("t-parts", 128).unwrap(),
                created_at_ms: thread.created_at_ms,
                run_id: RunId::parse("r1", 128).unwrap(),
            },
            None,
        )
        .await
        .unwrap();
    let logged: Vec<u64> = logged.events.iter().map(|event| event.seq).collect();
    assert_eq!(logged, seqs);
}

#[tokio::test]
async fn a_second_delivery_of_a_continuation_changes_nothing() {
    // Longer than the lease the second delivery waits out before it tries again.
    let bench = bench(steps(4, "slow"), 400);
    let mut prepared = bench
        .agent
        .start(
            Principal::anonymous(),
            input("t-dup"),
            Instant::now() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    prepared.end_invocation_at(Instant::now() + Duration::from_millis(300));
    drain(prepared.spawn()).await;
    let continuation = bench.sent.take().remove(0);
    let Continued::Started(live) = bench.agent.continue_run(&continuation, None).await else {
        panic!("the first delivery takes the run over");
    };
    // Delivered again while the run goes on: its runner renews the lease meanwhile.
    let again = bench.agent.continue_run(&continuation, None).await;
    assert!(matches!(again, Continued::Held), "{}", again.label());
    let events = drain(live).await;
    assert_eq!(json_of(events.last().unwrap())["type"], "RUN_FINISHED");
    // Delivered late, after the run ended.
    let late = bench.agent.continue_run(&continuation, None).await;
    assert!(matches!(late, Continued::Gone), "{}", late.label());
    assert!(
        bench
            .calls
            .lock()
            .unwrap()
            .values()
            .all(|count| *count == 1)
    );
}

#[tokio::test]
async fn a_call_cut_off_by_the_end_of_its_invocation_runs_again_only_when_idempotent() {
    for (tool, idempotent) in [("slow", false), ("lookup", true)] {
        // One step whose call takes longer than the runner's whole part.
        let bench = bench(steps(1, tool), 300);
        let thread = format!("t-cut-{tool}");
        let (events, runners) = run_in_parts(
            &bench,
            &thread,
            Duration::from_millis(120),
            Duration::from_millis(900),
        )
        .await;
        assert!(runners >= 2);
        let results: Vec<String> = events
            .iter()
            .map(|event| json_of(event))
            .filter(|event| event["type"] == "TOOL_CALL_RESULT")
            .map(|event| event["content"].as_str().unwrap().to_owned())
            .collect();
        let count = bench.calls.lock().unwrap()[&format!("{tool}:k0")];
        if idempotent {
            // Ran again, until a runner had the time to finish it.
            assert!(count >= 2, "{count}");
            assert_eq!(results, [format!("done {tool}:k0")]);
        } else {
            assert_eq!(count, 1, "never twice");
            assert_eq!(results, [CUT_OFF.to_owned()]);
        }
        assert_eq!(
            json_of(events.iter().rev().find(|e| !e.notice).unwrap())["type"],
            "RUN_FINISHED"
        );
    }
}

#[tokio::test]
async fn a_cancel_between_two_runners_ends_the_run_when_it_is_taken_over() {
    let bench = bench(steps(5, "slow"), 60);
    let mut prepared = bench
        .agent
        .start(
            Principal::anonymous(),
            input("t-cancel"),
            Instant::now() + Duration::from_secs(60),
        )
        .await
        .unwrap();
    prepared.end_invocation_at(Instant::now() + Duration::from_millis(100));
    drain(prepared.spawn()).await;
    let owner = Principal::anonymous();
    let thread_id = ThreadId::parse("t-cancel", 128).unwrap();
    let run_id = RunId::parse("r1", 128).unwrap();
    let state = bench
        .agent
        .cancel(&owner, &thread_id, &run_id)
        .await
        .unwrap();
    assert_eq!(state, crate::store::CancelState::Requested);
    let executed = bench.calls.lock().unwrap().len();
    let continuation = bench.sent.take().remove(0);
    let Continued::Started(live) = bench.agent.continue_run(&continuation, None).await else {
        panic!("the continuation takes the run over to end it");
    };
    let events = drain(live).await;
    let last = json_of(events.last().unwrap());
    assert_eq!(last["type"], "RUN_FINISHED");
    assert_eq!(last["outcome"]["type"], "cancelled");
    assert_eq!(
        bench.calls.lock().unwrap().len(),
        executed,
        "no call after the cancel"
    );
    assert!(bench.sent.take().is_empty());
    let thread = bench.store.load(&owner, &thread_id).await.unwrap().unwrap();
    assert!(thread.active_run.is_none());
}

#[tokio::test]
async fn the_run_deadline_ends_it_with_its_partial_answer_stored() {
    // A model that streams its answer slowly: the run's deadline comes mid-answer.
    let model = ScriptedModel::new([ScriptedTurn::Stream(vec![
        crate::model::ModelDelta::Text("never ".into()),
        crate::model::ModelDelta::Text("quite ".into()),
        crate::model::ModelDelta::Text("finished".into()),
        crate::model::ModelDelta::Finish(crate::model::FinishReason::Stop),
    ])]);
    let store = Arc::new(MemoryStore::new());
    let agent = Agent::new(
        Arc::new(SlowModel(model)),
        Arc::new(ToolRegistry::new()),
        store.clone(),
        AgentSettings::default(),
    );
    let prepared = agent
        .start(
            Principal::anonymous(),
            input("t-max"),
            Instant::now() + Duration::from_millis(150),
        )
        .await
        .unwrap();
    let events = drain(prepared.spawn()).await;
    let last = json_of(events.last().unwrap());
    assert_eq!(last["type"], "RUN_ERROR");
    assert_eq!(last["code"], "TIMEOUT");
    let thread = store
        .load(
            &Principal::anonymous(),
            &ThreadId::parse("t-max", 128).unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    let Some(Message::Assistant {
        content: Some(text),
        ..
    }) = thread.messages.last()
    else {
        panic!("no partial answer stored: {:?}", thread.messages);
    };
    assert_eq!(text, "never ");
}

/// The scripted model's answer, one delta every 100 ms.
struct SlowModel(ScriptedModel);

#[async_trait::async_trait]
impl crate::model::ModelProvider for SlowModel {
    fn identity(&self) -> crate::model::ModelIdentity {
        self.0.identity()
    }

    fn describe(&self) -> String {
        self.0.describe()
    }

    async fn stream(
        &self,
        request: &crate::model::ModelRequest,
    ) -> Result<crate::model::DeltaStream, crate::model::ModelError> {
        let stream = self.0.stream(request).await?;
        Ok(Box::pin(stream.then(|delta| async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            delta
        })))
    }
}

/// A coordinator whose model delegates twice to a researcher (a profile on its own scripted
/// model, each answer taking `child_millis`), with the slow tool between; the sub-agent's
/// `timeoutMs` is `child_timeout`.
fn delegating_bench(child_millis: u64, child_timeout: Duration) -> (Bench, ScriptedModel) {
    use crate::agent::AgentProfile;
    use crate::agent::subagents::{Subagent, SubagentTarget};
    use crate::model::{FinishReason, ModelDelta, Usage};
    let reported = |text: &str, tokens: u64| {
        vec![
            ModelDelta::Text(text.to_owned()),
            ModelDelta::Usage(Usage {
                input_tokens: tokens,
                output_tokens: tokens,
                ..Usage::default()
            }),
            ModelDelta::Finish(FinishReason::Stop),
        ]
    };
    let coordinator = ScriptedModel::new([
        ScriptedTurn::tool_calls(None, &[("call_a", "researcher", r#"{"task": "first"}"#)]),
        ScriptedTurn::tool_calls(None, &[("call_s", "slow", r#"{"key": "between"}"#)]),
        ScriptedTurn::tool_calls(None, &[("call_b", "researcher", r#"{"task": "second"}"#)]),
        ScriptedTurn::Stream(reported("both answered", 10)),
    ])
    .named("scripted", "coordinator-model");
    let child_turn =
        |text: &str| ScriptedTurn::Delay(Duration::from_millis(child_millis), reported(text, 7));
    let researcher = ScriptedModel::new([child_turn("fact one"), child_turn("fact two")])
        .named("scripted", "researcher-model");
    let base = bench(Vec::new(), 60);
    let agent = base
        .agent
        .with_profiles([
            (
                "coordinator".to_owned(),
                AgentProfile {
                    model: Some(Arc::new(coordinator)),
                    subagents: vec![Subagent {
                        name: "researcher".into(),
                        description: "Finds facts".into(),
                        target: SubagentTarget::Profile("researcher".into()),
                        timeout: Some(child_timeout),
                    }],
                    ..AgentProfile::default()
                },
            ),
            (
                "researcher".to_owned(),
                AgentProfile {
                    model: Some(Arc::new(researcher.clone())),
                    ..AgentProfile::default()
                },
            ),
        ])
        .unwrap()
        .serving(Some("coordinator"))
        .unwrap();
    (Bench { agent, ..base }, researcher)
}

#[tokio::test]
async fn a_run_hands_off_between_delegations_never_inside_one_and_keeps_their_usage() {
    // Each delegation may take 250 ms: a runner with less left hands off before it, and the
    // next runner, with 400 ms, runs it whole.
    let (bench, researcher) = delegating_bench(100, Duration::from_millis(250));
    let (events, runners) = run_in_parts(
        &bench,
        "t-delegating",
        Duration::from_millis(150),
        Duration::from_millis(400),
    )
    .await;
    assert!(runners >= 2, "{runners} runners");
    let jsons: Vec<Value> = events.iter().map(|event| json_of(event)).collect();
    // No notice between a child's start and its end: a delegation is never cut by a hand-off.
    let mut open = 0;
    for (event, json) in events.iter().zip(&jsons) {
        match json["type"].as_str().unwrap() {
            "SUBAGENT_STARTED" => open += 1,
            "SUBAGENT_FINISHED" | "SUBAGENT_ERROR" => open -= 1,
            _ => {}
        }
        assert!(
            !(event.notice && open > 0),
            "a hand-off inside a delegation"
        );
    }
    let count = |kind: &str| jsons.iter().filter(|json| json["type"] == kind).count();
    assert_eq!(count("SUBAGENT_STARTED"), 2, "each delegation runs once");
    assert_eq!(count("SUBAGENT_FINISHED"), 2);
    assert_eq!(count("SUBAGENT_ERROR"), 0);
    assert_eq!(
        researcher.requests().len(),
        2,
        "the researcher asked twice in all"
    );
    let results: Vec<(&str, &str)> = jsons
        .iter()
        .filter(|json| json["type"] == "TOOL_CALL_RESULT" && json.get("subagentRunId").is_none())
        .map(|json| {
            (
                json["toolCallId"].as_str().unwrap(),
                json["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        results,
        [
            ("call_a", "fact one"),
            ("call_s", "done slow:between"),
            ("call_b", "fact two")
        ]
    );
    assert_eq!(bench.calls.lock().unwrap()["slow:between"], 1);
    // The end counts every runner's models and children, by model.
    let end = jsons
        .iter()
        .rev()
        .find(|json| json["type"] == "RUN_FINISHED")
        .unwrap();
    assert!(end["result"]["continues"].is_null(), "{end}");
    let usage: Vec<(&str, u64)> = end["usage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["model"].as_str().unwrap(),
                entry["inputTokens"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(usage, [("coordinator-model", 10), ("researcher-model", 14)]);
}
