//! Session-log events: every transition of the loop is one of these, and the
//! log (one [`EventRecord`] per JSONL line) is the single source of truth a
//! session is rebuilt from.
//!
//! Wire shape of a line: `{"v":1,"seq":N,"ts":"…","type":"…",…}`. Adding a
//! variant or an optional field (with `#[serde(default)]`) is compatible;
//! renaming a field is not. A reader meeting a `type` it does not know (a
//! log from a newer keel) keeps the line as raw JSON and ignores it, so
//! adding variants never breaks older readers.
//!
//! The event types, in the order a session usually writes them:
//!
//! | `type` | written by | meaning |
//! |---|---|---|
//! | `session_started` | runtime | cwd, provider, model, approval mode, keel version, git head |
//! | `session_resumed` | runtime | a resume appended from here; what was reconciled |
//! | `prompt_prefix` | runtime | the instructions every request starts with (their sections), a digest of the tools and each tool spec's size in bytes; written at the start and at each deliberate prefix break, with the reason |
//! | `context_updated` | loop | what keel told the model about a change (environment, mode, phase, re-read AGENTS.md…), appended to the history as one message |
//! | `turn_started` | loop | a user turn begins |
//! | `user_message` | loop | the user's text; `queued`: the id of the queued input it delivers |
//! | `input_queued` | loop | text typed during a turn, waiting (`mode`: `queue` for the next turn, `steer` for the running one after its tool batch); delivered once, by the `user_message` naming its id |
//! | `model_response` | loop | a complete response: reasoning items, text, tool calls, usage, its cost, and `estimated_tokens`/`estimated_cost_usd` (what the spend was charged when the server reported no usage) |
//! | `policy_decision` | loop | policy's decision, matched rules and reason for one call, before it runs, is asked or refused |
//! | `approval` | runtime | the user's answer on a call and its scope |
//! | `always_removed` | loop | the user removed an "always" answer (`/permissions remove N`): prefix, file or tool, and the rules file its line left |
//! | `tool_call_started` | loop | written ahead (synced when mutating) before the call runs |
//! | `file_before` | runtime | hash of a file a mutating call is about to change (synced) |
//! | `file_changed` | runtime | the file's hashes before and after the call |
//! | `tool_call_finished` | loop | the result the model reads |
//! | `checkpoint` | runtime | a workspace snapshot taken before the turn changed files |
//! | `undo` | `keel undo` | the workspace was restored to a checkpoint |
//! | `rewound` | loop | the session went back to before a user prompt (or undid a rewind): the line it went back to, the scope, the conversation from here on, the workspace snapshots (`agent/rewind.rs`) |
//! | `forked` | runtime | second line of a fork's log: the parent session, the prompt it was forked before, what was copied |
//! | `mode_changed` | loop, runtime | the approval mode from here on (plan approved, `/mode`, a mode flag on resume) |
//! | `model_changed` | runtime | the model of the requests from here on (`/model NAME` in the TUI) |
//! | `turn_scope` | runtime | the next turn may run these commands and MCP tools without asking (a `/command`'s `allowed-tools`), until it completes |
//! | `phase_changed`, `plan_updated`, `task_updated` | workflow | phase moves, plan revisions and reviews, the task list |
//! | `compaction` | loop | the history was replaced by these items: reason (`threshold`, `overflow`, `manual`), method (`elide`, `summary`), estimated tokens before and after, the carried failing check, the summary request's usage; a resume starts from the latest |
//! | `limits_set` | loop | the spend limits in force from here on (cost in US dollars, tokens): at a session's first turn when it has any, when a flag changes them on resume, when the user raises one at the limit; a resume keeps the last |
//! | `budget_exceeded` | loop | a model request was not sent because it would have crossed a limit: which limit, the limits, the spend so far and the request's projection |
//! | `model_error` | loop | a model request failed for good |
//! | `error` | runtime | any other failure worth keeping |
//! | `internal_error` | runtime | a bug caught at the tool or hook boundary (a panic): which tool or hook, the call, the message; the call got an error result |
//! | `hook_ran` | runtime | one hook run or skip: event, command, source, duration, exit code, decision, reason, error, refused loosening |
//! | `mcp_server_status` | runtime | an MCP server's status (`ready`, `failed`, …), once at the first request, then per change |
//! | `tools_changed` | runtime | the tool list changed at a turn boundary (MCP `list_changed`, a late or restarted server): a recorded prefix break, with the new specs' sizes |
//! | `subagent_started` | runtime | an `agent` call started a child session: the call, the child's id, log and type (synced before it runs) |
//! | `subagent_finished` | runtime | the child's task ended: outcome, usage, cost, and `estimated_tokens`/`estimated_cost_usd` (what its spend, its own children's included, was charged at keel's estimate for responses without usage; they count in the parent's limits); the call's `tool_call_finished` follows |
//! | `turn_completed` | loop | outcome and the turn's usage (synced) |
//! | `session_ended` | runtime | the front end closed the session (synced) |
//!
//! Usage is carried by `model_response` (per response) and `turn_completed`
//! (per turn); session totals are their sum, rebuilt on resume. A
//! subagent's usage is in its own log and, summed per task, in the
//! parent's `subagent_finished` lines. A child's `session_started` names
//! its parent.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::rewind_scope::RewindScope;

