//! What front ends print, decided without printing (L0, pure): untrusted
//! text made safe for a terminal ([`for_terminal`]) and a finished tool
//! call judged and unframed for people ([`outcome`], [`parse_shell`]).
//! Shared by `exec`'s printers and the TUI so both say the same thing.

mod sanitize;
mod shell_output;

pub use sanitize::for_terminal;
pub use shell_output::{CallOutcome, ShellText, call_summary, outcome, parse_shell};
