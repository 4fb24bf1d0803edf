//! MCP tools in a session: a tool-list change applied at the next turn
//! and recorded (the only break of the request prefix), progress and
//! cancellation, "always" answers remembered per tool, hooks seeing MCP
//! calls with Claude's names, and a resume that never re-runs an
//! interrupted call.

use std::sync::{Arc, Mutex};

use keel::policy::{ApprovalMode, ApprovalScope};
use keel::protocol::{ToolCall, TurnOutcome};
use keel::runtime::{ApprovalAnswer, Approver, EventSink, RuntimeEvent, Session};
use keel::tools::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::mcp_support::{fault_table, python, recorded, write_config};
use super::support::{Model, Sandbox, json_lines, read_jsonl, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// Keeps every event; cancels `cancel` on the first tool progress.
#[derive(Clone, Default)]
struct Recorder {
    events: Arc<Mutex<Vec<RuntimeEvent>>>,
    cancel_on_progress: Option<CancellationToken>,
}

impl EventSink for Recorder {
    fn emit(&mut self, event: RuntimeEvent) {
        if let (RuntimeEvent::ToolProgress { .. }, Some(cancel)) =
            (&event, &self.cancel_on_progress)
        {
            cancel.cancel();
        }
        self.events.lock().unwrap().push(event);
    }
}

/// Answers "yes, always" and counts the questions.
#[derive(Clone, Default)]
struct AlwaysYes {
    asked: Arc<Mutex<Vec<String>>>,
}

impl Approver for AlwaysYes {
    fn decide<'a>(&'a mut self, call: &'a ToolCall, _: &'a str) -> BoxFuture<'a, ApprovalAnswer> {
        self.asked.lock().unwrap().push(call.name.clone());
        let scope = ApprovalScope::AlwaysTool(call.name.clone());
        Box::pin(async move { ApprovalAnswer { approved: true, note: None, scope } })
    }
}

fn calls(list: &[(&str, Value)]) -> Step {
    Step::Calls { text: None, calls: list.iter().map(|(n, a)| call(n, a.clone())).collect() }
}

fn tools_of(body: &Value) -> String {
    body["tools"].to_string()
}

fn log_lines(session: &Session) -> Vec<Value> {
    read_jsonl(session.log_path())
}

#[tokio::test]
async fn a_tool_list_change_reaches_the_model_at_the_next_turn_and_is_recorded() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("changes.jsonl");
    write_config(&sandbox, &fault_table("changes", &python, "list-changes", &record, ""));
    let steps = [
        calls(&[("mcp__changes__echo", json!({"text": "a"}))]),
        calls(&[("mcp__changes__echo", json!({"text": "b"}))]),
        Step::Answer("one".into()),
        calls(&[("mcp__changes__extra", json!({}))]),
        Step::Answer("two".into()),
    ];
    let model = scripted_model(Wire::Chat, &steps).await;
    let settings = sandbox.settings(&model.uri());
    let recorder = Recorder::default();
    let mut session = Session::start(
        &settings,
        sandbox.options(ApprovalMode::Yolo),
        Box::new(recorder.clone()),
        Box::new(AlwaysYes::default()),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let first = session.run_turn("first".into(), &cancel).await.unwrap();
    assert_eq!(first.outcome, TurnOutcome::Completed);
    let second = session.run_turn("second".into(), &cancel).await.unwrap();
    assert_eq!(second.outcome, TurnOutcome::Completed);
    session.end("test").await.unwrap();

    let bodies = request_bodies(&model).await;
    assert_eq!(bodies.len(), 5);
    // Within the first turn the tool bytes never moved, though the list
    // changed after its first call.
    assert_eq!(tools_of(&bodies[0]), tools_of(&bodies[1]));
    assert_eq!(tools_of(&bodies[1]), tools_of(&bodies[2]));
    assert!(!tools_of(&bodies[2]).contains("mcp__changes__extra"));
    assert!(tools_of(&bodies[3]).contains("mcp__changes__extra"));
    assert_eq!(tools_of(&bodies[3]), tools_of(&bodies[4]));
    let log = log_lines(&session);
    let changed: Vec<&Value> = log.iter().filter(|l| l["type"] == "tools_changed").collect();
    assert_eq!(changed.len(), 1, "{log:#?}");
    assert_eq!(changed[0]["added"], json!(["mcp__changes__extra"]));
    let turn_two = log.iter().position(|l| l["type"] == "turn_started" && l["turn"] == 2).unwrap();
    let change_at = log.iter().position(|l| l["type"] == "tools_changed").unwrap();
    assert!(change_at < turn_two, "recorded at the turn boundary, before the turn");
    let results: Vec<&str> = log
        .iter()
        .filter(|l| l["type"] == "tool_call_finished")
        .map(|l| l["result"]["output"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["echo: a", "echo: b", "extra works"]);
}

#[tokio::test]
async fn an_interrupt_cancels_a_running_mcp_call_with_notifications_cancelled() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("slow.jsonl");
    write_config(&sandbox, &fault_table("fault", &python, "ok", &record, ""));
    let steps = [calls(&[("mcp__fault__slow", json!({}))]), Step::Answer("unreachable".into())];
    let model = scripted_model(Wire::Chat, &steps).await;
    let settings = sandbox.settings(&model.uri());
    let cancel = CancellationToken::new();
    let recorder = Recorder { cancel_on_progress: Some(cancel.clone()), ..Recorder::default() };
    let mut session = Session::start(
        &settings,
        sandbox.options(ApprovalMode::Ask),
        Box::new(recorder.clone()),
        Box::new(AlwaysYes::default()),
    )
    .unwrap();
    let summary = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        session.run_turn("go".into(), &cancel),
    )
    .await
    .expect("the turn hung on the running call")
    .unwrap();
    assert_eq!(summary.outcome, TurnOutcome::Interrupted);
    // The notification is written by the MCP service's own task; ending
    // the session stops the server, which a loaded machine can do before
    // the server has read it. Wait for it to arrive first (bounded).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !recorded(&record).iter().any(|m| m["method"] == "notifications/cancelled")
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    session.end("test").await.unwrap();
    let events = recorder.events.lock().unwrap();
    let progress = events.iter().find_map(|event| match event {
        RuntimeEvent::ToolProgress { progress, total, message, .. } => {
            Some((*progress, *total, message.clone()))
        }
        _ => None,
    });
    assert_eq!(progress, Some((1.0, Some(2.0), Some("halfway".to_owned()))));
    // The ready status offers the server's prompt as a slash command.
    let prompts = events.iter().find_map(|event| match event {
        RuntimeEvent::McpServerStatus { status, prompts, .. } if status == "ready" => {
            Some(prompts.clone())
        }
        _ => None,
    });
    assert_eq!(prompts, Some(vec![("/mcp__fault__review".to_owned(), "Review a file".to_owned())]));
    let received = recorded(&record);
    let call_id = received.iter().find(|m| m["method"] == "tools/call").unwrap()["id"].clone();
    let cancelled = received
        .iter()
        .find(|m| m["method"] == "notifications/cancelled")
        .expect("no notifications/cancelled reached the server");
    assert_eq!(cancelled["params"]["requestId"], call_id);
    let log = log_lines(&session);
    let result = log.iter().find(|l| l["type"] == "tool_call_finished").unwrap();
    assert_eq!(result["result"]["is_error"], true);
}

