//! A plan approved "then auto" (the TUI's `A` on the plan review) puts the
//! rest of the same turn in auto mode: the write the plan leads to runs
//! without a second approval, and the switch is logged. Approved "then
//! ask", the same write is asked about. Runtime library, scripted model.

use std::sync::{Arc, Mutex};

use keel::policy::{ApprovalMode, ApprovalScope};
use keel::protocol::{ToolCall, TurnOutcome};
use keel::runtime::{ApprovalAnswer, Approver, EventSink, RuntimeEvent, Session};
use keel::tools::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

/// Approves the plan choosing `mode`; declines (and lists) anything else.
struct PlanApprover {
    mode: ApprovalMode,
    chosen: Option<ApprovalMode>,
    asked: Arc<Mutex<Vec<String>>>,
}

impl Approver for PlanApprover {
    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        _reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        self.asked.lock().unwrap().push(call.name.clone());
        let plan = call.name == "submit_plan";
        if plan {
            self.chosen = Some(self.mode);
        }
        Box::pin(async move {
            let note = (!plan).then(|| "declined by the test".to_owned());
            ApprovalAnswer { approved: plan, note, scope: ApprovalScope::Once }
        })
    }

    fn take_plan_mode(&mut self) -> Option<ApprovalMode> {
        self.chosen.take()
    }
}

#[derive(Clone, Default)]
struct Modes(Arc<Mutex<Vec<ApprovalMode>>>);

impl EventSink for Modes {
    fn emit(&mut self, event: RuntimeEvent) {
        if let RuntimeEvent::ModeChanged { mode } = event {
            self.0.lock().unwrap().push(mode);
        }
    }
}

/// Runs plan → approval (choosing `mode`) → write_file; returns the
/// sandbox, the approvals asked, the modes announced and the log.
async fn plan_then_write(mode: ApprovalMode) -> (Sandbox, Vec<String>, Vec<ApprovalMode>) {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": "# Plan\n\n1. write a.txt"}))],
        },
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "a.txt", "content": "done\n"}))],
        },
        Step::Answer("written".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let settings = sandbox.settings(&server.uri());
    let options = sandbox.options(ApprovalMode::Plan);
    let asked = Arc::new(Mutex::new(Vec::new()));
    let approver = PlanApprover { mode, chosen: None, asked: asked.clone() };
    let modes = Modes::default();
    let mut session =
        Session::start(&settings, options, Box::new(modes.clone()), Box::new(approver)).unwrap();
    let summary = session.run_turn("write a.txt".into(), &CancellationToken::new()).await.unwrap();
    assert_eq!(summary.outcome, TurnOutcome::Completed);
    let asked = asked.lock().unwrap().clone();
    let modes = modes.0.lock().unwrap().clone();
    (sandbox, asked, modes)
}

#[tokio::test]
async fn approved_then_auto_runs_the_rest_of_the_turn_in_auto() {
    let (sandbox, asked, modes) = plan_then_write(ApprovalMode::Auto).await;
    assert_eq!(asked, ["submit_plan"], "the write ran without asking");
    assert_eq!(sandbox.read("a.txt"), "done\n");
    assert_eq!(modes, [ApprovalMode::Ask, ApprovalMode::Auto], "plan → ask → auto");
    let log = sandbox.only_log();
    let logged: Vec<&str> = log
        .iter()
        .filter(|line| line["type"] == "mode_changed")
        .filter_map(|line| line["mode"].as_str())
        .collect();
    assert_eq!(logged, ["ask", "auto"]);
}

#[tokio::test]
async fn approved_then_ask_still_asks_before_the_write() {
    let (sandbox, asked, modes) = plan_then_write(ApprovalMode::Ask).await;
    assert_eq!(asked, ["submit_plan", "write_file"]);
    assert!(!sandbox.repo.join("a.txt").exists(), "declined by the test");
    assert_eq!(modes, [ApprovalMode::Ask]);
}

/// Edits the saved plan file during the review (as `$EDITOR` would), then
/// approves; declines anything else.
struct EditingApprover {
    plans: std::path::PathBuf,
}

impl Approver for EditingApprover {
    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        _reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        let plan = call.name == "submit_plan";
        if plan {
            let file = std::fs::read_dir(&self.plans).unwrap().next().unwrap().unwrap().path();
            let text = std::fs::read_to_string(&file).unwrap();
            std::fs::write(&file, format!("{text}\n2. EDITED-STEP: also update the docs\n"))
                .unwrap();
        }
        Box::pin(async move {
            ApprovalAnswer { approved: plan, note: None, scope: ApprovalScope::Once }
        })
    }
}

#[tokio::test]
async fn a_plan_edited_during_the_review_is_the_approved_plan_in_the_log() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": "# Plan\n\n1. write a.txt"}))],
        },
        Step::Answer("planned".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let settings = sandbox.settings(&server.uri());
    let approver = EditingApprover { plans: sandbox.repo.join(".keel").join("plans") };
    let options = sandbox.options(ApprovalMode::Plan);
    let mut session =
        Session::start(&settings, options, Box::new(Modes::default()), Box::new(approver)).unwrap();
    session.run_turn("plan it".into(), &CancellationToken::new()).await.unwrap();
    let approved = session.workflow().plan.clone().unwrap();
    assert!(approved.text.contains("EDITED-STEP"), "the state holds the edited plan");
    let log = sandbox.only_log();
    let last = log.iter().rev().find(|line| line["type"] == "plan_updated").unwrap();
    assert_eq!(last["plan"]["status"], "approved");
    assert!(last["plan"]["text"].as_str().unwrap().contains("EDITED-STEP"), "{last}");
}
