//! How an attached terminal prints what the owner sends: one or more
//! plain lines per wire message, and which approval is open here.
//!
//! Invariants: every text from the owner passes `display::for_terminal`
//! (an approval's `display::escape_visibly`, as in the TUI: every
//! character shown); an approval opens for `y`/`n` only after its whole
//! text was written and flushed, and closes when it is settled anywhere.

use std::io::Write;

use crate::display::{escape_visibly, for_terminal};
use crate::runtime::attach_wire::HostLine;

/// A tool's output shown, at most this many lines (the owner sends 2 kB).
const OUTPUT_LINES: usize = 12;

/// What was shown so far that later input depends on.
#[derive(Debug, Default)]
pub struct Screen {
    open: Option<u64>,
}

impl Screen {
    /// The approval `y`/`n` answer now.
    pub fn open_approval(&self) -> Option<u64> {
        self.open
    }

    pub fn say(&self, text: &str) {
        write_out(&format!("keel attach: {text}\n"));
    }

    pub fn show(&mut self, line: &HostLine) {
        let text = self.text_of(line);
        if !text.is_empty() {
            write_out(&text);
        }
        // Open only once its text is out (`write_out` flushes).
        if let HostLine::Approval { id, text: Some(_), .. } = line {
            self.open = Some(*id);
        }
    }

    fn text_of(&mut self, line: &HostLine) -> String {
        let safe = |text: &str| for_terminal(text).into_owned();
        match line {
            HostLine::Hello { .. } | HostLine::Bye { .. } => String::new(),
            HostLine::Transcript { text } => safe(text),
            HostLine::TurnStarted { turn } => format!("── turn {turn} ──\n"),
            HostLine::User { text } => format!("› {}\n", safe(text)),
            HostLine::Queued { text, steer: true, .. } => format!("steer  {}\n", safe(text)),
            HostLine::Queued { text, steer: false, .. } => format!("queued {}\n", safe(text)),
            HostLine::Assistant { text } => format!("{}\n", safe(text)),
            HostLine::ToolStarted { name, text, .. } => {
                format!("… {} {}\n", safe(name), safe(text))
            }
            HostLine::ToolFinished { name, ok, output, .. } => {
                let mark = if *ok { '✓' } else { '✗' };
                let mut text = format!("{mark} {}\n", safe(name));
                let output = safe(output);
                let lines: Vec<&str> = output.lines().collect();
                let skipped = lines.len().saturating_sub(OUTPUT_LINES);
                if skipped > 0 {
                    text.push_str(&format!("  … {skipped} lines above\n"));
                }
                for line in &lines[skipped..] {
                    text.push_str(&format!("  {line}\n"));
                }
                text
            }
            HostLine::Approval { id, tool, reason, text: Some(body), .. } => {
                let body = escape_visibly(body).replace('\n', "\n  ");
                format!(
                    "Allow {}? ({})\n  {body}\n[approval {id}] y: yes, once · n [reason]: no\n",
                    safe(tool),
                    safe(reason)
                )
            }
            HostLine::Approval { tool, reason, text: None, .. } => format!(
                "{} waits for approval ({}): answer it in the owning terminal\n",
                safe(tool),
                safe(reason)
            ),
            HostLine::Settled { id, approved, by } => {
                if self.open == Some(*id) {
                    self.open = None;
                }
                let verdict = if *approved { "approved" } else { "declined" };
                let whom =
                    if by == "attacher" { "in an attached terminal" } else { "by the owner" };
                format!("[approval {id}] {verdict} {whom}\n")
            }
            HostLine::Notice { level, text } => format!("{}: {}\n", safe(level), safe(text)),
            HostLine::TurnEnded { turn, outcome } => {
                format!("── turn {turn} {} ──\n", safe(outcome))
            }
        }
    }
}

fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_opens_once_shown_and_closes_when_settled_anywhere() {
        let mut screen = Screen::default();
        let approval = HostLine::Approval {
            id: 3,
            call_id: "c".into(),
            tool: "shell".into(),
            reason: "writes".into(),
            text: Some("$ rm x\u{1b}[2J".into()),
        };
        let text = screen.text_of(&approval);
        assert!(text.contains("$ rm x\\u{1b}[2J") && !text.contains('\u{1b}'), "{text}");
        screen.show(&approval);
        assert_eq!(screen.open_approval(), Some(3));
        screen.show(&HostLine::Settled { id: 2, approved: true, by: "owner".into() });
        assert_eq!(screen.open_approval(), Some(3), "another approval's end");
        screen.show(&HostLine::Settled { id: 3, approved: true, by: "owner".into() });
        assert_eq!(screen.open_approval(), None);
        let plan = HostLine::Approval {
            id: 4,
            call_id: "p".into(),
            tool: "submit_plan".into(),
            reason: "r".into(),
            text: None,
        };
        screen.show(&plan);
        assert_eq!(screen.open_approval(), None, "a plan review is not answered here");
    }
}
