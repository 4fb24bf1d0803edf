//! The screens shown before a session opens: the resume picker (`keel
//! resume` with no id: this folder's sessions, newest first) and the
//! first-run question "trust this project?" for a workspace that brings
//! its own rules, hooks or config. Views and their keys; the driver acts
//! on the [`Command`]s.
//!
//! Invariants: while either screen is open no session runs, so nothing
//! here can race an approval; drawing fits any area (too small: nothing).

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::session::SessionSummary;

use super::app::{App, Command};
use super::theme::Theme;
use super::wrap::wrap_lines;

/// Characters of a first prompt shown in a picker row.
const PROMPT_CHARS: usize = 80;

/// One session in the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PickerRow {
    pub path: PathBuf,
    /// `YYYY-MM-DD HH:MM` (UTC, as logged).
    pub started: String,
    pub status: String,
    pub first_prompt: String,
}

/// The resume picker.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PickerView {
    pub rows: Vec<PickerRow>,
    pub selected: usize,
    /// Opened with `/resume` over a live session: Esc returns to it
    /// (otherwise, before any session, Esc quits).
    pub over_session: bool,
}

impl PickerView {
    pub fn from_sessions(sessions: &[SessionSummary]) -> Self {
        let rows = sessions
            .iter()
            .map(|session| PickerRow {
                path: session.path.clone(),
                started: session.started.get(..16).unwrap_or(&session.started).replace('T', " "),
                status: session.status.clone(),
                first_prompt: crate::display::for_terminal(
                    session.first_prompt.as_deref().unwrap_or("(no prompt)"),
                )
                .replace('\n', " ")
                .chars()
                .take(PROMPT_CHARS)
                .collect(),
            })
            .collect();
        Self { rows, selected: 0, over_session: false }
    }
}

/// "Trust this project?": the workspace and what it brings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustView {
    pub root: String,
    /// What the project supplies (".keel/rules/", "hooks", …).
    pub found: Vec<String>,
}

pub fn picker_key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(picker) = app.picker.as_mut() else { return Vec::new() };
    match key.code {
        KeyCode::Up => picker.selected = picker.selected.saturating_sub(1),
        KeyCode::Down => {
            picker.selected = (picker.selected + 1).min(picker.rows.len().saturating_sub(1));
        }
        KeyCode::Enter => {
            let path = picker.rows.get(picker.selected).map(|row| row.path.clone());
            app.picker = None;
            return vec![Command::OpenSession(path)];
        }
        KeyCode::Char('n') => {
            app.picker = None;
            return vec![Command::OpenSession(None)];
        }
        KeyCode::Esc | KeyCode::Char('q') if picker.over_session => app.picker = None,
        KeyCode::Esc | KeyCode::Char('q') => return vec![Command::Quit],
        _ => {}
    }
    Vec::new()
}

pub fn trust_key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let answer = match key.code {
        KeyCode::Char('y' | 'Y') => true,
        KeyCode::Char('n' | 'N') | KeyCode::Esc => false,
        _ => return Vec::new(),
    };
    app.trust = None;
    vec![Command::Trust(answer)]
}

/// Draws the picker over all of `area`.
pub fn draw_picker(frame: &mut Frame<'_>, area: Rect, picker: &PickerView, theme: Theme) {
    if area.width < 8 || area.height < 4 {
        return;
    }
    frame.render_widget(Clear, area);
    let title = format!(" Resume a session ({} in this folder) ", picker.rows.len());
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border())
        .title(Span::styled(title, theme.bold()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let keys = if picker.over_session {
        "Enter open · ↑↓ choose · n new session · Esc back to this session"
    } else {
        "Enter open · ↑↓ choose · n new session · Esc quit"
    };
    let footer = wrap_lines(&[Line::styled(keys, theme.dim())], inner.width);
    let footer_rows = u16::try_from(footer.len()).unwrap_or(u16::MAX).min(inner.height);
    let list = Rect { height: inner.height - footer_rows, ..inner };
    let rows = usize::from(list.height).max(1);
    let first = (picker.selected + 1).saturating_sub(rows);
    let lines: Vec<Line<'static>> = if picker.rows.is_empty() {
        vec![Line::styled("no sessions were started in this folder; n starts one", theme.dim())]
    } else {
        picker
            .rows
            .iter()
            .enumerate()
            .skip(first)
            .take(rows)
            .map(|(i, row)| picker_line(row, i == picker.selected, theme))
            .collect()
    };
    frame.render_widget(Paragraph::new(lines), list);
    let footer_area = Rect { y: list.y + list.height, height: footer_rows, ..inner };
    frame.render_widget(Paragraph::new(footer), footer_area);
}

fn picker_line(row: &PickerRow, selected: bool, theme: Theme) -> Line<'static> {
    let (style, mark) = if selected { (theme.selected(), "› ") } else { (theme.plain(), "  ") };
    Line::from(vec![
        Span::styled(format!("{mark}{}  ", row.started), style),
        Span::styled(format!("{:<12} ", row.status), style.patch(theme.dim())),
        Span::styled(row.first_prompt.clone(), style),
    ])
}

/// Draws the trust question centred in `area`, as tall as its text.
pub fn draw_trust(frame: &mut Frame<'_>, area: Rect, trust: &TrustView, theme: Theme) {
    let width = (area.width.saturating_mul(4) / 5).max(area.width.min(40));
    if width < 8 || area.height < 3 {
        return;
    }
    let lines = vec![
        Line::from(vec![Span::styled(trust.root.clone(), theme.bold())]),
        Line::raw(format!("brings its own {}.", trust.found.join(", "))),
        Line::default(),
        Line::raw(
            "Trusting it lets its rules' allows, its config and its hooks apply \
             (the same as `keel trust`). Its deny and prompt rules apply either way.",
        ),
        Line::default(),
        Line::from(vec![
            Span::styled("[y]", theme.key()),
            Span::raw(" trust it  "),
            Span::styled("[n]", theme.key()),
            Span::raw(" not now (asked again next time)"),
        ]),
    ];
    let wrapped = wrap_lines(&lines, width.saturating_sub(2).max(1));
    let height =
        u16::try_from(wrapped.len()).unwrap_or(u16::MAX).saturating_add(2).min(area.height);
    let rect = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    };
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.warning())
        .title(Span::styled(" Trust this project? ", theme.bold()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    // Keep the keys visible: drop text from the top when short.
    let skip = wrapped.len().saturating_sub(usize::from(inner.height));
    frame.render_widget(Paragraph::new(wrapped[skip..].to_vec()), inner);
}
