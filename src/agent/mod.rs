//! The agent loop as a pure state machine: [`step`] takes the state and one
//! [`Input`] and returns the [`Effect`]s the driver must carry out.
//!
//! Invariants: no `.await`, clock, filesystem, process or randomness here.
//! Every transition emits an [`Effect::Record`] before the effect it
//! describes, so the session log is written ahead of side effects. Every
//! tool call the model makes gets exactly one result in the history, in
//! call order, whatever happens (denial, error, interrupt, step limit).

mod announce;
mod approval_hooks;
mod batch_finish;
mod budget;
mod call_checks;
mod compaction;
mod decisions;
mod harness;
mod outside_inputs;
mod rebuild;
mod runaway;
mod schedule;
mod state;
mod step;
mod step_io;
mod turn_calls;
mod workflow;

pub use batch_finish::{Finishing, PostToolVerdict, RERUN_QUESTION};
pub use budget::{
    BYTES_PER_TOKEN, BudgetHit, DEFAULT_FAILING_CALLS, DEFAULT_REPEATED_CALLS, Delegated,
    FIRST_OUTPUT_ESTIMATE, LimitKind, Limits, MAX_OUTPUT_ESTIMATE, Projection, RunawayLimits,
    SpendLimits, SpendStatus, Spent, Unreported, unpriced_switch, usd,
};
pub use call_checks::{
    CallCheck, CheckHooks, Checking, HookPermission, LINKS_NOTE, Outcome, PreToolVerdict,
    REWRITE_NOTE, same_input,
};
pub use decisions::approval_event;
pub use harness::{HarnessOutcome, harness_spec, harness_specs, rejection_text};
pub use outside_inputs::{SubagentDone, SubagentOpened};
pub use rebuild::{
    CallProgress, FileNote, FileProbe, LogFacts, OpenCall, OpenTurn, Rebuilder, Rebuilt,
    WorkflowSetup, reconcile,
};
pub use runaway::{RunawayKind, RunawayState, RunawayVerdict};
pub use schedule::{Batch, schedule};
pub use state::{
    AGENT_TOOL, CompactionDepth, CompactionReason, ConfiguredModel, LoopConfig, LoopPhase,
    LoopState, PendingCompaction, ToolScope,
};
pub use step::{Effect, Input, step};
pub use workflow::{PlanReview, WorkflowState, shipped_rules};

#[cfg(test)]
mod batch_finish_tests;
#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod call_checks_tests;
#[cfg(test)]
mod compaction_tests;
#[cfg(test)]
mod decisions_tests;
#[cfg(test)]
mod model_switch_tests;
#[cfg(test)]
mod rebuild_properties;
#[cfg(test)]
mod rebuild_tests;
#[cfg(test)]
mod step_tests;
#[cfg(test)]
mod subagent_step_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod workflow_tests;
