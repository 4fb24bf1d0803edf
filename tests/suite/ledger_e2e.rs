//! `keel cost` and `keel stats` on real sessions, for all three
//! protocols: a session with an MCP server's 40 KiB output and a
//! subagent, and a session that compacts with a summary. The ledger's
//! parts sum to the `result` line's usage exactly and to its `cost_usd`
//! to the cent; the MCP server whose output dominates is named first; the
//! child's own breakdown comes from its log; each session indexes itself
//! as it ends, and `keel stats` counts every request once (the parent's
//! own and the child's).

use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::mcp_support::{fault_table, python, write_config};
use super::subagents_e2e::agent_call;
use super::support::{Model, Sandbox, json_lines};
use super::wire::{Step, Tokens, Wire, call, render_with};

/// Plays `steps` in order (the parent's and its child's requests, which
/// come one after the other) and answers summary requests with a summary.
/// Reports a third of the request's bytes as its input, half of that read
/// from the cache and, on Anthropic, a tenth written to it.
struct Scripted {
    wire: Wire,
    steps: Vec<Step>,
    played: Mutex<usize>,
}

impl Respond for Scripted {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let mut played = self.played.lock().unwrap();
        let step = if body.contains("compacting a coding session") {
            Step::Answer("SUMMARY: the docs were read".into())
        } else {
            let step = self.steps[(*played).min(self.steps.len() - 1)].clone();
            *played += 1;
            step
        };
        let input = body.len() as u64 / 3;
        let tokens = Tokens { input, cached: input / 2, output: 20 + *played as u64 };
        let mut sse = render_with(self.wire, &step, *played, tokens);
        if self.wire == Wire::Anthropic {
            let written = format!("\"cache_creation_input_tokens\":{},", input / 10);
            sse = sse.replace(
                "\"cache_read_input_tokens\":",
                &format!("{written}\"cache_read_input_tokens\":"),
            );
        }
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(sse)
    }
}

async fn scripted(wire: Wire, steps: Vec<Step>) -> MockServer {
    let server = MockServer::start().await;
    let responder = Scripted { wire, steps, played: Mutex::new(0) };
    Mock::given(method("POST")).respond_with(responder).mount(&server).await;
    server
}

fn model(wire: Wire, server: &MockServer) -> Model {
    let name = match wire {
        Wire::Anthropic => "claude-sonnet-4-5",
        Wire::Responses | Wire::Chat => "gpt-5",
    };
    Model::on(wire, server).named(name)
}

fn calls(list: Vec<(String, String)>) -> Step {
    Step::Calls { text: None, calls: list }
}

/// Runs one `exec --json --full-auto` session; returns its `result` line.
fn exec(sandbox: &Sandbox, model: &Model, prompt: &str) -> Value {
    let output = sandbox.run(model, &["exec", "--json", "--full-auto", prompt]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["type"], "result", "{result}");
    result
}

fn keel_json(sandbox: &Sandbox, args: &[&str]) -> Value {
    let output = sandbox.keel().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "keel {args:?}: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap()
}

fn count(value: &Value, field: &str) -> u64 {
    value[field].as_u64().unwrap_or(0)
}

