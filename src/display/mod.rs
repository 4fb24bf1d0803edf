//! What front ends print, decided without printing (L0, pure): untrusted
//! text made safe for a terminal ([`for_terminal`]) and a finished tool
//! call judged and unframed for people ([`outcome`], [`parse_shell`]), and
//! the shell result's framing both ways ([`frame_shell`]), URLs without
//! their secrets ([`redact_urls`]), and the full text an approval shows
//! ([`approval_text`], every argument, controls and bidi overrides escaped
//! visibly by [`escape_visibly`]), the session's known secret values
//! masked ([`SecretMask`], `secret_mask.rs`) and, for exports, well-known
//! credential shapes ([`mask_secret_shapes`], `secret_shapes.rs`).
//! Shared by `exec`'s printers and the TUI so both say the same thing.
//!
//! Details: `for_terminal` strips terminal control sequences (CSI/OSC/DCS/C1, BEL; a bare CR
//! becomes a newline; property-tested); `outcome` says a call failed (`is_error`, non-zero exit,
//! signal, timeout); `redact_urls` hides the query values and userinfo of every URL in a message
//! (MCP errors may show a hosted server's `?token=`); `frame_shell` is what the model reads of a
//! shell result (`exit code: N` only when not 0, stdout unlabelled, `--- stderr ---`, no final
//! newline) and `parse_shell` the streams back without it, older logs' framing too (`keel replay`
//! compares shell results by streams and exit code, so an older log's framing is not a difference).

mod approval_text;
mod redact;
mod sanitize;
mod secret_mask;
mod secret_shapes;
mod shell_output;

pub use approval_text::{approval_text, escape_visibly};
pub use redact::redact_urls;
pub use sanitize::for_terminal;
pub use secret_mask::{KnownSecret, MIN_SECRET_LEN, SecretMask, SecretMaskError, parse_env_file};
pub use secret_shapes::mask_secret_shapes;
pub use shell_output::{
    CallOutcome, KeptCopy, ShellRun, ShellText, call_summary, frame_shell, outcome, parse_shell,
    shell_exit_code,
};
