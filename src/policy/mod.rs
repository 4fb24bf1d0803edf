//! Policy: decides, for every tool call, whether it runs, asks, or is
//! forbidden. Pure: no I/O, no clock.
//!
//! Decision order (DESIGN §4): hard deny → project trust → rules → mode →
//! session allowlist → default. This first cut implements the mode layer and
//! the default; prefix rules, trust and the allowlist arrive with the policy
//! issue and slot in before [`ApprovalMode`] is consulted.

use serde::{Deserialize, Serialize};

use crate::protocol::ToolClass;

/// How much the user lets keel do without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Reads run; every mutating call asks.
    #[default]
    Ask,
    /// Workspace writes and workspace commands run without asking.
    FullAuto,
    /// Everything runs without asking.
    Yolo,
}

impl ApprovalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::FullAuto => "full-auto",
            ApprovalMode::Yolo => "yolo",
        }
    }
}

/// The verdict on one tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Allow,
    /// Run only if the user approves.
    Prompt {
        reason: String,
    },
    Forbidden {
        reason: String,
    },
}

/// Judges one call by its tool's access class and the approval mode.
pub fn evaluate(tool_name: &str, class: ToolClass, mode: ApprovalMode) -> Decision {
    match (class, mode) {
        (ToolClass::ReadOnly, _) => Decision::Allow,
        (ToolClass::Mutating, ApprovalMode::FullAuto | ApprovalMode::Yolo) => Decision::Allow,
        (ToolClass::Mutating, ApprovalMode::Ask) => {
            Decision::Prompt { reason: format!("`{tool_name}` can change files or run commands") }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! decides {
        ($name:ident, $class:expr, $mode:expr, $allowed:expr) => {
            #[test]
            fn $name() {
                let decision = evaluate("tool", $class, $mode);
                assert_eq!(decision == Decision::Allow, $allowed, "{decision:?}");
            }
        };
    }

    decides!(reads_run_when_asking, ToolClass::ReadOnly, ApprovalMode::Ask, true);
    decides!(writes_ask_by_default, ToolClass::Mutating, ApprovalMode::Ask, false);
    decides!(writes_run_in_full_auto, ToolClass::Mutating, ApprovalMode::FullAuto, true);
    decides!(writes_run_in_yolo, ToolClass::Mutating, ApprovalMode::Yolo, true);

    #[test]
    fn prompt_names_the_tool() {
        let decision = evaluate("shell", ToolClass::Mutating, ApprovalMode::Ask);
        assert!(matches!(decision, Decision::Prompt { reason } if reason.contains("`shell`")));
    }
}
