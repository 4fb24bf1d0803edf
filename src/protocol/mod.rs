//! Shared vocabulary of every layer: conversation items, tool specs, calls
//! and results, model requests and responses, stream events, usage and the
//! session-log event envelope.
//!
//! Invariants: these types are plain data (serde, no I/O, no clock). Every
//! provider maps to and from them; nothing here knows a wire format.

mod context;
mod events;
#[cfg(test)]
mod events_tests;
mod items;
mod mode;
mod model;
pub mod patch;
mod schema;
mod tool;
mod tool_meta;

pub use context::{ContextKind, ContextPart, PrefixSections};
pub use events::{
    ApprovalScope, EventRecord, LOG_FORMAT_VERSION, ParentLink, SessionEvent, TurnOutcome,
};
pub use items::{Item, ReasoningItem};
pub use mode::ApprovalMode;
pub use model::{ModelRequest, ModelResponse, StopReason, StreamEvent, Usage};
pub use schema::schema_of;
pub use tool::{
    HarnessTool, MCP_PREFIX, ToolCall, ToolClass, ToolOutput, ToolResult, ToolSpec, entry_names,
};
pub use tool_meta::{ResultKind, ToolMeta};
