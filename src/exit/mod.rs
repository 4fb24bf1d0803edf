//! How keel's process ends, shared by every front end (`cli`, `exec`,
//! `tui`) so none of them imports another for it: the documented exit
//! codes (README "Exit codes", `keel --help`), what a run's status becomes
//! for the shell, and the signals that end a run ([`signals`]). Front ends
//! return an [`ExitStatus`]; errors become one through
//! [`crate::cli::CliError`].

pub mod signals;

/// Documented exit codes of `keel exec` (and of keel in general).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// The model finished the task.
    Done = 0,
    /// The model or the turn failed (model error, step limit, log failure).
    Failed = 1,
    /// Bad flags or configuration.
    Usage = 2,
    /// Calls the model needed were declined: this run could not ask for
    /// their approval (the result says which flag or rule allows them).
    NeedsApproval = 3,
    /// The next model request would have crossed `--max-cost` or
    /// `--max-tokens` (`budget_exceeded`); it was not sent.
    BudgetExceeded = 4,
    /// The model kept repeating itself after keel pointed it out (`stuck`).
    Stuck = 5,
    /// Interrupted by Ctrl-C (SIGINT): 128 + 2.
    Interrupted = 130,
    /// Stopped by SIGHUP (the terminal closed): 128 + 1.
    HungUp = 129,
    /// Stopped by SIGQUIT: 128 + 3.
    Quit = 131,
    /// Stopped by SIGTERM (`timeout`, systemd, CI runners): 128 + 15.
    Terminated = 143,
}

impl ExitStatus {
    /// The number the process exits with.
    pub fn code(self) -> u8 {
        self as u8
    }
}
