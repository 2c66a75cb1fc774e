//! A2A 1.0 served: the agent card (public, cached by its ETag), and the JSON-RPC (`POST /a2a`)
//! and HTTP+JSON (`/a2a/message:send`, `/a2a/tasks/{id}`, …) bindings over one set of
//! operations. Every operation needs `A2A-Version: 1.0`, is owner-only, and is refused through
//! the app's one door in its binding's shape.

mod bindings;
mod card;
mod keeper;
mod ops;
mod stream;

use super::error::ApiError;
pub(crate) use super::error::{A2aRefusal, Binding};
use crate::a2a::errors::{A2aError, ErrorKind};
use serde_json::{Value, json};

/// The path every A2A binding lives under; the JSON-RPC endpoint itself.
pub(super) const BASE_PATH: &str = "/a2a";

/// An HTTP+JSON operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum RestOp {
    Send,
    Stream,
    List,
    Get(String),
    Cancel(String),
    Subscribe(String),
}

/// An A2A route: the card, or a binding's call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum A2aRoute {
    /// `GET /.well-known/agent-card.json`, or a profile's `GET /a2a/{tenant}/.well-known/agent-card.json`.
    Card(Option<String>),
    /// `POST /a2a`.
    JsonRpc,
    /// `/a2a[/{tenant}]/…`.
    Rest { tenant: Option<String>, op: RestOp },
}

impl A2aRoute {
    pub(super) fn binding(&self) -> Option<Binding> {
        match self {
            A2aRoute::Card(_) => None,
            A2aRoute::JsonRpc => Some(Binding::JsonRpc),
            A2aRoute::Rest { .. } => Some(Binding::Rest),
        }
    }

    /// Whether the call may start a run (refused while the server stops).
    pub(super) fn may_start_a_run(&self) -> bool {
        matches!(
            self,
            A2aRoute::JsonRpc
                | A2aRoute::Rest {
                    op: RestOp::Send | RestOp::Stream,
                    ..
                }
        )
    }
}

/// The routes under `/.well-known` and `/a2a`, by method: what [`super::routes::Route::parse`]
/// offers for `segments`, or `None` when the path is not A2A's.
pub(super) fn routes(segments: &[&str]) -> Option<Vec<(http::Method, A2aRoute)>> {
    use http::Method;
    let card = |tenant: Option<String>| vec![(Method::GET, A2aRoute::Card(tenant))];
    match segments {
        [".well-known", "agent-card.json"] => Some(card(None)),
        ["a2a"] => Some(vec![(Method::POST, A2aRoute::JsonRpc)]),
        ["a2a", rest @ ..] => {
            let (tenant, rest) = match rest {
                [first, tail @ ..]
                    if !matches!(
                        *first,
                        "message:send" | "message:stream" | "tasks" | ".well-known"
                    ) =>
                {
                    (Some((*first).to_owned()), tail)
                }
                _ => (None, rest),
            };
            let rest_route = |op: RestOp| A2aRoute::Rest {
                tenant: tenant.clone(),
                op,
            };
            let routes = match rest {
                [".well-known", "agent-card.json"] if tenant.is_some() => card(tenant.clone()),
                ["message:send"] => vec![(Method::POST, rest_route(RestOp::Send))],
                ["message:stream"] => vec![(Method::POST, rest_route(RestOp::Stream))],
                ["tasks"] => vec![(Method::GET, rest_route(RestOp::List))],
                ["tasks", id] => match id.rsplit_once(':') {
                    Some((id, "cancel")) => {
                        vec![(Method::POST, rest_route(RestOp::Cancel(id.to_owned())))]
                    }
                    // The proto says GET, the spec's text POST (A2A issue 1574): both.
                    Some((id, "subscribe")) => vec![
                        (Method::GET, rest_route(RestOp::Subscribe(id.to_owned()))),
                        (Method::POST, rest_route(RestOp::Subscribe(id.to_owned()))),
                    ],
                    _ => vec![(Method::GET, rest_route(RestOp::Get((*id).to_owned())))],
                },
                _ => Vec::new(),
            };
            Some(routes)
        }
        _ => None,
    }
}

/// A refusal made before the operation (no credentials, no route, a body too large, a store
/// down) in the binding's shape, with the door's own status: a JSON-RPC error object, or a
/// `google.rpc.Status`.
pub(super) fn refusal_body(error: &ApiError, binding: Binding) -> Value {
    if let ApiError::A2a(refusal) = error {
        return refusal.body();
    }
    let kind = match error.status().as_u16() {
        404 | 405 => ErrorKind::MethodNotFound,
        500.. => ErrorKind::Internal,
        _ => ErrorKind::InvalidRequest,
    };
    let shown = if error.status().is_server_error() {
        "something went wrong".to_owned()
    } else {
        error.to_string()
    };
    let a2a = A2aError::new(kind, shown);
    match binding {
        Binding::JsonRpc => a2a.jsonrpc_body(&Value::Null),
        Binding::Rest => {
            let mut body = a2a.rest_body();
            body["error"]["code"] = json!(error.status().as_u16());
            body["error"]["details"][0]["metadata"] = json!({"code": error.code()});
            body
        }
    }
}

/// `A2A-Version` as the request sent it (the header, or the query parameter the spec allows):
/// 1.x is spoken; none means 0.3, which is not.
pub(super) fn check_version(request: &http::Request<bytes::Bytes>) -> Result<(), A2aError> {
    let header = request
        .headers()
        .get(crate::a2a::types::VERSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let sent = header.or_else(|| {
        super::request::query_pairs(request.uri().query())
            .find(|(key, _)| key.eq_ignore_ascii_case(crate::a2a::types::VERSION_HEADER))
            .map(|(_, value)| value.into_owned())
    });
    match sent.as_deref().map(str::trim) {
        Some(version) if version.split('.').next() == Some("1") => Ok(()),
        Some("") | None => Err(A2aError::version_not_supported(None)),
        Some(other) => Err(A2aError::version_not_supported(Some(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn route(method: Method, path: &str) -> Option<A2aRoute> {
        let segments: Vec<&str> = path.split('/').skip(1).collect();
        routes(&segments)?
            .into_iter()
            .find(|(allowed, _)| *allowed == method)
            .map(|(_, route)| route)
    }

    #[test]
    fn rest_paths_take_an_optional_tenant_and_subscribe_by_get_or_post() {
        assert_eq!(
            route(Method::GET, "/.well-known/agent-card.json"),
            Some(A2aRoute::Card(None))
        );
        assert_eq!(route(Method::POST, "/a2a"), Some(A2aRoute::JsonRpc));
        assert_eq!(
            route(Method::POST, "/a2a/research/message:send"),
            Some(A2aRoute::Rest {
                tenant: Some("research".into()),
                op: RestOp::Send
            })
        );
        assert_eq!(
            route(Method::GET, "/a2a/tasks/task_1"),
            Some(A2aRoute::Rest {
                tenant: None,
                op: RestOp::Get("task_1".into())
            })
        );
        for method in [Method::GET, Method::POST] {
            assert_eq!(
                route(method, "/a2a/tasks/task_1:subscribe"),
                Some(A2aRoute::Rest {
                    tenant: None,
                    op: RestOp::Subscribe("task_1".into())
                })
            );
        }
        assert_eq!(
            route(Method::GET, "/a2a/research/.well-known/agent-card.json"),
            Some(A2aRoute::Card(Some("research".into())))
        );
        assert_eq!(route(Method::GET, "/a2a/tasks/t:cancel"), None);
    }
}
