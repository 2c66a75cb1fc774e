//! Long-term memory in runs: the server tools that save, search and delete the caller's
//! memories, and the block of pinned and relevant memories each run gives the model. The
//! principal is always the run's: no argument names whose memories a tool reaches.

mod rank;

use super::context::estimate::text_tokens;
use super::tools::{ServerTool, ToolContext, ToolError, ToolOutput};
use crate::auth::Principal;
use crate::store::{Memories, Memory, MemoryId, NewMemory, StoreError};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::sync::Arc;

pub(crate) use rank::rank;

/// `MEMORY`, `MEMORY_MAX_ITEMS`, `MEMORY_MAX_CHARS`, `MEMORY_CONTEXT_TOKENS`, `MEMORY_TTL_DAYS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySettings {
    /// Runs get the memory tools and block (`AGENT_PROFILES`' `memory` per profile).
    pub enabled: bool,
    pub max_items: u32,
    pub max_chars: u32,
    /// The most the injected block may take, in estimated tokens.
    pub context_tokens: u32,
    /// A memory is forgotten this long after it was saved; 0 keeps it until deleted.
    pub ttl_days: u32,
}

impl Default for MemorySettings {
    fn default() -> Self {
        Self {
            enabled: false,
            max_items: 200,
            max_chars: 500,
            context_tokens: 400,
            ttl_days: 0,
        }
    }
}

impl MemorySettings {
    /// When a memory saved now is forgotten, if ever.
    pub(crate) fn expiry_from_now(&self) -> Option<i64> {
        (self.ttl_days > 0)
            .then(|| chrono::Utc::now().timestamp_millis() + i64::from(self.ttl_days) * 86_400_000)
    }

    /// `text` as a memory keeps it: trimmed, not empty, at most `max_chars` characters.
    pub(crate) fn text(&self, text: &str) -> Result<String, String> {
        let text = text.trim();
        let chars = text.chars().count();
        if chars == 0 {
            Err("a memory's text must not be empty".to_owned())
        } else if chars > self.max_chars as usize {
            Err(format!(
                "a memory's text is at most {} characters (MEMORY_MAX_CHARS); this one has {chars}",
                self.max_chars
            ))
        } else {
            Ok(text.to_owned())
        }
    }
}

impl super::Agent {
    /// The store's memories and their settings, for the user's own API; `None` when no agent of
    /// this deployment keeps memories (`MEMORY` and `AGENT_PROFILES`' `memory` all off).
    pub(crate) fn memories(&self) -> Option<(&dyn Memories, MemorySettings)> {
        let settings = self.settings.memory;
        (settings.enabled || self.profiles.any_memory()).then(|| {
            let store: &dyn Memories = self.store.as_ref();
            (store, settings)
        })
    }
}

/// The names of the memory tools; an agent whose memory is off offers none of them.
pub(crate) const TOOL_NAMES: [&str; 3] = [SAVE, SEARCH, DELETE];
const SAVE: &str = "save_memory";
const SEARCH: &str = "search_memories";
const DELETE: &str = "delete_memory";
/// Results a search returns unless the model asks for fewer.
const SEARCH_LIMIT: u64 = 5;

/// The three memory tools, over `store`.
pub(crate) fn tools(store: Arc<dyn Memories>, settings: MemorySettings) -> Vec<MemoryTool> {
    [Kind::Save, Kind::Search, Kind::Delete]
        .into_iter()
        .map(|kind| MemoryTool {
            kind,
            store: store.clone(),
            settings,
        })
        .collect()
}

#[derive(Clone, Copy)]
enum Kind {
    Save,
    Search,
    Delete,
}

pub(crate) struct MemoryTool {
    kind: Kind,
    store: Arc<dyn Memories>,
    settings: MemorySettings,
}

