//! The approval overlay: what would run (the command and every other
//! argument, an MCP call's arguments, or a diff), why it asks, and one key
//! per choice.
//!
//! Invariant: an approval covers only what the user could read. The body
//! is never cut: it shows at most [`MAX_BODY_ROWS`] rows at a time (fewer
//! on a short terminal), says how many rows are above and below and how
//! to scroll, and each frame records in [`ApprovalView::drawn`] how far
//! down the body has been shown; `keys.rs` turns `y`/`a` into "show the
//! next page" until the last row has been on screen. Text from the call
//! is shown through [`escape_visibly`]: controls, ANSI escapes and bidi
//! overrides appear as `\u{…}`, never reach the terminal. Each choice
//! shows keel's letter and Claude Code's number (`[1/y]`); the highlighted
//! one (Enter answers it) is marked `›` (`approval_keys.rs`).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::display::{approval_text, escape_visibly, for_terminal};

use super::app::{ApprovalView, BodyDrawn, Choice};
use super::diff::{self, DiffLine};
use super::theme::Theme;
use super::wrap::wrap_lines;
use crate::protocol::tool_facts::names;

/// Body rows shown at once; more scroll.
pub const MAX_BODY_ROWS: usize = 16;

/// Draws the overlay at the bottom of `area` (just above the input).
pub fn draw_approval(frame: &mut Frame<'_>, area: Rect, approval: &ApprovalView, theme: Theme) {
    let width = area.width.saturating_sub(2).max(1);
    let inner_width = width.saturating_sub(2).max(1);
    let body = wrap_lines(&body_lines(approval, theme), inner_width);
    let room = usize::from(area.height.saturating_sub(2));
    let mut footer = wrap_lines(&footer_lines(approval, theme), inner_width);
    if room < footer.len() + 2 && approval.note.is_none() {
        // A short terminal: the choices on one row, so that the body
        // still gets rows (the reason is not what is approved).
        footer = wrap_lines(&[compact_choices(approval, theme)], inner_width);
    }
    let scrolls = body.len() > MAX_BODY_ROWS.min(room.saturating_sub(footer.len()));
    // One row says what is hidden whenever the body does not fit.
    let page = MAX_BODY_ROWS.min(room.saturating_sub(footer.len() + usize::from(scrolls)));
    let scroll = approval.scroll.min(body.len().saturating_sub(page));
    let end = (scroll + page).min(body.len());
    let mut lines: Vec<Line<'static>> = body[scroll..end].to_vec();
    if scrolls {
        lines.push(scroll_line(scroll, end, body.len(), theme));
    }
    lines.extend(footer);
    let wanted = u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_add(2);
    let height = wanted.min(area.height);
    if height < 3 || width < 4 {
        return;
    }
    record(approval, body.len(), page, end);
    let rect = Rect { x: area.x + 1, y: area.y + area.height - height, width, height };
    frame.render_widget(Clear, rect);
    let title = format!(" Allow {}? ", for_terminal(&escape_visibly(&approval.call.name)));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.warning())
        .title(Span::styled(title, theme.bold()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    // Keep the choices visible: drop rows from the top if still short.
    let skip = lines.len().saturating_sub(usize::from(inner.height));
    frame.render_widget(Paragraph::new(lines[skip..].to_vec()), inner);
}

/// Notes what this frame shows of the body (see the module doc). A body
/// of another height (the width changed) starts over: rows seen at
/// another width are not these rows.
fn record(approval: &ApprovalView, rows: usize, page: usize, end: usize) {
    let before = approval.drawn.get();
    let seen_before = if before.rows == rows { before.seen_to } else { 0 };
    let seen_to = if page == 0 { seen_before } else { seen_before.max(end) };
    approval.drawn.set(BodyDrawn { rows, page, seen_to });
}

/// Where the body stands and how to see the rest.
fn scroll_line(scroll: usize, end: usize, rows: usize, theme: Theme) -> Line<'static> {
    let text = if end == scroll {
        format!("{rows} rows of what would run are hidden: make the terminal taller to see them")
    } else if end < rows {
        format!(
            "rows {}–{end} of {rows}; {} more below: ↓/PgDn to read on (y and a show them first)",
            scroll + 1,
            rows - end
        )
    } else {
        format!("rows {}–{end} of {rows}; ↑/PgUp to read again", scroll + 1)
    };
    Line::styled(text, theme.warning())
}

/// The command, arguments or diff the answer is about, in full.
fn body_lines(approval: &ApprovalView, theme: Theme) -> Vec<Line<'static>> {
    if let Some(preview) = &approval.preview {
        let shown: Vec<DiffLine> = preview
            .iter()
            .map(|line| DiffLine { text: escape_visibly(&line.text).into_owned(), ..line.clone() })
            .collect();
        return diff::render(&shown, theme);
    }
    let text = approval_text(&approval.call);
    let shell = approval.call.name == names::SHELL;
    text.split('\n')
        .map(|line| match line.strip_prefix("$ ").filter(|_| shell) {
            Some(command) => Line::from(vec![
                Span::styled("$ ", theme.dim()),
                Span::styled(command.to_owned(), theme.bold()),
            ]),
            None => Line::styled(line.to_owned(), theme.bold()),
        })
        .collect()
}

/// The choices on one row.
fn compact_choices(approval: &ApprovalView, theme: Theme) -> Line<'static> {
    let mut spans = Vec::new();
    for choice in approval.choices() {
        let (letter, number) = choice.keys();
        let word = match choice {
            Choice::Yes => "yes ",
            Choice::Always => "always ",
            Choice::No => "no ",
        };
        let style = if choice == approval.highlighted() { theme.selected() } else { theme.plain() };
        spans.push(Span::styled(format!("[{number}/{letter}] "), theme.key().patch(style)));
        spans.push(Span::styled(word, style));
    }
    spans.push(Span::raw("· Esc stops"));
    Line::from(spans)
}

/// Why it asks and the choices.
fn footer_lines(approval: &ApprovalView, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = vec![
        Line::from(vec![
            Span::styled("reason: ", theme.dim()),
            Span::raw(escape_visibly(&approval.reason).into_owned()),
        ]),
        Line::default(),
    ];
    match &approval.note {
        Some(note) => {
            lines.push(Line::from(vec![
                Span::styled("note for the model: ", theme.bold()),
                Span::raw(note.clone()),
                Span::styled("▏", theme.dim()),
            ]));
            lines.push(Line::styled("Enter decline with this note · Esc back", theme.dim()));
        }
        None => {
            for choice in approval.choices() {
                let text = match (choice, &approval.prefix) {
                    (Choice::Yes, _) => "yes, once".to_owned(),
                    (Choice::Always, Some(prefix)) => {
                        format!("yes, always for {}", escape_visibly(&prefix.describe()))
                    }
                    (Choice::Always, None) => continue,
                    (Choice::No, _) => "no, and tell the model why".to_owned(),
                };
                let (letter, number) = choice.keys();
                let (mark, style) = if choice == approval.highlighted() {
                    ("› ", theme.selected())
                } else {
                    ("  ", theme.plain())
                };
                lines.push(Line::from(vec![
                    Span::styled(format!("{mark}[{number}/{letter}] "), theme.key().patch(style)),
                    Span::styled(text, style),
                ]));
            }
            lines.push(Line::styled(
                "←/→ choose · Enter answers it · Esc stops the turn",
                theme.dim(),
            ));
        }
    }
    lines
}
