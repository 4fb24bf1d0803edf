//! The TUI's side of the spend limits: the status line part
//! (`$0.42/$1.00`, `tok 12k/50k`, in the warning colour from 80 %), the
//! one-time notice at 80 %, and the question at 100 %: the runtime asks
//! through the approver (`Approver::raise_limit`) whether to raise the
//! limit; `y` raises each crossed limit to what `BudgetHit::raised` says
//! (at least double), `n` or Esc ends the turn `budget_exceeded`.
//!
//! Invariant: the raise shown and the raise the session records are the
//! same pure function of the same `BudgetHit`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use crate::agent::{BudgetHit, LimitKind, SpendStatus, Spent, usd};

use super::app::{App, ApprovalReply, Command, Status};
use super::theme::Theme;
use super::transcript::Level;
use super::wrap::wrap_lines;

/// Share of a limit at which the status line turns and the notice shows.
const WARN_SHARE: f64 = 0.8;

fn spend(status: &Status) -> SpendStatus {
    // Subagents' spend is the session's too (each at its model's prices).
    // No cost is shown while the model in use has no prices (as before
    // any switch), nor once one without prices served a response.
    let known = !status.unpriced && status.pricing.is_priced();
    let spent = Spent {
        usd: known.then_some(status.spent_usd + status.subagent_cost),
        tokens: status.usage.total_tokens() + status.subagent_usage.total_tokens(),
    };
    SpendStatus::new(status.limits, spent)
}

/// The status line's cost and token-limit parts: `(keep, span)` as
/// `view::status_line` ranks them (cost at 3; a limit outranks context).
pub(super) fn status_parts(status: &Status, theme: Theme) -> Vec<(u8, Span<'static>)> {
    let spend = spend(status);
    let style = if spend.used_share().is_some_and(|share| share >= WARN_SHARE) {
        theme.warning()
    } else {
        ratatui::style::Style::default()
    };
    let mut parts = Vec::new();
    match (spend.spent_usd, status.limits.max_cost_usd) {
        (Some(cost), Some(max)) => {
            parts.push((5, Span::styled(format!("{}/{}", usd(cost), usd(max)), style)))
        }
        (Some(cost), None) => parts.push((3, Span::raw(format!("${cost:.4}")))),
        (None, _) => {}
    }
    if let Some(max) = status.limits.max_tokens {
        let text = format!("tok {}/{}", short(spend.spent_tokens), short(max));
        parts.push((5, Span::styled(text, style)));
    }
    parts
}

/// `950`, `12.3k`, `2.0M`.
fn short(tokens: u64) -> String {
    match tokens {
        0..1_000 => tokens.to_string(),
        1_000..1_000_000 => format!("{:.1}k", tokens as f64 / 1_000.0),
        _ => format!("{:.1}M", tokens as f64 / 1_000_000.0),
    }
}

/// After new usage: the one-time notice once 80 % of a limit is spent.
pub(super) fn after_usage(app: &mut App) {
    let spend = spend(&app.status);
    let Some(share) = spend.used_share() else { return };
    if share < WARN_SHARE || app.status.budget_warned {
        return;
    }
    app.status.budget_warned = true;
    let mut used = Vec::new();
    if let (Some(max), Some(cost)) = (spend.limits.max_cost_usd, spend.spent_usd) {
        used.push(format!("{} of {}", usd(cost), usd(max)));
    }
    if let Some(max) = spend.limits.max_tokens {
        used.push(format!("{} of {} tokens", spend.spent_tokens, max));
    }
    app.notice(
        Level::Warning,
        format!(
            "{:.0}% of this session's limit spent ({}); keel asks before a request would cross it",
            share * 100.0,
            used.join(", ")
        ),
    );
}

/// Keys while the question is open.
pub(super) fn limit_key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(hit) = app.limit else { return Vec::new() };
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let reply = match (key.code, ctrl) {
        (KeyCode::Char('y'), false) => {
            app.status.limits = hit.raised();
            // Warn again at 80 % of the raised limit.
            app.status.budget_warned = false;
            app.status.activity = "thinking".into();
            ApprovalReply::Once
        }
        (KeyCode::Char('n'), false) | (KeyCode::Esc, _) | (KeyCode::Char('c'), true) => {
            ApprovalReply::Deny(None)
        }
        _ => return Vec::new(),
    };
    app.limit = None;
    vec![Command::Answer(reply)]
}

/// Draws the question at the bottom of `area` (above the input).
pub(super) fn draw_limit(frame: &mut Frame<'_>, area: Rect, hit: &BudgetHit, theme: Theme) {
    let width = area.width.saturating_sub(2).max(1);
    let lines = wrap_lines(&question(hit, theme), width.saturating_sub(2).max(1));
    let height = u16::try_from(lines.len()).unwrap_or(u16::MAX).saturating_add(2).min(area.height);
    if height < 3 || width < 4 {
        return;
    }
    let rect = Rect { x: area.x + 1, y: area.y + area.height - height, width, height };
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.warning())
        .title(Span::styled(" Spend limit reached ", theme.bold()));
    let inner = block.inner(rect);
    frame.render_widget(block, rect);
    let skip = lines.len().saturating_sub(usize::from(inner.height));
    frame.render_widget(Paragraph::new(lines[skip..].to_vec()), inner);
}

fn question(hit: &BudgetHit, theme: Theme) -> Vec<Line<'static>> {
    let (what, raise) = match hit.limit {
        LimitKind::Cost => {
            let spent = hit.spent_usd.map_or_else(|| "?".to_owned(), usd);
            let next = hit.next_usd.map_or_else(|| "?".to_owned(), usd);
            let limit = hit.limits.max_cost_usd.unwrap_or_default();
            let raised = hit.raised().max_cost_usd.unwrap_or_default();
            (
                format!(
                    "{spent} of {} spent; the next request would cost about {next}.",
                    usd(limit)
                ),
                format!("yes, raise the limit to {}", usd(raised)),
            )
        }
        LimitKind::Tokens => {
            let limit = hit.limits.max_tokens.unwrap_or_default();
            let raised = hit.raised().max_tokens.unwrap_or_default();
            (
                format!(
                    "{} of {limit} tokens used; the next request would use about {}.",
                    hit.spent_tokens, hit.next_tokens
                ),
                format!("yes, raise the limit to {raised} tokens"),
            )
        }
    };
    let choice = |key: &str, text: String| {
        Line::from(vec![Span::styled(format!("[{key}] "), theme.key()), Span::raw(text)])
    };
    vec![
        Line::raw(what),
        Line::styled("The request was not sent.", theme.dim()),
        Line::default(),
        choice("y", raise),
        choice("n", "no, end the turn here".to_owned()),
    ]
}
