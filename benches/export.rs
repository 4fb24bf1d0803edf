//! Export time of a long session through the real binary (issue 38:
//! target ≤ 1 s for 300 steps). A finished session of STEPS model steps
//! is generated (10 turns; each step a response with text and a tool
//! call, alternately a `shell` command with ~4 KB of output, an
//! `edit_file` with a diff and a `read_file` of ~2 KB, with policy
//! decisions and approvals), then `keel export ID --format F -o FILE` is
//! timed for md, html and json, best of 3, with a known secret in the
//! environment so the mask is not empty.
//!
//! Run: `cargo bench --bench export` (steps as an argument, default
//! 300). Under `cargo test --all-targets` (no `--bench`) it exports a
//! 20-step session once per format, as a smoke test.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use keel::protocol::{
    ApprovalScope, EventRecord, Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolClass,
    ToolMeta, ToolResult, TurnOutcome, Usage,
};

const TURNS: usize = 10;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let full = std::env::args().any(|a| a == "--bench");
    let steps = std::env::args().skip(1).find_map(|a| a.parse().ok());
    let steps: usize = steps.unwrap_or(if full { 300 } else { 20 });
    let rounds = if full { 3 } else { 1 };
    let root = std::env::temp_dir().join(format!("keel-export-bench-{}", std::process::id()));
    let home = root.join("home");
    let work = root.join("work");
    std::fs::create_dir_all(home.join("sessions"))?;
    std::fs::create_dir_all(&work)?;
    let id = "01900000-0000-7000-8000-0000000000e1";
    let log = home.join("sessions").join(format!("{id}.jsonl"));
    let events = write_log(&log, &work, steps)?;
    let bytes = std::fs::metadata(&log)?.len();
    let mut out = std::io::stdout().lock();
    for format in ["md", "html", "json"] {
        let file = root.join(format!("export.{format}"));
        let mut best = f64::MAX;
        for _ in 0..rounds {
            let started = Instant::now();
            let output = Command::new(env!("CARGO_BIN_EXE_keel"))
                .env_clear()
                .env("PATH", std::env::var("PATH").unwrap_or_default())
                .env("HOME", &home)
                .env("KEEL_HOME", &home)
                .env("GITHUB_TOKEN", "bench-known-secret-value")
                .current_dir(&work)
                .args(["export", id, "--format", format, "-o"])
                .arg(&file)
                .output()?;
            let elapsed = started.elapsed().as_secs_f64();
            if !output.status.success() {
                return Err(
                    format!("export failed: {}", String::from_utf8_lossy(&output.stderr)).into()
                );
            }
            best = best.min(elapsed);
        }
        let size = std::fs::metadata(&file)?.len();
        writeln!(
            out,
            "export {steps} steps ({events} events, {:.1} MB log) as {format}: {:.0} ms \
             (best of {rounds}), {:.1} MB out",
            bytes as f64 / 1e6,
            best * 1000.0,
            size as f64 / 1e6
        )?;
    }
    std::fs::remove_dir_all(&root)?;
    Ok(())
}

/// Writes a finished session of `steps` model steps; returns the event count.
fn write_log(path: &Path, work: &Path, steps: usize) -> Result<u64, Box<dyn std::error::Error>> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut seq = 0u64;
    let mut write = |event: SessionEvent| -> Result<(), Box<dyn std::error::Error>> {
        let record = EventRecord { v: 1, seq, ts: "2026-12-02T00:00:00.000Z".into(), event };
        serde_json::to_writer(&mut file, &record)?;
        file.write_all(b"\n")?;
        seq += 1;
        Ok(())
    };
    write(SessionEvent::SessionStarted {
        session_id: "01900000-0000-7000-8000-0000000000e1".into(),
        cwd: work.display().to_string(),
        provider: "openai-chat".into(),
        model: "m".into(),
        keel_version: "0.1.0".into(),
        git_head: None,
        mode: Some(keel::protocol::ApprovalMode::Ask),
        parent: None,
    })?;
    let usage = Usage { input_tokens: 1200, output_tokens: 40, ..Usage::default() };
    let per_turn = steps.div_ceil(TURNS).max(1);
    let mut step = 0usize;
    for turn in 1..=TURNS {
        let turn = u32::try_from(turn)?;
        write(SessionEvent::TurnStarted { turn })?;
        write(SessionEvent::UserMessage {
            text: format!("turn {turn}: fix the failing tests"),
            images: Vec::new(),
            queued: None,
        })?;
        for _ in 0..per_turn {
            if step >= steps {
                break;
            }
            for event in step_events(step, usage) {
                write(event)?;
            }
            step += 1;
        }
        write(SessionEvent::TurnCompleted { turn, outcome: TurnOutcome::Completed, usage })?;
    }
    file.flush()?;
    Ok(seq)
}

/// One model step: a response with a call, its decision, approval and result.
fn step_events(step: usize, usage: Usage) -> Vec<SessionEvent> {
    let id = format!("call_{step}");
    let (name, arguments, output) = match step % 3 {
        0 => (
            "shell",
            format!("{{\"command\":\"cargo test -p crate_{step}\"}}"),
            "test module::case ... ok\n".repeat(160),
        ),
        1 => (
            "edit_file",
            format!("{{\"path\":\"src/m{step}.rs\",\"old_string\":\"a\",\"new_string\":\"b\"}}"),
            format!(
                "edited src/m{step}.rs (1 replacement)\n--- a/src/m{step}.rs\n+++ b/src/m{step}.rs\n\
                 @@ -1,3 +1,3 @@\n fn main() {{\n-    a();\n+    b();\n }}"
            ),
        ),
        _ => (
            "read_file",
            format!("{{\"path\":\"src/m{step}.rs\"}}"),
            "fn main() {\n    println!(\"<hello & goodbye>\");\n}\n".repeat(40),
        ),
    };
    let call = ToolCall::new(&id, name, arguments);
    vec![
        SessionEvent::ModelResponse {
            step: u32::try_from(step).unwrap_or(u32::MAX),
            response: ModelResponse {
                items: vec![
                    Item::Assistant { text: format!("Step {step}: next I run {name}.") },
                    Item::ToolCall(call.clone()),
                ],
                usage,
                stop_reason: StopReason::ToolUse,
                response_id: None,
            },
            cost_usd: Some(0.001),
            estimated_tokens: None,
            estimated_cost_usd: None,
        },
        SessionEvent::PolicyDecision {
            call_id: id.clone(),
            decision: "prompt".into(),
            matched_rules: Vec::new(),
            reason: Some("not known to be read-only".into()),
        },
        SessionEvent::Approval {
            call_id: id.clone(),
            approved: true,
            scope: ApprovalScope::Once,
            note: None,
            prefix: None,
            path: None,
            tool: None,
        },
        SessionEvent::ToolCallStarted { call, class: ToolClass::Mutating },
        SessionEvent::ToolCallFinished {
            result: ToolResult::ok(id, output),
            meta: ToolMeta::command(Some(0), None),
        },
    ]
}
