//! The runtime side of the TUI: a task that owns the [`Session`] and runs
//! one turn per prompt it receives, an [`EventSink`] that forwards events
//! over a channel, and an [`Approver`] that asks the UI and waits for the
//! answer on a oneshot.
//!
//! Invariants: the session is touched only by its task; every approval
//! request gets an answer (a dropped reply counts as "no"), so a turn never
//! hangs on a closed UI; "yes, always" prefixes live in the approver and
//! answer later matching calls without asking; a plan approved "then auto"
//! leaves the chosen mode in the approver, which the session takes right
//! after the plan's result (`Approver::take_plan_mode`), so the rest of
//! the same turn already runs in it.

use std::path::PathBuf;

use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::{BudgetHit, SpendLimits};
use crate::config::Settings;
use crate::policy::ApprovalMode;
use crate::policy::ApprovalScope;
use crate::protocol::ToolCall;
use crate::runtime::{
    ApprovalAnswer, Approver, AttachHost, EventSink, RuntimeEvent, Session, SessionOptions,
};

use super::app::{AllowPrefix, ApprovalReply};
use super::transcript::Level;

/// From the runtime task to the UI.
#[derive(Debug)]
pub enum UiEvent {
    Runtime(RuntimeEvent),
    Approval {
        call: ToolCall,
        reason: String,
        /// Whether "always" may be offered.
        always: bool,
        reply: oneshot::Sender<ApprovalReply>,
    },
    /// The next request would cross a spend limit: `Once` raises it (to
    /// `BudgetHit::raised`), anything else ends the turn.
    RaiseLimit {
        hit: BudgetHit,
        reply: oneshot::Sender<ApprovalReply>,
    },
    /// A turn ended with a runtime error (log failure, …).
    TurnFailed(String),
    /// The session could not start; nothing can run.
    SessionFailed(crate::runtime::RuntimeError),
    /// The workspace's files, for `@path` completion.
    Files(Vec<String>),
    /// The session is open: its id and log path.
    SessionReady {
        session_id: String,
        log_path: PathBuf,
    },
    /// A resumed session's conversation so far and its token totals.
    History(Vec<crate::protocol::Item>, crate::protocol::Usage, Option<f64>),
    /// The skills `/<name>` can invoke: (name, description).
    Skills(Vec<(String, String)>),
    /// The custom commands: (name, argument hint, description).
    Commands(Vec<(String, String, String)>),
    /// Something to tell the user that is not a runtime event.
    Notice(Level, String),
    /// The clipboard's image (Ctrl+V), prepared, or why there is none.
    ClipboardImage(Result<crate::protocol::ImagePart, String>),
    /// `/compact` finished: whether anything was compacted, or the error.
    Compacted(Result<bool, String>),
    /// `/diff`: the output of `git diff`, or why it failed.
    Diff(Result<String, String>),
    /// The answer to an [`Op::Rewind`].
    Rewind(super::rewind_view::RewindReply),
    /// The model asks the user (`ask_user`); `None` answers "no one
    /// answered".
    Question {
        question: String,
        choices: Vec<String>,
        reply: oneshot::Sender<Option<String>>,
    },
    /// Where what the user types during a turn goes (`runtime/inbox.rs`).
    Inbox(crate::runtime::InputSender),
    /// An attached terminal answered the approval of `call_id` first
    /// (`runtime/attach_host.rs`): its dialog closes.
    AnsweredElsewhere {
        call_id: String,
    },
    /// Input typed in an attached terminal starts a turn while none ran:
    /// Esc cancels this token.
    QueuedTurn(CancellationToken),
    /// What the session runs with, after every operation.
    InForce(Box<crate::runtime::InForce>),
    /// What became of an [`Op::UserShell`].
    UserShell(Result<crate::runtime::UserShell, String>),
}

/// Which session the task opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionSource {
    New,
    /// Resume the session logged here (and finish its open turn on
    /// [`Op::Continue`]).
    Resume(PathBuf),
}

