//! CopilotKit's thread routes, backed by the caller's own threads: the list `useThreads` shows
//! (newest first, a cursor, `limit`, archived threads only when asked for), renaming, archiving,
//! deleting; and the inspector's messages and state. The list is the caller's threads whatever
//! agent ran them: a thread is not bound to an agent here.

use super::super::app::App;
use super::super::body::ResponseBody;
use super::super::error::ApiError;
use super::super::request::{check_content_type, page_limit, query_pairs};
use super::super::response::json_response;
use super::super::threads::path_thread;
use super::DEFAULT_AGENT;
use crate::auth::Principal;
use crate::dialects::copilotkit::{self as dialect, ThreadPatch, ThreadRecord};
use crate::store::{Archived, HistoryQuery, ShelfQuery};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::{Value, json};

const LIST_PAGE_DEFAULT: usize = 20;
const LIST_PAGE_MAX: usize = 100;
/// Messages per read when the inspector reads a whole thread.
const INSPECT_PAGE: usize = 500;

impl App {
    /// `GET /threads?agentId&limit&cursor&includeArchived`:
    /// `{"threads": [ThreadRecord], "nextCursor": string|null}`.
    pub(super) async fn shelf(
        &self,
        principal: &Principal,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let mut agent_id = DEFAULT_AGENT.to_owned();
        let mut limit = LIST_PAGE_DEFAULT;
        let mut cursor = None;
        let mut archived = Archived::Hidden;
        for (key, value) in query_pairs(query) {
            match key.as_ref() {
                "agentId" => agent_id = value.into_owned(),
                "limit" => limit = page_limit(&value, LIST_PAGE_MAX)?,
                "cursor" => cursor = Some(value.into_owned()),
                "includeArchived" => {
                    archived = match value.as_ref() {
                        "true" => Archived::Shown,
                        "false" => Archived::Hidden,
                        _ => {
                            return Err(ApiError::BadQuery(
                                "includeArchived must be true or false".into(),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        self.copilotkit_agent(&agent_id)?;
        let page = self
            .agent
            .shelf(
                principal,
                ShelfQuery {
                    limit,
                    cursor: cursor.as_deref(),
                    archived,
                },
            )
            .await
            .map_err(ApiError::from_store)?;
        let threads: Vec<Value> = page
            .threads
            .iter()
            .map(|thread| {
                ThreadRecord {
                    id: thread.summary.thread_id.as_str(),
                    agent_id: &agent_id,
                    name: thread.summary.title.as_deref(),
                    archived: thread.archived,
                    created_at_ms: thread.summary.created_at_ms,
                    updated_at_ms: thread.summary.updated_at_ms,
                }
                .to_json()
            })
            .collect();
        let body = json!({"threads": threads, "nextCursor": page.next});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// `PATCH /threads/{threadId}` `{"name"?, "archived"?}`: renames, archives or brings back.
    pub(super) async fn patch_thread(
        &self,
        principal: &Principal,
        thread_id: &str,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        check_content_type(headers)?;
        let patch = ThreadPatch::parse(body)?;
        let thread_id = path_thread(thread_id)?;
        if let Some(name) = &patch.name {
            self.agent
                .rename_thread(principal, &thread_id, name)
                .await
                .map_err(ApiError::from_store)?;
        }
        if let Some(archived) = patch.archived {
            self.agent
                .set_archived(principal, &thread_id, archived)
                .await
                .map_err(ApiError::from_store)?;
        }
        let mut answer = json!({"id": thread_id});
        if let Some(name) = patch.name {
            answer["name"] = json!(name);
        }
        if let Some(archived) = patch.archived {
            answer["archived"] = json!(archived);
        }
        Ok(json_response(
            StatusCode::OK,
            Bytes::from(answer.to_string()),
        ))
    }

    /// `POST /threads/{threadId}/archive`.
    pub(super) async fn archive_thread(
        &self,
        principal: &Principal,
        thread_id: &str,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        dialect::check_thread_action(body)?;
        let thread_id = path_thread(thread_id)?;
        self.agent
            .set_archived(principal, &thread_id, true)
            .await
            .map_err(ApiError::from_store)?;
        let answer = json!({"id": thread_id, "archived": true});
        Ok(json_response(
            StatusCode::OK,
            Bytes::from(answer.to_string()),
        ))
    }

    /// `DELETE /threads/{threadId}`: as our own delete (a run on it is stopped first).
    pub(super) async fn remove_thread(
        &self,
        principal: &Principal,
        thread_id: &str,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        dialect::check_thread_action(body)?;
        self.delete_thread(principal, thread_id).await
    }

    /// `GET /threads/{threadId}/messages`: every message, as the inspector reads them.
    pub(super) async fn thread_messages(
        &self,
        principal: &Principal,
        thread_id: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let thread_id = path_thread(thread_id)?;
        let mut messages = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .agent
                .history(HistoryQuery {
                    owner: principal,
                    thread_id: &thread_id,
                    after: after.as_deref(),
                    limit: INSPECT_PAGE,
                })
                .await
                .map_err(ApiError::from_store)?;
            messages.extend(page.messages.iter().map(dialect::inspector_message));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        let body = json!({"messages": messages});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// `GET /threads/{threadId}/state`: `{"state": …}`, `null` when the thread has none.
    pub(super) async fn thread_state(
        &self,
        principal: &Principal,
        thread_id: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let thread_id = path_thread(thread_id)?;
        let page = self
            .agent
            .history(HistoryQuery {
                owner: principal,
                thread_id: &thread_id,
                after: None,
                limit: 0,
            })
            .await
            .map_err(ApiError::from_store)?;
        let body = json!({"state": page.state});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }
}