use super::context::{ContextPart, PrefixSections};
use super::items::Item;
use super::mode::ApprovalMode;
use super::model::{ModelResponse, Usage};
use super::queued_input::Delivery;
use super::tool::{ToolCall, ToolClass, ToolResult};
use super::tool_meta::ToolMeta;

/// Version of the log line format.
pub const LOG_FORMAT_VERSION: u32 = 1;

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TurnOutcome {
    /// The model answered without asking for tools.
    Completed,
    /// The model, a tool limit or the budget ended the turn with an error.
    Failed,
    /// The user interrupted the turn.
    Interrupted,
    /// The step limit was reached before the model finished.
    MaxSteps,
    /// The next model request would have crossed a spend limit
    /// (`--max-cost`, `--max-tokens`); it was not sent.
    BudgetExceeded,
    /// The model kept repeating a call (or failing with one tool) after
    /// keel told it so (`agent::runaway`).
    Stuck,
    /// The model's last answer stopped at the output limit
    /// (`finish_reason: "length"`, `max_tokens`): it is incomplete.
    Cut,
}

impl TurnOutcome {
    /// The outcome in the log's words (`completed`, `budget_exceeded`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::MaxSteps => "max_steps",
            Self::BudgetExceeded => "budget_exceeded",
            Self::Stuck => "stuck",
            Self::Cut => "cut",
        }
    }
}

/// How long an approval holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalScope {
    /// This call only.
    Once,
    /// Calls like it for the rest of the session.
    Session,
    /// Commands with this prefix from now on, remembered as a rule.
    Always,
}