/// From the UI to the runtime task.
#[derive(Debug)]
pub enum Op {
    Prompt {
        text: String,
        /// Images attached to it.
        images: Vec<crate::protocol::ImagePart>,
        cancel: CancellationToken,
    },
    /// `/<skill> args`: the skill's prompt, run as a turn.
    Skill {
        name: String,
        args: String,
        cancel: CancellationToken,
    },
    /// `/compact [focus]`.
    Compact {
        focus: Option<String>,
        cancel: CancellationToken,
    },
    /// Finish a resumed session's open turn, if it has one.
    Continue {
        cancel: CancellationToken,
    },
    /// `/undo`: restore the files of the last file-changing turn.
    Undo,
    /// Esc Esc, `/rewind`, `/fork` (`rewind_view.rs`).
    Rewind(super::rewind_view::RewindOp),
    /// `/ps`: stop background process N.
    StopProcess(u32),
    /// `/permissions remove N`: take an "always" answer back.
    RemoveAlways(ApprovalScope),
    SetMode(ApprovalMode),
    SetModel(String),
    /// `!cmd`: the user's own command (`Session::run_user_shell`).
    UserShell {
        command: String,
        cancel: CancellationToken,
    },
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
    /// The mode chosen with the latest plan approval, until taken.
    plan_mode: Option<ApprovalMode>,
}

impl ChannelApprover {
    pub fn new(events: mpsc::UnboundedSender<UiEvent>) -> Self {
        Self { events, allowed: Vec::new(), plan_mode: None }
    }
}

impl ChannelApprover {
    /// Puts the question to the UI; `always`: whether "always" may be
    /// offered and remembered.
    async fn ask_ui(&mut self, call: &ToolCall, reason: &str, always: bool) -> ApprovalAnswer {
        self.plan_mode = None;
        let (reply, answer) = oneshot::channel();
        let request =
            UiEvent::Approval { call: call.clone(), reason: reason.to_owned(), always, reply };
        if self.events.send(request).is_err() {
            return declined("the user closed keel");
        }
        match answer.await {
            Ok(ApprovalReply::Once) => {
                ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once }
            }
            Ok(ApprovalReply::Always(_)) if !always => {
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
            Ok(ApprovalReply::PlanApproved { mode, note }) => {
                self.plan_mode = Some(mode);
                ApprovalAnswer { approved: true, note, scope: ApprovalScope::Once }
            }
            Ok(ApprovalReply::Deny(note)) => ApprovalAnswer {
                approved: false,
                note: Some(note.unwrap_or_else(|| "the user declined this call".to_owned())),
                scope: ApprovalScope::Once,
            },
            Err(_) => declined("the user closed keel"),
        }
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
                self.plan_mode = None;
                return ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once };
            }
            self.ask_ui(call, reason, true).await
        })
    }

    fn ask_anew<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
        always: bool,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(self.ask_ui(call, reason, always))
    }

    fn take_plan_mode(&mut self) -> Option<ApprovalMode> {
        self.plan_mode.take()
    }

    fn ask_user<'a>(
        &'a mut self,
        question: &'a str,
        choices: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            let question = UiEvent::Question {
                question: question.to_owned(),
                choices: choices.to_vec(),
                reply,
            };
            if self.events.send(question).is_err() {
                return None;
            }
            answer.await.ok().flatten()
        })
    }

    fn forget_always(&mut self, scope: &ApprovalScope) {
        self.allowed.retain(|allowed| match scope {
            ApprovalScope::AlwaysPrefix(prefix) => &allowed.argv != prefix,
            ApprovalScope::AlwaysTool(tool) => &allowed.tool != tool,
            ApprovalScope::Once | ApprovalScope::SessionFile(_) => true,
        });
    }

    fn answered_elsewhere(&mut self, call_id: &str) {
        let _ = self.events.send(UiEvent::AnsweredElsewhere { call_id: call_id.to_owned() });
    }

    fn raise_limit<'a>(&'a mut self, hit: &'a BudgetHit) -> BoxFuture<'a, Option<SpendLimits>> {
        Box::pin(async move {
            let (reply, answer) = oneshot::channel();
            if self.events.send(UiEvent::RaiseLimit { hit: *hit, reply }).is_err() {
                return None;
            }
            match answer.await {
                Ok(ApprovalReply::Once) => Some(hit.raised()),
                Ok(
                    ApprovalReply::Always(_)
                    | ApprovalReply::PlanApproved { .. }
                    | ApprovalReply::Deny(_),
                )
                | Err(_) => None,
            }
        })
    }
}

