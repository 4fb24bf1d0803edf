//! `keel mcp-server`: keel as an MCP server over stdio (as `codex
//! mcp-server` is), so other agents can hand it a task. One tool, `keel`:
//! `{"prompt", "cwd"?}` runs the task headless, as `keel exec` does, and
//! returns the final answer (with how the task ended, when it did not
//! simply complete) as text and `keel exec --json`'s `result` line
//! (status, declined calls, session id, log path, usage) as structured
//! content.
//!
//! Invariants: stdout carries only JSON-RPC (sessions print nothing; logs
//! go to stderr); tasks run concurrently, each session with its own jail
//! (no sandbox state is process-wide), and keel exits only once every
//! running task has closed its session; the client's
//! `notifications/cancelled` interrupts the task like Ctrl-C. The calling agent cannot widen what keel may do: the
//! approval mode is the server's command line's (`--mode`, `--full-auto`,
//! `--yolo`; else `default_mode`), `cwd` must lie inside the folder the
//! server started in, and nothing can be approved (no one to ask): calls
//! that need approval are declined and listed, as in `keel exec`. As in
//! `keel exec`, a task may write anywhere in the workspace found from its
//! `cwd` (the enclosing repository's root), not only below `cwd`: start
//! the server in the folder whose repository it may change.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

use super::{CliError, ModeArgs, ModelArgs};
use crate::config::{CliOverrides, Environment, Settings};
use crate::exec::{ExecOptions, ExecStatus, ExitStatus, Headless, ResultLine};
use crate::policy::ApprovalMode;
use crate::runtime::{EventSink, RuntimeEvent};

/// The one tool's name.
const TOOL: &str = "keel";

pub(super) async fn run(model: &ModelArgs, mode: &ModeArgs) -> Result<ExitStatus, CliError> {
    let mut env = Environment::from_process()?;
    env.cwd = std::fs::canonicalize(&env.cwd)?;
    let overrides = model.overrides();
    // Loaded now so a missing provider is an error before serving.
    let settings = crate::config::load(&env, &overrides)?;
    let running_tasks = Arc::new(tokio::sync::RwLock::new(()));
    let server = KeelServer {
        mode: mode.approval().unwrap_or(settings.default_mode),
        settings: Arc::new(settings),
        overrides,
        env,
        running_tasks: running_tasks.clone(),
    };
    let transport = AsyncRwTransport::new_server(tokio::io::stdin(), tokio::io::stdout());
    let running = server.serve(transport).await.map_err(CliError::runtime)?;
    running.waiting().await.map_err(CliError::runtime)?;
    // The client is gone and its requests' tokens cancelled: a task still
    // running ends as interrupted, its session closed, before keel exits.
    let _finished = running_tasks.write().await;
    Ok(ExitStatus::Done)
}

#[derive(Clone)]
struct KeelServer {
    /// Every task's approval mode.
    mode: ApprovalMode,
    /// Settings for the folder keel was started in.
    settings: Arc<Settings>,
    overrides: CliOverrides,
    /// The environment keel started in; `cwd` canonical.
    env: Environment,
    /// Held shared by every running task; taken whole before keel exits,
    /// so it waits for them all.
    running_tasks: Arc<tokio::sync::RwLock<()>>,
}

/// Drops every event: stdout is the protocol's.
struct Silent;

impl EventSink for Silent {
    fn emit(&mut self, _event: RuntimeEvent) {}
}

fn tool(mode: ApprovalMode) -> Tool {
    let schema: serde_json::Map<String, Value> = serde_json::from_value(json!({
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "description": "The task, as you would give it to a coding agent."},
            "cwd": {"type": "string", "description": "The folder to work in: the server's folder (the default) or one inside it."}
        },
        "required": ["prompt"],
        "additionalProperties": false
    }))
    .unwrap_or_default();
    Tool::new(
        TOOL,
        format!(
            "Run a coding task with keel, headless, in a git repository: keel reads, edits and \
             tests the code in its sandbox and returns its final answer. It runs in {} mode; \
             calls that need approval are declined and listed.",
            mode.as_str()
        ),
        schema,
    )
    .with_annotations(ToolAnnotations::new().read_only(false).open_world(false))
}

