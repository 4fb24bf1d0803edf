//! Start-up with a big catalog (issue 42): `hello` (one prompt, one
//! answer, no tools) of the real `keel exec` in an empty project against
//! the same with 400 agent types and 700 skills installed (user-level:
//! `$KEEL_HOME/agents/*.md`, `$KEEL_HOME/skills/*/SKILL.md`, so no trust
//! is involved), against a local mock model (`support/chat_mock.rs`).
//! The two are alternated run by run, so the machine's load falls on both
//! alike; medians of wall and CPU (keel and its probe's jail, reaped),
//! and the first request's size (the catalog's share of the prefix).
//!
//! Run: `cargo bench --bench catalog_start` (or `-- RUNS AGENTS SKILLS`;
//! 15 runs of each by default).

#[path = "support/chat_mock.rs"]
mod chat_mock;
#[path = "support/chat_sse.rs"]
mod chat_sse;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::Instant;

use chat_mock::{ChatMock, procfs};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

fn main() {
    let arg = |n: usize, default: usize| {
        std::env::args().nth(n).and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    // Under `cargo test` (no `--bench`), a smoke run that only proves the driver works.
    let full = std::env::args().any(|a| a == "--bench");
    let (runs, agents, skills) = if full {
        (arg(1, 15), arg(2, 400), arg(3, 700))
    } else {
        (arg(1, 1), arg(2, 40), arg(3, 70))
    };
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => return exit_with(&format!("runtime: {error}")),
        };
    if let Err(error) = runtime.block_on(run(runs, agents, skills)) {
        exit_with(&error);
    }
}

async fn run(runs: usize, agents: usize, skills: usize) -> Result<(), String> {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(ChatMock::new(0)).mount(&server).await;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = chat_mock::fixture(dir.path())?;
    let empty = dir.path().join("home-empty");
    let full = dir.path().join("home-full");
    std::fs::create_dir_all(&empty).map_err(|e| e.to_string())?;
    catalog(&full.join(".keel"), agents, skills).map_err(|e| format!("catalog: {e}"))?;
    let mut figures: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    let mut id = 0;
    // One warm-up of each, then alternate.
    for round in 0..=runs {
        for (which, home) in [&empty, &full].into_iter().enumerate() {
            id += 1;
            let figure = hello(&repo, home, &chat_mock::base_url(&server.uri(), id))?;
            if round > 0 {
                figures[which].push(figure);
            }
        }
    }
    let sizes = request_sizes(&server).await;
    let [empty_runs, full_runs] = figures.map(|mut runs| medians(&mut runs));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "hello, medians of {runs} alternated runs (wall ms, CPU ms):");
    let _ =
        writeln!(out, "  empty project:               {:.1}, {:.1}", empty_runs.0, empty_runs.1);
    let _ = writeln!(
        out,
        "  {agents} agent types, {skills} skills: {:.1}, {:.1} ({:.2}× the wall, {:.2}× the CPU)",
        full_runs.0,
        full_runs.1,
        full_runs.0 / empty_runs.0,
        full_runs.1 / empty_runs.1
    );
    if let Some((small, big)) = sizes {
        let _ = writeln!(out, "first request: {small} bytes empty, {big} bytes with the catalog");
    }
    Ok(())
}

/// One `hello`: (wall ms, CPU ms of keel and what it reaped).
fn hello(repo: &Path, home: &Path, url: &str) -> Result<(f64, f64), String> {
    let before = procfs::cpu_seconds("self").ok_or("no /proc/self/stat")?.1;
    let started = Instant::now();
    let output = chat_mock::keel_exec(repo, home, url, 0)
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start keel: {e}"))?;
    let wall = started.elapsed().as_secs_f64() * 1000.0;
    let cpu = (procfs::cpu_seconds("self").ok_or("no /proc/self/stat")?.1 - before) * 1000.0;
    if !output.status.success() || !String::from_utf8_lossy(&output.stdout).contains("Done:") {
        return Err(format!("hello failed: {}", String::from_utf8_lossy(&output.stdout)));
    }
    Ok((wall, cpu))
}

/// The sizes of the first request of each kind of project, when the
/// server recorded them (the empty project's first, then the full one's).
async fn request_sizes(server: &MockServer) -> Option<(usize, usize)> {
    let requests = server.received_requests().await?;
    Some((requests.first()?.body.len(), requests.get(1)?.body.len()))
}

fn medians(runs: &mut [(f64, f64)]) -> (f64, f64) {
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).copied().unwrap_or(0.0)
    };
    (median(runs.iter().map(|r| r.0).collect()), median(runs.iter().map(|r| r.1).collect()))
}

/// `agents` agent types and `skills` skills under `keel_home`, each with a
/// description of realistic length.
fn catalog(keel_home: &Path, agents: usize, skills: usize) -> std::io::Result<()> {
    let agents_dir = keel_home.join("agents");
    std::fs::create_dir_all(&agents_dir)?;
    for n in 0..agents {
        std::fs::write(
            agents_dir.join(format!("agent-{n:03}.md")),
            format!(
                "---\nname: agent-{n:03}\ndescription: Reviews module {n} of the billing service \
                 for error handling, logging and the retry policy; reports with path:line.\n\
                 tools: read_file, grep, glob\n---\nYou are agent {n}. Read the code, report.\n"
            ),
        )?;
    }
    for n in 0..skills {
        let skill = keel_home.join("skills").join(format!("skill-{n:03}"));
        std::fs::create_dir_all(&skill)?;
        std::fs::write(
            skill.join("SKILL.md"),
            format!(
                "---\nname: skill-{n:03}\ndescription: How to release component {n} of the \
                 platform: version bump, changelog, tag and the deploy checklist.\n---\n\n\
                 # Release component {n}\n\n1. Bump the version.\n2. Update the changelog.\n"
            ),
        )?;
    }
    Ok(())
}

fn exit_with(message: &str) {
    let _ = writeln!(std::io::stderr(), "catalog_start bench: {message}");
    std::process::exit(1);
}
