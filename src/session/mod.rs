//! The session log: one append-only JSONL file per session under
//! `$KEEL_HOME/sessions/`, the single source of truth a session is rebuilt
//! from.
//!
//! Invariants: lines are only ever appended; `seq` increases by one per line
//! starting at 0 (a resume continues the count); each line is written with
//! one `write` call before `append` returns; a mutating tool call is also
//! synced to disk before it runs (write-ahead), as are turn and session
//! ends. Write failures are returned, never swallowed, and poison the log.
//! One process at a time appends: the writer holds an exclusive `flock` on
//! the log for its whole life ([`SessionLock`]).
//! Reading never fails on content: torn, corrupt and newer-version lines
//! are skipped and reported. The event types are documented in
//! [`crate::protocol::SessionEvent`]'s module.
//!
//! Files: `writer.rs` (one `write` per event, sync before side effects and at turn and session end,
//! poisoned after a failed write; test fault hooks in `faults.rs`), `lock.rs` (the one-writer
//! lock), `reader.rs` (streaming and tolerant: unreadable lines handed to the caller in place, many
//! summed up in one warning), `list.rs` (listing and lookup, live sessions marked), `hash.rs`
//! (content hashes), `ledger_logs.rs` (a session's `context::ledger::Ledger` with its subagents'
//! from their logs), `stats_index.rs` (`$KEEL_HOME/stats-index.jsonl`: each log's
//! `context::stats::SessionStats`, read again only when the log changed), `images.rs` (the image store: images the logs
//! reference, once each by SHA-256 under `sessions/images/`), `outputs.rs` (kept outputs: a cut
//! command output whole, masked and bounded, under `outputs/<session-id>/`, for `read_file`).

mod faults;
#[cfg(test)]
mod fuzz_tests;
mod hash;
mod images;
mod ledger_logs;
mod list;
mod lock;
mod outputs;
mod reader;
mod stats_index;
mod writer;

use std::path::{Path, PathBuf};

pub use faults::kill_self;
pub use hash::{content_hash, file_hash};
pub use images::{ImageStore, ImageStoreError};
pub use ledger_logs::ledger_of;
pub use list::{
    FindError, SessionSummary, find_by_prefix, list_sessions, logged_cwd, logged_model,
    logged_parent, newest_first_in_folder, newest_in_folder, summarize,
};
pub use lock::{LockHolder, SessionLock, holder as lock_holder};
pub use outputs::{
    Kept, KeptOutputError, KeptOutputs, MAX_KEPT_BYTES, MAX_SESSION_BYTES, outputs_dir,
    remove_orphaned_outputs, remove_session_outputs, session_outputs_dir,
};
pub use reader::{LogContents, LogEntry, ReadReport, for_each_entry, for_each_record, read_log};
pub use stats_index::{INDEX_FILE, Indexed, index_session, session_stats};
pub use writer::{LogTap, SessionLog};

/// Why a log could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("cannot create the sessions folder {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot open session log {path}: {source}")]
    Open { path: PathBuf, source: std::io::Error },
    #[error("cannot write session log {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("cannot read session log {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot encode a log event: {source}")]
    Encode { source: serde_json::Error },
    #[error(
        "session log {path} is in use by {holder}; one process at a time may continue a \
         session: wait for it to finish or stop it (a crashed keel holds nothing)"
    )]
    Locked { path: PathBuf, holder: String },
}

/// The folder holding session logs.
pub fn sessions_dir(keel_home: &Path) -> PathBuf {
    keel_home.join("sessions")
}

/// A new session id: a UUIDv7, so ids (and file names) sort by start time.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().to_string()
}
