//! agui-lambda: an AG-UI agent server that runs as one AWS Lambda function with a streaming
//! Function URL, or as a local HTTP server. Dependencies point one way:
//! `api` → `agent` → {`protocol`, `store`, `model`, `a2a`}; `mcp` offers remote MCP servers' tools as
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

// Everything but the public API below is crate-private; the crate's own tests reach the rest
// through `testing` (behind `test-utils`). Without that feature the items it re-exports are
// crate-private in effect, so `unreachable_pub` is checked where it can see them: in the test
// build (`cargo clippy --all-targets`).
#![cfg_attr(not(feature = "test-utils"), allow(unreachable_pub))]
// Every public item of the library says what it is. `test-utils` (the crate's own test support,
// `testing`, hidden from the docs) makes internals reachable that are not part of the API, so the
// lint holds for the build users get; scripts/test.sh fails on its warnings in that build.
#![cfg_attr(not(feature = "test-utils"), warn(missing_docs))]
// A build without one of the default features (the fuzz crate builds without the AWS SDK) leaves
// the code only that feature calls unused.
#![cfg_attr(
    not(all(feature = "aws", feature = "bedrock", feature = "mcp")),
    allow(dead_code)
)]

mod a2a;
mod agent;
mod api;
mod auth;
mod config;
mod dialects;
mod genui;
mod mcp;
mod model;
mod protocol;
mod server;
mod startup;
mod store;
mod telemetry;
#[cfg(feature = "test-utils")]
#[doc(hidden)]
pub mod testing;

/// Server tools: the public API for adding your own.
pub use agent::tools;
pub use config::{Config, ConfigError};
pub use server::{ServeError, main_with_tools, serve};

/// The layering above, checked on the source: which module may name which; below them, no
/// circle between module files and `agent/` read one way (`layering/files.rs`).
#[cfg(test)]
mod layering {
    mod files;
    mod graph;

    use std::collections::{BTreeMap, BTreeSet};
    use std::path::Path;

    /// Every `crate::<module>` named in the source file or tree at `path`, its tests included:
    /// test code keeps the same arrows.
    fn named_modules(path: &Path, found: &mut BTreeSet<String>) {
        if path.is_dir() {
            for entry in std::fs::read_dir(path).unwrap() {
                named_modules(&entry.unwrap().path(), found);
            }
            return;
        }
        if !path.is_file() || path.extension().is_none_or(|ext| ext != "rs") {
            return;
        }
        found.extend(crate_paths(&std::fs::read_to_string(path).unwrap()));
    }

    /// The first segment of every `crate::` path in `source`.
    fn crate_paths(source: &str) -> BTreeSet<String> {
        source
            .match_indices("crate::")
            .map(|(index, _)| {
                source[index + "crate::".len()..]
                    .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// Which module may name which: `api` → `agent` → {`protocol`, `store`, `model`}, with
    /// `auth` (who is calling) and `telemetry` beneath them and `startup`/`server` on top.
    fn allowed() -> BTreeMap<&'static str, &'static [&'static str]> {
        BTreeMap::from([
            (
                "api",
                &[
                    "a2a",
                    "agent",
                    "auth",
                    "dialects",
                    "genui",
                    "protocol",
                    "store",
                    "telemetry",
                ][..],
            ),
            (
                "agent",
                &[
                    "a2a",
                    "auth",
                    "genui",
                    "model",
                    "protocol",
                    "store",
                    "telemetry",
                ][..],
            ),
            ("a2a", &["protocol"][..]),
            ("auth", &[][..]),
            ("dialects", &["genui", "protocol"][..]),
            ("model", &["protocol"][..]),
            ("store", &["auth", "protocol", "telemetry"][..]),
            ("protocol", &[][..]),
            ("genui", &["protocol"][..]),
            ("telemetry", &[][..]),
            (
                "config",
                &[
                    "agent",
                    "auth",
                    "genui",
                    "mcp",
                    "model",
                    "protocol",
                    "telemetry",
                ][..],
            ),
            ("mcp", &["agent", "genui", "protocol"][..]),
            (
                "startup",
                &[
                    "a2a",
                    "agent",
                    "api",
                    "auth",
                    "config",
                    "genui",
                    "mcp",
                    "model",
                    "store",
                    "telemetry",
                ][..],
            ),
            (
                "server",
                &["agent", "api", "config", "startup", "store", "telemetry"][..],
            ),
            // The tests' door names whatever they reach; nothing names it.
            (
                "testing",
                &[
                    "a2a",
                    "agent",
                    "api",
                    "auth",
                    "config",
                    "dialects",
                    "genui",
                    "model",
                    "protocol",
                    "startup",
                    "store",
                    "telemetry",
                ][..],
            ),
        ])
    }

    /// What `module` names that the table does not let it name.
    fn wrong_way(module: &str, found: &BTreeSet<String>) -> Vec<String> {
        let may_name = allowed().get(module).copied().unwrap_or_default();
        found
            .iter()
            .filter(|name| name.as_str() != module && !may_name.contains(&name.as_str()))
            .cloned()
            .collect()
    }

    #[test]
    fn modules_depend_one_way() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut checked = BTreeSet::new();
        for entry in std::fs::read_dir(&src).unwrap() {
            let path = entry.unwrap().path();
            let module = path.file_stem().unwrap().to_string_lossy().into_owned();
            if ["lib", "main", "layering"].contains(&module.as_str()) {
                continue;
            }
            assert!(
                allowed().contains_key(module.as_str()),
                "src/{module}: a module the layering table does not know; add its arrows"
            );
            let mut found = BTreeSet::new();
            named_modules(&path, &mut found);
            let extra = wrong_way(&module, &found);
            assert!(extra.is_empty(), "{module} names {extra:?}");
            checked.insert(module);
        }
        assert_eq!(
            checked.len(),
            allowed().len(),
            "a module in the table has no source"
        );
    }

    #[test]
    fn a_wrong_way_import_is_caught_in_code_and_in_tests() {
        let code = "use crate::api::App;\nfn f() {}\n";
        let test = "#[cfg(test)]\nmod tests {\n    use crate::startup::build;\n}\n";
        assert_eq!(wrong_way("agent", &crate_paths(code)), ["api"]);
        assert_eq!(wrong_way("store", &crate_paths(test)), ["startup"]);
        assert!(wrong_way("api", &crate_paths(code)).is_empty());
    }
}

/// The example of docs/tools-and-mcp.md ("Your own tools") is the crate-level rustdoc example
/// above, which `cargo test --doc` compiles: the two stay the same text.
#[cfg(test)]
mod readme {
    #[test]
    fn the_readme_tool_example_is_the_compiled_one() {
        let readme = include_str!("../docs/tools-and-mcp.md");
        let section = &readme[readme.find("# Tools and MCP servers").unwrap()..];
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
