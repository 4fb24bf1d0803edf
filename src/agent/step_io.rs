//! The loop's vocabulary: [`Input`], what the driver feeds [`step`] (what
//! happened: a response, a result, an answer, a decision taken outside
//! the loop), and [`Effect`], what `step` asks the driver to do.
//!
//! Invariant: every state change of a session and every line of its log
//! comes from `step` answering an `Input`; an `Effect` that needs an
//! answer names the `Input` that carries it.
//!
//! [`step`]: super::step

use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::{
    Delivery, Item, ModelRequest, ModelResponse, PrefixSections, RewindScope, SessionEvent,
    ToolCall, ToolClass, ToolMeta, ToolResult, ToolSpec, TurnOutcome, Usage,
};

use super::limits::{BudgetHit, SpendLimits, Unreported};
use super::state::TurnApprovals;
use super::verdicts::{CallCheck, CheckHooks, PostToolVerdict};
use super::workflow::PlanReview;

/// Something that happened, fed to `step` by the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The user starts a turn.
    UserTurn {
        text: String,
        /// Images attached to the prompt.
        images: Vec<crate::protocol::ImagePart>,
    },
    /// What a command the user ran themselves (`!cmd`) printed, for the
    /// next turn (`user_shell.rs`); only while idle. Recorded as a
    /// `user_message` outside any turn.
    UserShell {
        text: String,
    },
    /// The user typed `text` (with `images`, already stored) while a turn
    /// ran (`queued_input.rs`): it is recorded and waits for delivery by
    /// `mode`.
    QueueInput {
        text: String,
        mode: Delivery,
        images: Vec<crate::protocol::ImagePart>,
    },
    /// The user's answer to the `ask_user` call `call_id` of an
    /// [`Effect::AskUser`]; `None`: nobody answered.
    UserAnswered {
        call_id: String,
        answer: Option<String>,
    },
    /// Idle: start a turn with queued input `id` as its prompt (`text`:
    /// the input as the prompt hooks left it); nothing happens unless `id`
    /// still waits.
    StartQueued {
        id: u64,
        text: String,
    },
    ModelResponded(ModelResponse),
    /// The model request failed for good (the adapter already retried).
    ModelFailed {
        message: String,
    },
    /// The provider said the request exceeds the context window: compact
    /// and ask again (see `agent::compaction`).
    ContextOverflow {
        message: String,
    },
    /// The user asks to compact the history now (`/compact [focus]`);
    /// only while idle.
    CompactRequested {
        focus: Option<String>,
    },
    /// The summary an [`Effect::Summarize`] asked for, and what the
    /// request used (counted in the session's spend).
    Summarized {
        text: String,
        usage: Usage,
    },
    /// The summary could not be written (the history is compacted
    /// without one); `usage` is what a response that came back empty
    /// used.
    SummaryFailed {
        message: String,
        usage: Usage,
    },
    /// The driver handled the [`Effect::Compacted`] of a summary and read
    /// the instructions again (`observed`: announced where they differ
    /// from the prefix): the turn goes on, or the loop idles.
    CompactionApplied {
        observed: PrefixSections,
    },
    /// The environment block as the driver sees it before a turn (git
    /// status, date); announced when it differs from what the model was
    /// told.
    EnvironmentRead {
        environment: String,
    },
    /// The user's answer for the call of an [`Effect::AskApproval`]
    /// (recorded as an `approval` line; an "always" answer is first
    /// persisted through [`Effect::PersistRule`]).
    ApprovalDecided {
        call_id: String,
        approved: bool,
        note: Option<String>,
        /// How far an approval reaches (ignored when not approved).
        scope: ApprovalScope,
    },
    /// The user's answer on a plan under review (an [`Effect::AskApproval`]
    /// with `plan_review`): `edited_text` is the plan file's text as the
    /// user left it (read after an approval), `then_mode` the approval
    /// mode chosen for the implementation.
    PlanReviewed {
        call_id: String,
        approved: bool,
        note: Option<String>,
        edited_text: Option<String>,
        then_mode: Option<ApprovalMode>,
    },
    /// A hook (PermissionRequest) declined the call of an
    /// [`Effect::AskApproval`] before anyone was asked.
    ApprovalBlocked {
        call_id: String,
        reason: String,
    },
    /// The answer to an [`Effect::PersistRule`]: whether the rule file
    /// now holds the rule (if not, the approval counts once).
    RulePersisted {
        call_id: String,
        rule: ApprovalScope,
        note: Option<String>,
        saved: bool,
    },
    /// The answer to an [`Effect::SavePlan`]: where the plan file is, or
    /// `None` when it could not be written (the plan stays in the log).
    PlanSaved {
        path: Option<String>,
    },
    /// The user switches the approval mode (Shift+Tab, `/mode`, a mode
    /// flag on resume); any time, a running turn sees it at its next call.
    SetMode {
        mode: ApprovalMode,
    },
    /// The user switches the model (`/model NAME`) for the requests that
    /// follow, at its prices (`LoopConfig::pricing_for`); `for_turn`: a
    /// custom command's `model:`, only until the turn about to start
    /// ends. Ignored when a cost limit is set and the model has no prices
    /// (`budget::unpriced_switch`, which the driver asks first to say why).
    SetModel {
        model: String,
        for_turn: bool,
    },
    /// The user removed an "always" answer (`/permissions remove N`):
    /// from the session's allowlist and, when `file` held its rule, from
    /// the rules loaded from that file. Recorded (`always_removed`).
    ForgetAlways {
        scope: ApprovalScope,
        file: Option<String>,
    },
    /// The session goes back to before a prompt, or undoes a rewind
    /// (`rewind.rs`); only while idle. Recorded (`rewound`).
    Rewind(Rewind),
    /// A plan is required and reviewed this way (`exec --plan-only`,
    /// `--approve-plan`); per process, not logged.
    SetPlanReview {
        review: PlanReview,
    },
    /// A later run's verdict on the plan left waiting for review
    /// (`exec resume --approve-plan` / `--reject-plan FEEDBACK`); only
    /// while idle, and only when a plan waits.
    ReviewWaitingPlan {
        approved: bool,
        feedback: String,
    },
    /// A custom command's `allowed-tools` pre-approve commands and MCP
    /// tools for the turn about to start; only while idle. Recorded
    /// (`turn_scope`); the turn's end clears them.
    PreapproveTurn {
        approvals: TurnApprovals,
    },
    /// A child session was opened for an `agent` call (recorded as
    /// `subagent_started` before it runs).
    SubagentStarted(SubagentOpened),
    /// What a child's task came to (recorded as `subagent_finished` before
    /// the call's result); its spend counts against this session's limits.
    SubagentFinished(SubagentDone),
    /// A resumed turn's call whose result was recovered (an `agent` call
    /// finished from its child's log); only while idle, before the turn is
    /// reconciled.
    CallRecovered {
        call: ToolCall,
        result: ToolResult,
        meta: ToolMeta,
    },
    /// Context hooks added (SessionStart, SubagentStart), announced with
    /// the next request.
    HookContext {
        context: Vec<String>,
    },
    /// The tools named in `replaced` give way to `offered`, with their
    /// classes (an MCP server's, once ready or when its list changes);
    /// with a `reason` the change is recorded (`tools_changed`). Any time:
    /// a running turn's next request offers them.
    ToolsOffered {
        replaced: Vec<String>,
        offered: Vec<(ToolSpec, ToolClass)>,
        reason: Option<String>,
        /// Offer `tool_search`/`call_tool` in their place (`agent::deferred`).
        defer: bool,
    },
    /// Results of an [`Effect::RunBatch`], with metadata, in call order.
    BatchFinished {
        results: Vec<(ToolResult, ToolMeta)>,
    },
    /// The user's answer to an [`Effect::ConfirmCall`] (recorded as an
    /// `approval` line, once in scope).
    CallConfirmed {
        call_id: String,
        approved: bool,
        note: Option<String>,
    },
    /// What the driver found for an [`Effect::CheckCalls`], per call.
    CallsChecked {
        checks: Vec<CallCheck>,
    },
    /// The result of an [`Effect::RerunUnsandboxed`].
    RerunFinished {
        result: ToolResult,
        meta: ToolMeta,
    },
    /// What the hooks of an [`Effect::RunPostToolHooks`] said, per call.
    PostToolHooksDone {
        verdicts: Vec<PostToolVerdict>,
    },
    /// The answer to an [`Effect::AskRaiseLimit`]: the new limits, or
    /// `None` to end the turn `budget_exceeded`.
    LimitDecided {
        raised: Option<SpendLimits>,
    },
    /// The user interrupted the turn. The driver first delivers whatever
    /// the cancelled effect produced, then this.
    Interrupted,
}

