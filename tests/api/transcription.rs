//! The transcription client against the strict stand-in of OpenAI's audio transcriptions API:
//! the form it sends is one the API takes, and each refusal becomes the error that says why.

use super::strict_transcriptions::{RATE_LIMITED_AUDIO, StrictTranscriptions};
use agui_lambda::testing::model::transcription::{
    Audio, Transcriber, TranscriptionError, TranscriptionSettings,
};
use bytes::Bytes;

fn transcriber(base_url: &str, key: &str) -> Transcriber {
    Transcriber::new(
        reqwest::Client::new(),
        TranscriptionSettings {
            base_url: base_url.to_owned(),
            api_key: Some(key.to_owned().into()),
            model: "gpt-4o-mini-transcribe".to_owned(),
        },
    )
}

fn audio(bytes: &'static [u8], mime_type: &str) -> Audio {
    Audio {
        bytes: Bytes::from_static(bytes),
        mime_type: mime_type.to_owned(),
    }
}

#[tokio::test]
async fn a_recording_is_transcribed_and_refusals_say_why() {
    let api = StrictTranscriptions::start("sk-transcribe", 64 * 1024).await;
    let client = transcriber(&api.base_url, "sk-transcribe");
    let text = client
        .transcribe(&audio(
            b"\x1aE\xdf\xa3 a short webm recording",
            "audio/webm",
        ))
        .await
        .unwrap();
    assert_eq!(text, "I heard 27 bytes of webm audio.");
    let heard = api.heard.lock().unwrap().clone();
    assert_eq!(heard[0].filename, "recording.webm");
    assert_eq!(heard[0].content_type, "audio/webm");
    assert_eq!(heard[0].model, "gpt-4o-mini-transcribe");
    // Every format the client accepts is one the API reads.
    for mime in Transcriber::formats() {
        client
            .transcribe(&audio(b"RIFF some audio bytes", mime))
            .await
            .unwrap_or_else(|error| panic!("{mime}: {error}"));
    }

    let wrong_key = transcriber(&api.base_url, "sk-wrong");
    assert_eq!(
        wrong_key
            .transcribe(&audio(b"RIFF audio", "audio/wav"))
            .await,
        Err(TranscriptionError::AuthFailed)
    );
    assert_eq!(
        client
            .transcribe(&audio(RATE_LIMITED_AUDIO, "audio/wav"))
            .await,
        Err(TranscriptionError::RateLimited)
    );
    assert!(matches!(
        client.transcribe(&audio(b"RIFF", "audio/wav")).await,
        Err(TranscriptionError::Refused(message)) if message.contains("too short")
    ));
    let big = Audio {
        bytes: Bytes::from(vec![7u8; 65 * 1024]),
        mime_type: "audio/mpeg".to_owned(),
    };
    assert!(matches!(
        client.transcribe(&big).await,
        Err(TranscriptionError::TooLarge(message)) if message.contains("Maximum content size")
    ));
    let nowhere = transcriber("http://127.0.0.1:9/v1", "sk");
    assert!(matches!(
        nowhere.transcribe(&audio(b"RIFF audio", "audio/wav")).await,
        Err(TranscriptionError::Unreachable(_))
    ));
}
