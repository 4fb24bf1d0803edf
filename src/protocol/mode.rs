//! The approval mode: how much the user lets keel do without asking. It is
//! vocabulary shared by policy (which judges by it), the session log
//! (`session_started`, `mode_changed`) and the front ends, so it lives here.
//!
//! Invariants: the serialized names are the log's and the CLI's (`ask`,
//! `auto`, `plan`, `explore`, `yolo`; `full-auto` read as `auto`). In
//! `session_started` a mode this keel does not know (a log from a newer
//! keel) reads as no mode ([`lenient`]), so the line's other facts count; a
//! `mode_changed` line naming one is an unreadable line, which the reader
//! reports and skips.

use serde::{Deserialize, Deserializer, Serialize};

/// How much the user lets keel do without asking.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Reads and known read-only commands run; everything else asks.
    #[default]
    Ask,
    /// Workspace writes and sandboxed commands run without asking; prompt
    /// rules and protected paths still ask.
    #[serde(alias = "full-auto")]
    Auto,
    /// Read-only: writes and commands that may write are forbidden.
    Plan,
    /// Read-only, like plan, for looking around.
    Explore,
    /// Everything but hard-denied calls, forbidden rules, prompt rules and
    /// protected paths runs without asking.
    Yolo,
}

impl ApprovalMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::Plan => "plan",
            ApprovalMode::Explore => "explore",
            ApprovalMode::Yolo => "yolo",
        }
    }

    /// Parses a `--mode` value.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ask" => Some(ApprovalMode::Ask),
            "auto" | "full-auto" => Some(ApprovalMode::Auto),
            "plan" => Some(ApprovalMode::Plan),
            "explore" => Some(ApprovalMode::Explore),
            "yolo" => Some(ApprovalMode::Yolo),
            _ => None,
        }
    }

    /// Plan and explore forbid changes.
    pub fn read_only(self) -> bool {
        match self {
            ApprovalMode::Plan | ApprovalMode::Explore => true,
            ApprovalMode::Ask | ApprovalMode::Auto | ApprovalMode::Yolo => false,
        }
    }
}

/// Reads an optional mode, an unknown name (a log from a newer keel) as
/// none, so the rest of its line still counts.
pub(super) fn lenient<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ApprovalMode>, D::Error> {
    Ok(Option::<String>::deserialize(d)?.as_deref().and_then(ApprovalMode::parse))
}

#[cfg(test)]
mod tests {
    use super::super::SessionEvent;
    use super::*;

    #[test]
    fn log_lines_carry_the_cli_names_and_unknown_modes_are_not_guessed() {
        for mode in [ApprovalMode::Ask, ApprovalMode::Auto, ApprovalMode::Plan, ApprovalMode::Yolo]
        {
            let line = serde_json::to_string(&SessionEvent::ModeChanged { mode }).unwrap();
            assert_eq!(line, format!(r#"{{"type":"mode_changed","mode":"{}"}}"#, mode.as_str()));
        }
        let started = r#"{"type":"session_started","session_id":"s","cwd":"/","provider":"p",
            "model":"m","keel_version":"0","mode":"hologram"}"#;
        let event: SessionEvent = serde_json::from_str(started).unwrap();
        assert!(
            matches!(event, SessionEvent::SessionStarted { mode: None, model, .. } if model == "m")
        );
        let changed = r#"{"type":"mode_changed","mode":"hologram"}"#;
        assert!(serde_json::from_str::<SessionEvent>(changed).is_err());
        let old = r#"{"type":"mode_changed","mode":"full-auto"}"#;
        let event: SessionEvent = serde_json::from_str(old).unwrap();
        assert_eq!(event, SessionEvent::ModeChanged { mode: ApprovalMode::Auto });
    }
}
