//! MCP client: the servers users already run (stdio child processes and
//! streamable HTTP endpoints, configured in `config::mcp`), their tools
//! offered to the model as `mcp__<server>__<tool>` and their prompts as
//! `/mcp__<server>__<prompt>` commands. Built on the official SDK (`rmcp`)
//! with minimal features: the client, its async read/write transport over
//! our own spawned process, and its streamable HTTP worker over our own
//! reqwest client.
//!
//! Files: [`connection`] (one connection: handshake, lists, calls),
//! [`server`] (one supervised server: start, crash, restart with backoff,
//! status), [`hub`] (all of a session's servers: parallel start, the tool
//! list, prompts, shutdown), [`tool`] (an MCP tool as a
//! [`crate::tools::Tool`]), [`naming`], [`schema`] (what every provider
//! accepts), [`content`] (results as the model reads them), [`http`].
//!
//! Invariants: no server can block the session (every start, list and
//! call is bounded; a slow or failed server is reported and skipped); every
//! stdio server is spawned through `sandbox::server` (filtered
//! environment, stderr to a per-server log, killed with the kill ladder at
//! the end); every call is judged by policy and logged by the runtime like
//! any other tool call (this module only carries it out).

pub mod connection;
pub mod content;
pub mod http;
pub mod hub;
pub mod naming;
pub mod schema;
pub mod server;
pub mod tool;

use std::time::Duration;

pub use hub::{McpHub, McpPrompt, McpToolDef};
pub use naming::is_mcp_tool;
pub use server::{ServerState, ServerStatus};

/// Why a server or one of its requests failed. Every message names what
/// happened in words the model and the user can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McpError {
    #[error("cannot start the server: {message}")]
    Spawn { message: String },
    /// `initialize` failed: the message says how (the server exited with
    /// code N, an HTTP session could not be opened at URL, …).
    #[error("{message}")]
    Handshake { message: String },
    #[error("{message}")]
    Config { message: String },
    #[error("the server broke the protocol: {message}")]
    Protocol { message: String },
    #[error("{message}")]
    Server { message: String },
    #[error("no answer for {what} within {} s", timeout.as_secs_f64())]
    Timeout { what: String, timeout: Duration },
    #[error("the server closed the connection (it may have crashed)")]
    Closed,
    #[error("cancelled by the user")]
    Cancelled,
    #[error("the server is not running ({reason}); keel starts it again {retry}")]
    Unavailable { reason: String, retry: String },
    #[error("no server `{0}` is configured")]
    UnknownServer(String),
}

impl McpError {
    /// The `kind` of a tool result this error becomes.
    pub fn kind(&self) -> &'static str {
        match self {
            McpError::Spawn { .. }
            | McpError::Handshake { .. }
            | McpError::Config { .. }
            | McpError::Closed
            | McpError::Unavailable { .. }
            | McpError::UnknownServer(_) => "server_unavailable",
            McpError::Protocol { .. } => "protocol_error",
            McpError::Server { .. } => "server_error",
            McpError::Timeout { .. } => "timeout",
            McpError::Cancelled => "cancelled",
        }
    }
}
