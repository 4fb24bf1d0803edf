//! The interactive front end (L3): `keel` and `keel "prompt"`.
//!
//! Elm-style: [`App`] is the model, [`update`] the pure transition from a
//! [`Msg`] to [`Command`]s, [`view`] draws the model. The driver
//! (`driver.rs`) owns the terminal and performs commands; the session runs
//! on its own task (`bridge.rs`) and talks to the UI only through channels:
//! prompts and mode changes in, runtime events and approval requests out.
//!
//! Before a session opens, `launch.rs` and `picker.rs` may ask "trust this
//! project?" and show the resume picker (`keel resume`).
//!
//! Invariants: nothing here changes the runtime's behaviour except through
//! the `Approver` (including the mode chosen with a plan approval), the
//! cancellation token and the session's own entry points (`run_turn`,
//! `continue_turn`, `compact`, `undo_turns`, `set_approval_mode`);
//! drawing never panics on any terminal size; the terminal is restored on
//! every exit path (see `terminal.rs`). Must not touch the session log or
//! tools directly.

mod app;
mod approval_diff;
mod bridge;
mod budget;
mod diff;
mod driver;
mod editor;
mod files;
mod input;
mod keys;
mod launch;
mod markdown;
mod mcp_view;
mod overlay;
mod panels;
mod picker;
mod slash;
mod subagents;
mod terminal;
mod theme;
mod transcript;
mod view;
mod wrap;

#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod subagent_view_tests;
#[cfg(test)]
mod view_tests;
#[cfg(test)]
mod workflow_view_tests;

pub use app::{AllowPrefix, App, ApprovalReply, Command, Msg, update};
pub use driver::{FirstPrompt, TuiOptions, run};
pub use launch::{Launch, Start};
pub use panels::{PlanView, TaskItem, TaskState};
pub use terminal::restore as restore_terminal;
pub use theme::Theme;
pub use transcript::{CellKind, Level, ToolCell, ToolStatus};
pub use view::view;

/// Failures that end the TUI.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("cannot set up the terminal: {0}")]
    Terminal(#[source] std::io::Error),
    #[error("cannot draw: {0}")]
    Draw(#[source] std::io::Error),
    #[error("the session could not start: {0}")]
    Session(#[source] crate::runtime::RuntimeError),
    #[error("the session could not start: {0}")]
    Settings(#[source] crate::config::ConfigError),
}
