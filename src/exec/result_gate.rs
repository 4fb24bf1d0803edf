//! The `--json` stream's last line, exactly once, whichever path ends the
//! process: the normal end (`exec::report`), a usage error, or a second
//! stop signal that exits at once (`cli::signals` calls
//! [`write_result_if_missing`] before it exits).
//!
//! Invariants: every JSON line of this process goes through [`write`], so
//! once the `result` line is out nothing follows it; at most one `result`
//! line is written. The state is process-wide because stdout is: the
//! signal path runs on another task and knows nothing of the run.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use serde_json::Value;

use super::json::{ExecStatus, ResultLine, write_line};

/// What the gate knows: whether the result is out, and the session the
/// run opened (named in a result written by the signal path).
struct Gate {
    result_written: bool,
    session_id: Option<String>,
    log_path: Option<PathBuf>,
}

static GATE: Mutex<Gate> =
    Mutex::new(Gate { result_written: false, session_id: None, log_path: None });

fn gate() -> MutexGuard<'static, Gate> {
    // A writer that panicked mid-line leaves nothing the gate depends on.
    GATE.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Remembers the session this run writes (its `session_started`).
pub(crate) fn note_session(session_id: &str, log_path: &std::path::Path) {
    let mut gate = gate();
    gate.session_id = Some(session_id.to_owned());
    gate.log_path = Some(log_path.to_owned());
}

/// Writes one event line, unless the `result` line is already out.
pub(crate) fn write(value: &Value) {
    let gate = gate();
    if !gate.result_written {
        write_line(&mut std::io::stdout().lock(), value);
    }
}

/// Writes the `result` line, unless one is already out.
pub fn write_result(line: &ResultLine) {
    let mut gate = gate();
    if !gate.result_written {
        write_line(&mut std::io::stdout().lock(), &line.to_json());
        gate.result_written = true;
    }
}

/// For a process about to exit at once on `signal` (a second stop
/// signal): the `result` line, `interrupted`, if none is out yet. The
/// turn was not closed; the session continues with `keel exec --last`.
pub fn write_result_if_missing(signal: &str) {
    let mut gate = gate();
    if gate.result_written {
        return;
    }
    let mut line = ResultLine::failure(format!(
        "stopped at once by a second signal ({signal}) before the turn was closed; \
         `keel exec --last` continues the session"
    ));
    line.status = ExecStatus::Interrupted;
    line.session_id = gate.session_id.clone();
    line.log_path = gate.log_path.clone();
    write_line(&mut std::io::stdout().lock(), &line.to_json());
    gate.result_written = true;
}
