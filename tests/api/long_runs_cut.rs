//! A Lambda hand-off inside a long step, as the real clients take it: the model is still
//! answering when the invocation reaches its end, so the stream ends inside a message and a step.
//! `@ag-ui/client` 1.0.0's and 0.0.59's `runAgent()` must resolve on the notice without an error
//! or a warning, and the run, followed to its end from `events`, must be one run their own
//! verifiers accept, holding the whole answer (tests/node/cut-streams.test.mjs).

use crate::lambda_emulator::Delivery;
use crate::long_runs::{continuations, setup_with};
use crate::step_model::{Answer, Asked};
use std::time::Duration;

/// Sixty words, one every 100 ms: longer than any invocation (a 5 s timeout less the 1 s
/// margin), so the first is cut inside this step. The next invocation asks again, with the
/// answer so far kept, and gets the short end of it.
fn script(asked: &Asked) -> Answer {
    let words: Vec<String> = if asked.answered == 0 {
        (1..=60).map(|n| format!("word{n} ")).collect()
    } else {
        ENDING.split(' ').map(|word| format!("{word} ")).collect()
    };
    Answer::Text {
        words,
        every: Duration::from_millis(if asked.answered == 0 { 100 } else { 10 }),
    }
}

const ENDING: &str = "and that is the end of the story.";

#[tokio::test]
async fn wire_a_hand_off_inside_a_long_answer_ends_both_clients_streams_cleanly() {
    let setup = setup_with(Delivery::default(), &[], script, 4).await;
    let captures = std::env::var("CAPTURE_DIR").unwrap_or_default();
    let node = tokio::process::Command::new("node")
        .args(["--test", "cut-streams.test.mjs"])
        .current_dir(crate::helpers::repo_path("tests/node"))
        .env("AGUI_HANDOFF_BASE", &setup.emulator.url)
        .env("AGUI_HANDOFF_ANSWER", ENDING)
        .env("CAPTURE_DIR", captures)
        .env_remove("AGUI_CUT_BASE")
        .output()
        .await
        .expect("node runs (npm ci in tests/node)");
    let report = String::from_utf8_lossy(&node.stdout);
    let log = setup.emulator.log();
    assert!(
        node.status.success() && report.contains("# pass 2"),
        "{report}\n{}\n{}",
        String::from_utf8_lossy(&node.stderr),
        log[log.len().saturating_sub(60)..].join("\n")
    );
    // Each client's run went on in a second invocation.
    let continued = continuations(&setup.emulator)
        .into_iter()
        .filter(|(_, answer)| answer == "continued")
        .count();
    assert!(continued >= 2, "{continued} continuations");
}