#[async_trait]
impl ServerTool for MemoryTool {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Save => SAVE,
            Kind::Search => SEARCH,
            Kind::Delete => DELETE,
        }
    }

    fn description(&self) -> &str {
        match self.kind {
            Kind::Save => {
                "Remember a lasting fact about the user (a preference, a name, a circumstance) for later conversations. One short fact per call."
            }
            Kind::Search => {
                "Search what you remember about the user from earlier conversations; returns the best matches with their ids."
            }
            Kind::Delete => {
                "Forget one remembered fact by its id (from search_memories or the remembered list), e.g. when the user asks or it is no longer true."
            }
        }
    }

    /// Searching reads; forgetting an id twice forgets it once. Saving twice keeps two.
    fn idempotent(&self) -> bool {
        matches!(self.kind, Kind::Search | Kind::Delete)
    }

    fn parameters(&self) -> Value {
        match self.kind {
            Kind::Save => json!({
                "type": "object",
                "properties": {
                    "text": {"type": "string", "minLength": 1, "maxLength": self.settings.max_chars},
                    "pinned": {"type": "boolean", "description": "Give it in every conversation, whatever the topic"}
                },
                "required": ["text"],
                "additionalProperties": false
            }),
            Kind::Search => json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1, "maxLength": 1000},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 20}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            Kind::Delete => json!({
                "type": "object",
                "properties": {"id": {"type": "string", "maxLength": 64}},
                "required": ["id"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        crate::store::meter::for_memory(self.run(arguments, context)).await
    }
}

impl MemoryTool {
    async fn run(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        let owner = &context.principal;
        match self.kind {
            Kind::Save => self.save(&arguments, context).await,
            Kind::Search => {
                let query = arguments["query"].as_str().unwrap_or_default();
                let limit = arguments["limit"].as_u64().unwrap_or(SEARCH_LIMIT);
                let set = self.store.memories(owner).await.map_err(failed)?;
                let found: Vec<Value> = rank(query, &set.memories)
                    .into_iter()
                    .take(usize::try_from(limit).unwrap_or(usize::MAX))
                    .map(|(memory, _)| shown(memory))
                    .collect();
                Ok(ToolOutput::json(&json!({"memories": found})))
            }
            Kind::Delete => {
                let id = arguments["id"].as_str().unwrap_or_default();
                let missing = || ToolError::Failed(format!("no memory has the id {id:?}"));
                let id = MemoryId::parse(id).ok_or_else(missing)?;
                match self.store.delete_memory(owner, &id).await {
                    Ok(()) => Ok(ToolOutput::json(&json!({"deleted": id.as_str()}))),
                    Err(StoreError::NotFound) => Err(missing()),
                    Err(error) => Err(failed(error)),
                }
            }
        }
    }

    async fn save(
        &self,
        arguments: &Value,
        context: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let text = self
            .settings
            .text(arguments["text"].as_str().unwrap_or_default())
            .map_err(ToolError::Failed)?;
        let memory = NewMemory {
            text,
            pinned: arguments["pinned"].as_bool().unwrap_or(false),
            thread_id: Some(context.thread_id.clone()),
            run_id: Some(context.run_id.clone()),
            expires_at_ms: self.settings.expiry_from_now(),
        };
        let saved = self
            .store
            .save_memory(&context.principal, memory, self.settings.max_items)
            .await
            .map_err(failed)?;
        Ok(ToolOutput::json(&json!({"saved": shown(&saved)})))
    }
}

/// A memory as the model sees it.
fn shown(memory: &Memory) -> Value {
    json!({"id": memory.id.as_str(), "text": memory.text, "pinned": memory.pinned})
}

/// A store error as the model reads it: the bound in words, else that memory is unavailable.
fn failed(error: StoreError) -> ToolError {
    match error {
        StoreError::TooManyMemories(_) => ToolError::Failed(error.to_string()),
        other => {
            tracing::error!(error = %other, "memory store call failed");
            ToolError::Failed("memory is unavailable right now".to_owned())
        }
    }
}

/// The block a run gives the model: `owner`'s pinned memories, then those most relevant to
/// `user_text`, then the rest newest first (an open question, "what do you know about me?",
/// shares no word with what it asks about), within `settings.context_tokens`; a memory that does
/// not fit is passed over for the next. `None` when there is nothing to give. One
/// [`Memories::memories`] call, so a bounded number of store reads.
pub(crate) async fn block(
    store: &dyn Memories,
    owner: &Principal,
    user_text: &str,
    settings: &MemorySettings,
) -> Result<Option<String>, StoreError> {
    let set = store.memories(owner).await?;
    let pinned = set.memories.iter().filter(|memory| memory.pinned);
    let relevant: Vec<&Memory> = rank(user_text, &set.memories)
        .into_iter()
        .map(|(memory, _)| memory)
        .filter(|memory| !memory.pinned)
        .collect();
    // `memories` come newest first.
    let recent = set
        .memories
        .iter()
        .filter(|memory| !memory.pinned && !relevant.iter().any(|r| r.id == memory.id));
    let mut budget = u64::from(settings.context_tokens).saturating_sub(text_tokens(BLOCK_HEAD));
    let mut lines = Vec::new();
    for memory in pinned.chain(relevant.iter().copied()).chain(recent) {
        let line = format!("- [{}] {}", memory.id, memory.text);
        let cost = text_tokens(&line);
        if cost <= budget {
            budget -= cost;
            lines.push(line);
        }
    }
    Ok((!lines.is_empty()).then(|| format!("{BLOCK_HEAD}\n{}\n</memories>", lines.join("\n"))))
}

const BLOCK_HEAD: &str = "<memories>\nWhat you remember about this user from earlier conversations (not part of their message; search_memories finds more):";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn new(text: &str, pinned: bool) -> NewMemory {
        NewMemory {
            text: text.to_owned(),
            pinned,
            thread_id: None,
            run_id: None,
            expires_at_ms: None,
        }
    }

    fn settings(context_tokens: u32) -> MemorySettings {
        MemorySettings {
            enabled: true,
            context_tokens,
            ..MemorySettings::default()
        }
    }

    /// The memories' texts in the order the block gives them.
    fn texts(block: &str) -> Vec<&str> {
        block
            .lines()
            .filter_map(|line| line.strip_prefix("- [")?.split_once("] "))
            .map(|(_, text)| text)
            .collect()
    }

    /// The tokens of a block line for `text` (ids are `mem_` and 29 hex digits).
    fn line_tokens(text: &str) -> u64 {
        text_tokens(&format!("- [mem_{}] {text}", "0".repeat(29)))
    }

    #[tokio::test]
    async fn the_block_gives_pinned_then_relevant_then_the_newest_within_its_budget() {
        let store = MemoryStore::new();
        let owner = Principal::new("sam");
        for (text, pinned) in [
            ("Call me Sam", true),
            ("Sam lives in Lyon", false),
            ("Sam is vegetarian", false),
            ("Sam plays the cello", false),
        ] {
            store
                .save_memory(&owner, new(text, pinned), 10)
                .await
                .unwrap();
        }
        let given = block(&store, &owner, "a vegetarian dinner?", &settings(400))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            texts(&given),
            [
                "Call me Sam",
                "Sam is vegetarian",
                "Sam plays the cello",
                "Sam lives in Lyon"
            ],
            "pinned, relevant, then newest first: {given}"
        );
        // Room for the pinned line and one more: the relevant one.
        let tight =
            text_tokens(BLOCK_HEAD) + line_tokens("Call me Sam") + line_tokens("Sam is vegetarian");
        let small = block(&store, &owner, "vegetarian", &settings(tight as u32))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(texts(&small), ["Call me Sam", "Sam is vegetarian"]);
        let other = block(&store, &Principal::new("eve"), "vegetarian", &settings(400)).await;
        assert_eq!(other.unwrap(), None, "another principal gets nothing");
    }

    #[tokio::test]
    async fn an_open_question_gets_the_pinned_memories_then_the_most_recent() {
        let store = MemoryStore::new();
        let owner = Principal::new("sam");
        store
            .save_memory(&owner, new("Sam is vegetarian", false), 10)
            .await
            .unwrap();
        store
            .save_memory(&owner, new("Call me Sam", true), 10)
            .await
            .unwrap();
        store
            .save_memory(&owner, new("Sam moved to Lyon in May", false), 10)
            .await
            .unwrap();
        let question = "what do you know about me?";
        let given = block(&store, &owner, question, &settings(400))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            texts(&given),
            [
                "Call me Sam",
                "Sam moved to Lyon in May",
                "Sam is vegetarian"
            ]
        );
        // Within the budget: the pinned one and the newest.
        let tight = text_tokens(BLOCK_HEAD)
            + line_tokens("Call me Sam")
            + line_tokens("Sam moved to Lyon in May");
        let small = block(&store, &owner, question, &settings(tight as u32))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(texts(&small), ["Call me Sam", "Sam moved to Lyon in May"]);
        assert_eq!(
            block(&store, &owner, question, &settings(0)).await.unwrap(),
            None
        );
    }
}
