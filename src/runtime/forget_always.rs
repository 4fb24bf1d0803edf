//! Removing an "always" answer (`/permissions remove N` in the TUI): the
//! line keel wrote for it leaves `.keel/rules/local.rules` (rewritten
//! atomically, every other line kept byte for byte:
//! `config::rules::remove_local_always`), and the session forgets it at
//! once through `step` (`Input::ForgetAlways`, recorded as
//! `always_removed`, so a resume forgets it too): its allowlist, the rules
//! loaded from that file, and the approver's own memory
//! (`Approver::forget_always`). The next such call asks again.
//!
//! Invariants: nothing is removed that `/permissions` did not list (a
//! scope neither in the file nor in the allowlist is refused); the file is
//! written before the log line, so a failed write changes nothing.

use crate::config::rules::{RulesFileError, local_rules_path, remove_local_always};
use crate::policy::ApprovalScope;

use super::{RuntimeError, Session};

/// Why an "always" answer could not be removed.
#[derive(Debug, thiserror::Error)]
pub enum ForgetError {
    #[error("no such \"always\" answer in force (/permissions lists them)")]
    NotRemembered,
    #[error(transparent)]
    Rules(#[from] RulesFileError),
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

impl Session {
    /// Removes the "always" answer `scope` (see the module doc); what was
    /// done, in words for the user.
    pub fn remove_always(&mut self, scope: &ApprovalScope) -> Result<String, ForgetError> {
        let allowlist = self.state.allowlist();
        let in_session = match scope {
            ApprovalScope::Once => false,
            ApprovalScope::AlwaysPrefix(prefix) => allowlist.prefixes.contains(prefix),
            ApprovalScope::SessionFile(path) => allowlist.files.contains(path),
            ApprovalScope::AlwaysTool(tool) => allowlist.tools.contains(tool),
        };
        let path = local_rules_path(&self.workspace_root);
        let line = remove_local_always(&self.workspace_root, scope)?;
        if line.is_none() && !in_session {
            return Err(ForgetError::NotRemembered);
        }
        let file = Some(path.display().to_string());
        self.apply_outside_loop(crate::agent::Input::ForgetAlways { scope: scope.clone(), file })?;
        self.approver.forget_always(scope);
        let what = match scope {
            ApprovalScope::AlwaysPrefix(prefix) => format!("`{}`", prefix.join(" ")),
            ApprovalScope::SessionFile(path) => format!("writes to {path}"),
            ApprovalScope::AlwaysTool(tool) => format!("`{tool}`"),
            ApprovalScope::Once => String::new(),
        };
        let from = match line {
            Some(line) => format!(" (line {line} of {} deleted)", path.display()),
            None => String::new(),
        };
        Ok(format!("{what} is no longer allowed always{from}; the next such call asks again"))
    }
}
