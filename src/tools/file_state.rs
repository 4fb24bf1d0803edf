//! [`FileStates`]: what this session last saw of each file, so a write or
//! edit can refuse to clobber a file the model has not read, or that changed
//! since it was read (by the user, a formatter, another process).
//!
//! Invariants: one instance per session, shared by every tool call through
//! [`crate::tools::ToolContext`]; a file's stamp is recorded when
//! `read_file` reads it and after every successful write by a tool, so the
//! model's own writes never count as outside changes. A stamp is the file's
//! length and modification time (nanoseconds), read from the same open file
//! as the content when possible; the caller gives the current stamp
//! (found beneath the root without following symlinks, `super::beneath`),
//! so nothing here looks a path up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use super::ToolError;

/// Length and modification time of a file, as last seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
}

impl Stamp {
    pub fn of(metadata: &std::fs::Metadata) -> Self {
        Self { len: metadata.len(), modified: metadata.modified().ok() }
    }

    /// The same stamp from a raw `stat` (what [`super::beneath`] sees).
    pub fn from_stat(stat: &rustix::fs::Stat) -> Self {
        let nanos =
            std::time::Duration::from_nanos(u32::try_from(stat.st_mtime_nsec).map_or(0, u64::from));
        let modified = match u64::try_from(stat.st_mtime) {
            Ok(secs) => SystemTime::UNIX_EPOCH.checked_add(std::time::Duration::from_secs(secs)),
            Err(_) => SystemTime::UNIX_EPOCH
                .checked_sub(std::time::Duration::from_secs(stat.st_mtime.unsigned_abs())),
        }
        .and_then(|time| time.checked_add(nanos));
        Self { len: u64::try_from(stat.st_size).unwrap_or(0), modified }
    }

    /// The file's length in bytes.
    pub fn bytes(&self) -> u64 {
        self.len
    }
}

/// Whether a file may be overwritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Read in this session and unchanged since.
    Fresh,
    /// Never read in this session.
    NotRead,
    /// Changed since it was last read.
    Changed,
}

/// The stamps of the files seen in one session, by canonical path.
#[derive(Debug, Default)]
pub struct FileStates {
    seen: Mutex<HashMap<PathBuf, Stamp>>,
    /// When false every file counts as fresh (one-shot `keel tool` runs,
    /// where there is no session to have read anything).
    enforce: bool,
}

impl FileStates {
    /// A tracker that enforces read-before-write.
    pub fn new() -> Self {
        Self { seen: Mutex::default(), enforce: true }
    }

    /// A tracker that lets every write through (no session history).
    pub fn unchecked() -> Self {
        Self { seen: Mutex::default(), enforce: false }
    }

    /// Records that `path` was read or written and looked like `stamp`.
    pub fn record(&self, path: &Path, stamp: Stamp) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.insert(path.to_owned(), stamp);
        }
    }

    /// Records the current state of `path`, if it can be read.
    pub fn record_path(&self, path: &Path) {
        if let Ok(metadata) = std::fs::metadata(path) {
            self.record(path, Stamp::of(&metadata));
        }
    }

    /// Forgets `path` (after it was deleted or moved away).
    pub fn forget(&self, path: &Path) {
        if let Ok(mut seen) = self.seen.lock() {
            seen.remove(path);
        }
    }

    /// `Ok` when `abs` does not exist (`current` is `None`) or may be
    /// overwritten; a [`ToolError::Conflict`] (naming `rel`) when it was not
    /// read or changed. `current` is the file's stamp now, as the caller
    /// found it (without following symlinks).
    pub fn ensure_fresh(
        &self,
        abs: &Path,
        rel: &Path,
        current: Option<Stamp>,
    ) -> Result<(), ToolError> {
        let Some(current) = current else { return Ok(()) };
        match self.check(abs, current) {
            Freshness::Fresh => Ok(()),
            freshness @ (Freshness::NotRead | Freshness::Changed) => {
                Err(ToolError::Conflict { path: rel.to_owned(), freshness })
            }
        }
    }

    /// Whether the existing file at `path`, now looking like `current`, may
    /// be overwritten.
    pub fn check(&self, path: &Path, current: Stamp) -> Freshness {
        if !self.enforce {
            return Freshness::Fresh;
        }
        let Ok(seen) = self.seen.lock() else { return Freshness::NotRead };
        match seen.get(path) {
            None => Freshness::NotRead,
            Some(stamp) if *stamp == current => Freshness::Fresh,
            Some(_) => Freshness::Changed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_fresh_and_changed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "one").unwrap();
        let states = FileStates::new();
        let stamp = Stamp::of(&std::fs::metadata(&path).unwrap());
        assert_eq!(states.check(&path, stamp), Freshness::NotRead);
        states.record(&path, stamp);
        assert_eq!(states.check(&path, stamp), Freshness::Fresh);
        std::fs::write(&path, "three").unwrap();
        let changed = Stamp::of(&std::fs::metadata(&path).unwrap());
        assert_eq!(states.check(&path, changed), Freshness::Changed);
        states.forget(&path);
        assert_eq!(states.check(&path, changed), Freshness::NotRead);
        assert_eq!(FileStates::unchecked().check(&path, changed), Freshness::Fresh);
        let raw = rustix::fs::stat(&path).unwrap();
        assert_eq!(Stamp::from_stat(&raw), changed, "both ways of stamping agree");
    }
}
