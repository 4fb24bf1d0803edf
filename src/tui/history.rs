//! The prompt history kept across runs: one file, `$KEEL_HOME/history.jsonl`,
//! one JSON line per prompt sent (`{"dir": folder, "text": prompt}`), read
//! at start for the folder keel runs in (so `keel`, `keel resume` and
//! `/resume` share it) and appended to by the driver after each prompt.
//!
//! Invariants: the file is created owner-only (0600) and narrowed to it if
//! found wider, never through a symlink (`O_NOFOLLOW`); it is bounded: a
//! prompt over [`MAX_ENTRY_BYTES`] is not kept, and once the file holds
//! more than [`MAX_ENTRIES`] + [`TRIM_SLACK`] lines it is rewritten (a
//! private temporary file renamed over it) with the newest [`MAX_ENTRIES`];
//! a read stops at [`MAX_FILE_BYTES`]. Lines that do not parse are
//! skipped. A failure is returned for the caller to show once; history is
//! a convenience and never stops a session.

use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Prompts kept, over every folder.
pub const MAX_ENTRIES: usize = 1_000;
/// Lines past [`MAX_ENTRIES`] before the file is trimmed.
pub const TRIM_SLACK: usize = 100;
/// A longer prompt (a big paste) is sent but not kept.
pub const MAX_ENTRY_BYTES: usize = 16 * 1024;
/// Most of the file ever read.
pub const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

const FILE_NAME: &str = "history.jsonl";
const MODE: u32 = 0o600;

/// Why the history could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error("cannot read the prompt history {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the prompt history {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Entry {
    dir: String,
    text: String,
}

/// Where the history lives under `keel_home`.
pub fn path(keel_home: &Path) -> PathBuf {
    keel_home.join(FILE_NAME)
}

/// The prompts sent in `dir`, oldest first (at most [`MAX_ENTRIES`]).
/// No file yet: none.
pub fn load(keel_home: &Path, dir: &Path) -> Result<Vec<String>, HistoryError> {
    let path = path(keel_home);
    let dir = dir.display().to_string();
    let entries = match read_entries(&path) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(HistoryError::Read { path, source }),
    };
    let mine: Vec<String> =
        entries.into_iter().filter(|entry| entry.dir == dir).map(|entry| entry.text).collect();
    let skip = mine.len().saturating_sub(MAX_ENTRIES);
    Ok(mine.into_iter().skip(skip).collect())
}

/// Appends `text` as sent in `dir`, then trims the file if it grew past
/// its bound. Blank or oversized prompts are not kept.
pub fn append(keel_home: &Path, dir: &Path, text: &str) -> Result<(), HistoryError> {
    if text.trim().is_empty() || text.len() > MAX_ENTRY_BYTES {
        return Ok(());
    }
    let path = path(keel_home);
    let entry = Entry { dir: dir.display().to_string(), text: text.to_owned() };
    let mut line = serde_json::to_string(&entry).unwrap_or_default();
    line.push('\n');
    let write = |path: &Path| -> std::io::Result<()> {
        let mut file = open_private(path, false)?;
        file.write_all(line.as_bytes())
    };
    write(&path).map_err(|source| HistoryError::Write { path: path.clone(), source })?;
    trim(&path).map_err(|source| HistoryError::Write { path, source })
}

/// Opens (creating it 0600) for appending, or truncated for `fresh`; a
/// file found with wider bits is narrowed. Never follows a symlink.
fn open_private(path: &Path, fresh: bool) -> std::io::Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(!fresh)
        .write(true)
        .truncate(fresh)
        .mode(MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(MODE))?;
    }
    Ok(file)
}

fn read_entries(path: &Path) -> std::io::Result<Vec<Entry>> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    // Cut inside a char at the bound: the lines that parse are kept.
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.lines().filter_map(|line| serde_json::from_str(line).ok()).collect())
}

/// Keeps the newest [`MAX_ENTRIES`] once the file holds more than
/// [`MAX_ENTRIES`] + [`TRIM_SLACK`] lines.
fn trim(path: &Path) -> std::io::Result<()> {
    let entries = read_entries(path)?;
    if entries.len() <= MAX_ENTRIES + TRIM_SLACK {
        return Ok(());
    }
    let keep = &entries[entries.len() - MAX_ENTRIES..];
    let temp = path.with_extension("jsonl.tmp");
    let _ = std::fs::remove_file(&temp);
    let mut file = open_private(&temp, true)?;
    for entry in keep {
        let mut line = serde_json::to_string(entry).unwrap_or_default();
        line.push('\n');
        file.write_all(line.as_bytes())?;
    }
    file.sync_all()?;
    std::fs::rename(&temp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompts_are_kept_per_folder_in_an_owner_only_file() {
        let home = tempfile::tempdir().unwrap();
        let (a, b) = (Path::new("/work/a"), Path::new("/work/b"));
        append(home.path(), a, "first in a").unwrap();
        append(home.path(), b, "in b").unwrap();
        append(home.path(), a, "second\nin a").unwrap();
        append(home.path(), a, "   ").unwrap();
        assert_eq!(load(home.path(), a).unwrap(), ["first in a", "second\nin a"]);
        assert_eq!(load(home.path(), b).unwrap(), ["in b"]);
        let mode = std::fs::metadata(path(home.path())).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn no_file_is_no_history_and_a_wide_file_is_narrowed() {
        let home = tempfile::tempdir().unwrap();
        assert!(load(home.path(), Path::new("/x")).unwrap().is_empty());
        std::fs::write(path(home.path()), "not json\n").unwrap();
        std::fs::set_permissions(path(home.path()), std::fs::Permissions::from_mode(0o644))
            .unwrap();
        append(home.path(), Path::new("/x"), "kept").unwrap();
        assert_eq!(load(home.path(), Path::new("/x")).unwrap(), ["kept"]);
        let mode = std::fs::metadata(path(home.path())).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn the_file_is_bounded() {
        let home = tempfile::tempdir().unwrap();
        let dir = Path::new("/w");
        for n in 0..MAX_ENTRIES + TRIM_SLACK + 5 {
            append(home.path(), dir, &format!("prompt {n}")).unwrap();
        }
        let kept = load(home.path(), dir).unwrap();
        assert!(kept.len() <= MAX_ENTRIES, "{}", kept.len());
        assert_eq!(kept.last().unwrap(), &format!("prompt {}", MAX_ENTRIES + TRIM_SLACK + 4));
        let lines = std::fs::read_to_string(path(home.path())).unwrap().lines().count();
        assert!(lines <= MAX_ENTRIES + TRIM_SLACK, "{lines}");
        append(home.path(), dir, &"x".repeat(MAX_ENTRY_BYTES + 1)).unwrap();
        assert_ne!(load(home.path(), dir).unwrap().last().unwrap().len(), MAX_ENTRY_BYTES + 1);
    }

    #[test]
    fn a_symlink_in_its_place_is_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let target = home.path().join("elsewhere");
        std::fs::write(&target, "").unwrap();
        std::os::unix::fs::symlink(&target, path(home.path())).unwrap();
        assert!(append(home.path(), Path::new("/w"), "secret prompt").is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "");
    }
}
