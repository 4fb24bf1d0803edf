//! Reads a session log back, tolerating a torn last line.

use std::path::Path;

use crate::protocol::EventRecord;

use super::SessionError;

/// The readable records of a log, and what had to be skipped.
#[derive(Debug, Default)]
pub struct LogContents {
    pub records: Vec<EventRecord>,
    /// One message per skipped line, naming the line number and why.
    pub warnings: Vec<String>,
}

/// Reads every record of the log at `path`. A line that does not parse is
/// skipped with a warning (a torn last line after a crash is the common
/// case); the rest of the log is kept.
pub fn read_log(path: &Path) -> Result<LogContents, SessionError> {
    let bytes = std::fs::read(path)
        .map_err(|source| SessionError::Read { path: path.to_owned(), source })?;
    let mut contents = LogContents::default();
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last_index = lines.len().saturating_sub(1);
    for (index, line) in lines.iter().enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<EventRecord>(line) {
            Ok(record) => contents.records.push(record),
            Err(error) => {
                let what = if index == last_index { "torn last line" } else { "corrupt line" };
                contents.warnings.push(format!(
                    "{}: skipped {what} {}: {error}",
                    path.display(),
                    index + 1
                ));
            }
        }
    }
    Ok(contents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn torn_last_line_is_skipped_with_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        std::fs::write(
            &path,
            "{\"v\":1,\"seq\":0,\"ts\":\"t\",\"type\":\"turn_started\",\"turn\":1}\n{\"v\":1,\"seq\":1,\"ts",
        )
        .unwrap();
        let contents = read_log(&path).unwrap();
        assert_eq!(contents.records.len(), 1);
        assert_eq!(contents.warnings.len(), 1);
        assert!(contents.warnings[0].contains("torn last line 2"), "{:?}", contents.warnings);
    }

    #[test]
    fn missing_log_is_a_read_error_naming_the_path() {
        let error = read_log(Path::new("/nonexistent/keel.jsonl")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/keel.jsonl"));
    }
}
