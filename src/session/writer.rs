//! Appends events to a session log file.
//!
//! One writer per file, owned by the session's driver task: `SessionLog` is
//! not `Clone`, and `append` takes `&mut self`, so the borrow checker gives
//! the same guarantee a dedicated writer task would (one owner, events in
//! order) without a channel hop per event. Each line goes to the kernel with
//! one `write` before `append` returns (there is no user-space buffer to
//! flush), so a crash of keel loses nothing `append` acknowledged; events
//! that must survive a power cut ([`SessionEvent::needs_sync`]) are also
//! `fdatasync`ed. After any write error the log is poisoned: every later
//! append fails too, so keel cannot go on acting without a record.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::protocol::{EventRecord, LOG_FORMAT_VERSION, SessionEvent};

use super::SessionError;
use super::faults::{Faults, kill_self};
use super::lock::SessionLock;

/// Something that watches the lines of a log as they are written: `at` is
/// the time the line's `ts` says. It must return quickly and never fail.
pub trait LogTap: Send {
    fn observe(&mut self, record: &EventRecord, at: SystemTime);
}

/// An open session log. Not `Clone`: one writer per file, and the file
/// is locked against other processes for as long as this lives.
pub struct SessionLog {
    path: PathBuf,
    lock: SessionLock,
    next_seq: u64,
    line: Vec<u8>,
    faults: Faults,
    /// Set by the first failed write; later appends refuse.
    poisoned: bool,
    /// Sees every line once it is written (`set_tap`).
    tap: Option<Box<dyn LogTap>>,
}

impl std::fmt::Debug for SessionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionLog")
            .field("path", &self.path)
            .field("next_seq", &self.next_seq)
            .field("poisoned", &self.poisoned)
            .field("tapped", &self.tap.is_some())
            .finish_non_exhaustive()
    }
}

impl SessionLog {
    /// Where [`Self::create`] puts the log of `session_id` in `dir`.
    pub fn path_in(dir: &Path, session_id: &str) -> PathBuf {
        dir.join(format!("{session_id}.jsonl"))
    }

    /// Creates `dir/<session_id>.jsonl` (and `dir`), failing if it exists,
    /// and locks it.
    pub fn create(dir: &Path, session_id: &str) -> Result<Self, SessionError> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        // Owner-only whatever the umask: a log holds the whole conversation.
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| SessionError::CreateDir { path: dir.to_owned(), source })?;
        let path = Self::path_in(dir, session_id);
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|source| SessionError::Open { path: path.clone(), source })?;
        let mut log = Self::with_lock(SessionLock::lock(&path, file)?, 0);
        log.faults = log.faults.for_created_log();
        Ok(log)
    }

    /// Appends to the log `lock` holds from `next_seq` on (the caller took
    /// the lock before reading the log, so nothing was appended since). A
    /// torn last line (no newline after a crash) is closed with a newline
    /// first, so it stays on disk as a skipped line instead of merging with
    /// the next event.
    pub fn append_to(mut lock: SessionLock, next_seq: u64) -> Result<Self, SessionError> {
        let path = lock.path().to_owned();
        let ends_open = ends_without_newline(&path)
            .map_err(|source| SessionError::Open { path: path.clone(), source })?;
        if ends_open {
            lock.file()
                .write_all(b"\n")
                .map_err(|source| SessionError::Write { path: path.clone(), source })?;
        }
        Ok(Self::with_lock(lock, next_seq))
    }

    fn with_lock(lock: SessionLock, next_seq: u64) -> Self {
        Self {
            path: lock.path().to_owned(),
            lock,
            next_seq,
            line: Vec::with_capacity(4096),
            faults: Faults::from_env(),
            poisoned: false,
            tap: None,
        }
    }

    /// Lets `tap` watch every line appended from now on.
    pub fn set_tap(&mut self, tap: Box<dyn LogTap>) {
        self.tap = Some(tap);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sequence number the next event gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends one event as one line; syncs to disk when the event says so
    /// ([`SessionEvent::needs_sync`]).
    pub fn append(&mut self, event: SessionEvent) -> Result<EventRecord, SessionError> {
        if self.poisoned {
            return Err(self.write_error(std::io::Error::other(
                "an earlier write to this log failed; nothing more is recorded",
            )));
        }
        let must_sync = event.needs_sync();
        let now = SystemTime::now();
        let record = EventRecord {
            v: LOG_FORMAT_VERSION,
            seq: self.next_seq,
            ts: humantime::format_rfc3339_millis(now).to_string(),
            event,
        };
        self.line.clear();
        serde_json::to_writer(&mut self.line, &record)
            .map_err(|source| SessionError::Encode { source })?;
        self.line.push(b'\n');
        if let Err(source) = self.write_line(record.seq, must_sync) {
            self.poisoned = true;
            return Err(self.write_error(source));
        }
        self.faults.after_write(record.seq);
        self.next_seq += 1;
        if let Some(tap) = &mut self.tap {
            tap.observe(&record, now);
        }
        Ok(record)
    }

    /// Forces everything written so far to disk.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        self.lock.file().sync_data().map_err(|source| {
            self.poisoned = true;
            SessionError::Write { path: self.path.clone(), source }
        })
    }

    fn write_line(&mut self, seq: u64, must_sync: bool) -> std::io::Result<()> {
        if let Some(error) = self.faults.write_error(seq) {
            return Err(error);
        }
        if self.faults.tears(seq) {
            let half = self.line.len() / 2;
            self.lock.file().write_all(&self.line[..half])?;
            kill_self();
        }
        self.lock.file().write_all(&self.line)?;
        if must_sync {
            self.lock.file().sync_data()?;
        }
        Ok(())
    }

    fn write_error(&self, source: std::io::Error) -> SessionError {
        SessionError::Write { path: self.path.clone(), source }
    }
}

