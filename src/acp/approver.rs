//! keel's approvals as ACP permission requests
//! (`session/request_permission`): the client's user answers a call that
//! keel's mode and policy decided to ask about; the answer goes back to
//! `step` as any front end's does, which records it (`approval_decided`)
//! as it records the TUI's.
//!
//! Invariants: keel asks only what its policy asks (a client cannot make
//! a call run that policy forbids, nor stop keel asking: the question is
//! keel's); every request ends in an answer (a closed connection, an
//! error or a cancelled request is a "no", and the turn's cancel token
//! answers first when the user cancels); "always" is offered only where
//! the TUI offers it (a shell prefix policy accepts, or the whole tool for
//! this session; never for a question asked anew), and a shell prefix is
//! handed to `step` as an "always" rule, never matched here; a plan
//! approved "always" goes on in auto mode, as the TUI's "then auto".

use std::sync::{Arc, OnceLock};

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    ToolCallUpdate,
};
use futures_util::future::BoxFuture;

use super::diffs::WorkspaceFiles;
use super::updates;
use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::tool_facts::names;
use crate::protocol::{HarnessTool, ToolCall};
use crate::runtime::{ApprovalAnswer, Approver};

/// The options' ids, as the client sends them back.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT: &str = "reject_once";

/// Asks the client.
pub struct AcpApprover {
    connection: ConnectionTo<Client>,
    /// The session's id, set once it is open.
    session_id: Arc<OnceLock<String>>,
    files: WorkspaceFiles,
    /// Tools (not `shell`) the user allowed for the rest of the session.
    allowed_tools: Vec<String>,
    /// The mode chosen with the latest plan approval, until taken.
    plan_mode: Option<ApprovalMode>,
}

impl AcpApprover {
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: Arc<OnceLock<String>>,
        files: WorkspaceFiles,
    ) -> Self {
        Self { connection, session_id, files, allowed_tools: Vec::new(), plan_mode: None }
    }

    async fn ask_client(&mut self, call: &ToolCall, reason: &str, always: bool) -> ApprovalAnswer {
        self.plan_mode = None;
        let Some(session_id) = self.session_id.get().cloned() else {
            return declined("the session is not open yet");
        };
        let plan = call.harness_tool() == Some(HarnessTool::SubmitPlan);
        let always_scope = always_scope(call);
        let mut options = vec![PermissionOption::new(
            ALLOW_ONCE,
            if plan { "Approve the plan" } else { "Allow" },
            PermissionOptionKind::AllowOnce,
        )];
        if plan {
            let name = "Approve, then edit without asking (auto)";
            options.push(PermissionOption::new(
                ALLOW_ALWAYS,
                name,
                PermissionOptionKind::AllowAlways,
            ));
        } else if always && let Some(scope) = &always_scope {
            let name = format!("Always allow {}", describe(call, scope));
            options.push(PermissionOption::new(
                ALLOW_ALWAYS,
                name,
                PermissionOptionKind::AllowAlways,
            ));
        }
        options.push(PermissionOption::new(REJECT, "Reject", PermissionOptionKind::RejectOnce));
        let fields = updates::asked(call, reason, &self.files);
        let request = RequestPermissionRequest::new(
            session_id,
            ToolCallUpdate::new(call.call_id.clone(), fields),
            options,
        );
        let outcome = match self.connection.send_request(request).block_task().await {
            Ok(response) => response.outcome,
            Err(error) => {
                return declined(&format!(
                    "the editor did not answer the approval: {}",
                    error.message
                ));
            }
        };
        let chosen = match outcome {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.0.to_string(),
            RequestPermissionOutcome::Cancelled => return declined("the user cancelled the turn"),
            _ => return declined("the editor answered in a way keel does not know"),
        };
        let (answer, remember) = answer(&chosen, plan, always, always_scope);
        match remember {
            Remember::Nothing => {}
            Remember::Tool(tool) => self.allowed_tools.push(tool),
            Remember::PlanMode(mode) => self.plan_mode = Some(mode),
        }
        answer
    }
}

/// What the approver keeps from an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Remember {
    Nothing,
    /// Calls of this tool are allowed for the rest of the session.
    Tool(String),
    /// The mode the implementation of an approved plan runs in.
    PlanMode(ApprovalMode),
}

