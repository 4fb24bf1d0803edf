//! Issue 14's crash-and-race test: a scripted session of three shell calls,
//! each appending its step number and call id to `counts.log` (outside the
//! log, so every execution is counted), is stopped after every event of its
//! log in turn:
//! by SIGKILL (`KEEL_TEST_CRASH_AFTER_SEQ`) and by SIGTERM
//! (`KEEL_TEST_TERM_AFTER_SEQ`, keel's own signal handling). Each time two
//! `keel exec resume --last` are started at once, then one more after them
//! to finish. Every time: the log's `seq` runs 0, 1, 2… with no duplicate
//! (one writer at a time), no call is started or answered twice, no call
//! ran twice, and every step ran.
//!
//! The model is stateless: it asks for the first step without a successful
//! result in the conversation, so it issues a new call for a step whose
//! call was interrupted or cancelled unless the report says the change
//! landed (that is the model's choice, with a new call id; keel running the
//! same call again is what must never happen).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::{Model, Sandbox, json_lines};
use super::wire::{Step, Wire, call, render};

const PROMPT: &str = "count to three";
const CALLS: usize = 3;

struct Counter;

impl Respond for Counter {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let results: Vec<String> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or("").to_owned())
            .collect();
        let done = results
            .iter()
            .filter(|r| r.as_str() == "(no output)" || r.contains("The change landed"))
            .count();
        let step = if done < CALLS {
            // The id `render` gives this response's call.
            let id = format!("call_{}_0", results.len());
            let command = format!("echo {}:{id} >> counts.log", done + 1);
            Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] }
        } else {
            Step::Answer("counted".into())
        };
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(render(Wire::Chat, &step, results.len()))
    }
}

async fn model() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Wire::Chat.path()))
        .respond_with(Counter)
        .mount(&server)
        .await;
    server
}

fn exec(sandbox: &Sandbox, server: &MockServer) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("keel"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::chat(server).flags())
        .args(["--json", "--full-auto"])
        .stdin(Stdio::null());
    cmd
}

fn log_lines(sandbox: &Sandbox) -> Vec<Value> {
    let text = std::fs::read_to_string(sandbox.only_log_path()).unwrap();
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// Two resumes at once, then one after them; each either goes on or is
/// refused because the other holds the session. A racer finishes the open
/// turn and then asks to go on (a turn a signal ended needs a new prompt).
fn race_then_finish(case: &str, sandbox: &Sandbox, server: &MockServer) {
    let prompt_recorded = log_lines(sandbox).iter().any(|l| l["type"] == "user_message");
    let prompt = if prompt_recorded { "go on" } else { PROMPT };
    let resume = || {
        let mut cmd = exec(sandbox, server);
        cmd.args(["resume", "--last", prompt]);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let (first, second) = (resume(), resume());
    for output in [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()] {
        check_attempt(case, &output);
    }
    let output = exec(sandbox, server).args(["resume", "--last"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{case}: final resume: {stderr}");
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["final_text"], "counted", "{case}: {result}");
}

fn check_attempt(case: &str, output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    match output.status.code() {
        Some(0) => {}
        // Refused: the other racer holds the session (it may not have
        // written its pid yet).
        Some(1) => assert!(stdout.contains("is in use by"), "{case}: {stdout}"),
        other => panic!("{case}: resume exited {other:?}: {stdout}"),
    }
}

fn check_log(case: &str, sandbox: &Sandbox) {
    let lines = log_lines(sandbox);
    for (seq, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], seq as u64, "{case}: a duplicate or missing seq");
    }
    let mut started: BTreeMap<String, usize> = BTreeMap::new();
    let mut finished: BTreeMap<String, usize> = BTreeMap::new();
    for line in &lines {
        if line["type"] == "tool_call_started" {
            *started.entry(line["call"]["call_id"].as_str().unwrap().to_owned()).or_default() += 1;
        }
        if line["type"] == "tool_call_finished" {
            *finished.entry(line["result"]["call_id"].as_str().unwrap().to_owned()).or_default() +=
                1;
        }
    }
    assert!(started.values().all(|n| *n == 1), "{case}: a call started twice: {started:?}");
    assert!(finished.values().all(|n| *n == 1), "{case}: a call answered twice: {finished:?}");
    let counts = std::fs::read_to_string(sandbox.repo.join("counts.log")).unwrap_or_default();
    let runs: Vec<&str> = counts.lines().collect();
    let mut calls: Vec<&str> = runs.iter().filter_map(|run| run.split(':').nth(1)).collect();
    calls.sort_unstable();
    let before = calls.len();
    calls.dedup();
    assert_eq!(calls.len(), before, "{case}: a call ran twice: {runs:?}");
    for step in 1..=CALLS {
        let ran = runs.iter().any(|run| run.starts_with(&format!("{step}:")));
        assert!(ran, "{case}: step {step} never ran: {runs:?}");
    }
}

async fn reference_events(server: &MockServer) -> usize {
    let sandbox = Sandbox::new();
    let output = exec(&sandbox, server).arg(PROMPT).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    check_log("reference", &sandbox);
    log_lines(&sandbox).len()
}

#[tokio::test]
async fn sigkill_after_every_event_with_racing_resumes_runs_each_call_once() {
    let server = model().await;
    let events = reference_events(&server).await;
    assert!(events > 15, "the script exercises enough events: {events}");
    // After the last line (`session_ended`) there is nothing left to race.
    for seq in 0..events - 1 {
        let case = format!("SIGKILL after seq {seq}");
        let sandbox = Sandbox::new();
        let output = exec(&sandbox, &server)
            .env("KEEL_TEST_CRASH_AFTER_SEQ", seq.to_string())
            .arg(PROMPT)
            .output()
            .unwrap();
        assert_eq!(output.status.signal(), Some(9), "{case}: {:?}", output.status);
        race_then_finish(&case, &sandbox, &server);
        check_log(&case, &sandbox);
    }
}

#[tokio::test]
async fn sigterm_after_every_event_with_racing_resumes_runs_each_call_once() {
    let server = model().await;
    let events = reference_events(&server).await;
    for seq in 0..events - 1 {
        let case = format!("SIGTERM after seq {seq}");
        let sandbox = Sandbox::new();
        let output = exec(&sandbox, &server)
            .env("KEEL_TEST_TERM_AFTER_SEQ", seq.to_string())
            .arg(PROMPT)
            .output()
            .unwrap();
        // Stopped mid-turn (143), or after the turn had already ended (0).
        let code = output.status.code();
        assert!(matches!(code, Some(143 | 0)), "{case}: {:?}", output.status);
        let result = json_lines(&output.stdout).pop();
        let result = result.unwrap_or_else(|| panic!("{case}: no result line"));
        assert_eq!(result["type"], "result", "{case}");
        assert_eq!(log_lines(&sandbox).last().unwrap()["type"], "session_ended", "{case}");
        race_then_finish(&case, &sandbox, &server);
        check_log(&case, &sandbox);
    }
}
