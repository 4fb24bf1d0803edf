//! Shared vocabulary of every layer: conversation items, tool specs, calls
//! and results, model requests and responses, stream events, usage and the
//! session-log event envelope.
//!
//! Invariants: these types are plain data (serde, no I/O, no clock). Every
//! provider maps to and from them; nothing here knows a wire format.
//!
//! Files: `items.rs` (`Item`, the flat conversation history; `ReasoningItem`, per-vendor reasoning
//! to replay), `tool.rs` (`ToolSpec`/`ToolCall`/`ToolResult`/`ToolClass`, `HarnessTool`),
//! `image.rs` (`ImagePart`: an image by hash, its bytes beside it in memory only),
//! `tool_meta.rs` (`ToolMeta` + `ResultKind`: result metadata, typed where other layers act on it),
//! `mode.rs` (`ApprovalMode`), `schema.rs` (`schema_of`: argument schemas from argument types,
//! without what JSON Schema says by default), `strict_schema.rs` (a schema in a protocol's strict
//! subset, `[provider] strict_tools`), `model.rs`
//! (`ModelRequest`/`ModelResponse`/`StreamEvent`/`Usage`/ `StopReason`), `context.rs`
//! (`PrefixSections`), `events.rs` (`SessionEvent`/`EventRecord`: the log lines, with their
//! table; `RewindScope` in `rewind_scope.rs`)
//! and `patch.rs` (the `apply_patch` parser both the tool and policy read patches with);
//! `json_check.rs` (the JSON Schema validator of the subset keel writes and reads),
//! `answer_shape.rs` (`--output-schema`: the final answer's schema and its check) and
//! `contract.rs` (the session log's published schema, `schemas/`).

pub mod answer_shape;
mod context;
pub mod contract;
mod events;
#[cfg(test)]
mod events_tests;
mod image;
mod items;
pub mod json_check;
mod mode;
mod model;
pub mod origin;
pub mod patch;
mod queued_input;
mod rewind_scope;
mod schema;
pub mod strict_schema;
mod tool;
pub mod tool_facts;
mod tool_meta;

pub use context::{ContextKind, ContextPart, PrefixSections};
pub use events::{
    ApprovalScope, EventRecord, LOG_FORMAT_VERSION, ParentLink, RewindScope, SessionEvent,
    TurnOutcome,
};
pub use image::{ImageData, ImageMediaType, ImagePart, human_size};
pub use items::{Item, ReasoningItem};
pub use mode::ApprovalMode;
pub use model::{ModelRequest, ModelResponse, StopReason, StreamEvent, Usage};
pub use origin::Origin;
pub use queued_input::{Delivery, QueuedInput};
pub use schema::schema_of;
pub use tool::{
    HarnessTool, MCP_PREFIX, ToolCall, ToolClass, ToolOutput, ToolResult, ToolSpec, entry_names,
    mcp_server_of, sent_schemas, spec_bytes,
};
pub use tool_facts::{Access, Operand, PathArg, ToolInfo, ToolKind};
pub use tool_meta::{ResultKind, ToolMeta};
