//! One supervised MCP server: its first start (in the background, bounded),
//! crash detection, restart on the next call with exponential backoff, and
//! the status front ends and `keel mcp list` show.
//!
//! Invariants: at most one start or restart of a server runs at a time (the
//! link lock is held across it; calls to a server that is down wait for it
//! or fail at once); a call never waits on another server; status changes
//! after the session's first report are queued exactly once each
//! ([`Server::take_reports`]), so a flapping server is reported per change,
//! never per call.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolResult, Prompt, ReadResourceResult, Tool};
use serde::Serialize;
use tokio::sync::{Mutex, watch};

use super::McpError;
use super::connection::{Connection, Handler, ServerFacts, StdioPlace};
use crate::config::mcp::{McpServerConfig, McpTransport};
use crate::sandbox::EnvFilter;
use crate::tools::ToolContext;

/// The longest a first start may go on in the background after the first
/// request stopped waiting for it.
pub const LATE_START_LIMIT: Duration = Duration::from_secs(60);
/// Backoff between restarts: 1 s, doubling, at most this.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Where a server stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// Its first start is still going on.
    Starting,
    Ready,
    /// It could not be started (or restarted).
    Failed,
    /// It ended on its own after it was ready; the next call restarts it.
    Crashed,
    /// Configured but not started (untrusted project, disabled, invalid).
    Skipped,
}

impl ServerState {
    pub fn as_str(self) -> &'static str {
        match self {
            ServerState::Starting => "starting",
            ServerState::Ready => "ready",
            ServerState::Failed => "failed",
            ServerState::Crashed => "crashed",
            ServerState::Skipped => "skipped",
        }
    }
}

/// A server's status for front ends, the log and `keel mcp list --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    pub server: String,
    pub status: ServerState,
    /// `stdio`, `http` or `sse` (configured as legacy HTTP+SSE).
    pub transport: &'static str,
    /// Where it is configured.
    pub origin: String,
    /// The names offered to the model (`mcp__server__tool`), when known.
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A stdio server's stderr log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// What keel left out of its offer (tools past the size bounds).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl ServerStatus {
    /// The line for the session's `mcp_server_status`: the error, else the
    /// warnings.
    pub fn message(&self) -> Option<String> {
        self.error.clone().or_else(|| (!self.warnings.is_empty()).then(|| self.warnings.join("; ")))
    }
}

/// A live connection and what it listed when it opened.
struct Live {
    conn: Arc<Connection>,
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    /// It listed a resource or template ([`super::resource::any`]).
    has_resources: bool,
}

/// What a server listed last; kept while it is down, so a crashed
/// server's tools stay offered (and its calls restart it).
#[derive(Debug, Clone, Default)]
struct Catalog {
    tools: Vec<Tool>,
    prompts: Vec<Prompt>,
    /// It listed resources when it last started or said they changed.
    has_resources: bool,
}

enum Link {
    Starting,
    Up(Live),
    Down { error: String, failures: u32, retry_at: Instant, crashed: bool },
}

/// One configured server.
pub struct Server {
    pub config: McpServerConfig,
    workspace_root: PathBuf,
    /// What a stdio server's inherited environment loses.
    env_filter: EnvFilter,
    /// Where a stdio server's stderr goes.
    pub log_path: PathBuf,
    link: Mutex<Link>,
    /// `notifications/tools/list_changed` (or `resources/list_changed`)
    /// arrived, or a restart brought another list: the session refreshes
    /// the tools at a turn boundary.
    pub tools_stale: Arc<AtomicBool>,
    /// Whether the first start is over (ready or failed).
    settled: watch::Sender<bool>,
    /// Status changes not yet reported (once reporting is on).
    reports: std::sync::Mutex<(bool, Vec<ServerStatus>)>,
    /// The last status, for reports and listings without the link lock.
    last: std::sync::Mutex<ServerStatus>,
    /// What it listed last (a restart that lists other tools makes the
    /// tools stale).
    catalog: std::sync::Mutex<Catalog>,
}

