//! Server tools: a registry of named async handlers whose arguments are checked against their
//! JSON Schema before the handler runs, each call bounded by its tool's timeout and its result
//! by a size limit; the closure-based [`ToolBuilder`]; and the built-in `get_current_time`.
//!
//! A tool is a [`ServerTool`]: a name, a description, a JSON Schema for its arguments and an async
//! handler that gets the arguments and the run's [`ToolContext`]. Most tools are easiest written
//! with [`ToolBuilder`]:
//!
//! ```
//! use agui_lambda::tools::{ToolBuilder, ToolContext, ToolError, ToolOutput, ToolRegistry};
//! use serde_json::json;
//! use std::time::Duration;
//!
//! #[derive(serde::Deserialize)]
//! struct Lookup {
//!     order_id: String,
//! }
//!
//! let lookup = ToolBuilder::new("lookup_order", "Find an order by its id")
//!     .parameters(json!({
//!         "type": "object",
//!         "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{6}$"}},
//!         "required": ["order_id"],
//!     }))
//!     .timeout(Duration::from_secs(5))
//!     .handler(|args: Lookup, context: ToolContext| async move {
//!         if context.principal.as_str() == "anonymous" {
//!             return Err(ToolError::Failed("sign in to look up orders".to_owned()));
//!         }
//!         Ok(ToolOutput::json(&json!({"order_id": args.order_id, "status": "shipped"})))
//!     });
//!
//! let mut tools = ToolRegistry::with_builtins()?;
//! tools.add(lookup)?;
//! assert!(tools.contains("lookup_order"));
//! # Ok::<(), agui_lambda::tools::RegistryError>(())
//! ```

use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// The caller and the ids a tool is given in its [`ToolContext`].
pub use crate::auth::Principal;
use crate::model::ToolSpec;
pub use crate::protocol::{RunId, ThreadId, ToolCallId};

mod builder;
mod current_time;

/// For implementing [`ServerTool`] without a dependency of your own on `async-trait`.
pub use async_trait::async_trait;
pub use builder::{FnTool, ToolBuilder};
pub use current_time::CurrentTime;
/// A JSON Patch (RFC 6902) to the thread's state, as a tool returns it.
pub use json_patch::Patch as StatePatch;
/// The signal a tool gets when its result is no longer wanted.
pub use tokio_util::sync::CancellationToken;

/// Tool results longer than this many bytes are cut, with a note (`TOOL_RESULT_MAX_BYTES`).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 100_000;

/// What a tool may know about the run that called it. Cheap to clone: the state is shared.
///
/// ```
/// use agui_lambda::tools::{Principal, RunId, ThreadId, ToolContext};
/// use serde_json::json;
///
/// // How a tool's unit test builds the context a run would give it.
/// let context = ToolContext::new(
///     ThreadId::parse("thread-1", 128)?,
///     RunId::parse("run-1", 128)?,
///     Principal::new("alice"),
/// )
/// .with_state(json!({"cart": []}))
/// .with_device_timezone(Some(chrono_tz::Europe::Paris));
/// assert_eq!(context.state["cart"], json!([]));
/// assert!(!context.is_cancelled());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The thread the run belongs to.
    pub thread_id: ThreadId,
    /// The run that made the call.
    pub run_id: RunId,
    /// The call being answered (`None` outside a run's tool call, as in a tool's own tests).
    pub tool_call_id: Option<ToolCallId>,
    /// Who started the run: the authenticated caller (`anonymous` with `AUTH_MODE=none`).
    pub principal: Principal,
    /// The client's time zone from `forwardedProps.client_time.device_timezone`.
    pub device_timezone: Option<chrono_tz::Tz>,
    /// The thread's state as it was when the call's batch began (`null` when it has none): the
    /// turn's calls that may run in parallel run together, then each of the others alone.
    pub state: Arc<Value>,
    /// Cancelled when the call's result is no longer wanted: the run was stopped, the tool's
    /// timeout passed, or the call ended. Work a tool hands to other tasks should stop on it.
    pub cancellation: CancellationToken,
}

