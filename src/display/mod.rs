//! What front ends print, decided without printing (L0, pure): untrusted
//! text made safe for a terminal ([`for_terminal`]) and a finished tool
//! call judged and unframed for people ([`outcome`], [`parse_shell`]), and
//! the shell result's framing both ways ([`frame_shell`]), URLs without
//! their secrets ([`redact_urls`]).
//! Shared by `exec`'s printers and the TUI so both say the same thing.

mod redact;
mod sanitize;
mod shell_output;

pub use redact::redact_urls;
pub use sanitize::for_terminal;
pub use shell_output::{
    CallOutcome, ShellRun, ShellText, call_summary, frame_shell, outcome, parse_shell,
    shell_exit_code,
};
