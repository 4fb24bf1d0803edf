//! Ctrl+R: reverse incremental search over the prompt history (this run's
//! and, through `history.rs`, this folder's earlier runs).
//!
//! While a search is open the input shows the newest prompt containing
//! the query (case-insensitive) and its title says `reverse search`.
//! Typing narrows, Backspace widens, Ctrl+R again steps to an older match,
//! Enter (or any other editing key) keeps the match in the input to edit
//! or send, and Esc, Ctrl+C or Ctrl+G put back what was typed before.
//!
//! Invariant: pure (a part of `update`); a search only ever changes the
//! editor's text, never sends it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Command};

/// An open Ctrl+R search.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HistorySearch {
    pub query: String,
    /// The history entry shown; `None`: nothing matches.
    pub at: Option<usize>,
    /// The input before the search, put back on Esc.
    draft: String,
}

impl HistorySearch {
    /// The input's title while searching.
    pub fn title(&self) -> String {
        match self.at {
            Some(_) => format!("reverse search: {}", self.query),
            None => format!("reverse search: {} (no match)", self.query),
        }
    }
}

/// Ctrl+R on the prompt: opens a search showing the newest prompt.
pub fn start(app: &mut App) -> Vec<Command> {
    let draft = app.editor.text().to_owned();
    let mut search = HistorySearch { draft, ..HistorySearch::default() };
    search.at = find(app.editor.history(), "", None);
    show(app, &search);
    app.search = Some(search);
    Vec::new()
}

/// A key while the search is open.
pub fn key(app: &mut App, key: KeyEvent) -> Vec<Command> {
    let Some(mut search) = app.search.take() else { return Vec::new() };
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('r') if ctrl => {
            // An older match, if any; else stay on this one.
            let older =
                search.at.and_then(|at| find(app.editor.history(), &search.query, Some(at)));
            search.at = older.or(search.at);
        }
        KeyCode::Esc => {
            app.editor.set_text(&search.draft);
            return Vec::new();
        }
        KeyCode::Char('c' | 'g') if ctrl => {
            app.editor.set_text(&search.draft);
            return Vec::new();
        }
        KeyCode::Char(c) if !ctrl => {
            search.query.push(c);
            search.at = find(app.editor.history(), &search.query, None);
        }
        KeyCode::Backspace => {
            search.query.pop();
            search.at = find(app.editor.history(), &search.query, None);
        }
        // Enter, arrows and the rest keep the match in the input.
        _ => return Vec::new(),
    }
    show(app, &search);
    app.search = Some(search);
    Vec::new()
}

/// The newest entry before `before` (all entries: `None`) containing
/// `query`, ignoring case.
fn find(history: &[String], query: &str, before: Option<usize>) -> Option<usize> {
    let query = query.to_lowercase();
    let end = before.unwrap_or(history.len()).min(history.len());
    (0..end).rev().find(|&n| history[n].to_lowercase().contains(&query))
}

fn show(app: &mut App, search: &HistorySearch) {
    let text = match search.at {
        Some(at) => app.editor.history().get(at).cloned().unwrap_or_default(),
        None => search.draft.clone(),
    };
    app.editor.set_text(&text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::ApprovalMode;
    use crate::tui::{Msg, Theme, update};

    fn press(app: &mut App, code: KeyCode, modifiers: KeyModifiers) {
        update(app, Msg::Key(KeyEvent::new(code, modifiers)));
    }

    fn app_with(history: &[&str]) -> App {
        let mut app = App::new(Theme::default(), ApprovalMode::Ask);
        app.editor.load_history(history.iter().map(|s| (*s).to_owned()).collect());
        app
    }

    #[test]
    fn ctrl_r_finds_the_newest_match_then_older_ones() {
        let mut app = app_with(&["run the tests", "fix calc.py", "run the linter"]);
        app.editor.insert("draft");
        press(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
        for c in "RUN".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        assert_eq!(app.editor.text(), "run the linter");
        press(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
        assert_eq!(app.editor.text(), "run the tests");
        // No older match: it stays.
        press(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
        assert_eq!(app.editor.text(), "run the tests");
        press(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        assert!(app.search.is_none());
        assert_eq!(app.editor.text(), "run the tests", "Enter keeps it, does not send");
        assert!(!app.status.running);
    }

    #[test]
    fn esc_puts_the_draft_back_and_no_match_says_so() {
        let mut app = app_with(&["one"]);
        app.editor.insert("draft");
        press(&mut app, KeyCode::Char('r'), KeyModifiers::CONTROL);
        press(&mut app, KeyCode::Char('z'), KeyModifiers::NONE);
        assert_eq!(app.search.as_ref().unwrap().title(), "reverse search: z (no match)");
        press(&mut app, KeyCode::Esc, KeyModifiers::NONE);
        assert_eq!(app.editor.text(), "draft");
        assert!(app.search.is_none());
    }
}
