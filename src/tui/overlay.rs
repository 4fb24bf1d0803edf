//! The approval overlay: what would run (command, arguments or a diff), why
//! it asks, and one key per choice.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::display::for_terminal;

use super::app::ApprovalView;
use super::diff;
use super::theme::Theme;
use super::wrap::wrap_lines;
use crate::protocol::tool_facts::names;

/// Preview lines shown before the choices; more are summarised.
const MAX_PREVIEW_LINES: usize = 16;

/// Draws the overlay at the bottom of `area` (just above the input).
pub fn draw_approval(frame: &mut Frame<'_>, area: Rect, approval: &ApprovalView, theme: Theme) {
    let width = area.width.saturating_sub(2).max(1);
    let inner_width = width.saturating_sub(2).max(1);
    let lines = wrap_lines(&approval_lines(approval, theme), inner_width);
    let wanted = u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_add(2);
    let height = wanted.min(area.height);
    if height < 3 || width < 4 {
        return;
    }
    let rect = Rect { x: area.x + 1, y: area.y + area.height - height, width, height };
    frame.render_widget(Clear, rect);
    let title = format!(" Allow {}? ", approval.call.name);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.warning())
        .title(Span::styled(title, theme.bold()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    // Keep the choices visible: drop preview rows from the top if short.
    let skip = lines.len().saturating_sub(usize::from(inner.height));
    frame.render_widget(Paragraph::new(lines[skip..].to_vec()), inner);
}

fn approval_lines(approval: &ApprovalView, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    match &approval.preview {
        Some(preview) => {
            let rendered = diff::render(preview, theme);
            let shown = rendered.len().min(MAX_PREVIEW_LINES);
            lines.extend(rendered.into_iter().take(shown));
            if preview.len() > shown {
                lines.push(Line::styled(
                    format!("… {} more lines", preview.len() - shown),
                    theme.dim(),
                ));
            }
        }
        None => {
            let summary = crate::display::call_summary(&approval.call);
            let summary = for_terminal(&summary);
            let mark = if approval.call.name == names::SHELL { "$ " } else { "" };
            for (i, line) in summary.lines().take(MAX_PREVIEW_LINES).enumerate() {
                let lead = if i == 0 { mark } else { "  " };
                lines.push(Line::from(vec![
                    Span::styled(lead.to_owned(), theme.dim()),
                    Span::styled(line.to_owned(), theme.bold()),
                ]));
            }
        }
    }
    lines.push(Line::from(vec![
        Span::styled("reason: ", theme.dim()),
        Span::raw(for_terminal(&approval.reason).into_owned()),
    ]));
    lines.push(Line::default());
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
            let choice = |key: &str, text: String| {
                Line::from(vec![Span::styled(format!("[{key}] "), theme.key()), Span::raw(text)])
            };
            lines.push(choice("y", "yes, once".into()));
            if let Some(prefix) = &approval.prefix {
                lines.push(choice("a", format!("yes, always for {}", prefix.describe())));
            }
            lines.push(choice("n", "no, and tell the model why".into()));
            lines.push(Line::styled("Esc stops the turn", theme.dim()));
        }
    }
    lines
}
