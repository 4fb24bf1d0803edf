//! Flat memory and idle CPU of the TUI over hours (issue 42): the real
//! `keel` TUI (release binary, the jail around every command) in a tmux
//! pane runs a busy first minute of turns, sits idle at its prompt, then
//! runs turns again; `/proc/PID/status` `VmRSS` and `/proc/PID/stat` CPU
//! are sampled every second.
//!
//! Each turn is a typed prompt answered by `STEPS_PER_TURN` scripted
//! shell calls (`echo turn-T-step-K`) and then a text answer; the mock
//! counts a turn's steps from the request itself (tool results after the
//! last user message), so turns are independent and a compaction does not
//! confuse it. Each response reports a prompt the size of its request and
//! the session has a 128k window, so keel compacts as against a real
//! server. A turn starts only after the previous answer arrived: the
//! driver waits on the mock, never on a timer.
//!
//! Reports the first minute's largest RSS, the largest during the idle
//! phase and during the second busy phase against it (goal: within 10 MB),
//! keel's CPU over the idle phase (goal: ~0), and CPU per step in each
//! busy phase.
//!
//! Run: `cargo bench --bench tui_soak` (2 hours: 60 s busy, 105 min idle,
//! 14 min busy), or `-- BUSY IDLE BUSY` in seconds. Needs tmux; under
//! `cargo test` a smoke run of a few seconds that proves the driver works.

#[path = "support/chat_mock.rs"]
mod chat_mock;
#[path = "support/chat_sse.rs"]
mod chat_sse;

use std::io::Write;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chat_mock::procfs;
use chat_sse::{answer, prompt_tokens_of, tool_calls};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The window the session runs with (a 128k model's).
const WINDOW: u64 = 128_000;
/// Shell calls in every turn before its answer.
const STEPS_PER_TURN: u64 = 20;
/// The answer that ends a turn (also what the screen shows).
const TURN_DONE: &str = "Turn done: ran the shell steps.";
/// Longest wait for one turn's answer before the run is declared broken.
const TURN_DEADLINE: Duration = Duration::from_secs(300);

/// A scripted model whose turns are counted from the request.
#[derive(Clone, Default)]
struct TurnMock {
    turns_done: Arc<AtomicU64>,
    steps_done: Arc<AtomicU64>,
}

impl Respond for TurnMock {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let prompt_tokens = prompt_tokens_of(request.body.len());
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let text = String::from_utf8_lossy(&request.body);
        let sse = if text.contains("You are compacting") {
            answer("## Goal and success criteria\nRun the benchmark turns.\n", prompt_tokens)
        } else {
            let since_user = messages
                .iter()
                .rev()
                .take_while(|m| m["role"] != "user")
                .filter(|m| m["role"] == "tool")
                .count() as u64;
            if since_user < STEPS_PER_TURN {
                let step = self.steps_done.fetch_add(1, Ordering::SeqCst) + 1;
                let args = json!({"command": format!("echo step-{step}")});
                tool_calls(&[("shell", args)], step, prompt_tokens)
            } else {
                self.turns_done.fetch_add(1, Ordering::SeqCst);
                answer(TURN_DONE, prompt_tokens)
            }
        };
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(sse)
    }
}

/// One sample of the session.
#[derive(Clone, Copy)]
struct Sample {
    at: f64,
    phase: Phase,
    steps: u64,
    rss_kib: u64,
    /// keel's own CPU seconds, and its reaped children's.
    cpu: (f64, f64),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    FirstBusy,
    Idle,
    SecondBusy,
}

/// The tmux server of the run (its own socket), killed on drop.
struct Pane {
    socket: String,
}

impl Pane {
    fn tmux(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .map_err(|e| format!("tmux: {e}"))?;
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn pid(&self) -> Result<u32, String> {
        let pid = self.tmux(&["display-message", "-p", "-t", "soak", "#{pane_pid}"])?;
        pid.trim().parse().map_err(|_| format!("no pane pid in {pid:?}"))
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let arg = |n: usize, default: u64| -> u64 {
        let numbers: Vec<u64> = std::env::args().filter_map(|a| a.parse().ok()).collect();
        numbers.get(n).copied().unwrap_or(default)
    };
    let phases = match full {
        true => (arg(0, 60), arg(1, 105 * 60), arg(2, 14 * 60)),
        false => (arg(0, 1), arg(1, 1), arg(2, 1)),
    };
    if Command::new("tmux").arg("-V").output().is_err() {
        let _ = writeln!(std::io::stdout(), "tui_soak: skipped, tmux is not installed");
        return;
    }
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => return exit_with(&format!("runtime: {error}")),
        };
    if let Err(error) = runtime.block_on(run(phases)) {
        exit_with(&error);
    }
}

async fn run((first_busy, idle, second_busy): (u64, u64, u64)) -> Result<(), String> {
    let mock = TurnMock::default();
    let server = MockServer::builder().disable_request_recording().start().await;
    Mock::given(method("POST")).respond_with(mock.clone()).mount(&server).await;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = chat_mock::fixture(dir.path())?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let pane = Pane { socket: format!("keel-soak-{}", std::process::id()) };
    let command = format!(
        "exec env -i PATH=/usr/local/bin:/usr/bin:/bin HOME='{home}' KEEL_HOME='{home}/.keel' \
         LANG=C.UTF-8 TERM=xterm-256color OPENAI_API_KEY=sk-mock-not-a-key '{keel}' --full-auto \
         --provider openai-chat --model mock-model --base-url '{url}/v1' \
         -c context.window={WINDOW} -c max_steps=1000000",
        home = home.display(),
        keel = env!("CARGO_BIN_EXE_keel"),
        url = server.uri(),
    );
    let repo_dir = repo.display().to_string();
    pane.tmux(&["-f", "/dev/null", "new-session", "-d", "-x", "160", "-y", "50", "-s", "soak"])
        .and_then(|_| pane.tmux(&["set-option", "-s", "escape-time", "0"]))
        .and_then(|_| {
            pane.tmux(&["respawn-pane", "-k", "-t", "soak", "-c", &repo_dir, &command])
        })?;
    wait_for_screen(&pane, "Ask keel").await?;
    let pid = pane.pid()?;
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "keel TUI pid {pid}: busy {first_busy} s, idle {idle} s, busy {second_busy} s; \
         {STEPS_PER_TURN} shell steps a turn"
    );
    for (phase, secs) in
        [(Phase::FirstBusy, first_busy), (Phase::Idle, idle), (Phase::SecondBusy, second_busy)]
    {
        let until = Instant::now() + Duration::from_secs(secs);
        let mut next_sample = Instant::now();
        loop {
            if Instant::now() >= next_sample {
                let sample = sample(pid, phase, started, &mock)?;
                if samples.len() % 600 == 0 {
                    print_sample(&mut out, &sample);
                }
                samples.push(sample);
                next_sample += Duration::from_secs(1);
            }
            if Instant::now() >= until {
                break;
            }
            match phase {
                Phase::Idle => tokio::time::sleep(Duration::from_millis(200)).await,
                _ => run_turn(&pane, &mock).await?,
            }
        }
        let _ = writeln!(out, "end of {phase:?} at {:.0} s", started.elapsed().as_secs_f64());
    }
    report(&mut out, &samples, mock.turns_done.load(Ordering::SeqCst));
    Ok(())
}

