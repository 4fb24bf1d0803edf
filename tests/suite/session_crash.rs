//! The crash test of issue 5: a scripted session is killed with SIGKILL
//! after each event of its log in turn, and in the middle of writing each
//! event, then resumed to the end. Every time: the lines written before the
//! kill are still there, the repository ends as in an uninterrupted run, no
//! call whose result was recorded runs again, and no file change is lost or
//! silently applied twice.
//!
//! The mock model is stateless: it reads the conversation and asks for the
//! first scripted call not yet done, so it behaves like a model that
//! re-issues a call reported "interrupted" unless the report says the change
//! landed.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::{Sandbox, json_lines};
use super::wire::{Step, Wire, call, render};

const PROMPT: &str = "make the changes";
const ANSWER: &str = "All three changes are made.";

fn script() -> Vec<(String, String)> {
    vec![
        call("read_file", json!({"path": "a.txt"})),
        call("write_file", json!({"path": "b.txt", "content": "new file\n"})),
        call("edit_file", json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"})),
        call("shell", json!({"command": "printf done > c.txt && echo ran >> runs.log"})),
    ]
}

/// Whether a tool result in the conversation counts as done.
fn done(content: &str) -> bool {
    !content.starts_with("interrupted:") || content.contains("The change landed")
}

struct StatelessModel;

impl Respond for StatelessModel {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let results: Vec<&str> = body["messages"]
            .as_array()
            .map(|messages| {
                messages
                    .iter()
                    .filter(|m| m["role"] == "tool")
                    .map(|m| m["content"].as_str().unwrap_or(""))
                    .collect()
            })
            .unwrap_or_default();
        let finished = results.iter().filter(|r| done(r)).count();
        let script = script();
        let step = match script.get(finished) {
            Some(next) => Step::Calls { text: None, calls: vec![next.clone()] },
            None => Step::Answer(ANSWER.into()),
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
        .respond_with(StatelessModel)
        .mount(&server)
        .await;
    server
}

fn fresh() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\n");
    sandbox
}

fn keel(sandbox: &Sandbox, server: &MockServer) -> assert_cmd::Command {
    let mut cmd = sandbox.keel();
    cmd.args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri())]);
    cmd
}

