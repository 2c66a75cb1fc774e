//! Wiring only: the default function is the library's `main` with the built-in tools and no
//! tools of its own (`examples/calculator` shows a binary that adds one).

fn main() -> std::process::ExitCode {
    agui_lambda::main_with_tools(|_built_in_tools| Ok(()))
}
