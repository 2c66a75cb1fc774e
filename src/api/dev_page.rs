//! The built-in dev chat page (`GET /` and its assets under `/dev/`), on with `DEV_UI`: static
//! files compiled into the binary, served with their content type, a strict
//! Content-Security-Policy (scripts, styles and connections to this origin only; no inline
//! script or style) and an `ETag` to revalidate against. The page talks to the ordinary HTTP
//! API; nothing here knows the agent.

use super::body::ResponseBody;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

/// One file of the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Asset {
    Index,
    App,
    A2ui,
    Markdown,
    Style,
}

struct File {
    bytes: &'static [u8],
    content_type: &'static str,
    etag: u64,
}

const INDEX: &[u8] = include_bytes!("dev_page/index.html");
const APP: &[u8] = include_bytes!("dev_page/app.js");
const A2UI: &[u8] = include_bytes!("dev_page/a2ui.js");
const MARKDOWN: &[u8] = include_bytes!("dev_page/markdown.js");
const STYLE: &[u8] = include_bytes!("dev_page/style.css");

/// The policy every file of the page is served with.
pub(super) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// FNV-1a, at compile time: an `ETag` that changes with the file.
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut index = 0;
    while index < bytes.len() {
        hash ^= bytes[index] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        index += 1;
    }
    hash
}

impl Asset {
    /// The asset a path's segments name (`["dev", "app.js"]`); the page itself is `[""]`.
    pub(super) fn from_segments(segments: &[&str]) -> Option<Self> {
        match segments {
            [""] => Some(Asset::Index),
            ["dev", "app.js"] => Some(Asset::App),
            ["dev", "a2ui.js"] => Some(Asset::A2ui),
            ["dev", "markdown.js"] => Some(Asset::Markdown),
            ["dev", "style.css"] => Some(Asset::Style),
            _ => None,
        }
    }

    fn file(self) -> File {
        const INDEX_TAG: u64 = fnv1a(INDEX);
        const APP_TAG: u64 = fnv1a(APP);
        const A2UI_TAG: u64 = fnv1a(A2UI);
        const MARKDOWN_TAG: u64 = fnv1a(MARKDOWN);
        const STYLE_TAG: u64 = fnv1a(STYLE);
        match self {
            Asset::Index => File {
                bytes: INDEX,
                content_type: "text/html; charset=utf-8",
                etag: INDEX_TAG,
            },
            Asset::App => File {
                bytes: APP,
                content_type: "text/javascript; charset=utf-8",
                etag: APP_TAG,
            },
            Asset::A2ui => File {
                bytes: A2UI,
                content_type: "text/javascript; charset=utf-8",
                etag: A2UI_TAG,
            },
            Asset::Markdown => File {
                bytes: MARKDOWN,
                content_type: "text/javascript; charset=utf-8",
                etag: MARKDOWN_TAG,
            },
            Asset::Style => File {
                bytes: STYLE,
                content_type: "text/css; charset=utf-8",
                etag: STYLE_TAG,
            },
        }
    }
}

/// The asset, or `304 Not Modified` when the request's `If-None-Match` holds its `ETag`.
/// `no-cache`: the browser keeps a copy but asks each time, so a new binary's page shows at once.
pub(super) fn response(asset: Asset, request_headers: &HeaderMap) -> Response<ResponseBody> {
    let file = asset.file();
    let etag = format!("\"{:016x}\"", file.etag);
    let unchanged = request_headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == etag));
    let mut response = if unchanged {
        let mut response = Response::new(ResponseBody::full(Bytes::new()));
        *response.status_mut() = StatusCode::NOT_MODIFIED;
        response
    } else {
        Response::new(ResponseBody::full(Bytes::from_static(file.bytes)))
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(file.content_type),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_asset_has_its_type_policy_and_etag() {
        for (segments, content_type) in [
            (&[""][..], "text/html; charset=utf-8"),
            (&["dev", "app.js"][..], "text/javascript; charset=utf-8"),
            (&["dev", "a2ui.js"][..], "text/javascript; charset=utf-8"),
            (
                &["dev", "markdown.js"][..],
                "text/javascript; charset=utf-8",
            ),
            (&["dev", "style.css"][..], "text/css; charset=utf-8"),
        ] {
            let asset = Asset::from_segments(segments).unwrap();
            let response = response(asset, &HeaderMap::new());
            assert_eq!(response.status(), StatusCode::OK);
            let headers = response.headers();
            assert_eq!(headers[header::CONTENT_TYPE], content_type);
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY],
                CONTENT_SECURITY_POLICY
            );
            assert_eq!(headers[header::CACHE_CONTROL], "no-cache");
            let mut again = HeaderMap::new();
            again.insert(header::IF_NONE_MATCH, headers[header::ETAG].clone());
            assert_eq!(
                super::response(asset, &again).status(),
                StatusCode::NOT_MODIFIED
            );
        }
        assert_eq!(Asset::from_segments(&["dev", "other.js"]), None);
    }

    #[test]
    fn the_page_loads_nothing_inline_or_from_elsewhere() {
        let page = std::str::from_utf8(INDEX).unwrap();
        assert!(page.contains(r#"<script type="module" src="dev/app.js"></script>"#));
        assert!(!page.contains("<script>") && !page.contains("style="));
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(CONTENT_SECURITY_POLICY.contains("script-src 'self';"));
        assert!(!CONTENT_SECURITY_POLICY.contains("unsafe"));
    }
}
