//! Token estimates: how long building the encoder takes (once per process),
//! tokens per second on mixed code and prose, and the per-item estimate's
//! error against one exact count of the whole text (target under 2%).
//!
//! Run: `cargo bench --bench tokens` (release profile).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use keel::context::tokens::{PER_ITEM_OVERHEAD, count, estimate_items, warm_up};
use keel::protocol::{Item, ToolResult};

/// Source files and markdown of this repository, as a session's history
/// holds them.
fn corpus() -> Vec<String> {
    let files = [
        include_str!("../src/agent/step.rs"),
        include_str!("../src/policy/shell.rs"),
        include_str!("../src/llm/openai_responses.rs"),
        include_str!("../AGENTS.md"),
        include_str!("../README.md"),
        include_str!("../prompts/system.md"),
    ];
    files
        .iter()
        .flat_map(|text| {
            text.lines()
                .collect::<Vec<_>>()
                .chunks(40)
                .map(|lines| lines.join("\n"))
                .collect::<Vec<_>>()
        })
        .collect()
}

fn main() {
    let started = Instant::now();
    warm_up();
    let build = started.elapsed();
    let pieces = corpus();
    let bytes: usize = pieces.iter().map(String::len).sum();
    let rounds = if std::env::args().any(|a| a == "--bench") { 20 } else { 1 };
    let started = Instant::now();
    let mut tokens = 0;
    for _ in 0..rounds {
        tokens = pieces.iter().map(|piece| count(black_box(piece))).sum::<u64>();
    }
    let elapsed = started.elapsed() / rounds;
    let items: Vec<Item> = pieces
        .iter()
        .enumerate()
        .map(|(index, text)| Item::ToolResult(ToolResult::ok(format!("c{index}"), text.clone())))
        .collect();
    let estimate = estimate_items(&items) - PER_ITEM_OVERHEAD * items.len() as u64;
    let exact = count(&pieces.join("\n"));
    let error = (estimate as f64 - exact as f64).abs() / exact as f64 * 100.0;
    println!("token encoder (o200k_base) built in {:.1} ms", build.as_secs_f64() * 1e3);
    println!(
        "counted {tokens} tokens in {bytes} bytes: {:.2} ms, {:.1} M tokens/s, {:.1} MB/s",
        elapsed.as_secs_f64() * 1e3,
        tokens as f64 / elapsed.as_secs_f64() / 1e6,
        bytes as f64 / elapsed.as_secs_f64() / 1e6
    );
    println!("per-item estimate {estimate} vs exact {exact}: {error:.2}% off (target < 2%)");
    assert!(error < 2.0);
}
