//! agui-lambda: an AG-UI agent server that runs as one AWS Lambda function with a streaming
//! Function URL, or as a local HTTP server. Dependencies point one way:
//! `api` → `agent` → {`protocol`, `store`, `model`}; `mcp` offers remote MCP servers' tools as
//! `agent` tools; `server` is what the binary runs.
//!
//! The default binary is [`main_with_tools`] with no extra tools. Your own `main.rs` builds the
//! same function with tools of yours (see [`tools::ToolBuilder`] and `examples/calculator`):
//!
//! ```no_run
//! use agui_lambda::tools::{ToolBuilder, ToolContext, ToolError, ToolOutput};
//! use serde_json::{Value, json};
//! use std::time::Duration;
//!
//! fn main() -> std::process::ExitCode {
//!     agui_lambda::main_with_tools(|tools| {
//!         tools.add(
//!             ToolBuilder::new("lookup_order", "Find an order by its id")
//!                 .parameters(json!({
//!                     "type": "object",
//!                     "properties": {"order_id": {"type": "string", "pattern": "^[0-9]{6}$"}},
//!                     "required": ["order_id"],
//!                 }))
//!                 .timeout(Duration::from_secs(5))
//!                 .handler(|args: Value, context: ToolContext| async move {
//!                     if context.principal.as_str() == "anonymous" {
//!                         return Err(ToolError::Failed("sign in first".to_owned()));
//!                     }
//!                     Ok(ToolOutput::json(&json!({"order_id": args["order_id"], "status": "shipped"})))
//!                 }),
//!         )
//!     })
//! }
//! ```

pub mod agent;
pub mod api;
pub mod config;
pub mod dialects;
pub mod mcp;
pub mod model;
pub mod protocol;
pub mod server;
pub mod startup;
pub mod store;
pub mod telemetry;

/// Server tools: the public API for adding your own (re-exported from `agent::tools`).
pub use agent::tools;
pub use server::{ServeError, main_with_tools, serve};

/// The layering above, checked on the source: which module may name which.
#[cfg(test)]
mod layering {
    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Every `crate::<module>` named in the non-test part of the source file or tree at `path`.
    fn named_modules(path: &Path, found: &mut BTreeSet<String>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                named_modules(&entry.unwrap().path(), found);
            }
            return;
        }
        let is_code = path.extension().is_some_and(|ext| ext == "rs")
            && !path.to_string_lossy().ends_with("tests.rs");
        if !is_code || !path.is_file() {
            return;
        }
        let source = std::fs::read_to_string(path).unwrap();
        let code = source.split("#[cfg(test)]").next().unwrap_or_default();
        for (index, _) in code.match_indices("crate::") {
            let rest = &code[index + "crate::".len()..];
            let name = rest
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            found.insert(name.to_owned());
        }
    }

    #[test]
    fn modules_depend_one_way() {
        let allowed: BTreeMap<&str, &[&str]> = BTreeMap::from([
            (
                "api",
                &["agent", "dialects", "protocol", "store", "telemetry"][..],
            ),
            ("dialects", &["protocol"][..]),
            ("agent", &["protocol", "store", "model", "telemetry"][..]),
            ("model", &["protocol"][..]),
            ("store", &["protocol", "telemetry"][..]),
            ("protocol", &[][..]),
            ("telemetry", &[][..]),
            ("config", &["agent", "protocol", "mcp", "telemetry"][..]),
            ("mcp", &["agent", "protocol"][..]),
            (
                "server",
                &["agent", "api", "config", "startup", "store", "telemetry"][..],
            ),
        ]);
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for (module, may_name) in allowed {
            let mut found = BTreeSet::new();
            named_modules(&src.join(module), &mut found);
            named_modules(&src.join(format!("{module}.rs")), &mut found);
            found.remove(module);
            let extra: Vec<&String> = found
                .iter()
                .filter(|name| !may_name.contains(&name.as_str()))
                .collect();
            assert!(extra.is_empty(), "{module} names {extra:?}");
        }
    }
}

/// The README's "Your own tools" example is the crate-level rustdoc example above, which
/// `cargo test --doc` compiles: the two stay the same text.
#[cfg(test)]
mod readme {
    #[test]
    fn the_readme_tool_example_is_the_compiled_one() {
        let readme = include_str!("../README.md");
        let section = &readme[readme.find("## Your own tools").unwrap()..];
        let start = section.find("```rust\n").unwrap() + "```rust\n".len();
        let end = start + section[start..].find("```\n").unwrap();
        let in_readme = &section[start..end];
        let in_rustdoc: String = include_str!("lib.rs")
            .lines()
            .skip_while(|line| *line != "//! ```no_run")
            .skip(1)
            .take_while(|line| *line != "//! ```")
            .map(|line| {
                let text = line.trim_start_matches("//!");
                format!("{}\n", text.strip_prefix(' ').unwrap_or(text))
            })
            .collect();
        assert_eq!(in_readme, in_rustdoc);
    }
}
