//! Issue 16: the request prefix holds. Across a scripted session that
//! moves between phases, rewrites the task list, edits a file (so the git
//! status changes), is killed mid-turn and resumed with another mode, every
//! request the model receives starts with the whole previous request, block
//! for block as the provider's cache reads it (`benches/prompt_cache/
//! canon.rs`), on each of the three protocols. Nothing is compacted here;
//! a compaction is the one recorded exception.

use serde_json::{Value, json};

use super::support::{Sandbox, json_lines, read_jsonl, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

#[path = "../../benches/prompt_cache/canon.rs"]
#[allow(dead_code)]
mod canon;

use canon::{Protocol, blocks, shared_prefix};

fn calls(calls: Vec<(String, String)>) -> Step {
    Step::Calls { text: None, calls }
}

fn todos(items: &[(&str, &str)]) -> Step {
    let list: Vec<Value> =
        items.iter().map(|(text, status)| json!({"text": text, "status": status})).collect();
    calls(vec![call("todo_write", json!({ "todos": list }))])
}

/// The first turn up to the response after which the first process dies
/// (its `make test` is recorded, never run), then the rest.
fn first_turn() -> (Vec<Step>, Vec<Step>) {
    let before_kill = vec![
        todos(&[("find the typo", "in_progress"), ("fix it", "pending")]),
        calls(vec![call("read_file", json!({"path": "hello.txt"})), call("list_dir", json!({}))]),
        calls(vec![call("set_phase", json!({"phase": "explore"}))]),
        todos(&[("find the typo", "completed"), ("fix it", "in_progress")]),
        calls(vec![call(
            "edit_file",
            json!({"path": "hello.txt", "old_string": "helo", "new_string": "hello"}),
        )]),
        calls(vec![call("shell", json!({"command": "make test"}))]),
    ];
    let after_kill = vec![
        calls(vec![call("shell", json!({"command": "make test 2>&1 | tail -n 5"}))]),
        calls(vec![call("set_phase", json!({"phase": "deliver"}))]),
        Step::Answer("Fixed the typo; make test passes.".into()),
        // The second turn, after the resume.
        todos(&[("say hi", "in_progress")]),
        calls(vec![call("read_file", json!({"path": "notes.txt"}))]),
        Step::Answer("Said hi.".into()),
    ];
    (before_kill, after_kill)
}

fn project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    sandbox.write("Makefile", "test:\n\tgrep -q 'hello world' hello.txt\n");
    sandbox.write("AGENTS.md", "# Project\n\nRun `make test` before you say done.\n");
    sandbox
}

fn model_args(wire: Wire, uri: &str) -> Vec<String> {
    ["--provider", wire.provider(), "--model", "m", "--base-url"]
        .iter()
        .map(|word| (*word).to_owned())
        .chain([format!("{uri}/v1")])
        .collect()
}

/// The `seq` of the log line after which the first process is killed:
/// the last `model_response` of `before_kill`, found by a dry run.
async fn kill_seq(wire: Wire, before_kill: &[Step]) -> u64 {
    let sandbox = project();
    let server = scripted_model(wire, before_kill).await;
    sandbox
        .keel()
        .args(["exec", "--json", "--full-auto"])
        .args(model_args(wire, &server.uri()))
        .arg("Fix the typo in hello.txt")
        .output()
        .unwrap();
    let log = sandbox.only_log();
    let responses: Vec<&Value> =
        log.iter().filter(|line| line["type"] == "model_response").collect();
    responses[before_kill.len() - 1]["seq"].as_u64().unwrap()
}

/// Runs the scripted session on `wire`; returns the request bodies in the
/// order the model got them, and the session log.
async fn session(wire: Wire) -> (Vec<Value>, Vec<Value>) {
    let (before_kill, after_kill) = first_turn();
    let seq = kill_seq(wire, &before_kill).await;
    let sandbox = project();
    let steps: Vec<Step> = before_kill.into_iter().chain(after_kill).collect();
    let server = scripted_model(wire, &steps).await;
    let killed = sandbox
        .keel()
        .args(["exec", "--json", "--full-auto"])
        .args(model_args(wire, &server.uri()))
        .arg("Fix the typo in hello.txt")
        .env("KEEL_TEST_CRASH_AFTER_SEQ", seq.to_string())
        .output()
        .unwrap();
    assert_eq!(killed.status.code(), None, "killed mid-turn");
    // The user changes the tree meanwhile; the resumed run uses another mode.
    sandbox.write("notes.txt", "hi\n");
    let dir = sandbox.home.join("sessions");
    let log_path = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .unwrap();
    let resumed = sandbox
        .keel()
        .args(["exec", "--json", "--yolo", "--resume"])
        .arg(&log_path)
        .args(model_args(wire, &server.uri()))
        .arg("Now say hi")
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(json_lines(&resumed.stdout).last().unwrap()["final_text"], "Said hi.");
    (request_bodies(&server).await, read_jsonl(&log_path))
}

fn protocol(wire: Wire) -> Protocol {
    match wire {
        Wire::Responses => Protocol::Responses,
        Wire::Chat => Protocol::Chat,
        Wire::Anthropic => Protocol::Anthropic,
    }
}

async fn the_prefix_holds(wire: Wire) {
    let (requests, log) = session(wire).await;
    assert_eq!(requests.len(), 12, "every scripted step was asked for once");
    let seen: Vec<Vec<canon::Block>> =
        requests.iter().map(|body| blocks(protocol(wire), body)).collect();
    for (n, pair) in seen.windows(2).enumerate() {
        let shared = shared_prefix(&pair[0], &pair[1]);
        assert_eq!(
            shared,
            pair[0].len(),
            "request {} does not start with request {n}: block {shared} differs\n{}\n{}",
            n + 1,
            pair[0].get(shared).map_or("", |b| b.text.as_str()),
            pair[1].get(shared).map_or("", |b| b.text.as_str()),
        );
    }
    let prefixes: Vec<&Value> = log.iter().filter(|l| l["type"] == "prompt_prefix").collect();
    assert_eq!(prefixes.len(), 1, "no prefix break: {prefixes:?}");
    assert_eq!(prefixes[0]["reason"], "session start");
    let announced: Vec<String> = log
        .iter()
        .filter(|line| line["type"] == "context_updated")
        .flat_map(|line| line["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["kind"].as_str().map(str::to_owned))
        .collect();
    for kind in ["environment", "mode", "workflow"] {
        let times = announced.iter().filter(|k| *k == kind).count();
        assert!(times >= 2, "{kind} changed and was announced again: {announced:?}");
    }
}

#[tokio::test]
async fn the_prefix_holds_on_responses() {
    the_prefix_holds(Wire::Responses).await;
}

#[tokio::test]
async fn the_prefix_holds_on_chat_completions() {
    the_prefix_holds(Wire::Chat).await;
}

#[tokio::test]
async fn the_prefix_holds_on_anthropic_messages() {
    the_prefix_holds(Wire::Anthropic).await;
}
