//! Signals that end a run: SIGINT, SIGTERM, SIGHUP and SIGQUIT all mean
//! "stop": the first one cancels (the running command's process group goes
//! through the kill ladder, the turn is recorded as interrupted, the log is
//! closed and the result printed), and the run exits with 128 + the
//! signal's number (130, 143, 129, 131); a second one exits at once, with
//! its own code, after `before_exit` (which writes `exec --json`'s
//! `result` line if it is not out yet, and restores the TUI's terminal).
//!
//! The same signal again within [`REPEAT_WINDOW`] of the first is not a
//! second request: coreutils `timeout` and CI runners signal keel and then
//! its whole process group, so keel receives their one stop twice.
//!
//! Closing a terminal sends SIGHUP; `timeout`, systemd, Kubernetes and CI
//! runners send SIGTERM; unhandled, any of them would kill keel with its
//! command still running and its log open.
//!
//! Invariant: the handlers are installed before [`watch`] returns, so no
//! early signal falls through to the default (kill) action.
//!
//! One watcher for all four: the first signal cancels the run's token (exec: `exec::run`'s; the
//! TUI: it ends the event loop through [`Shutdown`], and the TUI interrupts the turn, ends the
//! session and restores the terminal), the exit status is 128 + its number
//! (`ExitStatus::{Interrupted, Terminated, HungUp, Quit}`), a second one exits at once without
//! killing process groups (use the first for a clean stop). Keyboard signals are ignored while
//! `$EDITOR` owns the terminal.

use std::io;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::ExitStatus;

/// How soon after the first a repeat of the same signal counts as the
/// same request (delivered once to keel and once to its process group).
pub const REPEAT_WINDOW: Duration = Duration::from_secs(1);

/// A signal that asks keel to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
    Hangup,
    Quit,
}

impl StopSignal {
    /// The documented exit status: 128 + the signal's number.
    pub fn exit_status(self) -> ExitStatus {
        match self {
            Self::Interrupt => ExitStatus::Interrupted,
            Self::Terminate => ExitStatus::Terminated,
            Self::Hangup => ExitStatus::HungUp,
            Self::Quit => ExitStatus::Quit,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
            Self::Quit => "SIGQUIT",
        }
    }

    /// Sent from a keyboard (Ctrl+C, Ctrl+\), so also meant for a child
    /// that owns the terminal for a while (the TUI's `$EDITOR`).
    fn is_typed_at_a_keyboard(self) -> bool {
        matches!(self, Self::Interrupt | Self::Quit)
    }
}

/// What the watcher tells the run: whether to stop, and why.
#[derive(Debug, Clone)]
pub struct Shutdown {
    token: CancellationToken,
    first: Arc<OnceLock<StopSignal>>,
    keyboard_paused: Arc<AtomicBool>,
}

impl Shutdown {
    /// Cancelled by the first signal.
    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }

    /// The first signal received, if any.
    pub fn signal(&self) -> Option<StopSignal> {
        self.first.get().copied()
    }

    /// The exit status for a run that ended with `status`: an interrupted
    /// run says which signal stopped it.
    pub fn exit_status(&self, status: ExitStatus) -> ExitStatus {
        match (status, self.signal()) {
            (ExitStatus::Interrupted, Some(signal)) => signal.exit_status(),
            _ => status,
        }
    }

    /// While paused, SIGINT and SIGQUIT (typed at the keyboard) are meant
    /// for the child that owns the terminal, not for keel.
    pub fn pause_keyboard_signals(&self, paused: bool) {
        self.keyboard_paused.store(paused, Ordering::SeqCst);
    }
}

