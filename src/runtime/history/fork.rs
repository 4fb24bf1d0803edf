//! Fork: a new session that starts as a copy of another one's
//! conversation before its prompt N (or all of it), written as a log of
//! its own (`agent::fork_lines` decides the lines: the parent's
//! `session_started` under the new id, a `forked` line naming the parent
//! and the point, then the parent's lines before the cut). The fork is then
//! resumed like any session (`keel exec resume ID`, `keel resume ID`).
//!
//! Invariants: the parent's log is only read (no lock taken, so a live
//! parent is never disturbed; the lines before the cut are already
//! written); the fork's log is created anew and never names the parent's
//! checkpoints, so an undo or a code rewind in the fork never reaches back
//! into the parent's turns (the fork's checkpoints start with its own first
//! change). The workspace is left as it is: a fork keeps the files, as
//! Claude Code's does; to also take the code back, rewind the code first.
//! Without `--at` the copy stops before a turn that has no end (running,
//! or cut off by a crash), so a fork never continues another's calls.

use std::path::{Path, PathBuf};

use crate::agent::{ForkPoint, PromptLine, RewindError, fork_lines};
use crate::protocol::SessionEvent;
use crate::session::{SessionError, SessionLog, new_session_id, read_log};

/// Why a fork was not made.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    #[error(transparent)]
    Log(#[from] SessionError),
    #[error(transparent)]
    Target(#[from] RewindError),
}

/// The fork made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    pub session_id: String,
    pub log_path: PathBuf,
    /// The prompts of the parent's conversation the fork holds.
    pub prompts: usize,
}

/// Forks the session logged at `parent_log` before its prompt `at` (or
/// whole) into a new log in `sessions_dir`.
pub fn fork(sessions_dir: &Path, parent_log: &Path, at: Option<u32>) -> Result<Forked, ForkError> {
    let records = read_log(parent_log)?.records;
    let line = PromptLine::of(&records);
    let parent_seq = match at {
        Some(number) => line.target(number)?.seq,
        None => line.end_seq(),
    };
    let parent_session = records
        .iter()
        .find_map(|record| match &record.event {
            SessionEvent::SessionStarted { session_id, .. } => Some(session_id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| {
            parent_log.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
        });
    let session_id = new_session_id();
    let point = ForkPoint {
        session_id: session_id.clone(),
        parent_session,
        parent_log: parent_log.display().to_string(),
        prompt: at,
        parent_seq,
    };
    let mut log = SessionLog::create(sessions_dir, &session_id)?;
    for event in fork_lines(&records, &point) {
        log.append(event)?;
    }
    log.sync()?;
    let prompts = line.prompts_before(parent_seq).len();
    Ok(Forked { session_id, log_path: log.path().to_owned(), prompts })
}