/// The repository's files (without `.git`), path to content.
fn files(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(root).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name != ".git" {
            out.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

fn log_path(sandbox: &Sandbox) -> std::path::PathBuf {
    sandbox.only_log_path()
}

fn parsed_lines(text: &str) -> Vec<Value> {
    text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// Checks the final log of a resumed run.
fn check_final_log(case: &str, lines: &[Value]) {
    let mut finished: BTreeMap<String, usize> = BTreeMap::new();
    let mut landed: BTreeMap<String, usize> = BTreeMap::new();
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    for line in lines {
        if line["type"] == "tool_call_started" {
            let id = line["call"]["call_id"].as_str().unwrap().to_owned();
            assert!(!finished.contains_key(&id), "{case}: {id} ran again after its result");
            names.insert(id, line["call"]["name"].as_str().unwrap().to_owned());
        }
        if line["type"] == "tool_call_finished" {
            let id = line["result"]["call_id"].as_str().unwrap().to_owned();
            *finished.entry(id.clone()).or_default() += 1;
            let output = line["result"]["output"].as_str().unwrap();
            let applied =
                line["result"]["is_error"] == false || output.contains("The change landed");
            if applied && let Some(name) = names.get(&id) {
                *landed.entry(name.clone()).or_default() += 1;
            }
        }
    }
    assert!(finished.values().all(|n| *n == 1), "{case}: a call answered twice: {finished:?}");
    for tool in ["write_file", "edit_file", "shell"] {
        assert_eq!(landed.get(tool), Some(&1), "{case}: {tool} applied {landed:?}");
    }
    for (seq, line) in lines.iter().enumerate() {
        assert_eq!(line["seq"], seq as u64, "{case}: seq");
    }
}

/// Resumes the crashed session in `sandbox` to its end and checks it.
async fn resume_and_check(
    case: &str,
    sandbox: &Sandbox,
    server: &MockServer,
    reference: &BTreeMap<String, String>,
    survivors: &[String],
) {
    let mut cmd = keel(sandbox, server);
    cmd.args(["resume", "--last"]);
    if !survivors.iter().any(|line| line.contains("\"type\":\"user_message\"")) {
        cmd.arg(PROMPT); // the prompt itself was never recorded
    }
    let output = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{case}: {stderr}");
    let result = json_lines(&output.stdout).pop().unwrap();
    // The changes were never verified, and the rebuilt workflow knows it.
    assert_eq!(result["status"], "unverified", "{case}: {result}");
    assert_eq!(result["final_text"], ANSWER, "{case}");

    let text = std::fs::read_to_string(log_path(sandbox)).unwrap();
    let after: Vec<&str> = text.lines().collect();
    for (index, line) in survivors.iter().enumerate() {
        assert_eq!(after[index], line, "{case}: line {index} changed");
    }
    check_final_log(case, &parsed_lines(&text));
    let mut repo = files(&sandbox.repo);
    assert_eq!(repo.remove("runs.log").as_deref(), Some("ran\n"), "{case}: shell ran once");
    assert_eq!(&repo, reference, "{case}: repository differs");
}

async fn reference_run(server: &MockServer) -> (BTreeMap<String, String>, usize) {
    let sandbox = fresh();
    let output = keel(&sandbox, server).arg(PROMPT).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let mut repo = files(&sandbox.repo);
    assert_eq!(repo.remove("runs.log").as_deref(), Some("ran\n"));
    assert_eq!(repo["a.txt"], "beta\n");
    let lines = std::fs::read_to_string(log_path(&sandbox)).unwrap().lines().count();
    (repo, lines)
}

#[tokio::test]
async fn sigkill_after_every_event_then_resume_matches_an_uninterrupted_run() {
    let server = model().await;
    let (reference, events) = reference_run(&server).await;
    assert!(events > 20, "the script exercises enough events: {events}");
    for seq in 0..events {
        let case = format!("killed after seq {seq}");
        let sandbox = fresh();
        let output = keel(&sandbox, &server)
            .env("KEEL_TEST_CRASH_AFTER_SEQ", seq.to_string())
            .arg(PROMPT)
            .output()
            .unwrap();
        assert_eq!(output.status.signal(), Some(9), "{case}: {:?}", output.status);
        let text = std::fs::read_to_string(log_path(&sandbox)).unwrap();
        let survivors: Vec<String> = text.lines().map(str::to_owned).collect();
        assert_eq!(survivors.len(), seq + 1, "{case}: every written line is on disk");
        assert_eq!(parsed_lines(&text).len(), seq + 1, "{case}: and readable");
        resume_and_check(&case, &sandbox, &server, &reference, &survivors).await;
    }
}

#[tokio::test]
async fn sigkill_in_the_middle_of_every_write_then_resume_matches() {
    let server = model().await;
    let (reference, events) = reference_run(&server).await;
    for seq in 0..events {
        let case = format!("killed while writing seq {seq}");
        let sandbox = fresh();
        let output = keel(&sandbox, &server)
            .env("KEEL_TEST_CRASH_IN_SEQ", seq.to_string())
            .arg(PROMPT)
            .output()
            .unwrap();
        assert_eq!(output.status.signal(), Some(9), "{case}: {:?}", output.status);
        let text = std::fs::read_to_string(log_path(&sandbox)).unwrap();
        assert!(!text.ends_with('\n'), "{case}: the last line is torn");
        let survivors: Vec<String> = text.lines().take(seq).map(str::to_owned).collect();
        assert_eq!(parsed_lines(&text).len(), seq, "{case}");
        if seq == 0 {
            // Not even `session_started` made it: there is nothing to resume,
            // and resume says so instead of guessing.
            let output = keel(&sandbox, &server).args(["resume", "--last"]).output().unwrap();
            assert_eq!(output.status.code(), Some(2), "{case}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("no session was started"), "{case}: {stderr}");
            continue;
        }
        resume_and_check(&case, &sandbox, &server, &reference, &survivors).await;
    }
}