#[tokio::test]
async fn always_is_remembered_per_tool_and_persisted_as_a_tool_rule() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("always.jsonl");
    write_config(&sandbox, &fault_table("fault", &python, "ok", &record, ""));
    let steps = [
        calls(&[("mcp__fault__add", json!({}))]),
        calls(&[("mcp__fault__add", json!({}))]),
        Step::Answer("twice".into()),
    ];
    let model = scripted_model(Wire::Chat, &steps).await;
    let approver = AlwaysYes::default();
    let mut session = Session::start(
        &sandbox.settings(&model.uri()),
        sandbox.options(ApprovalMode::Ask),
        Box::new(Recorder::default()),
        Box::new(approver.clone()),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    session.run_turn("go".into(), &cancel).await.unwrap();
    session.end("test").await.unwrap();
    assert_eq!(*approver.asked.lock().unwrap(), ["mcp__fault__add"], "asked once, not twice");
    let count = std::fs::read_to_string(format!("{}.count", record.display())).unwrap();
    assert_eq!(count, "added\nadded\n");
    let rules = std::fs::read_to_string(sandbox.repo.join(".keel/rules/local.rules")).unwrap();
    assert_eq!(rules, "tool_rule(name=\"mcp__fault__add\", decision=\"allow\")\n");
    let approval = log_lines(&session).into_iter().find(|l| l["type"] == "approval").unwrap();
    assert_eq!(approval["scope"], "always");
    assert_eq!(approval["tool"], "mcp__fault__add");

    // A later session of the trusted project does not ask again.
    keel::config::rules::trust_project(&sandbox.home, &sandbox.repo).unwrap();
    let model = scripted_model(
        Wire::Chat,
        &[calls(&[("mcp__fault__add", json!({}))]), Step::Answer("again".into())],
    )
    .await;
    let later = AlwaysYes::default();
    let mut session = Session::start(
        &sandbox.settings(&model.uri()),
        sandbox.options(ApprovalMode::Ask),
        Box::new(Recorder::default()),
        Box::new(later.clone()),
    )
    .unwrap();
    session.run_turn("go".into(), &cancel).await.unwrap();
    session.end("test").await.unwrap();
    assert!(later.asked.lock().unwrap().is_empty(), "the persisted rule allowed it");
    let count = std::fs::read_to_string(format!("{}.count", record.display())).unwrap();
    assert_eq!(count.lines().count(), 3);
}

