//! Carrying out `Effect::AskUser` (the model's `ask_user` call): the
//! question goes to the [`Approver`](super::Approver) (the TUI's dialog;
//! nobody in `keel exec` unless `--answer-from-stdin` gives a line, and its
//! `result` lists the questions no one answered, [`Session::unanswered`]); the answer goes back to `step`,
//! which records it as the call's result (`agent/ask_user.rs`).
//!
//! Invariants: an interrupt while the question waits answers nothing here
//! (the loop answers the open call "interrupted"); every question nobody
//! answered is listed once.

use tokio_util::sync::CancellationToken;

use crate::agent::Input;

use super::Session;

impl Session {
    pub(super) async fn ask_user(
        &mut self,
        call_id: String,
        question: String,
        choices: Vec<String>,
        cancel: &CancellationToken,
    ) -> Input {
        let answer = tokio::select! {
            answer = self.approver.ask_user(&question, &choices) => answer,
            () = cancel.cancelled() => return Input::Interrupted,
        };
        if answer.is_none() {
            self.unanswered.push(question);
        }
        Input::UserAnswered { call_id, answer }
    }

    /// The `ask_user` questions no one answered in this process, in order.
    pub fn unanswered(&self) -> &[String] {
        &self.unanswered
    }
}
