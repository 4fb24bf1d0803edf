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
    /// Its prompts as slash commands: (`/mcp__server__prompt`, description).
    pub prompts: Vec<(String, String)>,
}

/// A server's status arrived: remembered for `/mcp`, its prompts offered
/// in the slash popup, said as a notice.
pub fn on_status(app: &mut App, line: McpLine) {
    let McpLine { server, status, tools, error, .. } = &line;
    // A ready server's `error` is what keel left out of its offer.
    let text = match (status.as_str(), error) {
        ("ready", Some(warning)) => {
            format!("mcp: {server} ready ({} tools); {warning}", tools.len())
        }
        ("ready", None) => format!("mcp: {server} ready ({} tools)", tools.len()),
        (_, Some(error)) => format!("mcp: {server} {status}: {error}"),
        (_, None) => format!("mcp: {server} {status}"),
    };
    let level = if status == "ready" && error.is_none() { Level::Info } else { Level::Warning };
    match app.mcp.iter_mut().find(|known| known.server == line.server) {
        Some(known) => *known = line,
        None => app.mcp.push(line),
    }
    app.editor.mcp_prompts = app.mcp.iter().flat_map(|server| server.prompts.clone()).collect();
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
        lines.extend(server.prompts.iter().map(|(command, _)| format!("  {command} (prompt)")));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::runtime::RuntimeEvent;
    use crate::tui::app::{Msg, update};
    use crate::tui::theme::Theme;

    fn notices(app: &App) -> Vec<String> {
        app.transcript
            .cells()
            .iter()
            .filter_map(|cell| match cell.kind() {
                CellKind::Notice { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    fn status(server: &str, status: &str, error: Option<&str>) -> Msg {
        Msg::Runtime(RuntimeEvent::McpServerStatus {
            server: server.into(),
            status: status.into(),
            tools: if status == "ready" {
                vec![format!("mcp__{server}__echo")]
            } else {
                Vec::new()
            },
            error: error.map(str::to_owned),
            log: (status == "failed").then(|| PathBuf::from("/k/logs/mcp/s/bad.log")),
            prompts: if status == "ready" {
                vec![(format!("/mcp__{server}__review"), "review a file".into())]
            } else {
                Vec::new()
            },
        })
    }

    #[test]
    fn statuses_are_said_once_and_listed_by_slash_mcp() {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        update(&mut app, status("good", "ready", None));
        update(&mut app, status("bad", "failed", Some("cannot start the server: no such file")));
        let said = notices(&app);
        assert_eq!(said[0], "mcp: good ready (1 tools)");
        assert_eq!(said[1], "mcp: bad failed: cannot start the server: no such file");
        update(&mut app, status("bad", "ready", None));
        assert_eq!(app.mcp.len(), 2, "a server is one line, updated");
        super::super::slash::run(&mut app, "/mcp");
        let listing = notices(&app).last().cloned().unwrap();
        assert!(
            listing.starts_with(
                "MCP servers:\ngood · ready\n  mcp__good__echo\n  /mcp__good__review (prompt)\n\
                 bad · ready"
            ),
            "{listing}"
        );
    }

    #[test]
    fn a_ready_server_s_prompts_are_offered_in_the_slash_popup() {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        app.editor.insert("/mcp__");
        assert!(app.editor.completions(&[]).is_empty());
        update(&mut app, status("docs", "ready", None));
        update(&mut app, status("bad", "failed", Some("no such file")));
        let offered = app.editor.completions(&[]);
        assert_eq!(offered, [("/mcp__docs__review".to_owned(), "review a file".to_owned())]);
        // A server that crashes takes its prompts with it.
        update(&mut app, status("docs", "crashed", Some("exited")));
        assert!(app.editor.completions(&[]).is_empty());
    }

    #[test]
    fn an_mcp_prompt_command_is_sent_to_the_session() {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        let commands = super::super::slash::run(&mut app, "/mcp__docs__review src/main.rs");
        assert_eq!(commands, vec![Command::Submit("/mcp__docs__review src/main.rs".into())]);
        assert!(app.status.running);
    }
}
