//! An agent with a tool of its own: the default agui-lambda function plus `calculate`, an
//! arithmetic tool that checks its input. Run it locally with the demo model or any
//! OpenAI-compatible one:
//!
//! ```text
//! OPENAI_API_KEY=sk-… cargo run --example calculator
//! ```
//!
//! and deploy it as the function itself (README: Your own tools):
//! `cargo lambda build --release --arm64 --example calculator`.

mod tool;

fn main() -> std::process::ExitCode {
    agui_lambda::main_with_tools(|tools| tools.add(tool::calculator()))
}
