//! Reading a request: its content type, and its query string's pairs and page size.

use super::error::ApiError;
use http::header;

/// JSON bodies arrive as `application/json` (HttpAgent), without a type, or as `text/plain`
/// (browser `fetch` with a string body). Form and multipart bodies are a client mistake.
pub(super) fn check_content_type(headers: &http::HeaderMap) -> Result<(), ApiError> {
    let Some(value) = headers.get(header::CONTENT_TYPE) else {
        return Ok(());
    };
    let essence = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let accepted = essence.is_empty()
        || essence == "application/json"
        || essence.ends_with("+json")
        || essence == "text/plain";
    if accepted {
        Ok(())
    } else {
        Err(ApiError::UnsupportedMediaType)
    }
}

/// A query string's pairs, percent-decoded.
pub(super) fn query_pairs(
    query: Option<&str>,
) -> impl Iterator<Item = (std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
}

/// A page size from a `limit` query parameter: 1 to `max`.
pub(super) fn page_limit(value: &str, max: usize) -> Result<usize, ApiError> {
    value
        .parse::<usize>()
        .ok()
        .filter(|limit| (1..=max).contains(limit))
        .ok_or_else(|| ApiError::BadQuery(format!("limit must be 1 to {max}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn content_types() {
        let mut headers = http::HeaderMap::new();
        assert!(check_content_type(&headers).is_ok());
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "text/plain;charset=UTF-8",
        ] {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ok));
            assert!(check_content_type(&headers).is_ok(), "{ok}");
        }
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        assert!(matches!(
            check_content_type(&headers),
            Err(ApiError::UnsupportedMediaType)
        ));
    }
}
