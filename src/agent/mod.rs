//! The agent loop as a pure state machine: [`step`] takes the state and one
//! [`Input`] and returns the [`Effect`]s the driver must carry out.
//!
//! Invariants: no `.await`, clock, filesystem, process or randomness here.
//! Every transition emits an [`Effect::Record`] before the effect it
//! describes, so the session log is written ahead of side effects. Every
//! tool call the model makes gets exactly one result in the history, in
//! call order, whatever happens (denial, error, interrupt, step limit).
//!
//! # The loop
//!
//! `step` is the whole control flow. Its phases are the variants of `LoopPhase`: `Idle`, `Infer` (a
//! request in flight), `AwaitApproval`, `Check` (a batch's calls settled before it runs),
//! `Execute`, `Finish` (a batch ran; re-run offers and PostToolUse hooks), `Compact`, `AwaitLimit`,
//! `SavePlan`, `AwaitAnswer` (an `ask_user` question, `ask_user.rs`) and `HarnessHooks` (a harness
//! call's PreToolUse/PostToolUse hooks, `harness_hooks.rs`). A turn goes `Idle → Infer → (AwaitApproval) → Check → Execute → Finish → Infer …
//! → Idle`; `Compact` and `AwaitLimit` are entered before a request when needed, `SavePlan` after a
//! `submit_plan` the workflow accepts.
//!
//! On each model response: record it; no calls → the turn is completed; past the step limit → every
//! call is answered "not run" and the turn ends `max_steps`; otherwise each call is judged by
//! `policy::evaluate` (each verdict a `policy_decision` line with its matched rules, written in
//! `step::batches` before any of the response's calls runs, is asked about or refused; harness
//! calls are not judged, their hooks run in `harness_hooks.rs`) and `schedule` makes batches: consecutive allowed read-only calls share
//! one concurrent batch; every mutating, prompting or denied call is a batch of its own, so call
//! order is kept for anything that can change state.
//!
//! A call's class there is its *effective* class (`schedule::effective_class`): its tool's, or
//! read-only by judgement when `Verdict::read_only` says policy proved it changes nothing
//! (`policy::script_verdict::read_only`: every command of the script on the read-only list, run as
//! written, nothing hidden or blind, no redirection into a file, no secret read) and commands run
//! sandboxed (`Policy::sandboxed`; without an enforced sandbox a wrong proof could write, so such
//! calls stay serial). Invariant: a concurrent batch holds only calls judged reads; the driver runs
//! each of them with a read-only `ToolContext`, and a shell command then gets
//! `Confinement::for_reads` (the session's jail with nothing writable, temp folders included), so a
//! misjudged read fails instead of racing a write. `tool_call_started` is recorded before its batch
//! runs, with the effective class (synced for mutating calls; a read has no side effect to write
//! ahead of). Invariant, property-tested in `step_tests.rs`: once idle, every call in the history
//! has exactly one result. An interrupt answers every open call "interrupted".
//!
//! # Limits
//!
//! `budget.rs` and `runaway.rs`. Every `CallModel` goes through `step::send_request`, which records
//! `limits_set` when the spend limits differ from the last logged ones, appends the context updates
//! (`announce`, so the projection counts them) and, when a spend limit is set, projects the
//! request: previous input + new items at 3 bytes per token, the previous prefix as cache reads
//! once the provider reports caching, the rest as cache writes, the largest output so far, bounded.
//! If it would cross, `step` records `budget_exceeded` and emits `Effect::AskRaiseLimit` (phase
//! `AwaitLimit`); the driver asks `Approver::raise_limit` (headless: `None`) and answers
//! `Input::LimitDecided` (raised limits are recorded, `reason: raised`, and checked again; `None`
//! ends the turn `budget_exceeded`). With no spend limit the check is two `Option` tests.
//!
//! The spend is the session's usage (rebuilt from `model_response` lines and the summary usage on
//! `compaction` lines; a summary request is counted, not checked before) and its cost: each
//! response is charged as it arrives at the prices of the model that served it
//! (`LoopConfig::pricing`; the cost is written on its `model_response`/`compaction` line and
//! charged from there by `LoopState::apply`, so a resume rebuilds the same figure through the same
//! function; older lines without one are charged at the prices in force), so
//! a model switch neither re-prices the past nor under-counts; the projection is priced at the
//! model the next request goes to. A response whose server reported no usage at all is charged at
//! keel's estimate (`budget::estimate_unreported`: the projection of its request) into
//! `LoopState::unreported`, logged as `estimated_tokens`/`estimated_cost_usd` on its
//! `model_response` line and rebuilt from there; it is spend, never usage or cost.
//! `LoopState::spent()` adds the estimates and the subagents' spend: a child passes up its reported
//! usage and cost and, apart from them, its estimates (its own children's included) into
//! `Delegated::estimated`, logged on the parent's `subagent_finished` line. A resume takes
//! `SpendLimits::for_resume(flags, logged, config)`.
//!
//! Runaway guards: each result of a call that ran (and each denial) is observed per turn, counted
//! once per response; the third response with an identical (name, arguments, result) or the fifth
//! in a row failing with one tool gets a note appended (`meta.runaway`, so the rebuild observes the
//! original result again); the same pattern once more ends the turn `stuck`, the rest of the
//! response answered "not run". `exec` exits 4 (`budget_exceeded`) and 5 (`stuck`).
//!
//! # Decisions and inputs from outside the model
//!
//! Decisions from outside the model (`decisions.rs`) are `Input`s too, and every line they lead to
//! is a `Record` of `step`: `SetMode` (Shift+Tab, `/mode`, a mode flag on resume; `mode_changed`),
//! `SetModel` (`/model`, a custom command's `model:` with `for_turn`; `model_changed`, with
//! `after_turn` naming the model `step` goes back to when that turn ends; the window and prices
//! follow `LoopConfig::pricing_for`; a model without prices is refused while a cost limit is set,
//! `budget::unpriced_switch`, which `Session::set_model` asks first to return
//! `RuntimeError::UnpricedModelSwitch`, exit 2 in `exec`), `SetPlanReview` (per process, not
//! logged), `ForgetAlways` (`/permissions remove N`; `always_removed`, whose `apply` drops the
//! answer from the allowlist and its rule from the rules loaded from that file),
//! `ReviewWaitingPlan` (`exec resume --approve-plan`/`--reject-plan`), `ApprovalDecided`
//! (the `approval` line; an approved "always" prefix first becomes `Effect::PersistRule`, answered
//! `RulePersisted { saved }`, so the line says what was remembered), `ApprovalBlocked` (a
//! PermissionRequest hook declined; its `hook_ran` line records it), `PlanReviewed` (the plan
//! file's text read back after a yes; a plan review is never a rule: `step` knows it from
//! `Batch::Harness`). A newly submitted plan is `Effect::SavePlan` (phase `SavePlan`), answered
//! `PlanSaved { path }`; its `plan_updated` line is recorded after, with the path: the driver never
//! changes a record.
//!
//! What the user types while a turn runs is `Input::QueueInput` (`queued_input.rs`): recorded as
//! `input_queued`; a steer is delivered after the response's batches, before the next request, the
//! rest wait for `Input::StartQueued` after the turn; the `user_message` naming the id is the
//! delivery (the rebuild property covers both).
//!
//! What reaches the loop from outside its effects' answers is an `Input` as well
//! (`outside_inputs.rs`): `PreapproveTurn` (a custom command's `allowed-tools`; `turn_scope`),
//! `SubagentStarted` / `SubagentFinished` (the delegated spend), `CallRecovered` (an `agent` call
//! finished from its child's log on a resume), `ToolsOffered` (MCP tools, `read_memory` once notes
//! appear; `tools_changed` when the list changed), `HookContext`, `EnvironmentRead` and
//! `CompactionApplied { observed }` (what the driver read for the next request; recorded when
//! announced). The driver feeds them with `Session::apply_outside_loop`, which records what `step`
//! returns. Property: `rebuild_properties.rs` drives random sessions with all of these and rebuilds
//! the live mode, allowlist, workflow, turn approvals and delegated spend.
//!
//! What is still written outside `step`, and why: lines that describe the effect being carried out
//! and change no loop state, written write-ahead by the part that carries it out (`hook_ran`,
//! `file_before`/`file_changed`, `internal_error`, `checkpoint`/`undo`, `mcp_server_status`); the
//! lines that open a session (`session_started`, `prompt_prefix`, `session_resumed`, built before
//! the session runs) and the closing `session_ended`; and the resume's reconciliation
//! (`rebuild::reconcile` sets the rebuilt state's pending batches and phase itself, see
//! `runtime/history/resume.rs`). The driver still classifies without deciding: whether a failed command's
//! output looks like a sandbox violation, and which PostToolUse event a result fires.
//!
//! # Around a batch
//!
//! `step` decides and the driver only looks, asks and runs. A `Run` batch goes `Check → Execute →
//! Finish`: after its `tool_call_started` lines `step` emits `Effect::CheckCalls { hooks:
//! PreToolUse }` (one effect for the whole batch, so a concurrent batch's hooks run before it and
//! its reads stay concurrent); the driver takes the undo checkpoint of a batch that may write, runs
//! each call's PreToolUse hooks (recording `hook_ran`), gathers the symlinks on its paths, and
//! answers `Input::CallsChecked` (a `PreToolVerdict` per call: permission, reason, rewritten input;
//! the links). `call_checks.rs` then settles the calls in order, one question at a time: deny
//! refuses; ask is `Effect::ConfirmCall` (the approver alone, no hook, no declined call), answered
//! `Input::CallConfirmed` and recorded as an `approval` line; a rewrite is judged by policy again
//! and recorded as a second `policy_decision` (`REWRITE_NOTE`): forbidden refuses (and
//! `Effect::Warn`), prompt asks about the rewritten call, allow asks the driver for the native
//! hooks on it (`CheckHooks::Natives`, with the rewritten call's links); links that change the
//! verdict are a second `policy_decision` (`LINKS_NOTE`): forbidden refuses, prompt asks. The calls
//! that may run go to `RunBatch` as rewritten; the refused ones' results wait and join the batch's
//! results in call order.
//!
//! `Input::BatchFinished` puts the batch in `Finish` (`batch_finish.rs`): in ask mode each result
//! marked `sandbox_violation` is offered one unsandboxed re-run of the call as it ran (a hook's
//! rewrite, not the model's original; `ConfirmCall`, its `approval` line, then
//! `Effect::RerunUnsandboxed` answered `Input::RerunFinished`, after the whole batch ended); then,
//! only when a PostToolUse hook listens (`LoopConfig::post_tool_hooks`), `Effect::RunPostToolHooks`
//! answered `Input::PostToolHooksDone` (block reasons and context appended to the results); then
//! the results are recorded.
//!
//! A question about a call policy prompts for goes through the hooks first: `Effect::CheckCalls {
//! hooks: BeforeApproval }` (`approval_hooks.rs`: a deny or a forbidden rewrite refuses the call
//! before anyone is asked; otherwise `AskApproval`, and the verdict is kept so the call's later
//! check, `CheckHooks::Judged`, runs no hook again; only the batch right after the question may use
//! it: a declined call's verdict is dropped, whatever id a later call reuses). An interrupt in
//! `Check` records the refusals and answers the rest "interrupted"; in `Finish` it records the
//! results as they are. A call without hooks costs one effect (`CheckCalls`, no log line). Every
//! `approval` and `policy_decision` line is recorded by `step`.
//!
//! # The driver's side
//!
//! `runtime/driver.rs` pops effects in order: `Record` → log append (then announce tool calls to
//! the front end, so denied calls show up like the ones that ran); `Warn` → the front end;
//! `CallModel` → stream; `AskApproval` → `runtime/ask.rs` (Notification hooks, `Approver`, the plan
//! file); `ConfirmCall` → the `Approver` only; `CheckCalls` → `hooks_glue.rs`; `RerunUnsandboxed`
//! and `RunPostToolHooks` → `execute.rs`, `hooks_glue.rs`; `PersistRule` →
//! `.keel/rules/local.rules`; `SavePlan` → `.keel/plans/`; `RunBatch` → `tools::run_batch`
//! (`ToolRegistry::run_call` per call; a concurrent batch keeps at most `[shell] max_parallel`
//! calls in flight, starts the next as soon as any ends, and returns results in call order;
//! blocking tool work is on `spawn_blocking`). A concurrent batch takes no undo checkpoint and no
//! `file_before` fingerprint (reads change nothing). Every call of a batch shares the turn's
//! cancellation token, so an interrupt kills every running command (each in its own process group,
//! with its kill ladder); once the token is cancelled, pending non-record effects are replaced by
//! `Input::Interrupted`.
//!
//! # Files
//!
//! How they stand on one another (no cycle: `tests/suite/layers.rs`), from the bottom: plain data
//! (`limits.rs`: `Limits`, `SpendLimits`, the spend figures, `BudgetHit`; `verdicts.rs`: what hooks
//! and the driver's look report; `phase.rs`: `LoopPhase` and the data each wait holds;
//! `schedule.rs`: one response's calls into batches; `runaway.rs`: repeated calls and failing
//! streaks per turn; `workflow.rs`: admission, phase guidance, the gate's reading of finished
//! calls; `harness.rs`: the harness tools, typed args, specs generated from them, answers); then
//! `state.rs` (`LoopState`, `LoopConfig`) and `step_io.rs` (`Input`, `Effect`); `apply.rs` (the one
//! change of logged state, `LoopState::apply`, and `emit`), `record.rs` (how a result enters the
//! history and the log) and `next.rs` (what a handler says comes next); the handlers:
//! `decisions.rs` (what the user and hooks decide), `call_checks.rs`, `approval_hooks.rs` and
//! `batch_finish.rs` (see "Around a batch" above), `harness_hooks.rs` (a harness call's turn: its
//! hooks, its answer, what it led to), `budget.rs` (the projection of the next request
//! and the check before it), `compaction.rs` (when and how to compact: threshold, overflow,
//! `/compact`), `outside_inputs.rs` (what reaches the loop from outside its effects' answers),
//! `announce.rs` (context updates); `step.rs` on top (`step`, `batches`, and `proceed`, the only
//! sequencer of what the handlers return); `rebuild.rs` (log records folded back through `apply`;
//! `reconcile` for an open turn, through `step::proceed`; `turn_calls.rs`: a turn's calls keyed by
//! id).

