//! Hundreds of concurrent sessions against one model (issue 42): `N`
//! real `keel exec` processes (release binary, the jail around every
//! command) at once, each in a repository of its own and each running
//! `STEPS` scripted shell steps against one local mock
//! (`support/chat_mock.rs`, wiremock, request recording off), the way a CI
//! fleet or a benchmark harness runs keel.
//!
//! First `SINGLES` sessions run one after another: the reference CPU per
//! step of a session alone. Then all `N` start together; every 0.5 s the
//! live sessions' `VmRSS`, threads and open descriptors are summed from
//! `/proc`. Reported: failures (a session that did not exit 0 with the
//! scripted answer), CPU per step (keel and its jails, reaped: this
//! process's `cutime + cstime`) against the single sessions', memory per
//! session at the fullest sample, and the peaks. The descriptor limit is
//! raised to its hard maximum first (the sessions inherit it; the mock
//! holds a connection per session).
//!
//! Run: `cargo bench --bench fleet` (500 sessions of 10 steps, 5 single
//! sessions first) or `-- N STEPS SINGLES`.

#[path = "support/chat_mock.rs"]
mod chat_mock;
#[path = "support/chat_sse.rs"]
mod chat_sse;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use chat_mock::{ChatMock, procfs};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

fn main() {
    let arg = |n: usize, default: usize| {
        std::env::args().nth(n).and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    // Under `cargo test` (no `--bench`), a smoke run that only proves the driver works.
    let full = std::env::args().any(|a| a == "--bench");
    let (sessions, steps, singles) =
        if full { (arg(1, 500), arg(2, 10), arg(3, 5)) } else { (arg(1, 4), arg(2, 2), arg(3, 1)) };
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
    if let Err(error) = rustix::process::setrlimit(rustix::process::Resource::Nofile, raised) {
        return exit_with(&format!("cannot raise the descriptor limit: {error}"));
    }
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => return exit_with(&format!("runtime: {error}")),
        };
    if let Err(error) = runtime.block_on(run(sessions, steps, singles)) {
        exit_with(&error);
    }
}

/// The fleet's figures, summed over the live sessions of one sample.
#[derive(Default, Clone, Copy)]
struct Peak {
    live: usize,
    rss_kib: u64,
    /// The largest single session's.
    largest_kib: u64,
    threads: u64,
    fds: usize,
}

async fn run(sessions: usize, steps: usize, singles: usize) -> Result<(), String> {
    let mock = ChatMock::new(steps as u64);
    let server = MockServer::builder().disable_request_recording().start().await;
    Mock::given(method("POST")).respond_with(mock.clone()).mount(&server).await;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let template = chat_mock::fixture(dir.path())?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();

    // The reference: sessions alone, one after another.
    let cpu_before = children_cpu()?;
    let started = Instant::now();
    for n in 0..singles {
        let id = 100_000 + n;
        let mut child = start(dir.path(), &template, &home, &server.uri(), id, steps)?;
        let status = tokio::task::spawn_blocking(move || child.wait())
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        if !status.success() || !answered(dir.path(), id) {
            return Err(format!("single session {n} failed ({status})"));
        }
    }
    let single_wall = started.elapsed().as_secs_f64() / singles.max(1) as f64;
    let single_cpu = (children_cpu()? - cpu_before) * 1000.0 / (singles * steps).max(1) as f64;
    let _ = writeln!(
        out,
        "{singles} single sessions of {steps} steps: {single_wall:.2} s each, {single_cpu:.2} ms CPU a step"
    );

    // The fleet, all at once.
    let cpu_before = children_cpu()?;
    let started = Instant::now();
    let mut fleet: Vec<(usize, Child)> = Vec::with_capacity(sessions);
    for id in 0..sessions {
        fleet.push((id, start(dir.path(), &template, &home, &server.uri(), id, steps)?));
    }
    let launched = started.elapsed().as_secs_f64();
    let (peak, fullest, failures) =
        tokio::task::spawn_blocking(move || watch(fleet)).await.map_err(|e| e.to_string())?;
    let mut failures: std::collections::BTreeSet<usize> = failures.into_iter().collect();
    failures.extend((0..sessions).filter(|id| !answered(dir.path(), *id)));
    let wall = started.elapsed().as_secs_f64();
    let cpu = (children_cpu()? - cpu_before) * 1000.0 / (sessions * steps).max(1) as f64;
    let _ = writeln!(
        out,
        "{sessions} concurrent sessions of {steps} steps (started in {launched:.1} s): done in {wall:.1} s, \
         {} failed, {} steps answered",
        failures.len(),
        mock.steps_done()
    );
    let _ = writeln!(out, "CPU a step: {cpu:.2} ms ({:.2}× a single session's)", cpu / single_cpu);
    let _ = writeln!(
        out,
        "fullest sample: {} live, {:.1} MiB in all, {:.1} MiB a session; {} threads, {} fds",
        fullest.live,
        fullest.rss_kib as f64 / 1024.0,
        fullest.rss_kib as f64 / 1024.0 / fullest.live.max(1) as f64,
        fullest.threads,
        fullest.fds
    );
    let _ = writeln!(
        out,
        "peaks: {} live, {:.1} MiB, {} threads, {} fds; the largest session {:.1} MiB",
        peak.live,
        peak.rss_kib as f64 / 1024.0,
        peak.threads,
        peak.fds,
        peak.largest_kib as f64 / 1024.0
    );
    if !failures.is_empty() {
        let _ = writeln!(out, "failed sessions: {failures:?}");
    }
    Ok(())
}

