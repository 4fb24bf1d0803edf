//! `view(&App, &mut Frame)`: lays out the transcript, tasks panel, input,
//! status line and overlays. Pure drawing: reads the model, changes nothing
//! but render caches.
//!
//! Invariant: any area, down to 0×0, draws without panicking; parts that
//! do not fit are left out (status first kept, then input, transcript).

use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::{Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::runtime::SandboxState;

use super::app::App;
use super::panels;
use super::theme::Theme;
use super::transcript::spinner;

/// Most rows the input grows to before it scrolls.
const MAX_INPUT_ROWS: u16 = 8;

/// Draws the whole UI.
pub fn view(app: &App, frame: &mut Frame<'_>) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let status = Rect { y: area.bottom() - 1, height: 1, ..area };
    frame.render_widget(Paragraph::new(status_line(app, area.width)), status);
    let rest = Rect { height: area.height - 1, ..area };
    let input_rows = input_height(app, rest.width).min(rest.height);
    let input = Rect { y: rest.bottom() - input_rows, height: input_rows, ..rest };
    draw_input(app, frame, input);
    let mut above = Rect { height: rest.height - input_rows, ..rest };
    let pending = super::queue::height(app).min(above.height / 2);
    if pending > 0 {
        let list = Rect { y: above.bottom() - pending, height: pending, ..above };
        super::queue::draw(app, frame, list);
        above.height -= pending;
    }
    if app.show_tasks && !app.tasks.is_empty() {
        let rows = panels::tasks_height(&app.tasks).min(above.height / 2);
        let tasks = Rect { y: above.bottom() - rows, height: rows, ..above };
        panels::draw_tasks(frame, tasks, &app.tasks, app.theme);
        above.height -= rows;
    }
    draw_transcript(app, frame, above);
    draw_popup(app, frame, above);
    if let Some(approval) = &app.approval {
        super::overlay::draw_approval(frame, above, approval, app.theme);
    }
    if let Some(question) = &app.question {
        super::question::draw(frame, above, question, app.theme);
    }
    if let (Some(ps), None) = (app.ps, &app.approval) {
        super::processes_view::draw_ps(frame, above, app, ps);
    }
    if let (Some(rewind), None) = (&app.rewind.view, &app.approval) {
        super::rewind_view::draw(frame, above, rewind, app.theme);
    }
    if let Some(pick) = &app.memory {
        super::memory_note::draw(frame, above, pick, app.theme);
    }
    if let Some(hit) = &app.limit {
        super::budget::draw_limit(frame, above, hit, app.theme);
    }
    if let Some(plan) = &app.plan {
        panels::draw_plan(frame, area, plan, app.theme);
    }
    if let Some(picker) = &app.picker {
        super::picker::draw_picker(frame, rest, picker, app.theme);
    }
    if let Some(trust) = &app.trust {
        super::picker::draw_trust(frame, rest, trust, app.theme);
    }
}

fn draw_transcript(app: &App, frame: &mut Frame<'_>, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let rows = usize::from(area.height);
    // Following the bottom (the usual case) touches only the visible cells,
    // so a resize re-wraps a screenful, not the whole transcript.
    let from_bottom = if app.scroll == 0 {
        0
    } else {
        let total = app.transcript.height(area.width, app.expanded, app.theme);
        app.transcript_rows.set(total.saturating_sub(rows));
        app.scroll.min(total.saturating_sub(rows))
    };
    let lines = app.transcript.window(area.width, rows, from_bottom, app.expanded, app.theme);
    frame.render_widget(Paragraph::new(lines), area);
}

/// Rows of the input box: its text (wrapped) plus borders.
fn input_height(app: &App, width: u16) -> u16 {
    let rows = input_rows(app.editor.text(), width.saturating_sub(2)).len();
    u16::try_from(rows).unwrap_or(u16::MAX).clamp(1, MAX_INPUT_ROWS) + 2
}

/// The input text cut into rows of `width` chars: (line index, start char).
fn input_rows(text: &str, width: u16) -> Vec<(usize, usize)> {
    let width = usize::from(width.max(1));
    let mut rows = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        let chars = line.chars().count();
        let mut start = 0;
        loop {
            rows.push((n, start));
            start += width;
            if start >= chars.max(1) {
                break;
            }
        }
    }
    rows
}

