//! The two bindings over the operations: JSON-RPC 2.0 (`POST /a2a`, a `method` per operation,
//! errors as JSON-RPC error objects in a `200`) and HTTP+JSON (a path per operation, errors as
//! `google.rpc.Status` with the spec's HTTP status). Both stream as SSE.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::super::request::{check_content_type, query_pairs};
use super::ops::Sent;
use super::{A2aRefusal, A2aRoute, Binding, RestOp, check_version, stream};
use crate::a2a::errors::{A2aError, ErrorKind};
use crate::a2a::types::{ListTasksRequest, SendMessageRequest, TaskIdRequest, TaskState};
use crate::auth::Principal;
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::time::Instant;

/// A JSON-RPC call's method, as the spec names it.
enum Method {
    Send,
    Stream,
    Get,
    List,
    Cancel,
    Subscribe,
}

fn refuse(binding: Binding, id: &Value) -> impl Fn(A2aError) -> ApiError + '_ {
    move |error| {
        ApiError::A2a(Box::new(A2aRefusal {
            error,
            binding,
            id: id.clone(),
        }))
    }
}

fn params<T: DeserializeOwned>(value: Value) -> Result<T, A2aError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        A2aError::invalid_params(format!("{path}: {}", error.into_inner()))
    })
}

fn json_answer(binding: Binding, body: &Value) -> Response<ResponseBody> {
    let mut response =
        super::super::response::json_response(StatusCode::OK, Bytes::from(body.to_string()));
    if binding == Binding::Rest {
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/a2a+json"),
        );
    }
    response
}

impl App {
    /// An A2A call of `route` (the card is answered before authentication, elsewhere).
    pub(in crate::api) async fn a2a(
        &self,
        principal: &Principal,
        route: A2aRoute,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        match route {
            A2aRoute::Card(tenant) => {
                self.agent_card(tenant.as_deref(), request.uri().path(), request.headers())
            }
            A2aRoute::JsonRpc => self.jsonrpc(principal, request, invocation_deadline).await,
            A2aRoute::Rest { tenant, op } => {
                self.rest(principal, tenant, op, request, invocation_deadline)
                    .await
            }
        }
    }

    async fn jsonrpc(
        &self,
        principal: &Principal,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(request.headers())?;
        let null = Value::Null;
        let body =
            crate::protocol::input::parse_json(request.body(), &self.limits).map_err(|error| {
                match error {
                    crate::protocol::InputError::Syntax(_) => refuse(Binding::JsonRpc, &null)(
                        A2aError::new(ErrorKind::JsonParse, "Invalid JSON payload"),
                    ),
                    other => ApiError::Input(other),
                }
            })?;
        let id = match body.get("id") {
            Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
            _ => Value::Null,
        };
        let fail = refuse(Binding::JsonRpc, &id);
        if body.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || id.is_null() {
            return Err(fail(A2aError::new(
                ErrorKind::InvalidRequest,
                "a JSON-RPC 2.0 request needs \"jsonrpc\": \"2.0\", an id and a method",
            )));
        }
        let method = jsonrpc_method(
            body.get("method")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )
        .map_err(&fail)?;
        check_version(&request).map_err(&fail)?;
        let params_value = body.get("params").cloned().unwrap_or_else(|| json!({}));
        let result = |value: Value| {
            json_answer(
                Binding::JsonRpc,
                &json!({"jsonrpc": "2.0", "id": id, "result": value}),
            )
        };
        match method {
            Method::Send | Method::Stream => {
                let send: SendMessageRequest = params(params_value).map_err(&fail)?;
                let streaming = matches!(method, Method::Stream);
                let sent = self
                    .a2a_send(principal, send, streaming, invocation_deadline)
                    .await
                    .map_err(&fail)?;
                Ok(self.sent(sent, Binding::JsonRpc, &id, invocation_deadline))
            }
            Method::Get => {
                let get: TaskIdRequest = params(params_value).map_err(&fail)?;
                let task = self.a2a_get(principal, &get).await.map_err(&fail)?;
                Ok(result(serde_json::to_value(task).unwrap_or_default()))
            }
            Method::List => {
                let list: ListTasksRequest = params(params_value).map_err(&fail)?;
                let page = self.a2a_list(principal, &list).await.map_err(&fail)?;
                Ok(result(serde_json::to_value(page).unwrap_or_default()))
            }
            Method::Cancel => {
                let cancel: TaskIdRequest = params(params_value).map_err(&fail)?;
                let task = self.a2a_cancel(principal, &cancel).await.map_err(&fail)?;
                Ok(result(serde_json::to_value(task).unwrap_or_default()))
            }
            Method::Subscribe => {
                let subscribe: TaskIdRequest = params(params_value).map_err(&fail)?;
                let frames = self
                    .a2a_subscribe(principal, &subscribe, invocation_deadline)
                    .await
                    .map_err(&fail)?;
                Ok(self.sse(frames, Binding::JsonRpc, &id, invocation_deadline))
            }
        }
    }

