//! What front ends see: one event stream for the TUI and `exec` alike.

use std::path::PathBuf;

use crate::protocol::{
    ModelResponse, StreamEvent, ToolCall, ToolClass, ToolResult, TurnOutcome, Usage,
};

/// Something a front end may show.
#[derive(Debug, Clone, PartialEq)]
pub enum RuntimeEvent {
    SessionStarted {
        session_id: String,
        log_path: PathBuf,
        provider: String,
        model: String,
        workspace_root: PathBuf,
    },
    TurnStarted {
        turn: u32,
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
        meta: serde_json::Value,
    },
    /// The history was compacted: why (`threshold`, `overflow`, `manual`)
    /// and the estimated context tokens before and after.
    Compacted {
        reason: String,
        tokens_before: u64,
        tokens_after: u64,
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
    },
}

/// Receives runtime events. Implementations must not block for long: they
/// run on the driver's task.
pub trait EventSink: Send {
    fn emit(&mut self, event: RuntimeEvent);
}