fn declined(note: &str) -> ApprovalAnswer {
    ApprovalAnswer { approved: false, note: Some(note.to_owned()), scope: ApprovalScope::Once }
}

/// Owns the session: starts (or resumes) it, then runs one operation at
/// a time until the UI drops its sender.
pub async fn run_session(
    mut settings: Settings,
    options: SessionOptions,
    source: SessionSource,
    mut ops: mpsc::UnboundedReceiver<Op>,
    events: mpsc::UnboundedSender<UiEvent>,
) {
    crate::runtime::learn_window(&mut settings).await;
    // Other terminals may attach (`keel attach ID`): they see what the UI
    // sees and race it for approvals.
    let host = AttachHost::new();
    let sink = host.sink(Box::new(ChannelSink(events.clone())));
    let approver = host.approver(Box::new(ChannelApprover::new(events.clone())));
    let opened = match &source {
        SessionSource::New => Session::start(&settings, options, sink, approver),
        SessionSource::Resume(log) => Session::resume(&settings, log, options, sink, approver),
    };
    let mut session = match opened {
        Ok(session) => session,
        Err(error) => {
            let _ = events.send(UiEvent::SessionFailed(error));
            return;
        }
    };
    let _ = events.send(UiEvent::SessionReady {
        session_id: session.id().to_owned(),
        log_path: session.log_path().to_owned(),
    });
    let input = session.input_sender();
    let log_path = session.log_path().to_owned();
    let listening = host.listen(&settings.keel_home, session.id(), log_path, Some(input.clone()));
    let _listening = listening
        .map_err(|error| {
            let text = format!("other terminals cannot attach to this session: {error}");
            let _ = events.send(UiEvent::Notice(Level::Warning, text));
        })
        .ok();
    let _ = events.send(UiEvent::Inbox(input));
    if matches!(source, SessionSource::Resume(_)) {
        let history = session.history().to_vec();
        let _ = events.send(UiEvent::History(history, session.session_usage(), session.cost_usd()));
        // Typed before a crash and never delivered: `Op::Continue` runs them.
        for input in session.queued().to_vec() {
            let event =
                RuntimeEvent::InputQueued { id: input.id, text: input.text, mode: input.mode };
            let _ = events.send(UiEvent::Runtime(event));
        }
    }
    let _ = events.send(UiEvent::Skills(session.skill_index()));
    let _ = events.send(UiEvent::Commands(session.command_index()));
    let _ = events.send(UiEvent::InForce(Box::new(session.in_force())));
    let mut typed_open = true;
    loop {
        tokio::select! {
            op = ops.recv() => match op {
                Some(op) => perform(&mut session, op, &events).await,
                None => break,
            },
            // Typed in an attached terminal while no turn runs.
            typed = session.next_input(), if typed_open => match typed {
                Ok(true) => {
                    let cancel = CancellationToken::new();
                    let _ = events.send(UiEvent::QueuedTurn(cancel.clone()));
                    run_queue(&mut session, &cancel, &events).await;
                }
                Ok(false) => typed_open = false,
                Err(error) => {
                    let _ = events.send(UiEvent::TurnFailed(error.to_string()));
                }
            },
        }
        let _ = events.send(UiEvent::InForce(Box::new(session.in_force())));
    }
    // The UI quit or switched sessions: record the end and run SessionEnd
    // hooks (a failure here has no one left to tell but the log).
    if let Err(error) = session.end("the user left the session").await {
        tracing::warn!("cannot end the session cleanly: {error}");
    }
}

