//! Flat memory over a long session (issue 42): one real `keel exec`
//! (release binary, the jail around every command, as a user runs it)
//! drives 5 000 scripted shell steps (`echo step-K`, one per response)
//! against a local mock model (`support/chat_mock.rs`, wiremock), and
//! `/proc/PID/status` `VmRSS` and `/proc/PID/stat` CPU are sampled every
//! second. The history grows with every step until keel compacts it (the
//! mock answers the compaction request with a short summary; each
//! response reports a prompt the size of its request, and the session has
//! a 128k window); what must not grow is everything else.
//!
//! Reports the first-minute figure (the largest RSS in the first 60 s, or
//! in the first fifth of the steps when the run takes under two minutes),
//! the largest after it, the last, and CPU per step (keel's own and its
//! jails', reaped) in the first and the last fifth of the steps.
//!
//! Run: `cargo bench --bench soak` (or `-- 2000` for 2 000 steps).

#[path = "support/chat_mock.rs"]
mod chat_mock;
#[path = "support/chat_sse.rs"]
mod chat_sse;

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use chat_mock::{ChatMock, procfs};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer};

/// The window the session runs with (a 128k model's).
const WINDOW: u64 = 128_000;

/// One sample of the session.
#[derive(Clone, Copy)]
struct Sample {
    at: f64,
    steps: u64,
    rss_kib: u64,
    /// keel's own CPU seconds, and its reaped children's.
    cpu: (f64, f64),
}

fn main() {
    // Under `cargo test` (no `--bench`), a smoke run that only proves the driver works.
    let full = std::env::args().any(|a| a == "--bench");
    let steps: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(if full {
        5000
    } else {
        20
    });
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => return exit_with(&format!("runtime: {error}")),
        };
    if let Err(error) = runtime.block_on(run(steps)) {
        exit_with(&error);
    }
}

async fn run(steps: u64) -> Result<(), String> {
    let mock = ChatMock::new(steps);
    let server = MockServer::builder().disable_request_recording().start().await;
    Mock::given(method("POST")).respond_with(mock.clone()).mount(&server).await;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let repo = chat_mock::fixture(dir.path())?;
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).map_err(|e| e.to_string())?;
    let out = std::fs::File::create(dir.path().join("out.jsonl")).map_err(|e| e.to_string())?;
    let mut keel =
        chat_mock::keel_exec(&repo, &home, &chat_mock::base_url(&server.uri(), 0), steps)
            // A window keel knows, as for a listed model: with none (an
            // unknown model on a server that says nothing) keel compacts
            // only when the server reports an overflow, which the mock
            // never does, and the history would grow to the end.
            .args(["-c", &format!("context.window={WINDOW}")])
            .stdout(out)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start keel: {e}"))?;
    let pid = keel.id();
    let started = Instant::now();
    let mut samples: Vec<Sample> = Vec::new();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{steps} steps, keel pid {pid}; every 10 s: time, steps, VmRSS, CPU");
    let status = loop {
        if let Some(status) = keel.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        let (Some(rss_kib), Some(cpu)) =
            (procfs::status_field(pid, "VmRSS"), procfs::cpu_seconds(&pid.to_string()))
        else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let sample =
            Sample { at: started.elapsed().as_secs_f64(), steps: mock.steps_done(), rss_kib, cpu };
        if samples.len().is_multiple_of(10) {
            let _ = writeln!(
                out,
                "{:>6.0} s {:>5} steps {:>7.1} MiB  cpu {:.1} s + jails {:.1} s",
                sample.at,
                sample.steps,
                mib(sample.rss_kib),
                sample.cpu.0,
                sample.cpu.1
            );
        }
        samples.push(sample);
        tokio::time::sleep(Duration::from_secs(1)).await;
    };
    let text = std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap_or_default();
    if !status.success() || !text.contains("Done: ran the shell steps") {
        return Err(format!("keel ended {status} before its answer; its output:\n{text}"));
    }
    report(&mut out, &samples, started.elapsed(), mock.steps_done());
    let compactions = count_lines(&home, "\"type\":\"compaction\"");
    let _ = writeln!(
        out,
        "largest request {:.0} kB; compactions in the session log: {compactions}",
        mock.largest_request() as f64 / 1000.0
    );
    Ok(())
}

fn report(out: &mut impl Write, samples: &[Sample], wall: Duration, steps: u64) {
    // The first minute, or the first fifth of the steps when the whole
    // run takes little more than a minute (a fast machine runs 5 000
    // steps in one): what follows must have something to be compared to.
    let fifth_steps = steps / 5;
    let early = |s: &&Sample| match wall.as_secs_f64() > 120.0 {
        true => s.at <= 60.0,
        false => s.steps <= fifth_steps,
    };
    let first_minute: Vec<&Sample> = samples.iter().filter(early).collect();
    let later: Vec<&Sample> = samples.iter().filter(|s| !early(s)).collect();
    let most = |set: &[&Sample]| set.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let (first, after) = (most(&first_minute), most(&later));
    let last = samples.last().map_or(0, |s| s.rss_kib);
    let _ = writeln!(
        out,
        "\n{steps} steps in {:.0} s ({:.1} ms a step)",
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1000.0 / steps.max(1) as f64
    );
    let _ = writeln!(
        out,
        "VmRSS: first minute (or fifth) {:.1} MiB, largest after it {:.1} MiB ({:+.1} MiB), last {:.1} MiB",
        mib(first),
        mib(after),
        mib(after) - mib(first),
        mib(last)
    );
    let fifth = steps / 5;
    for (name, from, to) in [("first", 0, fifth), ("last", steps - fifth, steps)] {
        if let Some((own, jails)) = cpu_per_step(samples, from, to) {
            let _ = writeln!(
                out,
                "CPU per step, {name} fifth (steps {from}-{to}): keel {own:.2} ms + jails {jails:.2} ms"
            );
        }
    }
}

/// CPU per step (ms: keel's own, its jails') between the samples nearest
/// to step `from` and step `to`.
fn cpu_per_step(samples: &[Sample], from: u64, to: u64) -> Option<(f64, f64)> {
    let a = samples.iter().find(|s| s.steps >= from)?;
    let b = samples.iter().rev().find(|s| s.steps <= to)?;
    let steps = b.steps.checked_sub(a.steps).filter(|n| *n > 0)? as f64;
    Some(((b.cpu.0 - a.cpu.0) * 1000.0 / steps, (b.cpu.1 - a.cpu.1) * 1000.0 / steps))
}

/// Lines holding `needle` in the session logs under `home` (any depth).
fn count_lines(home: &std::path::Path, needle: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(home) else { return 0 };
    entries
        .flatten()
        .map(|entry| entry.path())
        .map(|path| match path.is_dir() {
            true => count_lines(&path, needle),
            false if path.extension().is_some_and(|e| e == "jsonl") => {
                std::fs::read_to_string(&path)
                    .map(|text| text.lines().filter(|line| line.contains(needle)).count())
                    .unwrap_or(0)
            }
            false => 0,
        })
        .sum()
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn exit_with(message: &str) {
    let _ = writeln!(std::io::stderr(), "soak bench: {message}");
    std::process::exit(1);
}
