//! Appends events to a session log file.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::protocol::{EventRecord, LOG_FORMAT_VERSION, SessionEvent, ToolClass};

use super::SessionError;

/// An open session log. Not `Clone`: one writer per file.
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    file: File,
    next_seq: u64,
    line: Vec<u8>,
}

impl SessionLog {
    /// Creates `dir/<session_id>.jsonl` (and `dir`), failing if it exists.
    pub fn create(dir: &Path, session_id: &str) -> Result<Self, SessionError> {
        std::fs::create_dir_all(dir)
            .map_err(|source| SessionError::CreateDir { path: dir.to_owned(), source })?;
        let path = dir.join(format!("{session_id}.jsonl"));
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|source| SessionError::Open { path: path.clone(), source })?;
        Ok(Self { path, file, next_seq: 0, line: Vec::with_capacity(4096) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event as one line; syncs to disk when the event is a
    /// mutating tool call about to run.
    pub fn append(&mut self, event: SessionEvent) -> Result<EventRecord, SessionError> {
        let must_sync =
            matches!(event, SessionEvent::ToolCallStarted { class: ToolClass::Mutating, .. });
        let record = EventRecord {
            v: LOG_FORMAT_VERSION,
            seq: self.next_seq,
            ts: humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            event,
        };
        self.line.clear();
        serde_json::to_writer(&mut self.line, &record)
            .map_err(|source| SessionError::Encode { source })?;
        self.line.push(b'\n');
        let write_error = |source| SessionError::Write { path: self.path.clone(), source };
        self.file.write_all(&self.line).map_err(write_error)?;
        if must_sync {
            self.file.sync_data().map_err(write_error)?;
        }
        self.next_seq += 1;
        Ok(record)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::read_log;

    #[test]
    fn appended_events_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = SessionLog::create(dir.path(), "s1").unwrap();
        log.append(SessionEvent::UserMessage { text: "hi".into() }).unwrap();
        log.append(SessionEvent::TurnStarted { turn: 1 }).unwrap();
        let contents = read_log(log.path()).unwrap();
        assert!(contents.warnings.is_empty());
        let seqs: Vec<u64> = contents.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [0, 1]);
        assert_eq!(contents.records[0].event, SessionEvent::UserMessage { text: "hi".into() });
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
}
