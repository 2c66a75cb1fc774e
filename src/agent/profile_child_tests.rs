//! Delegations end to end in process: a coordinator profile whose model calls a researcher
//! profile, each on a scripted model of its own, on the in-memory store; the coordinator's
//! stream checked against the clients' rules.

use crate::agent::subagents::*;
use crate::agent::{Agent, AgentProfile, AgentSettings, ToolRegistry};
use crate::auth::Principal;
use crate::model::scripted::{ScriptedModel, ScriptedTurn};
use crate::model::{
    DeltaStream, FinishReason, ModelDelta, ModelError, ModelIdentity, ModelProvider, ModelRequest,
    Usage,
};
use crate::protocol::input::ForwardedProps;
use crate::protocol::interrupt::{ResumeEntry, ResumeStatus};
use crate::protocol::verify::verify_run;
use crate::protocol::{Message, MessageId, RunId, RunInput, ThreadId, UserContent};
use crate::store::{History, HistoryQuery, MemoryStore, Threads};
use futures_util::StreamExt;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::time::Instant;

/// A scripted model under a name of its own, so usage can be told apart by model.
struct Named(ScriptedModel, &'static str);

#[async_trait::async_trait]
impl ModelProvider for Named {
    async fn stream(&self, request: &ModelRequest) -> Result<DeltaStream, ModelError> {
        self.0.stream(request).await
    }
    fn describe(&self) -> String {
        self.1.to_owned()
    }
    fn identity(&self) -> ModelIdentity {
        ModelIdentity {
            provider: "scripted".to_owned(),
            model: self.1.to_owned(),
        }
    }
}

/// A text answer that reports `tokens` in and out.
fn answer(text: &str, tokens: u64) -> ScriptedTurn {
    ScriptedTurn::Stream(vec![
        ModelDelta::Text(text.to_owned()),
        ModelDelta::Usage(Usage {
            input_tokens: tokens,
            output_tokens: tokens,
            ..Usage::default()
        }),
        ModelDelta::Finish(FinishReason::Stop),
    ])
}

fn researcher_profile() -> Subagent {
    Subagent {
        name: "researcher".into(),
        description: "Finds facts".into(),
        target: SubagentTarget::Profile("researcher".into()),
        timeout: None,
    }
}

/// The coordinator (delegating to the researcher) as the agent that serves requests.
fn coordinator(
    coordinator: &ScriptedModel,
    researcher: &ScriptedModel,
    store: Arc<MemoryStore>,
    tools: ToolRegistry,
) -> Agent {
    Agent::new(
        Arc::new(ScriptedModel::default()),
        Arc::new(tools),
        store,
        AgentSettings::default(),
    )
    .with_profiles([
        (
            "coordinator".to_owned(),
            AgentProfile {
                model: Some(Arc::new(Named(coordinator.clone(), "coordinator-model"))),
                subagents: vec![researcher_profile()],
                ..AgentProfile::default()
            },
        ),
        (
            "researcher".to_owned(),
            AgentProfile {
                model: Some(Arc::new(Named(researcher.clone(), "researcher-model"))),
                system_prompt: Some("You research.".into()),
                ..AgentProfile::default()
            },
        ),
    ])
    .unwrap()
    .serving(Some("coordinator"))
    .unwrap()
}

fn input(thread: &str, run: &str, text: Option<&str>, resume: Vec<ResumeEntry>) -> RunInput {
    RunInput {
        thread_id: Some(ThreadId::parse(thread, 128).unwrap()),
        run_id: RunId::parse(run, 128).unwrap(),
        parent_run_id: None,
        state: None,
        messages: text
            .map(|text| Message::User {
                id: MessageId::parse(format!("{run}-m"), 128).unwrap(),
                content: UserContent::Text(text.into()),
                name: None,
            })
            .into_iter()
            .collect(),
        tools: vec![],
        context: vec![],
        forwarded_props: ForwardedProps::default(),
        protocol_version: Some("1.0".into()),
        resume,
        new_message_limits: None,
        skipped_parts: Vec::new(),
        skips_unusable_parts: false,
    }
}

async fn run(agent: &Agent, input: RunInput) -> Vec<Value> {
    let prepared = agent
        .start(
            Principal::new("alice"),
            input,
            Instant::now() + std::time::Duration::from_secs(30),
        )
        .await
        .unwrap();
    let events: Vec<Value> = prepared
        .into_batches()
        .flat_map(futures_util::stream::iter)
        .map(|recorded| serde_json::from_slice(&recorded.json).unwrap())
        .collect()
        .await;
    verify_run(&events).unwrap_or_else(|err| panic!("{err}: {events:#?}"));
    events
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|event| event["type"] == kind)
        .collect()
}

