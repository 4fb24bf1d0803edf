//! Calling the user back: when an approval (or a plan review, or a spend
//! limit) waits, and when a turn that ran at least `[tui]
//! notify_after_secs` ends, the driver writes one notification to the
//! terminal, as `[tui] notify` says (`config::Notify`): the bell, OSC 9, or
//! OSC 777. Under tmux (`$TMUX` set) an OSC is wrapped in tmux's
//! passthrough (`ESC P tmux; … ESC \`, every ESC inside doubled), which
//! tmux forwards only with `set -g allow-passthrough on` (else it drops
//! it; `notify = "bell"` works everywhere, tmux included).
//!
//! Invariants: [`sequence`] is pure; the text in an OSC holds no control
//! character (an approval names a tool the model chose: it must not end
//! the sequence early and write to the terminal) and is at most
//! [`MAX_TEXT_CHARS`] chars; `off` writes nothing.

use crate::config::Notify;

/// Longest text put in a notification.
pub const MAX_TEXT_CHARS: usize = 120;

/// What is written for a notification saying `text`; empty for `off`.
pub fn sequence(mode: Notify, tmux: bool, text: &str) -> String {
    let text: String =
        text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(MAX_TEXT_CHARS).collect();
    let osc = match mode {
        Notify::Off => return String::new(),
        Notify::Bell => return "\x07".to_owned(),
        Notify::Osc9 => format!("\x1b]9;{text}\x07"),
        Notify::Osc777 => format!("\x1b]777;notify;keel;{text}\x07"),
    };
    if tmux { format!("\x1bPtmux;{}\x1b\\", osc.replace('\x1b', "\x1b\x1b")) } else { osc }
}

/// Whether a turn that ran `secs` seconds is worth a notification.
pub fn long_turn(secs: u64, threshold: u64) -> bool {
    secs >= threshold
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_writes_its_sequence() {
        assert_eq!(sequence(Notify::Bell, false, "x"), "\x07");
        assert_eq!(sequence(Notify::Off, true, "x"), "");
        assert_eq!(sequence(Notify::Osc9, false, "keel: done"), "\x1b]9;keel: done\x07");
        assert_eq!(sequence(Notify::Osc777, false, "done"), "\x1b]777;notify;keel;done\x07");
    }

    #[test]
    fn under_tmux_an_osc_goes_through_passthrough() {
        assert_eq!(sequence(Notify::Osc9, true, "hi"), "\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\");
        assert_eq!(sequence(Notify::Bell, true, "hi"), "\x07");
    }

    #[test]
    fn the_text_cannot_end_the_sequence() {
        let hostile = "shell\x07\x1b]0;owned\x1b\\";
        let written = sequence(Notify::Osc9, false, hostile);
        assert_eq!(written.matches('\x07').count(), 1, "{written:?}");
        assert_eq!(written.matches('\x1b').count(), 1, "{written:?}");
        assert!(sequence(Notify::Osc9, false, &"x".repeat(500)).len() < 130);
    }
}
