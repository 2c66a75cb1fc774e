//! The A2A 1.0 client an agent delegates with: one per warm instance ([`A2aClient`], its cards
//! cached). A delegation reads the agent's card, takes the first interface it speaks, sends
//! `A2A-Version: 1.0`, the interface's `tenant` and the credentials the card's security scheme
//! asks for, and answers with a stream of [`ChildEvent`]s: `SendStreamingMessage` when the
//! agent streams (subscribing again when a stream breaks off before the task stopped), else
//! `SendMessage`, then polling `GetTask` until the task stops.

mod card;
mod events;
mod transport;

pub use events::ChildEvent;

use crate::a2a::errors::ErrorKind;
use crate::a2a::types::{
    AgentCard, Message, Part, Role, SecurityScheme, SendMessageRequest, StreamResponse, TaskState,
};
use card::CardCache;
use events::ChildFrames;
use futures_util::{Stream, StreamExt};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;
use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Duration;
use transport::{SendResponse, Transport};

/// Streams read again after one broke off before the task stopped.
const RESUBSCRIBES: u32 = 5;
/// How often a task of an agent that does not stream is polled, at first and at most.
const FIRST_POLL: Duration = Duration::from_millis(300);
const LONGEST_POLL: Duration = Duration::from_secs(3);

/// Why a delegation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ClientError {
    /// The A2A error the agent answered with, when it named one.
    pub kind: Option<ErrorKind>,
    /// Its `ErrorInfo.reason`, when it gave one.
    pub reason: Option<String>,
    /// The HTTP status of the answer (0 when none came).
    pub status: u16,
    pub message: String,
}

impl ClientError {
    /// The code a delegation that failed this way ends with: `A2A_<REASON>` for an error the
    /// agent named (`A2A_TASK_NOT_FOUND`), `AGENT_UNAUTHORIZED` for a `401`/`403`,
    /// `AGENT_UNAVAILABLE` for anything else (unreachable, a broken answer, no credentials).
    pub fn code(&self) -> String {
        match (self.kind, self.status) {
            (Some(kind), _) => format!("A2A_{}", kind.reason()),
            (None, 401 | 403) => "AGENT_UNAUTHORIZED".to_owned(),
            _ => "AGENT_UNAVAILABLE".to_owned(),
        }
    }

    fn new(message: impl Into<String>) -> Self {
        Self {
            kind: None,
            reason: None,
            status: 0,
            message: message.into(),
        }
    }

    fn card(message: impl Into<String>) -> Self {
        Self::new(message)
    }

    fn protocol(message: impl Into<String>) -> Self {
        Self::new(format!(
            "the agent's answer breaks A2A 1.0: {}",
            message.into()
        ))
    }

    fn transport(error: reqwest::Error) -> Self {
        Self::new(format!("the agent could not be reached: {error}"))
    }

    fn transport_text(message: String) -> Self {
        Self::new(message)
    }

    fn remote(
        kind: Option<ErrorKind>,
        reason: Option<String>,
        status: u16,
        message: String,
    ) -> Self {
        Self {
            kind,
            reason,
            status,
            message: format!("the agent answered: {message}"),
        }
    }
}

/// What a delegation presents to the agent: read from a Secrets Manager secret holding a
/// JSON object `{"bearer": "…"}` / `{"apiKey": "…"}` (or both), or a plain string used for
/// whichever the card asks. Never printed.
#[derive(Default, Clone)]
pub struct Credentials {
    bearer: Option<SecretString>,
    api_key: Option<SecretString>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("bearer", &self.bearer.as_ref().map(|_| "…"))
            .field("api_key", &self.api_key.as_ref().map(|_| "…"))
            .finish()
    }
}

impl Credentials {
    /// A secret's string: `{"bearer"|"token": …, "apiKey": …}`, or one value for either.
    pub fn from_secret(secret: &str) -> Self {
        let field = |value: &Value, keys: &[&str]| {
            keys.iter()
                .find_map(|key| value.get(*key).and_then(Value::as_str))
                .map(|text| SecretString::from(text.to_owned()))
        };
        match serde_json::from_str::<Value>(secret) {
            Ok(value) if value.is_object() => Self {
                bearer: field(&value, &["bearer", "token"]),
                api_key: field(&value, &["apiKey", "api_key"]),
            },
            _ => Self {
                bearer: Some(SecretString::from(secret.trim().to_owned())),
                api_key: Some(SecretString::from(secret.trim().to_owned())),
            },
        }
    }

