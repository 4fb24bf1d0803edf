//! A long session crosses the compaction threshold twice (over two
//! processes, the second a resume) and keeps the thread: after each
//! compaction the request still carries the goal, the latest request, the
//! approved plan, the open tasks and the AGENTS.md text; a third process
//! resumes from the second compaction and finishes.

use std::sync::Mutex;

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::context_requests::{filter, render as render_request};
use super::support::{Sandbox, json_lines, request_bodies};
use super::wire::{Step, Wire, call, render};

const GOAL: &str = "GOAL-7f3: make the lexer accept tabs";
const LATEST: &str = "LATEST-9c1: also handle CRLF line endings";
const AGENTS_RULE: &str = "AGENTS-RULE-41d: indent with tabs";
const PLAN: &str = "PLAN-5e2: change lexer.rs, then run the tests";
const TASK: &str = "TASK-2b8: teach the lexer tabs";

/// Plays `steps` in order for ordinary requests and answers summary
/// requests with a numbered summary. Reports input tokens as the request's
/// size, as a real provider would, so the threshold sees real figures.
struct Model {
    steps: Mutex<Vec<Step>>,
    played: Mutex<usize>,
    summaries: Mutex<usize>,
}

impl Respond for Model {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let step = if body.contains("compacting a coding session") {
            let mut summaries = self.summaries.lock().unwrap();
            *summaries += 1;
            Step::Answer(format!("SUMMARY-{}: lexer work in progress", *summaries))
        } else {
            let mut played = self.played.lock().unwrap();
            let steps = self.steps.lock().unwrap();
            let step = steps[(*played).min(steps.len() - 1)].clone();
            *played += 1;
            step
        };
        let tokens = body.len() / 3;
        let sse = render(Wire::Chat, &step, 0)
            .replace("\"prompt_tokens\":100", &format!("\"prompt_tokens\":{tokens}"));
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(sse)
    }
}

async fn model(steps: Vec<Step>) -> MockServer {
    let server = MockServer::start().await;
    let model = Model { steps: Mutex::new(steps), played: Mutex::new(0), summaries: Mutex::new(0) };
    Mock::given(method("POST")).respond_with(model).mount(&server).await;
    server
}

fn reads(files: std::ops::Range<usize>) -> Vec<Step> {
    files
        .map(|i| Step::Calls {
            text: None,
            calls: vec![call("read_file", json!({"path": format!("src/part{i}.rs")}))],
        })
        .collect()
}

/// Varied text, so tokens are not one repeated word.
fn source_file(i: usize) -> String {
    (0..220)
        .map(|line| format!("let value_{i}_{line} = compute({line}, \"part {i}\");\n"))
        .collect()
}

fn exec(sandbox: &Sandbox, server: &MockServer, args: &[&str]) -> Vec<Value> {
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    json_lines(&output.stdout)
}

fn compactions(sandbox: &Sandbox) -> Vec<Value> {
    sandbox.only_log().into_iter().filter(|line| line["type"] == "compaction").collect()
}

/// The request right after the latest summary, as one string.
async fn request_after_summary(server: &MockServer) -> String {
    let requests = request_bodies(server).await;
    let summary_at = requests
        .iter()
        .rposition(|body| body.to_string().contains("compacting a coding session"))
        .expect("a summary was asked for");
    requests[summary_at + 1].to_string()
}

/// The request after a compaction, one line per item, then the summary
/// block in full (session ids filtered).
fn snapshot(sandbox: &Sandbox, request: &str) -> String {
    let body: Value = serde_json::from_str(request).unwrap();
    let lines = render_request(Wire::Chat, &body);
    let block = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["content"].as_str())
        .find(|text| text.starts_with("<keel-compaction-summary>"))
        .unwrap_or("");
    let mut text = filter(&format!("{lines}\n{block}\n"), sandbox);
    if let Some(start) = text.find(".keel/plans/") {
        let from = start + ".keel/plans/".len();
        let end = text[from..].find("-r").map_or(from, |n| from + n);
        text.replace_range(from..end, "[SESSION]");
    }
    text
}

fn assert_thread_kept(request: &str, latest: &str) {
    for kept in [GOAL, latest, AGENTS_RULE, PLAN, TASK] {
        assert!(request.contains(kept), "`{kept}` is missing after compaction");
    }
    assert!(request.contains("<keel-compaction-summary>"));
}

