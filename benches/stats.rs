//! `keel stats` over many session logs through the real binary (issue 41:
//! ≤ 300 ms for 1 000 logs). Generates N finished sessions of 10 turns
//! each (a prompt, a `read_file` call with a ~2 KB result, an answer, with
//! usage and cost), then times `keel stats --json`: cold (every log read
//! once, the index written) and warm (the index holds; the logs are only
//! listed and stat'ed), best of the rounds.
//!
//! Run: `cargo bench --bench stats` (session counts as arguments, default
//! `1000`). Under `cargo test --all-targets` (no `--bench` flag) it runs
//! 20 sessions once, as a smoke test.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use keel::protocol::{
    EventRecord, Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolClass, ToolResult,
    TurnOutcome, Usage,
};

const TURNS: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let full = std::env::args().any(|a| a == "--bench");
    let counts: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let counts = match (counts.is_empty(), full) {
        (false, _) => counts,
        (true, true) => vec![1_000],
        (true, false) => vec![20],
    };
    let rounds = if full { 5 } else { 1 };
    let root = std::env::temp_dir().join(format!("keel-stats-bench-{}", std::process::id()));
    let mut out = std::io::stdout().lock();
    for sessions in counts {
        let home = root.join(format!("home-{sessions}"));
        std::fs::create_dir_all(home.join("sessions"))?;
        let mut bytes = 0;
        for n in 0..sessions {
            let id = format!("01900000-0000-7000-8000-{n:012}");
            let log = home.join("sessions").join(format!("{id}.jsonl"));
            bytes += write_log(&log, &id, n)?;
        }
        let cold = time_stats(&home, sessions)?;
        let mut warm = f64::MAX;
        for _ in 0..rounds {
            warm = warm.min(time_stats(&home, sessions)?);
        }
        writeln!(
            out,
            "stats over {sessions} logs ({:.1} MB): cold {:.0} ms, warm {:.0} ms (best of {rounds})",
            bytes as f64 / 1e6,
            cold * 1000.0,
            warm * 1000.0
        )?;
    }
    std::fs::remove_dir_all(&root)?;
    Ok(())
}

fn time_stats(home: &Path, sessions: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("KEEL_HOME", home)
        .args(["stats", "--json"])
        .output()?;
    let elapsed = started.elapsed().as_secs_f64();
    if !output.status.success() {
        return Err(format!("stats failed: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    let report: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let counted = report["total"]["sessions"].as_u64().unwrap_or(0);
    if counted != sessions as u64 {
        return Err(format!("stats counted {counted} sessions of {sessions}").into());
    }
    Ok(elapsed)
}

/// Writes a finished session; returns its size in bytes.
fn write_log(path: &Path, id: &str, n: usize) -> Result<u64, Box<dyn std::error::Error>> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut events = vec![SessionEvent::SessionStarted {
        session_id: id.into(),
        cwd: format!("/work/project-{}", n % 7),
        provider: "openai".into(),
        model: if n.is_multiple_of(3) { "gpt-5-mini" } else { "gpt-5" }.into(),
        keel_version: "0.1.0".into(),
        git_head: None,
        mode: Some(keel::protocol::ApprovalMode::Ask),
        parent: None,
    }];
    for turn in 0..TURNS {
        events.extend(turn_events(turn));
    }
    events.push(SessionEvent::SessionEnded { reason: "exit".into() });
    let mut bytes = 0;
    for (seq, event) in events.into_iter().enumerate() {
        let ts = "2026-12-01T00:00:00.000Z".into();
        let record = EventRecord { v: 1, seq: seq as u64, ts, event };
        let line = serde_json::to_vec(&record)?;
        file.write_all(&line)?;
        file.write_all(b"\n")?;
        bytes += line.len() as u64 + 1;
    }
    file.flush()?;
    Ok(bytes)
}

fn turn_events(turn: usize) -> Vec<SessionEvent> {
    let usage = Usage {
        input_tokens: 5_000 + turn as u64 * 700,
        cached_input_tokens: 4_000,
        output_tokens: 120,
        ..Usage::default()
    };
    let id = format!("call_{turn}");
    let call = ToolCall::new(id.clone(), "read_file", format!("{{\"path\":\"src/m{turn}.rs\"}}"));
    let response = |items: Vec<Item>, stop_reason| SessionEvent::ModelResponse {
        step: 1,
        response: ModelResponse { items, usage, stop_reason, response_id: None },
        cost_usd: Some(0.004),
        estimated_tokens: None,
        estimated_cost_usd: None,
    };
    vec![
        SessionEvent::TurnStarted { turn: turn as u32 + 1 },
        SessionEvent::UserMessage {
            text: format!("look at module {turn}"),
            images: Vec::new(),
            queued: None,
        },
        response(vec![Item::ToolCall(call.clone())], StopReason::ToolUse),
        SessionEvent::ToolCallStarted { call, class: ToolClass::ReadOnly },
        SessionEvent::ToolCallFinished {
            result: ToolResult::ok(id, "fn main() { println!(\"hello\"); }\n".repeat(60)),
            meta: Default::default(),
        },
        response(vec![Item::Assistant { text: "looked".into() }], StopReason::EndTurn),
        SessionEvent::TurnCompleted {
            turn: turn as u32 + 1,
            outcome: TurnOutcome::Completed,
            usage,
        },
    ]
}
