//! User attachments as Converse content blocks. Bedrock takes bytes or an S3 location, never a
//! web URL, and this function never fetches one (no SSRF, no unbounded downloads): inline data
//! goes as bytes, an `https` URL of an S3 object or an `s3://` URI (a stored upload,
//! `store::blobs`) as an S3 location (Bedrock reads it with the function role's permissions, on
//! models that support S3 sources). Images (PNG, JPEG, GIF, WebP), documents (PDF, CSV, DOC,
//! DOCX, XLS, XLSX, HTML, TXT, Markdown) and videos are mapped; audio is not. A part that cannot
//! go is refused before the run starts ([`check_part`]); one already stored in a thread (accepted
//! under another provider) becomes a one-line note, so the thread stays usable.

use crate::protocol::message::FILE_HANDLE_UNUSED;
use crate::protocol::{Attachment, PartSource, UserPart};
use aws_sdk_bedrockruntime::types::{
    ContentBlock, DocumentBlock, DocumentFormat, DocumentSource, ImageBlock, ImageFormat,
    ImageSource, S3Location, VideoBlock, VideoFormat, VideoSource,
};
use aws_smithy_types::Blob;
use std::collections::HashSet;

/// Why Bedrock cannot take `part`, if it cannot.
pub(super) fn check_part(part: &UserPart) -> Result<(), String> {
    media_block(part, &mut HashSet::new()).map(|_| ())
}

/// The block for a media part, or a text note when Bedrock cannot take it. `names` holds the
/// document names used so far in the request: Bedrock wants them distinct.
pub(super) fn part_block(part: &UserPart, names: &mut HashSet<String>) -> ContentBlock {
    media_block(part, names).unwrap_or_else(|reason| {
        let what = match part.attachment().map(|attachment| &attachment.source) {
            Some(PartSource::Url { value, .. }) => format!(" ({value})"),
            _ => String::new(),
        };
        ContentBlock::Text(format!(
            "[The user attached {}{what} the model cannot see: {reason}.]",
            part.noun()
        ))
    })
}

/// Where Bedrock reads an attachment from.
enum Location {
    Bytes(Blob),
    S3(S3Location),
}

const NEVER_FETCHED: &str = "Bedrock takes attachments inline (data) or from Amazon S3 (s3://BUCKET/KEY or https://BUCKET.s3.REGION.amazonaws.com/KEY), and this server never fetches a URL";

fn locate(attachment: &Attachment) -> Result<Location, String> {
    match &attachment.source {
        PartSource::Data { .. } => attachment
            .bytes()
            .map(|bytes| Location::Bytes(Blob::new(bytes)))
            .ok_or_else(|| "its data is not base64".to_owned()),
        PartSource::Url { value, .. } => s3_uri_for(value)
            .and_then(|uri| S3Location::builder().uri(uri).build().ok())
            .map(Location::S3)
            .ok_or_else(|| NEVER_FETCHED.to_owned()),
        PartSource::File { .. } => Err(FILE_HANDLE_UNUSED.to_owned()),
    }
}

fn media_block(part: &UserPart, names: &mut HashSet<String>) -> Result<ContentBlock, String> {
    match part {
        UserPart::Text { text } => Ok(ContentBlock::Text(text.clone())),
        UserPart::Image(attachment) => {
            let format = image_format(attachment).ok_or_else(|| {
                format!(
                    "Bedrock takes PNG, JPEG, GIF or WebP images, not {}",
                    described(attachment)
                )
            })?;
            let source = match locate(attachment)? {
                Location::Bytes(bytes) => ImageSource::Bytes(bytes),
                Location::S3(location) => ImageSource::S3Location(location),
            };
            let block = ImageBlock::builder().format(format).source(source).build();
            Ok(ContentBlock::Image(built(block)?))
        }
        UserPart::Document(attachment) => {
            let format = document_format(attachment).ok_or_else(|| {
                format!(
                    "Bedrock takes documents as PDF, CSV, DOC, DOCX, XLS, XLSX, HTML, TXT or Markdown, not {}",
                    described(attachment)
                )
            })?;
            let source = match locate(attachment)? {
                Location::Bytes(bytes) => DocumentSource::Bytes(bytes),
                Location::S3(location) => DocumentSource::S3Location(location),
            };
            let block = DocumentBlock::builder()
                .format(format)
                .name(document_name(attachment.filename(), names))
                .source(source)
                .build();
            Ok(ContentBlock::Document(built(block)?))
        }
        UserPart::Video(attachment) => {
            let format = video_format(attachment).ok_or_else(|| {
                format!(
                    "Bedrock takes MP4, MOV, MKV, WebM, FLV, MPEG, WMV or 3GP videos, not {}",
                    described(attachment)
                )
            })?;
            let source = match locate(attachment)? {
                Location::Bytes(bytes) => VideoSource::Bytes(bytes),
                Location::S3(location) => VideoSource::S3Location(location),
            };
            let block = VideoBlock::builder().format(format).source(source).build();
            Ok(ContentBlock::Video(built(block)?))
        }
        UserPart::Audio(_) => Err("this server sends no audio to Bedrock".to_owned()),
    }
}

