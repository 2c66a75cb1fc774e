//! [`ToolBuilder`]: a server tool from a name, a description, a schema and an async closure, so
//! that adding a tool takes a few lines and no trait implementation.

use async_trait::async_trait;
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::future::Future;
use std::time::Duration;

use super::{ServerTool, ToolContext, ToolError, ToolOutput};

type Handler =
    dyn Fn(Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>> + Send + Sync;

/// Builds a [`FnTool`]: set the schema and the per-tool settings, then give the handler.
///
/// The handler gets the arguments, already checked against the schema, as any type that
/// deserializes from them (a `#[derive(Deserialize)]` struct, or `serde_json::Value`), and the
/// run's [`ToolContext`].
///
/// ```
/// use agui_lambda::tools::{ToolBuilder, ToolContext, ToolOutput, ToolRegistry};
/// use serde_json::{Value, json};
/// use std::time::Duration;
///
/// let refund = ToolBuilder::new("refund_order", "Refund an order in full")
///     .parameters(json!({
///         "type": "object",
///         "properties": {"order_id": {"type": "string"}},
///         "required": ["order_id"],
///     }))
///     .timeout(Duration::from_secs(10))
///     .requires_approval(true) // a person says yes first (AG-UI interrupts)
///     .parallel(false) // never at the same time as the turn's other calls
///     .handler(|args: Value, _context: ToolContext| async move {
///         Ok(ToolOutput::text(format!("refunded {}", args["order_id"])))
///     });
///
/// let mut tools = ToolRegistry::new();
/// tools.add(refund)?;
/// assert!(tools.needs_approval("refund_order"));
/// assert!(!tools.may_run_in_parallel("refund_order"));
/// # Ok::<(), agui_lambda::tools::RegistryError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a ToolBuilder is a tool only once `handler` is called"]
pub struct ToolBuilder {
    name: String,
    description: String,
    parameters: Value,
    timeout: Option<Duration>,
    requires_approval: bool,
    parallel: bool,
    idempotent: bool,
}

impl ToolBuilder {
    /// A tool without arguments (schema `{"type":"object","properties":{}}`), no timeout of its
    /// own, no approval, free to run in parallel, not idempotent. The name is checked when it is
    /// registered.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {}}),
            timeout: None,
            requires_approval: false,
            parallel: true,
            idempotent: false,
        }
    }

    /// The JSON Schema object of the arguments.
    pub fn parameters(mut self, schema: Value) -> Self {
        self.parameters = schema;
        self
    }

    /// The longest a call may take; after it the model gets a tool error and the call's
    /// cancellation signal fires.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Whether each call waits for a person's approval.
    pub fn requires_approval(mut self, required: bool) -> Self {
        self.requires_approval = required;
        self
    }

    /// Whether calls may run at the same time as the turn's other calls (default `true`).
    pub fn parallel(mut self, parallel: bool) -> Self {
        self.parallel = parallel;
        self
    }

    /// Whether a call cut off before its result was stored (a crash, the end of an invocation)
    /// may run again: only when running it twice does no more than running it once (default
    /// `false`: the model is told instead that the call may or may not have happened).
    pub fn idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }

    /// The tool, calling `handler` with the arguments as an `A`.
    pub fn handler<A, F, Fut>(self, handler: F) -> FnTool
    where
        A: DeserializeOwned + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ToolOutput, ToolError>> + Send + 'static,
    {
        let handler: Box<Handler> = Box::new(move |arguments: Value, context: ToolContext| {
            // The schema was checked already; a type stricter than the schema is a mismatch the
            // model can still correct.
            match serde_json::from_value::<A>(arguments) {
                Ok(arguments) => Box::pin(handler(arguments, context)),
                Err(err) => Box::pin(std::future::ready(Err(ToolError::Failed(format!(
                    "arguments do not fit the tool: {err}"
                ))))),
            }
        });
        FnTool {
            settings: self,
            handler,
        }
    }
}

