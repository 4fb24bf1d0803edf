//! The `ask_user` dialog: the model's question, its choices numbered, and
//! a line for an answer in the user's own words. Keys: ↑/↓ move the
//! highlight, `1`–`9` pick a choice, typing writes an own answer (which
//! then wins), Enter answers (the own words, else the highlighted choice),
//! Esc dismisses (the model reads that no one answered). The answer goes
//! back over the session's oneshot (`Command::AnswerQuestion`).
//!
//! Invariants: the dialog answers once and closes; the question and the
//! choices are the model's words, drawn through `for_terminal`.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use crate::display::for_terminal;

use super::app::{App, Command};
use super::theme::Theme;

/// The open question.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuestionView {
    pub question: String,
    pub choices: Vec<String>,
    /// The highlighted choice.
    pub selected: usize,
    /// The answer typed in the user's own words.
    pub typed: String,
}

impl QuestionView {
    pub fn new(question: String, choices: Vec<String>) -> Self {
        Self { question, choices, ..Self::default() }
    }

    /// What Enter answers.
    fn answer(&self) -> Option<String> {
        if !self.typed.trim().is_empty() {
            return Some(self.typed.clone());
        }
        self.choices.get(self.selected).cloned()
    }
}

pub(super) fn key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(view) = app.question.as_mut() else { return Vec::new() };
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Esc => return answer(app, None),
        KeyCode::Char('c') if ctrl => return vec![Command::Interrupt],
        KeyCode::Enter => {
            let chosen = view.answer();
            if chosen.is_some() {
                return answer(app, chosen);
            }
        }
        KeyCode::Up => view.selected = view.selected.saturating_sub(1),
        KeyCode::Down => {
            view.selected = (view.selected + 1).min(view.choices.len().saturating_sub(1));
        }
        KeyCode::Backspace => {
            view.typed.pop();
        }
        KeyCode::Char(c) if !ctrl && view.typed.is_empty() && c.is_ascii_digit() => {
            let picked = c.to_digit(10).and_then(|n| usize::try_from(n).ok());
            match picked.and_then(|n| n.checked_sub(1)).and_then(|i| view.choices.get(i)) {
                Some(choice) => {
                    let choice = choice.clone();
                    return answer(app, Some(choice));
                }
                None => view.typed.push(c),
            }
        }
        KeyCode::Char(c) if !ctrl => view.typed.push(c),
        _ => {}
    }
    Vec::new()
}

fn answer(app: &mut App, answer: Option<String>) -> Vec<Command> {
    app.question = None;
    app.status.activity = "thinking".into();
    vec![Command::AnswerQuestion(answer)]
}

/// Draws the dialog at the bottom of `area`.
pub(super) fn draw(frame: &mut Frame<'_>, area: Rect, view: &QuestionView, theme: Theme) {
    let width = area.width.saturating_sub(2);
    if width < 8 || area.height < 5 {
        return;
    }
    let mut lines = vec![Line::styled(for_terminal(&view.question).into_owned(), theme.bold())];
    lines.push(Line::raw(""));
    for (n, choice) in view.choices.iter().enumerate() {
        let marker = if n == view.selected && view.typed.is_empty() { "›" } else { " " };
        let text = format!("{marker} {}. {}", n + 1, for_terminal(choice));
        let style = if marker == "›" { theme.bold() } else { theme.plain() };
        lines.push(Line::styled(text, style));
    }
    let own = if view.choices.is_empty() { "answer: " } else { "or type an answer: " };
    lines.push(Line::from(vec![
        Span::styled(own, theme.dim()),
        Span::raw(for_terminal(&view.typed).into_owned()),
    ]));
    let keys = if view.choices.is_empty() {
        "Enter answer · Esc don't answer"
    } else {
        "1-9 or ↑/↓ Enter choose · Esc don't answer"
    };
    lines.push(Line::styled(keys, theme.dim()));
    let wanted = u16::try_from(lines.len() + 2).unwrap_or(u16::MAX);
    let height = wanted.min(area.height);
    let rect = Rect { x: area.x + 1, y: area.y + area.height - height, width, height };
    frame.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.warning())
        .title(Span::styled(" The model asks ", theme.bold()));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), rect);
}
