//! The strict stand-in of Anthropic's Messages API (tests/api/strict_messages.rs) as a program,
//! for the Node suites of scripts/test.sh: `strict_messages --port PORT --key KEY` serves it on
//! 127.0.0.1 until killed (`GET /health` answers once it listens).
// Test tooling: the tests' helpers (unused here) panic where a test should fail.
#![allow(dead_code, clippy::panic)]

#[path = "../tests/api/loopback.rs"]
mod loopback;
#[path = "../tests/api/strict_messages.rs"]
mod strict_messages;

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let mut port = 0u16;
    let mut key = String::from("e2e-test-key");
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--port", Some(value)) => {
                port = value.parse().map_err(std::io::Error::other)?;
            }
            ("--key", Some(value)) => key = value,
            _ => {
                return Err(std::io::Error::other(
                    "usage: strict_messages --port PORT --key KEY",
                ));
            }
        }
    }
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?.port());
    let _server = strict_messages::StrictMessages::serve(listener, &key, None);
    std::future::pending::<()>().await;
    Ok(())
}
