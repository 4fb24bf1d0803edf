//! Session-log events: every transition of the loop is one of these, and the
//! log (one [`EventRecord`] per JSONL line) is the single source of truth a
//! session is rebuilt from.
//!
//! Wire shape of a line: `{"v":1,"seq":N,"ts":"…","type":"…",…}`. Adding a
//! variant is compatible; renaming a field is not.

use serde::{Deserialize, Serialize};

use super::model::{ModelResponse, Usage};
use super::tool::{ToolCall, ToolClass, ToolResult};

/// Version of the log line format.
pub const LOG_FORMAT_VERSION: u32 = 1;

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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
}

/// One thing that happened in a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionEvent {
    SessionStarted {
        session_id: String,
        cwd: String,
        provider: String,
        model: String,
        keel_version: String,
    },
    UserMessage {
        text: String,
    },
    TurnStarted {
        turn: u32,
    },
    /// A complete model response (reasoning, text and tool calls).
    ModelResponse {
        step: u32,
        response: ModelResponse,
    },
    /// Written ahead: a tool call is on disk before it runs.
    ToolCallStarted {
        call: ToolCall,
        class: ToolClass,
    },
    ToolCallFinished {
        result: ToolResult,
        #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
        meta: serde_json::Value,
    },
    /// A model request failed for good (after retries).
    ModelError {
        message: String,
    },
    TurnCompleted {
        turn: u32,
        outcome: TurnOutcome,
        usage: Usage,
    },
}

/// One line of the session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub v: u32,
    pub seq: u64,
    pub ts: String,
    #[serde(flatten)]
    pub event: SessionEvent,
}