impl ToolContext {
    /// A context with no state, no device time zone and a fresh cancellation signal.
    pub fn new(thread_id: ThreadId, run_id: RunId, principal: Principal) -> Self {
        Self {
            thread_id,
            run_id,
            tool_call_id: None,
            principal,
            device_timezone: None,
            state: Arc::new(Value::Null),
            cancellation: CancellationToken::new(),
        }
    }

    /// The context with the thread's state as the turn's calls began.
    pub fn with_state(mut self, state: impl Into<Arc<Value>>) -> Self {
        self.state = state.into();
        self
    }

    /// The context of the call `id`.
    pub fn with_tool_call_id(mut self, id: ToolCallId) -> Self {
        self.tool_call_id = Some(id);
        self
    }

    /// The context with the client's time zone, if it sent one.
    pub fn with_device_timezone(mut self, zone: Option<chrono_tz::Tz>) -> Self {
        self.device_timezone = zone;
        self
    }

    /// The context with `cancellation` as the signal that the result is no longer wanted.
    pub fn with_cancellation(mut self, cancellation: CancellationToken) -> Self {
        self.cancellation = cancellation;
        self
    }

    /// Whether the call's result is no longer wanted.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Resolves when the call's result is no longer wanted.
    pub async fn cancelled(&self) {
        self.cancellation.cancelled().await;
    }
}

/// A tool's answer: content for the model, and optionally a JSON Patch to the thread's state.
///
/// ```
/// use agui_lambda::tools::{StatePatch, ToolOutput};
/// use serde_json::json;
///
/// let patch: StatePatch =
///     serde_json::from_value(json!([{"op": "add", "path": "/lastTotal", "value": 42}]))?;
/// let output = ToolOutput::json(&json!({"total": 42})).with_state_patch(patch);
/// assert_eq!(output.content, r#"{"total":42}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The result as the model and the thread get it (cut past `TOOL_RESULT_MAX_BYTES`).
    pub content: String,
    /// A JSON Patch (RFC 6902) for the thread's state, streamed as `STATE_DELTA`.
    pub state_patch: Option<StatePatch>,
    /// UI shown next to the call and kept with its result (an MCP App's view).
    pub(crate) activity: Option<crate::protocol::activity::KeptActivity>,
}

impl ToolOutput {
    /// The text as the call's result.
    pub fn text(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            state_patch: None,
            activity: None,
        }
    }

    /// The value as compact JSON text.
    pub fn json(value: &impl serde::Serialize) -> Self {
        // A value that cannot be serialized (a map with non-string keys) still answers the model.
        Self::text(
            serde_json::to_string(value)
                .unwrap_or_else(|err| format!("the tool's result is not JSON: {err}")),
        )
    }

    /// Applies `patch` to the thread's state when the call's result is recorded; the client gets
    /// it as `STATE_DELTA`. A patch that does not apply ends the run (`TOOL_EXECUTION_ERROR`).
    pub fn with_state_patch(mut self, patch: StatePatch) -> Self {
        self.state_patch = Some(patch);
        self
    }

    /// Shows `activity` next to the call (`ACTIVITY_SNAPSHOT` after its result) and keeps it
    /// with the result, so that a reloaded thread shows it again.
    pub(crate) fn with_activity(
        mut self,
        activity: crate::protocol::activity::KeptActivity,
    ) -> Self {
        self.activity = Some(activity);
        self
    }
}

/// A tool failure. `Failed` goes back to the model as an error result, so it can correct itself;
/// `Fatal` ends the run with `RUN_ERROR` code `TOOL_EXECUTION_ERROR`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ToolError {
    /// The call failed; the message goes back to the model as the result (`Error: …`).
    #[error("{0}")]
    Failed(String),
    /// The run cannot go on; it ends with `RUN_ERROR` `TOOL_EXECUTION_ERROR`.
    #[error("{0}")]
    Fatal(String),
}

