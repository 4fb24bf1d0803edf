//! One ACP session's task: it owns the keel [`Session`] (as the TUI's
//! bridge does), runs one prompt turn at a time and answers its
//! `session/prompt` request when the turn ends; its [`EventSink`] turns
//! runtime events into `session/update` notifications.
//!
//! Invariants: the session is touched only by its task; every prompt
//! request gets exactly one response, after every update of its turn was
//! sent (notifications and the response share one ordered outgoing
//! queue); a cancel reaches the running turn through its token (the turn
//! ends `cancelled`, every call answered); a mode change waits for the
//! turn to end, as it would in the TUI between two keystrokes; a turn a
//! loaded log left open is finished before the next prompt runs; when the
//! connection closes the task ends the session (`session_ended`, hooks)
//! before keel exits.

use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::schema::{
    ContentBlock, PromptResponse, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::diffs::WorkspaceFiles;
use super::updates::Updates;
use crate::policy::ApprovalMode;
use crate::protocol::TurnOutcome;
use crate::runtime::{EventSink, RuntimeEvent, Session};

/// What the connection asks of a session's task.
pub enum Op {
    Prompt { blocks: Vec<ContentBlock>, responder: Box<Responder<PromptResponse>> },
    SetMode(ApprovalMode),
}

/// The connection's hold on a running session task.
#[derive(Clone)]
pub struct Handle {
    pub ops: mpsc::UnboundedSender<Op>,
    /// The running turn's token (a fresh one per turn).
    pub turn: Arc<Mutex<CancellationToken>>,
}

impl Handle {
    /// Cancels the running turn, if one runs.
    pub fn cancel(&self) {
        if let Ok(turn) = self.turn.lock() {
            turn.cancel();
        }
    }
}

/// The last error a session reported, for the failed prompt's response.
pub type LastError = Arc<Mutex<Option<String>>>;

/// Sends a session's events to the client.
pub struct AcpSink {
    connection: ConnectionTo<Client>,
    session_id: Arc<OnceLock<String>>,
    updates: Updates,
    files: WorkspaceFiles,
    last_error: LastError,
}

impl AcpSink {
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: Arc<OnceLock<String>>,
        files: WorkspaceFiles,
        last_error: LastError,
    ) -> Self {
        Self { connection, session_id, updates: Updates::default(), files, last_error }
    }
}

impl EventSink for AcpSink {
    fn emit(&mut self, event: RuntimeEvent) {
        if let RuntimeEvent::Error { message } = &event
            && let Ok(mut last) = self.last_error.lock()
        {
            *last = Some(message.clone());
        }
        // Before the session has its id (while it opens) nothing is sent:
        // the client does not know the session yet.
        let Some(id) = self.session_id.get() else { return };
        for update in self.updates.of(&event, &self.files) {
            send(&self.connection, id, update);
        }
    }
}

/// Sends one update; a closed connection ends the session's task anyway.
pub fn send(connection: &ConnectionTo<Client>, session_id: &str, update: SessionUpdate) {
    let notification = SessionNotification::new(session_id.to_owned(), update);
    if let Err(error) = connection.send_notification(notification) {
        tracing::debug!("acp: cannot send an update: {}", error.message);
    }
}

/// Runs `session` until the connection drops its handle.
pub async fn run(
    mut session: Session,
    mut ops: mpsc::UnboundedReceiver<Op>,
    turn: Arc<Mutex<CancellationToken>>,
    last_error: LastError,
) {
    while let Some(op) = ops.recv().await {
        match op {
            Op::Prompt { blocks, responder } => {
                let cancel = CancellationToken::new();
                if let Ok(mut slot) = turn.lock() {
                    *slot = cancel.clone();
                }
                if let Ok(mut last) = last_error.lock() {
                    *last = None;
                }
                let result = prompt_turn(&mut session, &blocks, &cancel).await.and_then(|ended| {
                    let error = last_error.lock().ok().and_then(|mut last| last.take());
                    stop_reason(ended, error.as_deref())
                });
                let sent = match result {
                    Ok(stop) => responder.respond(PromptResponse::new(stop)),
                    Err(message) => responder.respond_with_error(
                        agent_client_protocol::Error::internal_error().data(message),
                    ),
                };
                if let Err(error) = sent {
                    tracing::debug!("acp: cannot answer a prompt: {}", error.message);
                }
            }
            Op::SetMode(mode) => session.set_approval_mode(mode),
        }
    }
    if let Err(error) = session.end("the editor closed the session").await {
        tracing::warn!("cannot end the session cleanly: {error}");
    }
}

/// One turn for `blocks`: how it stopped, or why it could not run.
async fn prompt_turn(
    session: &mut Session,
    blocks: &[ContentBlock],
    cancel: &CancellationToken,
) -> Result<TurnOutcome, String> {
    let prompt = super::prompt::prompt(blocks).map_err(|error| error.to_string())?;
    // A turn the log left open (keel stopped mid-turn) is finished first,
    // as the TUI finishes it on resume.
    if session.has_open_turn() {
        let finished = session.continue_turn(cancel).await.map_err(|e| e.to_string())?;
        if let Some(summary) = finished.filter(|_| cancel.is_cancelled()) {
            return Ok(summary.outcome);
        }
    }
    session.attach_images(prompt.images).map_err(|refused| refused.to_string())?;
    let summary = session.run_turn(prompt.text, cancel).await.map_err(|e| e.to_string())?;
    Ok(summary.outcome)
}

/// How a turn's outcome reads in ACP; a failed turn is an error with the
/// session's last error (also sent as a notice), never a normal end.
pub fn stop_reason(outcome: TurnOutcome, error: Option<&str>) -> Result<StopReason, String> {
    Ok(match outcome {
        TurnOutcome::Completed => StopReason::EndTurn,
        TurnOutcome::Interrupted => StopReason::Cancelled,
        TurnOutcome::MaxSteps | TurnOutcome::Stuck => StopReason::MaxTurnRequests,
        TurnOutcome::Cut | TurnOutcome::BudgetExceeded => StopReason::MaxTokens,
        TurnOutcome::Failed => {
            return Err(error.map_or_else(
                || "the turn failed".to_owned(),
                |error| format!("the turn failed: {error}"),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_map_to_stop_reasons_and_a_failure_is_an_error() {
        assert_eq!(stop_reason(TurnOutcome::Completed, None), Ok(StopReason::EndTurn));
        assert_eq!(stop_reason(TurnOutcome::Interrupted, None), Ok(StopReason::Cancelled));
        assert_eq!(stop_reason(TurnOutcome::MaxSteps, None), Ok(StopReason::MaxTurnRequests));
        assert_eq!(stop_reason(TurnOutcome::Stuck, None), Ok(StopReason::MaxTurnRequests));
        assert_eq!(stop_reason(TurnOutcome::Cut, None), Ok(StopReason::MaxTokens));
        assert_eq!(stop_reason(TurnOutcome::BudgetExceeded, None), Ok(StopReason::MaxTokens));
        assert_eq!(
            stop_reason(TurnOutcome::Failed, Some("cannot reach the model")),
            Err("the turn failed: cannot reach the model".to_owned())
        );
    }
}
