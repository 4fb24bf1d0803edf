//! Background processes in the TUI: the list their tool results describe
//! (`meta.background`), `/ps` showing it in a small overlay, and stopping
//! the selected one from there (sent to the session, which owns them).
//!
//! Invariant: pure, like `update`; the list follows the results (a start
//! adds a running process, `process_output` that saw it end or
//! `process_stop` removes it), so it never claims more than the session
//! said. A stop asked for while a turn runs waits for the turn's end (the
//! session takes one operation at a time).

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::app::{App, Command};
use super::theme::Theme;
use super::transcript::Level;
use crate::display::for_terminal;
use crate::protocol::ToolMeta;

/// One background process as its last result described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLine {
    pub id: u32,
    pub command: String,
    pub pid: Option<u64>,
}

/// The open `/ps` overlay: which row is selected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PsView {
    pub selected: usize,
}

/// A tool result arrived: a `background` one updates the list.
pub fn on_result(app: &mut App, meta: &ToolMeta) {
    let Some(background) = meta.get("background") else { return };
    let Some(id) = background["id"].as_u64().and_then(|id| u32::try_from(id).ok()) else {
        return;
    };
    app.processes.retain(|line| line.id != id);
    if background["status"] == "running" {
        let command = background["command"].as_str().unwrap_or_default().to_owned();
        app.processes.push(ProcessLine { id, command, pid: background["pid"].as_u64() });
        app.processes.sort_by_key(|line| line.id);
    }
    if let Some(ps) = app.ps.as_mut() {
        ps.selected = ps.selected.min(app.processes.len().saturating_sub(1));
    }
}

/// `/ps`: the overlay, or a notice when nothing runs.
pub fn show(app: &mut App) -> Vec<Command> {
    if app.processes.is_empty() {
        app.notice(Level::Info, "no background processes (`shell` with `background: true`)");
    } else {
        app.ps = Some(PsView::default());
    }
    Vec::new()
}

/// A key while the overlay is open: move, stop the selected one, close.
pub fn ps_key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(ps) = app.ps.as_mut() else { return Vec::new() };
    let last = app.processes.len().saturating_sub(1);
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => ps.selected = ps.selected.saturating_sub(1),
        KeyCode::Down | KeyCode::Char('j') => ps.selected = (ps.selected + 1).min(last),
        KeyCode::Char('s') | KeyCode::Delete => {
            let Some(line) = app.processes.get(ps.selected).cloned() else { return Vec::new() };
            app.processes.retain(|known| known.id != line.id);
            app.ps = None;
            app.notice(Level::Info, format!("stopping background process {}", line.id));
            return vec![Command::StopProcess(line.id)];
        }
        KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => app.ps = None,
        _ => {}
    }
    Vec::new()
}

/// Draws the overlay at the bottom of `area` (just above the input).
pub fn draw_ps(frame: &mut Frame<'_>, area: Rect, app: &App, ps: PsView) {
    let theme: Theme = app.theme;
    let width = area.width.saturating_sub(2).max(1);
    let inner_width = usize::from(width.saturating_sub(2).max(1));
    let mut lines: Vec<Line<'static>> = app
        .processes
        .iter()
        .enumerate()
        .map(|(row, line)| {
            let pid = line.pid.map(|pid| format!(" pid {pid}")).unwrap_or_default();
            let lead = format!("{} {}{pid}  ", if row == ps.selected { "›" } else { " " }, line.id);
            let room = inner_width.saturating_sub(lead.chars().count()).max(1);
            let command: String = for_terminal(&line.command).chars().take(room).collect();
            let style = if row == ps.selected { theme.bold() } else { theme.dim() };
            Line::from(vec![Span::styled(lead, style), Span::raw(command)])
        })
        .collect();
    lines.push(Line::default());
    lines.push(Line::from(vec![
        Span::styled("[s] ", theme.key()),
        Span::raw("stop · "),
        Span::styled("↑↓ ", theme.key()),
        Span::raw("select · "),
        Span::styled("Esc ", theme.key()),
        Span::raw("close"),
    ]));
    let wanted = u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_add(2);
    let height = wanted.min(area.height);
    if height < 3 || width < 4 {
        return;
    }
    let rect = Rect { x: area.x + 1, y: area.y + area.height - height, width, height };
    frame.render_widget(Clear, rect);
    let title = format!(" Background processes ({}) ", app.processes.len());
    let block = Block::default().borders(Borders::ALL).title(Span::styled(title, theme.bold()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let skip = lines.len().saturating_sub(usize::from(inner.height));
    frame.render_widget(Paragraph::new(lines[skip..].to_vec()), inner);
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;
    use serde_json::json;

    use super::*;
    use crate::policy::ApprovalMode;
    use crate::protocol::{ToolCall, ToolResult};
    use crate::runtime::RuntimeEvent;
    use crate::tui::app::{Msg, update};

    fn finished(id: u32, status: &str, command: &str) -> Msg {
        let call = ToolCall {
            call_id: format!("c{id}{status}"),
            name: "shell".into(),
            arguments: json!({"command": command, "background": true}).to_string(),
            item_id: None,
            provider_data: None,
        };
        let meta = ToolMeta::new().with(
            "background",
            json!({"id": id, "status": status, "command": command, "pid": 4000 + id}),
        );
        let result = ToolResult::ok(&call.call_id, "started");
        Msg::Runtime(RuntimeEvent::ToolCallFinished { call, result, meta })
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn app_with_two() -> App {
        let mut app = App::new(Theme::default(), ApprovalMode::Auto);
        update(&mut app, finished(1, "running", "python3 -m http.server 8000"));
        update(&mut app, finished(2, "running", "npm run watch"));
        update(&mut app, finished(3, "running", "sleep 100"));
        update(&mut app, finished(3, "stopped", "sleep 100"));
        app
    }

    #[test]
    fn slash_ps_lists_the_running_processes() {
        let mut app = app_with_two();
        super::super::slash::run(&mut app, "/ps");
        assert_eq!(app.ps, Some(PsView { selected: 0 }));
        insta::assert_snapshot!("ps_overlay", super::super::view_tests::render(&app, 60, 14));
    }

    #[test]
    fn the_selected_process_is_stopped_from_the_list() {
        let mut app = app_with_two();
        super::super::slash::run(&mut app, "/ps");
        assert!(super::super::keys::on_key(&mut app, key(KeyCode::Down)).is_empty());
        let commands = super::super::keys::on_key(&mut app, key(KeyCode::Char('s')));
        assert_eq!(commands, vec![Command::StopProcess(2)]);
        assert_eq!(app.ps, None);
        assert_eq!(app.processes.iter().map(|line| line.id).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn with_nothing_running_ps_says_so() {
        let mut app = App::new(Theme::default(), ApprovalMode::Auto);
        super::super::slash::run(&mut app, "/ps");
        assert_eq!(app.ps, None);
    }
}