fn built<T>(result: Result<T, aws_sdk_bedrockruntime::error::BuildError>) -> Result<T, String> {
    result.map_err(|error| format!("the block could not be built ({error})"))
}

fn described(attachment: &Attachment) -> String {
    attachment
        .media_type()
        .unwrap_or_else(|| "a file of unknown type".to_owned())
}

/// The lowercased extension of a URL's path, for URLs given without a media type.
fn url_extension(attachment: &Attachment) -> Option<String> {
    let PartSource::Url { value, .. } = &attachment.source else {
        return None;
    };
    let path = value.split(['?', '#']).next().unwrap_or(value);
    let file = path.rsplit('/').next()?;
    Some(file.rsplit_once('.')?.1.to_ascii_lowercase())
}

fn image_format(attachment: &Attachment) -> Option<ImageFormat> {
    if let Some(media_type) = attachment.media_type() {
        return match media_type.as_str() {
            "image/png" => Some(ImageFormat::Png),
            "image/jpeg" | "image/jpg" => Some(ImageFormat::Jpeg),
            "image/gif" => Some(ImageFormat::Gif),
            "image/webp" => Some(ImageFormat::Webp),
            _ => None,
        };
    }
    match url_extension(attachment)?.as_str() {
        "png" => Some(ImageFormat::Png),
        "jpg" | "jpeg" => Some(ImageFormat::Jpeg),
        "gif" => Some(ImageFormat::Gif),
        "webp" => Some(ImageFormat::Webp),
        _ => None,
    }
}

fn document_format(attachment: &Attachment) -> Option<DocumentFormat> {
    if let Some(media_type) = attachment.media_type() {
        return match media_type.as_str() {
            "application/pdf" => Some(DocumentFormat::Pdf),
            "text/csv" => Some(DocumentFormat::Csv),
            "application/msword" => Some(DocumentFormat::Doc),
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document" => {
                Some(DocumentFormat::Docx)
            }
            "application/vnd.ms-excel" => Some(DocumentFormat::Xls),
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" => {
                Some(DocumentFormat::Xlsx)
            }
            "text/html" => Some(DocumentFormat::Html),
            "text/plain" => Some(DocumentFormat::Txt),
            "text/markdown" | "text/x-markdown" => Some(DocumentFormat::Md),
            _ => None,
        };
    }
    match url_extension(attachment)?.as_str() {
        "pdf" => Some(DocumentFormat::Pdf),
        "csv" => Some(DocumentFormat::Csv),
        "doc" => Some(DocumentFormat::Doc),
        "docx" => Some(DocumentFormat::Docx),
        "xls" => Some(DocumentFormat::Xls),
        "xlsx" => Some(DocumentFormat::Xlsx),
        "html" | "htm" => Some(DocumentFormat::Html),
        "txt" => Some(DocumentFormat::Txt),
        "md" => Some(DocumentFormat::Md),
        _ => None,
    }
}

