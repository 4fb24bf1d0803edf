//! Resume time of long logs through the real binary (issue 14: resume was
//! quadratic, 4.2 s for 50 MB against 0.08 s for 12 MB). For each size a
//! finished session's log is generated (turns of a prompt, a `read_file`
//! call of one of 50 workspace files with a ~2 KB result, an answer), then
//! `keel exec --json resume ID` is timed: it reads the log, rebuilds the
//! session, restores read-before-write memory, appends `session_resumed`
//! and `session_ended`, and exits (no prompt, no open turn: the model is
//! never called). Target: 100 MB in < 2 s.
//!
//! Run: `cargo bench --bench resume` (sizes in MB as arguments, default
//! `12 50 100`). Under `cargo test --all-targets` (no `--bench` flag) it
//! resumes one 1 MB log once, as a smoke test.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use keel::protocol::{
    EventRecord, Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolClass, ToolResult,
    TurnOutcome, Usage,
};

const FILES: usize = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = match (sizes.is_empty(), full) {
        (false, _) => sizes,
        (true, true) => vec![12, 50, 100],
        (true, false) => vec![1],
    };
    let rounds = if full { 3 } else { 1 };
    let root = std::env::temp_dir().join(format!("keel-resume-bench-{}", std::process::id()));
    let mut out = std::io::stdout().lock();
    for mb in sizes {
        let home = root.join(format!("home-{mb}"));
        let work = root.join(format!("work-{mb}"));
        std::fs::create_dir_all(home.join("sessions"))?;
        std::fs::create_dir_all(work.join("src"))?;
        for n in 0..FILES {
            std::fs::write(work.join(format!("src/module_{n}.rs")), "fn main() {}\n")?;
        }
        let id = "01900000-0000-7000-8000-000000000000";
        let log = home.join("sessions").join(format!("{id}.jsonl"));
        let events = write_log(&log, &work, mb * 1_000_000)?;
        let bytes = std::fs::metadata(&log)?.len();
        let mut best = f64::MAX;
        for _ in 0..rounds {
            let started = Instant::now();
            let output = Command::new(env!("CARGO_BIN_EXE_keel"))
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", &home)
                .env("KEEL_HOME", &home)
                .current_dir(&work)
                .args(["exec", "--json", "--provider", "openai-chat", "--model", "m"])
                .args(["--base-url", "http://127.0.0.1:9/v1", "resume", id])
                .output()?;
            let elapsed = started.elapsed().as_secs_f64();
            if !output.status.success() {
                return Err(
                    format!("resume failed: {}", String::from_utf8_lossy(&output.stdout)).into()
                );
            }
            best = best.min(elapsed);
        }
        writeln!(
            out,
            "resume {:.1} MB ({events} events): {:.0} ms (best of {rounds})",
            bytes as f64 / 1e6,
            best * 1000.0
        )?;
    }
    std::fs::remove_dir_all(&root)?;
    Ok(())
}

/// Writes a finished session of at least `bytes`; returns the event count.
fn write_log(path: &Path, work: &Path, bytes: u64) -> Result<u64, Box<dyn std::error::Error>> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut written = 0u64;
    let mut seq = 0u64;
    let mut line = Vec::new();
    let started = SessionEvent::SessionStarted {
        session_id: "01900000-0000-7000-8000-000000000000".into(),
        cwd: work.display().to_string(),
        provider: "openai-chat".into(),
        model: "m".into(),
        keel_version: "0.1.0".into(),
        git_head: None,
        mode: Some(keel::protocol::ApprovalMode::Ask),
        parent: None,
    };
    let mut events = vec![started];
    let mut cycle = 0usize;
    while written < bytes {
        if events.is_empty() {
            events = turn(cycle);
            cycle += 1;
        }
        let event = events.remove(0);
        line.clear();
        let record = EventRecord { v: 1, seq, ts: "2026-12-01T00:00:00.000Z".into(), event };
        serde_json::to_writer(&mut line, &record)?;
        line.push(b'\n');
        file.write_all(&line)?;
        written += line.len() as u64;
        seq += 1;
    }
    for event in events {
        let record = EventRecord { v: 1, seq, ts: "2026-12-01T00:00:00.000Z".into(), event };
        serde_json::to_writer(&mut file, &record)?;
        file.write_all(b"\n")?;
        seq += 1;
    }
    file.flush()?;
    Ok(seq)
}

/// One finished turn with a `read_file` call.
fn turn(cycle: usize) -> Vec<SessionEvent> {
    let turn = u32::try_from(cycle + 1).unwrap_or(u32::MAX);
    let id = format!("call_{cycle}");
    let call = ToolCall {
        call_id: id.clone(),
        name: "read_file".into(),
        arguments: format!("{{\"path\":\"src/module_{}.rs\"}}", cycle % FILES),
        item_id: None,
        provider_data: None,
    };
    let usage = Usage { input_tokens: 1200, output_tokens: 40, ..Usage::default() };
    vec![
        SessionEvent::TurnStarted { turn },
        SessionEvent::UserMessage {
            text: format!("please look at module {cycle} and fix it"),
            images: Vec::new(),
            queued: None,
        },
        SessionEvent::ModelResponse {
            step: 1,
            response: ModelResponse {
                items: vec![
                    Item::Assistant { text: "Let me read the file first.".into() },
                    Item::ToolCall(call.clone()),
                ],
                usage,
                stop_reason: StopReason::ToolUse,
                response_id: None,
            },
            cost_usd: None,
            estimated_tokens: None,
            estimated_cost_usd: None,
        },
        SessionEvent::ToolCallStarted { call, class: ToolClass::ReadOnly },
        SessionEvent::ToolCallFinished {
            result: ToolResult::ok(id, "fn main() {\n    println!(\"hello\");\n}\n".repeat(50)),
            meta: keel::protocol::ToolMeta::new(),
        },
        SessionEvent::ModelResponse {
            step: 2,
            response: ModelResponse {
                items: vec![Item::Assistant { text: "Done: the module is fixed.".into() }],
                usage,
                stop_reason: StopReason::EndTurn,
                response_id: None,
            },
            cost_usd: None,
            estimated_tokens: None,
            estimated_cost_usd: None,
        },
        SessionEvent::TurnCompleted { turn, outcome: TurnOutcome::Completed, usage },
    ]
}
