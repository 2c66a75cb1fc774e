//! The caller's own memories: list (paged), save, edit, delete one, delete all. Every route
//! reaches only the caller's memories; another principal's ids answer 404 like missing ones.

use super::app::App;
use super::body::ResponseBody;
use super::error::ApiError;
use super::request::{page_limit, query_pairs};
use super::response::json_response;
use super::threads::{invalid, iso_ms, typed_body};
use crate::agent::memory::MemorySettings;
use crate::auth::Principal;
use crate::store::{Memories, Memory, MemoryEdit, MemoryId, NewMemory, StoreError};
use bytes::Bytes;
use http::{Response, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

const PAGE_DEFAULT: usize = 50;
const PAGE_MAX: usize = 200;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SaveBody {
    text: String,
    #[serde(default)]
    pinned: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditBody {
    text: Option<String>,
    pinned: Option<bool>,
}

/// A memory as the API shows it.
fn shown(memory: &Memory) -> Value {
    json!({
        "id": memory.id.as_str(),
        "text": memory.text,
        "pinned": memory.pinned,
        "createdAt": iso_ms(memory.created_at_ms),
        "updatedAt": iso_ms(memory.updated_at_ms),
        "threadId": memory.thread_id,
        "runId": memory.run_id,
        "expiresAt": memory.expires_at_ms.map(iso_ms),
    })
}

fn store_error(error: StoreError) -> ApiError {
    match error {
        StoreError::NotFound => ApiError::MemoryNotFound,
        StoreError::TooManyMemories(_) => ApiError::MemoryFull(error.to_string()),
        other => ApiError::from_store(other),
    }
}

/// A memory id in a path; a malformed one names no memory.
fn path_memory(id: &str) -> Result<MemoryId, ApiError> {
    MemoryId::parse(id).ok_or(ApiError::MemoryNotFound)
}

impl App {
    fn memory_store(&self) -> Result<(&dyn Memories, MemorySettings), ApiError> {
        self.agent.memories().ok_or(ApiError::MemoryOff)
    }

    /// `GET /memories?limit=&cursor=`: newest first; `next` is the cursor of the next page.
    pub(super) async fn list_memories(
        &self,
        principal: &Principal,
        query: Option<&str>,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (store, _) = self.memory_store()?;
        let mut limit = PAGE_DEFAULT;
        let mut after = None;
        for (key, value) in query_pairs(query) {
            match key.as_ref() {
                "cursor" => after = Some(MemoryId::parse(&value).ok_or(ApiError::BadCursor)?),
                "limit" => limit = page_limit(&value, PAGE_MAX)?,
                _ => {}
            }
        }
        let set = store.memories(principal).await.map_err(store_error)?;
        let page: Vec<&Memory> = set
            .memories
            .iter()
            .filter(|memory| after.as_ref().is_none_or(|after| &memory.id < after))
            .take(limit + 1)
            .collect();
        let next = (page.len() > limit).then(|| page[limit - 1].id.as_str().to_owned());
        let memories: Vec<Value> = page.iter().take(limit).map(|m| shown(m)).collect();
        let body = json!({"memories": memories, "next": next});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }

    /// `POST /memories` `{"text": …, "pinned"?: …}`: 201 with the memory.
    pub(super) async fn save_memory(
        &self,
        principal: &Principal,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (store, settings) = self.memory_store()?;
        let SaveBody { text, pinned } = typed_body(self, headers, body)?;
        let text = settings.text(&text).map_err(|err| invalid("text", err))?;
        let memory = NewMemory {
            text,
            pinned,
            thread_id: None,
            run_id: None,
            expires_at_ms: settings.expiry_from_now(),
        };
        let saved = store
            .save_memory(principal, memory, settings.max_items)
            .await
            .map_err(store_error)?;
        let body = shown(&saved).to_string();
        Ok(json_response(StatusCode::CREATED, Bytes::from(body)))
    }

    /// `PATCH /memories/{id}` `{"text"?: …, "pinned"?: …}`
    pub(super) async fn edit_memory(
        &self,
        principal: &Principal,
        id: &str,
        headers: &http::HeaderMap,
        body: &[u8],
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (store, settings) = self.memory_store()?;
        let id = path_memory(id)?;
        let EditBody { text, pinned } = typed_body(self, headers, body)?;
        let text = text
            .map(|text| settings.text(&text).map_err(|err| invalid("text", err)))
            .transpose()?;
        let edited = store
            .edit_memory(principal, &id, MemoryEdit { text, pinned })
            .await
            .map_err(store_error)?;
        Ok(json_response(
            StatusCode::OK,
            Bytes::from(shown(&edited).to_string()),
        ))
    }

    /// `DELETE /memories/{id}`: 204; 404 when the caller has no such memory.
    pub(super) async fn delete_memory(
        &self,
        principal: &Principal,
        id: &str,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (store, _) = self.memory_store()?;
        let id = path_memory(id)?;
        store
            .delete_memory(principal, &id)
            .await
            .map_err(store_error)?;
        let mut response = Response::new(ResponseBody::full(Bytes::new()));
        *response.status_mut() = StatusCode::NO_CONTENT;
        Ok(response)
    }

    /// `DELETE /memories`: everything kept about the caller; how many memories went.
    pub(super) async fn delete_memories(
        &self,
        principal: &Principal,
    ) -> Result<Response<ResponseBody>, ApiError> {
        let (store, _) = self.memory_store()?;
        let deleted = store
            .delete_memories(principal)
            .await
            .map_err(store_error)?;
        tracing::info!(deleted, "memories erased");
        let body = json!({"deleted": deleted});
        Ok(json_response(StatusCode::OK, Bytes::from(body.to_string())))
    }
}