impl ServerHandler for KeelServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("keel", env!("CARGO_PKG_VERSION"));
        info.instructions =
            Some("`keel` runs one coding task per call and returns the answer.".into());
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![tool(self.mode)]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ));
        }
        let args = request.arguments.unwrap_or_default();
        if let Some(key) = args.keys().find(|key| !["prompt", "cwd"].contains(&key.as_str())) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown argument `{key}` (the tool takes `prompt` and `cwd`; the approval \
                     mode is set on the server's command line)"
                ),
                None,
            ));
        }
        let Some(prompt) =
            args.get("prompt").and_then(Value::as_str).filter(|p| !p.trim().is_empty())
        else {
            return Err(ErrorData::invalid_params("`prompt` is required", None));
        };
        let cwd = match args.get("cwd") {
            None => None,
            Some(Value::String(dir)) => Some(
                inside(&self.env.cwd, Path::new(dir))
                    .map_err(|e| ErrorData::invalid_params(e, None))?,
            ),
            Some(_) => return Err(ErrorData::invalid_params("`cwd` must be a string", None)),
        };
        let _running = self.running_tasks.read().await;
        let result = match self.run_task(prompt, cwd, &context.ct).await {
            Ok(result) => result,
            Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
        };
        Ok(CallToolResponse::Complete(result))
    }
}

impl KeelServer {
    /// One headless turn, as `keel exec --json` runs it: the final answer
    /// (or the error) as text, the `result` line as structured content.
    async fn run_task(
        &self,
        prompt: &str,
        cwd: Option<PathBuf>,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<CallToolResult, String> {
        let settings = match &cwd {
            None => self.settings.clone(),
            Some(dir) => {
                let env = Environment { cwd: dir.clone(), ..self.env.clone() };
                Arc::new(crate::config::load(&env, &self.overrides).map_err(|e| e.to_string())?)
            }
        };
        let options = ExecOptions {
            prompt: Some(prompt.to_owned()),
            resume: None,
            json: true,
            last_message_file: None,
            approval: Some(self.mode),
            plan_review: None,
            reject_plan: None,
            rewind: None,
            input_stream: false,
            answer_from_stdin: false,
            progress: false,
            output_schema: None,
            cwd: cwd.unwrap_or_else(|| self.env.cwd.clone()),
            date: super::today(),
            images: Vec::new(),
        };
        let Headless { line, .. } =
            crate::exec::run_headless(&settings, &options, Box::new(Silent), cancel).await;
        let text = answer_text(&line);
        let mut result = match line.status {
            ExecStatus::Failed
            | ExecStatus::BudgetExceeded
            | ExecStatus::Stuck
            | ExecStatus::UsageError
            | ExecStatus::Cut
            | ExecStatus::SchemaInvalid => CallToolResult::error(vec![ContentBlock::text(text)]),
            ExecStatus::Completed
            | ExecStatus::Interrupted
            | ExecStatus::Unverified
            | ExecStatus::PlanReady
            | ExecStatus::NoToolCall
            | ExecStatus::NeedsApproval => CallToolResult::success(vec![ContentBlock::text(text)]),
        };
        result.structured_content = Some(line.to_json());
        Ok(result)
    }
}

/// What the calling agent reads: the final answer, then, unless the task
/// simply completed, how it ended (declined calls with what allows them,
/// the error), so an agent reading only text is not misled.
fn answer_text(line: &ResultLine) -> String {
    let mut parts: Vec<String> = line.final_text.iter().cloned().collect();
    if line.status != ExecStatus::Completed {
        parts.push(format!("[keel: the task ended {}]", line.status));
    }
    if !line.declined.is_empty() {
        parts.extend(crate::exec::needs_approval_lines(&line.declined));
    }
    if let Some(error) = &line.error {
        parts.push(format!("error: {error}"));
    }
    parts.join("\n")
}

/// `dir` (relative to `root`, or absolute) as a canonical folder inside
/// `root` (canonical), or why not.
fn inside(root: &Path, dir: &Path) -> Result<PathBuf, String> {
    let joined = root.join(dir);
    let found = std::fs::canonicalize(&joined)
        .map_err(|error| format!("`cwd` {}: {error}", joined.display()))?;
    if !found.is_dir() {
        return Err(format!("`cwd` {} is not a folder", found.display()));
    }
    if !found.starts_with(root) {
        return Err(format!(
            "`cwd` {} is outside {}, the folder this server was started in",
            found.display(),
            root.display()
        ));
    }
    Ok(found)
}