/// The ledger of the session `result` names, checked against it.
fn checked_ledger(sandbox: &Sandbox, result: &Value) -> Value {
    let id = result["session_id"].as_str().unwrap();
    let ledger = keel_json(sandbox, &["cost", id, "--json"]);
    let fields = ["input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens"];
    for field in fields {
        assert_eq!(count(&ledger["usage"], field), count(&result["usage"], field), "{field}");
    }
    let parts = ledger["parts"].as_array().unwrap();
    for field in fields {
        let sum: u64 = parts.iter().map(|part| count(part, field)).sum();
        assert_eq!(sum, count(&result["usage"], field), "{field}: {parts:#?}");
    }
    let cost = result["cost_usd"].as_f64().expect("a priced model");
    let sum: f64 = parts.iter().map(|part| part["cost_usd"].as_f64().unwrap()).sum();
    assert!((sum - cost).abs() < 0.005, "parts ${sum} vs result ${cost}");
    assert!((ledger["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9);
    ledger
}

fn sources(ledger: &Value) -> Vec<String> {
    let parts = ledger["parts"].as_array().unwrap();
    parts.iter().map(|part| part["label"].as_str().unwrap().to_owned()).collect()
}

async fn mcp_and_subagent(wire: Wire) {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("fault.jsonl");
    let extra = "trust_read_only_hint = true";
    write_config(&sandbox, &fault_table("docs", &python, "forty-k", &record, extra));
    let steps = vec![
        calls(vec![call("mcp__docs__echo", json!({"text": "the docs"}))]),
        calls(vec![agent_call("explore", "look", "CHILD-TASK: look around")]),
        Step::Answer("child: looked".into()),
        Step::Answer("all done".into()),
    ];
    let server = scripted(wire, steps).await;
    let result = exec(&sandbox, &model(wire, &server), "read the docs, then delegate");
    let ledger = checked_ledger(&sandbox, &result);
    let labels = sources(&ledger);
    assert_eq!(labels[0], "mcp docs", "{wire:?}: {labels:?}");
    let child = &ledger["children"][0];
    assert_eq!(child["agent"], "explore");
    assert!(labels.iter().any(|label| label.starts_with("subagent explore")), "{labels:?}");
    let child_ledger = &child["ledger"];
    assert_eq!(child_ledger["usage"], child["usage"], "the child's log agrees with its parent");
    assert_eq!(child_ledger["requests"].as_array().unwrap().len(), 1);
    let text = sandbox.keel().args(["cost", result["session_id"].as_str().unwrap()]).output();
    let text = String::from_utf8(text.unwrap().stdout).unwrap();
    assert!(text.contains("mcp docs") && text.contains("subagent explore ("), "{text}");

    let index = sandbox.home.join("stats-index.jsonl");
    let indexed = std::fs::read_to_string(&index).expect("a session indexes itself as it ends");
    assert_eq!(indexed.lines().count(), 2, "the parent and its child: {indexed}");
    let stats = keel_json(&sandbox, &["stats", "--json"]);
    let total = &stats["total"];
    assert_eq!((count(total, "sessions"), count(total, "subagent_sessions")), (1, 1), "{stats}");
    for field in ["input_tokens", "cached_input_tokens", "output_tokens"] {
        let all = count(&total["usage"], field);
        assert_eq!(all, count(&result["usage"], field), "every request once: {stats}");
    }
    assert_eq!(
        count(total, "tool_calls"),
        2,
        "the MCP call and the agent call (none in the child)"
    );
    let cost = result["cost_usd"].as_f64().unwrap();
    assert!((total["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9);
    let mode = std::fs::metadata(&index).unwrap();
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777, 0o600);
}

async fn compacting(wire: Wire) {
    let sandbox = Sandbox::new();
    let line = "fn part(value: u32) -> u32 { value * 3 + 1 } // the lexer's helper\n";
    sandbox.write("big.rs", &line.repeat(40 * 1024 / line.len()));
    write_config(&sandbox, "[context]\nwindow = 16000\n");
    let steps = vec![
        calls(vec![call("read_file", json!({"path": "big.rs"}))]),
        Step::Answer("read it".into()),
    ];
    let server = scripted(wire, steps).await;
    let result = exec(&sandbox, &model(wire, &server), "read big.rs");
    let ledger = checked_ledger(&sandbox, &result);
    let kinds: Vec<&Value> =
        ledger["requests"].as_array().unwrap().iter().map(|request| &request["kind"]).collect();
    assert!(kinds.contains(&&json!("compaction")), "{wire:?}: a summary was asked for: {kinds:?}");
    assert!(sources(&ledger).contains(&"compaction".to_owned()));
}

#[tokio::test]
async fn ledger_adds_up_with_mcp_output_and_a_subagent_on_chat() {
    mcp_and_subagent(Wire::Chat).await;
}

#[tokio::test]
async fn ledger_adds_up_with_mcp_output_and_a_subagent_on_responses() {
    mcp_and_subagent(Wire::Responses).await;
}

#[tokio::test]
async fn ledger_adds_up_with_mcp_output_and_a_subagent_on_anthropic() {
    mcp_and_subagent(Wire::Anthropic).await;
}

#[tokio::test]
async fn ledger_adds_up_across_a_compaction_on_chat() {
    compacting(Wire::Chat).await;
}

#[tokio::test]
async fn ledger_adds_up_across_a_compaction_on_responses() {
    compacting(Wire::Responses).await;
}

#[tokio::test]
async fn ledger_adds_up_across_a_compaction_on_anthropic() {
    compacting(Wire::Anthropic).await;
}

#[test]
fn stats_refuses_a_since_that_is_not_a_day() {
    let sandbox = Sandbox::new();
    let output = sandbox.keel().args(["stats", "--since", "yesterday"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("YYYY-MM-DD"));
}