/// Waits for every session, sampling the live ones every 0.5 s: the
/// peaks (each figure's own), the fullest sample (most RSS in all) and
/// the sessions that exited with a failure.
fn watch(mut fleet: Vec<(usize, Child)>) -> (Peak, Peak, Vec<usize>) {
    let (mut peak, mut fullest, mut failures) = (Peak::default(), Peak::default(), Vec::new());
    while !fleet.is_empty() {
        let mut sample = Peak::default();
        fleet.retain_mut(|(id, child)| match child.try_wait() {
            Ok(Some(status)) => {
                if !status.success() {
                    failures.push(*id);
                }
                false
            }
            Ok(None) => {
                let pid = child.id();
                let rss = procfs::status_field(pid, "VmRSS").unwrap_or(0);
                sample.live += 1;
                sample.rss_kib += rss;
                sample.largest_kib = sample.largest_kib.max(rss);
                sample.threads += procfs::status_field(pid, "Threads").unwrap_or(0);
                sample.fds += procfs::open_fds(pid);
                true
            }
            Err(_) => {
                failures.push(*id);
                false
            }
        });
        peak = Peak {
            live: peak.live.max(sample.live),
            rss_kib: peak.rss_kib.max(sample.rss_kib),
            largest_kib: peak.largest_kib.max(sample.largest_kib),
            threads: peak.threads.max(sample.threads),
            fds: peak.fds.max(sample.fds),
        };
        if sample.rss_kib > fullest.rss_kib {
            fullest = sample;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    (peak, fullest, failures)
}

/// Starts session `id` in a copy of `template`, its output in `dir/out-ID`.
fn start(
    dir: &Path,
    template: &Path,
    home: &Path,
    uri: &str,
    id: usize,
    steps: usize,
) -> Result<Child, String> {
    let repo = dir.join(format!("repo-{id}"));
    copy_tree(template, &repo).map_err(|e| format!("cannot copy the fixture: {e}"))?;
    let out = std::fs::File::create(dir.join(format!("out-{id}"))).map_err(|e| e.to_string())?;
    chat_mock::keel_exec(&repo, home, &chat_mock::base_url(uri, id), steps as u64)
        .stdout(out)
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start session {id}: {e}"))
}

/// Whether session `id` gave the scripted answer.
fn answered(dir: &Path, id: usize) -> bool {
    std::fs::read_to_string(dir.join(format!("out-{id}")))
        .is_ok_and(|text| text.contains("Done: ran the shell steps"))
}

/// CPU seconds of this process's reaped children (and theirs).
fn children_cpu() -> Result<f64, String> {
    procfs::cpu_seconds("self").map(|(_, children)| children).ok_or("no /proc/self/stat".into())
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target: PathBuf = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

fn exit_with(message: &str) {
    let _ = writeln!(std::io::stderr(), "fleet bench: {message}");
    std::process::exit(1);
}
