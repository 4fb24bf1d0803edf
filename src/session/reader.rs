//! Reads a session log back, never failing on what is inside it.
//!
//! Line by line with one reused buffer, so reading a large log needs memory
//! for one line plus whatever the caller keeps. What cannot be used is
//! skipped and reported: a torn last line (a crash mid-write), a corrupt
//! line elsewhere skipped and counted, a line whose `type` this keel does
//! not know (a newer version wrote it) kept as raw JSON and otherwise
//! ignored. Only failing to open or read the file is an error.
//!
//! Reporting stays readable on a badly damaged log: up to
//! [`DETAILED_WARNINGS`] skipped lines get a warning each, more get one
//! summary line (a log damaged on 198 000 lines used to print 198 000
//! warnings). [`for_each_entry`] also hands the unreadable lines to the
//! caller in place, so a rebuild can tell where the damage is.

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::protocol::{EventRecord, SessionEvent};

use super::SessionError;

/// Skipped lines named one by one; past this many, one summary line.
pub const DETAILED_WARNINGS: usize = 3;

/// One line of a log as read: a record, or a line that could not be used.
// Handed over by value one line at a time: boxing the record would cost an
// allocation per line for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum LogEntry {
    Record(EventRecord),
    /// A line that is not a record (torn or corrupt); `torn` when it is the
    /// last line and has no newline (the writer died in the middle of it).
    Unreadable {
        line: u64,
        torn: bool,
    },
}

/// What a read skipped, besides the records it handed over.
#[derive(Debug, Default)]
pub struct ReadReport {
    /// What was skipped and why: one message per line for a few lines,
    /// else one summary.
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
    for_each_entry(path, |entry| match entry {
        LogEntry::Record(record) => visit(record),
        LogEntry::Unreadable { .. } => {}
    })
}

/// Hands each line of the log at `path` to `visit`, in order: records, and
/// the lines that could not be read where they are (a newer keel's event
/// types are neither: they are kept in the report).
pub fn for_each_entry(
    path: &Path,
    mut visit: impl FnMut(LogEntry),
) -> Result<ReadReport, SessionError> {
    let read_error = |source| SessionError::Read { path: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let mut skipped = Skipped::default();
    let mut line = Vec::with_capacity(4096);
    let mut number = 0u64;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(read_error)?;
        if read == 0 {
            return Ok(skipped.into_report(path));
        }
        number += 1;
        let terminated = line.last() == Some(&b'\n');
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<EventRecord>(&line) {
            Ok(record) => visit(LogEntry::Record(record)),
            Err(error) => {
                if let Some((kind, raw)) = newer_event(&line) {
                    skipped.newer(number, kind, raw);
                } else {
                    skipped.unreadable(number, terminated, &error);
                    visit(LogEntry::Unreadable { line: number, torn: !terminated });
                }
            }
        }
    }
}

/// The skipped lines of one read, to be reported once it is done.
#[derive(Debug, Default)]
struct Skipped {
    /// The first few, in full: line number and message.
    details: Vec<(u64, String)>,
    corrupt: u64,
    torn: bool,
    unknown: Vec<serde_json::Value>,
    first: Option<u64>,
    last: u64,
}

impl Skipped {
    fn note(&mut self, number: u64, message: impl FnOnce() -> String) {
        self.first.get_or_insert(number);
        self.last = number;
        if self.details.len() <= DETAILED_WARNINGS {
            self.details.push((number, message()));
        }
    }

    fn newer(&mut self, number: u64, kind: String, raw: serde_json::Value) {
        self.note(number, || {
            format!("ignored line {number}: event type `{kind}` is from a newer keel")
        });
        self.unknown.push(raw);
    }

    fn unreadable(&mut self, number: u64, terminated: bool, error: &serde_json::Error) {
        self.corrupt += 1;
        self.torn |= !terminated;
        let what = if terminated { "corrupt line" } else { "torn last line" };
        self.note(number, || format!("skipped {what} {number}: {error}"));
    }

    fn into_report(self, path: &Path) -> ReadReport {
        let total = self.corrupt + self.unknown.len() as u64;
        let shown = path.display();
        let warnings = if total as usize <= DETAILED_WARNINGS {
            self.details.into_iter().map(|(_, message)| format!("{shown}: {message}")).collect()
        } else {
            let (first, last) = (self.first.unwrap_or_default(), self.last);
            let (_, example) = self.details.first().cloned().unwrap_or_default();
            let mut summary = format!(
                "{shown}: skipped {total} lines between lines {first} and {last} \
                 ({} unreadable, {} from a newer keel); the first: {example}",
                self.corrupt,
                self.unknown.len()
            );
            if self.torn {
                summary.push_str("; the last line is torn (keel stopped while writing it)");
            }
            vec![summary]
        };
        ReadReport { warnings, corrupt_lines: self.corrupt, unknown: self.unknown }
    }
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
    fn many_skipped_lines_are_one_summary_line() {
        let mut text = String::from(GOOD);
        for _ in 0..5000 {
            text.push_str("garbage\n");
        }
        text.push_str(GOOD);
        text.push_str("{\"v\":1,\"se");
        let contents = read(&text);
        assert_eq!(contents.records.len(), 2);
        assert_eq!(contents.corrupt_lines, 5001);
        assert_eq!(contents.warnings.len(), 1, "{:?}", contents.warnings);
        let summary = &contents.warnings[0];
        assert!(summary.contains("skipped 5001 lines between lines 2 and 5003"), "{summary}");
        assert!(summary.contains("corrupt line 2") && summary.contains("torn"), "{summary}");
    }

    #[test]
    fn unreadable_lines_are_handed_over_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(&path, format!("{GOOD}junk\n{GOOD}{{\"v\"")).unwrap();
        let mut seen = Vec::new();
        for_each_entry(&path, |entry| {
            seen.push(match entry {
                LogEntry::Record(record) => format!("r{}", record.seq),
                LogEntry::Unreadable { line, torn } => format!("u{line}{torn}"),
            });
        })
        .unwrap();
        assert_eq!(seen, ["r0", "u2false", "r0", "u4true"]);
    }

    #[test]
    fn missing_log_is_a_read_error_naming_the_path() {
        let error = read_log(Path::new("/nonexistent/keel.jsonl")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/keel.jsonl"));
    }
}
