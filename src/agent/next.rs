//! What comes next after a handler: the handlers (`batch_finish.rs`,
//! `decisions.rs`, `budget.rs`, `compaction.rs`, `call_checks.rs`, …)
//! change the state for one input and say what follows as a [`Next`];
//! only `step.rs` carries it out (`step::proceed`), so no handler calls
//! back into the sequencer and the order of a turn is read in one place.
//! Control is data, as ripgrep's `Sink` returns whether to go on.
//!
//! Invariant: a handler that returns anything but [`Next::Wait`] has left
//! the state ready for that next move (the phase set, the front batch in
//! place); one that returns `Wait` has pushed the effect the loop waits
//! for, or changed nothing.

use crate::protocol::{ToolCall, ToolMeta, ToolResult, TurnOutcome};

use super::harness::HarnessOutcome;

/// The result a call still pending gets when the user interrupts.
pub const INTERRUPTED: &str = "interrupted by the user before it ran";

/// What the loop does after a handler.
#[derive(Debug, Clone, PartialEq)]
#[must_use = "only step.rs carries out what comes next; dropping it stalls the loop"]
pub enum Next {
    /// The loop waits for the driver: the effects asking it are out (or
    /// the input changed nothing).
    Wait,
    /// Work through the pending batches; with none left the model is
    /// asked again, as a new step.
    Advance,
    /// Send the request for the current state (within the same step),
    /// unless a spend limit stops it.
    Request,
    /// The turn ends.
    EndTurn(TurnOutcome),
    /// Every call still pending is answered `reason` (never run), then
    /// the turn ends.
    Stop { reason: &'static str, outcome: TurnOutcome },
    /// The front batch ran (or had nothing left to run) with these
    /// results: what follows its calls (`batch_finish`).
    BatchFinished(Vec<(ToolResult, ToolMeta)>),
    /// A hook refused the call waiting for approval before the user was
    /// asked (`decisions::on_approval_blocked`).
    ApprovalBlocked { call_id: String, reason: String },
    /// A harness call's outcome is ready to record (`step::finish_harness`);
    /// boxed, as the largest by far.
    FinishHarness(Box<(ToolCall, HarnessOutcome)>),
}

impl Next {
    /// The user interrupted: whatever is pending is not run.
    pub fn interrupted() -> Self {
        Self::Stop { reason: INTERRUPTED, outcome: TurnOutcome::Interrupted }
    }

    /// The model kept repeating itself after its note (`agent::runaway`).
    pub fn stuck() -> Self {
        Self::Stop {
            reason: "not run: keel stopped the turn (the model was going in circles)",
            outcome: TurnOutcome::Stuck,
        }
    }
}