fn draw_input(app: &App, frame: &mut Frame<'_>, area: Rect) {
    if area.height < 3 || area.width < 3 {
        return;
    }
    let theme = app.theme;
    let mut block = Block::default().borders(Borders::ALL).border_style(theme.border());
    if let Some(search) = &app.search {
        block = block.title(Span::styled(format!(" {} ", search.title()), theme.key()));
    } else if let Some(hint) = &app.hint {
        block = block.title(Span::styled(format!(" {hint} "), theme.warning()));
    } else if !app.attachments.is_empty() {
        block = block.title(Span::styled(format!(" {} ", app.attachments.chips()), theme.dim()));
    }
    if let Some(keys) = key_hints(app, area.width) {
        block = block.title_bottom(Line::styled(format!(" {keys} "), theme.dim()).right_aligned());
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let width = usize::from(inner.width.max(1));
    let text = app.editor.text();
    let lines: Vec<&str> = text.split('\n').collect();
    let rows = input_rows(text, inner.width);
    let (line, col) = app.editor.cursor_line_col();
    let cursor_row = rows.iter().rposition(|&(n, start)| n == line && start <= col).unwrap_or(0);
    let visible = usize::from(inner.height);
    let first = (cursor_row + 1).saturating_sub(visible);
    let shown: Vec<Line<'static>> = rows
        .iter()
        .skip(first)
        .take(visible)
        .map(|&(n, start)| {
            let piece: String =
                lines.get(n).unwrap_or(&"").chars().skip(start).take(width).collect();
            Line::raw(piece)
        })
        .collect();
    if text.is_empty() {
        let placeholder =
            if app.status.running { "Esc to stop" } else { "Ask keel, or / for commands" };
        frame.render_widget(Paragraph::new(Line::styled(placeholder, theme.dim())), inner);
    } else {
        frame.render_widget(Paragraph::new(shown), inner);
    }
    let start = rows.get(cursor_row).map_or(0, |r| r.1);
    let x = inner.x + u16::try_from(col - start).unwrap_or(0).min(inner.width.saturating_sub(1));
    let y = inner.y + u16::try_from(cursor_row - first).unwrap_or(0);
    let covered = app.approval.is_some()
        || app.plan.is_some()
        || app.limit.is_some()
        || app.question.is_some();
    if !covered && app.picker.is_none() && app.trust.is_none() {
        frame.set_cursor_position(Position { x, y });
    }
}

/// The footer on the input's bottom border: the keys that matter now,
/// the short form when the long one does not fit, nothing when neither.
fn key_hints(app: &App, width: u16) -> Option<&'static str> {
    let (long, short) = if app.yolo_confirm {
        ("y yolo · Shift+Tab skip", "y yolo")
    } else if app.limit.is_some() {
        ("y raise the limit · n end the turn", "y raise · n stop")
    } else if app.status.running {
        ("Enter queue · Tab steer · Esc stop · Ctrl+O expand", "Esc stop")
    } else {
        ("Enter send · Shift+Tab mode · / commands · ? shortcuts", "? shortcuts")
    };
    let room = usize::from(width).saturating_sub(6);
    [long, short].into_iter().find(|keys| keys.chars().count() <= room)
}

fn draw_popup(app: &App, frame: &mut Frame<'_>, above: Rect) {
    let choices = app.editor.completions(&app.files);
    if choices.is_empty() || above.height < 3 || above.width < 8 {
        return;
    }
    let rows = u16::try_from(choices.len()).unwrap_or(u16::MAX).saturating_add(2).min(above.height);
    let widest = choices.iter().map(|(label, about)| label.len() + about.len() + 4).max();
    let width = above.width.min(u16::try_from(widest.unwrap_or(0)).unwrap_or(u16::MAX).max(60));
    let rect = Rect { x: above.x, y: above.bottom() - rows, width, height: rows };
    frame.render_widget(Clear, rect);
    let theme = app.theme;
    let selected = app.editor.popup_selected.min(choices.len() - 1);
    let lines: Vec<Line<'static>> = choices
        .iter()
        .enumerate()
        .map(|(i, (name, about))| {
            let (style, mark) =
                if i == selected { (theme.selected(), "›") } else { (theme.plain(), " ") };
            Line::from(vec![
                Span::styled(format!("{mark}{name:<10}"), style.patch(theme.key())),
                Span::styled(format!(" {about}"), style),
            ])
        })
        .collect();
    let block = Block::default().borders(Borders::ALL).border_style(theme.border());
    frame.render_widget(Paragraph::new(lines).block(block), rect);
}