/// A server tool: run by the server when the model calls it, its result fed back to the model.
/// [`ToolBuilder`] makes one from a closure; implement this trait for a tool that keeps state of
/// its own (a client, a connection pool). The [`async_trait`] attribute is re-exported here.
///
/// ```
/// use agui_lambda::tools::{ServerTool, ToolContext, ToolError, ToolOutput, ToolRegistry, async_trait};
/// use serde_json::{Value, json};
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use std::time::Duration;
///
/// /// Hands out ticket numbers; the counter lives as long as the warm instance.
/// struct Tickets(AtomicU64);
///
/// #[async_trait]
/// impl ServerTool for Tickets {
///     fn name(&self) -> &str {
///         "open_ticket"
///     }
///     fn description(&self) -> &str {
///         "Opens a support ticket and returns its number"
///     }
///     fn parameters(&self) -> Value {
///         json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]})
///     }
///     fn timeout(&self) -> Option<Duration> {
///         Some(Duration::from_secs(3))
///     }
///     fn parallel(&self) -> bool {
///         false // numbers in the order the model asked for them
///     }
///     async fn call(&self, arguments: Value, _context: &ToolContext) -> Result<ToolOutput, ToolError> {
///         let number = self.0.fetch_add(1, Ordering::SeqCst);
///         Ok(ToolOutput::json(&json!({"ticket": number, "title": arguments["title"]})))
///     }
/// }
///
/// let mut tools = ToolRegistry::with_builtins()?;
/// tools.add(Tickets(AtomicU64::new(1)))?;
/// assert!(!tools.may_run_in_parallel("open_ticket"));
/// # Ok::<(), agui_lambda::tools::RegistryError>(())
/// ```
#[async_trait]
pub trait ServerTool: Send + Sync {
    /// The name the model calls it by: 1–64 letters, digits, `_` or `-`.
    fn name(&self) -> &str;
    /// What the tool does, as the model reads it when choosing a tool.
    fn description(&self) -> &str;
    /// A JSON Schema object for the arguments; calls whose arguments break it never reach
    /// [`call`](Self::call) (the model gets the problems as a tool error).
    fn parameters(&self) -> Value;
    /// Whether a person must approve each call before it runs (`APPROVAL_REQUIRED_TOOLS` can
    /// also require it).
    fn requires_approval(&self) -> bool {
        false
    }
    /// The longest a call may take; after it the model gets a tool error. `None`: only the
    /// run's deadline bounds it.
    fn timeout(&self) -> Option<Duration> {
        None
    }
    /// Whether a call may run at the same time as the turn's other calls. Calls of a tool that
    /// may not run after the others have ended, one at a time, in the model's order.
    fn parallel(&self) -> bool {
        true
    }
    /// Whether running a call twice with the same arguments does no more than running it once
    /// (it reads, or it sets rather than adds). A call cut off before its result was stored (its
    /// process crashed, its invocation ended) runs again only for such a tool; otherwise the
    /// model gets an error result saying the call may or may not have happened. A call whose
    /// result was stored never runs again either way.
    fn idempotent(&self) -> bool {
        false
    }
    /// Runs the call with arguments already checked against [`ServerTool::parameters`].
    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError>;
}

/// Why a tool could not be registered (start-up stops, naming the tool).
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Another tool already has the name.
    #[error("tool {0} is registered twice")]
    Duplicate(String),
    /// The parameters are not a JSON Schema object the checker accepts.
    #[error("tool {name} has an invalid schema: {reason}")]
    BadSchema {
        /// The tool's name.
        name: String,
        /// What is wrong with the schema.
        reason: String,
    },
    /// The name is not 1–64 letters, digits, `_` or `-`.
    #[error("tool name {0:?} is not accepted by model APIs (1-64 letters, digits, _ or -)")]
    BadName(String),
    /// A setting names a tool no one registered.
    #[error("no server tool is named {0}")]
    Unknown(String),
}

