//! Reads a session log back, never failing on what is inside it.
//!
//! Line by line with one reused buffer, so reading a large log needs memory
//! for one line plus whatever the caller keeps. What cannot be used is
//! skipped and reported: a torn last line (a crash mid-write) with a
//! warning, a corrupt line elsewhere skipped and counted, a line whose
//! `type` this keel does not know (a newer version wrote it) kept as raw
//! JSON and otherwise ignored. Only failing to open or read the file is an
//! error.

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::protocol::{EventRecord, SessionEvent};

use super::SessionError;

/// What a read skipped, besides the records it handed over.
#[derive(Debug, Default)]
pub struct ReadReport {
    /// One message per skipped line, naming the line number and why.
    pub warnings: Vec<String>,
    /// Unparseable lines (the torn last line included).
    pub corrupt_lines: u64,
    /// Lines of event types from a newer keel, kept verbatim.
    pub unknown: Vec<serde_json::Value>,
}

impl ReadReport {
    /// Lines that did not become records.
    pub fn skipped(&self) -> u64 {
        self.corrupt_lines + self.unknown.len() as u64
    }
}

/// Every readable record of a log, and what had to be skipped.
#[derive(Debug, Default)]
pub struct LogContents {
    pub records: Vec<EventRecord>,
    pub warnings: Vec<String>,
    pub corrupt_lines: u64,
    pub unknown: Vec<serde_json::Value>,
}

/// Reads every record of the log at `path` into memory.
pub fn read_log(path: &Path) -> Result<LogContents, SessionError> {
    let mut records = Vec::new();
    let report = for_each_record(path, |record| records.push(record))?;
    Ok(LogContents {
        records,
        warnings: report.warnings,
        corrupt_lines: report.corrupt_lines,
        unknown: report.unknown,
    })
}

/// Hands each readable record of the log at `path` to `visit`, in order.
pub fn for_each_record(
    path: &Path,
    mut visit: impl FnMut(EventRecord),
) -> Result<ReadReport, SessionError> {
    let read_error = |source| SessionError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut report = ReadReport::default();
    let mut line = Vec::with_capacity(4096);
    let mut number = 0u64;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(read_error)?;
        if read == 0 {
            return Ok(report);
        }
        number += 1;
        let terminated = line.last() == Some(&b'\n');
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<EventRecord>(&line) {
            Ok(record) => visit(record),
            Err(error) => skip(path, number, terminated, &line, error, &mut report),
        }
    }
}

fn skip(
    path: &Path,
    number: u64,
    terminated: bool,
    line: &[u8],
    error: serde_json::Error,
    report: &mut ReadReport,
) {
    if let Some((kind, raw)) = newer_event(line) {
        report.warnings.push(format!(
            "{}: ignored line {number}: event type `{kind}` is from a newer keel",
            path.display()
        ));
        report.unknown.push(raw);
        return;
    }
    report.corrupt_lines += 1;
    let what = if terminated { "corrupt line" } else { "torn last line" };
    report.warnings.push(format!("{}: skipped {what} {number}: {error}", path.display()));
}

/// A well-formed line whose `type` this version does not know.
fn newer_event(line: &[u8]) -> Option<(String, serde_json::Value)> {
    let raw: serde_json::Value = serde_json::from_slice(line).ok()?;
    let kind = raw.get("type")?.as_str()?.to_owned();
    raw.get("seq")?.as_u64()?;
    if SessionEvent::TYPES.contains(&kind.as_str()) {
        return None;
    }
    Some((kind, raw))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "{\"v\":1,\"seq\":0,\"ts\":\"t\",\"type\":\"turn_started\",\"turn\":1}\n";

    fn read(text: &str) -> LogContents {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, text).unwrap();
        read_log(&path).unwrap()
    }

    #[test]
    fn torn_last_line_is_skipped_with_a_warning() {
        let contents = read(&format!("{GOOD}{{\"v\":1,\"seq\":1,\"ts"));
        assert_eq!(contents.records.len(), 1);
        assert_eq!(contents.warnings.len(), 1);
        assert!(contents.warnings[0].contains("torn last line 2"), "{:?}", contents.warnings);
    }

    #[test]
    fn corrupt_middle_line_is_skipped_and_counted() {
        let contents = read(&format!("{GOOD}not json at all\n{GOOD}"));
        assert_eq!(contents.records.len(), 2);
        assert_eq!(contents.corrupt_lines, 1);
        assert!(contents.warnings[0].contains("corrupt line 2"), "{:?}", contents.warnings);
    }

    #[test]
    fn unknown_event_types_are_kept_raw_and_ignored() {
        let newer = "{\"v\":2,\"seq\":1,\"ts\":\"t\",\"type\":\"hologram\",\"x\":1}\n";
        let contents = read(&format!("{GOOD}{newer}{GOOD}"));
        assert_eq!(contents.records.len(), 2);
        assert_eq!(contents.corrupt_lines, 0);
        assert_eq!(contents.unknown.len(), 1);
        assert_eq!(contents.unknown[0]["x"], 1);
        assert!(contents.warnings[0].contains("hologram"), "{:?}", contents.warnings);
    }

    #[test]
    fn a_known_type_with_a_broken_shape_is_corrupt() {
        let broken = "{\"v\":1,\"seq\":1,\"ts\":\"t\",\"type\":\"turn_started\"}\n";
        let contents = read(&format!("{GOOD}{broken}"));
        assert_eq!(contents.corrupt_lines, 1);
        assert!(contents.unknown.is_empty());
    }

    #[test]
    fn missing_log_is_a_read_error_naming_the_path() {
        let error = read_log(Path::new("/nonexistent/keel.jsonl")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/keel.jsonl"));
    }
}
