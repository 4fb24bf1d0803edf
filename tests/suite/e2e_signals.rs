//! Issue 14: SIGTERM, SIGHUP and SIGQUIT stop `keel exec` as SIGINT does.
//! The running command's whole process group is killed (a background child
//! included), the turn is recorded as interrupted, the log closed with
//! `session_ended`, the `result` line printed, and keel exits with 128 + the
//! signal's number. A second signal exits at once, after the `result`
//! line; the same signal twice at once (`timeout` signals keel and its
//! process group) is one stop.
//!
//! The command's processes carry a marker in their environment, so the
//! test finds them in /proc whatever their pids (and whatever PID namespace
//! the sandbox puts them in).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

/// A failure bound only: the tests wait on events, not on time.
const BOUND: Duration = Duration::from_secs(30);

fn marker() -> String {
    format!("KEEL_SIGNAL_TEST={}", uuid_like())
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    format!("{}-{}", std::process::id(), nanos.as_nanos())
}

/// Live processes whose environment holds `marker`.
fn marked(marker: &str) -> Vec<u32> {
    let needle = marker.as_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|var| var == needle) {
            found.push(pid);
        }
    }
    found
}

fn wait_for_marked(marker: &str, count: usize) {
    let started = Instant::now();
    while marked(marker).len() < count {
        assert!(started.elapsed() < BOUND, "the marked processes never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send(child: &Child, signal: &str) {
    let status = Command::new("kill").args([signal, &child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

fn spawn_exec(sandbox: &Sandbox, uri: &str) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::at("openai-chat", uri).flags())
        .args(["--json", "--full-auto", "wait"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Reads `--json` lines until the shell call has started.
fn until_shell_started(reader: &mut impl BufRead) -> Vec<Value> {
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "keel ended early: {lines:?}");
        let value = super::support::exec_line(&line);
        let started = value["type"] == "item_started" && value["item"]["name"] == "shell";
        lines.push(value);
        if started {
            return lines;
        }
    }
}

/// A model whose one call runs `sleep 60` with a background `sleep 60`
/// that would outlive a kill of the shell alone.
async fn sleeping_model(marker: &str) -> wiremock::MockServer {
    let command = format!("export {marker}; sleep 60 & sleep 60");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] },
        Step::Answer("unreachable".into()),
    ];
    scripted_model(Wire::Chat, &steps).await
}

async fn stops_cleanly_on(signal: &str, code: i32) {
    let sandbox = Sandbox::new();
    let marker = marker();
    let server = sleeping_model(&marker).await;
    let mut child = spawn_exec(&sandbox, &server.uri());
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = until_shell_started(&mut reader);
    wait_for_marked(&marker, 2);
    let sent = Instant::now();
    send(&child, signal);
    for line in reader.lines() {
        lines.push(super::support::exec_line(&line.unwrap()));
    }
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(code), "{signal}: {lines:?}");
    assert!(sent.elapsed() < BOUND, "{signal}: the sleeps were not killed");
    assert_eq!(marked(&marker), Vec::<u32>::new(), "{signal}: a process of the call survived");

    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result", "{signal}");
    assert_eq!(result["status"], "interrupted", "{signal}");
    let shell_done = lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == "shell")
        .unwrap_or_else(|| panic!("{signal}: the shell call was never answered"));
    assert_eq!(shell_done["item"]["is_error"], true);
    let log = sandbox.only_log();
    let turn_end = log.iter().rev().find(|l| l["type"] == "turn_completed").unwrap();
    assert_eq!(turn_end["outcome"], "interrupted", "{signal}");
    assert_eq!(log.last().unwrap()["type"], "session_ended", "{signal}: the log is closed");
}

#[tokio::test]
async fn sigterm_kills_the_command_tree_and_exits_143() {
    stops_cleanly_on("-TERM", 143).await;
}

#[tokio::test]
async fn sighup_kills_the_command_tree_and_exits_129() {
    stops_cleanly_on("-HUP", 129).await;
}

#[tokio::test]
async fn sigquit_kills_the_command_tree_and_exits_131() {
    stops_cleanly_on("-QUIT", 131).await;
}