    /// The headers and query parameters `card` asks for: its first security requirement whose
    /// schemes all have a credential here (bearer, API key in a header, query or cookie). A
    /// card that asks for nothing gets nothing.
    fn apply(&self, card: &AgentCard) -> Result<(Pairs, Pairs), ClientError> {
        let requirements: Vec<Vec<&String>> = if card.security_requirements.is_empty() {
            card.security_schemes
                .keys()
                .map(|name| vec![name])
                .collect()
        } else {
            card.security_requirements
                .iter()
                .map(|requirement| requirement.schemes.keys().collect())
                .collect()
        };
        if requirements.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        for names in &requirements {
            let mut headers = Vec::new();
            let mut query = Vec::new();
            let met = names.iter().all(|name| {
                card.security_schemes
                    .get(*name)
                    .is_some_and(|scheme| self.present(scheme, &mut headers, &mut query))
            });
            if met {
                return Ok((headers, query));
            }
        }
        Err(ClientError::new(format!(
            "the agent {} asks for credentials of a kind this delegation has none of (schemes: {})",
            card.name,
            card.security_schemes
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }

    fn present(
        &self,
        scheme: &SecurityScheme,
        headers: &mut Vec<(String, String)>,
        query: &mut Vec<(String, String)>,
    ) -> bool {
        if let Some(http) = &scheme.http_auth_security_scheme
            && http.scheme.eq_ignore_ascii_case("bearer")
            && let Some(token) = &self.bearer
        {
            headers.push((
                "authorization".to_owned(),
                format!("Bearer {}", token.expose_secret()),
            ));
            return true;
        }
        if let Some(api_key) = &scheme.api_key_security_scheme
            && let Some(key) = &self.api_key
            && !api_key.name.is_empty()
        {
            let key = key.expose_secret().to_owned();
            match api_key.location.to_ascii_lowercase().as_str() {
                "header" => headers.push((api_key.name.clone(), key)),
                "query" => query.push((api_key.name.clone(), key)),
                "cookie" => headers.push(("cookie".to_owned(), format!("{}={key}", api_key.name))),
                _ => return false,
            }
            return true;
        }
        false
    }
}

/// Header or query parameter names and values.
type Pairs = Vec<(String, String)>;

/// One delegation: what to send to the agent of `card_url`.
#[derive(Debug, Clone, Default)]
pub struct Delegation {
    pub card_url: String,
    pub credentials: Credentials,
    pub text: String,
    /// Structured input, sent as a data part after the text.
    pub data: Option<Value>,
    /// The context of an earlier delegation to this agent in the same conversation.
    pub context_id: Option<String>,
    /// The task a resume answers (input required), with its `context_id`.
    pub task_id: Option<String>,
    /// What earlier delegations showed of that task (bytes of text per artifact id): not shown
    /// again when the agent sends the task whole.
    pub earlier: BTreeMap<String, usize>,
}

/// The child events of a delegation, as they come.
pub type ChildStream = Pin<Box<dyn Stream<Item = Result<ChildEvent, ClientError>> + Send>>;

/// The client of a warm instance: its HTTP client and the cards it read.
pub struct A2aClient {
    http: reqwest::Client,
    cards: CardCache,
}

impl A2aClient {
    pub fn new(http: reqwest::Client) -> Self {
        Self {
            http,
            cards: CardCache::default(),
        }
    }

    /// The transport to the agent of `card_url`, from its (cached) card.
    async fn transport(
        &self,
        card_url: &str,
        credentials: &Credentials,
    ) -> Result<(Transport, AgentCard), ClientError> {
        let card = self.cards.card(&self.http, card_url, &[]).await?;
        let endpoint = card::choose_interface(&card)?;
        let (headers, query) = credentials.apply(&card)?;
        Ok((
            Transport {
                http: self.http.clone(),
                endpoint,
                headers,
                query,
            },
            card,
        ))
    }

    /// Sends `delegation`'s message and follows the task it starts (or resumes) until it stops.
    pub async fn delegate(&self, delegation: Delegation) -> Result<ChildStream, ClientError> {
        let (transport, card) = self
            .transport(&delegation.card_url, &delegation.credentials)
            .await?;
        let mut parts = Vec::new();
        if !delegation.text.is_empty() || delegation.data.is_none() {
            parts.push(Part::text(delegation.text.clone()));
        }
        if let Some(data) = delegation.data.clone() {
            parts.push(Part::data(data));
        }
        let request = SendMessageRequest {
            tenant: String::new(),
            message: Message {
                message_id: uuid::Uuid::new_v4().to_string(),
                context_id: delegation.context_id.clone().unwrap_or_default(),
                task_id: delegation.task_id.clone().unwrap_or_default(),
                role: Role::User,
                parts,
                ..Message::default()
            },
            configuration: None,
            metadata: None,
        };
        let state = ChildFrames::continuing(delegation.earlier);
        if card.capabilities.streaming == Some(true) {
            let frames = transport.stream(&request).await?;
            Ok(Box::pin(follow_stream(transport, frames, state)))
        } else {
            let answer = transport.send(&request).await?;
            Ok(Box::pin(follow_polled(transport, answer, state)))
        }
    }

    /// Follows `task_id` again without sending anything (a task that waited for authorization
    /// the user has since given out of band): `SubscribeToTask` when the agent streams, else
    /// `GetTask` until it stops; a task that ended meanwhile is read as it ended. `earlier` is
    /// what earlier delegations showed of it.
    pub async fn follow(
        &self,
        card_url: &str,
        credentials: &Credentials,
        task_id: &str,
        earlier: BTreeMap<String, usize>,
    ) -> Result<ChildStream, ClientError> {
        let (transport, card) = self.transport(card_url, credentials).await?;
        let state = ChildFrames::continuing(earlier);
        if card.capabilities.streaming == Some(true) {
            match transport.subscribe(task_id).await {
                Ok(frames) => return Ok(Box::pin(follow_stream(transport, frames, state))),
                // Ended in between: read as it ended.
                Err(error) if error.kind == Some(ErrorKind::UnsupportedOperation) => {}
                Err(error) => return Err(error),
            }
        }
        let task = transport.get_task(task_id).await?;
        Ok(Box::pin(follow_polled(
            transport,
            SendResponse::Task(task),
            state,
        )))
    }

    /// Asks the agent of `card_url` to cancel `task_id`; the state the task is in after.
    pub async fn cancel(
        &self,
        card_url: &str,
        credentials: &Credentials,
        task_id: &str,
    ) -> Result<TaskState, ClientError> {
        let (transport, _) = self.transport(card_url, credentials).await?;
        Ok(transport.cancel(task_id).await?.status.state)
    }
}

/// A streamed task's child events; a stream that ends before the task stopped is subscribed to
/// again, and a task that ended meanwhile is read once more.
fn follow_stream(
    transport: Transport,
    first: impl Stream<Item = Result<StreamResponse, ClientError>> + Send + 'static,
    mut state: ChildFrames,
) -> impl Stream<Item = Result<ChildEvent, ClientError>> + Send + 'static {
    async_stream::stream! {
        let mut frames: Pin<Box<dyn Stream<Item = Result<StreamResponse, ClientError>> + Send>> = Box::pin(first);
        let mut resubscribes = 0;
        loop {
            while let Some(frame) = frames.next().await {
                match frame {
                    Ok(frame) => {
                        for event in state.push(&frame) {
                            yield Ok(event);
                        }
                    }
                    // A broken stream is subscribed to again, like one that ended early.
                    Err(error) if error.status == 0 && state.task().is_some() => {
                        tracing::info!(%error, "A2A: the task's stream broke off");
                        break;
                    }
                    Err(error) => {
                        yield Err(error);
                        return;
                    }
                }
                if state.stopped() {
                    return;
                }
            }
            let Some((task_id, _)) = state.task().cloned() else {
                yield Err(ClientError::protocol("the stream ended before naming its task"));
                return;
            };
            resubscribes += 1;
            if resubscribes > RESUBSCRIBES {
                yield Err(ClientError::new("the task's stream kept breaking off"));
                return;
            }
            state.resubscribed();
            match transport.subscribe(&task_id).await {
                Ok(next) => frames = Box::pin(next),
                // Ended in between: its final state is read instead.
                Err(error) if error.kind == Some(ErrorKind::UnsupportedOperation) => {
                    match transport.get_task(&task_id).await {
                        Ok(task) => {
                            for event in state.push(&StreamResponse::Task(task)) {
                                yield Ok(event);
                            }
                            if !state.stopped() {
                                yield Err(ClientError::protocol("the task can be neither followed nor finished"));
                            }
                        }
                        Err(error) => yield Err(error),
                    }
                    return;
                }
                Err(error) => {
                    yield Err(error);
                    return;
                }
            }
        }
    }
}

/// A task of an agent that does not stream: the answer, then `GetTask` until it stops.
fn follow_polled(
    transport: Transport,
    answer: SendResponse,
    mut state: ChildFrames,
) -> impl Stream<Item = Result<ChildEvent, ClientError>> + Send + 'static {
    async_stream::stream! {
        let first = match answer {
            SendResponse::Task(task) => StreamResponse::Task(task),
            SendResponse::Message(message) => StreamResponse::Message(message),
        };
        for event in state.push(&first) {
            yield Ok(event);
        }
        let mut pause = FIRST_POLL;
        while !state.stopped() {
            let Some((task_id, _)) = state.task().cloned() else {
                yield Err(ClientError::protocol("the answer names no task"));
                return;
            };
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(LONGEST_POLL);
            match transport.get_task(&task_id).await {
                Ok(task) => {
                    state.resubscribed();
                    for event in state.push(&StreamResponse::Task(task)) {
                        yield Ok(event);
                    }
                }
                Err(error) => {
                    yield Err(error);
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{
        ApiKeySecurityScheme, HttpAuthSecurityScheme, SecurityRequirement, StringList,
    };
    use std::collections::BTreeMap;

    fn card(schemes: Vec<(&str, SecurityScheme)>) -> AgentCard {
        AgentCard {
            name: "peer".into(),
            security_requirements: schemes
                .iter()
                .map(|(name, _)| SecurityRequirement {
                    schemes: BTreeMap::from([((*name).to_owned(), StringList::default())]),
                })
                .collect(),
            security_schemes: schemes
                .into_iter()
                .map(|(name, scheme)| (name.to_owned(), scheme))
                .collect(),
            ..AgentCard::default()
        }
    }

    #[test]
    fn credentials_go_where_the_card_says() {
        let bearer = SecurityScheme {
            http_auth_security_scheme: Some(HttpAuthSecurityScheme {
                scheme: "Bearer".into(),
                ..HttpAuthSecurityScheme::default()
            }),
            ..SecurityScheme::default()
        };
        let api_key = SecurityScheme {
            api_key_security_scheme: Some(ApiKeySecurityScheme {
                location: "header".into(),
                name: "X-API-Key".into(),
                ..ApiKeySecurityScheme::default()
            }),
            ..SecurityScheme::default()
        };
        let credentials = Credentials::from_secret(r#"{"bearer": "tok", "apiKey": "k1"}"#);
        let (headers, _) = credentials
            .apply(&card(vec![("b", bearer.clone())]))
            .unwrap();
        assert_eq!(
            headers,
            [("authorization".to_owned(), "Bearer tok".to_owned())]
        );
        let (headers, _) = credentials.apply(&card(vec![("k", api_key)])).unwrap();
        assert_eq!(headers, [("X-API-Key".to_owned(), "k1".to_owned())]);
        assert!(
            Credentials::default()
                .apply(&card(vec![("b", bearer)]))
                .is_err()
        );
        assert_eq!(Credentials::default().apply(&card(vec![])).unwrap().0, []);
        assert!(!format!("{credentials:?}").contains("tok"));
    }
}
