//! A session's spend ledger read from its log and its subagents' logs
//! (`keel cost`, the TUI's `/cost`): the records go to
//! `context::ledger::Ledger`, each child's log is looked up by its
//! session id in the same folder (never at a path a log names), at most
//! [`MAX_DEPTH`] levels down.
//!
//! Invariants: only reads; a child whose log cannot be read keeps the
//! figures its parent's `subagent_finished` line carries, without a
//! breakdown; only the session's own log failing to open is an error.

use std::path::Path;

use crate::context::ledger::Ledger;

use super::{SessionError, SessionLog, read_log};

/// How deep a ledger follows subagents' logs.
pub const MAX_DEPTH: u32 = 8;

/// The ledger of the log at `path`, with its children's own ledgers from
/// their logs in `dir` (the sessions folder).
pub fn ledger_of(dir: &Path, path: &Path) -> Result<Ledger, SessionError> {
    ledger_at(dir, path, 0)
}

fn ledger_at(dir: &Path, path: &Path, depth: u32) -> Result<Ledger, SessionError> {
    let contents = read_log(path)?;
    let mut ledger = Ledger::from_records(&contents.records);
    if depth >= MAX_DEPTH {
        return Ok(ledger);
    }
    for (session_id, _) in ledger.child_logs() {
        if !is_plain_id(&session_id) {
            continue;
        }
        let child_path = SessionLog::path_in(dir, &session_id);
        if let Ok(child) = ledger_at(dir, &child_path, depth + 1) {
            ledger.attach_child(&session_id, child);
        }
    }
    Ok(ledger)
}

/// A session id that names a file in the sessions folder and nothing else.
fn is_plain_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_ids_name_a_child_log() {
        assert!(is_plain_id("0199a1b2-7c3d-7000-8000-000000000001"));
        for id in ["", "../../etc/passwd", "a/b", "x.jsonl", "id with space"] {
            assert!(!is_plain_id(id), "{id}");
        }
    }
}