/// Installs the handlers and watches them on a task. `before_exit` runs
/// when a second signal makes keel exit at once, with that signal (the
/// TUI restores the terminal there, `exec` writes its `result` line).
pub fn watch(before_exit: fn(StopSignal)) -> io::Result<Shutdown> {
    let mut streams = [
        (StopSignal::Interrupt, signal(SignalKind::interrupt())?),
        (StopSignal::Terminate, signal(SignalKind::terminate())?),
        (StopSignal::Hangup, signal(SignalKind::hangup())?),
        (StopSignal::Quit, signal(SignalKind::quit())?),
    ];
    let shutdown = Shutdown {
        token: CancellationToken::new(),
        first: Arc::new(OnceLock::new()),
        keyboard_paused: Arc::new(AtomicBool::new(false)),
    };
    let watcher = shutdown.clone();
    tokio::spawn(async move {
        let mut first_at = None;
        loop {
            let Some(received) = next_signal(&mut streams).await else { return };
            if received.is_typed_at_a_keyboard() && watcher.keyboard_paused.load(Ordering::SeqCst) {
                continue;
            }
            let now = Instant::now();
            match (watcher.signal(), first_at) {
                (None, _) | (_, None) => {
                    let _ = watcher.first.set(received);
                    first_at = Some(now);
                    tracing::debug!("{} received: stopping", received.name());
                    watcher.token.cancel();
                }
                (Some(first), Some(at)) if is_repeat(first, at, received, now) => {
                    tracing::debug!("{} again: the same stop, delivered twice", received.name());
                }
                (Some(_), Some(_)) => {
                    before_exit(received);
                    std::process::exit(received.exit_status() as i32);
                }
            }
        }
    });
    Ok(shutdown)
}

/// Whether `second` at `now` is `first` (received at `first_at`) again:
/// the same signal within [`REPEAT_WINDOW`].
fn is_repeat(first: StopSignal, first_at: Instant, second: StopSignal, now: Instant) -> bool {
    first == second && now.saturating_duration_since(first_at) < REPEAT_WINDOW
}

/// The next signal of any of `streams` (`None` once they are all closed).
async fn next_signal(streams: &mut [(StopSignal, Signal); 4]) -> Option<StopSignal> {
    let [(a, sa), (b, sb), (c, sc), (d, sd)] = streams;
    tokio::select! {
        Some(()) = sa.recv() => Some(*a),
        Some(()) = sb.recv() => Some(*b),
        Some(()) = sc.recv() => Some(*c),
        Some(()) = sd.recv() => Some(*d),
        else => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_signal_number() {
        assert_eq!(StopSignal::Interrupt.exit_status() as i32, 128 + 2);
        assert_eq!(StopSignal::Hangup.exit_status() as i32, 128 + 1);
        assert_eq!(StopSignal::Quit.exit_status() as i32, 128 + 3);
        assert_eq!(StopSignal::Terminate.exit_status() as i32, 128 + 15);
    }

    #[test]
    fn the_same_signal_within_the_window_is_one_request() {
        let at = Instant::now();
        let soon = at + Duration::from_millis(10);
        let (term, int) = (StopSignal::Terminate, StopSignal::Interrupt);
        assert!(is_repeat(term, at, term, soon), "timeout's copy to the group");
        assert!(!is_repeat(term, at, int, soon), "another signal is a second request");
        assert!(!is_repeat(int, at, int, at + REPEAT_WINDOW), "a later Ctrl-C is one too");
    }

    #[test]
    fn only_an_interrupted_run_takes_the_signal_s_code() {
        let shutdown = Shutdown {
            token: CancellationToken::new(),
            first: Arc::new(OnceLock::new()),
            keyboard_paused: Arc::new(AtomicBool::new(false)),
        };
        assert_eq!(shutdown.exit_status(ExitStatus::Interrupted), ExitStatus::Interrupted);
        let _ = shutdown.first.set(StopSignal::Terminate);
        assert_eq!(shutdown.exit_status(ExitStatus::Interrupted), ExitStatus::Terminated);
        assert_eq!(shutdown.exit_status(ExitStatus::Done), ExitStatus::Done);
        assert_eq!(shutdown.exit_status(ExitStatus::Failed), ExitStatus::Failed);
    }
}
