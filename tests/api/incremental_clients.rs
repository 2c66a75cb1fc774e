//! Clients that send only their new message on a long thread, on DynamoDB Local: each run reads
//! the thread's bounded tail (its checkpoint and what follows) and answers with its own events,
//! never the whole thread, so the bytes read and sent per run stay flat with the thread's
//! length; a client that holds a stale part of the thread still gets it back in a snapshot.

use super::dynamo_local;
use super::helpers::*;
use super::long_conversation::tools;
use super::window_model::WindowModel;
use agui_lambda::testing::telemetry::emf::Emf;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// What one run cost: the store's bytes and items read (its EMF record) and the response's size.
#[derive(Debug, Clone, Copy)]
struct RunCost {
    read_bytes: u64,
    read_items: u64,
    response_bytes: usize,
}

/// The `n`th message: about 400 characters.
fn message_text(n: usize) -> String {
    format!(
        "Turn {n}. {}",
        "The user asks about the plan, its costs and its dates again. ".repeat(6)
    )
}

/// Run `n`'s store figures from its EMF record (runs are numbered from 1 as they ended).
async fn read_figures(lines: &Arc<Mutex<Vec<String>>>, n: usize) -> (u64, u64) {
    for _ in 0..200 {
        let record = lines.lock().unwrap().get(n - 1).cloned();
        if let Some(record) = record {
            let record: Value = serde_json::from_str(&record).unwrap();
            return (
                record["StoreReadBytes"].as_u64().unwrap(),
                record["StoreReadItems"].as_u64().unwrap(),
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("no metrics record for run {n}");
}

/// The mean of `costs` over turns `turns` (numbered from 1), by `figure`.
fn mean(
    costs: &[RunCost],
    turns: std::ops::RangeInclusive<usize>,
    figure: fn(&RunCost) -> f64,
) -> f64 {
    let count = turns.clone().count() as f64;
    turns.map(|turn| figure(&costs[turn - 1])).sum::<f64>() / count
}

#[tokio::test]
async fn an_incremental_client_reads_and_receives_as_much_at_turn_150_as_at_turn_10() {
    let model = WindowModel::start(8_000).await;
    let (emf, lines) = Emf::in_memory("AguiTests", "incremental-clients");
    let app = spawn_app_on_model_url(
        &model.url,
        &[
            ("AGENT_MODEL", "window-8k"),
            ("MODEL_CONTEXT_TOKENS", "8000"),
        ],
        dynamo_local::new_store().await,
        tools(),
        Some(emf),
    )
    .await;
    let thread = new_thread();
    let mut costs = Vec::new();
    for n in 1..=150 {
        // Only the new message: no id the thread holds.
        let user = json!({"id": format!("u{n}"), "role": "user", "content": message_text(n)});
        let reply = app
            .run(&run_input(&thread, &format!("r{n}"), json!([user])))
            .await;
        let events = reply.events();
        assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED", "turn {n}");
        assert!(
            !types(&events).contains(&"MESSAGES_SNAPSHOT"),
            "turn {n}: {:?}",
            types(&events)
        );
        let (read_bytes, read_items) = read_figures(&lines, n).await;
        costs.push(RunCost {
            read_bytes,
            read_items,
            response_bytes: reply.body.len(),
        });
    }
    let bytes = |cost: &RunCost| cost.read_bytes as f64;
    let items = |cost: &RunCost| cost.read_items as f64;
    let sent = |cost: &RunCost| cost.response_bytes as f64;
    let (early, late) = (11..=20, 141..=150);
    println!(
        "an incremental client, mean per run: DynamoDB bytes read {:.0} at turns 11-20, {:.0} at \
         141-150; items read {:.1}, {:.1}; response bytes {:.0}, {:.0}",
        mean(&costs, early.clone(), bytes),
        mean(&costs, late.clone(), bytes),
        mean(&costs, early.clone(), items),
        mean(&costs, late.clone(), items),
        mean(&costs, early.clone(), sent),
        mean(&costs, late.clone(), sent),
    );
    assert!(
        mean(&costs, late.clone(), bytes) <= 1.5 * mean(&costs, early.clone(), bytes),
        "bytes read grew with the thread"
    );
    assert!(
        mean(&costs, late, sent) <= 1.5 * mean(&costs, early, sent),
        "responses grew with the thread"
    );
    // The thread was compacted: the tail the runs read is bounded by the window.
    let stored = app.get(&format!("/threads/{thread}?limit=1")).await.json();
    assert!(stored["checkpoint"]["coversMessages"].as_u64().unwrap() > 0);

    // A client that holds the thread only up to turn 100's message is behind: it gets all of it.
    let held = json!({"id": "u100", "role": "user", "content": message_text(100)});
    let next = json!({"id": "u151", "role": "user", "content": message_text(151)});
    let asked_before = model.seen().len();
    let events = app
        .run(&run_input(&thread, "r151", json!([held, next])))
        .await
        .events();
    assert_eq!(events.last().unwrap()["type"], "RUN_FINISHED");
    let snapshot = events
        .iter()
        .find(|event| event["type"] == "MESSAGES_SNAPSHOT")
        .expect("a snapshot for the client that is behind");
    let ids: Vec<&str> = snapshot["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids.len(),
        151 * 2 - 1,
        "every message, the new one included"
    );
    assert_eq!((ids[0], *ids.last().unwrap()), ("u1", "u151"));
    // Its run still starts from the thread's checkpoint: the summary stands, nothing is
    // summarised again from the start.
    let asked = &model.seen()[asked_before..];
    let summary_calls = asked.iter().filter(|seen| seen.is_summary()).count();
    assert!(summary_calls <= 1, "{summary_calls} summary calls");
    let main = asked.iter().rev().find(|seen| !seen.is_summary()).unwrap();
    assert!(main.text().contains("Summary of the earlier part"));
}
