//! Pastes: telling a paste from typing when the terminal does not bracket
//! it, and showing a long paste as a chip that is sent whole.
//!
//! A terminal without bracketed paste (or a tmux `send-keys`) types a paste
//! as keys, and its line breaks arrive as Enter, which would send the first
//! line. The driver reads every key already waiting when one arrives (one
//! read of the terminal, or several back to back) and hands the burst to
//! [`burst_text`]: a burst of plain keys with a line break before its last
//! key is a paste. A person does not type a line break and another key in
//! the same instant; a burst whose only line break is its last key is typing
//! (a quick "y" then Enter, or text then Enter from a script) and stays keys.
//!
//! A paste longer than [`LONG_PASTE_LINES`] lines or [`LONG_PASTE_CHARS`]
//! chars shows in the input as one chip (`[pasted 120 lines]`, see [`chip`]);
//! the editor keeps the text and puts it back in place of the chip when the
//! prompt is sent, so what the model gets is the whole paste. Editing the
//! chip's text away drops the paste with it.
//!
//! Invariant: pure; [`burst_text`] returns `None` for any burst holding a
//! key that is not text (arrows, Ctrl or Alt chords, Esc), so a burst of
//! commands is never turned into text.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// A paste with more lines than this shows as a chip.
pub const LONG_PASTE_LINES: usize = 10;
/// A paste with more chars than this shows as a chip.
pub const LONG_PASTE_CHARS: usize = 2_000;

/// The text a burst of keys read at once types, if the burst is a paste:
/// plain keys only, holding a line break (Enter or Ctrl+J) before its last
/// key. A trailing Enter after a pasted line break belongs to the paste.
pub fn burst_text(keys: &[KeyEvent]) -> Option<String> {
    let mut text = String::new();
    let mut inner_break = false;
    for (n, key) in keys.iter().enumerate() {
        let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
        match key.code {
            KeyCode::Char('j') if key.modifiers == KeyModifiers::CONTROL => text.push('\n'),
            KeyCode::Enter if plain => text.push('\n'),
            KeyCode::Tab if plain => text.push('\t'),
            KeyCode::Char(c) if plain => {
                text.push(c);
                continue;
            }
            _ => return None,
        }
        if text.ends_with('\n') && n + 1 < keys.len() {
            inner_break = true;
        }
    }
    inner_break.then_some(text)
}

/// The chip a long paste shows as (`[pasted 120 lines]`, or
/// `[pasted 2345 chars]` for a few long lines), numbered when the same
/// label is already in use; `None`: short enough to show as it is.
pub fn chip(text: &str, taken: &[String]) -> Option<String> {
    let lines = text.lines().count();
    let chars = text.chars().count();
    let base = if lines > LONG_PASTE_LINES {
        format!("pasted {lines} lines")
    } else if chars > LONG_PASTE_CHARS {
        format!("pasted {chars} chars")
    } else {
        return None;
    };
    let mut label = format!("[{base}]");
    let mut n = 2;
    while taken.contains(&label) {
        label = format!("[{base} #{n}]");
        n += 1;
    }
    Some(label)
}

/// `text` with each chip still in it replaced by its paste (the first
/// occurrence of each: a chip typed again by hand stays text).
pub fn expand(text: &str, pastes: &[(String, String)]) -> String {
    let mut text = text.to_owned();
    for (label, content) in pastes {
        if let Some(at) = text.find(label.as_str()) {
            text.replace_range(at..at + label.len(), content);
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<KeyEvent> {
        text.chars()
            .map(|c| match c {
                '\n' => KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE),
                c => KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE),
            })
            .collect()
    }

    #[test]
    fn a_burst_with_an_inner_line_break_is_a_paste() {
        assert_eq!(burst_text(&keys("a\nb\nc")).as_deref(), Some("a\nb\nc"));
        // The trailing break of a pasted block is part of it.
        assert_eq!(burst_text(&keys("a\nb\n")).as_deref(), Some("a\nb\n"));
    }

    #[test]
    fn text_then_enter_is_typing() {
        assert_eq!(burst_text(&keys("say hi\n")), None);
        assert_eq!(burst_text(&keys("y")), None);
        assert_eq!(burst_text(&keys("abc")), None);
    }

    #[test]
    fn a_burst_with_a_command_key_is_not_text() {
        let mut burst = keys("a\nb");
        burst.push(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(burst_text(&burst), None);
        let mut burst = keys("a\nb");
        burst.insert(1, KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
        assert_eq!(burst_text(&burst), None);
    }

    #[test]
    fn ctrl_j_in_a_burst_is_a_line_break() {
        let mut burst = keys("ab");
        burst.insert(1, KeyEvent::new(KeyCode::Char('j'), KeyModifiers::CONTROL));
        assert_eq!(burst_text(&burst).as_deref(), Some("a\nb"));
    }

    #[test]
    fn long_pastes_get_numbered_chips() {
        let long: String = (0..120).map(|n| format!("line {n}\n")).collect();
        assert_eq!(chip("short\ntext", &[]), None);
        let first = chip(&long, &[]).unwrap();
        assert_eq!(first, "[pasted 120 lines]");
        assert_eq!(chip(&long, &[first]).unwrap(), "[pasted 120 lines #2]");
        assert_eq!(chip(&"x".repeat(2_345), &[]).unwrap(), "[pasted 2345 chars]");
    }

    #[test]
    fn a_long_paste_shows_as_a_chip_and_is_sent_whole() {
        use crate::tui::{App, Command, Msg, Theme, update};
        let mut app = App::new(Theme::default(), crate::policy::ApprovalMode::Ask);
        let long: String = (0..120).map(|n| format!("line {n}\n")).collect();
        update(&mut app, Msg::Paste("look: ".into()));
        update(&mut app, Msg::Paste(long.clone()));
        assert_eq!(app.editor.text(), "look: [pasted 120 lines]");
        let enter = KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(update(&mut app, Msg::Key(enter)), [Command::Submit(format!("look: {long}"))]);
    }

    #[test]
    fn backslash_enter_is_a_newline() {
        use crate::tui::{App, Msg, Theme, update};
        let mut app = App::new(Theme::default(), crate::policy::ApprovalMode::Ask);
        for key in keys("one\\") {
            update(&mut app, Msg::Key(key));
        }
        let commands =
            update(&mut app, Msg::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)));
        assert!(commands.is_empty());
        assert_eq!(app.editor.text(), "one\n");
    }

    #[test]
    fn expand_puts_each_paste_back_once() {
        let pastes = vec![("[p]".to_owned(), "A\nB".to_owned())];
        assert_eq!(expand("see [p] and [p]", &pastes), "see A\nB and [p]");
    }
}
