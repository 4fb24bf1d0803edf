//! Issue 14: resuming a log damaged in the middle never runs a recorded
//! call again. A session runs one shell command that appends a line to
//! `runs.log` (so every execution is counted outside the log); its log is
//! then cut back into an open turn and damaged, and `keel exec resume`
//! finishes it:
//!
//! - the `model_response` line moved after its call's result: the call is
//!   answered, nothing runs again;
//! - the `tool_call_started` line unreadable but its `file_before` intact:
//!   the call started, so it is reported interrupted, not run again;
//! - an unreadable line that could have been the call's start or result:
//!   keel refuses to guess (exit 1, naming the line and the call);
//! - a log with thousands of unreadable lines warns once, not per line.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, read_jsonl, scripted_model};
use super::wire::{Step, Wire, call};

/// Runs the one-command session and returns its log lines (raw text).
async fn recorded_session(sandbox: &Sandbox) -> (Vec<String>, wiremock::MockServer) {
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "echo ran >> runs.log"}))],
        },
        Step::Answer("first run done".into()),
        Step::Answer("resumed".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(sandbox, &server.uri()).arg("count").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("runs.log"), "ran\n");
    let text = std::fs::read_to_string(sandbox.only_log_path()).unwrap();
    (text.lines().map(str::to_owned).collect(), server)
}

fn exec(sandbox: &Sandbox, uri: &str) -> assert_cmd::Command {
    sandbox.keel_on(&Model::at("openai-chat", uri), &["exec", "--json", "--full-auto"])
}

fn kind(line: &str) -> String {
    serde_json::from_str::<Value>(line)
        .map(|v| v["type"].as_str().unwrap_or("").to_owned())
        .unwrap_or_default()
}

fn position(lines: &[String], wanted: &str) -> usize {
    lines.iter().position(|line| kind(line) == wanted).unwrap_or_else(|| panic!("no {wanted}"))
}

/// The log up to and including the shell call's result (the turn left
/// open, as after a crash), rewritten, then resumed.
fn resume_damaged(sandbox: &Sandbox, uri: &str, lines: &[String]) -> std::process::Output {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(sandbox.only_log_path(), text).unwrap();
    exec(sandbox, uri).args(["resume", "--last"]).output().unwrap()
}

fn started_lines(sandbox: &Sandbox) -> usize {
    read_jsonl(&sandbox.only_log_path()).iter().filter(|l| l["type"] == "tool_call_started").count()
}

#[tokio::test]
async fn a_response_after_its_result_does_not_run_the_call_again() {
    let sandbox = Sandbox::new();
    let (lines, server) = recorded_session(&sandbox).await;
    let mut lines = lines[..=position(&lines, "tool_call_finished")].to_vec();
    let response = lines.iter().position(|l| kind(l) == "model_response").unwrap();
    let moved = lines.remove(response);
    lines.push(moved);
    let output = resume_damaged(&sandbox, &server.uri(), &lines);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("runs.log"), "ran\n", "the command ran again");
    assert_eq!(started_lines(&sandbox), 1);
}

#[tokio::test]
async fn a_surviving_file_before_keeps_the_call_from_running_again() {
    let sandbox = Sandbox::new();
    let (lines, server) = recorded_session(&sandbox).await;
    let mut lines = lines[..=position(&lines, "file_before")].to_vec();
    let started = position(&lines, "tool_call_started");
    lines[started] = "{\"v\":1,\"seq\":".to_owned() + "garbage";
    let output = resume_damaged(&sandbox, &server.uri(), &lines);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("runs.log"), "ran\n", "the command ran again");
    let finished: Vec<Value> = read_jsonl_lossy(&sandbox)
        .into_iter()
        .filter(|l| l["type"] == "tool_call_finished")
        .collect();
    assert_eq!(finished.len(), 1);
    let output = finished[0]["result"]["output"].as_str().unwrap();
    assert!(output.starts_with("interrupted"), "{output}");
}

#[tokio::test]
async fn damage_that_could_hide_the_call_s_start_refuses_to_guess() {
    let sandbox = Sandbox::new();
    let (lines, server) = recorded_session(&sandbox).await;
    // The call's start is unreadable and nothing after it says it ran.
    let started = position(&lines, "tool_call_started");
    let mut lines = lines[..=started].to_vec();
    lines[started] = "not json".to_owned();
    let line_number = started + 1;
    let before = lines.clone();
    let output = resume_damaged(&sandbox, &server.uri(), &lines);
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json_lines(&output.stdout).pop().unwrap();
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains("without guessing"), "{error}");
    assert!(error.contains(&format!("line {line_number} is unreadable")), "{error}");
    assert!(error.contains("call_0_0 (shell"), "{error}");
    assert_eq!(sandbox.read("runs.log"), "ran\n", "nothing ran");
    let after = std::fs::read_to_string(sandbox.only_log_path()).unwrap();
    assert_eq!(after.lines().collect::<Vec<_>>(), before, "nothing was appended");
}

#[tokio::test]
async fn thousands_of_unreadable_lines_are_one_warning() {
    let sandbox = Sandbox::new();
    let (lines, server) = recorded_session(&sandbox).await;
    let mut damaged = lines.clone();
    let end = damaged.len() - 1;
    damaged.splice(end..end, std::iter::repeat_n("x".to_owned(), 20_000));
    let output = resume_damaged(&sandbox, &server.uri(), &damaged);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let about_the_log = |l: &Value| {
        l["type"] == "warning" && l["message"].as_str().unwrap_or("").contains(".jsonl")
    };
    let warnings: Vec<Value> =
        json_lines(&output.stdout).into_iter().filter(about_the_log).collect();
    assert_eq!(warnings.len(), 1, "first: {:?}", warnings.first());
    assert!(warnings[0]["message"].as_str().unwrap().contains("skipped 20000 lines"));
}

/// The log's readable lines (the damaged one is skipped).
fn read_jsonl_lossy(sandbox: &Sandbox) -> Vec<Value> {
    std::fs::read_to_string(sandbox.only_log_path())
        .unwrap()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}
