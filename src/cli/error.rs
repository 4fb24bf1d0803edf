//! [`CliError`]: the one error a command ends with. Its [`ErrorKind`]
//! picks the documented exit code (README "Exit codes"): a usage or
//! configuration mistake is 2, a run that failed is 1, a run a signal
//! stopped is 128 + the signal's number. Shaped like jj's
//! `CommandError`: kind, the error with its causes, and hints.
//!
//! Invariants: the kind comes from the typed error (`From` impls below),
//! never from its message; [`Context`] adds a message without changing
//! the kind; the rendered text says each cause once.

use std::fmt;

use crate::config::ConfigError;
use crate::config::rules::RulesFileError;
use crate::exit::ExitStatus;
use crate::exit::signals::StopSignal;
use crate::runtime::{CheckpointError, ForkError, RuntimeError, UndoError};
use crate::session::{FindError, SessionError};
use crate::tui::TuiError;

/// What went wrong, as the exit code says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad flags or arguments, or something named that does not exist
    /// (a session id, a folder): exit 2.
    Usage,
    /// A configuration or rules file is wrong: exit 2.
    Config,
    /// The run itself failed (the session could not open or write its
    /// log, the terminal could not be set up, an undo failed): exit 1.
    Runtime,
    /// A signal stopped the run and it ended in an error: 128 + its number.
    Interrupted(StopSignal),
}

/// The error a command ends with.
#[derive(Debug)]
pub struct CliError {
    kind: ErrorKind,
    error: anyhow::Error,
    hints: Vec<String>,
}

impl CliError {
    pub fn new(kind: ErrorKind, error: impl Into<anyhow::Error>) -> Self {
        Self { kind, error: error.into(), hints: Vec::new() }
    }

    /// A usage mistake said in words.
    pub fn usage(message: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Usage, anyhow::Error::msg(message.to_string()))
    }

    /// A failed run said in words.
    pub fn runtime(message: impl fmt::Display) -> Self {
        Self::new(ErrorKind::Runtime, anyhow::Error::msg(message.to_string()))
    }

    /// Adds a line telling the user what to do next.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hints.push(hint.into());
        self
    }

    /// Puts `message` in front of the error; the kind stays.
    pub fn context(self, message: impl fmt::Display + Send + Sync + 'static) -> Self {
        Self { error: self.error.context(message), ..self }
    }

    /// The same error, reported as stopped by `signal`.
    pub fn interrupted_by(self, signal: StopSignal) -> Self {
        Self { kind: ErrorKind::Interrupted(signal), ..self }
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    pub fn exit_status(&self) -> ExitStatus {
        match self.kind {
            ErrorKind::Usage | ErrorKind::Config => ExitStatus::Usage,
            ErrorKind::Runtime => ExitStatus::Failed,
            ErrorKind::Interrupted(signal) => signal.exit_status(),
        }
    }

    /// What goes to stderr: `error: …` (each cause said once), then one
    /// `hint: …` line per hint.
    pub fn render(&self) -> String {
        let mut text = format!("error: {}", error_text(&self.error));
        for hint in &self.hints {
            text.push_str(&format!("\nhint: {hint}"));
        }
        text
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&error_text(&self.error))
    }
}

/// An error and its causes on one line, each cause said once: many
/// messages already embed their cause (`cannot read X: Is a directory`),
/// and anyhow's `{:#}` would repeat it (`…: Is a directory: Is a
/// directory`).
pub fn error_text(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}

/// Each typed error the commands meet, with the kind it is.
macro_rules! kind_of {
    ($($error:ty => $kind:expr;)*) => {$(
        impl From<$error> for CliError {
            fn from(error: $error) -> Self {
                let kind: fn(&$error) -> ErrorKind = $kind;
                Self::new(kind(&error), error)
            }
        }
    )*};
}

kind_of! {
    ConfigError => |_| ErrorKind::Config;
    RulesFileError => |_| ErrorKind::Config;
    // No session with that id, or none in this folder: the user named it.
    FindError => |_| ErrorKind::Usage;
    RuntimeError => |_| ErrorKind::Runtime;
    SessionError => |_| ErrorKind::Runtime;
    CheckpointError => |_| ErrorKind::Runtime;
    UndoError => |error| match error {
        // More turns asked than were checkpointed.
        UndoError::NotEnough { .. } => ErrorKind::Usage,
        UndoError::Log(_) | UndoError::Checkpoint(_) => ErrorKind::Runtime,
    };
    ForkError => |error| match error {
        // No such prompt: the user named it.
        ForkError::Target(_) => ErrorKind::Usage,
        ForkError::Log(_) => ErrorKind::Runtime,
    };
    std::io::Error => |_| ErrorKind::Runtime;
    serde_json::Error => |_| ErrorKind::Runtime;
}

impl From<TuiError> for CliError {
    fn from(error: TuiError) -> Self {
        let hint = match &error {
            TuiError::Terminal(_) => {
                Some("keel needs an interactive terminal; in scripts run `keel exec \"…\"`")
            }
            TuiError::Draw(_) | TuiError::Session(_) | TuiError::Settings(_) => None,
        };
        let error = Self::new(ErrorKind::Runtime, error);
        match hint {
            Some(hint) => error.with_hint(hint),
            None => error,
        }
    }
}

/// `.context(…)` for any result whose error converts into a [`CliError`]:
/// the message goes in front, the kind stays the typed error's.
pub trait Context<T> {
    fn context(self, message: impl fmt::Display + Send + Sync + 'static) -> Result<T, CliError>;
    fn with_context<M: fmt::Display + Send + Sync + 'static>(
        self,
        message: impl FnOnce() -> M,
    ) -> Result<T, CliError>;
}

impl<T, E: Into<CliError>> Context<T> for Result<T, E> {
    fn context(self, message: impl fmt::Display + Send + Sync + 'static) -> Result<T, CliError> {
        self.map_err(|error| error.into().context(message))
    }

    fn with_context<M: fmt::Display + Send + Sync + 'static>(
        self,
        message: impl FnOnce() -> M,
    ) -> Result<T, CliError> {
        self.map_err(|error| error.into().context(message()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let io = std::io::Error::from_raw_os_error(21);
        let error = ConfigError::Read { path: "/h/config.toml".into(), source: io };
        let text = error_text(&anyhow::Error::new(error));
        assert_eq!(text.matches("os error 21").count(), 1, "{text}");
        let wrapped = anyhow::Error::msg("inner cause").context("outer");
        assert_eq!(error_text(&wrapped), "outer: inner cause");
    }

    #[test]
    fn each_kind_has_its_documented_exit_code() {
        let io = || std::io::Error::from_raw_os_error(21);
        let config = ConfigError::Read { path: "/h/config.toml".into(), source: io() };
        assert_eq!(CliError::from(config).exit_status(), ExitStatus::Usage);
        assert_eq!(CliError::usage("bad flag").exit_status(), ExitStatus::Usage);
        assert_eq!(CliError::from(io()).exit_status(), ExitStatus::Failed);
        let stopped = CliError::from(io()).interrupted_by(StopSignal::Hangup);
        assert_eq!(stopped.exit_status(), ExitStatus::HungUp);
    }

    #[test]
    fn context_keeps_the_kind_and_hints_follow_the_error() {
        let error: Result<(), std::io::Error> = Err(std::io::Error::from_raw_os_error(2));
        let error = error.context("cannot start").unwrap_err().with_hint("try again");
        assert_eq!(error.kind(), ErrorKind::Runtime);
        let text = error.render();
        assert!(text.starts_with("error: cannot start: "), "{text}");
        assert!(text.ends_with("\nhint: try again"), "{text}");
    }
}
