//! [`McpTool`]: one MCP server's tool behind keel's [`Tool`] trait, so the
//! registry runs it like a built-in (argument parsing, cancellation,
//! panics caught, duration measured) and the runtime judges, hooks and
//! logs it like any call.
//!
//! Invariant: a server's failure (it said `isError`, timed out, crashed,
//! broke the protocol) is a tool error the model reads, never a failed
//! turn; its kind is in the result's metadata.

use std::sync::Arc;

use serde_json::Value;

use super::content::render;
use super::hub::McpToolDef;
use super::server::Server;
use crate::protocol::{Origin, ToolClass, ToolMeta, ToolOutput};
use crate::tools::{BoxFuture, Tool, ToolContext, ToolError};

/// An MCP tool offered to the model.
pub struct McpTool {
    def: McpToolDef,
    server: Arc<Server>,
}

impl McpTool {
    pub fn new(def: McpToolDef, server: Arc<Server>) -> Self {
        Self { def, server }
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::InvalidArguments {
                    tool: self.def.name.clone(),
                    message: format!("expected a JSON object, got {other}"),
                });
            }
        };
        let result = self.server.call(&self.def.remote, arguments, ctx).await.map_err(|error| {
            ToolError::External {
                kind: error.kind(),
                message: format!("MCP server `{}`: {error}", self.def.server),
            }
        })?;
        let rendered = render(&result);
        if rendered.is_error {
            return Err(ToolError::External { kind: "tool_error", message: rendered.text });
        }
        let meta = ToolMeta::details(rendered.meta)
            .with("server", self.def.server.clone())
            .with("tool", self.def.remote.clone());
        Ok(ToolOutput { text: rendered.text, meta, images: rendered.images })
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.def.name
    }

    fn description(&self) -> &str {
        &self.def.description
    }

    fn parameters(&self) -> Value {
        self.def.parameters.clone()
    }

    fn class(&self) -> ToolClass {
        if self.def.read_only { ToolClass::ReadOnly } else { ToolClass::Mutating }
    }

    fn origin(&self, _args: &Value) -> Origin {
        Origin::Mcp { server: self.def.server.clone(), trusted: self.def.trusted_content }
    }

    fn run<'a>(
        &'a self,
        args: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(self.call(args, ctx))
    }
}
