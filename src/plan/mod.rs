//! The workflow as a second state machine (DESIGN §3): static phase rules
//! ([`PhaseRules`], parsed from `rules/phases.toml`) and the runtime
//! [`Workflow`] state (current phase, plan and its approval, changes and
//! verifications), with the pure checks the harness enforces: which tool
//! classes a phase allows, which moves are legal, and the plan and
//! verification gates.
//!
//! Invariants: pure (no I/O, no clock); every refusal says why and what is
//! allowed instead, in words the model can act on. The harness decides what
//! is allowed; prompts only explain it.

mod machine;
mod rules;
mod runners;
mod script_status;
mod verify;

pub use machine::{MoveRefusal, PlanState, PlanStatus, Workflow};
pub use rules::{
    Gate, PhaseRule, PhaseRules, RulesError, ToolKind, observed_kind, tool_kind, tools_of_kind,
};
pub use runners::named_like_test;
pub use verify::{
    CHECK_FILES, CheckVerdict, checks_named_in, detect_checks, is_verification_command, judge,
    runs_check,
};

/// The built-in rules text.
pub const DEFAULT_PHASE_RULES: &str = include_str!("../../rules/phases.toml");
/// A subagent's rules: one phase for its task.
pub const SUBAGENT_PHASE_RULES: &str = include_str!("../../rules/subagent_phases.toml");
