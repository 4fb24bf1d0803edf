//! Issue 5, acceptance 2, through the runtime library with a front end
//! that can say yes: a session stopped while an approval is pending (the
//! turn's future dropped, as a crash would leave it) is resumed; the same
//! approval is asked again, the approved edit runs once, and phase,
//! approved plan and tasks are as they were.

use std::sync::{Arc, Mutex};

use keel::agent::PlanReview;
use keel::config::Settings;
use keel::plan::PlanStatus;
use keel::policy::{ApprovalMode, ApprovalScope};
use keel::protocol::ToolCall;
use keel::runtime::{ApprovalAnswer, Approver, EventSink, RuntimeEvent, Session, SessionOptions};
use keel::tasks::TaskStatus;
use keel::tools::BoxFuture;
use serde_json::json;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::support::{Sandbox, read_jsonl, scripted_model};
use super::wire::{Step, Wire, call};
use super::workflow_e2e::{phase, read_hello, typo_edit};

/// Tells the test it was asked, then never answers.
struct Stalls(Option<oneshot::Sender<()>>);

impl Approver for Stalls {
    fn decide<'a>(&'a mut self, _: &'a ToolCall, _: &'a str) -> BoxFuture<'a, ApprovalAnswer> {
        if let Some(asked) = self.0.take() {
            let _ = asked.send(());
        }
        Box::pin(std::future::pending())
    }
}

/// Says yes once per call, and keeps what it was asked.
struct Approves(Arc<Mutex<Vec<String>>>);

impl Approver for Approves {
    fn decide<'a>(&'a mut self, call: &'a ToolCall, _: &'a str) -> BoxFuture<'a, ApprovalAnswer> {
        self.0.lock().unwrap().push(call.name.clone());
        Box::pin(async {
            ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once }
        })
    }
}

struct Quiet;

impl EventSink for Quiet {
    fn emit(&mut self, _event: RuntimeEvent) {}
}

fn settings(sandbox: &Sandbox, uri: &str) -> Settings {
    sandbox.settings(uri)
}

fn options(sandbox: &Sandbox) -> SessionOptions {
    sandbox.options(ApprovalMode::Ask)
}

#[tokio::test]
async fn a_pending_approval_is_asked_again_and_approved_with_plan_phase_and_tasks_restored() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let todos = json!({"todos": [{"id": "1", "text": "fix the typo", "status": "in_progress"}]});
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("todo_write", todos)] },
        read_hello(),
        phase("plan"),
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": "1. fix the typo"}))],
        },
        phase("implement"),
        typo_edit(),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let (asked_tx, asked_rx) = oneshot::channel();
    let settings_before = settings(&sandbox, &server.uri());
    let mut session = Session::start(
        &settings_before,
        options(&sandbox),
        Box::new(Quiet),
        Box::new(Stalls(Some(asked_tx))),
    )
    .unwrap();
    session.set_plan_review(PlanReview::Approve);
    let log_path = session.log_path().to_owned();
    let cancel = CancellationToken::new();
    tokio::select! {
        _ = session.run_turn("fix the typo".into(), &cancel) => panic!("the turn ended"),
        asked = asked_rx => asked.unwrap(),
    }
    drop(session);
    assert_eq!(sandbox.read("hello.txt"), "helo world\n", "not approved yet");

    let server = scripted_model(Wire::Chat, &[Step::Answer("Fixed.".into())]).await;
    let asked = Arc::new(Mutex::new(Vec::new()));
    let mut session = Session::resume(
        &settings(&sandbox, &server.uri()),
        &log_path,
        options(&sandbox),
        Box::new(Quiet),
        Box::new(Approves(asked.clone())),
    )
    .unwrap();
    assert!(session.has_open_turn());
    let flow = session.workflow();
    assert_eq!(flow.phase, "implement");
    assert_eq!(flow.plan.as_ref().map(|plan| &plan.status), Some(&PlanStatus::Approved));
    assert_eq!(session.tasks()[0].status, TaskStatus::InProgress);
    assert_eq!(session.tasks()[0].text, "fix the typo");

    let summary = session.continue_turn(&cancel).await.unwrap().unwrap();
    assert_eq!(summary.final_text.as_deref(), Some("Fixed."));
    assert_eq!(*asked.lock().unwrap(), ["edit_file"], "the pending approval, asked again");
    assert_eq!(sandbox.read("hello.txt"), "hello world\n", "approved: the edit ran");
    let log = read_jsonl(&log_path);
    let edits = log
        .iter()
        .filter(|l| l["type"] == "tool_call_started" && l["call"]["name"] == "edit_file")
        .count();
    assert_eq!(edits, 1, "ran once");
    assert_eq!(session.workflow().phase, "implement");
}