impl Server {
    pub fn new(
        config: McpServerConfig,
        workspace_root: PathBuf,
        env_filter: EnvFilter,
        log_path: PathBuf,
    ) -> Self {
        let status = ServerStatus {
            server: config.name.clone(),
            status: ServerState::Starting,
            transport: transport_name(&config.transport),
            origin: config.origin.describe(),
            tools: Vec::new(),
            error: None,
            log: matches!(config.transport, McpTransport::Stdio { .. }).then(|| log_path.clone()),
            protocol_version: None,
            warnings: Vec::new(),
        };
        Self {
            config,
            workspace_root,
            env_filter,
            log_path,
            link: Mutex::new(Link::Starting),
            tools_stale: Arc::new(AtomicBool::new(false)),
            settled: watch::Sender::new(false),
            reports: std::sync::Mutex::new((false, Vec::new())),
            last: std::sync::Mutex::new(status),
            catalog: std::sync::Mutex::new(Catalog::default()),
        }
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The first start: bounded by the server's startup timeout, or by
    /// [`LATE_START_LIMIT`] when that is longer (the session stops waiting
    /// at the startup timeout and takes the tools later).
    pub async fn start(&self) {
        let limit = self.config.startup_timeout.max(LATE_START_LIMIT);
        let outcome = self.connect(limit).await;
        let mut link = self.link.lock().await;
        if let (Link::Down { crashed: false, failures: 0, .. }, Ok(live)) = (&*link, &outcome) {
            // The session ended while the server was starting: stop it
            // now rather than leave it to a SIGKILL when it is dropped.
            live.conn.close().await;
            drop(link);
            self.settled.send_replace(true);
            return;
        }
        *link = match outcome {
            Ok(live) => {
                self.set_status(ServerState::Ready, None, Some(&live));
                Link::Up(live)
            }
            Err(error) => self.down(error.to_string(), 1, false),
        };
        drop(link);
        self.settled.send_replace(true);
    }

    /// Waits until the first start is over.
    pub async fn settled(&self) {
        let mut receiver = self.settled.subscribe();
        let _ = receiver.wait_for(|settled| *settled).await;
    }

    async fn connect(&self, limit: Duration) -> Result<Live, McpError> {
        let handler = Handler::new(self.tools_stale.clone());
        let attempt = async {
            let stdio = StdioPlace {
                workspace_root: &self.workspace_root,
                env_filter: &self.env_filter,
                stderr_log: &self.log_path,
            };
            let conn = Connection::open(&self.config, stdio, handler).await?;
            let tools = conn.list_tools(limit).await?;
            let prompts = conn.list_prompts(limit).await.unwrap_or_default();
            let has_resources = super::resource::any(&conn, limit).await;
            Ok(Live { conn: Arc::new(conn), tools, prompts, has_resources })
        };
        match tokio::time::timeout(limit, attempt).await {
            Ok(result) => result,
            Err(_) => Err(McpError::Timeout { what: "starting".to_owned(), timeout: limit }),
        }
    }

    /// A live connection, restarting a crashed or failed server if its
    /// backoff has passed.
    async fn connection(&self) -> Result<Arc<Connection>, McpError> {
        let mut link = self.link.lock().await;
        if let Link::Up(live) = &*link {
            if !live.conn.is_closed() {
                return Ok(live.conn.clone());
            }
            let error = "the server exited".to_owned();
            *link = self.down(error, 0, true);
        }
        match &*link {
            Link::Up(live) => Ok(live.conn.clone()),
            Link::Starting => Err(McpError::Unavailable {
                reason: "it is still starting".to_owned(),
                retry: "when it is ready".to_owned(),
            }),
            Link::Down { error, failures, retry_at, crashed } => {
                let now = Instant::now();
                if now < *retry_at {
                    return Err(McpError::Unavailable {
                        reason: error.clone(),
                        retry: format!("in {} s", (*retry_at - now).as_secs().max(1)),
                    });
                }
                let (failures, crashed) = (*failures, *crashed);
                match self.connect(self.config.startup_timeout).await {
                    Ok(live) => {
                        let conn = live.conn.clone();
                        let last = self.catalog();
                        if last.tools != live.tools || last.has_resources != live.has_resources {
                            self.tools_stale.store(true, Ordering::SeqCst);
                        }
                        self.set_status(ServerState::Ready, None, Some(&live));
                        *link = Link::Up(live);
                        Ok(conn)
                    }
                    Err(restart_error) => {
                        let message = restart_error.to_string();
                        *link = self.down(message.clone(), failures + 1, crashed);
                        let retry = match &*link {
                            Link::Down { retry_at, .. } => {
                                format!(
                                    "in {} s",
                                    retry_at.saturating_duration_since(now).as_secs().max(1)
                                )
                            }
                            Link::Up(_) | Link::Starting => "later".to_owned(),
                        };
                        Err(McpError::Unavailable { reason: message, retry })
                    }
                }
            }
        }
    }

    /// A Down link, with its status set and the backoff computed.
    fn down(&self, error: String, failures: u32, crashed: bool) -> Link {
        // An HTTP server's URL may carry a token (`?token=…`).
        let error = crate::display::redact_urls(&error);
        let state =
            if crashed && failures == 0 { ServerState::Crashed } else { ServerState::Failed };
        self.set_status(state, Some(error.clone()), None);
        let backoff = if failures == 0 {
            Duration::ZERO
        } else {
            let doubled = Duration::from_secs(1) * 2u32.saturating_pow(failures - 1);
            doubled.min(MAX_BACKOFF)
        };
        Link::Down { error, failures, retry_at: Instant::now() + backoff, crashed }
    }

    /// Calls the server's tool `remote`.
    pub async fn call(
        &self,
        remote: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        ctx: &ToolContext,
    ) -> Result<CallToolResult, McpError> {
        let conn = self.connection().await?;
        let result = conn.call(remote, arguments, self.config.tool_timeout, ctx).await;
        if matches!(result, Err(McpError::Closed)) || conn.is_closed() {
            let mut link = self.link.lock().await;
            if matches!(&*link, Link::Up(live) if Arc::ptr_eq(&live.conn, &conn)) {
                *link = self.down("the server exited during a call".to_owned(), 0, true);
            }
            drop(link);
            conn.close().await;
        }
        result
    }

    /// `prompts/get` on the server.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
    ) -> Result<Vec<String>, McpError> {
        let conn = self.connection().await?;
        conn.get_prompt(name, arguments, self.config.tool_timeout).await
    }

