use super::*;
use crate::genui::a2ui::render::tests::{Thread, form_call, user};
use serde_json::json;

#[test]
fn a_record_rides_in_the_answers_metadata_under_this_servers_key() {
    let mut thread = Thread::new();
    thread.call(&form_call());
    let answer = thread.messages.last().unwrap();
    let Message::Tool {
        metadata: Some(metadata),
        ..
    } = answer
    else {
        panic!("{answer:?}")
    };
    let record = &metadata["agui-lambda"]["a2ui"];
    assert_eq!(record["activityId"], "a2ui-surface-call_1");
    assert_eq!(record["status"], "rendered");
    assert_eq!(record["renderer"], "spec");
    assert_eq!(
        record["catalogId"],
        "https://a2ui.org/specification/v0_9/basic_catalog.json"
    );
    assert_eq!(record["surface"]["surfaceId"], "who");
    assert_eq!(
        Record::of(answer).unwrap().surface.unwrap().data["name"],
        json!("")
    );
}

#[test]
fn attempts_continue_within_a_turn_never_across_a_user_message() {
    let mut thread = Thread::new();
    thread.call(&json!({"surfaceId": "who", "components": []}));
    let chain = open_chain(&thread.messages).unwrap();
    assert_eq!(chain.activity_id, "a2ui-surface-call_1");
    assert_eq!(chain.next_attempt(), 2);
    thread.messages.push(user("never mind"));
    assert_eq!(open_chain(&thread.messages), None);
}

#[test]
fn the_latest_painting_of_a_surface_is_what_an_update_builds_on() {
    let mut thread = Thread::new();
    assert_eq!(latest_surface(&thread.messages, "who"), None);
    thread.call(&form_call());
    thread.call(&json!({"surfaceId": "who", "components": [{"id": "title", "component": "Fancy"}], "data": {"name": "Ada"}}));
    let surface = latest_surface(&thread.messages, "who").unwrap();
    assert_eq!(
        surface.data["name"],
        json!(""),
        "a refused update changes nothing"
    );
    // An update may change the data alone.
    thread.call(&json!({"surfaceId": "who", "components": [], "data": {"name": "Ada"}}));
    let surface = latest_surface(&thread.messages, "who").unwrap();
    assert_eq!(surface.data["name"], json!("Ada"));
    assert_eq!(latest_surface(&thread.messages, "other"), None);
}
