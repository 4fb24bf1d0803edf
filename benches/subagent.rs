//! The cost of a subagent against a built-in tool call (issue 20), in
//! one process against a local mock model (wiremock, streaming real-shaped
//! Chat Completions SSE), so only keel's own work is measured:
//!
//! - `plain`: a turn the model answers at once (one request);
//! - `read`: the model calls `read_file`, then answers (two requests);
//! - `agent`: the model calls `agent explore`, whose child answers at once,
//!   then the parent answers (three requests).
//!
//! The overhead of a child over a tool call is `agent - read - plain`:
//! its own request is taken out, what is left is opening the child session
//! (its log, instructions with AGENTS.md and git status, config, tools),
//! running its loop and recording it. Memory: the peak RSS of a turn with
//! eight parallel `explore` children against one with eight `read_file`
//! calls (Linux: `/proc/self/status`, peak reset via `clear_refs`).
//!
//! Run: `cargo bench --bench subagent` (or `-- 50` for 50 rounds).

#[path = "support/chat_sse.rs"]
mod chat_sse;

use std::io::Write;
use std::time::{Duration, Instant};

use keel::config::{CliOverrides, Environment};
use keel::policy::ApprovalMode;
use keel::runtime::{EventSink, NonInteractiveApprover, RuntimeEvent, Session, SessionOptions};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use chat_sse::{answer, prompt_tokens_of, tool_calls};

struct Quiet;

impl EventSink for Quiet {
    fn emit(&mut self, _event: RuntimeEvent) {}
}

/// Answers by what the request is: a child answers at once; the parent
/// asks for the tool its prompt names once, then answers.
struct Router;

impl Respond for Router {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let system = messages.first().and_then(|m| m["content"].as_str()).unwrap_or("");
        // This turn's prompt: the session's history grows turn by turn.
        let prompt = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        let prompt_tokens = prompt_tokens_of(request.body.len());
        let answered = messages.last().is_some_and(|m| m["role"] == "tool");
        let sse = if !system.starts_with("You are keel") || answered || prompt == "plain" {
            answer("done", prompt_tokens)
        } else {
            let call = if prompt.starts_with("agent") {
                ("agent", json!({"agent": "explore", "description": "d", "prompt": "look"}))
            } else {
                ("read_file", json!({"path": "notes.txt"}))
            };
            let count = prompt.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(1);
            calls(call.0, &call.1, count, prompt_tokens)
        };
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(sse)
    }
}

fn calls(name: &str, args: &Value, count: usize, prompt_tokens: u64) -> String {
    let batch: Vec<(&str, Value)> = (0..count).map(|_| (name, args.clone())).collect();
    tool_calls(&batch, 0, prompt_tokens)
}

fn main() {
    // Commands run unconfined here (no launcher re-exec of this binary):
    // a re-exec would run the bench again.
    if std::env::args().any(|arg| arg == "sandbox-exec") {
        return exit_with("this bench is not a sandbox launcher");
    }
    let rounds: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(30);
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => return exit_with(&format!("runtime: {error}")),
        };
    if let Err(error) = runtime.block_on(run(rounds)) {
        exit_with(&error);
    }
}

async fn run(rounds: usize) -> Result<(), String> {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(Router).mount(&server).await;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = dir.path().join("repo");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
    let init = std::process::Command::new("git").args(["init", "-q"]).current_dir(&repo).status();
    if !init.is_ok_and(|status| status.success()) {
        return Err("git init failed".into());
    }
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    std::fs::write(repo.join("notes.txt"), "alpha\n").map_err(|e| e.to_string())?;
    let env = Environment {
        keel_home: home.clone(),
        cwd: repo.clone(),
        vars: [("HOME".to_owned(), home.display().to_string())].into(),
    };
    let overrides = CliOverrides {
        provider: Some("openai-chat".into()),
        base_url: Some(format!("{}/v1", server.uri())),
        model: Some("m".into()),
        // No sandbox launcher: the tools measured run in process anyway.
        set: vec!["sandbox.mode=full-access".into(), "sandbox.network=true".into()],
        ..CliOverrides::default()
    };
    let settings = keel::config::load(&env, &overrides).map_err(|e| e.to_string())?;
    let options = SessionOptions {
        approval: ApprovalMode::Auto,
        cwd: repo,
        date: "2026-12-01".into(),
        headless: true,
        script_answers: false,
    };
    let mut session =
        Session::start(&settings, options, Box::new(Quiet), Box::new(NonInteractiveApprover))
            .map_err(|e| e.to_string())?;
    let cancel = CancellationToken::new();
    // Warm up connections and caches once, and check each turn does what
    // it is meant to (a subagent's answer comes back as its result).
    for (prompt, requests) in [("plain", 1), ("read", 2), ("agent", 3)] {
        let before = server.received_requests().await.map_or(0, |r| r.len());
        turn(&mut session, prompt, &cancel).await?;
        let after = server.received_requests().await.map_or(0, |r| r.len());
        if after - before != requests {
            return Err(format!("`{prompt}` made {} requests, not {requests}", after - before));
        }
    }
    let mut medians = Vec::new();
    for prompt in ["plain", "read", "agent"] {
        let mut times = Vec::with_capacity(rounds);
        for _ in 0..rounds {
            times.push(turn(&mut session, prompt, &cancel).await?);
        }
        times.sort();
        medians.push(times[times.len() / 2]);
    }
    reset_peak();
    let base = rss_kib("VmRSS");
    turn(&mut session, "read 8", &cancel).await?;
    let reads = rss_kib("VmHWM").saturating_sub(base);
    reset_peak();
    let base = rss_kib("VmRSS");
    turn(&mut session, "agent 8", &cancel).await?;
    let children = rss_kib("VmHWM").saturating_sub(base);

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (plain, read, agent) = (ms(medians[0]), ms(medians[1]), ms(medians[2]));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "medians of {rounds} turns (ms): plain {plain:.2}, read_file {read:.2}, agent {agent:.2}"
    );
    let _ = writeln!(out, "a read_file call over a plain turn: {:.2} ms", read - plain);
    let _ = writeln!(
        out,
        "a subagent over a read_file call (its own request taken out): {:.2} ms",
        agent - read - plain
    );
    let _ = writeln!(
        out,
        "peak RSS growth of a turn: 8 read_file calls {reads} KiB, 8 parallel explore children {children} KiB ({:.0} KiB per child more)",
        children.saturating_sub(reads) as f64 / 8.0
    );
    Ok(())
}

/// Runs one turn; how long it took.
async fn turn(
    session: &mut Session,
    prompt: &str,
    cancel: &CancellationToken,
) -> Result<Duration, String> {
    let started = Instant::now();
    session.run_turn(prompt.to_owned(), cancel).await.map_err(|e| e.to_string())?;
    Ok(started.elapsed())
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
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn exit_with(message: &str) {
    let _ = writeln!(std::io::stderr(), "subagent bench: {message}");
    std::process::exit(1);
}
