//! The A2A 1.0 client against peers written with the official Python SDK (tests/python/
//! a2a_peer.py, `a2a-sdk` 1.x on loopback): a streamed answer, input required and the resume,
//! auth required, failed, rejected, a slow task cancelled, a context continued, both bindings,
//! credentials as the card's scheme says. The peer records every call: each carries
//! `A2A-Version: 1.0` and the card's tenant. aimock's A2A mock is a second peer (`wire_…`).

use super::helpers::{await_ready, free_port, repo_path, spawn_watched};
use agui_lambda::testing::a2a::{A2aClient, ChildEvent, Credentials, Delegation, TaskState};
use futures_util::StreamExt;
use serde_json::Value;
use std::time::Duration;

pub(crate) const TOKEN: &str = "peer-token-1";

/// The Python peer, one per test binary.
pub(crate) async fn peer() -> &'static str {
    static URL: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    URL.get_or_init(|| async {
        let python = repo_path(".venv/bin/python");
        assert!(
            python.exists(),
            "the test venv is missing: run scripts/install-test-tools.sh"
        );
        let port = free_port();
        spawn_watched(&format!(
            "'{python}' '{script}' --port {port} --token {TOKEN}",
            python = python.display(),
            script = repo_path("tests/python/a2a_peer.py").display(),
        ));
        let url = format!("http://127.0.0.1:{port}");
        await_ready(&format!("{url}/__calls"), "the A2A peer").await;
        url
    })
    .await
}

