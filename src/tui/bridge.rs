//! The runtime side of the TUI: a task that owns the [`Session`] and runs
//! one turn per prompt it receives, an [`EventSink`] that forwards events
//! over a channel, and an [`Approver`] that asks the UI and waits for the
//! answer on a oneshot.
//!
//! Invariants: the session is touched only by its task; every approval
//! request gets an answer (a dropped reply counts as "no"), so a turn never
//! hangs on a closed UI; "yes, always" prefixes live in the approver and
//! answer later matching calls without asking.

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::policy::ApprovalMode;
use crate::policy::ApprovalScope;
use crate::protocol::ToolCall;
use crate::runtime::{ApprovalAnswer, Approver, EventSink, RuntimeEvent, Session, SessionOptions};
use crate::tools::BoxFuture;

use super::app::{AllowPrefix, ApprovalReply};

/// From the runtime task to the UI.
#[derive(Debug)]
pub enum UiEvent {
    Runtime(RuntimeEvent),
    Approval {
        call: ToolCall,
        reason: String,
        reply: oneshot::Sender<ApprovalReply>,
    },
    /// A turn ended with a runtime error (log failure, …).
    TurnFailed(String),
    /// The session could not start; nothing can run.
    SessionFailed(String),
    /// The workspace's files, for `@path` completion.
    Files(Vec<String>),
    /// The session is open: its id and log path.
    SessionReady {
        session_id: String,
        log_path: std::path::PathBuf,
    },
}

/// From the UI to the runtime task.
#[derive(Debug)]
pub enum Op {
    Prompt { text: String, cancel: CancellationToken },
    SetMode(ApprovalMode),
}

/// Forwards runtime events to the UI.
pub struct ChannelSink(pub mpsc::UnboundedSender<UiEvent>);

impl EventSink for ChannelSink {
    fn emit(&mut self, event: RuntimeEvent) {
        // A closed channel means the UI is gone; the turn is being cancelled.
        let _ = self.0.send(UiEvent::Runtime(event));
    }
}

/// Asks the UI; remembers "always" prefixes.
pub struct ChannelApprover {
    events: mpsc::UnboundedSender<UiEvent>,
    allowed: Vec<AllowPrefix>,
}

impl ChannelApprover {
    pub fn new(events: mpsc::UnboundedSender<UiEvent>) -> Self {
        Self { events, allowed: Vec::new() }
    }
}

impl Approver for ChannelApprover {
    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            if self.allowed.iter().any(|prefix| prefix.matches(call)) {
                return ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once };
            }
            let (reply, answer) = oneshot::channel();
            let request =
                UiEvent::Approval { call: call.clone(), reason: reason.to_owned(), reply };
            if self.events.send(request).is_err() {
                return declined("the user closed keel");
            }
            match answer.await {
                Ok(ApprovalReply::Once) => {
                    ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once }
                }
                Ok(ApprovalReply::Always(prefix)) => {
                    // Shell prefixes are remembered as rules by the driver;
                    // other tools for the rest of this session.
                    let scope = if prefix.argv.is_empty() {
                        ApprovalScope::Once
                    } else {
                        ApprovalScope::AlwaysPrefix(prefix.argv.clone())
                    };
                    self.allowed.push(prefix);
                    ApprovalAnswer { approved: true, note: None, scope }
                }
                Ok(ApprovalReply::Deny(note)) => ApprovalAnswer {
                    approved: false,
                    note: Some(note.unwrap_or_else(|| "the user declined this call".to_owned())),
                    scope: ApprovalScope::Once,
                },
                Err(_) => declined("the user closed keel"),
            }
        })
    }
}

fn declined(note: &str) -> ApprovalAnswer {
    ApprovalAnswer { approved: false, note: Some(note.to_owned()), scope: ApprovalScope::Once }
}

/// Owns the session: starts it, then runs one turn per prompt until the
/// UI drops its sender.
pub async fn run_session(
    settings: Settings,
    options: SessionOptions,
    mut ops: mpsc::UnboundedReceiver<Op>,
    events: mpsc::UnboundedSender<UiEvent>,
) {
    let sink = Box::new(ChannelSink(events.clone()));
    let approver = Box::new(ChannelApprover::new(events.clone()));
    let mut session = match Session::start(&settings, options, sink, approver) {
        Ok(session) => session,
        Err(error) => {
            let _ = events.send(UiEvent::SessionFailed(error.to_string()));
            return;
        }
    };
    let _ = events.send(UiEvent::SessionReady {
        session_id: session.id().to_owned(),
        log_path: session.log_path().to_owned(),
    });
    while let Some(op) = ops.recv().await {
        match op {
            Op::Prompt { text, cancel } => {
                if let Err(error) = session.run_turn(text, &cancel).await {
                    let _ = events.send(UiEvent::TurnFailed(error.to_string()));
                }
            }
            Op::SetMode(mode) => session.set_approval_mode(mode),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str) -> ToolCall {
        ToolCall {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
            item_id: None,
        }
    }

    #[tokio::test]
    async fn always_answers_matching_calls_without_asking() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut approver = ChannelApprover::new(tx);
        let first = shell("cargo test --all");
        let asking = tokio::spawn(async move {
            let answer = approver.decide(&first, "why").await;
            (approver, answer)
        });
        let Some(UiEvent::Approval { reply, .. }) = rx.recv().await else { panic!("no request") };
        let prefix = AllowPrefix::for_call(&shell("cargo test --all"));
        assert_eq!(prefix.describe(), "`cargo test`");
        reply.send(ApprovalReply::Always(prefix)).unwrap();
        let (mut approver, answer) = asking.await.unwrap();
        assert!(answer.approved);
        let again = approver.decide(&shell("cargo test -p x"), "why").await;
        assert!(again.approved);
        assert!(rx.try_recv().is_err(), "asked again");
    }

    #[tokio::test]
    async fn a_closed_ui_declines() {
        let (tx, rx) = mpsc::unbounded_channel();
        drop(rx);
        let mut approver = ChannelApprover::new(tx);
        assert!(!approver.decide(&shell("rm -rf x"), "why").await.approved);
    }
}
