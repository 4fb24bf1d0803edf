//! Where the loop is ([`LoopPhase`]) and the data each wait holds, inside
//! the variant that waits: the compaction waiting for its summary
//! ([`PendingCompaction`]), the question waiting for its hooks and the
//! hooks' verdict kept for the approved call ([`Approval`],
//! `approval_hooks.rs`), the batch whose calls are being settled
//! ([`Checking`], `call_checks.rs`), the settled batch while it runs
//! ([`Running`]), the batch that ran and waits for what follows its calls
//! ([`Finishing`], `batch_finish.rs`), the harness call whose plan is being
//! saved ([`SavingPlan`]).
//!
//! Invariant: plain data; a wait's data exists exactly while the loop is
//! in its phase, so leaving the phase drops it (no state such as "a batch
//! being settled while idle" can be written down). The handlers that move
//! between phases own the transitions, `step.rs` the order in which they
//! run.

use serde_json::Value;

use crate::policy::PathLinks;
use crate::protocol::{ToolCall, ToolMeta, ToolResult};

use super::harness::HarnessOutcome;
use super::verdicts::{CallCheck, PreToolVerdict};

/// Where the loop is. `Idle` between turns; the others name what the loop
/// is waiting for, and hold what the wait needs.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopPhase {
    Idle,
    /// A model request is in flight.
    Infer,
    /// Waiting for the user's answer on the front batch (first for the
    /// question's PreToolUse hooks): [`Approval`].
    AwaitApproval(Approval),
    /// A summary for a compaction is being written, or the driver is
    /// refreshing the instructions after one.
    Compact(PendingCompaction),
    /// The front batch is running; what was refused of it waits in
    /// [`Running`] (empty while the loop works through the pending
    /// batches between two waits).
    Execute(Running),
    /// The next request would cross a spend limit: waiting for the
    /// front end to raise it or let the turn end.
    AwaitLimit,
    /// A submitted plan is being written to its file; the harness call's
    /// outcome waits in [`SavingPlan`].
    SavePlan(Box<SavingPlan>),
    /// The front batch's calls are settled before it runs (hooks, a
    /// rewrite, symlinks): [`Checking`] (`agent::call_checks`).
    Check(Checking),
    /// The front batch ran; its results wait in [`Finishing`]
    /// for an unsandboxed re-run offer or PostToolUse hooks
    /// (`agent::batch_finish`).
    Finish(Finishing),
    /// The front batch is an `ask_user` call: waiting for the user's
    /// answer (`agent::ask_user`).
    AwaitAnswer,
    /// The front batch is a harness call whose hooks run (or whose hook's
    /// question waits): [`HarnessHooks`] (`agent::harness_hooks`).
    HarnessHooks(Box<HarnessHooks>),
}

impl LoopPhase {
    /// Between turns.
    pub fn is_idle(&self) -> bool {
        matches!(self, Self::Idle)
    }
}

/// Why a compaction runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionReason {
    /// The provider refused the request as too long.
    Overflow,
    /// The estimate crossed the threshold before a request.
    Threshold,
    /// The user asked (`/compact`).
    Manual,
}

impl CompactionReason {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Overflow => "overflow",
            Self::Threshold => "threshold",
            Self::Manual => "manual",
        }
    }
}

/// A summary compaction in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingCompaction {
    pub reason: CompactionReason,
    pub focus: Option<String>,
    pub tokens_before: u64,
    /// The turn goes on with a model request afterwards (else: idle).
    pub resume_turn: bool,
    /// The new history is in place; the loop waits for the driver to
    /// refresh the instructions (`Input::CompactionApplied`).
    pub applied: bool,
}

