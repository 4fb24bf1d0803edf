//! What the user types in an attached terminal: stdin read line by line on
//! a thread of its own (a blocked read never holds up the exit), each line
//! turned into a wire message or a local action.
//!
//! Invariants: a line longer than [`MAX_TYPED`] is dropped with a notice,
//! never sent; `y`/`n` answer only the approval that is open here, and
//! with none open they are refused rather than sent as a prompt.

use std::io::{BufRead, Read};

use tokio::sync::mpsc;

use crate::runtime::attach_wire::{AttacherLine, MAX_ATTACHER_LINE};

/// The longest line typed that is sent (room for the JSON around it).
pub const MAX_TYPED: usize = MAX_ATTACHER_LINE - 256;

/// What a typed line means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Typed {
    Send(AttacherLine),
    /// Something to tell the user here; nothing is sent.
    Say(String),
    Detach,
    Nothing,
}

/// The lines typed on stdin, until its end.
pub fn spawn_stdin() -> mpsc::Receiver<String> {
    let (lines, typed) = mpsc::channel(16);
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut stdin = stdin.lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            // Bounded: a line past the cap is read in pieces and dropped.
            let mut limited = stdin.by_ref().take(MAX_TYPED as u64 + 1);
            match limited.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let text = if line.ends_with(b"\n") || line.len() <= MAX_TYPED {
                String::from_utf8_lossy(&line).trim_end_matches(['\n', '\r']).to_owned()
            } else {
                skip_rest(&mut stdin);
                format!("/too-long {}", line.len())
            };
            if lines.blocking_send(text).is_err() {
                return;
            }
        }
    });
    typed
}

/// Reads and drops the rest of an overlong line.
fn skip_rest<R: BufRead>(stdin: &mut R) {
    let mut sink = Vec::new();
    loop {
        sink.clear();
        let mut limited = stdin.by_ref().take(64 << 10);
        match limited.read_until(b'\n', &mut sink) {
            Ok(0) | Err(_) => return,
            Ok(_) if sink.ends_with(b"\n") => return,
            Ok(_) => {}
        }
    }
}

/// `text` typed while approval `open` (if any) waits here.
pub fn parse(text: &str, open: Option<u64>) -> Typed {
    let trimmed = text.trim();
    let (word, rest) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
    let rest = rest.trim();
    match word {
        "" => Typed::Nothing,
        "/detach" | "/quit" | "/exit" => Typed::Detach,
        "/too-long" => Typed::Say(format!("that line was too long ({rest} bytes); not sent")),
        "/help" => Typed::Say(
            "text: a prompt queued for after the turn · /steer TEXT: into the running turn · \
             y / n [reason]: answer the open approval · /detach: leave, the session goes on"
                .into(),
        ),
        "/steer" if rest.is_empty() => Typed::Say("/steer needs the text to send".into()),
        "/steer" => Typed::Send(AttacherLine::Prompt { text: rest.to_owned(), steer: true }),
        "y" | "yes" | "n" | "no" => match open {
            None => Typed::Say("no approval is open here; nothing was sent".into()),
            Some(id) => Typed::Send(AttacherLine::Answer {
                id,
                approve: matches!(word, "y" | "yes"),
                note: (!rest.is_empty()).then(|| rest.to_owned()),
            }),
        },
        _ => Typed::Send(AttacherLine::Prompt { text: trimmed.to_owned(), steer: false }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_need_an_open_approval_and_the_rest_is_a_prompt() {
        assert!(matches!(parse("y", None), Typed::Say(_)), "never sent as a prompt");
        assert_eq!(
            parse("n  not that file ", Some(4)),
            Typed::Send(AttacherLine::Answer {
                id: 4,
                approve: false,
                note: Some("not that file".into())
            })
        );
        assert_eq!(
            parse("yes", Some(2)),
            Typed::Send(AttacherLine::Answer { id: 2, approve: true, note: None })
        );
        assert_eq!(
            parse("/steer use tabs", None),
            Typed::Send(AttacherLine::Prompt { text: "use tabs".into(), steer: true })
        );
        assert_eq!(
            parse("yesterday's bug", Some(1)),
            Typed::Send(AttacherLine::Prompt { text: "yesterday's bug".into(), steer: false })
        );
        assert_eq!(parse("/detach", Some(1)), Typed::Detach);
        assert_eq!(parse("   ", None), Typed::Nothing);
    }
}