/// Shared by a registry and the subsets made of it (agent profiles).
#[derive(Clone)]
struct Registered {
    tool: Arc<dyn ServerTool>,
    validator: Arc<jsonschema::Validator>,
    spec: ToolSpec,
    needs_approval: bool,
    timeout: Option<Duration>,
    parallel: bool,
    idempotent: bool,
}

/// What `value` breaks of a schema, each problem prefixed by where it is in the value.
pub(crate) fn schema_problems(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|error| {
            let path = error.instance_path().to_string();
            if path.is_empty() {
                error.to_string()
            } else {
                format!("{path}: {error}")
            }
        })
        .collect()
}

/// Server tools by name. Schemas are compiled once, at start-up.
pub struct ToolRegistry {
    tools: BTreeMap<String, Registered>,
    max_result_bytes: usize,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self {
            tools: BTreeMap::new(),
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
        }
    }
}

impl ToolRegistry {
    /// A registry without tools; [`with_builtins`](Self::with_builtins) is what a deployment
    /// starts with.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registry every deployment starts with.
    pub fn with_builtins() -> Result<Self, RegistryError> {
        let mut registry = Self::new();
        registry.register(Arc::new(CurrentTime))?;
        Ok(registry)
    }

    /// Adds a tool; see [`register`](Self::register).
    pub fn add(&mut self, tool: impl ServerTool + 'static) -> Result<(), RegistryError> {
        self.register(Arc::new(tool))
    }

    /// Adds a tool. Refuses a name model APIs do not accept, a name already taken and a schema
    /// that does not compile.
    pub fn register(&mut self, tool: Arc<dyn ServerTool>) -> Result<(), RegistryError> {
        let name = tool.name().to_owned();
        if !crate::protocol::input::is_valid_tool_name(&name) {
            return Err(RegistryError::BadName(name));
        }
        if self.tools.contains_key(&name) {
            return Err(RegistryError::Duplicate(name));
        }
        let parameters = tool.parameters();
        let validator =
            jsonschema::validator_for(&parameters).map_err(|err| RegistryError::BadSchema {
                name: name.clone(),
                reason: err.to_string(),
            })?;
        let spec = ToolSpec {
            name: name.clone(),
            description: tool.description().to_owned(),
            parameters,
        };
        let needs_approval = tool.requires_approval();
        let timeout = tool.timeout();
        let parallel = tool.parallel();
        let idempotent = tool.idempotent();
        self.tools.insert(
            name,
            Registered {
                tool,
                validator: Arc::new(validator),
                spec,
                needs_approval,
                timeout,
                parallel,
                idempotent,
            },
        );
        Ok(())
    }

    /// Cuts tool results (and tool error messages) longer than `bytes`, with a note.
    pub fn set_max_result_bytes(&mut self, bytes: usize) {
        self.max_result_bytes = bytes;
    }

    /// Requires approval for each call of the tool `name`.
    pub fn require_approval(&mut self, name: &str) -> Result<(), RegistryError> {
        let registered = self
            .tools
            .get_mut(name)
            .ok_or_else(|| RegistryError::Unknown(name.to_owned()))?;
        registered.needs_approval = true;
        Ok(())
    }

    /// Whether calls of `name` wait for a person's approval.
    pub fn needs_approval(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .is_some_and(|registered| registered.needs_approval)
    }

    /// Whether any tool waits for approval.
    pub fn any_needs_approval(&self) -> bool {
        self.tools
            .values()
            .any(|registered| registered.needs_approval)
    }

    /// Whether calls of `name` may run alongside other calls (unknown names may: they only
    /// produce an error).
    pub fn may_run_in_parallel(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .is_none_or(|registered| registered.parallel)
    }

    /// Whether a call of `name` cut off before its result was stored may run again.
    pub fn is_idempotent(&self, name: &str) -> bool {
        self.tools
            .get(name)
            .is_some_and(|registered| registered.idempotent)
    }