/// A batch that ran, waiting for what follows its calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Finishing {
    /// Each call with its result so far, in call order (the call as the
    /// model made it: what the history and the workflow see).
    pub ran: Vec<(ToolCall, ToolResult, ToolMeta)>,
    /// Each call as it ran, in the same order: a PreToolUse hook's rewrite
    /// where one replaced the model's input. A re-run offer asks about it
    /// and a re-run runs it; the PostToolUse hooks see it.
    pub run_as: Vec<ToolCall>,
    /// Whether the batch ran concurrently (a re-run keeps its read-only
    /// context).
    pub concurrent: bool,
    /// The next call to consider for a re-run offer.
    pub next: usize,
    /// The call whose re-run is asked about.
    pub asked: Option<usize>,
    /// The call whose re-run is running.
    pub rerunning: Option<usize>,
    /// The PostToolUse hooks were asked for.
    pub hooked: bool,
}

/// A batch whose calls are being settled (phase `Check`), then running.
#[derive(Debug, Clone, PartialEq)]
pub struct Checking {
    /// The batch's calls, in call order, each with its outcome once known.
    pub calls: Vec<(ToolCall, Option<Outcome>)>,
    pub concurrent: bool,
    /// What the driver found, per call, once it answered.
    pub checks: Vec<CallCheck>,
    /// The call being settled.
    pub cursor: usize,
    /// What the call being settled waits for.
    pub open: Option<Open>,
    /// The hooks' verdict from before the (single) call's approval.
    pub prejudged: Option<PreToolVerdict>,
}

/// A settled batch while it runs (phase `Execute`): what it came to
/// besides the results the driver will send.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Running {
    /// The refused calls' results, in call order (they join the batch's).
    pub refused: Vec<(ToolResult, ToolMeta)>,
    /// The calls that run, as they run (a hook may have rewritten them).
    pub run_as: Vec<ToolCall>,
}

/// The phase `AwaitApproval`'s data.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Approval {
    /// The question, while its PreToolUse hooks run (answers are not
    /// taken yet); `None` once the user is asked.
    pub asking: Option<Question>,
    /// The hooks' verdict on the asked call (call id), taken when the
    /// approved call's batch starts (`call_checks::start`).
    pub prejudged: Option<(String, PreToolVerdict)>,
}

/// The harness call whose submitted plan is being saved, and what it led
/// to (recorded once the plan's path is known).
#[derive(Debug, Clone, PartialEq)]
pub struct SavingPlan {
    pub call: ToolCall,
    pub outcome: HarnessOutcome,
}

/// Where a harness call's hooks are (phase `HarnessHooks`).
#[derive(Debug, Clone, PartialEq)]
pub enum HarnessHooks {
    /// Its PreToolUse hooks run.
    Pre,
    /// A PreToolUse hook asked (`reason`): the user's answer, then the
    /// call as the hook left it (`run_as`).
    Asked { run_as: ToolCall, reason: String },
    /// It was answered: its PostToolUse hooks run before what it led to
    /// is recorded (the workflow changed already, so an interrupt records
    /// it as it is).
    Post { call: ToolCall, outcome: HarnessOutcome },
}

/// How a call's checks ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Run it, as it is here (a hook may have rewritten its input).
    Run(ToolCall),
    /// Do not run it; this is its result.
    Refused(ToolResult, ToolMeta),
}

/// What the call being settled waits for.
#[derive(Debug, Clone, PartialEq)]
pub enum Open {
    /// The driver's look at every call of the batch.
    Checks,
    /// The user, on a hook's "ask"; then the hook's rewrite, if any.
    HookAsked { reason: String, updated: Option<Value>, links: PathLinks },
    /// The user, on a rewrite policy wants to ask about.
    RewriteAsked { rewritten: ToolCall },
    /// The native hooks and symlinks of an allowed rewrite.
    Natives { rewritten: ToolCall },
    /// The user, on a native hook's "ask" about a rewrite.
    NativeAsked { rewritten: ToolCall, links: PathLinks },
    /// The user, on a symlink leading to a path that needs approval.
    LinksAsked { call: ToolCall, question: String },
}

/// A question about a call, waiting for its PreToolUse hooks.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub call: ToolCall,
    pub reason: String,
    pub plan_review: Option<String>,
}