/// A server tool made by [`ToolBuilder`]. Register it with
/// [`ToolRegistry::add`](super::ToolRegistry::add).
pub struct FnTool {
    settings: ToolBuilder,
    handler: Box<Handler>,
}

impl std::fmt::Debug for FnTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnTool")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl ServerTool for FnTool {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn description(&self) -> &str {
        &self.settings.description
    }

    fn parameters(&self) -> Value {
        self.settings.parameters.clone()
    }

    fn requires_approval(&self) -> bool {
        self.settings.requires_approval
    }

    fn timeout(&self) -> Option<Duration> {
        self.settings.timeout
    }

    fn parallel(&self) -> bool {
        self.settings.parallel
    }

    fn idempotent(&self) -> bool {
        self.settings.idempotent
    }

    async fn call(&self, arguments: Value, context: &ToolContext) -> Result<ToolOutput, ToolError> {
        (self.handler)(arguments, context.clone()).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::ToolRegistry;
    use super::*;
    use crate::auth::Principal;
    use crate::protocol::{RunId, ThreadId};

    #[derive(serde::Deserialize)]
    struct Pair {
        a: i64,
        b: i64,
    }

    fn context() -> ToolContext {
        ToolContext::new(
            ThreadId::parse("t", 128).unwrap(),
            RunId::parse("r", 128).unwrap(),
            Principal::new("alice"),
        )
        .with_state(json!({"bonus": 1}))
    }

    fn adder() -> FnTool {
        ToolBuilder::new("add", "Adds two integers")
            .parameters(json!({
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            }))
            .handler(|pair: Pair, context: ToolContext| async move {
                let bonus = context.state["bonus"].as_i64().unwrap_or(0);
                Ok(ToolOutput::json(&json!({
                    "sum": pair.a + pair.b + bonus,
                    "by": context.principal.as_str(),
                })))
            })
    }

    #[tokio::test]
    async fn typed_arguments_and_the_context_reach_the_handler() {
        let mut registry = ToolRegistry::new();
        registry.add(adder()).unwrap();
        let output = registry
            .call("add", r#"{"a":2,"b":3}"#, &context())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(output.content, r#"{"sum":6,"by":"alice"}"#);
    }

    #[tokio::test]
    async fn arguments_the_schema_allows_but_the_type_refuses_are_tool_errors() {
        let mut registry = ToolRegistry::new();
        registry.add(adder()).unwrap();
        let outcome = registry
            .call("add", r#"{"a":2,"b":3.5}"#, &context())
            .await
            .unwrap();
        assert!(
            matches!(&outcome, Err(ToolError::Failed(message)) if message.starts_with("arguments do not fit the tool")),
            "{outcome:?}"
        );
        let outcome = registry
            .call("add", r#"{"a":"2","b":3}"#, &context())
            .await
            .unwrap();
        assert!(
            matches!(&outcome, Err(ToolError::Failed(message)) if message.contains("schema")),
            "{outcome:?}"
        );
    }

    #[test]
    fn settings_reach_the_registry() {
        let tool = ToolBuilder::new("slow", "x")
            .timeout(Duration::from_millis(5))
            .requires_approval(true)
            .parallel(false)
            .idempotent(true)
            .handler(|_: Value, _| async { Ok(ToolOutput::text("")) });
        assert_eq!(tool.timeout(), Some(Duration::from_millis(5)));
        let mut registry = ToolRegistry::new();
        registry.add(tool).unwrap();
        assert!(registry.needs_approval("slow"));
        assert!(!registry.may_run_in_parallel("slow"));
        assert!(registry.is_idempotent("slow"));
        assert_eq!(registry.timeout_of("slow"), Some(Duration::from_millis(5)));
        let plain = ToolBuilder::new("plain", "x")
            .handler(|_: Value, _| async { Ok(ToolOutput::text("")) });
        registry.add(plain).unwrap();
        assert!(
            !registry.is_idempotent("plain"),
            "not idempotent unless it says so"
        );
        assert_eq!(
            registry.parameters_of("slow"),
            Some(&json!({"type": "object", "properties": {}}))
        );
    }
}
