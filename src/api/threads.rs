//! The thread routes besides running and following runs: read, list, rename, delete, fork; and
//! the caller's usage. Every one answers only for the caller's own threads (404 otherwise).

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use super::request::{check_content_type, page_limit, query_pairs};
use super::response::json_response;
use crate::agent::{ForkError, StartError};
use crate::auth::Principal;
use crate::protocol::{InputError, MessageId, ThreadId, input};
use crate::store::{Deletion, HistoryQuery};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

const HISTORY_PAGE_DEFAULT: usize = 100;
const HISTORY_PAGE_MAX: usize = 500;
const LIST_PAGE_DEFAULT: usize = 20;
const LIST_PAGE_MAX: usize = 100;
/// The longest title a caller may set, in characters.
pub(super) const TITLE_MAX_CHARS: usize = 200;
/// The longest span `GET /usage` reports, in days.
const USAGE_MAX_DAYS: i64 = 366;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RenameBody {
    title: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ForkBody {
    message_id: String,
    thread_id: Option<String>,
}

pub(super) fn invalid(field: &str, message: impl Into<String>) -> ApiError {
    ApiError::Input(InputError::Invalid {
        field: field.to_owned(),
        message: message.into(),
    })
}

/// A JSON body as `T`; a missing or mistyped field is a 422 naming it.
pub(super) fn typed_body<T: serde::de::DeserializeOwned>(
    app: &App,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<T, ApiError> {
    check_content_type(headers)?;
    let value = input::parse_json(body, &app.limits)?;
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let field = if path == "." { "body" } else { path.as_str() };
        invalid(field, err.into_inner().to_string())
    })
}

/// A thread id in a path; a malformed one names no thread.
pub(super) fn path_thread(thread_id: &str) -> Result<ThreadId, ApiError> {
    ThreadId::parse(thread_id, crate::protocol::ids::MAX_ID_LEN)
        .map_err(|_| ApiError::Start(StartError::NotFound))
}

/// Where the active run is and where to follow it: `{runId, events, runner, handedOff}` (the
/// invocation that runs it, counting from 1, and whether it is between two); `null` when none.
fn active_run(
    thread_id: &ThreadId,
    run_id: Option<&crate::protocol::RunId>,
    runner: Option<crate::store::Runner>,
) -> Value {
    let Some(run_id) = run_id else {
        return Value::Null;
    };
    let mut active = json!({
        "runId": run_id,
        "events": crate::agent::events_path(thread_id, run_id),
    });
    if let Some(runner) = runner {
        active["runner"] = json!(runner.epoch);
        active["handedOff"] = json!(runner.handed_off);
    }
    active
}