#[tokio::test]
async fn a_second_signal_exits_at_once() {
    let sandbox = Sandbox::new();
    let hook_marker = marker();
    // A SessionEnd hook that hangs: the first signal's clean stop waits on it.
    let hook = format!("export {hook_marker}; sleep 60");
    std::fs::write(
        sandbox.home.join("config.toml"),
        format!(
            "[[hooks.SessionEnd]]\nmatcher = \"\"\n[[hooks.SessionEnd.hooks]]\ntype = \"command\"\ncommand = {hook:?}\n"
        ),
    )
    .unwrap();
    let marker = marker();
    let server = sleeping_model(&marker).await;
    let mut child = spawn_exec(&sandbox, &server.uri());
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    until_shell_started(&mut reader);
    wait_for_marked(&marker, 2);
    send(&child, "-TERM");
    wait_for_marked(&hook_marker, 1);
    let sent = Instant::now();
    // Another signal: a second request (the same one at once is a copy).
    send(&child, "-INT");
    let exit = child.wait().unwrap();
    let waited = sent.elapsed();
    for pid in marked(&hook_marker) {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    assert_eq!(exit.code(), Some(130));
    assert!(waited < BOUND, "the second signal did not end keel: {waited:?}");
    let lines: Vec<Value> =
        reader.lines().map(|line| super::support::exec_line(&line.unwrap())).collect();
    let results: Vec<&Value> = lines.iter().filter(|l| l["type"] == "result").collect();
    assert_eq!(results.len(), 1, "one result line, even when exiting at once: {lines:?}");
    assert_eq!(lines.last(), Some(results[0]), "the result line is the last");
    assert_eq!(results[0]["status"], "interrupted");
    assert!(results[0]["session_id"].is_string(), "{}", results[0]);
    let log = sandbox.only_log();
    assert_ne!(log.last().unwrap()["type"], "session_ended", "it did not wait for the hook");
    assert_eq!(marked(&marker), Vec::<u32>::new(), "the call's processes were killed first");
    // keel ran with TMPDIR unset: the hook's staged stdin went to /tmp.
    let repo = sandbox.repo.display().to_string();
    let left: Vec<_> = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("keel-hook-"))
        .filter(|entry| std::fs::read_to_string(entry.path()).is_ok_and(|t| t.contains(&repo)))
        .map(|entry| entry.path())
        .collect();
    assert!(left.is_empty(), "the hook's input was left in the temp dir: {left:?}");
}

/// coreutils `timeout` signals keel, then its whole process group: two
/// SIGTERMs at once. Every run still ends with its `result` line and 143
/// (before: 4 of 8 runs had none). `KEEL_TIMEOUT_RUNS` (default 20) sets
/// how many runs, 4 at a time.
#[tokio::test(flavor = "multi_thread")]
async fn timeout_s_double_sigterm_always_leaves_a_result_line() {
    let runs: usize =
        std::env::var("KEEL_TIMEOUT_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(20);
    let mut outcomes = Vec::new();
    for batch in 0..runs.div_ceil(4) {
        let mut running = Vec::new();
        for _ in 0..4.min(runs - batch * 4) {
            let sandbox = Sandbox::new();
            let marker = marker();
            let server = sleeping_model(&marker).await;
            running.push(tokio::task::spawn_blocking(move || {
                let output = Command::new("timeout")
                    .args(["-s", "TERM", "--preserve-status", "2"])
                    .arg(assert_cmd::cargo::cargo_bin("keel"))
                    .arg("exec")
                    .args(Model::chat(&server).flags())
                    .args(["--json", "--full-auto", "wait"])
                    .env_clear()
                    .env("PATH", std::env::var("PATH").unwrap_or_default())
                    .env("HOME", &sandbox.home)
                    .env("KEEL_HOME", &sandbox.home)
                    .current_dir(&sandbox.repo)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                let left = marked(&marker);
                drop((sandbox, server));
                (output, left)
            }));
        }
        for run in running {
            outcomes.push(run.await.unwrap());
        }
    }
    let mut with_result = 0;
    for (output, left) in &outcomes {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let last: Value =
            stdout.lines().last().and_then(|l| serde_json::from_str(l).ok()).unwrap_or_default();
        assert_eq!(last["type"], "result", "no result line last: {stdout}");
        assert_eq!(last["status"], "interrupted", "{last}");
        assert_eq!(stdout.matches("\"type\":\"result\"").count(), 1, "{stdout}");
        assert_eq!(output.status.code(), Some(143), "the documented code for SIGTERM");
        assert!(left.is_empty(), "a process of the call survived: {left:?}");
        with_result += 1;
    }
    println!("timeout -s TERM 2 keel exec --json: {with_result} result lines of {runs} runs");
    assert_eq!(with_result, runs);
}
