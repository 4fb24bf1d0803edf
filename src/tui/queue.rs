//! Typing while a turn runs: Enter queues the text for after the turn, Tab
//! steers the running turn with it (delivered after the current tool
//! batch, before the next model request). The text goes to the session's
//! inbox (`Command::TypeDuringTurn`, `runtime/inbox.rs`), with the images
//! attached on the input box then; `step` records
//! it (`input_queued`) and decides where it lands. The pending list under
//! the transcript shows what waits: first as typed, then with the id the
//! log gave it; a delivered input leaves the list and shows in the
//! transcript where it landed, as a user message.
//!
//! Invariants: the UI never delivers anything itself (a queued input
//! reaches the model only through the session, once); after a turn that
//! ended with recorded inputs still waiting, the UI stays busy (the
//! session task starts the next of them, `tui/bridge.rs`), except after
//! an interrupt, when they wait for the end of the next turn the user
//! starts.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::display::for_terminal;
use crate::protocol::{Delivery, TurnOutcome};

use super::app::{App, Command};
use super::transcript::CellKind;

/// Most rows the pending list takes.
const MAX_ROWS: u16 = 4;

/// One input waiting for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The log's id, once the session recorded it.
    pub id: Option<u64>,
    pub text: String,
    pub mode: Delivery,
}

/// Enter (`Queue`) or Tab (`Steer`) while a turn runs.
pub(super) fn type_during_turn(app: &mut App, mode: Delivery) -> Vec<Command> {
    if app.editor.text().trim().is_empty() {
        return Vec::new();
    }
    let text = app.editor.submit();
    let images = app.attachments.take();
    let with = match images.len() {
        0 => String::new(),
        n => format!(" with {n} image{}", if n == 1 { "" } else { "s" }),
    };
    app.hint = Some(match mode {
        Delivery::Queue => {
            format!("queued{with}: sent when this turn ends (Tab steers the running turn)")
        }
        Delivery::Steer => format!("steering{with}: delivered after the current tool batch"),
    });
    app.pending.push(Pending { id: None, text: text.clone(), mode });
    vec![Command::TypeDuringTurn { text, mode, images }]
}

/// The session recorded an input: the first typed entry with its text
/// gets the id (a resumed session's leftovers are added).
pub(super) fn on_queued(app: &mut App, id: u64, text: String, mode: Delivery) {
    let typed = app.pending.iter_mut().find(|p| p.id.is_none() && p.text == text);
    match typed {
        Some(pending) => pending.id = Some(id),
        None => app.pending.push(Pending { id: Some(id), text, mode }),
    }
}

/// Input `id` reached the model: shown where it landed.
pub(super) fn on_delivered(app: &mut App, id: u64, text: String) {
    app.pending.retain(|pending| pending.id != Some(id));
    app.transcript.push(CellKind::User(text));
}

/// Whether the UI stays busy after a turn ended with `outcome`: recorded
/// inputs wait and the session starts the next one.
pub(super) fn continues_after(app: &App, outcome: TurnOutcome) -> bool {
    outcome != TurnOutcome::Interrupted && app.pending.iter().any(|p| p.id.is_some())
}

/// Rows the pending list needs.
pub(super) fn height(app: &App) -> u16 {
    u16::try_from(app.pending.len()).unwrap_or(u16::MAX).min(MAX_ROWS)
}

/// Draws the pending list, newest last; the ones that do not fit are
/// counted on the first row.
pub(super) fn draw(app: &App, frame: &mut Frame<'_>, area: Rect) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    let theme = app.theme;
    let rows = usize::from(area.height);
    let hidden = app.pending.len().saturating_sub(rows);
    let width = usize::from(area.width);
    let mut lines: Vec<Line<'static>> = Vec::new();
    let shown = if hidden > 0 { rows - 1 } else { rows };
    if hidden > 0 {
        lines.push(Line::styled(format!("  … {} more waiting", hidden + 1), theme.dim()));
    }
    for pending in app.pending.iter().skip(app.pending.len() - shown) {
        let label = match pending.mode {
            Delivery::Queue => "queued",
            Delivery::Steer => "steer ",
        };
        let first = for_terminal(pending.text.lines().next().unwrap_or_default()).into_owned();
        let room = width.saturating_sub(label.len() + 4);
        let mut text: String = first.chars().take(room).collect();
        if first.chars().count() > room || pending.text.contains('\n') {
            text.push('…');
        }
        lines.push(Line::from(vec![
            Span::styled(format!("  {label} "), theme.dim()),
            Span::raw(text),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), area);
}
