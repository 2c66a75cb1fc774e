//! Agent cards as a client reads them: fetched once and kept per warm instance as their cache
//! headers allow (`max-age`, `no-store`, `no-cache`; revalidated by `ETag`), and the first
//! interface this client speaks chosen from them: JSON-RPC or HTTP+JSON at protocol 1.x (a card
//! may list gRPC, or an older version, first).

use super::ClientError;
use crate::a2a::types::{AgentCard, BINDING_HTTP_JSON, BINDING_JSONRPC};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a card without cache headers is kept.
const DEFAULT_TTL: Duration = Duration::from_secs(300);
/// The longest a card is kept, whatever it says.
const MAX_TTL: Duration = Duration::from_secs(86_400);
/// The largest card read.
const MAX_CARD_BYTES: usize = 256 * 1024;

/// Where and how to call an agent: the interface chosen from its card.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub url: String,
    pub binding: Binding,
    /// Sent in every request when the interface names one.
    pub tenant: String,
}

/// The bindings this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    JsonRpc,
    HttpJson,
}

/// The first interface of `card` this client can use.
pub(crate) fn choose_interface(card: &AgentCard) -> Result<Endpoint, ClientError> {
    card.supported_interfaces
        .iter()
        .find_map(|interface| {
            let binding = match interface.protocol_binding.to_ascii_uppercase().as_str() {
                b if b == BINDING_JSONRPC => Binding::JsonRpc,
                b if b == BINDING_HTTP_JSON => Binding::HttpJson,
                _ => return None,
            };
            (interface.protocol_version.trim().split('.').next() == Some("1")
                && (interface.url.starts_with("https://") || interface.url.starts_with("http://")))
            .then(|| Endpoint {
                // HTTP+JSON appends its paths; a JSON-RPC URL is used exactly as given.
                url: match binding {
                    Binding::HttpJson => interface.url.trim_end_matches('/').to_owned(),
                    Binding::JsonRpc => interface.url.clone(),
                },
                binding,
                tenant: interface.tenant.clone(),
            })
        })
        .ok_or_else(|| {
            ClientError::card(format!(
                "the card of {} lists no JSON-RPC or HTTP+JSON interface at protocol version 1.x (this client does not speak gRPC or A2A 0.3)",
                card.name
            ))
        })
}

struct Cached {
    card: AgentCard,
    etag: Option<String>,
    /// Until when the card is used without asking; `None`: revalidate every time.
    fresh_until: Option<Instant>,
}

/// The cards read so far, by URL; one per warm instance.
#[derive(Default)]
pub(crate) struct CardCache {
    cards: Mutex<HashMap<String, Cached>>,
}

/// What `Cache-Control` allows: `None` to not store, else how long the card stays fresh.
fn freshness(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let control = headers
        .get_all(reqwest::header::CACHE_CONTROL)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|directive| directive.trim().to_ascii_lowercase())
        .collect::<Vec<_>>();
    if control.iter().any(|d| d == "no-store") {
        return None;
    }
    if control.iter().any(|d| d == "no-cache") {
        return Some(Duration::ZERO);
    }
    let max_age = control.iter().find_map(|d| {
        d.strip_prefix("max-age=")
            .and_then(|secs| secs.trim_matches('"').parse::<u64>().ok())
    });
    Some(max_age.map_or(DEFAULT_TTL, |secs| Duration::from_secs(secs).min(MAX_TTL)))
}

impl CardCache {
    /// The card at `url`: the kept one while fresh, else fetched (with `If-None-Match` when
    /// one is kept; a `304` keeps it).
    pub(crate) async fn card(
        &self,
        http: &reqwest::Client,
        url: &str,
        auth: &[(String, String)],
    ) -> Result<AgentCard, ClientError> {
        let etag = {
            let cards = self.lock();
            match cards.get(url) {
                Some(cached)
                    if cached
                        .fresh_until
                        .is_some_and(|until| Instant::now() < until) =>
                {
                    return Ok(cached.card.clone());
                }
                Some(cached) => cached.etag.clone(),
                None => None,
            }
        };
        let mut request = http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json");
        for (name, value) in auth {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(etag) = &etag {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag.as_str());
        }
        let response = request
            .send()
            .await
            .map_err(|error| ClientError::card(format!("fetching the card {url}: {error}")))?;
        let fresh = freshness(response.headers());
        let fresh_until = |fresh: Option<Duration>| fresh.map(|ttl| Instant::now() + ttl);
        if response.status() == reqwest::StatusCode::NOT_MODIFIED {
            let mut cards = self.lock();
            if let Some(cached) = cards.get_mut(url) {
                cached.fresh_until = fresh_until(fresh);
                return Ok(cached.card.clone());
            }
            return Err(ClientError::card(format!(
                "{url} answered 304 to a card never read"
            )));
        }
        if !response.status().is_success() {
            return Err(ClientError::card(format!(
                "the card {url} answered HTTP {}",
                response.status().as_u16()
            )));
        }
        let new_etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let bytes = response
            .bytes()
            .await
            .map_err(|error| ClientError::card(format!("reading the card {url}: {error}")))?;
        if bytes.len() > MAX_CARD_BYTES {
            return Err(ClientError::card(format!(
                "the card {url} is larger than 256 KB"
            )));
        }
        let card: AgentCard = serde_json::from_slice(&bytes).map_err(|error| {
            ClientError::card(format!("the card {url} does not parse: {error}"))
        })?;
        let mut cards = self.lock();
        match fresh {
            Some(_) => {
                cards.insert(
                    url.to_owned(),
                    Cached {
                        card: card.clone(),
                        etag: new_etag,
                        fresh_until: fresh_until(fresh),
                    },
                );
            }
            None => {
                cards.remove(url);
            }
        }
        Ok(card)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.cards
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::AgentInterface;

    fn interface(binding: &str, version: &str, url: &str) -> AgentInterface {
        AgentInterface {
            url: url.into(),
            protocol_binding: binding.into(),
            tenant: String::new(),
            protocol_version: version.into(),
        }
    }

    #[test]
    fn the_first_interface_this_client_speaks_wins() {
        let card = AgentCard {
            supported_interfaces: vec![
                interface("GRPC", "1.0", "grpc.example.com:443"),
                interface("JSONRPC", "0.3", "https://a.example/v03"),
                interface("HTTP+JSON", "1.0", "https://a.example/rest/"),
                interface("JSONRPC", "1.0", "https://a.example/rpc"),
            ],
            ..AgentCard::default()
        };
        let chosen = choose_interface(&card).unwrap();
        assert_eq!(chosen.binding, Binding::HttpJson);
        assert_eq!(chosen.url, "https://a.example/rest");
        let grpc_only = AgentCard {
            supported_interfaces: vec![interface("GRPC", "1.0", "grpc:443")],
            ..AgentCard::default()
        };
        assert!(choose_interface(&grpc_only).is_err());
    }

    #[test]
    fn cache_headers_decide_how_long_a_card_is_kept() {
        let headers = |value: &str| {
            let mut map = reqwest::header::HeaderMap::new();
            map.insert(reqwest::header::CACHE_CONTROL, value.parse().unwrap());
            map
        };
        assert_eq!(
            freshness(&headers("public, max-age=60")),
            Some(Duration::from_secs(60))
        );
        assert_eq!(freshness(&headers("no-store")), None);
        assert_eq!(freshness(&headers("no-cache")), Some(Duration::ZERO));
        assert_eq!(
            freshness(&reqwest::header::HeaderMap::new()),
            Some(DEFAULT_TTL)
        );
    }
}
