//! `!cmd` (the TUI's shell shortcut): a command the user runs
//! themselves, between turns, through the same policy judgment and the
//! same sandbox as the model's `shell` calls; what it printed becomes a
//! user message in the history (`agent/user_shell.rs`, logged as a
//! `user_message` outside any turn), so the next turn's request carries
//! it, a resume too.
//!
//! Invariants: only while idle (the TUI sends it between turns; a turn
//! in progress refuses it). The verdict is the loop's own
//! (`LoopState::judge_call`, taint included): a forbidden command does
//! not run and nothing is added; a command policy would ask about runs,
//! since the user typing it is the approval. It runs in the session's
//! jail (`ToolContext` of the session's tools, the shell tool itself),
//! its output passes the session's secret mask, and a sandbox block is
//! marked as for the model's calls. No undo checkpoint covers it and no
//! file bookkeeping is written, as for the user's own edits. A custom
//! command's `` !`cmd` `` lines run the same way (`run_as_user`), their
//! output put in the command's prompt instead of a history message; a
//! project's command file was not typed by the user, so there a command
//! policy would ask about does not run.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::agent::Input;
use crate::policy::{CallFacts, Decision};
use crate::protocol::ToolCall;
use crate::protocol::tool_facts::names;

use super::{RuntimeError, Session, mark_sandbox_violation};

/// What became of a `!cmd`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserShell {
    /// It ran; `output` is the shell tool's framed result (masked).
    Ran { output: String, is_error: bool, exit_code: Option<i64> },
    /// Policy forbids it; it did not run.
    Refused { reason: String },
}

/// The user message the model gets for a command the user ran.
pub fn user_shell_message(command: &str, output: &str) -> String {
    format!(
        "I ran this command myself (not a request to you), in the session's sandbox:\n$ \
         {command}\n{output}"
    )
}

impl Session {
    /// Runs `command` as the user's `!cmd` (see the module doc).
    pub async fn run_user_shell(
        &mut self,
        command: &str,
        cancel: &CancellationToken,
    ) -> Result<UserShell, RuntimeError> {
        let ran = self.run_as_user(command, true, cancel).await;
        if let UserShell::Ran { output, .. } = &ran {
            let text = user_shell_message(command, output);
            self.apply_outside_loop(Input::UserShell { text })?;
        }
        Ok(ran)
    }

    /// Runs `command` as the user's own, judged and jailed as the module
    /// doc says, adding nothing to the history (a command file's
    /// `` !`cmd` `` lines: their output joins the command's prompt);
    /// `asked`: whether a command policy would ask about runs.
    pub(super) async fn run_as_user(
        &mut self,
        command: &str,
        asked: bool,
        cancel: &CancellationToken,
    ) -> UserShell {
        let arguments = json!({ "command": command });
        let (result, meta) = match self.call_as_user(names::SHELL, arguments, asked, cancel).await {
            Ok(ran) => ran,
            Err(reason) => return UserShell::Refused { reason },
        };
        UserShell::Ran {
            output: result.output,
            is_error: result.is_error,
            exit_code: meta.exit_code(),
        }
    }

    /// Runs the tool `tool` with `arguments` as the user's own call, while
    /// idle: the loop's verdict (forbidden: `Err` with its reason; one it
    /// would ask about too unless `asked`: the user typed this call), the
    /// session's tools and jail, the secret mask. Nothing is recorded.
    pub(super) async fn call_as_user(
        &mut self,
        tool: &str,
        arguments: serde_json::Value,
        asked: bool,
        cancel: &CancellationToken,
    ) -> Result<(crate::protocol::ToolResult, crate::protocol::ToolMeta), String> {
        let call = ToolCall {
            call_id: "user-shell".to_owned(),
            name: tool.to_owned(),
            arguments: arguments.to_string(),
            item_id: None,
            provider_data: None,
        };
        if !matches!(self.state.phase(), crate::agent::LoopPhase::Idle) {
            return Err("a turn is running; run it after the turn".to_owned());
        }
        let facts =
            CallFacts { tool, class: self.state.class_of(tool), arguments: &call.arguments };
        let verdict = self.state.judge_call(&self.state.config().policy, facts);
        match verdict.decision {
            Decision::Forbidden { reason } => return Err(reason),
            Decision::Prompt { reason } if !asked => {
                return Err(format!("it needs approval ({reason}); run it yourself with `!`"));
            }
            Decision::Prompt { .. } | Decision::Allow => {}
        }
        let ctx = self.tools.context(&self.workspace_root, &self.cwd, cancel, false);
        let (mut result, mut meta) = self.tools.run_call(&call, &ctx).await;
        super::secrets::mask_result(self.tools.mask(), &mut result, &mut meta);
        if self.state.config().policy.sandboxed {
            mark_sandbox_violation(&call.name, &mut result, &mut meta, self.tools.jail());
        }
        Ok((result, meta))
    }
}