mod announce;
mod apply;
mod approval_hooks;
mod ask_user;
mod batch_finish;
mod budget;
mod call_checks;
mod compaction;
mod decisions;
mod deferred;
mod harness;
mod harness_hooks;
mod limits;
mod next;
mod outside_inputs;
mod phase;
mod queued_input;
mod rebuild;
mod record;
mod rewind;
mod runaway;
mod schedule;
mod state;
mod step;
mod step_io;
mod turn_calls;
mod user_shell;
mod verdicts;
mod workflow;

pub use ask_user::NO_ANSWER;
pub use batch_finish::RERUN_QUESTION;
pub use budget::{BYTES_PER_TOKEN, FIRST_OUTPUT_ESTIMATE, MAX_OUTPUT_ESTIMATE};
pub use budget::{Projection, unpriced_switch};
pub use call_checks::{LINKS_NOTE, REWRITE_NOTE, same_input};
pub use decisions::approval_event;
pub use deferred::{DeferMcp, split_builtins};
pub use harness::{
    HarnessOutcome, PLAN_NOT_REVIEWABLE, harness_spec, harness_specs, rejection_text,
};
pub use limits::{
    BudgetHit, DEFAULT_FAILING_CALLS, DEFAULT_REPEATED_CALLS, Delegated, LimitKind, Limits,
    RunawayLimits, SpendLimits, SpendStatus, Spent, Unreported, usd,
};
pub use phase::{
    Approval, Checking, CompactionReason, Finishing, HarnessHooks, LoopPhase, Outcome,
    PendingCompaction, Running, SavingPlan,
};
pub use rebuild::{FileProbe, LogFacts, OpenTurn, Rebuilder, Rebuilt, reconcile};
pub use rewind::{
    ForkPoint, Prompt, PromptLine, RewindError, RewindMark, conversation_before, fork_lines,
};
pub use runaway::{RunawayKind, RunawayState, RunawayVerdict};
pub use schedule::{Batch, schedule};
pub use state::{
    CompactionDepth, ConfiguredModel, LoopConfig, LoopState, Opening, ToolScope, TurnApprovals,
};
pub use step::step;
pub use step_io::{Effect, Input, Rewind, SubagentDone, SubagentOpened};
pub use turn_calls::{CallProgress, FileNote, OpenCall};
pub use verdicts::{CallCheck, CheckHooks, HookPermission, PostToolVerdict, PreToolVerdict};
pub use workflow::{AGENT_TOOL, PlanReview, WorkflowSetup, WorkflowState, shipped_rules};

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
mod harness_hooks_tests;
#[cfg(test)]
mod model_switch_tests;
#[cfg(test)]
mod queued_input_tests;
#[cfg(test)]
mod rebuild_properties;
#[cfg(test)]
mod rebuild_tests;
#[cfg(test)]
mod step_tests;
#[cfg(test)]
mod subagent_step_tests;
#[cfg(test)]
mod taint_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod workflow_tests;
