use super::*;
use crate::protocol::message::ToolCall;
use crate::protocol::{MessageId, ToolCallId, UserContent};

fn agents() -> Vec<AgentEntry> {
    vec![
        AgentEntry {
            id: "default".into(),
            description: "An AG-UI agent".into(),
            capabilities: json!({"tools": {"supported": true}}),
        },
        AgentEntry {
            id: "researcher".into(),
            description: "Finds facts.".into(),
            capabilities: json!({}),
        },
    ]
}

#[test]
fn info_names_every_agent_and_sets_every_flag() {
    let info = runtime_info(&agents(), &Features::default(), false);
    assert_eq!(info["mode"], "sse");
    assert_eq!(
        info["threadEndpoints"],
        json!({"list": true, "inspect": true, "mutations": true, "realtimeMetadata": false})
    );
    assert_eq!(
        info["agents"]["default"],
        json!({"name": "default", "className": "agui-lambda", "description": "An AG-UI agent",
               "capabilities": {"tools": {"supported": true}}})
    );
    assert_eq!(info["agents"]["researcher"]["description"], "Finds facts.");
    assert_eq!(info["suggestions"], false);
    assert_eq!(info["audioFileTranscriptionEnabled"], false);
    assert_eq!(info["a2ui"], json!({"enabled": false}));
    assert_eq!(info["a2uiEnabled"], false);
    assert_eq!(info["openGenerativeUIEnabled"], false);
    for never in [
        "intelligence",
        "licenseStatus",
        "runtimeEntitlements",
        "singleRoute",
    ] {
        assert!(info.get(never).is_none(), "{never}");
    }
    assert!(
        info["version"]
            .as_str()
            .unwrap()
            .starts_with("agui-lambda ")
    );
}

#[test]
fn info_tells_the_features_as_they_are() {
    let features = Features {
        suggestions: true,
        transcription: true,
        generative_ui: GenerativeUi {
            a2ui: true,
            a2ui_agents: Some(vec!["researcher".into()]),
            open_generative_ui: true,
        },
    };
    let info = runtime_info(&agents(), &features, true);
    assert_eq!(info["suggestions"], true);
    assert_eq!(info["audioFileTranscriptionEnabled"], true);
    assert_eq!(
        info["a2ui"],
        json!({"enabled": true, "agents": ["researcher"]})
    );
    assert_eq!(info["a2uiEnabled"], true);
    assert_eq!(info["openGenerativeUIEnabled"], true);
    assert_eq!(info["singleRoute"]["resourceOperations"], true);
    assert_eq!(
        info["singleRoute"]["threadEndpoints"],
        info["threadEndpoints"]
    );
}

#[test]
fn a_thread_record_is_copilotkits_shape() {
    let record = ThreadRecord {
        id: "t1",
        agent_id: "default",
        name: Some("Paint the page"),
        archived: true,
        created_at_ms: 1_700_000_000_000,
        updated_at_ms: 1_700_000_001_500,
    };
    assert_eq!(
        record.to_json(),
        json!({"id": "t1", "organizationId": "", "agentId": "default", "createdById": "",
               "name": "Paint the page", "archived": true,
               "createdAt": "2023-11-14T22:13:20.000Z", "updatedAt": "2023-11-14T22:13:21.500Z"})
    );
    let unnamed = ThreadRecord {
        name: None,
        ..record
    };
    assert_eq!(unnamed.to_json()["name"], Value::Null);
}

