//! The tool runtime: one file per tool (argument type with a schemars schema,
//! description, access class, run, tests) and the registry that dispatches a
//! model's [`ToolCall`] to them.
//!
//! Invariants: every path argument is resolved and confined to the workspace
//! (symlinks included) before it is touched; bad arguments, unknown tools and
//! tool failures become a [`ToolResult`] with `is_error` the model can read,
//! never a panic or a fatal error. Processes are spawned only via `sandbox`.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use tokio_util::sync::CancellationToken;

use crate::protocol::{ToolCall, ToolClass, ToolOutput, ToolResult, ToolSpec};

/// A boxed future, so tools can live behind `dyn Tool`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a tool may see of the session.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace root; every path is confined under it.
    pub workspace_root: PathBuf,
    /// Where relative paths and commands start (inside the workspace).
    pub cwd: PathBuf,
    /// Cancelled when the user interrupts the turn.
    pub cancel: CancellationToken,
}

/// A tool failure meant for the model to read.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments { tool: String, message: String },
}

/// One tool.
pub trait Tool: Send + Sync {
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// JSON schema of the arguments (generated with schemars).
    fn parameters(&self) -> serde_json::Value;
    fn class(&self) -> ToolClass;
    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>>;
}

/// The tools offered to the model.
pub struct ToolRegistry {
    tools: Vec<Box<dyn Tool>>,
}

impl ToolRegistry {
    /// The built-in tools.
    pub fn builtin() -> Self {
        Self { tools: Vec::new() }
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect()
    }

    /// The access class of a tool; unknown tools count as read-only since
    /// they never run (they only produce an error result).
    pub fn class_of(&self, name: &str) -> ToolClass {
        self.tools
            .iter()
            .find(|tool| tool.name() == name)
            .map_or(ToolClass::ReadOnly, |tool| tool.class())
    }

    /// Runs one call: parses its arguments, dispatches, and turns every
    /// failure into an error result. Returns the result and its metadata.
    pub async fn run_call(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> (ToolResult, serde_json::Value) {
        let _ = ctx;
        (
            ToolResult::error(&call.call_id, format!("unknown tool `{}`", call.name)),
            serde_json::Value::Null,
        )
    }
}