#[tokio::test]
async fn hooks_see_mcp_calls_with_claude_names() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("hooked.jsonl");
    let pre = sandbox.home.join("pre.jsonl");
    let post = sandbox.home.join("post.jsonl");
    let hooks = format!(
        "[[hooks.PreToolUse]]\nmatcher = \"mcp__fault__.*\"\n[[hooks.PreToolUse.hooks]]\n\
         type = \"command\"\ncommand = \"cat >> {pre}; echo >> {pre}\"\n\n\
         [[hooks.PreToolUse]]\nmatcher = \"mcp__fault__add\"\n[[hooks.PreToolUse.hooks]]\n\
         type = \"command\"\ncommand = \"echo 'BLOCKED: no adding' >&2; exit 2\"\n\n\
         [[hooks.PostToolUse]]\nmatcher = \"mcp__.*__echo\"\n[[hooks.PostToolUse.hooks]]\n\
         type = \"command\"\ncommand = \"cat >> {post}; echo >> {post}\"\n\n",
        pre = pre.display(),
        post = post.display()
    );
    write_config(&sandbox, &(hooks + &fault_table("fault", &python, "ok", &record, "")));
    let model = scripted_model(
        Wire::Chat,
        &[
            calls(&[("mcp__fault__echo", json!({"text": "hi"})), ("mcp__fault__add", json!({}))]),
            Step::Answer("ok".into()),
        ],
    )
    .await;
    let output = sandbox.run(&Model::chat(&model), &["exec", "--json", "--yolo", "go"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let seen: Vec<Value> = read_jsonl(&pre);
    let names: Vec<&str> = seen.iter().map(|p| p["tool_name"].as_str().unwrap()).collect();
    assert_eq!(names, ["mcp__fault__echo", "mcp__fault__add"]);
    assert_eq!(seen[0]["tool_input"], json!({"text": "hi"}));
    let after: Vec<Value> = read_jsonl(&post);
    assert_eq!(after.len(), 1);
    assert_eq!(after[0]["tool_name"], "mcp__fault__echo");
    assert!(after[0]["tool_response"].to_string().contains("echo: hi"), "{}", after[0]);
    let lines = json_lines(&output.stdout);
    let add = lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == "mcp__fault__add")
        .unwrap();
    assert!(add["item"]["output"].as_str().unwrap().contains("BLOCKED: no adding"));
    assert!(!std::path::Path::new(&format!("{}.count", record.display())).exists());
}

/// The log line number at which a run of `steps` records `add`'s result.
async fn finished_seq(python: &str, steps: &[Step]) -> u64 {
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("probe.jsonl");
    write_config(&sandbox, &fault_table("fault", python, "ok", &record, ""));
    let model = scripted_model(Wire::Chat, steps).await;
    let output = resume_cmd(&sandbox, &model, None).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let log = sandbox.only_log();
    log.iter().find(|l| l["type"] == "tool_call_finished").unwrap()["seq"].as_u64().unwrap()
}

fn resume_cmd(
    sandbox: &Sandbox,
    model: &wiremock::MockServer,
    resume: Option<()>,
) -> assert_cmd::Command {
    let mut cmd = sandbox.keel();
    cmd.args(["exec", "--json", "--yolo", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", model.uri())]);
    match resume {
        Some(()) => cmd.args(["resume", "--last"]),
        None => cmd.arg("add one"),
    };
    cmd
}

#[tokio::test]
async fn a_resume_never_runs_an_interrupted_mcp_call_again() {
    let Some(python) = python() else { return };
    let steps = [calls(&[("mcp__fault__add", json!({}))]), Step::Answer("added".into())];
    let seq = finished_seq(&python, &steps).await;

    let sandbox = Sandbox::new();
    let record = sandbox.home.join("resume.jsonl");
    write_config(&sandbox, &fault_table("fault", &python, "ok", &record, ""));
    let model = scripted_model(Wire::Chat, &steps).await;
    // Killed while writing the call's result: the call ran, its result
    // never reached the log.
    let crashed = resume_cmd(&sandbox, &model, None)
        .env("KEEL_TEST_CRASH_IN_SEQ", seq.to_string())
        .output()
        .unwrap();
    assert_ne!(crashed.status.code(), Some(0));
    let counter = format!("{}.count", record.display());
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "added\n");

    let model = scripted_model(Wire::Chat, &[Step::Answer("it may have run".into())]).await;
    let resumed = resume_cmd(&sandbox, &model, Some(())).output().unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "added\n", "it ran again");
    let bodies = request_bodies(&model).await;
    let told = bodies[0].to_string();
    assert!(
        told.contains("interrupted: keel stopped before this call's result was recorded"),
        "{told}"
    );
    assert!(tools_of(&bodies[0]).contains("mcp__fault__add"));
}