fn video_format(attachment: &Attachment) -> Option<VideoFormat> {
    if let Some(media_type) = attachment.media_type() {
        return match media_type.as_str() {
            "video/mp4" => Some(VideoFormat::Mp4),
            "video/quicktime" => Some(VideoFormat::Mov),
            "video/x-matroska" => Some(VideoFormat::Mkv),
            "video/webm" => Some(VideoFormat::Webm),
            "video/x-flv" => Some(VideoFormat::Flv),
            "video/mpeg" => Some(VideoFormat::Mpeg),
            "video/x-ms-wmv" => Some(VideoFormat::Wmv),
            "video/3gpp" => Some(VideoFormat::ThreeGp),
            _ => None,
        };
    }
    match url_extension(attachment)?.as_str() {
        "mp4" => Some(VideoFormat::Mp4),
        "mov" => Some(VideoFormat::Mov),
        "mkv" => Some(VideoFormat::Mkv),
        "webm" => Some(VideoFormat::Webm),
        "flv" => Some(VideoFormat::Flv),
        "mpeg" | "mpg" => Some(VideoFormat::Mpeg),
        "wmv" => Some(VideoFormat::Wmv),
        "3gp" => Some(VideoFormat::ThreeGp),
        _ => None,
    }
}

/// The longest document name sent.
const MAX_NAME_CHARS: usize = 100;

/// A document name as Bedrock accepts it (letters, digits, single spaces, hyphens, parentheses
/// and square brackets; the name is shown to the model, so the file's stem is kept), distinct
/// within the request.
fn document_name(filename: Option<&str>, used: &mut HashSet<String>) -> String {
    let stem = filename
        .map(|name| name.rsplit_once('.').map_or(name, |(stem, _)| stem))
        .unwrap_or_default();
    let mut name = String::new();
    for c in stem.chars() {
        let c = if c.is_alphanumeric() || "-()[]".contains(c) {
            c
        } else if c.is_whitespace() {
            ' '
        } else {
            '-'
        };
        if !(c == ' ' && (name.is_empty() || name.ends_with(' '))) {
            name.push(c);
        }
        if name.chars().count() >= MAX_NAME_CHARS {
            break;
        }
    }
    let base = match name.trim_end() {
        "" => "document".to_owned(),
        trimmed => trimmed.to_owned(),
    };
    let mut candidate = base.clone();
    let mut n = 2;
    while !used.insert(candidate.clone()) {
        candidate = format!("{base} ({n})");
        n += 1;
    }
    candidate
}

/// `s3://bucket/key` for an `https` URL of an S3 object, virtual-hosted
/// (`https://bucket.s3.region.amazonaws.com/key`) or path-style
/// (`https://s3.region.amazonaws.com/bucket/key`), or for an `s3://bucket/key` URI itself (what a
/// thread stores for an uploaded attachment, `store::blobs`); `None` for any other URL. A query
/// (a presigned URL's signature) is dropped: Bedrock reads the object with the caller's
/// permissions.
pub(crate) fn s3_uri_for(url: &str) -> Option<String> {
    if let Some(rest) = url.strip_prefix("s3://") {
        let (bucket, key) = rest.split_once('/')?;
        return (is_bucket_name(bucket) && !key.is_empty()).then(|| url.to_owned());
    }
    let rest = url.strip_prefix("https://")?;
    let rest = rest.split(['?', '#']).next()?;
    let (host, path) = rest.split_once('/')?;
    let host = host.to_ascii_lowercase();
    let host = host.strip_suffix(".amazonaws.com")?;
    let is_s3_endpoint = |name: &str| {
        name == "s3"
            || name
                .strip_prefix("s3.")
                .is_some_and(|region| !region.is_empty() && !region.contains('.'))
            || name
                .strip_prefix("s3-")
                .is_some_and(|region| !region.is_empty() && !region.contains('.'))
    };
    let (bucket, key) = if is_s3_endpoint(host) {
        let (bucket, key) = path.split_once('/')?;
        (bucket.to_owned(), key)
    } else {
        let (bucket, endpoint) = host.split_once('.')?;
        if !is_s3_endpoint(endpoint) {
            return None;
        }
        (bucket.to_owned(), path)
    };
    let key = percent_decode(key)?;
    (is_bucket_name(&bucket) && !key.is_empty()).then(|| format!("s3://{bucket}/{key}"))
}

fn is_bucket_name(bucket: &str) -> bool {
    !bucket.is_empty()
        && bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
}

