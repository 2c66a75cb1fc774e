//! What CopilotKit's Node runtime offers besides runs and threads, served by the function:
//! dynamic suggestions (`/suggest`, the model forced to answer CopilotKit's suggestion tool,
//! nothing stored) and voice input (`/transcribe`, forwarded to a strict stand-in of OpenAI's
//! audio transcriptions API, with its size, type and auth limits and CopilotKit's error codes).

use super::copilotkit_runs::{POEM, input, post, run_events, user};
use super::helpers::*;
use super::strict_transcriptions::{RATE_LIMITED_AUDIO, StrictTranscriptions};
use base64::Engine;
use serde_json::{Value, json};

/// CopilotKit's suggestion tool, as `@copilotkit/core` sends it.
fn suggest_tool() -> Value {
    json!({"name": "copilotkitSuggest", "description": "Suggest what the user could say next",
           "parameters": {"type": "object", "properties": {"suggestions": {"type": "array",
             "description": "List of suggestions shown to the user as buttons.",
             "items": {"type": "object", "properties": {"title": {"type": "string"}, "message": {"type": "string"}},
                       "required": ["title", "message"]}}}, "required": ["suggestions"]}})
}

/// The body `@copilotkit/core` posts to `/suggest`: the conversation so far, then its instruction.
fn suggest_body(thread: &str, history: Vec<Value>) -> Value {
    let mut messages = history;
    messages.push(user(
        "suggest-1",
        "Suggest what the user could say next. Provide clear, highly relevant suggestions by calling the `copilotkitSuggest` tool.\nProvide at least 1 and at most 3 suggestions.",
    ));
    let mut body = input(thread, "suggest-run", json!(messages));
    body["tools"] = json!([suggest_tool()]);
    body["forwardedProps"] =
        json!({"toolChoice": {"type": "function", "function": {"name": "copilotkitSuggest"}}});
    body
}

#[tokio::test]
async fn suggestions_come_from_the_forced_tool_and_nothing_is_stored() {
    let app = spawn_app().await;
    let info = app.get("/copilotkit/info").await.json();
    assert_eq!(info["suggestions"], true);
    let thread = new_thread();
    let history = vec![
        user("u1", POEM),
        json!({"id": "a1", "role": "assistant", "content": "A poem."}),
    ];
    let reply = post(
        &app,
        "/copilotkit/agent/default/suggest",
        &suggest_body(&thread, history),
    )
    .await;
    let events = run_events(&reply);
    let call = assistant_from(&events);
    assert_eq!(
        call["toolCalls"][0]["function"]["name"],
        "copilotkitSuggest"
    );
    let arguments: Value = serde_json::from_str(
        call["toolCalls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(arguments["suggestions"][0]["title"], "Write a poem");
    // The model was forced to the tool, and saw the conversation the client sent.
    let asked = app.fixture_requests_about("Suggest what the user could say next");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].tool_choice.as_deref(), Some("copilotkitSuggest"));
    assert_eq!(asked[0].messages.len(), 3);
    // No thread was made, on that id or any other.
    assert_eq!(app.get(&format!("/threads/{thread}")).await.status, 404);
    assert_eq!(app.get("/threads").await.json()["threads"], json!([]));

    // A tool choice that names no tool of the request is refused.
    let mut wrong = suggest_body(&new_thread(), vec![]);
    wrong["forwardedProps"]["toolChoice"]["function"]["name"] = json!("somethingElse");
    let refused = post(&app, "/copilotkit/agent/default/suggest", &wrong).await;
    assert_eq!(refused.status, 422, "{}", refused.body);

    let off = spawn_app_with(&[("COPILOTKIT_SUGGESTIONS", "false")]).await;
    assert_eq!(
        off.get("/copilotkit/info").await.json()["suggestions"],
        false
    );
    let reply = post(
        &off,
        "/copilotkit/agent/default/suggest",
        &suggest_body(&new_thread(), vec![]),
    )
    .await;
    assert_eq!(reply.status, 404);
}

const KEY: &str = "sk-transcribe-test";

/// A multipart form with `audio` of `mime` as CopilotKit's chat sends it.
fn form(audio: &[u8], mime: &str) -> (String, Vec<u8>) {
    let boundary = "----copilotkit-test-boundary";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"recording.webm\"\r\nContent-Type: {mime}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(audio);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn transcribe(app: &TestApp, audio: &[u8], mime: &str) -> Reply {
    let (content_type, body) = form(audio, mime);
    app.post_raw("/copilotkit/transcribe", &content_type, body)
        .await
}