pub(super) fn iso_ms(ms: i64) -> Value {
    chrono::DateTime::from_timestamp_millis(ms).map_or(Value::Null, |at| {
        json!(at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
    })
}

fn parse_day(name: &str, value: &str) -> Result<chrono::NaiveDate, ApiError> {
    chrono::NaiveDate::parse_from_str(value, "%Y-%m-%d")
        .map_err(|_| ApiError::BadQuery(format!("{name} must be a date as YYYY-MM-DD")))
}

impl App {
    /// `GET /threads/{threadId}?after=&limit=`: a page of the thread's messages, its state and title.
    pub(super) async fn history(
        &self,
        principal: &Principal,
        thread_id: &str,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let thread_id = path_thread(thread_id)?;
        let mut after = None;
        let mut limit = HISTORY_PAGE_DEFAULT;
        for (key, value) in query_pairs(query) {
            match key.as_ref() {
                "after" => after = Some(value.into_owned()),
                "limit" => limit = page_limit(&value, HISTORY_PAGE_MAX)?,
                _ => {}
            }
        }
        let page = self
            .agent
            .history(HistoryQuery {
                owner: principal,
                thread_id: &thread_id,
                after: after.as_deref(),
                limit,
            })
            .await
            .map_err(ApiError::from_store)?;
        let mut body = json!({
            "threadId": thread_id,
            "messages": page.messages,
            "state": page.state,
            "title": page.title,
            "activeRunId": page.active_run,
            "activeRun": active_run(&thread_id, page.active_run.as_ref(), page.runner),
        });
        if let Some(next) = page.next {
            body["next"] = json!(next);
        }
        // What a UI needs to say "earlier messages summarised": the summary stands for the
        // first `coversMessages` messages in the model's view; they all stay readable here.
        if let Some(checkpoint) = page.checkpoint.filter(|checkpoint| checkpoint.covers > 0) {
            body["checkpoint"] = json!({
                "coversMessages": checkpoint.covers,
                "summary": checkpoint.summary,
                "at": iso_ms(checkpoint.at_ms),
            });
        }
        // A sub-agent's thread says where it was delegated from.
        if let Some(parent) = page.parent {
            body["parent"] = json!({
                "threadId": parent.thread_id,
                "runId": parent.run_id,
                "toolCallId": parent.tool_call_id,
                "agent": parent.agent,
            });
        }
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// `GET /threads?limit=&cursor=`
    pub(super) async fn list_threads(
        &self,
        principal: &Principal,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let mut limit = LIST_PAGE_DEFAULT;
        let mut cursor = None;
        for (key, value) in query_pairs(query) {
            match key.as_ref() {
                "cursor" => cursor = Some(value.into_owned()),
                "limit" => limit = page_limit(&value, LIST_PAGE_MAX)?,
                _ => {}
            }
        }
        let list = self
            .agent
            .list_threads(principal, limit, cursor.as_deref())
            .await
            .map_err(ApiError::from_store)?;
        let threads: Vec<Value> = list
            .threads
            .iter()
            .map(|thread| {
                json!({
                    "threadId": thread.thread_id,
                    "title": thread.title,
                    "createdAt": iso_ms(thread.created_at_ms),
                    "updatedAt": iso_ms(thread.updated_at_ms),
                    "messageCount": thread.message_count,
                    "activeRunId": thread.active_run,
                })
            })
            .collect();
        let body = json!({"threads": threads, "next": list.next});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// `PATCH /threads/{threadId}` `{"title": …}`
    pub(super) async fn rename_thread(
        &self,
        principal: &Principal,
        thread_id: &str,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        let thread_id = path_thread(thread_id)?;
        let RenameBody { title } = typed_body(self, headers, body)?;
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        if title.is_empty() {
            return Err(invalid("title", "title must not be empty"));
        }
        let chars = title.chars().count();
        if chars > TITLE_MAX_CHARS {
            return Err(invalid(
                "title",
                format!("title is {chars} characters; the most is {TITLE_MAX_CHARS}"),
            ));
        }
        self.agent
            .rename_thread(principal, &thread_id, &title)
            .await
            .map_err(ApiError::from_store)?;
        let body = json!({"threadId": thread_id, "title": title});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// `DELETE /threads/{threadId}`: 204 once the thread is gone, whether this call or an
    /// earlier one removed it. A run in flight on it is cancelled first.
    pub(super) async fn delete_thread(
        &self,
        principal: &Principal,
        thread_id: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let thread_id = path_thread(thread_id)?;
        let deletion = self.agent.delete_thread(principal, &thread_id).await?;
        tracing::info!(%thread_id, deleted = deletion == Deletion::Deleted, "thread deleted");
        let mut response = Response::new(ResponseBody::full(Bytes::new()));
        *response.status_mut() = StatusCode::NO_CONTENT;
        Ok(response)
    }

    /// `POST /threads/{threadId}/fork` `{"messageId": …, "threadId"?: …}`
    pub(super) async fn fork_thread(
        &self,
        principal: &Principal,
        thread_id: &str,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        let source = path_thread(thread_id)?;
        let ForkBody {
            message_id,
            thread_id: new_id,
        } = typed_body(self, headers, body)?;
        let max = crate::protocol::ids::MAX_ID_LEN;
        let message_id = MessageId::parse(message_id, max)
            .map_err(|err| invalid("messageId", err.to_string()))?;
        let new_id = new_id
            .map(|id| ThreadId::parse(id, max).map_err(|err| invalid("threadId", err.to_string())))
            .transpose()?;
        let forked = match self
            .agent
            .fork_thread(principal, &source, &message_id, new_id)
            .await
        {
            Ok(forked) => forked,
            Err(ForkError::UnknownMessage(id)) => {
                return Err(invalid(
                    "messageId",
                    format!("{id} is not a message of this thread"),
                ));
            }
            Err(ForkError::Start(StartError::Busy)) => {
                return Err(invalid("threadId", "a thread with this id exists"));
            }
            Err(ForkError::Start(error)) => return Err(error.into()),
        };
        let body = json!({
            "threadId": forked.thread_id,
            "parentThreadId": source,
            "messageId": message_id,
            "messageCount": forked.message_count,
            "title": forked.title,
        });
        Ok(json_response(
            StatusCode::CREATED,
            Bytes::from(body.to_string()),
        ))
    }

    /// `GET /usage?from=&to=`: the caller's tokens by UTC day and model; the last 30 days by
    /// default.
    pub(super) async fn usage(
        &self,
        principal: &Principal,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let today = chrono::Utc::now().date_naive();
        let (mut from, mut to) = (None, None);
        for (key, value) in query_pairs(query) {
            match key.as_ref() {
                "from" => from = Some(parse_day("from", &value)?),
                "to" => to = Some(parse_day("to", &value)?),
                _ => {}
            }
        }
        let to = to.unwrap_or(today);
        let from = from.unwrap_or(to - chrono::Duration::days(29));
        if from > to {
            return Err(ApiError::BadQuery("from must not be after to".into()));
        }
        if (to - from).num_days() >= USAGE_MAX_DAYS {
            return Err(ApiError::BadQuery(format!(
                "from and to may span at most {USAGE_MAX_DAYS} days"
            )));
        }
        let (from, to) = (
            from.format("%Y-%m-%d").to_string(),
            to.format("%Y-%m-%d").to_string(),
        );
        let days = self
            .agent
            .usage(principal, &from, &to)
            .await
            .map_err(ApiError::from_store)?;
        let mut totals = json!({"runs": 0, "inputTokens": 0, "outputTokens": 0, "totalTokens": 0, "reasoningTokens": 0, "cachedInputTokens": 0});
        let days: Vec<Value> = days
            .iter()
            .map(|day| {
                let models: Vec<Value> = day
                    .models
                    .iter()
                    .map(|usage| {
                        let entry = json!({
                            "provider": usage.provider,
                            "model": usage.model,
                            "runs": usage.runs,
                            "inputTokens": usage.input_tokens,
                            "outputTokens": usage.output_tokens,
                            "totalTokens": usage.input_tokens + usage.output_tokens,
                            "reasoningTokens": usage.reasoning_tokens,
                            "cachedInputTokens": usage.cached_input_tokens,
                        });
                        for key in [
                            "runs",
                            "inputTokens",
                            "outputTokens",
                            "totalTokens",
                            "reasoningTokens",
                            "cachedInputTokens",
                        ] {
                            let sum = totals[key].as_u64().unwrap_or(0)
                                + entry[key].as_u64().unwrap_or(0);
                            totals[key] = json!(sum);
                        }
                        entry
                    })
                    .collect();
                json!({"day": day.day, "models": models})
            })
            .collect();
        let body = json!({"from": from, "to": to, "days": days, "totals": totals});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }
}
