//! Arbitrary bytes as a `RunAgentInput` request body.
//!
//! Properties:
//! - `parse_run_input` never panics, whatever the bytes (it returns `Ok` or an `InputError`);
//! - every accepted message survives a serde round trip in its stored (AG-UI 1.0) shape;
//! - the accepted messages, sent back as a request body, are accepted again unchanged (what the
//!   server stores and replays through `MESSAGES_SNAPSHOT` is itself valid input).
#![no_main]

use agui_lambda::testing::protocol::{Limits, Message, parse_run_input};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    let Ok(input) = parse_run_input(data, &limits) else {
        return;
    };
    assert!(input.messages.len() <= limits.max_messages);

    for message in &input.messages {
        let json = serde_json::to_string(message).expect("a parsed message serialises");
        let back: Message = serde_json::from_str(&json)
            .unwrap_or_else(|err| panic!("serialised message does not parse back: {err}\n{json}"));
        assert_eq!(&back, message, "message changed in a serde round trip: {json}");
    }

    // The history a client receives (MESSAGES_SNAPSHOT / GET /threads) and sends back next run.
    // The re-encoded body can be a little larger than the original (a legacy `binary` part
    // becomes an `image` part), so the size limit is lifted for the second parse only.
    let body = serde_json::json!({
        "threadId": input.thread_id.as_ref().map(|id| id.as_str()),
        "runId": input.run_id.as_str(),
        "messages": &input.messages,
    });
    let body = serde_json::to_vec(&body).expect("a body serialises");
    let relaxed = Limits {
        max_payload_bytes: usize::MAX,
        ..Limits::default()
    };
    match parse_run_input(&body, &relaxed) {
        Ok(again) => {
            assert_eq!(again.messages, input.messages, "messages changed when re-sent");
            assert_eq!(again.run_id, input.run_id);
            assert_eq!(again.thread_id, input.thread_id);
        }
        Err(err) => panic!(
            "accepted messages are refused when sent back: {err}\n{}",
            String::from_utf8_lossy(&body)
        ),
    }
});