fn code(reply: &Reply) -> String {
    reply.json()["error"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn voice_input_is_transcribed_by_the_configured_model_within_its_limits() {
    let api = StrictTranscriptions::start(KEY, 25 * 1024 * 1024).await;
    let app = spawn_app_with(&[
        ("TRANSCRIPTION_MODEL", "gpt-4o-mini-transcribe"),
        ("TRANSCRIPTION_BASE_URL", &api.base_url),
        ("TRANSCRIPTION_API_KEY", KEY),
        ("TRANSCRIPTION_MAX_BYTES", "4096"),
    ])
    .await;
    assert_eq!(
        app.get("/copilotkit/info").await.json()["audioFileTranscriptionEnabled"],
        true
    );
    let recording = b"\x1aE\xdf\xa3 a recorded question".to_vec();
    let heard = transcribe(&app, &recording, "audio/webm;codecs=opus").await;
    assert_eq!(heard.status, 200, "{}", heard.body);
    assert_eq!(
        heard.json(),
        json!({"text": "I heard 24 bytes of webm audio.", "size": 24, "type": "audio/webm"})
    );
    // The single route sends it as base64 JSON.
    let encoded = base64::engine::general_purpose::STANDARD.encode(&recording);
    let single = post(
        &app,
        "/copilotkit",
        &json!({"method": "transcribe", "body": {"audio": encoded, "mimeType": "audio/mp4", "filename": "r.m4a"}}),
    )
    .await;
    assert_eq!(single.status, 200, "{}", single.body);
    assert_eq!(single.json()["text"], "I heard 24 bytes of m4a audio.");

    for (audio, mime, status, expected) in [
        (&recording[..], "text/plain", 400, "invalid_audio_format"),
        (&[][..], "audio/webm", 400, "audio_too_short"),
        (&[7u8; 4097][..], "audio/webm", 413, "audio_too_long"),
        (RATE_LIMITED_AUDIO, "audio/wav", 429, "rate_limited"),
        (b"RIFF", "audio/wav", 400, "audio_too_short"),
    ] {
        let reply = transcribe(&app, audio, mime).await;
        assert_eq!(reply.status, status, "{mime}: {}", reply.body);
        assert_eq!(code(&reply), expected, "{mime}");
        assert!(reply.json()["message"].is_string());
    }
    // A body past the route's own limit is refused at the door, in the same shape.
    let huge = transcribe(&app, &vec![7u8; 64 * 1024], "audio/webm").await;
    assert_eq!(huge.status, 413, "{}", huge.body);
    assert_eq!(code(&huge), "audio_too_long");
    let no_audio = app
        .post_raw(
            "/copilotkit/transcribe",
            "multipart/form-data; boundary=b",
            "--b\r\nContent-Disposition: form-data; name=\"other\"\r\n\r\nx\r\n--b--\r\n",
        )
        .await;
    assert_eq!(code(&no_audio), "invalid_request");
    assert_eq!(
        api.heard.lock().unwrap().len(),
        2,
        "only the good recordings reached the model"
    );

    // The model's key refused is the model's failure, not the caller's.
    let wrong_key = spawn_app_with(&[
        ("TRANSCRIPTION_MODEL", "whisper-1"),
        ("TRANSCRIPTION_BASE_URL", &api.base_url),
        ("TRANSCRIPTION_API_KEY", "sk-wrong"),
    ])
    .await;
    let reply = transcribe(&wrong_key, &recording, "audio/webm").await;
    assert_eq!(reply.status, 502);
    assert_eq!(code(&reply), "auth_failed");
}

#[tokio::test]
async fn voice_input_is_off_unless_configured_and_takes_the_same_auth() {
    let off = spawn_app().await;
    assert_eq!(
        off.get("/copilotkit/info").await.json()["audioFileTranscriptionEnabled"],
        false
    );
    let reply = transcribe(&off, b"RIFF some audio", "audio/wav").await;
    assert_eq!(reply.status, 503);
    assert_eq!(code(&reply), "service_not_configured");

    let api = StrictTranscriptions::start(KEY, 1024 * 1024).await;
    let keys = format!(
        "alice={}",
        agui_lambda::testing::auth::hash_api_key("alice-key")
    );
    let guarded = spawn_app_with(&[
        ("AUTH_MODE", "api-key"),
        ("API_KEYS", &keys),
        ("TRANSCRIPTION_MODEL", "whisper-1"),
        ("TRANSCRIPTION_BASE_URL", &api.base_url),
        ("TRANSCRIPTION_API_KEY", KEY),
    ])
    .await;
    let refused = transcribe(&guarded, b"RIFF some audio", "audio/wav").await;
    assert_eq!(refused.status, 401);
    assert_eq!(code(&refused), "auth_failed");
    assert!(api.heard.lock().unwrap().is_empty());
}