    /// Whether the server listed resources (or templates) when it last
    /// started or said they changed: it then gets the resource tool and
    /// its `@server:uri` mentions are read.
    pub fn has_resources(&self) -> bool {
        self.catalog().has_resources
    }

    /// Its resources and resource templates (`resources/list`,
    /// `resources/templates/list`), bounded by the tool timeout.
    pub async fn list_resources(&self) -> Result<super::resource::Listing, McpError> {
        let conn = self.connection().await?;
        super::resource::list(&conn, self.config.tool_timeout).await
    }

    /// `resources/read` of `uri`, bounded by the tool timeout.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, McpError> {
        let conn = self.connection().await?;
        super::resource::read(&conn, uri, self.config.tool_timeout).await
    }

    /// The tools and prompts the server listed last (kept while it is
    /// down; empty if it never started).
    pub fn listing(&self) -> (Vec<Tool>, Vec<Prompt>) {
        let catalog = self.catalog();
        (catalog.tools, catalog.prompts)
    }

    fn catalog(&self) -> Catalog {
        self.catalog.lock().map(|catalog| catalog.clone()).unwrap_or_default()
    }

    /// Lists the tools, and looks for resources, again after a
    /// `list_changed` (each bounded by the startup timeout); a server that
    /// is not ready keeps its last list.
    pub async fn relist(&self) {
        if !self.tools_stale.swap(false, Ordering::SeqCst) {
            return;
        }
        let mut link = self.link.lock().await;
        let Link::Up(live) = &mut *link else { return };
        let timeout = self.config.startup_timeout;
        if let Ok(tools) = live.conn.list_tools(timeout).await {
            live.tools = tools.clone();
            if let Ok(mut catalog) = self.catalog.lock() {
                catalog.tools = tools;
            }
        }
        live.has_resources = super::resource::any(&live.conn, timeout).await;
        if let Ok(mut catalog) = self.catalog.lock() {
            catalog.has_resources = live.has_resources;
        }
    }

    /// Stops the server (kill ladder for a stdio server's process group).
    pub async fn shutdown(&self) {
        let mut link = self.link.lock().await;
        let previous = std::mem::replace(
            &mut *link,
            Link::Down {
                error: "stopped".to_owned(),
                failures: 0,
                retry_at: Instant::now() + MAX_BACKOFF * 1000,
                crashed: false,
            },
        );
        drop(link);
        if let Link::Up(live) = previous {
            live.conn.close().await;
        }
    }

    /// The server's process id while a stdio server runs.
    pub async fn pid(&self) -> Option<u32> {
        match &*self.link.lock().await {
            Link::Up(live) => live.conn.pid(),
            Link::Starting | Link::Down { .. } => None,
        }
    }

    /// The current status.
    pub fn status(&self) -> ServerStatus {
        self.last
            .lock()
            .map(|status| status.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    /// Records the offered tool names, and what was left out, in the status.
    pub fn set_offered(&self, names: Vec<String>, warnings: Vec<String>) {
        if let Ok(mut status) = self.last.lock() {
            status.tools = names;
            status.warnings = warnings;
        }
    }

    /// Turns reporting on: from now on every status change is queued.
    pub fn start_reporting(&self) {
        if let Ok(mut reports) = self.reports.lock() {
            reports.0 = true;
        }
    }

    /// The status changes since the last call.
    pub fn take_reports(&self) -> Vec<ServerStatus> {
        self.reports.lock().map(|mut reports| std::mem::take(&mut reports.1)).unwrap_or_default()
    }

    fn set_status(&self, state: ServerState, error: Option<String>, live: Option<&Live>) {
        let Ok(mut status) = self.last.lock() else { return };
        status.status = state;
        status.error = error;
        if let Some(live) = live {
            status.protocol_version = Some(live.conn.facts.protocol_version.clone());
            if let Ok(mut catalog) = self.catalog.lock() {
                *catalog = Catalog {
                    tools: live.tools.clone(),
                    prompts: live.prompts.clone(),
                    has_resources: live.has_resources,
                };
            }
        }
        let snapshot = status.clone();
        drop(status);
        if let Ok(mut reports) = self.reports.lock()
            && reports.0
        {
            reports.1.push(snapshot);
        }
    }

    /// What the server said about itself, while it is up.
    pub async fn facts(&self) -> Option<ServerFacts> {
        match &*self.link.lock().await {
            Link::Up(live) => Some(live.conn.facts.clone()),
            Link::Starting | Link::Down { .. } => None,
        }
    }
}

fn transport_name(transport: &McpTransport) -> &'static str {
    match transport {
        McpTransport::Stdio { .. } => "stdio",
        McpTransport::Http { legacy_sse: true, .. } => "sse",
        McpTransport::Http { .. } => "http",
    }
}
