use super::*;
use crate::protocol::MessageId;
use serde_json::json;

fn call(id: &str) -> ToolCallId {
    ToolCallId::parse(id, 128).unwrap()
}

fn record(expires_at_ms: i64, confirm: Option<&str>) -> InterruptRecord {
    let schema =
        json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]});
    let mut interrupt = tool_interrupt(
        &call("c1"),
        "delete_order",
        r#"{"id":1}"#,
        &schema,
        expires_at_ms,
    );
    interrupt.id = "int-1".into();
    InterruptRecord {
        open: vec![PendingApproval {
            interrupt,
            tool_name: "delete_order".into(),
            arguments: r#"{"id":1}"#.into(),
            expires_at_ms,
            confirm_call_id: confirm.map(call),
        }],
        answered: Vec::new(),
        delegated: Vec::new(),
    }
}

fn schema(_: &str) -> Option<Value> {
    Some(json!({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}))
}

fn entry(status: ResumeStatus, payload: Option<Value>) -> ResumeEntry {
    ResumeEntry {
        interrupt_id: "int-1".into(),
        status,
        payload,
    }
}

#[test]
fn approve_deny_and_edit() {
    let now = 1_000;
    let approve = record(now + 10, None)
        .resolve(
            &[entry(
                ResumeStatus::Resolved,
                Some(json!({"approved": true})),
            )],
            &[],
            true,
            schema,
            now,
        )
        .unwrap();
    assert_eq!(
        approve.resolved[0].decision,
        Decision::Approve {
            arguments: r#"{"id":1}"#.into()
        }
    );
    assert!(approve.record.open.is_empty());
    assert_eq!(approve.record.answered.len(), 1);

    let edited = record(now + 10, None)
        .resolve(
            &[entry(
                ResumeStatus::Resolved,
                Some(json!({"approved": true, "editedArgs": {"id": 2}})),
            )],
            &[],
            true,
            schema,
            now,
        )
        .unwrap();
    assert_eq!(
        edited.resolved[0].decision,
        Decision::Approve {
            arguments: r#"{"id":2}"#.into()
        }
    );

    let denied = record(now + 10, None)
        .resolve(
            &[entry(
                ResumeStatus::Resolved,
                Some(json!({"approved": false, "reason": "not that one"})),
            )],
            &[],
            true,
            schema,
            now,
        )
        .unwrap();
    assert!(
        matches!(&denied.resolved[0].decision, Decision::Deny { reason } if reason.contains("not that one"))
    );
}

#[test]
fn edits_are_checked_against_the_tool_schema() {
    let error = record(10, None)
        .resolve(
            &[entry(
                ResumeStatus::Resolved,
                Some(json!({"approved": true, "editedArgs": {"id": "two"}})),
            )],
            &[],
            true,
            schema,
            0,
        )
        .unwrap_err();
    assert!(
        matches!(&error, InterruptError::InvalidResume { index: 0, message } if message.contains("editedArgs")),
        "{error}"
    );
    assert_eq!(error.code(), RunErrorCode::InvalidResume);
}

#[test]
fn open_interrupts_must_be_answered_and_expired_ones_only_cancelled() {
    let error = record(10, None)
        .resolve(&[], &[], true, schema, 0)
        .unwrap_err();
    assert_eq!(error, InterruptError::Pending("int-1".into()));
    let expired = record(10, None)
        .resolve(
            &[entry(
                ResumeStatus::Resolved,
                Some(json!({"approved": true})),
            )],
            &[],
            true,
            schema,
            10,
        )
        .unwrap_err();
    assert!(matches!(expired, InterruptError::Expired { .. }));
    let cancelled = record(10, None)
        .resolve(
            &[entry(ResumeStatus::Cancelled, None)],
            &[],
            true,
            schema,
            10,
        )
        .unwrap();
    assert!(matches!(
        cancelled.resolved[0].decision,
        Decision::Deny { .. }
    ));
}

#[test]
fn a_repeated_resume_is_recognised_and_a_different_one_refused() {
    let answer = entry(ResumeStatus::Resolved, Some(json!({"approved": true})));
    let first = record(10, None)
        .resolve(std::slice::from_ref(&answer), &[], true, schema, 0)
        .unwrap();
    let again = first
        .record
        .clone()
        .resolve(std::slice::from_ref(&answer), &[], true, schema, 0)
        .unwrap();
    assert!(again.only_repeats);
    assert!(again.resolved.is_empty());
    let other = first
        .record
        .resolve(
            &[entry(
                ResumeStatus::Resolved,
                Some(json!({"approved": false})),
            )],
            &[],
            true,
            schema,
            0,
        )
        .unwrap_err();
    assert!(matches!(other, InterruptError::InvalidResume { .. }));
    // An answer to no interrupt of the thread is ignored, and nothing is resolved.
    let unknown = InterruptRecord::default()
        .resolve(&[answer], &[], true, schema, 0)
        .unwrap();
    assert!(unknown.resolved.is_empty() && !unknown.only_repeats);
}

#[test]
fn a_legacy_client_answers_the_confirm_tool() {
    let answer = |content: &str| Message::Tool {
        id: MessageId::generate(),
        tool_call_id: call("confirm-1"),
        content: content.into(),
        error: None,
        metadata: None,
    };
    for (content, approved) in [
        ("confirmed", true),
        ("Yes", true),
        (r#"{"approved":true}"#, true),
        ("true", true),
        ("cancelled", false),
        (r#"{"approved":false}"#, false),
    ] {
        let resolution = record(10, Some("confirm-1"))
            .resolve(&[], &[answer(content)], false, schema, 0)
            .unwrap();
        assert_eq!(
            matches!(resolution.resolved[0].decision, Decision::Approve { .. }),
            approved,
            "{content}"
        );
    }
    // Moving on without answering is a denial, never an approval.
    let moved_on = record(10, Some("confirm-1"))
        .resolve(&[], &[], false, schema, 0)
        .unwrap();
    assert!(matches!(
        moved_on.resolved[0].decision,
        Decision::Deny { .. }
    ));
}