fn ends_without_newline(path: &Path) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = File::open(path)?;
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    file.seek(SeekFrom::End(-1))?;
    let mut last = [0u8; 1];
    file.read_exact(&mut last)?;
    Ok(last[0] != b'\n')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::read_log;

    #[test]
    fn appended_events_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(dir.path(), "s1").unwrap();
        log.append(SessionEvent::UserMessage {
            text: "hi".into(),
            images: Vec::new(),
            queued: None,
        })
        .unwrap();
        log.append(SessionEvent::TurnStarted { turn: 1 }).unwrap();
        let contents = read_log(log.path()).unwrap();
        assert!(contents.warnings.is_empty());
        let seqs: Vec<u64> = contents.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [0, 1]);
        assert_eq!(
            contents.records[0].event,
            SessionEvent::UserMessage { text: "hi".into(), images: Vec::new(), queued: None }
        );
    }

    #[test]
    fn lines_have_the_documented_envelope() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(dir.path(), "s2").unwrap();
        log.append(SessionEvent::TurnStarted { turn: 1 }).unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(line["v"], 1);
        assert_eq!(line["seq"], 0);
        assert_eq!(line["type"], "turn_started");
        assert!(line["ts"].as_str().unwrap().ends_with('Z'));
    }

    #[test]
    fn refuses_to_overwrite_an_existing_log() {
        let dir = tempfile::tempdir().unwrap();
        SessionLog::create(dir.path(), "same").unwrap();
        assert!(matches!(SessionLog::create(dir.path(), "same"), Err(SessionError::Open { .. })));
    }

    #[test]
    fn appending_after_a_torn_line_keeps_it_separate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("torn.jsonl");
        std::fs::write(
            &path,
            "{\"v\":1,\"seq\":0,\"ts\":\"t\",\"type\":\"turn_started\",\"turn\":1}\n{\"v\":1,\"se",
        )
        .unwrap();
        let mut log = SessionLog::append_to(SessionLock::acquire(&path).unwrap(), 1).unwrap();
        log.append(SessionEvent::TurnStarted { turn: 2 }).unwrap();
        let contents = read_log(&path).unwrap();
        let seqs: Vec<u64> = contents.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [0, 1]);
        assert_eq!(contents.corrupt_lines, 1, "{:?}", contents.warnings);
    }

    #[test]
    fn a_failed_write_poisons_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(dir.path(), "full").unwrap();
        log.faults = Faults::from_parts(None, None, Some(1));
        log.append(SessionEvent::TurnStarted { turn: 1 }).unwrap();
        let error = log.append(SessionEvent::TurnStarted { turn: 2 }).unwrap_err();
        assert!(error.to_string().contains("no space left"), "{error}");
        log.faults = Faults::default();
        let again = log.append(SessionEvent::TurnStarted { turn: 3 }).unwrap_err();
        assert!(again.to_string().contains("earlier write"), "{again}");
        assert_eq!(read_log(log.path()).unwrap().records.len(), 1);
    }
}