#[test]
fn a_stop_names_a_run_or_none_and_nothing_else() {
    assert_eq!(stop_scope(b""), Ok(None));
    assert_eq!(stop_scope(b"  "), Ok(None));
    assert_eq!(stop_scope(b"{}"), Ok(None));
    assert_eq!(
        stop_scope(br#"{"runId":"r1"}"#),
        Ok(Some(RunId::parse("r1", 128).unwrap()))
    );
    assert_eq!(
        stop_scope(br#"{"runID":"r1"}"#).unwrap_err().field(),
        Some("runID")
    );
    assert_eq!(
        stop_scope(br#"{"runId":""}"#).unwrap_err().field(),
        Some("runId")
    );
    assert_eq!(
        stop_scope(br#"{"runId":7}"#).unwrap_err().field(),
        Some("runId")
    );
    assert!(matches!(stop_scope(b"[1]"), Err(BodyError::Invalid { .. })));
    assert!(matches!(stop_scope(b"{"), Err(BodyError::Syntax(_))));
}

#[test]
fn a_thread_patch_renames_archives_or_both() {
    assert_eq!(
        ThreadPatch::parse(br#"{"agentId":"default","name":"  A   new\tname "}"#),
        Ok(ThreadPatch {
            agent_id: Some("default".into()),
            name: Some("A new name".into()),
            archived: None,
        })
    );
    assert_eq!(
        ThreadPatch::parse(br#"{"agentId":"default","archived":false}"#)
            .unwrap()
            .archived,
        Some(false)
    );
    let refused = |body: &str| ThreadPatch::parse(body.as_bytes()).unwrap_err();
    assert_eq!(refused(r#"{"agentId":"default"}"#).field(), Some("body"));
    assert_eq!(refused(r#"{"name":"   "}"#).field(), Some("name"));
    assert_eq!(
        refused(&format!(r#"{{"name":"{}"}}"#, "x".repeat(201))).field(),
        Some("name")
    );
    assert_eq!(
        refused(r#"{"name":"x","title":"y"}"#).field(),
        Some("title")
    );
    assert_eq!(refused(r#"{"archived":"yes"}"#).field(), Some("archived"));
    assert!(check_thread_action(b"").is_ok());
    assert!(check_thread_action(br#"{"agentId":"default"}"#).is_ok());
    assert!(check_thread_action(br#"{"agentId":"default","hard":true}"#).is_err());
}

#[test]
fn the_inspector_reads_each_message_as_copilotkit_shows_it() {
    let id = |text: &str| MessageId::parse(text, 128).unwrap();
    let call = ToolCallId::parse("c1", 128).unwrap();
    let messages = [
        Message::User {
            id: id("u1"),
            content: UserContent::Text("hi".into()),
            name: None,
        },
        Message::Assistant {
            id: id("a1"),
            content: Some("calling".into()),
            tool_calls: vec![ToolCall::new(
                call.clone(),
                "paint".into(),
                r#"{"c":1}"#.into(),
            )],
            name: None,
            encrypted_value: Some("opaque".into()),
        },
        Message::Tool {
            id: id("t1"),
            tool_call_id: call,
            content: "done".into(),
            error: None,
            metadata: None,
        },
    ];
    let shown: Vec<Value> = messages.iter().map(inspector_message).collect();
    assert_eq!(
        shown,
        [
            json!({"id": "u1", "role": "user", "content": "hi"}),
            json!({"id": "a1", "role": "assistant", "content": "calling",
                   "toolCalls": [{"id": "c1", "name": "paint", "args": "{\"c\":1}"}]}),
            json!({"id": "t1", "role": "tool", "content": "done", "toolCallId": "c1"}),
        ]
    );
}

#[test]
fn transcription_refusals_carry_copilotkits_codes() {
    assert_eq!(
        transcription_error(
            TranscriptionCode::InvalidAudioFormat,
            "audio/x is not audio"
        ),
        json!({"error": "invalid_audio_format", "message": "audio/x is not audio", "retryable": false})
    );
    assert_eq!(
        transcription_error(TranscriptionCode::RateLimited, "later")["retryable"],
        true
    );
}

#[test]
fn a_suggestion_names_its_forced_tool() {
    let body = json!({"forwardedProps": {"toolChoice": {"type": "function", "function": {"name": "copilotkitSuggest"}}}});
    assert_eq!(forced_tool(&body).as_deref(), Some("copilotkitSuggest"));
    assert_eq!(forced_tool(&json!({"forwardedProps": {}})), None);
    assert_eq!(
        forced_tool(&json!({"forwardedProps": {"toolChoice": "auto"}})),
        None
    );
    assert_eq!(
        forced_tool(
            &json!({"forwardedProps": {"toolChoice": {"type": "function", "function": {"name": ""}}}})
        ),
        None
    );
}
