//! One live connection to one MCP server: the `initialize` handshake over
//! stdio (a child process started through [`crate::sandbox::server`]) or
//! streamable HTTP, `tools/list` and `prompts/list` with pagination,
//! `tools/call` with progress and cancellation, `prompts/get`.
//!
//! Invariants: keel offers the client capabilities it implements and no
//! more (no roots, sampling or elicitation: a server asking gets an
//! error); the protocol version the server answers must be one keel
//! knows, else the connection is refused with both versions named; every
//! request is bounded (pages and list lengths by [`MAX_PAGES`] and
//! [`MAX_LISTED`], calls by their timeout); a cancelled or timed-out call
//! sends `notifications/cancelled` for its request id before it returns.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig,
    ClientRequest, GetPromptRequest, GetPromptRequestParams, Implementation,
    PaginatedRequestParams, ProgressNotificationParam, ProgressToken, Prompt, ProtocolVersion,
    ServerResult, Tool,
};
use rmcp::service::{
    ClientInitializeError, NotificationContext, PeerRequestOptions, RoleClient, RunningService,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ServiceExt};

use super::McpError;
use super::frame_cap::{FrameCap, Oversized};
use super::http::McpHttpClient;
use crate::config::mcp::{McpServerConfig, McpTransport};
use crate::display::redact_urls;
use crate::sandbox::EnvFilter;
use crate::sandbox::server::{FailedStart, ServerExit, ServerProcess, ServerSpec, spawn_server};
use crate::tools::ToolContext;

/// Pages of a list keel follows at most (a server that keeps sending
/// cursors cannot hold the session).
pub const MAX_PAGES: usize = 50;
/// Tools (or prompts) of one server keel takes at most.
pub const MAX_LISTED: usize = 500;
/// The longest JSON-RPC message keel reads from a server; a stdio server
/// that sends a longer one loses its connection (`frame_cap`), so memory
/// stays bounded and the waiting call fails at once.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024 * 1024;

/// What a server told keel about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerFacts {
    pub protocol_version: String,
    pub name: Option<String>,
    pub version: Option<String>,
    pub has_tools: bool,
    pub has_prompts: bool,
    /// It advertised the `resources` capability (`mcp::resource`); whether
    /// it has any is `resource::any`.
    pub has_resources: bool,
}

/// Where progress of a call goes: the call's context.
type ProgressRoutes = Arc<Mutex<HashMap<ProgressToken, ToolContext>>>;

/// Notifications keel handles; everything else the defaults answer.
#[derive(Clone)]
pub struct Handler {
    /// Set on `notifications/tools/list_changed` and
    /// `notifications/resources/list_changed` (a server's first resource
    /// brings its resource tool); the session applies it at the next turn
    /// boundary.
    pub list_changed: Arc<std::sync::atomic::AtomicBool>,
    routes: ProgressRoutes,
}

impl Handler {
    pub fn new(list_changed: Arc<std::sync::atomic::AtomicBool>) -> Self {
        Self { list_changed, routes: Arc::default() }
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("keel", env!("CARGO_PKG_VERSION")),
        );
        // The newest version that still has the `initialize` handshake,
        // which every server released so far speaks.
        config.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        config
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let route =
            self.routes.lock().ok().and_then(|routes| routes.get(&params.progress_token).cloned());
        if let Some(ctx) = route {
            ctx.report_progress(params.progress, params.total, params.message);
        }
    }
}

/// Where and how a stdio server runs: its default folder, what its
/// inherited environment loses, where its stderr goes.
#[derive(Debug, Clone, Copy)]
pub struct StdioPlace<'a> {
    pub workspace_root: &'a Path,
    pub env_filter: &'a EnvFilter,
    pub stderr_log: &'a Path,
}

/// A running connection.
pub struct Connection {
    service: RunningService<RoleClient, Handler>,
    /// A stdio server's process, until [`Connection::close`] stops it.
    process: Mutex<Option<ServerProcess>>,
    pub facts: ServerFacts,
    routes: ProgressRoutes,
    /// Set when a stdio server's message passed [`MAX_MESSAGE_BYTES`].
    oversized: Oversized,
}

