//! The waiting indicator of plain `keel exec` (issue 33): a local model
//! may take a minute before its first token, and a run that prints nothing
//! meanwhile looks hung. While keel waits for the model, one status line on
//! stderr says so with the time waited (`waiting for the model · 12s`),
//! then what is streaming (`receiving the answer · 340 chars · 15s`); it is
//! erased before any other line is written and when the run ends.
//!
//! Invariants: only in the human form (never under `--json`), and only
//! when stderr is a terminal or `--progress` asks; every write of the
//! printer and of the ticker happens under one lock, so a progress line
//! never lands inside another line; the line is plain text (no model text
//! in it), so nothing untrusted reaches the terminal through it.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::protocol::StreamEvent;
use crate::runtime::{EventSink, RuntimeEvent};

use super::HumanPrinter;

/// How often the line is redrawn while nothing else happens.
const TICK: Duration = Duration::from_millis(500);
/// Erases the current terminal line (carriage return, clear line).
const ERASE: &str = "\r\x1b[2K";

/// What the run is waiting for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Idle,
    /// A request is out, nothing came back yet.
    Waiting {
        since: Instant,
    },
    /// The answer streams: `chars` of text and arguments so far.
    Streaming {
        since: Instant,
        chars: usize,
    },
    /// A summary of the conversation is being written.
    Compacting {
        since: Instant,
    },
}

impl Phase {
    /// The status line for this phase at `now`, if one is shown.
    fn line(self, now: Instant) -> Option<String> {
        let secs = |since: Instant| now.saturating_duration_since(since).as_secs();
        match self {
            Self::Idle => None,
            Self::Waiting { since } => Some(format!("… waiting for the model · {}s", secs(since))),
            Self::Streaming { since, chars } => {
                Some(format!("… receiving the answer · {chars} chars · {}s", secs(since)))
            }
            Self::Compacting { since } => {
                Some(format!("… summarizing the conversation · {}s", secs(since)))
            }
        }
    }

    /// The phase after `event`.
    fn after(self, event: &RuntimeEvent, now: Instant) -> Self {
        match event {
            RuntimeEvent::TurnStarted { .. }
            | RuntimeEvent::ToolCallFinished { .. }
            | RuntimeEvent::Retrying { .. }
            | RuntimeEvent::Compacted { .. } => Self::Waiting { since: now },
            RuntimeEvent::Compacting { .. } => Self::Compacting { since: now },
            RuntimeEvent::Stream(event) => {
                let grown = match event {
                    StreamEvent::TextDelta { delta } | StreamEvent::ReasoningDelta { delta } => {
                        delta.chars().count()
                    }
                    StreamEvent::ToolCallArgumentsDelta { delta, .. } => delta.chars().count(),
                    StreamEvent::ToolCallStarted { .. } | StreamEvent::Retrying { .. } => 0,
                };
                match self {
                    Self::Streaming { since, chars } => {
                        Self::Streaming { since, chars: chars + grown }
                    }
                    Self::Idle | Self::Waiting { .. } | Self::Compacting { .. } => {
                        Self::Streaming { since: now, chars: grown }
                    }
                }
            }
            RuntimeEvent::ModelResponse(_)
            | RuntimeEvent::ToolCallStarted { .. }
            | RuntimeEvent::ApprovalDeclined(_)
            | RuntimeEvent::Error { .. }
            | RuntimeEvent::TurnCompleted { .. } => Self::Idle,
            RuntimeEvent::SessionStarted { .. }
            | RuntimeEvent::ModelChanged { .. }
            | RuntimeEvent::ModeChanged { .. }
            | RuntimeEvent::WorkflowChanged { .. }
            | RuntimeEvent::InputQueued { .. }
            | RuntimeEvent::InputDelivered { .. }
            | RuntimeEvent::Progress { .. }
            | RuntimeEvent::Warning { .. }
            | RuntimeEvent::McpServerStatus { .. }
            | RuntimeEvent::ToolProgress { .. }
            | RuntimeEvent::Subagent { .. } => self,
        }
    }
}

/// The printer and the status line it shares with the ticker.
struct Shared {
    printer: HumanPrinter,
    phase: Phase,
    /// A status line is on the screen.
    shown: bool,
    done: bool,
}

impl Shared {
    fn erase(&mut self, err: &mut impl Write) {
        if self.shown {
            let _ = write!(err, "{ERASE}");
            self.shown = false;
        }
    }

    fn draw(&mut self, err: &mut impl Write) {
        self.erase(err);
        if let Some(line) = self.phase.line(Instant::now()) {
            let _ = write!(err, "{line}");
            let _ = err.flush();
            self.shown = true;
        }
    }
}

/// [`HumanPrinter`] with the waiting indicator.
pub struct ProgressPrinter {
    shared: Arc<Mutex<Shared>>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl ProgressPrinter {
    /// `printer` with a status line redrawn every [`TICK`] by a thread of
    /// its own, which ends when this printer is dropped.
    pub fn new(printer: HumanPrinter) -> Self {
        let shared =
            Arc::new(Mutex::new(Shared { printer, phase: Phase::Idle, shown: false, done: false }));
        let ticker = Arc::clone(&shared);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(TICK);
                let mut shared = lock(&ticker);
                if shared.done {
                    return;
                }
                shared.draw(&mut std::io::stderr().lock());
            }
        });
        Self { shared }
    }
}

impl EventSink for ProgressPrinter {
    fn emit(&mut self, event: RuntimeEvent) {
        let mut shared = lock(&self.shared);
        let mut err = std::io::stderr().lock();
        shared.phase = shared.phase.after(&event, Instant::now());
        let lines = shared.printer.lines(event);
        if !lines.is_empty() {
            shared.erase(&mut err);
            for line in lines {
                let _ = writeln!(err, "{line}");
            }
        }
        shared.draw(&mut err);
    }
}

impl Drop for ProgressPrinter {
    fn drop(&mut self) {
        let mut shared = lock(&self.shared);
        shared.done = true;
        shared.erase(&mut std::io::stderr().lock());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_follows_the_wait() {
        let start = Instant::now();
        let later = start + Duration::from_secs(12);
        let waiting = Phase::Idle.after(&RuntimeEvent::TurnStarted { turn: 1 }, start);
        assert_eq!(waiting.line(later).unwrap(), "… waiting for the model · 12s");
        let text = RuntimeEvent::Stream(StreamEvent::TextDelta { delta: "héllo".into() });
        let streaming = waiting.after(&text, start).after(&text, start);
        assert_eq!(streaming.line(later).unwrap(), "… receiving the answer · 10 chars · 12s");
        let warning = RuntimeEvent::Warning { message: "x".into() };
        assert_eq!(streaming.after(&warning, later), streaming, "a warning changes nothing");
        let done = streaming.after(&RuntimeEvent::Error { message: "e".into() }, later);
        assert_eq!(done.line(later), None);
    }
}