/// What the client's choice means, and what the approver keeps of it.
fn answer(
    chosen: &str,
    plan: bool,
    always: bool,
    scope: Option<Always>,
) -> (ApprovalAnswer, Remember) {
    let yes = |scope| ApprovalAnswer { approved: true, note: None, scope };
    match chosen {
        ALLOW_ONCE => (yes(ApprovalScope::Once), Remember::Nothing),
        ALLOW_ALWAYS if plan => (yes(ApprovalScope::Once), Remember::PlanMode(ApprovalMode::Auto)),
        ALLOW_ALWAYS if always => match scope {
            Some(Always::Prefix(prefix)) => {
                (yes(ApprovalScope::AlwaysPrefix(prefix)), Remember::Nothing)
            }
            Some(Always::Tool(tool)) => (yes(ApprovalScope::Once), Remember::Tool(tool)),
            None => (yes(ApprovalScope::Once), Remember::Nothing),
        },
        // "Always" where none was offered counts once.
        ALLOW_ALWAYS => (yes(ApprovalScope::Once), Remember::Nothing),
        REJECT => (declined("the user declined this call"), Remember::Nothing),
        _ => (declined("the editor chose an option keel did not offer"), Remember::Nothing),
    }
}

/// What "always" allows for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Always {
    /// A shell prefix, judged by policy command by command from now on.
    Prefix(Vec<String>),
    /// Every call of this (non-shell) tool, this session.
    Tool(String),
}

/// What "always" may allow for `call`, if anything: for a shell command
/// the policy's narrowest useful prefix (none for `rm`, `sudo`, a bare
/// interpreter), for another tool the tool for this session.
fn always_scope(call: &ToolCall) -> Option<Always> {
    if call.name != names::SHELL {
        return Some(Always::Tool(call.name.clone()));
    }
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    let command = args.get("command")?.as_str()?;
    crate::policy::amend::suggest_for_shell(command).map(Always::Prefix)
}

fn describe(call: &ToolCall, scope: &Always) -> String {
    match scope {
        Always::Prefix(prefix) => format!("`{}`", crate::policy::shell::quoted(prefix)),
        Always::Tool(_) => format!("every `{}` call this session", call.name),
    }
}

fn declined(note: &str) -> ApprovalAnswer {
    ApprovalAnswer { approved: false, note: Some(note.to_owned()), scope: ApprovalScope::Once }
}

impl Approver for AcpApprover {
    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async move {
            if call.name != names::SHELL && self.allowed_tools.contains(&call.name) {
                self.plan_mode = None;
                return ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once };
            }
            self.ask_client(call, reason, true).await
        })
    }

    fn ask_anew<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
        always: bool,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(self.ask_client(call, reason, always))
    }

    fn take_plan_mode(&mut self) -> Option<ApprovalMode> {
        self.plan_mode.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str) -> ToolCall {
        ToolCall {
            call_id: "c".into(),
            name: names::SHELL.into(),
            arguments: serde_json::json!({ "command": command }).to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    #[test]
    fn always_is_a_policy_prefix_for_commands_and_the_tool_otherwise() {
        assert_eq!(
            always_scope(&shell("cd src && cargo test --all")),
            Some(Always::Prefix(vec!["cargo".into(), "test".into()]))
        );
        assert_eq!(always_scope(&shell("rm -rf target")), None, "never offered for rm");
        let mut write = shell("x");
        write.name = names::WRITE_FILE.into();
        assert_eq!(always_scope(&write), Some(Always::Tool(names::WRITE_FILE.into())));
        assert_eq!(
            describe(&write, &Always::Tool(names::WRITE_FILE.into())),
            "every `write_file` call this session"
        );
    }

    #[test]
    fn the_clients_choice_is_the_answer_a_tui_user_would_give() {
        let prefix = Some(Always::Prefix(vec!["cargo".into(), "test".into()]));
        let (yes, kept) = answer(ALLOW_ALWAYS, false, true, prefix.clone());
        assert_eq!(yes.scope, ApprovalScope::AlwaysPrefix(vec!["cargo".into(), "test".into()]));
        assert_eq!(kept, Remember::Nothing, "a prefix is policy's to match, not the approver's");
        let tool = Some(Always::Tool(names::WRITE_FILE.into()));
        let (yes, kept) = answer(ALLOW_ALWAYS, false, true, tool.clone());
        assert_eq!((yes.approved, yes.scope), (true, ApprovalScope::Once));
        assert_eq!(kept, Remember::Tool(names::WRITE_FILE.into()));
        let (yes, kept) = answer(ALLOW_ALWAYS, false, false, tool);
        assert_eq!((yes.approved, kept), (true, Remember::Nothing), "asked anew: once only");
        let (yes, kept) = answer(ALLOW_ALWAYS, true, true, None);
        assert_eq!((yes.approved, kept), (true, Remember::PlanMode(ApprovalMode::Auto)));
        let (no, _) = answer(REJECT, false, true, prefix.clone());
        assert!(!no.approved && no.note.is_some());
        let (no, _) = answer("made_up", false, true, prefix);
        assert!(!no.approved, "an option keel did not offer is a no");
    }
}