/// A percent-encoded path segment, decoded; `None` when it is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(std::borrow::Cow::into_owned)
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

    fn url(value: &str) -> Attachment {
        Attachment {
            source: PartSource::Url {
                value: value.into(),
                mime_type: None,
            },
            metadata: None,
        }
    }

    const S3: &str = "https://bucket.s3.us-east-1.amazonaws.com/uploads/";

    #[test]
    fn inline_images_documents_and_videos_go_as_bytes() {
        let mut names = HashSet::new();
        let ContentBlock::Image(image) =
            part_block(&UserPart::Image(data("image/jpeg")), &mut names)
        else {
            panic!("an image block")
        };
        assert_eq!(image.format(), &ImageFormat::Jpeg);
        assert_eq!(
            image.source(),
            Some(&ImageSource::Bytes(Blob::new(vec![0, 1, 2])))
        );
        let named = Attachment {
            metadata: Some(PartMetadata {
                filename: Some("Q3 report.final.pdf".into()),
            }),
            ..data("application/pdf")
        };
        let ContentBlock::Document(document) = part_block(&UserPart::Document(named), &mut names)
        else {
            panic!("a document block")
        };
        assert_eq!(document.format(), &DocumentFormat::Pdf);
        assert_eq!(document.name(), "Q3 report-final");
        assert_eq!(
            document.source(),
            Some(&DocumentSource::Bytes(Blob::new(vec![0, 1, 2])))
        );
        let ContentBlock::Video(video) =
            part_block(&UserPart::Video(data("video/mp4")), &mut names)
        else {
            panic!("a video block")
        };
        assert_eq!(video.format(), &VideoFormat::Mp4);
        for mime in [
            "text/csv",
            "application/msword",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/vnd.ms-excel",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "text/html",
            "text/plain; charset=utf-8",
            "text/markdown",
        ] {
            assert_eq!(
                check_part(&UserPart::Document(data(mime))),
                Ok(()),
                "{mime}"
            );
        }
    }

    #[test]
    fn s3_urls_are_s3_locations_by_extension() {
        let mut names = HashSet::new();
        let ContentBlock::Document(document) = part_block(
            &UserPart::Document(url(&format!("{S3}notes.md"))),
            &mut names,
        ) else {
            panic!("a document block")
        };
        assert_eq!(document.format(), &DocumentFormat::Md);
        assert_eq!(document.name(), "document");
        let Some(DocumentSource::S3Location(location)) = document.source() else {
            panic!("an S3 location")
        };
        assert_eq!(location.uri(), "s3://bucket/uploads/notes.md");
        assert!(check_part(&UserPart::Video(url(&format!("{S3}clip.webm")))).is_ok());
    }

    #[test]
    fn what_bedrock_cannot_take_is_refused_and_noted_if_stored() {
        for (part, says) in [
            (
                UserPart::Image(url("https://example.com/cat.png")),
                "never fetches",
            ),
            (
                UserPart::Document(url("https://example.com/a.pdf")),
                "never fetches",
            ),
            (UserPart::Image(data("image/tiff")), "PNG, JPEG"),
            (UserPart::Document(data("application/zip")), "PDF, CSV"),
            (UserPart::Video(data("video/avi")), "MP4"),
            (UserPart::Audio(data("audio/wav")), "no audio"),
        ] {
            let refusal = check_part(&part).unwrap_err();
            assert!(refusal.contains(says), "{refusal}");
            let ContentBlock::Text(note) = part_block(&part, &mut HashSet::new()) else {
                panic!("a note")
            };
            assert!(note.contains(part.kind()) && note.contains(says), "{note}");
        }
    }

    #[test]
    fn document_names_are_what_bedrock_accepts_and_distinct() {
        let mut used = HashSet::new();
        assert_eq!(document_name(Some("a  b_c?.pdf"), &mut used), "a b-c-");
        assert_eq!(document_name(None, &mut used), "document");
        assert_eq!(document_name(Some(".pdf"), &mut used), "document (2)");
        assert_eq!(document_name(Some("a  b_c?.txt"), &mut used), "a b-c- (2)");
        assert_eq!(
            document_name(Some(&"x".repeat(300)), &mut used).len(),
            MAX_NAME_CHARS
        );
    }
}