    /// The longest a call of `name` may take, when its tool says.
    pub fn timeout_of(&self, name: &str) -> Option<Duration> {
        self.tools
            .get(name)
            .and_then(|registered| registered.timeout)
    }

    /// The argument schema of `name`.
    pub fn parameters_of(&self, name: &str) -> Option<&Value> {
        self.tools
            .get(name)
            .map(|registered| &registered.spec.parameters)
    }

    /// The tools named in `names`, each as it is here (schema, timeout, approval, parallelism,
    /// the result limit); a name this registry lacks is [`RegistryError::Unknown`].
    pub fn subset(&self, names: &[String]) -> Result<ToolRegistry, RegistryError> {
        let mut tools = BTreeMap::new();
        for name in names {
            let registered = self
                .tools
                .get(name)
                .ok_or_else(|| RegistryError::Unknown(name.clone()))?;
            tools.insert(name.clone(), registered.clone());
        }
        Ok(Self {
            tools,
            max_result_bytes: self.max_result_bytes,
        })
    }

    /// Whether a tool of that name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The registered tools as the model is offered them (name, description, schema).
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|registered| &registered.spec)
    }

    /// Parses and checks the arguments, then runs the tool within its timeout; a result over the
    /// size limit is cut. `None` when no such tool exists.
    pub async fn call(
        &self,
        name: &str,
        arguments: &str,
        context: &ToolContext,
    ) -> Option<Result<ToolOutput, ToolError>> {
        let registered = self.tools.get(name)?;
        let arguments = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let value: Value = match serde_json::from_str(arguments) {
            Ok(value) => value,
            Err(err) => {
                return Some(Err(ToolError::Failed(format!(
                    "arguments are not valid JSON: {err}"
                ))));
            }
        };
        let problems = schema_problems(&registered.validator, &value);
        if !problems.is_empty() {
            return Some(Err(ToolError::Failed(format!(
                "arguments do not match the tool's schema: {}",
                problems.join("; ")
            ))));
        }
        // The call's own signal: fired when it ends, times out or the run stops, so work the tool
        // handed to other tasks stops with it; cancelling it never reaches the run.
        let context = context
            .clone()
            .with_cancellation(context.cancellation.child_token());
        let _call_over = context.cancellation.clone().drop_guard();
        let running = registered.tool.call(value, &context);
        let outcome = match registered.timeout {
            None => running.await,
            Some(limit) => tokio::time::timeout(limit, running)
                .await
                .unwrap_or_else(|_| {
                    Err(ToolError::Failed(format!(
                        "{name} did not answer within {} ms",
                        limit.as_millis()
                    )))
                }),
        };
        let limit = self.max_result_bytes;
        Some(match outcome {
            Ok(mut output) => {
                output.content = truncate(output.content, limit);
                Ok(output)
            }
            Err(ToolError::Failed(message)) => Err(ToolError::Failed(truncate(message, limit))),
            Err(fatal) => Err(fatal),
        })
    }
}

