//! MCP in the TUI: server statuses as notices (a slow or failed server is
//! said once, with its log), `/mcp` listing every server and its tools,
//! tool progress in the status line, and `/mcp__server__prompt` commands
//! sent to the session to expand.
//!
//! Invariant: pure, like `update`; the session owns the servers.

use std::path::PathBuf;

use super::app::{App, Command};
use super::keys::start_running;
use super::transcript::{CellKind, Level};

/// One server as the last status event described it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpLine {
    pub server: String,
    pub status: String,
    pub tools: Vec<String>,
    pub error: Option<String>,
    pub log: Option<PathBuf>,
}

/// A server's status arrived: remembered for `/mcp`, said as a notice.
pub fn on_status(
    app: &mut App,
    server: String,
    status: String,
    tools: Vec<String>,
    error: Option<String>,
    log: Option<PathBuf>,
) {
    let text = match (status.as_str(), &error) {
        ("ready", _) => format!("mcp: {server} ready ({} tools)", tools.len()),
        (_, Some(error)) => format!("mcp: {server} {status}: {error}"),
        (_, None) => format!("mcp: {server} {status}"),
    };
    let level = if status == "ready" { Level::Info } else { Level::Warning };
    let line = McpLine { server, status, tools, error, log };
    match app.mcp.iter_mut().find(|known| known.server == line.server) {
        Some(known) => *known = line,
        None => app.mcp.push(line),
    }
    app.notice(level, text);
}

/// A running tool reported progress: shown in the status line.
pub fn on_progress(
    app: &mut App,
    call_id: &str,
    progress: f64,
    total: Option<f64>,
    message: Option<String>,
) {
    let _ = call_id;
    let of = total.map(|total| format!("/{total}")).unwrap_or_default();
    let message = message.map(|message| format!(" {message}")).unwrap_or_default();
    let tool = app.status.activity.split(' ').next().unwrap_or_default().to_owned();
    app.status.activity = format!("{tool} {progress}{of}{message}");
}

/// `/mcp`: every server, its status and tools.
pub fn show(app: &mut App) -> Vec<Command> {
    if app.mcp.is_empty() {
        let text = "no MCP servers (configure [mcp_servers.NAME] in ~/.keel/config.toml, or a \
                    trusted project's .mcp.json; `keel mcp add`); statuses show once the first \
                    turn starts";
        app.notice(Level::Info, text);
        return Vec::new();
    }
    let mut lines = Vec::new();
    for server in &app.mcp {
        let mut line = format!("{} · {}", server.server, server.status);
        if let Some(error) = &server.error {
            line.push_str(&format!(" · {error}"));
        }
        if let Some(log) = &server.log {
            line.push_str(&format!(" · log {}", log.display()));
        }
        lines.push(line);
        lines.extend(server.tools.iter().map(|tool| format!("  {tool}")));
    }
    app.notice(Level::Info, format!("MCP servers:\n{}", lines.join("\n")));
    Vec::new()
}

/// `/mcp__server__prompt words…`: the session expands it into the
/// prompt's text and runs it as the turn's prompt.
pub fn run_prompt(app: &mut App, line: &str) -> Vec<Command> {
    app.scroll = 0;
    start_running(app, "thinking");
    app.transcript.push(CellKind::User(line.to_owned()));
    vec![Command::Submit(line.to_owned())]
}
