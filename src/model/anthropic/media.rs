//! User attachments as Messages API content blocks: images (JPEG, PNG, GIF, WebP) inline as
//! base64 or by URL (the API fetches it, this server never does), PDF documents inline or by
//! URL, and plain-text documents (text, Markdown, CSV) inline as text. Audio and video are
//! refused before the run starts ([`check_part`]); a part already stored in a thread (accepted
//! under another provider) becomes a one-line note, so the thread stays usable.

use crate::protocol::message::FILE_HANDLE_UNUSED;
use crate::protocol::{Attachment, PartSource, UserPart};
use serde_json::{Value, json};

/// Why the Messages API cannot take `part`, if it cannot.
pub(super) fn check_part(part: &UserPart) -> Result<(), String> {
    media_block(part).map(|_| ())
}

/// The block for a part, or a text note when the API cannot take it.
pub(super) fn part_block(part: &UserPart) -> Value {
    media_block(part).unwrap_or_else(|reason| {
        json!({"type": "text", "text": format!("[The user attached {} the model cannot see: {reason}.]", part.noun())})
    })
}

const IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];
const TEXT_TYPES: [&str; 4] = ["text/plain", "text/markdown", "text/x-markdown", "text/csv"];

fn media_block(part: &UserPart) -> Result<Value, String> {
    match part {
        UserPart::Text { text } => Ok(json!({"type": "text", "text": text})),
        UserPart::Image(attachment) => image_block(attachment),
        UserPart::Document(attachment) => document_block(attachment),
        UserPart::Audio(_) => Err("the Anthropic Messages API takes no audio".to_owned()),
        UserPart::Video(_) => Err("the Anthropic Messages API takes no video".to_owned()),
    }
}

fn image_block(attachment: &Attachment) -> Result<Value, String> {
    let media_type = attachment
        .media_type()
        .map(|media_type| match media_type.as_str() {
            "image/jpg" => "image/jpeg".to_owned(),
            _ => media_type,
        });
    if let Some(media_type) = &media_type
        && !IMAGE_TYPES.contains(&media_type.as_str())
    {
        return Err(format!(
            "the Anthropic Messages API takes JPEG, PNG, GIF or WebP images, not {media_type}"
        ));
    }
    let source = match (&attachment.source, media_type) {
        (PartSource::Url { value, .. }, _) => json!({"type": "url", "url": value}),
        (PartSource::Data { value, .. }, Some(media_type)) => {
            json!({"type": "base64", "media_type": media_type, "data": value})
        }
        (PartSource::Data { .. }, None) => return Err("the image has no media type".to_owned()),
        (PartSource::File { .. }, _) => return Err(FILE_HANDLE_UNUSED.to_owned()),
    };
    Ok(json!({"type": "image", "source": source}))
}

fn document_block(attachment: &Attachment) -> Result<Value, String> {
    let media_type = attachment.media_type();
    let source = match (&attachment.source, media_type.as_deref()) {
        (PartSource::Data { value, .. }, Some("application/pdf")) => {
            json!({"type": "base64", "media_type": "application/pdf", "data": value})
        }
        (PartSource::Data { .. }, Some(text)) if TEXT_TYPES.contains(&text) => {
            let text = attachment
                .bytes()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| "the text document is not UTF-8".to_owned())?;
            json!({"type": "text", "media_type": "text/plain", "data": text})
        }
        (PartSource::Url { value, .. }, Some("application/pdf")) => {
            json!({"type": "url", "url": value})
        }
        (PartSource::Url { value, .. }, None) if has_pdf_path(value) => {
            json!({"type": "url", "url": value})
        }
        (PartSource::File { .. }, _) => return Err(FILE_HANDLE_UNUSED.to_owned()),
        (PartSource::Url { .. }, _) => {
            return Err(
                "the Anthropic Messages API reads only PDF documents by URL; send others inline"
                    .to_owned(),
            );
        }
        (PartSource::Data { .. }, other) => {
            return Err(format!(
                "the Anthropic Messages API takes documents as PDF or plain text, not {}",
                other.unwrap_or("a file of unknown type")
            ));
        }
    };
    let mut block = json!({"type": "document", "source": source});
    if let Some(title) = attachment.filename().filter(|name| !name.trim().is_empty()) {
        block["title"] = json!(title);
    }
    Ok(block)
}

/// Whether a URL's path (its query, a presigned URL's signature, aside) names a PDF.
fn has_pdf_path(url: &str) -> bool {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    path.to_ascii_lowercase().ends_with(".pdf")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::message::PartMetadata;

    fn data(mime_type: &str, value: &str) -> Attachment {
        Attachment {
            source: PartSource::Data {
                value: value.into(),
                mime_type: mime_type.into(),
            },
            metadata: None,
        }
    }

    fn url(value: &str, mime_type: Option<&str>) -> Attachment {
        Attachment {
            source: PartSource::Url {
                value: value.into(),
                mime_type: mime_type.map(str::to_owned),
            },
            metadata: None,
        }
    }

    #[test]
    fn images_go_inline_or_by_url() {
        assert_eq!(
            part_block(&UserPart::Image(data("image/PNG", "AAEC"))),
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAEC"}})
        );
        assert_eq!(
            part_block(&UserPart::Image(data("image/jpg", "AAEC")))["source"]["media_type"],
            "image/jpeg"
        );
        assert_eq!(
            part_block(&UserPart::Image(url("https://example.com/cat", None))),
            json!({"type": "image", "source": {"type": "url", "url": "https://example.com/cat"}})
        );
    }

    #[test]
    fn pdf_and_text_documents_are_document_blocks_with_their_title() {
        let named = Attachment {
            metadata: Some(PartMetadata {
                filename: Some("q3.pdf".into()),
            }),
            ..data("application/pdf", "JVBERi0=")
        };
        assert_eq!(
            part_block(&UserPart::Document(named)),
            json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}, "title": "q3.pdf"})
        );
        // "héllo" as base64.
        assert_eq!(
            part_block(&UserPart::Document(data("text/markdown", "aMOpbGxv"))),
            json!({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "héllo"}})
        );
        for document in [
            url("https://example.com/a.pdf?X-Amz-Signature=1", None),
            url("https://example.com/report", Some("application/pdf")),
        ] {
            let block = part_block(&UserPart::Document(document));
            assert_eq!(block["source"]["type"], "url", "{block}");
        }
    }

    #[test]
    fn what_the_api_cannot_take_is_refused_by_name_and_noted_if_stored() {
        for (part, says) in [
            (UserPart::Image(data("image/tiff", "AAEC")), "JPEG, PNG"),
            (
                UserPart::Image(url("https://e.com/a.bmp", Some("image/bmp"))),
                "JPEG, PNG",
            ),
            (
                UserPart::Document(data("application/zip", "AAEC")),
                "PDF or plain text",
            ),
            (UserPart::Document(data("text/plain", "/w==")), "not UTF-8"),
            (
                UserPart::Document(url("https://e.com/a.docx", None)),
                "only PDF",
            ),
            (UserPart::Audio(data("audio/wav", "AAEC")), "no audio"),
            (UserPart::Video(data("video/mp4", "AAEC")), "no video"),
        ] {
            let refusal = check_part(&part).unwrap_err();
            assert!(refusal.contains(says), "{refusal}");
            let note = part_block(&part);
            assert_eq!(note["type"], "text");
            assert!(note["text"].as_str().unwrap().contains(says), "{note}");
        }
    }
}