/// `text` cut to at most `limit` bytes (at a character boundary) plus a note saying so.
fn truncate(mut text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let total = text.len();
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(
        "\n[truncated: the result was {total} bytes; only the first {end} are shown]"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context(device: Option<chrono_tz::Tz>) -> ToolContext {
        ToolContext::new(
            ThreadId::parse("t", 128).unwrap(),
            RunId::parse("r", 128).unwrap(),
            Principal::anonymous(),
        )
        .with_device_timezone(device)
    }

    #[tokio::test]
    async fn unknown_tools_are_none() {
        let registry = ToolRegistry::with_builtins().unwrap();
        assert!(registry.call("nope", "{}", &context(None)).await.is_none());
    }

    /// Sleeps for `millis` (or until cancelled), noting whether its signal fired.
    struct Sleeper {
        timeout: Option<Duration>,
        saw_cancel: Arc<std::sync::atomic::AtomicBool>,
    }

    #[async_trait]
    impl ServerTool for Sleeper {
        fn name(&self) -> &str {
            "sleep"
        }
        fn description(&self) -> &str {
            "sleeps"
        }
        fn parameters(&self) -> Value {
            json!({"type": "object", "properties": {"millis": {"type": "integer"}}})
        }
        fn timeout(&self) -> Option<Duration> {
            self.timeout
        }
        fn parallel(&self) -> bool {
            false
        }
        async fn call(
            &self,
            arguments: Value,
            context: &ToolContext,
        ) -> Result<ToolOutput, ToolError> {
            let millis = arguments["millis"].as_u64().unwrap_or(0);
            let cancelled = context.cancellation.clone();
            let saw_cancel = self.saw_cancel.clone();
            // Work handed to another task, as a tool with a client of its own would.
            tokio::spawn(async move {
                cancelled.cancelled().await;
                saw_cancel.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            tokio::time::sleep(Duration::from_millis(millis)).await;
            Ok(ToolOutput::text(
                "x".repeat(usize::try_from(millis).unwrap()),
            ))
        }
    }

    fn sleeper(timeout: Option<Duration>) -> (ToolRegistry, Arc<std::sync::atomic::AtomicBool>) {
        let saw_cancel = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut registry = ToolRegistry::new();
        registry
            .add(Sleeper {
                timeout,
                saw_cancel: saw_cancel.clone(),
            })
            .unwrap();
        (registry, saw_cancel)
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_its_timeout_is_a_tool_error_and_its_signal_fires() {
        let (registry, saw_cancel) = sleeper(Some(Duration::from_millis(50)));
        let outcome = registry
            .call("sleep", r#"{"millis":1000}"#, &context(None))
            .await
            .unwrap();
        assert_eq!(
            outcome,
            Err(ToolError::Failed(
                "sleep did not answer within 50 ms".to_owned()
            ))
        );
        tokio::task::yield_now().await;
        assert!(saw_cancel.load(std::sync::atomic::Ordering::SeqCst));
        assert!(!registry.may_run_in_parallel("sleep"));
        assert!(
            registry.may_run_in_parallel("get_current_time")
                || !registry.contains("get_current_time")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_within_its_timeout_answers_and_the_run_keeps_its_own_signal() {
        let (registry, _) = sleeper(Some(Duration::from_millis(50)));
        let run = context(None);
        let output = registry
            .call("sleep", r#"{"millis":10}"#, &run)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(output.content, "x".repeat(10));
        // The call's signal fired when it ended; the run's did not.
        assert!(!run.is_cancelled());
    }

    #[tokio::test(start_paused = true)]
    async fn long_results_are_cut_with_a_note() {
        let (mut registry, _) = sleeper(None);
        registry.set_max_result_bytes(8);
        let output = registry
            .call("sleep", r#"{"millis":20}"#, &context(None))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            output.content,
            "xxxxxxxx\n[truncated: the result was 20 bytes; only the first 8 are shown]"
        );
    }

    #[test]
    fn truncation_keeps_whole_characters() {
        assert_eq!(truncate("héllo".to_owned(), 10), "héllo");
        assert!(
            truncate("héllo".to_owned(), 2)
                .starts_with("h\n[truncated: the result was 6 bytes; only the first 1 ")
        );
    }

    #[test]
    fn bad_names_are_refused() {
        let mut registry = ToolRegistry::new();
        let tool = ToolBuilder::new("has space", "x")
            .handler(|_: Value, _| async { Ok(ToolOutput::text("")) });
        assert!(matches!(registry.add(tool), Err(RegistryError::BadName(_))));
    }

    #[test]
    fn duplicate_registration_is_refused() {
        let mut registry = ToolRegistry::with_builtins().unwrap();
        assert!(matches!(
            registry.register(Arc::new(CurrentTime)),
            Err(RegistryError::Duplicate(_))
        ));
    }
}