#[tokio::test]
async fn a_long_session_compacts_twice_keeps_the_thread_and_resumes() {
    let sandbox = Sandbox::new();
    sandbox.write("AGENTS.md", &format!("# Project\n\n{AGENTS_RULE}\n"));
    sandbox.write("lexer.rs", "fn lex() {}\n");
    for i in 0..10 {
        sandbox.write(&format!("src/part{i}.rs"), &source_file(i));
    }
    std::fs::write(sandbox.home.join("config.toml"), "[context]\nwindow = 24000\n").unwrap();

    // First process: tasks, an approved plan, then reads until a summary.
    let tasks = json!({"todos": [{"id": "1", "text": TASK, "status": "in_progress"}]});
    let mut first = vec![
        Step::Calls { text: None, calls: vec![call("todo_write", tasks)] },
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": PLAN}))],
        },
    ];
    first.extend(reads(0..5));
    first.push(Step::Answer("first part done".into()));
    let server = model(first).await;
    let lines = exec(&sandbox, &server, &["--approve-plan", GOAL]);
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let summaries: Vec<Value> =
        compactions(&sandbox).into_iter().filter(|c| c["method"] == "summary").collect();
    let first_count = summaries.len();
    assert!(first_count >= 1, "a summary in the first process");
    assert_eq!(summaries[0]["reason"], "threshold");
    assert!(summaries[0]["tokens_after"].as_u64() < summaries[0]["tokens_before"].as_u64());
    let after = request_after_summary(&server).await;
    assert_thread_kept(&after, GOAL);
    insta::assert_snapshot!("request_after_compaction", snapshot(&sandbox, &after));
    let at = |kind: &str| lines.iter().position(|line| line["type"] == kind);
    assert!(at("compacting").is_some(), "exec --json says a summary is being written");
    assert!(at("compacting") < at("compacted"), "then that it is done");
    let id = lines[0]["session_id"].as_str().unwrap().to_owned();

    // Second process: a resume with a new request crosses it again.
    let mut second = reads(5..10);
    second.push(Step::Answer("second part done".into()));
    let server = model(second).await;
    exec(&sandbox, &server, &["--resume", &id, LATEST]);
    let after = compactions(&sandbox).into_iter().filter(|c| c["method"] == "summary").count();
    assert!(after > first_count, "another summary after the resume");
    assert_thread_kept(&request_after_summary(&server).await, LATEST);

    // Third process: resumes from the second compaction and finishes.
    let server = model(vec![Step::Answer("all done".into())]).await;
    let lines = exec(&sandbox, &server, &["--resume", &id, "wrap up"]);
    assert_eq!(lines.last().unwrap()["final_text"], "all done");
    let request = request_bodies(&server).await[0].to_string();
    let latest = compactions(&sandbox).pop().unwrap().to_string();
    let summary = latest.split("SUMMARY-").nth(1).unwrap().split(':').next().unwrap().to_owned();
    assert!(
        request.contains(&format!("SUMMARY-{summary}:")),
        "the history starts at the latest compaction"
    );
    assert_eq!(request.matches("<keel-compaction-summary>").count(), 1);
    assert!(request.contains(GOAL) && request.contains(AGENTS_RULE));
    assert!(!request.contains("let value_0_0"), "compacted outputs stay out");
}

#[tokio::test]
async fn precompact_and_sessionstart_compact_hooks_run_around_a_summary() {
    let sandbox = Sandbox::new();
    for i in 0..5 {
        sandbox.write(&format!("src/part{i}.rs"), &source_file(i));
    }
    // A memory note saved mid-session is in the index after the summary.
    let note = "---\ndescription: NOTE-77 saved mid-session\n---\nbody\n";
    sandbox.write(
        "save_note.sh",
        &format!("mkdir -p .keel/memory && printf '%s' '{note}' > .keel/memory/n.md\n"),
    );
    let context = r#"echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"REMINDER-0a9: tabs only"}}'"#;
    let config = format!(
        "[context]\nwindow = 24000\n\n\
         [[hooks.PreCompact]]\nmatcher = \"auto\"\n[[hooks.PreCompact.hooks]]\ntype = \"command\"\ncommand = \"cat > precompact.json && sh save_note.sh\"\n\n\
         [[hooks.SessionStart]]\nmatcher = \"compact\"\n[[hooks.SessionStart.hooks]]\ntype = \"command\"\ncommand = {context:?}\n"
    );
    std::fs::write(sandbox.home.join("config.toml"), config).unwrap();
    let mut steps = reads(0..5);
    steps.push(Step::Answer("done".into()));
    let server = model(steps).await;
    exec(&sandbox, &server, &[GOAL]);

    let payload: Value = serde_json::from_str(&sandbox.read("precompact.json")).unwrap();
    assert_eq!(payload["hook_event_name"], "PreCompact");
    assert_eq!(payload["trigger"], "auto");
    let after = request_after_summary(&server).await;
    assert!(after.contains("REMINDER-0a9: tabs only"), "SessionStart(compact) context is in");
    assert!(after.contains("NOTE-77 saved mid-session"), "memory is read again");
    // Started without notes: no read_memory until the first note appears,
    // then offered with its announcement, a recorded tool-set change.
    let offers_read_memory = |body: &Value| {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|tool| tool["function"]["name"] == "read_memory")
    };
    let requests = request_bodies(&server).await;
    assert!(!offers_read_memory(&requests[0]), "no notes, no read_memory");
    let after: Value = serde_json::from_str(&after).unwrap();
    assert!(offers_read_memory(&after), "the first note brings read_memory");
    assert!(offers_read_memory(requests.last().unwrap()), "and it stays");
    let changes: Vec<Value> =
        sandbox.only_log().into_iter().filter(|line| line["type"] == "tools_changed").collect();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["reason"], "memory notes appeared");
    assert_eq!(changes[0]["added"], json!(["read_memory"]));
    let runs: Vec<Value> =
        sandbox.only_log().into_iter().filter(|line| line["type"] == "hook_ran").collect();
    let events: Vec<&str> = runs.iter().filter_map(|run| run["event"].as_str()).collect();
    assert_eq!(events, ["PreCompact", "SessionStart"], "both recorded, in order");
}