impl Connection {
    /// Starts (stdio) or reaches (HTTP) the server and runs the handshake.
    /// The caller bounds the time it may take.
    pub async fn open(
        config: &McpServerConfig,
        stdio: StdioPlace<'_>,
        handler: Handler,
    ) -> Result<Self, McpError> {
        let StdioPlace { workspace_root, env_filter, stderr_log } = stdio;
        let routes = handler.routes.clone();
        let oversized = Oversized::default();
        let (service, process) = match &config.transport {
            McpTransport::Stdio { command, args, env, cwd } => {
                let spec = ServerSpec {
                    program: OsString::from(command),
                    args: args.iter().map(OsString::from).collect(),
                    cwd: cwd.clone().unwrap_or_else(|| workspace_root.to_owned()),
                    env: env.iter().map(|(k, v)| (k.into(), v.0.clone().into())).collect(),
                    env_filter: env_filter.clone(),
                    stderr_log: stderr_log.to_owned(),
                    launcher: crate::sandbox::server_stage::launcher(),
                };
                let mut process = spawn_server(&spec)
                    .map_err(|error| McpError::Spawn { message: error.to_string() })?;
                let (Some(stdout), Some(stdin)) = (process.stdout.take(), process.stdin.take())
                else {
                    return Err(McpError::Spawn { message: "no pipes to the server".to_owned() });
                };
                let stdout = FrameCap::new(stdout, MAX_MESSAGE_BYTES, oversized.clone());
                let transport = AsyncRwTransport::new_client(stdout, stdin)
                    .with_max_line_length(MAX_MESSAGE_BYTES);
                let service = match handler.serve(transport).await {
                    Ok(service) => service,
                    Err(error) => {
                        let failure = process.failed_start(STDERR_GRACE, stderr_log).await;
                        return Err(stdio_start_error(&failure, &error));
                    }
                };
                (service, Some(process))
            }
            McpTransport::Http { url, bearer_token, headers, legacy_sse } => {
                let mut transport_config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str())
                        .max_json_response_size(MAX_MESSAGE_BYTES)
                        .max_sse_event_size(MAX_MESSAGE_BYTES);
                if let Some(token) = bearer_token {
                    transport_config = transport_config.auth_header(token.0.clone());
                }
                let custom = header_map(headers)?;
                transport_config = transport_config.custom_headers(custom.clone());
                let client = McpHttpClient::new();
                let failed = |error: &ClientInitializeError| McpError::Handshake {
                    message: format!(
                        "cannot open an MCP session at {}: {}",
                        redact_urls(url),
                        init_error_text(error)
                    ),
                };
                let service = if *legacy_sse {
                    open_legacy_sse(&client, url, bearer_token.as_ref(), custom, handler).await?
                } else {
                    let transport = StreamableHttpClientTransport::with_client(
                        client.clone(),
                        transport_config,
                    );
                    match handler.clone().serve(transport).await {
                        Ok(service) => service,
                        // A 405 to the POST: most likely a legacy endpoint.
                        Err(error) if client.saw_legacy_sse() => {
                            let token = bearer_token.as_ref();
                            open_legacy_sse(&client, url, token, custom, handler)
                                .await
                                .map_err(|_| failed(&error))?
                        }
                        Err(error) => return Err(failed(&error)),
                    }
                };
                (service, None)
            }
        };
        let facts = server_facts(&service)?;
        Ok(Self { service, process: Mutex::new(process), facts, routes, oversized })
    }

    /// Whether the connection is gone (the process exited, the transport
    /// closed).
    pub fn is_closed(&self) -> bool {
        self.service.is_closed()
            || self
                .process
                .lock()
                .is_ok_and(|mut process| process.as_mut().is_some_and(ServerProcess::has_exited))
    }

    /// The client side of the connection, for requests another file of
    /// this module sends (`resource`).
    pub(super) fn peer(&self) -> &rmcp::service::Peer<RoleClient> {
        self.service.peer()
    }

    /// The server's process id (stdio servers).
    pub fn pid(&self) -> Option<u32> {
        self.process.lock().ok().and_then(|process| process.as_ref().and_then(ServerProcess::id))
    }

    /// Every tool the server lists, following cursors.
    pub async fn list_tools(&self, timeout: Duration) -> Result<Vec<Tool>, McpError> {
        if !self.facts.has_tools {
            return Ok(Vec::new());
        }
        let peer = self.service.peer().clone();
        let pages = async move {
            let mut tools = Vec::new();
            let mut cursor = None;
            for _ in 0..MAX_PAGES {
                let params = PaginatedRequestParams::default().with_cursor(cursor);
                let page = peer.list_tools(Some(params)).await.map_err(request_error)?;
                tools.extend(page.tools);
                cursor = page.next_cursor;
                if cursor.is_none() || tools.len() >= MAX_LISTED {
                    break;
                }
            }
            tools.truncate(MAX_LISTED);
            Ok(tools)
        };
        tokio::time::timeout(timeout, pages)
            .await
            .map_err(|_| McpError::Timeout { what: "listing its tools".to_owned(), timeout })?
    }

    /// Every prompt the server lists (none if it has no prompts).
    pub async fn list_prompts(&self, timeout: Duration) -> Result<Vec<Prompt>, McpError> {
        if !self.facts.has_prompts {
            return Ok(Vec::new());
        }
        let peer = self.service.peer().clone();
        let pages = async move {
            let mut prompts = Vec::new();
            let mut cursor = None;
            for _ in 0..MAX_PAGES {
                let params = PaginatedRequestParams::default().with_cursor(cursor);
                let page = peer.list_prompts(Some(params)).await.map_err(request_error)?;
                prompts.extend(page.prompts);
                cursor = page.next_cursor;
                if cursor.is_none() || prompts.len() >= MAX_LISTED {
                    break;
                }
            }
            prompts.truncate(MAX_LISTED);
            Ok(prompts)
        };
        tokio::time::timeout(timeout, pages)
            .await
            .map_err(|_| McpError::Timeout { what: "listing its prompts".to_owned(), timeout })?
    }

    /// `prompts/get`: the prompt's messages, as text.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<Vec<String>, McpError> {
        let mut params = GetPromptRequestParams::new(name.to_owned());
        params.arguments = Some(arguments);
        let request = ClientRequest::GetPromptRequest(GetPromptRequest::new(params));
        let peer = self.service.peer().clone();
        let response = tokio::time::timeout(timeout, peer.send_request(request))
            .await
            .map_err(|_| McpError::Timeout { what: format!("prompt `{name}`"), timeout })?
            .map_err(request_error)?;
        let ServerResult::GetPromptResult(result) = response else {
            return Err(McpError::Protocol { message: "prompts/get got another answer".into() });
        };
        Ok(result
            .messages
            .iter()
            .map(|message| super::content::block_text(&message.content))
            .collect())
    }

    /// `tools/call` of `tool` with `arguments`, reporting progress through
    /// `ctx` and sending `notifications/cancelled` if `ctx.cancel` fires
    /// or `timeout` passes first.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
        ctx: &ToolContext,
    ) -> Result<CallToolResult, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = Some(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let peer = self.service.peer().clone();
        let mut handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(request_error)?;
        let token = handle.progress_token.clone();
        if let Ok(mut routes) = self.routes.lock() {
            routes.insert(token.clone(), ctx.clone());
        }
        let outcome = tokio::select! {
            response = &mut handle.rx => match response {
                Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
                Ok(Ok(_)) => Err(McpError::Protocol { message: "tools/call got another answer".into() }),
                Ok(Err(error)) => Err(request_error(error)),
                Err(_) => Err(McpError::Closed),
            },
            () = ctx.cancel.cancelled() => {
                let _ = handle.cancel(Some("cancelled by the user".to_owned())).await;
                Err(McpError::Cancelled)
            }
            () = tokio::time::sleep(timeout) => {
                let _ = handle.cancel(Some(format!("timed out after {} s", timeout.as_secs_f64()))).await;
                Err(McpError::Timeout { what: format!("`{tool}`"), timeout })
            }
        };
        if let Ok(mut routes) = self.routes.lock() {
            routes.remove(&token);
        }
        outcome.map_err(|error| match error {
            McpError::Closed if self.oversized.happened() => {
                McpError::MessageTooLarge { limit_mib: MAX_MESSAGE_BYTES / (1024 * 1024) }
            }
            other => other,
        })
    }

    /// Ends the connection: the service loop stops, and a stdio server's
    /// process group gets the kill ladder.
    pub async fn close(&self) {
        self.service.cancellation_token().cancel();
        let process = self.process.lock().ok().and_then(|mut process| process.take());
        if let Some(process) = process {
            process.stop().await;
        }
    }
}