/// Something the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Append to the session log (before carrying out later effects).
    Record(SessionEvent),
    CallModel(ModelRequest),
    /// Put the model's `ask_user` question to the user (with `choices` to
    /// pick from, if any); answer with [`Input::UserAnswered`].
    AskUser {
        call_id: String,
        question: String,
        choices: Vec<String>,
    },
    /// Ask the user about `call`; answer with [`Input::ApprovalDecided`],
    /// or for a plan review (`plan_review` is the saved plan's path, empty
    /// when it could not be saved) with [`Input::PlanReviewed`].
    /// `hook_asked`: a PreToolUse hook asked too, so the question reaches
    /// the user whatever they answered "always" before.
    AskApproval {
        call: ToolCall,
        reason: String,
        plan_review: Option<String>,
        hook_asked: bool,
    },
    /// Remember an "always" answer (`rule`: a command prefix or an MCP
    /// tool) as a rule in the project's `.keel/rules/local.rules`; answer
    /// with [`Input::RulePersisted`].
    PersistRule {
        call_id: String,
        rule: ApprovalScope,
        note: Option<String>,
    },
    /// Write a newly submitted plan to its file; answer with
    /// [`Input::PlanSaved`]. Its `plan_updated` line is recorded after,
    /// with the path.
    SavePlan {
        revision: u32,
        text: String,
    },
    /// Look at `calls` right before they run: take the undo checkpoint of
    /// a batch that may write (`PreToolUse`, not `concurrent`), run their
    /// PreToolUse hooks (`hooks` says which), gather the symlinks on their
    /// paths. Answer with [`Input::CallsChecked`].
    CheckCalls {
        calls: Vec<ToolCall>,
        hooks: CheckHooks,
        concurrent: bool,
    },
    /// Tell the front end (a warning; nothing is recorded).
    Warn(String),
    /// Run these calls; concurrently when `concurrent`, which only a batch
    /// of calls judged reads is (`agent::schedule`): the driver runs each
    /// of them with no write access. Answer with [`Input::BatchFinished`].
    RunBatch {
        calls: Vec<ToolCall>,
        concurrent: bool,
    },
    /// Ask the user about a call policy already allowed (a PreToolUse
    /// hook's "ask", a hook's rewrite or a symlink that needs approval,
    /// the unsandboxed re-run after a sandbox denial): the approver alone
    /// answers, no hook runs, and a headless "no" is no declined call of
    /// the turn. Answer with [`Input::CallConfirmed`].
    ConfirmCall {
        call: ToolCall,
        reason: String,
    },
    /// Run `call` once more with the session's confinement lifted (the
    /// re-run comes after its whole batch ended, so no other command runs
    /// meanwhile), no file bookkeeping; its metadata says so. Answer with
    /// [`Input::RerunFinished`].
    RerunUnsandboxed {
        call: ToolCall,
        concurrent: bool,
    },
    /// Run the PostToolUse (PostToolUseFailure for an error result) hooks
    /// of each call that ran, with its result, in call order; answer with
    /// [`Input::PostToolHooksDone`]. Only when a hook listens.
    RunPostToolHooks {
        ran: Vec<(ToolCall, ToolResult, ToolMeta)>,
    },
    /// The next request would cross a spend limit (recorded as
    /// `budget_exceeded`): ask whether to raise it, answer with
    /// [`Input::LimitDecided`]. Whoever cannot ask answers `None`.
    AskRaiseLimit(BudgetHit),
    /// Ask the model for a compaction summary (no streaming to the user);
    /// answer with [`Input::Summarized`] or [`Input::SummaryFailed`].
    /// `trigger` is `auto` or `manual` (PreCompact hooks see it).
    Summarize {
        request: ModelRequest,
        trigger: &'static str,
        focus: Option<String>,
    },
    /// The history was compacted (after its `compaction` record): front
    /// ends show it. After a `summary` the driver re-reads the project
    /// instructions and answers [`Input::CompactionApplied`]; the loop
    /// waits for that before its next request.
    Compacted {
        reason: String,
        /// `elide` or `summary`.
        method: String,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// The turn is over; the loop is idle again.
    TurnEnded {
        outcome: TurnOutcome,
        final_text: Option<String>,
        usage: Usage,
    },
}

/// A child session opened for the `agent` call `call_id`, its log on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentOpened {
    pub call_id: String,
    pub session_id: String,
    pub log_path: String,
    pub agent: String,
    pub description: String,
}

/// What a child's task came to.
#[derive(Debug, Clone, PartialEq)]
pub struct SubagentDone {
    pub call_id: String,
    pub session_id: String,
    pub outcome: TurnOutcome,
    /// The whole child session's spend, its own children included: what
    /// its servers reported, and apart from it what was charged at keel's
    /// estimate for responses without usage.
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub estimated: Unreported,
}

/// A rewind as the loop takes it ([`Input::Rewind`]): the fields of the
/// `rewound` line, the conversation already computed by the runtime
/// (`rewind::conversation_before`) and the workspace already restored.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewind {
    pub to_prompt: u32,
    pub to_seq: u64,
    pub scope: RewindScope,
    pub items: Option<Vec<Item>>,
    pub checkpoint_before: Option<String>,
    pub restored: Option<String>,
    pub kept: Vec<String>,
    pub undoes: Option<u64>,
}
