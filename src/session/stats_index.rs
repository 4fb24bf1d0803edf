//! The stats index: one [`SessionStats`] per session log, cached in
//! `$KEEL_HOME/stats-index.jsonl` so `keel stats` reads a log once, not
//! on every call.
//!
//! Each line is `{"file":"ID.jsonl","len":N,"mtime_ns":N,"stats":{…}}`;
//! the last line for a file wins. A session appends its line when it
//! ends ([`index_session`], one `write` on an `O_APPEND` file created
//! 0600), so `keel stats` usually finds every log indexed. An entry
//! stands while its log's length and modification time are unchanged; a
//! log that is new, grew (a resume, a running session) or was never
//! indexed (an older keel, a crash) is read again by `keel stats` and its
//! entry replaced; entries of logs that are gone are dropped. `keel
//! stats` rewrites the index whole when it read a log or found stale or
//! repeated lines: to a temporary file created 0600 beside it, renamed
//! over it (a reader never sees half an index; a line a session appends
//! meanwhile may be lost, and that log is read again next time).
//!
//! Invariants: the index is a cache, never a source of truth: a damaged
//! or unreadable index, or a line of it, is read as missing and rebuilt
//! from the logs; failing to write it is a warning, never a failure.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::context::stats::SessionStats;

use super::{for_each_record, sessions_dir};

/// The index file's name under `$KEEL_HOME`.
pub const INDEX_FILE: &str = "stats-index.jsonl";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Entry {
    file: String,
    len: u64,
    mtime_ns: i128,
    stats: SessionStats,
}

/// What [`session_stats`] found and did.
#[derive(Debug, Default)]
pub struct Indexed {
    /// One per readable log, in file-name order (ids sort by start time).
    pub sessions: Vec<SessionStats>,
    /// Logs read this time (the rest came from the index).
    pub read: usize,
    /// Logs that could not be read, an index that could not be written.
    pub warnings: Vec<String>,
}

/// The stats of every session log under `keel_home`, from the index where
/// it holds, else from the log (then the index is updated).
pub fn session_stats(keel_home: &Path) -> Indexed {
    let index_path = keel_home.join(INDEX_FILE);
    let (mut known, lines) = read_index(&index_path);
    let mut indexed = Indexed::default();
    let mut entries = Vec::new();
    let mut changed = false;
    for path in super::list::log_paths(&sessions_dir(keel_home)) {
        let Some(file) = path.file_name().map(|name| name.to_string_lossy().into_owned()) else {
            continue;
        };
        let Ok(meta) = std::fs::metadata(&path) else { continue };
        let (len, mtime_ns) = (meta.len(), modified_ns(&meta));
        let entry = match known.remove(&file) {
            Some(entry) if entry.len == len && entry.mtime_ns == mtime_ns => entry,
            Some(_) | None => match read_stats(&path) {
                Ok(stats) => {
                    changed = true;
                    indexed.read += 1;
                    Entry { file, len, mtime_ns, stats }
                }
                Err(warning) => {
                    indexed.warnings.push(warning);
                    continue;
                }
            },
        };
        entries.push(entry);
    }
    changed |= !known.is_empty() || lines != entries.len();
    if changed {
        if let Err(error) = write_index(&index_path, &entries) {
            let shown = index_path.display();
            indexed.warnings.push(format!("cannot update the stats index {shown}: {error}"));
        }
    }
    indexed.sessions = entries.into_iter().map(|entry| entry.stats).collect();
    indexed
}

fn modified_ns(meta: &std::fs::Metadata) -> i128 {
    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
}

fn read_stats(path: &Path) -> Result<SessionStats, String> {
    let mut records = Vec::new();
    for_each_record(path, |record| records.push(record)).map_err(|error| error.to_string())?;
    Ok(SessionStats::from_records(records))
}