/// `model · mode · phase · ctx · tokens · cost · cache hit rate · sandbox ·
/// spinner` (cost as `$spent/$limit` with a `--max-cost`, plus `tok
/// spent/limit` with a `--max-tokens`). On a narrow terminal whole parts
/// are dropped, least telling first (tokens, cache, a working sandbox,
/// cost, context, phase; a spend limit stays as long as the phase), then
/// the rest is cut.
pub fn status_line(app: &App, width: u16) -> Line<'static> {
    let theme: Theme = app.theme;
    let status = &app.status;
    let model =
        if status.model.is_empty() { "starting…".to_owned() } else { status.model.clone() };
    // (how long it is kept when space is short: higher stays longer, part)
    let mut parts: Vec<(u8, Span<'static>)> = vec![
        (9, Span::styled(model, theme.bold())),
        (8, Span::styled(status.mode.as_str().to_owned(), mode_style(app))),
    ];
    if !status.phase.is_empty() {
        parts.push((5, Span::styled(status.phase.clone(), theme.key())));
    }
    let context =
        status.context_percent.map_or_else(|| "ctx –".to_owned(), |p| format!("ctx {p}%"));
    parts.push((4, Span::raw(context)));
    // Subagents' spend is part of the session's.
    let mut spent = status.usage;
    spent.add(&status.subagent_usage);
    let tokens = format!("↑{} ↓{}", spent.input_tokens, spent.output_tokens);
    parts.push((1, Span::raw(tokens)));
    parts.extend(super::budget::status_parts(status, theme));
    // How much of the session's input the provider's prompt cache served,
    // once the provider reports caching at all.
    let caches = status.usage.cached_input_tokens + status.usage.cache_write_tokens > 0;
    if let Some(rate) = status.usage.cache_hit_rate().filter(|_| caches) {
        parts.push((1, Span::raw(format!("cache {:.0}%", rate * 100.0))));
    }
    if let Some(sandbox) = status.sandbox {
        let (keep, style) = match sandbox {
            SandboxState::On => (2, theme.ok()),
            SandboxState::Off | SandboxState::Unavailable => (6, theme.error()),
        };
        parts.push((keep, Span::styled(format!("sandbox {}", sandbox.as_str()), style)));
    }
    if status.running {
        let activity =
            format!("{} {} {}", spinner(status.elapsed), status.activity, elapsed(status.elapsed));
        parts.push((7, Span::styled(activity, theme.key())));
    }
    let width_of = |parts: &[(u8, Span<'static>)]| {
        parts.iter().map(|(_, span)| span.width() + 3).sum::<usize>()
    };
    while width_of(&parts) > usize::from(width) {
        let Some(least) = parts
            .iter()
            .enumerate()
            .filter(|(_, (keep, _))| *keep < 7)
            .min_by_key(|(_, (keep, _))| *keep)
            .map(|(i, _)| i)
        else {
            break;
        };
        parts.remove(least);
    }
    let mut spans = vec![Span::raw(" ")];
    for (i, (_, span)) in parts.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled(" · ", theme.dim()));
        }
        spans.push(span);
    }
    let mut line = Line::from(spans);
    // Cut from the right what still does not fit.
    let mut budget = usize::from(width);
    line.spans.retain_mut(|span| {
        let w = span.width();
        if w <= budget {
            budget -= w;
            true
        } else {
            let cut: String = span.content.chars().take(budget).collect();
            budget = 0;
            span.content = cut.into();
            !span.content.is_empty()
        }
    });
    line
}

fn mode_style(app: &App) -> ratatui::style::Style {
    match app.status.mode {
        crate::policy::ApprovalMode::Ask
        | crate::policy::ApprovalMode::Plan
        | crate::policy::ApprovalMode::Explore => app.theme.ok(),
        crate::policy::ApprovalMode::Auto => app.theme.warning(),
        crate::policy::ApprovalMode::Yolo => app.theme.error(),
    }
}

fn elapsed(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    if secs < 60 { format!("{secs}s") } else { format!("{}m{:02}s", secs / 60, secs % 60) }
}

/// A rectangle `percent_x` × `percent_y` of `area`, centred.
pub fn centered(area: Rect, percent_x: u16, percent_y: u16) -> Rect {
    let scale = |length: u16, percent: u16| {
        u16::try_from(u32::from(length) * u32::from(percent.min(100)) / 100).unwrap_or(length)
    };
    let width = scale(area.width, percent_x);
    let height = scale(area.height, percent_y);
    Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + (area.height - height) / 2,
        width,
        height,
    }
}
