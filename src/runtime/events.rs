//! What front ends see: one event stream for the TUI and `exec` alike.

use std::path::PathBuf;

use crate::policy::ApprovalMode;
use crate::protocol::{
    ModelResponse, StreamEvent, ToolCall, ToolClass, ToolMeta, ToolResult, TurnOutcome, Usage,
};
use crate::tasks::Task;

/// Something a front end may show.
#[derive(Debug, Clone, PartialEq)]
pub enum RuntimeEvent {
    SessionStarted {
        session_id: String,
        log_path: PathBuf,
        provider: String,
        model: String,
        workspace_root: PathBuf,
        /// Whether the model's commands run confined.
        sandbox: SandboxState,
        /// The approval mode the session starts (or resumes) in.
        mode: ApprovalMode,
        /// The model's window and prices (the table with `[context]`
        /// overrides), for the context % and cost front ends show.
        pricing: crate::context::Pricing,
        /// The session's spend limits (a resumed session's, as logged or
        /// changed by flags); raised later only through
        /// [`crate::runtime::Approver::raise_limit`].
        limits: crate::agent::SpendLimits,
    },
    /// Requests from here on go to `model`, charged at `pricing` (`/model`,
    /// a custom command's `model:` and the switch back after its turn).
    ModelChanged {
        model: String,
        pricing: crate::context::Pricing,
    },
    /// The approval mode changed during a turn (a plan approval leaves
    /// plan mode).
    ModeChanged {
        mode: ApprovalMode,
    },
    /// Phase, plan or tasks changed (and once at session start, so a
    /// resumed session shows where it stands).
    WorkflowChanged {
        phase: String,
        /// Where the latest plan is saved (`.keel/plans/…`), once it is.
        plan_path: Option<String>,
        /// `submitted`, `approved` or `rejected`; `None` before any plan.
        plan_status: Option<String>,
        tasks: Vec<Task>,
    },
    TurnStarted {
        turn: u32,
    },
    /// The user typed `text` during a turn; it waits for delivery.
    InputQueued {
        id: u64,
        text: String,
        mode: crate::protocol::Delivery,
    },
    /// Queued input `id` reached the model here, as a user message (into
    /// the running turn for a steer, else as the prompt of the turn that
    /// starts).
    InputDelivered {
        id: u64,
        text: String,
    },
    /// Live text / reasoning / tool-call deltas while the model streams.
    Stream(StreamEvent),
    /// A complete model response.
    ModelResponse(ModelResponse),
    ToolCallStarted {
        call: ToolCall,
        class: ToolClass,
    },
    ToolCallFinished {
        call: ToolCall,
        result: ToolResult,
        meta: ToolMeta,
    },
    /// The model is writing a compaction summary (`trigger`: `auto` or
    /// `manual`); a [`RuntimeEvent::Compacted`] follows.
    Compacting {
        trigger: String,
    },
    /// The history was compacted: why (`threshold`, `overflow`, `manual`)
    /// and the estimated context tokens before and after.
    Compacted {
        reason: String,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// A model request failed with a transient error and is sent again
    /// after `delay`: `attempt` (2 for the first retry) of at most
    /// `max_attempts`. What streamed of the failed attempt is void.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        reason: String,
        delay: std::time::Duration,
    },
    /// A call needed an approval nobody could give (headless run) and was
    /// not run; says what would allow it.
    ApprovalDeclined(super::DeclinedCall),
    /// A slow piece of work is under way or done (the undo checkpoint of
    /// a large workspace): one line for the user, nothing to decide.
    Progress {
        message: String,
    },
    /// Something the user should know that does not stop anything.
    Warning {
        message: String,
    },
    /// A failure (model error after retries, …); the turn ends after it.
    Error {
        message: String,
    },
    TurnCompleted {
        turn: u32,
        outcome: TurnOutcome,
        final_text: Option<String>,
        usage: Usage,
        /// Set when the turn delivered files changed after the last
        /// passing check: which commands ran since and why none counted.
        unverified: Option<String>,
    },
    /// An MCP server's status: every server once when the first request
    /// is built (ready, failed, still starting, skipped), then each change.
    McpServerStatus {
        server: String,
        /// `starting`, `ready`, `failed`, `crashed` or `skipped`.
        status: String,
        /// The tool names offered to the model.
        tools: Vec<String>,
        /// What went wrong, or why it was skipped.
        error: Option<String>,
        /// A stdio server's stderr log.
        log: Option<PathBuf>,
        /// The prompts it offers as slash commands:
        /// (`/mcp__server__prompt`, description).
        prompts: Vec<(String, String)>,
    },
    /// A running tool reported progress (an MCP server's
    /// `notifications/progress`).
    ToolProgress {
        call_id: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// An event of the subagent running for this session's `agent` call
    /// `call_id` (its own `SessionStarted` first, its `TurnCompleted`
    /// last); a grandchild's events come wrapped twice.
    Subagent {
        call_id: String,
        event: Box<RuntimeEvent>,
    },
}

/// Whether the commands the model runs are confined (issue 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxState {
    /// Landlock holds (fully or, on older kernels, without network rules).
    On,
    /// Switched off by configuration (full access with network).
    Off,
    /// Wanted but this system cannot enforce it.
    Unavailable,
}

impl SandboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::On => "on",
            Self::Off => "off",
            Self::Unavailable => "unavailable",
        }
    }
}

/// Receives runtime events. Implementations must not block for long: they
/// run on the driver's task.
pub trait EventSink: Send {
    fn emit(&mut self, event: RuntimeEvent);
}
