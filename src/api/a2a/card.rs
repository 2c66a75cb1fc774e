//! The agent card (`/.well-known/agent-card.json`): this deployment's agents as skills, its
//! two bindings (JSON-RPC first, then HTTP+JSON, both A2A 1.0, no gRPC), streaming on, and the
//! security scheme `AUTH_MODE` asks for. A profile's own card names it as the interfaces'
//! `tenant`. Public (a client reads it before it has credentials), with an ETag and a max-age.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::BASE_PATH;
use crate::a2a::types::{
    AgentCapabilities, AgentCard, AgentInterface, AgentSkill, BINDING_HTTP_JSON, BINDING_JSONRPC,
    HttpAuthSecurityScheme, PROTOCOL_VERSION, SecurityRequirement, SecurityScheme, StringList,
};
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// How long a client may keep the card without asking again.
const CARD_MAX_AGE_SECS: u32 = 300;

impl App {
    /// The card of the default agent (`tenant` `None`) or of one profile.
    pub(in crate::api) fn agent_card(
        &self,
        tenant: Option<&str>,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<Response<ResponseBody>, ApiError> {
        if let Some(name) = tenant {
            self.a2a_agent(name)
                .map_err(|_| ApiError::NotFound(path.to_owned()))?;
        }
        let card = self.card(tenant, &self.public_base(path, headers));
        let body = serde_json::to_vec(&card).unwrap_or_default();
        let etag = format!(
            "\"{}\"",
            Sha256::digest(&body)
                .iter()
                .take(16)
                .map(|byte| format!("{byte:02x}"))
                .collect::<String>()
        );
        let unchanged = headers
            .get(header::IF_NONE_MATCH)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|sent| {
                sent.split(',')
                    .any(|tag| tag.trim().trim_start_matches("W/") == etag || tag.trim() == "*")
            });
        let mut response = if unchanged {
            let mut response = Response::new(ResponseBody::full(Bytes::new()));
            *response.status_mut() = StatusCode::NOT_MODIFIED;
            response
        } else {
            super::super::response::json_response(StatusCode::OK, Bytes::from(body))
        };
        let headers = response.headers_mut();
        if let Ok(value) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, value);
        }
        if let Ok(value) = HeaderValue::from_str(&format!("public, max-age={CARD_MAX_AGE_SECS}")) {
            headers.insert(header::CACHE_CONTROL, value);
        }
        Ok(response)
    }

    fn card(&self, tenant: Option<&str>, base: &str) -> AgentCard {
        let url = format!("{base}{BASE_PATH}");
        let interface = |binding: &str| AgentInterface {
            url: url.clone(),
            protocol_binding: binding.to_owned(),
            tenant: tenant.unwrap_or_default().to_owned(),
            protocol_version: PROTOCOL_VERSION.to_owned(),
        };
        let names: Vec<&str> = match tenant {
            Some(name) => vec![name],
            None => self.agent.profile_names(),
        };
        let skills = if names.is_empty() {
            vec![AgentSkill {
                id: "chat".to_owned(),
                name: "Chat".to_owned(),
                description:
                    "Answers in conversation, with the server tools this deployment offers."
                        .to_owned(),
                tags: vec!["chat".to_owned()],
                examples: Vec::new(),
            }]
        } else {
            names
                .iter()
                .map(|name| AgentSkill {
                    id: (*name).to_owned(),
                    name: (*name).to_owned(),
                    description: format!(
                        "The agent profile {name}; address it with tenant \"{name}\" (its own card: {base}{BASE_PATH}/{name}/.well-known/agent-card.json)."
                    ),
                    tags: vec!["agent-profile".to_owned()],
                    examples: Vec::new(),
                })
                .collect()
        };
        let (security_schemes, security_requirements) = self.security();
        AgentCard {
            name: tenant.map_or_else(|| "agui-lambda".to_owned(), |name| format!("agui-lambda {name}")),
            description: "An AG-UI agent on AWS Lambda, also served over A2A 1.0: a task is a chain of runs on one conversation (its contextId)."
                .to_owned(),
            supported_interfaces: vec![interface(BINDING_JSONRPC), interface(BINDING_HTTP_JSON)],
            version: env!("CARGO_PKG_VERSION").to_owned(),
            capabilities: AgentCapabilities {
                streaming: Some(true),
                push_notifications: Some(false),
                extended_agent_card: Some(false),
            },
            security_schemes,
            security_requirements,
            default_input_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
            default_output_modes: vec!["text/plain".to_owned(), "application/json".to_owned()],
            skills,
        }
    }

    /// `AUTH_MODE` as a security scheme: API keys and JWTs are bearer tokens; IAM is SigV4
    /// (an `Authorization` scheme of its own); `none` asks for nothing.
    fn security(&self) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
        let (scheme, format, description) = match self.auth_mode() {
            "api-key" => (
                "Bearer",
                "",
                "An API key of this deployment, as a bearer token.",
            ),
            "jwt" => (
                "Bearer",
                "JWT",
                "A JWT from this deployment's identity provider.",
            ),
            "iam" => (
                "AWS4-HMAC-SHA256",
                "",
                "AWS SigV4 (service lambda) with IAM credentials allowed to invoke the function URL.",
            ),
            _ => return (BTreeMap::new(), Vec::new()),
        };
        let name = if scheme == "Bearer" {
            "bearer"
        } else {
            "sigv4"
        };
        let schemes = BTreeMap::from([(
            name.to_owned(),
            SecurityScheme {
                http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                    description: description.to_owned(),
                    scheme: scheme.to_owned(),
                    bearer_format: format.to_owned(),
                }),
                ..SecurityScheme::default()
            },
        )]);
        let requirement = SecurityRequirement {
            schemes: BTreeMap::from([(name.to_owned(), StringList::default())]),
        };
        (schemes, vec![requirement])
    }

    /// Where clients reach this deployment: `A2A_PUBLIC_URL`, else the request's own host and
    /// scheme (`x-forwarded-*` first; plain HTTP only on loopback), with the `/lambda-url/<fn>`
    /// prefix `cargo lambda watch` serves under.
    fn public_base(&self, path: &str, headers: &HeaderMap) -> String {
        if let Some(url) = &self.a2a_public_url {
            return url.trim_end_matches('/').to_owned();
        }
        let header = |name: &str| {
            headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.split(',').next())
                .map(str::trim)
                .filter(|value| !value.is_empty())
        };
        let host = header("x-forwarded-host")
            .or_else(|| header("host"))
            .unwrap_or("localhost");
        let loopback = ["localhost", "127.", "[::1]"]
            .iter()
            .any(|prefix| host.starts_with(prefix));
        let scheme = header("x-forwarded-proto").unwrap_or(if loopback { "http" } else { "https" });
        let prefix = path
            .strip_prefix("/lambda-url/")
            .and_then(|rest| rest.split('/').next())
            .map(|function| format!("/lambda-url/{function}"))
            .unwrap_or_default();
        format!("{scheme}://{host}{prefix}")
    }
}
