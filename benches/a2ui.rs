//! What A2UI surfaces cost: the validation of a 50-component surface (the run loop checks every
//! render call before painting it), and the prompt the render tool adds, in tokens (about four
//! characters each): with CopilotKit 1.74's own catalog as its page sends it, with the basic
//! catalog, and when the client cannot paint; beside what CopilotKit's page sends for A2UI on
//! every run, which the function leaves out of the model's prompt.
//!
//! `cargo bench --bench a2ui` (about 15 s). The prompt figures are printed first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agui_lambda::testing::genui::a2ui::{
    Catalog, Mode, check, description, estimated_tokens, model_context, offer,
};
use agui_lambda::testing::protocol::input::ContextEntry;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::Duration;

/// CopilotKit 1.74's four A2UI context entries with the basic catalog, as its page sends them.
fn copilotkit_context() -> Vec<ContextEntry> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/a2ui-v0.9/copilotkit-1.74-a2ui-context.json"
    );
    let entries: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    entries
        .iter()
        .map(|entry| ContextEntry {
            description: entry["description"].as_str().unwrap().to_owned(),
            value: entry["value"].as_str().unwrap().to_owned(),
        })
        .collect()
}

/// A surface of 50 components: a column of eight cards, each a heading, a text field bound to
/// the data and a labelled button that sends it.
fn surface() -> (Vec<Value>, Value) {
    let rows = 8;
    let mut components = vec![json!({"id": "root", "component": "Column",
        "children": (0..rows).map(|row| format!("card{row}")).collect::<Vec<_>>()})];
    for row in 0..rows {
        components.push(
            json!({"id": format!("card{row}"), "component": "Card", "child": format!("col{row}")}),
        );
        components.push(json!({"id": format!("col{row}"), "component": "Column",
            "children": [format!("title{row}"), format!("field{row}"), format!("send{row}")]}));
        components.push(json!({"id": format!("title{row}"), "component": "Text", "text": format!("Item {row}"), "variant": "h3"}));
        components.push(
            json!({"id": format!("field{row}"), "component": "TextField", "label": "Value",
            "value": {"path": format!("/items/{row}")}}),
        );
        components.push(json!({"id": format!("send{row}"), "component": "Button", "child": format!("label{row}"),
            "action": {"event": {"name": "save", "context": {"value": {"path": format!("/items/{row}")}}}}}));
        components.push(json!({"id": format!("label{row}"), "component": "Text", "text": "Save"}));
    }
    components.push(
        json!({"id": "footer", "component": "Text", "text": "Saved values stay on the server."}),
    );
    components[0]["children"]
        .as_array_mut()
        .unwrap()
        .push(json!("footer"));
    (components, json!({"items": vec![""; rows]}))
}

fn print_prompt_figures() {
    let copilotkit = copilotkit_context();
    let sent: u64 = copilotkit
        .iter()
        .map(|entry| estimated_tokens(&entry.description) + estimated_tokens(&entry.value))
        .sum();
    let bytes: usize = copilotkit
        .iter()
        .map(|e| e.description.len() + e.value.len())
        .sum();
    let theirs = offer(Mode::Auto, &copilotkit, true).unwrap();
    let basic = description(&Catalog::basic());
    let assistant_ui = offer(Mode::AssistantUi, &[], false).unwrap();
    println!("A2UI prompt, tokens at about four characters each:");
    println!(
        "  CopilotKit 1.74's A2UI context as its page sends it: {bytes} bytes, ~{sent} tokens a run; left out of the prompt: {} entries kept of {}",
        model_context(&copilotkit).len(),
        copilotkit.len()
    );
    println!(
        "  render tool with CopilotKit's catalog: {} chars, ~{} tokens",
        description(&theirs.catalog).len(),
        estimated_tokens(&description(&theirs.catalog))
    );
    println!(
        "  render tool with the basic catalog: {} chars, ~{} tokens",
        basic.len(),
        estimated_tokens(&basic)
    );
    println!(
        "  render tool for assistant-ui (9 components): ~{} tokens",
        estimated_tokens(&description(&assistant_ui.catalog))
    );
    println!(
        "  a client that cannot paint: {} (no tool offered)",
        offer(Mode::Auto, &[], false).map_or(0, |_| 1)
    );
}

fn validation(c: &mut Criterion) {
    print_prompt_figures();
    let basic = Catalog::basic();
    let (components, data) = surface();
    assert_eq!(components.len(), 50);
    assert!(check(&components, &data, &basic).errors.is_empty());
    let mut group = c.benchmark_group("a2ui");
    group.bench_function("validate_50_components", |b| {
        b.iter(|| black_box(check(black_box(&components), black_box(&data), &basic)));
    });
    let copilotkit = offer(Mode::Auto, &copilotkit_context(), true).unwrap();
    group.bench_function("validate_50_components_copilotkit_catalog", |b| {
        b.iter(|| {
            black_box(check(
                black_box(&components),
                black_box(&data),
                &copilotkit.catalog,
            ))
        });
    });
    let context = copilotkit_context();
    group.bench_function("read_copilotkit_catalog_entry", |b| {
        b.iter(|| black_box(offer(Mode::Auto, black_box(&context), true)));
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

criterion_group! { name = benches; config = config(); targets = validation }
criterion_main!(benches);
