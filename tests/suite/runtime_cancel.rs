//! The runtime library: an interrupt while an approval is pending ends the
//! turn at once, whatever the front end's approver does.

use keel::policy::ApprovalMode;
use keel::protocol::{ToolCall, TurnOutcome};
use keel::runtime::{ApprovalAnswer, Approver, EventSink, RuntimeEvent, Session};
use keel::tools::BoxFuture;
use serde_json::json;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::support::{Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

/// Tells the test it was asked, then never answers.
struct SilentApprover {
    asked: Option<oneshot::Sender<()>>,
}

impl Approver for SilentApprover {
    fn decide<'a>(
        &'a mut self,
        _call: &'a ToolCall,
        _reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        if let Some(asked) = self.asked.take() {
            let _ = asked.send(());
        }
        Box::pin(std::future::pending())
    }
}

struct Quiet;

impl EventSink for Quiet {
    fn emit(&mut self, _event: RuntimeEvent) {}
}

#[tokio::test]
async fn an_interrupt_does_not_wait_for_a_pending_approval() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "touch nope.txt"}))],
        },
        Step::Answer("unreachable".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let settings = sandbox.settings(&server.uri());
    let options = sandbox.options(ApprovalMode::Ask);
    let (asked_tx, asked_rx) = oneshot::channel();
    let approver = SilentApprover { asked: Some(asked_tx) };
    let mut session =
        Session::start(&settings, options, Box::new(Quiet), Box::new(approver)).unwrap();
    let cancel = CancellationToken::new();
    let interrupt = cancel.clone();
    tokio::spawn(async move {
        if asked_rx.await.is_ok() {
            interrupt.cancel();
        }
    });
    let summary = tokio::time::timeout(
        std::time::Duration::from_secs(20),
        session.run_turn("go".into(), &cancel),
    )
    .await
    .expect("the turn hung on the pending approval")
    .unwrap();
    assert_eq!(summary.outcome, TurnOutcome::Interrupted);
    assert!(!sandbox.repo.join("nope.txt").exists());
}