/// Types one prompt and waits until the mock has answered its turn.
async fn run_turn(pane: &Pane, mock: &TurnMock) -> Result<(), String> {
    let before = mock.turns_done.load(Ordering::SeqCst);
    pane.tmux(&["send-keys", "-t", "soak", "-l", "Run the benchmark turn."])?;
    pane.tmux(&["send-keys", "-t", "soak", "Enter"])?;
    let deadline = Instant::now() + TURN_DEADLINE;
    while mock.turns_done.load(Ordering::SeqCst) == before {
        if Instant::now() > deadline {
            let screen = pane.tmux(&["capture-pane", "-p", "-t", "soak"])?;
            return Err(format!("a turn never ended; the screen:\n{screen}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The answer was sent; the TUI shows it and returns to its prompt.
    wait_for_screen(pane, TURN_DONE).await
}

async fn wait_for_screen(pane: &Pane, text: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let screen = pane.tmux(&["capture-pane", "-p", "-t", "soak"])?;
        if screen.contains(text) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("`{text}` never appeared; the screen:\n{screen}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn sample(pid: u32, phase: Phase, started: Instant, mock: &TurnMock) -> Result<Sample, String> {
    let gone = || format!("keel (pid {pid}) is gone");
    Ok(Sample {
        at: started.elapsed().as_secs_f64(),
        phase,
        steps: mock.steps_done.load(Ordering::SeqCst),
        rss_kib: procfs::status_field(pid, "VmRSS").ok_or_else(gone)?,
        cpu: procfs::cpu_seconds(&pid.to_string()).ok_or_else(gone)?,
    })
}

fn print_sample(out: &mut impl Write, s: &Sample) {
    let _ = writeln!(
        out,
        "{:>6.0} s {:?} {:>6} steps {:>7.1} MiB  cpu {:.2} s + jails {:.2} s",
        s.at,
        s.phase,
        s.steps,
        mib(s.rss_kib),
        s.cpu.0,
        s.cpu.1
    );
}

fn report(out: &mut impl Write, samples: &[Sample], turns: u64) {
    let of = |phase: Phase| samples.iter().filter(move |s| s.phase == phase);
    let most = |phase: Phase| of(phase).map(|s| s.rss_kib).max().unwrap_or(0);
    let first = most(Phase::FirstBusy);
    let _ = writeln!(out, "\n{turns} turns");
    let _ = writeln!(out, "VmRSS, largest: first minute {:.1} MiB", mib(first));
    for phase in [Phase::Idle, Phase::SecondBusy] {
        let _ = writeln!(
            out,
            "VmRSS, largest: {phase:?} {:.1} MiB ({:+.1} MiB against the first minute)",
            mib(most(phase)),
            mib(most(phase)) - mib(first)
        );
    }
    if let (Some(a), Some(b)) = (of(Phase::Idle).next(), of(Phase::Idle).next_back()) {
        let _ = writeln!(
            out,
            "CPU while idle: {:.0} ms over {:.0} s (keel's own)",
            (b.cpu.0 - a.cpu.0) * 1000.0,
            b.at - a.at
        );
    }
    for phase in [Phase::FirstBusy, Phase::SecondBusy] {
        let (Some(a), Some(b)) = (of(phase).next(), of(phase).next_back()) else { continue };
        let steps = b.steps.saturating_sub(a.steps);
        if steps == 0 {
            continue;
        }
        let per = |x: f64, y: f64| (y - x) * 1000.0 / steps as f64;
        let _ = writeln!(
            out,
            "CPU per step, {phase:?} ({steps} steps): keel {:.2} ms + jails {:.2} ms",
            per(a.cpu.0, b.cpu.0),
            per(a.cpu.1, b.cpu.1)
        );
    }
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn exit_with(message: &str) {
    let _ = writeln!(std::io::stderr(), "tui_soak bench: {message}");
    std::process::exit(1);
}
