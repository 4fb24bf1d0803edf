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
//!
//! # In a session
//!
//! Servers are configured in `config/mcp.rs` (a project's only after trust) and started by
//! `runtime/mcp_glue.rs` when the session is assembled (`McpState::start`, background tasks). The
//! first `run_turn`/`continue_turn` calls `mcp_turn_boundary`: it waits for every server at most
//! its `startup_timeout_sec` (an interrupt stops the wait), puts the MCP tools after keel's own in
//! the registry and `LoopConfig` (`tools`, `tool_classes`: `ReadOnly` only for a `readOnlyHint`
//! tool of a server with `trust_read_only_hint = true`, `McpToolDef::read_only`, decided in
//! [`hub`]; else `Mutating`), reports every server once (`mcp_server_status` line +
//! `RuntimeEvent`), then turns reporting on (a status event carries the server's prompts: the TUI
//! offers them in the slash popup). Later boundaries re-list servers that sent `list_changed` and,
//! if the definitions differ, replace them and record `tools_changed`: with the first memory notes'
//! `read_memory`, the only way the tool list moves (the request prefix stays stable, see
//! `context`). Status changes after a batch (crash, restart) are reported by `mcp_reports`.
//! `Session::end` stops every server (`McpHub::shutdown`, kill ladders in parallel); a dropped
//! session SIGKILLs their groups. Each stdio server runs under its stage
//! (`keel sandbox-exec --server-stage`, `sandbox::server_stage`): a child subreaper that ends
//! everything below it (`setsid` children included) when the server exits, keel's ladder reaches
//! it, or keel dies in any way (SIGKILL included). Only a SIGKILL of the stage itself (a dropped
//! session's group kill) skips that clean-up. Subagents share the session's hub and get
//! the MCP tools their type names, a read-only type only trusted reads (`runtime/subagent/mcp.rs`,
//! tests `tests/suite/subagents_mcp.rs`).
//!
//! Calls go through the ordinary path: `policy::evaluate` sends `mcp__*` to `policy/tool_rules.rs`,
//! the scheduler batches read-only ones concurrently, hooks see them with their own names, the
//! registry runs `McpTool`, the log has them like any call (mutating ones get the workspace
//! fingerprint and undo checkpoint shell commands get, since a server may write files).
//! `ToolContext` carries the call id and a progress sender; `runtime/execute.rs` forwards progress
//! as `RuntimeEvent::ToolProgress` while a batch runs. The workflow admits MCP tools as reads, but
//! a call that changed workspace files counts as a write for the verification gate
//! (`plan::observed_kind`). "Always" for an MCP tool is `ApprovalScope::AlwaysTool`, logged as
//! `approval` with `tool`, rebuilt on resume, persisted as a `tool_rule` in
//! `.keel/rules/local.rules`. Resources ([`resource`]): one `mcp__<server>__resources` tool per
//! server listing any (list, read; not for a bare capability), and `@server:uri` in a prompt inlined by
//! `runtime/mcp_glue.rs` before the turn. Transports: stdio, streamable HTTP ([`http`]) and the
//! legacy HTTP+SSE one ([`legacy_sse`]: `transport = "sse"`, or after a 405). Not built:
//! sampling/elicitation/roots (keel advertises no client capabilities), OAuth.
//!
//! # keel as a server
//!
//! `keel mcp-server` (`cli/mcp_server_cmd.rs`, rmcp's `server` feature) is keel as an MCP server
//! over stdio: one tool, `keel`, that runs `exec::run_headless` (the same turn and `result` line as
//! `keel exec --json`, events dropped: stdout is the protocol's) with the mode from the server's
//! command line and a `cwd` confined to the server's folder; the request's cancellation token is
//! the turn's; tasks run concurrently, each session with its own jail and network proxy.
//!
//! # Tests
//!
//! `tests/suite/mcp_server.rs` (keel driving `keel mcp-server` through its own client; a raw
//! JSON-RPC client: stdout is JSON-RPC only, refused arguments, cancellation),
//! `tests/suite/mcp_faults.rs` (the real binary against `tests/fixtures/mcp/fault_server.py` in
//! each fault mode, policy per mode), `mcp_session.rs` (list changes, cancellation, always, hooks,
//! resume), `mcp_npm.rs` (public reference servers over stdio, HTTP and legacy SSE; their package
//! cache comes from `.ci/run`, skipped outside CI when missing), `mcp_reference.rs` (server-memory,
//! server-sequential-thinking), `mcp_resources.rs` (list, read, `@server:uri`), `mcp_http.rs`
//! (headers, redirects, the legacy SSE fallback against `tests/fixtures/mcp/legacy_sse_server.py`). Bench: `benches/mcp.rs`.

pub mod connection;
pub mod content;
mod frame_cap;
pub mod http;
pub mod hub;
pub mod legacy_sse;
pub mod naming;
pub mod resource;
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
    #[error(
        "the server sent a message longer than {limit_mib} MiB; keel closed the connection \
         (it starts the server again at the next call)"
    )]
    MessageTooLarge { limit_mib: usize },
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
            McpError::Protocol { .. } | McpError::MessageTooLarge { .. } => "protocol_error",
            McpError::Server { .. } => "server_error",
            McpError::Timeout { .. } => "timeout",
            McpError::Cancelled => "cancelled",
        }
    }
}
