//! User content parts as Chat Completions content parts: images as `image_url` (the URL, or a
//! `data:` URL of inline bytes), WAV and MP3 audio as `input_audio`, PDF documents as `file`
//! parts with `file_data`. What the API cannot take is refused before the run starts
//! ([`check_part`]); a part already stored in a thread (accepted under another provider) becomes
//! a one-line note, so the thread stays usable.

use crate::protocol::message::{FILE_HANDLE_UNUSED, is_file_handle};
use crate::protocol::{Attachment, PartSource, UserPart};
use serde_json::{Value, json};

/// Why Chat Completions cannot take `part`, if it cannot.
pub(super) fn check_part(part: &UserPart) -> Result<(), String> {
    match content_part(part) {
        Some(_) => Ok(()),
        None => Err(refusal(part)),
    }
}

/// The Chat Completions content part for `part`, or a text note when there is none.
pub(super) fn user_part(part: &UserPart) -> Value {
    content_part(part).unwrap_or_else(|| {
        json!({"type": "text", "text": format!("[The user attached {} the model cannot take.]", describe(part))})
    })
}

fn content_part(part: &UserPart) -> Option<Value> {
    match part {
        UserPart::Text { text } => Some(json!({"type": "text", "text": text})),
        UserPart::Image(attachment) => {
            let url = match &attachment.source {
                PartSource::Url { value, .. } => value.clone(),
                PartSource::File { .. } => return None,
                PartSource::Data { value, .. } => {
                    let media_type = attachment.media_type()?;
                    if !matches!(
                        media_type.as_str(),
                        "image/png" | "image/jpeg" | "image/gif" | "image/webp"
                    ) {
                        return None;
                    }
                    format!("data:{media_type};base64,{value}")
                }
            };
            Some(json!({"type": "image_url", "image_url": {"url": url}}))
        }
        UserPart::Audio(attachment) => {
            let PartSource::Data { value, .. } = &attachment.source else {
                return None;
            };
            let format = match attachment.media_type()?.as_str() {
                "audio/wav" | "audio/x-wav" | "audio/wave" | "audio/vnd.wave" => "wav",
                "audio/mpeg" | "audio/mp3" => "mp3",
                _ => return None,
            };
            Some(json!({"type": "input_audio", "input_audio": {"data": value, "format": format}}))
        }
        UserPart::Document(attachment) => {
            let PartSource::Data { value, .. } = &attachment.source else {
                return None;
            };
            if attachment.media_type()? != "application/pdf" {
                return None;
            }
            Some(json!({"type": "file", "file": {
                "filename": filename(attachment),
                "file_data": format!("data:application/pdf;base64,{value}"),
            }}))
        }
        UserPart::Video(_) => None,
    }
}

fn filename(attachment: &Attachment) -> String {
    attachment
        .filename()
        .map(str::to_owned)
        .unwrap_or_else(|| "document.pdf".to_owned())
}

fn describe(part: &UserPart) -> String {
    match part.attachment().and_then(Attachment::media_type) {
        Some(media_type) => format!("{} ({media_type})", part.noun()),
        None => part.noun().to_owned(),
    }
}

fn refusal(part: &UserPart) -> String {
    if is_file_handle(part) {
        return FILE_HANDLE_UNUSED.to_owned();
    }
    let by_url = matches!(
        part.attachment().map(|attachment| &attachment.source),
        Some(PartSource::Url { .. })
    );
    match part {
        UserPart::Image(_) => format!(
            "the OpenAI-compatible model takes inline images as PNG, JPEG, GIF or WebP, not {}",
            describe(part)
        ),
        UserPart::Audio(_) if by_url => "the OpenAI-compatible model takes audio only inline (data), as WAV or MP3; this server never fetches a URL".to_owned(),
        UserPart::Audio(_) => format!(
            "the OpenAI-compatible model takes audio as WAV or MP3, not {}",
            describe(part)
        ),
        UserPart::Document(_) if by_url => "the OpenAI-compatible model takes documents only inline (data), as PDF; this server never fetches a URL".to_owned(),
        UserPart::Document(_) => format!(
            "the OpenAI-compatible model takes documents as PDF, not {}",
            describe(part)
        ),
        UserPart::Video(_) => "the OpenAI-compatible model takes no video".to_owned(),
        UserPart::Text { .. } => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::PartMetadata;

    fn data(mime_type: &str) -> Attachment {
        Attachment {
            source: PartSource::Data {
                value: "AAEC".into(),
                mime_type: mime_type.into(),
            },
            metadata: None,
        }
    }

    fn url(mime_type: Option<&str>) -> Attachment {
        Attachment {
            source: PartSource::Url {
                value: "https://example.com/a".into(),
                mime_type: mime_type.map(str::to_owned),
            },
            metadata: None,
        }
    }

    #[test]
    fn each_part_type_maps_to_its_chat_completions_part() {
        let named = Attachment {
            metadata: Some(PartMetadata {
                filename: Some("q3.pdf".into()),
            }),
            ..data("application/pdf")
        };
        for (part, expected) in [
            (
                UserPart::Text { text: "hi".into() },
                json!({"type": "text", "text": "hi"}),
            ),
            (
                UserPart::Image(url(None)),
                json!({"type": "image_url", "image_url": {"url": "https://example.com/a"}}),
            ),
            (
                UserPart::Image(data("image/PNG")),
                json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAEC"}}),
            ),
            (
                UserPart::Audio(data("audio/wav")),
                json!({"type": "input_audio", "input_audio": {"data": "AAEC", "format": "wav"}}),
            ),
            (
                UserPart::Audio(data("audio/mpeg")),
                json!({"type": "input_audio", "input_audio": {"data": "AAEC", "format": "mp3"}}),
            ),
            (
                UserPart::Document(named),
                json!({"type": "file", "file": {"filename": "q3.pdf", "file_data": "data:application/pdf;base64,AAEC"}}),
            ),
            (
                UserPart::Document(data("application/pdf")),
                json!({"type": "file", "file": {"filename": "document.pdf", "file_data": "data:application/pdf;base64,AAEC"}}),
            ),
        ] {
            assert_eq!(check_part(&part), Ok(()), "{part:?}");
            assert_eq!(user_part(&part), expected);
        }
    }

    #[test]
    fn what_the_api_cannot_take_is_refused_by_name_and_noted_if_stored() {
        for (part, says) in [
            (UserPart::Image(data("image/tiff")), "PNG, JPEG"),
            (UserPart::Audio(url(Some("audio/wav"))), "never fetches"),
            (UserPart::Audio(data("audio/ogg")), "WAV or MP3"),
            (
                UserPart::Document(url(Some("application/pdf"))),
                "never fetches",
            ),
            (UserPart::Document(data("text/csv")), "as PDF"),
            (UserPart::Video(data("video/mp4")), "no video"),
        ] {
            let refusal = check_part(&part).unwrap_err();
            assert!(refusal.contains(says), "{refusal}");
            let note = user_part(&part);
            assert_eq!(note["type"], "text");
            assert!(note["text"].as_str().unwrap().contains(part.kind()));
        }
    }
}