#[tokio::test]
async fn a_coordinator_delegates_to_a_researcher_and_answers_with_its_findings() {
    let coordinator_model = ScriptedModel::new([
        ScriptedTurn::tool_calls(
            None,
            &[("call_r", "researcher", r#"{"task": "find one moon fact"}"#)],
        ),
        answer("The researcher says: the moon is far.", 10),
    ]);
    let researcher_model = ScriptedModel::new([answer("The moon is far.", 7)]);
    let store = Arc::new(MemoryStore::new());
    let agent = coordinator(
        &coordinator_model,
        &researcher_model,
        store.clone(),
        ToolRegistry::with_builtins().unwrap(),
    );
    let events = run(
        &agent,
        input("t-coord", "r1", Some("tell me about the moon"), vec![]),
    )
    .await;

    // Streamed live, between its start and its end, tagged, with ids of its own.
    let started = of_type(&events, "SUBAGENT_STARTED");
    assert_eq!(started.len(), 1);
    let sa = started[0]["subagentRunId"].as_str().unwrap();
    assert_eq!(started[0]["name"], "researcher");
    assert_eq!(started[0]["parentToolCallId"], "call_r");
    let text = of_type(&events, "TEXT_MESSAGE_CONTENT")
        .into_iter()
        .find(|event| event["delta"] == "The moon is far.")
        .unwrap();
    assert_eq!(text["subagentRunId"], sa);
    assert!(
        text["messageId"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{sa}:"))
    );
    let finished = of_type(&events, "SUBAGENT_FINISHED")[0];
    assert_eq!(finished["result"], "The moon is far.");
    assert_eq!(finished["outcome"]["type"], "success");
    let child_thread = finished["metadata"]["agui-lambda"]["threadId"]
        .as_str()
        .unwrap();
    assert_eq!(
        finished["metadata"]["agui-lambda"]["usage"][0]["inputTokens"],
        7
    );
    // The parent gets the answer as the call's result, and continues.
    let result = of_type(&events, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|event| event["toolCallId"] == "call_r")
        .unwrap();
    assert_eq!(result["content"], "The moon is far.");
    let second = &coordinator_model.requests()[1];
    assert!(second.messages.iter().any(|message| matches!(message,
        Message::Tool { content, .. } if content == "The moon is far.")));
    // The researcher ran as itself: its prompt, the task as its user message, no parent state.
    let asked = &researcher_model.requests()[0];
    assert_eq!(asked.system.as_deref(), Some("You research."));
    assert!(
        matches!(asked.messages.last(), Some(Message::User { content, .. })
        if content.text() == "find one moon fact")
    );
    assert!(of_type(&events, "STATE_SNAPSHOT").is_empty());
    // Usage: both models, by model.
    let usage = &events.last().unwrap()["usage"];
    let models: Vec<(&str, u64)> = usage
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
    assert_eq!(models, [("coordinator-model", 10), ("researcher-model", 7)]);
    check_the_child_thread(&store, child_thread).await;
}

/// The parent thread's `tool` message links to the child's thread, which names its parent,
/// run and call and belongs to the same owner only; deleting the parent deletes the child.
async fn check_the_child_thread(store: &MemoryStore, child_thread: &str) {
    // Seen afterwards: the parent's tool message links to the child's thread, which names its
    // parent, run and call and belongs to the same owner only.
    let owner = Principal::new("alice");
    let parent_thread = ThreadId::parse("t-coord", 128).unwrap();
    let parent = store.load(&owner, &parent_thread).await.unwrap().unwrap();
    let link = parent
        .messages
        .iter()
        .find_map(|message| match message {
            Message::Tool {
                metadata: Some(metadata),
                ..
            } => Some(metadata.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(link["agui-lambda"]["subagent"]["threadId"], child_thread);
    let child_id = ThreadId::parse(child_thread, 128).unwrap();
    let page = store
        .history(HistoryQuery {
            owner: &owner,
            thread_id: &child_id,
            after: None,
            limit: 10,
        })
        .await
        .unwrap();
    let link = page.parent.unwrap();
    assert_eq!(
        (
            link.thread_id.as_str(),
            link.run_id.as_str(),
            link.tool_call_id.as_str()
        ),
        ("t-coord", "r1", "call_r")
    );
    assert_eq!(page.messages.len(), 2, "the task and the answer");
    assert!(
        store
            .load(&Principal::new("mallory"), &child_id)
            .await
            .unwrap()
            .is_none()
    );
    // Deleting the parent deletes the child.
    store.delete_thread(&owner, &parent_thread).await.unwrap();
    assert!(store.load(&owner, &child_id).await.unwrap().is_none());
}

#[tokio::test]
async fn two_children_in_one_step_run_side_by_side_and_each_answers_its_call() {
    let coordinator_model = ScriptedModel::new([
        ScriptedTurn::tool_calls(
            None,
            &[
                ("call_a", "researcher", r#"{"task": "slow one"}"#),
                ("call_b", "researcher", r#"{"task": "fast one"}"#),
            ],
        ),
        answer("Both done.", 1),
    ]);
    // The first child's answer comes late: the second's streams meanwhile.
    let researcher_model = ScriptedModel::new([
        ScriptedTurn::Delay(
            std::time::Duration::from_millis(300),
            vec![
                ModelDelta::Text("slow answer".into()),
                ModelDelta::Finish(FinishReason::Stop),
            ],
        ),
        answer("fast answer", 1),
    ]);
    let agent = coordinator(
        &coordinator_model,
        &researcher_model,
        Arc::new(MemoryStore::new()),
        ToolRegistry::with_builtins().unwrap(),
    );
    let events = run(&agent, input("t-two", "r1", Some("do both"), vec![])).await;
    let started = of_type(&events, "SUBAGENT_STARTED");
    assert_eq!(started.len(), 2);
    assert_ne!(started[0]["subagentRunId"], started[1]["subagentRunId"]);
    let position = |delta: &str| {
        events
            .iter()
            .position(|event| event["delta"] == delta)
            .unwrap()
    };
    let first_finished = events
        .iter()
        .position(|event| event["type"] == "SUBAGENT_FINISHED")
        .unwrap();
    assert!(position("fast answer") < first_finished && first_finished < position("slow answer"));
    let results: Vec<(&str, &str)> = of_type(&events, "TOOL_CALL_RESULT")
        .iter()
        .map(|event| {
            (
                event["toolCallId"].as_str().unwrap(),
                event["content"].as_str().unwrap(),
            )
        })
        .collect();
    // Each answer goes to the call that asked for it.
    assert!(
        results.contains(&("call_a", "slow answer"))
            && results.contains(&("call_b", "fast answer"))
    );
}

#[tokio::test]
async fn a_child_that_fails_gives_an_error_result_and_the_parent_goes_on() {
    let coordinator_model = ScriptedModel::new([
        ScriptedTurn::tool_calls(None, &[("call_r", "researcher", r#"{"task": "fail"}"#)]),
        answer("It failed, sorry.", 1),
    ]);
    let researcher_model = ScriptedModel::new([ScriptedTurn::StreamThenFail(
        vec![ModelDelta::Text("half an ans".into())],
        ModelError::Stream,
    )]);
    let agent = coordinator(
        &coordinator_model,
        &researcher_model,
        Arc::new(MemoryStore::new()),
        ToolRegistry::with_builtins().unwrap(),
    );
    let events = run(&agent, input("t-fail", "r1", Some("try"), vec![])).await;
    let error = of_type(&events, "SUBAGENT_ERROR")[0];
    assert_eq!(error["code"], "MODEL_ERROR");
    let result = of_type(&events, "TOOL_CALL_RESULT")[0];
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .starts_with("Error: the researcher agent failed (MODEL_ERROR)")
    );
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    assert!(
        of_type(&events, "TEXT_MESSAGE_CONTENT")
            .iter()
            .any(|event| event["delta"] == "It failed, sorry.")
    );
}

#[tokio::test]
async fn a_child_s_approval_suspends_both_and_the_resume_reaches_the_child() {
    let coordinator_model = ScriptedModel::new([
        ScriptedTurn::tool_calls(
            None,
            &[("call_r", "researcher", r#"{"task": "what time is it"}"#)],
        ),
        answer("It is late.", 1),
    ]);
    let researcher_model = ScriptedModel::new([
        ScriptedTurn::tool_calls(None, &[("call_t", "get_current_time", "{}")]),
        answer("It is late.", 1),
    ]);
    let mut tools = ToolRegistry::with_builtins().unwrap();
    tools.require_approval("get_current_time").unwrap();
    let agent = coordinator(
        &coordinator_model,
        &researcher_model,
        Arc::new(MemoryStore::new()),
        tools,
    );
    let first = run(&agent, input("t-ask", "r1", Some("time please"), vec![])).await;
    let finished = of_type(&first, "SUBAGENT_FINISHED")[0];
    let sa = finished["subagentRunId"].as_str().unwrap().to_owned();
    assert_eq!(finished["outcome"]["type"], "suspended");
    let ids = finished["outcome"]["interruptIds"].as_array().unwrap();
    let end = first.last().unwrap();
    assert_eq!(end["outcome"]["type"], "interrupt");
    let interrupt = &end["outcome"]["interrupts"][0];
    assert_eq!(&interrupt["id"], &ids[0]);
    assert_eq!(interrupt["subagentRunId"], sa);
    assert!(
        interrupt["id"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{sa}:"))
    );
    assert!(
        interrupt["toolCallId"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{sa}:"))
    );
    assert_eq!(coordinator_model.requests().len(), 1, "the parent waits");

    let resume = vec![ResumeEntry {
        interrupt_id: interrupt["id"].as_str().unwrap().to_owned(),
        status: ResumeStatus::Resolved,
        payload: Some(json!({"approved": true})),
    }];
    let second = run(&agent, input("t-ask", "r2", None, resume)).await;
    let restarted = of_type(&second, "SUBAGENT_STARTED")[0];
    assert_eq!(
        restarted["subagentRunId"], sa,
        "the suspended invocation continues"
    );
    let time = of_type(&second, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|event| event["subagentRunId"] == sa.as_str())
        .unwrap();
    assert!(time["content"].as_str().unwrap().contains("iso"), "{time}");
    let answered = of_type(&second, "TOOL_CALL_RESULT")
        .into_iter()
        .find(|event| event["toolCallId"] == "call_r")
        .unwrap();
    assert_eq!(answered["content"], "It is late.");
    assert_eq!(second.last().unwrap()["type"], "RUN_FINISHED");
    assert!(second.last().unwrap().get("outcome").is_none());
    assert_eq!(
        coordinator_model.requests().len(),
        2,
        "then the parent goes on"
    );
}