/// The index's entries by file name (the last line of each wins) and
/// how many lines it has; nothing when it is missing or unreadable,
/// without the lines that do not parse.
fn read_index(path: &Path) -> (HashMap<String, Entry>, usize) {
    let Ok(file) = std::fs::File::open(path) else { return (HashMap::new(), 0) };
    let mut lines = 0;
    let mut entries = HashMap::new();
    for line in BufReader::new(file).lines().map_while(Result::ok) {
        lines += 1;
        if let Ok(entry) = serde_json::from_str::<Entry>(&line) {
            entries.insert(entry.file.clone(), entry);
        }
    }
    (entries, lines)
}

/// Adds the log at `log_path` to the index under `keel_home` (a session
/// that ends): its stats, one line appended. Best effort: the index is a
/// cache, and `keel stats` reads a log it misses.
pub fn index_session(keel_home: &Path, log_path: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(log_path)?;
    let file = log_path.file_name().map(|name| name.to_string_lossy().into_owned());
    let Some(file) = file else { return Ok(()) };
    let stats = read_stats(log_path).map_err(std::io::Error::other)?;
    let entry = Entry { file, len: meta.len(), mtime_ns: modified_ns(&meta), stats };
    let mut line = serde_json::to_vec(&entry)?;
    line.push(b'\n');
    let mut index = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(keel_home.join(INDEX_FILE))?;
    index.write_all(&line)
}

fn write_index(path: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let temp = temp_path(path);
    let written = (|| {
        let file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&temp)?;
        let mut out = std::io::BufWriter::new(file);
        for entry in entries {
            serde_json::to_writer(&mut out, entry)?;
            out.write_all(b"\n")?;
        }
        out.into_inner().map_err(std::io::IntoInnerError::into_error)?.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.tmp", std::process::id()));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::SessionEvent;
    use crate::session::SessionLog;
    use std::os::unix::fs::PermissionsExt;

    fn log(home: &Path, id: &str) -> PathBuf {
        let mut log = SessionLog::create(&sessions_dir(home), id).unwrap();
        log.append(SessionEvent::SessionStarted {
            session_id: id.into(),
            cwd: "/p".into(),
            provider: "openai".into(),
            model: "gpt-5".into(),
            keel_version: "0".into(),
            git_head: None,
            mode: None,
            parent: None,
        })
        .unwrap();
        log.path().to_owned()
    }

    #[test]
    fn logs_are_read_once_and_again_when_they_change() {
        let home = tempfile::tempdir().unwrap();
        log(home.path(), "a");
        let path = log(home.path(), "b");
        let first = session_stats(home.path());
        assert_eq!((first.sessions.len(), first.read), (2, 2), "{:?}", first.warnings);
        let index = home.path().join(INDEX_FILE);
        let mode = std::fs::metadata(&index).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let second = session_stats(home.path());
        assert_eq!((second.sessions, second.read), (first.sessions, 0));
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"v\":1,\"seq\":1,\"ts\":\"t\",\"type\":\"turn_started\",\"turn\":1}\n")
            .unwrap();
        assert_eq!(session_stats(home.path()).read, 1, "the grown log is read again");
        std::fs::write(&index, "garbage\n").unwrap();
        let rebuilt = session_stats(home.path());
        assert_eq!((rebuilt.sessions.len(), rebuilt.read), (2, 2));
    }

    #[test]
    fn a_session_that_ends_is_indexed_and_never_read_by_stats() {
        let home = tempfile::tempdir().unwrap();
        let path = log(home.path(), "a");
        index_session(home.path(), &path).unwrap();
        let index = home.path().join(INDEX_FILE);
        let mode = std::fs::metadata(&index).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let stats = session_stats(home.path());
        assert_eq!((stats.sessions.len(), stats.read), (1, 0), "{:?}", stats.warnings);
        assert_eq!(stats.sessions[0].session_id, "a");
        // Indexed twice (a resumed session ends again): the last line wins,
        // and stats folds the repeats into one.
        index_session(home.path(), &path).unwrap();
        assert_eq!(session_stats(home.path()).read, 0);
        assert_eq!(std::fs::read_to_string(&index).unwrap().lines().count(), 1);
    }
}