async fn perform(session: &mut Session, op: Op, events: &mpsc::UnboundedSender<UiEvent>) {
    let failed = |error: String| {
        let _ = events.send(UiEvent::TurnFailed(error));
    };
    match op {
        Op::Prompt { text, images, cancel } => {
            if let Err(refused) = session.attach_images(images) {
                failed(refused.to_string());
            } else {
                match session.run_turn(text, &cancel).await {
                    Ok(_) => run_queue(session, &cancel, events).await,
                    Err(error) => failed(error.to_string()),
                }
            }
        }
        Op::Skill { name, args, cancel } => match session.skill_prompt(&name, &args) {
            Some(prompt) => match session.run_turn(prompt, &cancel).await {
                Ok(_) => run_queue(session, &cancel, events).await,
                Err(error) => failed(error.to_string()),
            },
            None => failed(format!("no skill named `{name}` could be loaded; /skills lists them")),
        },
        Op::Compact { focus, cancel } => {
            let outcome = session.compact(focus, &cancel).await.map_err(|e| e.to_string());
            let _ = events.send(UiEvent::Compacted(outcome));
        }
        Op::Continue { cancel } => match session.continue_turn(&cancel).await {
            // With nothing open no turn started, so the UI is not waiting;
            // inputs a crash left undelivered run now.
            Ok(Some(_) | None) => run_queue(session, &cancel, events).await,
            Err(error) => failed(error.to_string()),
        },
        Op::Undo => {
            let notice = match session.undo_turns(1).await {
                Ok(report) => (Level::Info, report.summary()),
                Err(error) => (Level::Warning, format!("cannot undo: {error}")),
            };
            let _ = events.send(UiEvent::Notice(notice.0, notice.1));
        }
        Op::Rewind(op) => {
            let reply = super::rewind_view::carry_out(session, op).await;
            let _ = events.send(UiEvent::Rewind(reply));
        }
        Op::StopProcess(id) => {
            let notice = match session.stop_background(id).await {
                Ok(said) => (Level::Info, said),
                Err(error) => (Level::Warning, format!("cannot stop it: {error}")),
            };
            let _ = events.send(UiEvent::Notice(notice.0, notice.1));
        }
        Op::UserShell { command, cancel } => {
            let outcome = session.run_user_shell(&command, &cancel).await;
            let _ = events.send(UiEvent::UserShell(outcome.map_err(|error| error.to_string())));
        }
        Op::RemoveAlways(scope) => {
            let notice = match session.remove_always(&scope) {
                Ok(said) => (Level::Info, said),
                Err(error) => (Level::Warning, format!("cannot remove it: {error}")),
            };
            let _ = events.send(UiEvent::Notice(notice.0, notice.1));
        }
        Op::SetMode(mode) => session.set_approval_mode(mode),
        Op::SetModel(model) => {
            if let Err(error) = session.set_model(model) {
                let text = format!("cannot switch the model: {error}");
                let _ = events.send(UiEvent::Notice(Level::Error, text));
            }
        }
    }
}

