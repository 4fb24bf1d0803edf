//! Session-log benchmarks (issue 5): appending one event without sync, and
//! resuming (streaming read + pure rebuild) a 100 000-event log, with the
//! peak memory of the resume against the memory the rebuilt state keeps.
//!
//! Run: `cargo run --release --example session_bench [EVENTS]`. Linux only
//! for the memory figures (`/proc/self/status`, `/proc/self/clear_refs`).

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Instant;

use keel::agent::{LoopConfig, Rebuilder};
use keel::policy::{ApprovalMode, PathContext, Policy, RuleSet};
use keel::protocol::{
    EventRecord, Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolClass, ToolResult,
    Usage,
};
use keel::session::{SessionLog, for_each_record};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let events: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let dir = std::env::temp_dir().join(format!("keel-session-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let append_ns = bench_append(&dir, 20_000)?;
    let path = dir.join("big.jsonl");
    let bytes = write_log(&path, events)?;
    reset_peak();
    let base = rss_kib("VmRSS");
    let start = Instant::now();
    let mut rebuilder = Rebuilder::new(config());
    let report = for_each_record(&path, |record| rebuilder.apply(record))?;
    let rebuilt = rebuilder.finish();
    let elapsed = start.elapsed();
    let peak = rss_kib("VmHWM").saturating_sub(base);
    let kept = rss_kib("VmRSS").saturating_sub(base);
    let mut out = std::io::stdout().lock();
    writeln!(out, "append (no sync): {append_ns:.0} ns/event")?;
    writeln!(
        out,
        "resume {events} events ({:.1} MiB log, {} items rebuilt, {} skipped): {:.0} ms",
        bytes as f64 / 1_048_576.0,
        rebuilt.state.items().len(),
        report.skipped(),
        elapsed.as_secs_f64() * 1000.0
    )?;
    writeln!(
        out,
        "memory: peak during resume {:.1} MiB, rebuilt state {:.1} MiB, ratio {:.2}",
        peak as f64 / 1024.0,
        kept as f64 / 1024.0,
        peak as f64 / kept.max(1) as f64
    )?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn config() -> LoopConfig {
    LoopConfig {
        model: "m".into(),
        prefix: keel::protocol::PrefixSections::default(),
        tools: Vec::new(),
        tool_classes: BTreeMap::from([("read_file".to_owned(), ToolClass::ReadOnly)]),
        policy: Policy::new(
            RuleSet::default(),
            ApprovalMode::Auto,
            PathContext::new("/h", "/w", "/w"),
        ),
        limits: keel::agent::Limits::with_max_steps(100),
        pricing: keel::context::Pricing::default(),
        configured: keel::agent::ConfiguredModel {
            model: "m".into(),
            pricing: keel::context::Pricing::default(),
            one_hour_cache: false,
        },
        context_window: None,
        max_output_tokens: None,
        compact_threshold: 0.85,
        token_scale: keel::context::tokens::TokenScale::IDENTITY,
        post_tool_hooks: false,
        pre_tool_hooks: false,
        agent_classes: BTreeMap::new(),
        tool_scope: None,
        walls: Default::default(),
        strict_tools: None,
    }
}

/// A repeating, realistically sized cycle: prompt, response with a call,
/// call started and finished, turn end.
fn event(n: usize) -> SessionEvent {
    let cycle = n / 7;
    let turn = u32::try_from(cycle + 1).unwrap_or(u32::MAX);
    let id = format!("call_{cycle}");
    let call = ToolCall {
        call_id: id.clone(),
        name: "read_file".into(),
        arguments: format!("{{\"path\":\"src/module_{n}.rs\"}}"),
        item_id: None,
        provider_data: None,
    };
    match n % 7 {
        0 => SessionEvent::TurnStarted { turn },
        1 => SessionEvent::UserMessage {
            text: format!("please look at module {n} and fix it"),
            images: Vec::new(),
            queued: None,
        },
        2 => SessionEvent::ModelResponse {
            step: 1,
            response: ModelResponse {
                items: vec![
                    Item::Assistant { text: "Let me read the file first.".into() },
                    Item::ToolCall(call),
                ],
                usage: Usage { input_tokens: 1200, output_tokens: 40, ..Usage::default() },
                stop_reason: StopReason::ToolUse,
                response_id: None,
            },
            cost_usd: None,
            estimated_tokens: None,
            estimated_cost_usd: None,
        },
        3 => SessionEvent::ToolCallStarted { call, class: ToolClass::ReadOnly },
        4 => SessionEvent::ToolCallFinished {
            result: ToolResult::ok(id, "fn main() {\n    println!(\"hello\");\n}\n".repeat(4)),
            meta: keel::protocol::ToolMeta::new(),
        },
        5 => SessionEvent::ModelResponse {
            step: 2,
            response: ModelResponse {
                items: vec![Item::Assistant { text: "Done: the module is fixed.".into() }],
                usage: Usage { input_tokens: 1300, output_tokens: 20, ..Usage::default() },
                stop_reason: StopReason::EndTurn,
                response_id: None,
            },
            cost_usd: None,
            estimated_tokens: None,
            estimated_cost_usd: None,
        },
        _ => SessionEvent::TurnCompleted {
            turn,
            outcome: keel::protocol::TurnOutcome::Completed,
            usage: Usage { input_tokens: 2500, output_tokens: 60, ..Usage::default() },
        },
    }
}

/// ns per `SessionLog::append` of events that need no sync.
fn bench_append(dir: &std::path::Path, count: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let mut log = SessionLog::create(dir, "append")?;
    let events: Vec<SessionEvent> =
        (0..).map(event).filter(|e| !e.needs_sync()).take(count).collect();
    let start = Instant::now();
    for event in events {
        log.append(event)?;
    }
    Ok(start.elapsed().as_nanos() as f64 / count as f64)
}

/// Writes `events` lines directly (no per-line syscalls); returns bytes.
fn write_log(path: &std::path::Path, events: usize) -> Result<u64, Box<dyn std::error::Error>> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    for seq in 0..events {
        let record = EventRecord {
            v: 1,
            seq: seq as u64,
            ts: "2026-11-29T20:00:00.000Z".into(),
            event: event(seq),
        };
        serde_json::to_writer(&mut file, &record)?;
        file.write_all(b"\n")?;
    }
    file.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// Resets the peak-RSS counter (Linux: write 5 to clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| {
            line.strip_prefix(field)?
                .trim_start_matches(':')
                .trim()
                .strip_suffix(" kB")?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}