fn delegation(card: &str, text: &str) -> Delegation {
    Delegation {
        card_url: card.to_owned(),
        credentials: Credentials::from_secret(&format!(r#"{{"bearer": "{TOKEN}"}}"#)),
        text: text.to_owned(),
        ..Delegation::default()
    }
}

async fn events(client: &A2aClient, delegation: Delegation) -> Vec<ChildEvent> {
    let stream = client
        .delegate(delegation)
        .await
        .expect("the delegation starts");
    let events: Vec<_> = stream.collect().await;
    events
        .into_iter()
        .map(|event| event.unwrap_or_else(|error| panic!("the delegation failed: {error}")))
        .collect()
}

fn text(events: &[ChildEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            ChildEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

fn task_of(events: &[ChildEvent]) -> (String, String) {
    events
        .iter()
        .find_map(|event| match event {
            ChildEvent::Task {
                task_id,
                context_id,
            } => Some((task_id.clone(), context_id.clone())),
            _ => None,
        })
        .expect("a task")
}

/// Every call the peer received for `task_or_text`'s requests carries 1.0 and the tenant.
async fn calls(base: &str) -> Vec<Value> {
    reqwest::get(format!("{base}/__calls"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_streamed_answer_is_child_text_appended_then_closed() {
    let base = peer().await;
    let client = A2aClient::new(http());
    // A URL of its own, so the other tests' clients' reads of the card do not count here.
    let card = format!("{base}/.well-known/agent-card.json?cached");
    let got = events(&client, delegation(&card, "stream it")).await;
    assert!(matches!(&got[0], ChildEvent::Task { .. }), "{got:?}");
    assert_eq!(text(&got), "Hello from the peer.");
    let starts = got
        .iter()
        .filter(|e| matches!(e, ChildEvent::TextStart { .. }))
        .count();
    assert_eq!(starts, 1, "one message for the artifact's chunks: {got:?}");
    assert_eq!(
        got[got.len() - 2],
        ChildEvent::TextEnd {
            message_id: "answer".into()
        }
    );
    assert_eq!(got.last(), Some(&ChildEvent::Completed));

    // A second delegation continues the context, and reads the card from the cache.
    let (_, context) = task_of(&got);
    let mut again = delegation(&card, "stream more");
    again.context_id = Some(context.clone());
    let second = events(&client, again).await;
    assert_eq!(task_of(&second).1, context);
    let calls = calls(base).await;
    let card_reads = calls.iter().filter(|c| c["query"] == "cached").count();
    assert_eq!(
        card_reads, 1,
        "the card is kept for its max-age: {calls:#?}"
    );
    for call in calls.iter().filter(|c| c["rpc"] == "SendStreamingMessage") {
        assert_eq!(call["version"], "1.0", "{call}");
        assert_eq!(call["tenant"], "acme", "{call}");
    }
}

#[tokio::test]
async fn input_required_is_an_interrupt_and_the_resume_completes_the_same_task() {
    let base = peer().await;
    let client = A2aClient::new(http());
    let card = format!("{base}/.well-known/agent-card.json");
    let asked = events(&client, delegation(&card, "ask for a city")).await;
    let Some(ChildEvent::Interrupted {
        state,
        task_id,
        context_id,
        message,
        data,
    }) = asked.last()
    else {
        panic!("an interrupt: {asked:?}")
    };
    assert_eq!(*state, TaskState::InputRequired);
    assert_eq!(message, "Which city?");
    assert_eq!(data[0]["type"], "object");
    let mut answer = delegation(&card, "Paris");
    answer.task_id = Some(task_id.clone());
    answer.context_id = Some(context_id.clone());
    let done = events(&client, answer).await;
    assert_eq!(task_of(&done).0, *task_id);
    assert_eq!(text(&done), "Booked for Paris.");
    assert_eq!(done.last(), Some(&ChildEvent::Completed));
}

#[tokio::test]
async fn auth_required_failed_and_rejected_end_the_child_as_they_should() {
    let base = peer().await;
    let client = A2aClient::new(http());
    let card = format!("{base}/.well-known/agent-card.json");
    let auth = events(&client, delegation(&card, "auth please")).await;
    assert!(
        matches!(auth.last(), Some(ChildEvent::Interrupted { state: TaskState::AuthRequired, message, .. }) if message == "Sign in to the calendar first."),
        "{auth:?}"
    );
    let failed = events(&client, delegation(&card, "fail now")).await;
    assert_eq!(
        failed.last(),
        Some(&ChildEvent::Failed {
            code: "PEER_BROKE".into(),
            message: "The peer broke.".into()
        })
    );
    let rejected = events(&client, delegation(&card, "reject this")).await;
    assert!(
        matches!(rejected.last(), Some(ChildEvent::Failed { code, message }) if code == "A2A_TASK_REJECTED" && message == "I will not do that."),
        "{rejected:?}"
    );
}

#[tokio::test]
async fn a_slow_task_is_cancelled_and_its_stream_ends_canceled() {
    let base = peer().await;
    let client = A2aClient::new(http());
    let card = format!("{base}/.well-known/agent-card.json");
    let mut stream = client
        .delegate(delegation(&card, "slow work"))
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        let ticked = matches!(event, ChildEvent::TextDelta { .. });
        seen.push(event);
        if ticked {
            break;
        }
    }
    let (task_id, _) = task_of(&seen);
    let credentials = Credentials::from_secret(TOKEN);
    let state = client.cancel(&card, &credentials, &task_id).await.unwrap();
    assert_eq!(state, TaskState::Canceled);
    let rest: Vec<ChildEvent> =
        tokio::time::timeout(Duration::from_secs(10), stream.collect::<Vec<_>>())
            .await
            .expect("the stream ends once the task is canceled")
            .into_iter()
            .map(Result::unwrap)
            .collect();
    assert!(
        matches!(rest.last(), Some(ChildEvent::Failed { code, .. }) if code == "A2A_TASK_CANCELED"),
        "{rest:?}"
    );
    assert!(
        calls(base)
            .await
            .iter()
            .any(|c| c["rpc"] == "CancelTask" && c["tenant"] == "acme")
    );
}

#[tokio::test]
async fn the_http_json_binding_puts_the_tenant_in_the_path() {
    let base = peer().await;
    let client = A2aClient::new(http());
    let card = format!("{base}/rest/.well-known/agent-card.json");
    let got = events(&client, delegation(&card, "stream over rest")).await;
    assert_eq!(text(&got), "Hello from the peer.");
    let calls = calls(base).await;
    let rest = calls
        .iter()
        .find(|c| c["path"] == "/a2a/acme/message:stream")
        .expect("a REST call");
    assert_eq!(rest["version"], "1.0");
}

#[tokio::test]
async fn credentials_are_required_when_the_card_asks_and_checked_by_the_peer() {
    let base = peer().await;
    let client = A2aClient::new(http());
    let card = format!("{base}/.well-known/agent-card.json");
    let mut none = delegation(&card, "stream it");
    none.credentials = Credentials::default();
    let refused = client
        .delegate(none)
        .await
        .err()
        .expect("no credential, no call");
    assert!(refused.message.contains("credentials"), "{refused}");
    let mut wrong = delegation(&card, "stream it");
    wrong.credentials = Credentials::from_secret("not-the-token");
    let refused = client
        .delegate(wrong)
        .await
        .err()
        .expect("a wrong token is refused");
    assert_eq!(refused.status, 401);
    // An agent whose card asks for nothing gets nothing.
    let open = format!("{base}/open/.well-known/agent-card.json");
    let mut anonymous = delegation(&open, "stream openly");
    anonymous.credentials = Credentials::default();
    assert_eq!(
        text(&events(&client, anonymous).await),
        "Hello from the peer."
    );
}

/// aimock serving `config` (its A2A mock at `/a2a`); killed when dropped.
pub(crate) async fn aimock_a2a(config: &str) -> (tokio::process::Child, String) {
    let bin = repo_path("tests/node/node_modules/.bin/aimock");
    assert!(
        bin.exists(),
        "aimock is not installed: run `npm ci` in tests/node"
    );
    let port = free_port();
    let child = tokio::process::Command::new(bin)
        .arg("-c")
        .arg(repo_path(config))
        .args(["-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("aimock starts");
    let card = format!("http://127.0.0.1:{port}/a2a/.well-known/agent-card.json");
    for _ in 0..200 {
        if reqwest::get(&card)
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return (child, card);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("aimock's A2A mock did not start on port {port}");
}

#[tokio::test]
async fn wire_aimocks_a2a_mock_streamed_and_polled() {
    let client = A2aClient::new(http());
    let (_streaming, card) = aimock_a2a("tests/fixtures/aimock-a2a.json").await;
    let got = events(&client, delegation(&card, "research this")).await;
    assert_eq!(text(&got), "Found three papers.");
    assert_eq!(got.last(), Some(&ChildEvent::Completed), "{got:?}");

    let (_polled, card) = aimock_a2a("tests/fixtures/aimock-a2a-polled.json").await;
    let got = events(&client, delegation(&card, "summarise it")).await;
    assert_eq!(text(&got), "A short summary.");
    assert!(
        got.iter()
            .any(|e| matches!(e, ChildEvent::Data { data, .. } if data["words"] == 3)),
        "{got:?}"
    );
    assert_eq!(got.last(), Some(&ChildEvent::Completed));
}