    async fn rest(
        &self,
        principal: &Principal,
        tenant: Option<String>,
        op: RestOp,
        request: Request<Bytes>,
        invocation_deadline: Option<Instant>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let null = Value::Null;
        let fail = refuse(Binding::Rest, &null);
        check_version(&request).map_err(&fail)?;
        let tenant = tenant.unwrap_or_default();
        let body = || -> Result<Value, ApiError> {
            check_content_type(request.headers())?;
            crate::protocol::input::parse_json(request.body(), &self.limits).map_err(|error| {
                match error {
                    crate::protocol::InputError::Syntax(_) => {
                        fail(A2aError::new(ErrorKind::JsonParse, "the body is not JSON"))
                    }
                    other => ApiError::Input(other),
                }
            })
        };
        let to_json = |value: Value| json_answer(Binding::Rest, &value);
        match op {
            RestOp::Send | RestOp::Stream => {
                let mut send: SendMessageRequest = params(body()?).map_err(&fail)?;
                if !tenant.is_empty() {
                    send.tenant.clone_from(&tenant);
                }
                let sent = self
                    .a2a_send(
                        principal,
                        send,
                        matches!(op, RestOp::Stream),
                        invocation_deadline,
                    )
                    .await
                    .map_err(&fail)?;
                Ok(self.sent(sent, Binding::Rest, &null, invocation_deadline))
            }
            RestOp::Get(id) => {
                let get = TaskIdRequest {
                    tenant,
                    id,
                    history_length: query_number(&request, "historyLength").map_err(&fail)?,
                    metadata: None,
                };
                let task = self.a2a_get(principal, &get).await.map_err(&fail)?;
                Ok(to_json(serde_json::to_value(task).unwrap_or_default()))
            }
            RestOp::List => {
                let list = list_query(&request, tenant).map_err(&fail)?;
                let page = self.a2a_list(principal, &list).await.map_err(&fail)?;
                Ok(to_json(serde_json::to_value(page).unwrap_or_default()))
            }
            RestOp::Cancel(id) => {
                let cancel = TaskIdRequest {
                    tenant,
                    id,
                    ..TaskIdRequest::default()
                };
                let task = self.a2a_cancel(principal, &cancel).await.map_err(&fail)?;
                Ok(to_json(serde_json::to_value(task).unwrap_or_default()))
            }
            RestOp::Subscribe(id) => {
                let subscribe = TaskIdRequest {
                    tenant,
                    id,
                    ..TaskIdRequest::default()
                };
                let frames = self
                    .a2a_subscribe(principal, &subscribe, invocation_deadline)
                    .await
                    .map_err(&fail)?;
                Ok(self.sse(frames, Binding::Rest, &null, invocation_deadline))
            }
        }
    }

    fn sent(
        &self,
        sent: Sent,
        binding: Binding,
        id: &Value,
        invocation_deadline: Option<Instant>,
    ) -> Response<ResponseBody> {
        match sent {
            Sent::Stream(frames) => self.sse(frames, binding, id, invocation_deadline),
            Sent::Task(task) => {
                let result = json!({"task": *task});
                let body = match binding {
                    Binding::JsonRpc => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    Binding::Rest => result,
                };
                json_answer(binding, &body)
            }
        }
    }

    fn sse(
        &self,
        frames: std::pin::Pin<
            Box<dyn futures_util::Stream<Item = crate::a2a::types::StreamResponse> + Send>,
        >,
        binding: Binding,
        id: &Value,
        invocation_deadline: Option<Instant>,
    ) -> Response<ResponseBody> {
        let deadline = self.answer_deadline(invocation_deadline);
        let chunks = stream::sse(frames, binding, id.clone(), self.ping_interval, deadline);
        let mut response = Response::new(ResponseBody::stream(chunks));
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(crate::protocol::sse::CONTENT_TYPE),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        response
    }
}

/// A whole-number query parameter.
fn query_number(request: &Request<Bytes>, name: &str) -> Result<Option<i32>, A2aError> {
    query_pairs(request.uri().query())
        .find(|(key, _)| key == name)
        .map(|(_, value)| {
            value
                .parse::<i32>()
                .map_err(|_| A2aError::invalid_params(format!("{name} must be a whole number")))
        })
        .transpose()
}

/// `ListTasks`' request from the query string (HTTP+JSON's `GET /tasks`).
fn list_query(request: &Request<Bytes>, tenant: String) -> Result<ListTasksRequest, A2aError> {
    let mut list = ListTasksRequest {
        tenant,
        page_size: query_number(request, "pageSize")?,
        history_length: query_number(request, "historyLength")?,
        ..ListTasksRequest::default()
    };
    for (key, value) in query_pairs(request.uri().query()) {
        match key.as_ref() {
            "contextId" => list.context_id = value.into_owned(),
            "pageToken" => list.page_token = value.into_owned(),
            "statusTimestampAfter" => list.status_timestamp_after = Some(value.into_owned()),
            "status" => {
                list.status = Some(TaskState::parse(&value).ok_or_else(|| {
                    A2aError::invalid_params("status must be a TASK_STATE_* name")
                })?);
            }
            "includeArtifacts" => {
                list.include_artifacts = Some(match value.as_ref() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(A2aError::invalid_params(
                            "includeArtifacts must be true or false",
                        ));
                    }
                });
            }
            _ => {}
        }
    }
    Ok(list)
}

/// The operation a JSON-RPC method names, or the spec's error for one this server does not serve.
fn jsonrpc_method(name: &str) -> Result<Method, A2aError> {
    match name {
        "SendMessage" => Ok(Method::Send),
        "SendStreamingMessage" => Ok(Method::Stream),
        "GetTask" => Ok(Method::Get),
        "ListTasks" => Ok(Method::List),
        "CancelTask" => Ok(Method::Cancel),
        "SubscribeToTask" => Ok(Method::Subscribe),
        "CreateTaskPushNotificationConfig"
        | "GetTaskPushNotificationConfig"
        | "ListTaskPushNotificationConfigs"
        | "DeleteTaskPushNotificationConfig" => Err(A2aError::new(
            ErrorKind::PushNotificationNotSupported,
            "push notifications are not supported: stream, subscribe or poll",
        )),
        "GetExtendedAgentCard" => Err(A2aError::new(
            ErrorKind::UnsupportedOperation,
            "this agent has no extended card",
        )),
        other => Err(A2aError::new(
            ErrorKind::MethodNotFound,
            format!("no method {}", other.chars().take(64).collect::<String>()),
        )),
    }
}