/// One thing that happened in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    SessionStarted {
        session_id: String,
        cwd: String,
        provider: String,
        model: String,
        keel_version: String,
        /// `HEAD` of the workspace's git repository, when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        git_head: Option<String>,
        /// The approval mode the session started in (`ask`, `auto`, …);
        /// later changes are `mode_changed` lines.
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "super::mode::lenient"
        )]
        mode: Option<ApprovalMode>,
        /// Set in a subagent's log: the session and call that started it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent: Option<ParentLink>,
    },
    /// A resume continues this log from here.
    SessionResumed {
        provider: String,
        model: String,
        keel_version: String,
        /// Lines the reader skipped (torn, corrupt, unknown type).
        skipped_lines: u64,
        /// Calls answered "interrupted" by reconciliation.
        interrupted_calls: u32,
    },
    /// The request prefix from here on: the instructions (as sections)
    /// and a digest of the tool specs. Written when a session starts and at
    /// every deliberate prefix break (a resume whose keel offers other
    /// tools or core rules, a model change), with the reason; a resume
    /// sends the logged instructions again, so the prefix holds.
    PromptPrefix {
        reason: String,
        sections: PrefixSections,
        tools_digest: String,
        /// Bytes of each offered tool's spec (name, description, schema),
        /// by tool name: what `keel cost` weighs the tool part of the
        /// prefix by (`context::ledger`). Empty in older logs.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        tool_bytes: BTreeMap<String, u64>,
    },
    /// A note to the model of what changed (environment, mode, phase, …),
    /// appended to the history as one context item.
    ContextUpdated {
        parts: Vec<ContextPart>,
    },
    UserMessage {
        text: String,
        /// The images attached to it, by hash (`protocol::ImagePart`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<super::image::ImagePart>,
        /// The id of the queued input this message delivers (typed while
        /// a turn ran; `input_queued`); none for a prompt sent as typed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        queued: Option<u64>,
    },
    /// The user typed `text` while a turn ran: it waits for delivery
    /// (`mode`: the next turn, or the running one after its tool batch)
    /// until a `user_message` names `id`, which carries its `images`.
    InputQueued {
        id: u64,
        text: String,
        mode: Delivery,
        /// The images typed with it, by hash (stored before this line).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<super::image::ImagePart>,
    },
    TurnStarted {
        turn: u32,
    },
    /// A complete model response (reasoning, text and tool calls).
    ModelResponse {
        step: u32,
        response: ModelResponse,
        /// What the response cost at the prices of the model that served
        /// it (none: its prices are unknown, or an older log, whose
        /// responses are charged at the prices in force on resume).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// The tokens charged to the session's spend for a response whose
        /// server reported no usage (keel's estimate of the request and
        /// the response); none when the server reported usage.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimated_tokens: Option<u64>,
        /// What that estimate cost at the model's prices (none without
        /// prices or an estimate).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimated_cost_usd: Option<f64>,
    },
    /// How policy judged a call, recorded before the call runs, is asked
    /// about or is refused.
    PolicyDecision {
        call_id: String,
        /// `allow`, `prompt` or `forbidden`.
        decision: String,
        /// Every rule that matched: `source`, `pattern`, `matched_prefix`,
        /// `decision`, `justification` (as `keel policy check --json`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        matched_rules: Vec<serde_json::Value>,
        /// Why it prompts or is forbidden.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The user's answer on a call that needed approval.
    Approval {
        call_id: String,
        approved: bool,
        scope: ApprovalScope,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        /// An `always` approval: the command prefix allowed from now on.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<Vec<String>>,
        /// A `session` approval: the workspace-relative file that file
        /// tools may write for the rest of the session.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// An `always` approval of one MCP tool (`mcp__server__tool`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
    },
    /// The user removed an "always" answer (`/permissions remove N`): the
    /// call it covered asks again from here on (rebuilt on resume).
    /// `file`: the rules file its line was deleted from, if one held it.
    AlwaysRemoved {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prefix: Option<Vec<String>>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file: Option<String>,
    },
    /// Written ahead: a tool call is on disk before it runs.
    ToolCallStarted {
        call: ToolCall,
        class: ToolClass,
    },
    /// Written ahead (and synced) before a mutating call touches `path`:
    /// the file's content hash, `None` when it did not exist.
    FileBefore {
        call_id: String,
        path: String,
        before: Option<String>,
    },
    /// A mutating call ran; the file's hashes before and after it.
    FileChanged {
        call_id: String,
        path: String,
        before: Option<String>,
        after: Option<String>,
    },
    ToolCallFinished {
        result: ToolResult,
        #[serde(default, skip_serializing_if = "ToolMeta::is_empty")]
        meta: ToolMeta,
    },
    /// A snapshot of the workspace taken before `turn` changed files.
    Checkpoint {
        turn: u32,
        /// Commit id in the shadow repository.
        commit: String,
    },
    /// The workspace was restored to the checkpoint taken before `turn`.
    Undo {
        turn: u32,
        commit: String,
    },
    /// The session went back to just before line `to_seq` of this log:
    /// before user prompt `to_prompt` (a rewind), or before an earlier
    /// `rewound` line (`undoes`: undoing that rewind). The log stays as it
    /// was; the rebuild takes the conversation from `items`, as from a
    /// compaction.
    Rewound {
        /// The number the next prompt has in the conversation from here on
        /// (1-based; the prompt rewound to).
        to_prompt: u32,
        /// The session is as it was just before the line with this seq.
        to_seq: u64,
        scope: RewindScope,
        /// The conversation from here on (`None`: the code alone was rewound).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        items: Option<Vec<Item>>,
        /// The workspace snapshot taken just before the rewind (code in
        /// scope): undoing the rewind restores it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        checkpoint_before: Option<String>,
        /// The checkpoint the workspace was restored to (`None`: nothing had
        /// changed the workspace since that point, or code not in scope).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        restored: Option<String>,
        /// Files the restore left as they were: changed outside keel's
        /// turns after that point (the user's own edits).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        kept: Vec<String>,
        /// Set when this line undoes an earlier rewind: that line's seq.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        undoes: Option<u64>,
    },
    /// A fork's second line: the session starts as a copy of `parent`'s
    /// log before its prompt `prompt` (or all of it); the copied lines
    /// follow, renumbered, without the parent's checkpoints.
    Forked {
        parent_session: String,
        parent_log: String,
        /// The parent's prompt the fork was cut before (`None`: the parent's
        /// whole conversation).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<u32>,
        /// The seq of the parent's line the copy stops before.
        parent_seq: u64,
    },
    /// The approval mode changed (rebuilt on resume).
    ModeChanged {
        mode: ApprovalMode,
    },
    /// The model was switched (`/model NAME`, a custom command's
    /// `model:`); requests from here on name it and are charged at its
    /// prices (rebuilt on resume).
    ModelChanged {
        model: String,
        /// A custom command's switch, for its turn only: the model to go
        /// back to when that turn completes (also after a resume).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_turn: Option<String>,
    },
    /// The next turn (a custom command's) may run these without asking,
    /// until it completes (rebuilt on resume, so a resumed turn keeps
    /// them).
    TurnScope {
        /// Whose pre-approvals: `the /commit command`.
        owner: String,
        /// An older keel's narrowing (the only tools the turn could call),
        /// no longer written or read: such a turn is judged as any other.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<String>,
        /// Commands starting with these words (`Bash(git add:*)`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        prefixes: Vec<Vec<String>>,
        /// Commands exactly as written (`Bash(git status)`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        commands: Vec<Vec<String>>,
        /// MCP tools, or a server's (`mcp__docs__*`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        mcp_tools: Vec<String>,
    },
    /// The workflow moved to another phase.
    PhaseChanged {
        from: String,
        to: String,
    },
    /// The plan: text, path, revision and review status.
    PlanUpdated {
        plan: serde_json::Value,
    },
    /// The task list (`{"tasks": [...]}`).
    TaskUpdated {
        task: serde_json::Value,
    },
    /// The history from here on starts with `items`: old tool outputs
    /// elided, or a summary with the preserved facts (see
    /// `context::summary`). A resume starts from the latest one.
    Compaction {
        items: Vec<Item>,
        /// `overflow` (the provider refused the request), `threshold`
        /// (the estimate crossed `context.compact_threshold`) or `manual`.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
        /// `elide` (old tool outputs shortened) or `summary` (by the model).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        method: String,
        /// Estimated context tokens before and after.
        #[serde(default)]
        tokens_before: u64,
        #[serde(default)]
        tokens_after: u64,
        /// The last failing verification output, carried to later
        /// compactions when its call is no longer in the history.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failed_check: Option<String>,
        /// What the summary request used (it counts in the session's
        /// spend like any model response); none for `elide`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// What the summary request cost, as `model_response`'s `cost_usd`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
    },
    /// The spend limits in force from here on (see the table above).
    LimitsSet {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_cost_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u64>,
        /// `start`, `resume` (a flag changed them) or `raised` (the user
        /// raised one at the limit).
        reason: String,
    },
    /// A model request was not sent: with it the session would have
    /// spent more than a limit allows.
    BudgetExceeded {
        /// `cost` or `tokens`: the limit the request would have crossed.
        limit: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_cost_usd: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_tokens: Option<u64>,
        /// What the session had spent (`None`: no prices known).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spent_usd: Option<f64>,
        spent_tokens: u64,
        /// The projection of the request that was not sent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        next_usd: Option<f64>,
        next_tokens: u64,
    },
    /// A model request failed for good (after retries).
    ModelError {
        message: String,
    },
    /// A failure worth keeping that is not a model error.
    Error {
        message: String,
    },
    /// A bug caught at the tool or hook boundary (keel panicked there);
    /// the call got an error result and the session went on.
    InternalError {
        /// `tool` or `hook`.
        source: String,
        /// The tool's or hook's name.
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        message: String,
    },
    /// keel's network proxy judged a connection a command asked for
    /// (`[sandbox] network = "allowlist"`): the host, the port, the
    /// verdict and its reason. Written before the call's
    /// `tool_call_finished`; `call_id` is empty when the connection did
    /// not come through the jail's launcher.
    NetworkAccess {
        call_id: String,
        host: String,
        port: u16,
        allowed: bool,
        reason: String,
    },
    /// One hook run (or skip): what ran, how it ended and what it decided.
    HookRan {
        event: String,
        command: String,
        source: String,
        duration_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// `allow`, `ask`, `deny`, or absent when the hook had no say.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        skipped: Option<String>,
        /// Set when the hook tried to loosen a policy decision.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    /// An `agent` call started a child session (written ahead and synced,
    /// so a resume finds the child's log).
    SubagentStarted {
        call_id: String,
        session_id: String,
        log_path: String,
        /// The agent type.
        agent: String,
        description: String,
    },
    /// A child session's task ended; the call's result follows as its
    /// `tool_call_finished`.
    SubagentFinished {
        call_id: String,
        session_id: String,
        outcome: TurnOutcome,
        /// What the child spent on the task, as its servers reported it.
        usage: Usage,
        /// At the child's model's prices, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// What the child's spend was charged at keel's estimate for
        /// responses whose server reported no usage (its own children's
        /// included; the sum of their `model_response` lines'
        /// `estimated_tokens`); none when every server reported usage.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimated_tokens: Option<u64>,
        /// What those estimates cost at the models' prices (none without
        /// prices or estimates).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        estimated_cost_usd: Option<f64>,
    },
    TurnCompleted {
        turn: u32,
        outcome: TurnOutcome,
        usage: Usage,
    },
    /// The front end closed the session.
    SessionEnded {
        reason: String,
    },
    /// An MCP server's status: once per server when the session's first
    /// request is built, then on every change (crash, restart, late start).
    McpServerStatus {
        server: String,
        /// `starting`, `ready`, `failed`, `crashed` or `skipped`.
        status: String,
        /// The tool names offered to the model.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tools: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The tool list offered to the model changed at a turn boundary (an
    /// MCP server's list changed, or it started late or restarted with
    /// other tools): a deliberate, recorded break of the request prefix.
    ToolsChanged {
        reason: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        added: Vec<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        removed: Vec<String>,
        /// Bytes of the spec of each tool offered anew (added or listed
        /// again), as `prompt_prefix`'s `tool_bytes`.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        tool_bytes: BTreeMap<String, u64>,
    },
}

impl SessionEvent {
    /// Every `type` this version writes. A line with another type is from a
    /// newer keel (kept raw and ignored), not a corrupt line.
    pub const TYPES: [&'static str; 39] = [
        "session_started",
        "session_resumed",
        "prompt_prefix",
        "context_updated",
        "user_message",
        "input_queued",
        "turn_started",
        "model_response",
        "policy_decision",
        "approval",
        "always_removed",
        "tool_call_started",
        "file_before",
        "file_changed",
        "tool_call_finished",
        "checkpoint",
        "undo",
        "rewound",
        "forked",
        "mode_changed",
        "model_changed",
        "turn_scope",
        "phase_changed",
        "plan_updated",
        "task_updated",
        "compaction",
        "limits_set",
        "budget_exceeded",
        "model_error",
        "error",
        "internal_error",
        "hook_ran",
        "network_access",
        "subagent_started",
        "subagent_finished",
        "turn_completed",
        "session_ended",
        "mcp_server_status",
        "tools_changed",
    ];

    /// Whether this event must be on disk (synced) before keel goes on:
    /// ahead of a side effect, or at a turn or session boundary.
    pub fn needs_sync(&self) -> bool {
        match self {
            SessionEvent::ToolCallStarted { class, .. } => *class == ToolClass::Mutating,
            SessionEvent::FileBefore { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::TurnCompleted { .. }
            | SessionEvent::SessionEnded { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { .. } => true,
            SessionEvent::SessionStarted { .. }
            | SessionEvent::SessionResumed { .. }
            | SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::UserMessage { .. }
            | SessionEvent::InputQueued { .. }
            | SessionEvent::TurnStarted { .. }
            | SessionEvent::ModelResponse { .. }
            | SessionEvent::PolicyDecision { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::ToolCallFinished { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::ModeChanged { .. }
            | SessionEvent::ModelChanged { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::PhaseChanged { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            | SessionEvent::Compaction { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. } => false,
            SessionEvent::SubagentFinished { .. } => false,
        }
    }
}

/// Who started a subagent's session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ParentLink {
    pub session_id: String,
    /// The parent's `agent` call.
    pub call_id: String,
    /// The agent type.
    pub agent: String,
    /// 1 for a child of the main session.
    pub depth: u32,
}

/// One line of the session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventRecord {
    pub v: u32,
    pub seq: u64,
    pub ts: String,
    #[serde(flatten)]
    pub event: SessionEvent,
}
