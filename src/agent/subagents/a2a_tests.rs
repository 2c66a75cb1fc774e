//! `A2aAgent`'s mapping of the A2A client's events, answers and interrupts.

use super::*;

/// What a delegation shows of `shown`, for the tests: bytes per artifact.
fn shown_of(task: &RemoteTask) -> std::collections::BTreeMap<String, usize> {
    task.shown.clone()
}

fn entry(payload: Option<Value>) -> ResumeEntry {
    ResumeEntry {
        interrupt_id: "a2a-1".into(),
        status: ResumeStatus::Resolved,
        payload,
    }
}

#[test]
fn an_answer_is_text_when_it_is_a_string_and_data_otherwise() {
    assert_eq!(
        answer_parts(&entry(Some(json!("Paris")))),
        ("Paris".to_owned(), None)
    );
    assert_eq!(
        answer_parts(&entry(Some(json!({"approved": true})))),
        (String::new(), Some(json!({"approved": true})))
    );
    assert_eq!(answer_parts(&entry(None)), ("yes".to_owned(), None));
}

#[test]
fn a_waiting_task_is_one_interrupt_with_its_schema_and_task() {
    let asked = interrupt(
        "scheduler",
        TaskState::InputRequired,
        ("t1", "c1"),
        "Which city?".into(),
        vec![
            json!({"type": "object", "properties": {"city": {}}}),
            json!({"interrupts": []}),
        ],
    );
    assert_eq!(asked.reason, "input_required");
    assert_eq!(asked.message.as_deref(), Some("Which city?"));
    assert_eq!(asked.response_schema.unwrap()["type"], "object");
    let a2a = &asked.metadata.unwrap()["agui-lambda"]["a2a"];
    assert_eq!(a2a["taskId"], "t1");
    assert_eq!(a2a["state"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(a2a["data"], json!([{"interrupts": []}]));
    let auth = interrupt(
        "calendar",
        TaskState::AuthRequired,
        ("t2", "c2"),
        " ".into(),
        Vec::new(),
    );
    assert_eq!(auth.reason, "auth_required");
    assert_eq!(
        auth.message.as_deref(),
        Some("The calendar agent needs you to sign in.")
    );
    assert!(auth.response_schema.is_none());
    assert!(auth.id.starts_with("a2a-") && auth.id.len() == 16);
}

#[tokio::test]
async fn the_client_s_events_become_the_child_s_and_the_task_is_kept() {
    let agent = Arc::new(A2aAgent::new(
        "peer",
        &A2aAgentSettings {
            card_url: "http://127.0.0.1:9/card".into(),
            credentials_secret_id: None,
        },
        None,
        shared_client(reqwest::Client::new()),
    ));
    let mut follower = Follower {
        agent,
        speaks_v1: true,
        task: None,
        data_seen: HashSet::new(),
        usage: Vec::new(),
        stopping: false,
    };
    let mut out = Vec::new();
    for event in [
        client::ChildEvent::Task {
            task_id: "t1".into(),
            context_id: "c1".into(),
        },
        client::ChildEvent::TextStart {
            message_id: "a1".into(),
        },
        client::ChildEvent::TextDelta {
            message_id: "a1".into(),
            delta: "Hello".into(),
        },
        client::ChildEvent::TextEnd {
            message_id: "a1".into(),
        },
        client::ChildEvent::Data {
            message_id: "a1".into(),
            data: json!([1, 2]),
        },
        client::ChildEvent::Data {
            message_id: "a1".into(),
            data: json!([1, 2]),
        },
        client::ChildEvent::Usage(vec![TokenUsage {
            total_tokens: 7,
            ..TokenUsage::default()
        }]),
        client::ChildEvent::Interrupted {
            state: TaskState::InputRequired,
            task_id: "t1".into(),
            context_id: "c1".into(),
            message: "Which city?".into(),
            data: Vec::new(),
        },
    ] {
        out.extend(follower.take(event).await);
    }
    let kinds: Vec<String> = out
        .iter()
        .map(|event| match event {
            ChildEvent::Content(map) => map["type"].as_str().unwrap().to_owned(),
            ChildEvent::Remote(_) => "remote".to_owned(),
            ChildEvent::End(_) => "end".to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "ACTIVITY_SNAPSHOT",
            "remote",
            "end"
        ]
    );
    let ChildEvent::Content(activity) = &out[3] else {
        unreachable!()
    };
    assert_eq!(activity["content"], json!({"value": [1, 2]}));
    let ChildEvent::Remote(task) = &out[4] else {
        unreachable!()
    };
    assert_eq!(task.waiting.as_deref(), Some("input_required"));
    assert_eq!(
        shown_of(task),
        std::collections::BTreeMap::from([("a1".to_owned(), 5)])
    );
    assert!(matches!(
        &out[5],
        ChildEvent::End(ChildEnd::Suspended { interrupts, usage })
            if interrupts[0].reason == "input_required" && usage[0].total_tokens == 7
    ));
}