/// The configured headers, checked.
fn header_map(
    headers: &[(String, crate::config::mcp::Secret)],
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, McpError> {
    let mut custom = HashMap::new();
    for (name, value) in headers {
        let bad = |what: &str| McpError::Config {
            message: format!("header `{name}` has an invalid {what}"),
        };
        let name = reqwest::header::HeaderName::try_from(name.as_str()).map_err(|_| bad("name"))?;
        let value =
            reqwest::header::HeaderValue::try_from(value.0.as_str()).map_err(|_| bad("value"))?;
        custom.insert(name, value);
    }
    Ok(custom)
}

/// The handshake over the legacy HTTP+SSE transport (`legacy_sse`).
async fn open_legacy_sse(
    client: &McpHttpClient,
    url: &str,
    bearer_token: Option<&crate::config::mcp::Secret>,
    headers: HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>,
    handler: Handler,
) -> Result<RunningService<RoleClient, Handler>, McpError> {
    let mut map: reqwest::header::HeaderMap = headers.into_iter().collect();
    if let Some(token) = bearer_token
        && let Ok(value) = reqwest::header::HeaderValue::try_from(format!("Bearer {}", token.0))
    {
        map.insert(reqwest::header::AUTHORIZATION, value);
    }
    let transport =
        super::legacy_sse::LegacySseTransport::connect(client, url, map, MAX_MESSAGE_BYTES).await?;
    handler.serve(transport).await.map_err(|error| McpError::Handshake {
        message: format!(
            "cannot open a legacy SSE session at {}: {}",
            redact_urls(url),
            init_error_text(&error)
        ),
    })
}

fn server_facts(service: &RunningService<RoleClient, Handler>) -> Result<ServerFacts, McpError> {
    let Some(info) = service.peer().peer_info() else {
        return Err(McpError::Protocol { message: "the server sent no initialize result".into() });
    };
    let version = info.protocol_version.clone();
    if !ProtocolVersion::KNOWN_VERSIONS.contains(&version) {
        return Err(McpError::Protocol {
            message: format!(
                "the server speaks MCP {version}, which keel does not know (keel asked for {})",
                ProtocolVersion::LATEST_WITH_INITIALIZE
            ),
        });
    }
    Ok(ServerFacts {
        protocol_version: version.to_string(),
        name: info.server_info.as_ref().map(|server| server.name.clone()),
        version: info.server_info.as_ref().map(|server| server.version.clone()),
        has_tools: info.capabilities.tools.is_some(),
        has_prompts: info.capabilities.prompts.is_some(),
        has_resources: info.capabilities.resources.is_some(),
    })
}

/// How long a server that failed its handshake gets to finish exiting
/// and to have its stderr copied, before keel stops it.
const STDERR_GRACE: Duration = Duration::from_secs(2);

/// One line for a stdio server whose `initialize` failed: how it ended and
/// the last line it wrote to stderr (front ends add where its log is).
fn stdio_start_error(failure: &FailedStart, error: &ClientInitializeError) -> McpError {
    let what = match failure.exit {
        ServerExit::Exited(code) => format!("the server exited with code {code}"),
        ServerExit::Signalled(signal) => format!("the server was killed by signal {signal}"),
        ServerExit::Running => format!("the server broke off: {}", init_error_text(error)),
    };
    let said = (failure.stderr_tail.as_ref())
        .map(|line| format!("; its stderr ends: {line}"))
        .unwrap_or_default();
    McpError::Handshake { message: format!("{what} before answering `initialize`{said}") }
}

/// A failed `initialize` in words, without rmcp's transport type names:
/// the underlying error and its causes.
fn init_error_text(error: &ClientInitializeError) -> String {
    match error {
        ClientInitializeError::ConnectionClosed(_) => "it closed the connection".to_owned(),
        ClientInitializeError::TransportError { error, .. } => {
            redact_urls(&error_chain(&*error.error))
        }
        ClientInitializeError::JsonRpcError(data) => {
            format!("it answered with an error: {}", data.message)
        }
        other => redact_urls(&other.to_string()),
    }
}

pub(super) fn request_error(error: rmcp::ServiceError) -> McpError {
    match error {
        rmcp::ServiceError::McpError(data) => {
            McpError::Server { message: data.message.to_string() }
        }
        rmcp::ServiceError::TransportClosed => McpError::Closed,
        // rmcp's transport errors name their Rust types and may carry the
        // URL: the causes alone, secrets hidden.
        rmcp::ServiceError::TransportSend(error) => {
            McpError::Protocol { message: redact_urls(&error_chain(&*error.error)) }
        }
        other => McpError::Protocol { message: redact_urls(&other.to_string()) },
    }
}

/// An error and its causes, `a: b: c` (an HTTP client error's own causes:
/// rmcp's wrapper does not pass them on).
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    let error = match error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(client)) => client,
        Some(_) | None => error,
    };
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