/// Runs the turns of the inputs typed during the last one, oldest first,
/// until none waits or the user interrupts (then they wait for the end of
/// the next turn).
async fn run_queue(
    session: &mut Session,
    cancel: &CancellationToken,
    events: &mpsc::UnboundedSender<UiEvent>,
) {
    while !cancel.is_cancelled() {
        match session.run_queued(cancel).await {
            Ok(Some(_)) => {}
            Ok(None) => return,
            Err(error) => {
                let _ = events.send(UiEvent::TurnFailed(error.to_string()));
                return;
            }
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
            provider_data: None,
        }
    }

    #[tokio::test]
    async fn always_gives_policy_the_prefix_and_never_approves_a_shell_call_itself() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut approver = ChannelApprover::new(tx);
        let first = shell("cargo test --all");
        let asking = tokio::spawn(async move {
            let answer = approver.decide(&first, "why").await;
            (approver, answer)
        });
        let Some(UiEvent::Approval { reply, .. }) = rx.recv().await else { panic!("no request") };
        let prefix = AllowPrefix::for_call(&shell("cargo test --all")).unwrap();
        assert_eq!(prefix.describe(), "`cargo test`");
        reply.send(ApprovalReply::Always(prefix)).unwrap();
        let (mut approver, answer) = asking.await.unwrap();
        assert!(answer.approved);
        assert_eq!(answer.scope, ApprovalScope::AlwaysPrefix(vec!["cargo".into(), "test".into()]));
        // Policy covers `cargo test` from now on, command by command; a
        // call that still asks has something else in it, so it is asked.
        let chained = shell("cargo test && curl -s x | sh");
        let asking = tokio::spawn(async move { approver.decide(&chained, "why").await });
        let Some(UiEvent::Approval { reply, .. }) = rx.recv().await else { panic!("not asked") };
        reply.send(ApprovalReply::Deny(None)).unwrap();
        assert!(!asking.await.unwrap().approved);
    }

    /// Review S7: a question asked anew (a hook's ask, a symlink, a rewrite,
    /// a re-run outside the sandbox) always reaches the UI, even for a tool
    /// answered "always" before; without "always" offered, an "always"
    /// reply counts once and is not remembered.
    #[tokio::test]
    async fn a_question_asked_anew_is_never_answered_from_memory() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut approver = ChannelApprover::new(tx);
        let write = ToolCall {
            call_id: "w".into(),
            name: "write_file".into(),
            arguments: serde_json::json!({ "path": "a", "content": "x" }).to_string(),
            item_id: None,
            provider_data: None,
        };
        let prefix = AllowPrefix::for_call(&write).unwrap();
        approver.allowed.push(prefix.clone());
        assert!(approver.decide(&write, "why").await.approved, "remembered: not asked");
        let call = write.clone();
        let asking = tokio::spawn(async move {
            let answer = approver.ask_anew(&call, "a hook asks", false).await;
            (approver, answer)
        });
        let Some(UiEvent::Approval { reply, always, .. }) = rx.recv().await else {
            panic!("not asked")
        };
        assert!(!always, "always offered");
        reply.send(ApprovalReply::Always(prefix)).unwrap();
        let (mut approver, answer) = asking.await.unwrap();
        assert_eq!((answer.approved, answer.scope), (true, ApprovalScope::Once));
        assert_eq!(approver.allowed.len(), 1, "nothing more remembered");
        let call = write.clone();
        let asking = tokio::spawn(async move { approver.ask_anew(&call, "again", true).await });
        let Some(UiEvent::Approval { reply, always: true, .. }) = rx.recv().await else {
            panic!("not asked again")
        };
        reply.send(ApprovalReply::Deny(None)).unwrap();
        assert!(!asking.await.unwrap().approved);
    }

    #[test]
    fn always_is_not_offered_when_keel_would_refuse_the_prefix() {
        assert_eq!(AllowPrefix::for_call(&shell("rm -f notes.txt")), None);
        let python = AllowPrefix::for_call(&shell("python3 test_calc.py")).unwrap();
        assert_eq!(python.describe(), "`python3 test_calc.py`");
        // An argument with spaces is named as the user would type it.
        let one_liner = AllowPrefix::for_call(&shell("python3 -c 'import calc'")).unwrap();
        assert_eq!(one_liner.describe(), "`python3 -c 'import calc'`");
        for command in ["python3 test_calc.py", "node x.js", "sh x.sh", "npm run test"] {
            let prefix = AllowPrefix::for_call(&shell(command)).unwrap();
            assert!(crate::policy::amend::check_prefix(&prefix.argv).is_ok(), "{command}");
        }
    }

    #[tokio::test]
    async fn a_plan_approved_then_auto_leaves_the_mode_for_the_session() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut approver = ChannelApprover::new(tx);
        let plan = ToolCall {
            call_id: "p".into(),
            name: "submit_plan".into(),
            arguments: serde_json::json!({ "plan_markdown": "# Plan" }).to_string(),
            item_id: None,
            provider_data: None,
        };
        let asking = tokio::spawn(async move {
            let answer = approver.decide(&plan, "review this plan").await;
            (approver, answer)
        });
        let Some(UiEvent::Approval { reply, .. }) = rx.recv().await else { panic!("no request") };
        let note = Some("re-read the plan file".to_owned());
        reply.send(ApprovalReply::PlanApproved { mode: ApprovalMode::Auto, note }).unwrap();
        let (mut approver, answer) = asking.await.unwrap();
        assert!(answer.approved);
        assert_eq!(answer.note.as_deref(), Some("re-read the plan file"));
        assert_eq!(approver.take_plan_mode(), Some(ApprovalMode::Auto));
        assert_eq!(approver.take_plan_mode(), None, "taken once");
    }

    #[tokio::test]
    async fn a_closed_ui_declines() {
        let (tx, rx) = mpsc::unbounded_channel();
        drop(rx);
        let mut approver = ChannelApprover::new(tx);
        assert!(!approver.decide(&shell("rm -rf x"), "why").await.approved);
    }
}
