//! A session's past, read back: resume from the log (`resume.rs`, with the read-before-write
//! memory it rebuilds in `file_memory.rs`), rewind to before a prompt (`rewind.rs`), fork a new
//! session from another's log (`fork.rs`) and the offline replay of a recorded session
//! (`replay.rs`).
//!
//! Invariant: none of these writes a line to another session's log; a rewind and a resume append
//! to their own session's log through `step`, a fork writes a new log.

pub(super) mod file_memory;
pub(super) mod fork;
pub(super) mod replay;
pub(super) mod resume;
pub(super) mod rewind;
