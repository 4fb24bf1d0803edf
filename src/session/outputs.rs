//! Kept outputs: the whole output of a command whose result was cut for
//! the model, kept for the session under `$KEEL_HOME/outputs/<session-id>/`
//! (one file per cut result, `<n>-<call id>.txt`), so the model reads the
//! middle with `read_file` instead of running a long build again. The
//! shell tool and `process_output` keep through a session's
//! [`KeptOutputs`] (`ToolContext::kept`); `read_file` reads exactly that
//! session's folder ([`KeptOutputs::dir`]), nothing else of KEEL_HOME.
//!
//! Invariants: a kept file holds what the model could have seen, never
//! more: the session's secret mask is applied before a byte is written
//! (the same mask `runtime/execute.rs` applies to the result); a file is at
//! most [`MAX_KEPT_BYTES`] (the caller fits its output to that; a mask that
//! lengthens it is cut back here) and a session's folder at most
//! [`MAX_SESSION_BYTES`], the oldest files removed first to make room;
//! the folders are created 0700 and the files 0600 (`create_new`, never
//! following a symlink), whatever the umask; a resumed session (same id)
//! finds its folder and counts what is already there; a fork reads (never
//! writes) the folders of the sessions it was forked from, whose files its
//! copied history names. A session's folder
//! lives as long as its log: when a session first keeps, the folders of
//! sessions whose log is gone from `sessions/` are removed
//! ([`remove_orphaned_outputs`]; keel has no command removing sessions, the
//! user deletes logs by hand); [`remove_session_outputs`] removes one.
//! All sessions' folders together stay near [`MAX_TOTAL_BYTES`]: past it,
//! at a session's first keep, the folders of other sessions go, least
//! recently written first, never the keeping session's nor a live one's
//! (its log locked), so the bound may be passed while those hold more.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::display::SecretMask;

/// The most kept of one output (stdout and stderr together).
pub const MAX_KEPT_BYTES: usize = 8 * 1024 * 1024;
/// The most kept for one session; the oldest files go first past it.
pub const MAX_SESSION_BYTES: u64 = 64 * 1024 * 1024;
/// The most kept for all sessions together; past it, when a session first
/// keeps, the least recently written folders of other sessions go first
/// (never one whose log is locked: a live session's).
pub const MAX_TOTAL_BYTES: u64 = 512 * 1024 * 1024;

const DIR_MODE: u32 = 0o700;
const FILE_MODE: u32 = 0o600;

/// Why an output could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum KeptOutputError {
    #[error("cannot keep the output in {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
}

/// The folder of every session's kept outputs.
pub fn outputs_dir(keel_home: &Path) -> PathBuf {
    keel_home.join("outputs")
}

/// The kept outputs of the session `session_id` (a name of one component:
/// anything else is made one).
pub fn session_outputs_dir(keel_home: &Path, session_id: &str) -> PathBuf {
    outputs_dir(keel_home).join(file_name_part(session_id))
}

/// Removes the kept outputs of the session `session_id` (none: nothing to do).
pub fn remove_session_outputs(keel_home: &Path, session_id: &str) -> std::io::Result<()> {
    match std::fs::remove_dir_all(session_outputs_dir(keel_home, session_id)) {
        Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
        Ok(()) | Err(_) => Ok(()),
    }
}

/// Removes the kept outputs of every session whose log is gone from
/// `$KEEL_HOME/sessions/` (removed by the user): what they kept goes with
/// them. Returns how many folders were removed.
pub fn remove_orphaned_outputs(keel_home: &Path) -> usize {
    remove_orphans_but(keel_home, None)
}

/// [`remove_orphaned_outputs`], leaving `own` (a session keeping now) alone.
fn remove_orphans_but(keel_home: &Path, own: Option<&Path>) -> usize {
    let sessions = super::sessions_dir(keel_home);
    let Ok(entries) = std::fs::read_dir(outputs_dir(keel_home)) else { return 0 };
    let orphans: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| {
            let id = entry.file_name().to_string_lossy().into_owned();
            !super::SessionLog::path_in(&sessions, &id).exists()
                && own.is_none_or(|own| entry.path() != own)
        })
        .map(|entry| entry.path())
        .collect();
    // A symlink is removed itself, never followed.
    orphans.iter().filter(|path| std::fs::remove_dir_all(path).is_ok()).count()
}

/// Removes other sessions' folders, least recently written first, until
/// all of them with `own` hold at most `bound`; never `own`, never a live
/// session's (its log locked). Returns how many were removed.
fn trim_all_but(keel_home: &Path, own: &Path, bound: u64) -> usize {
    let sessions = super::sessions_dir(keel_home);
    let Ok(entries) = std::fs::read_dir(outputs_dir(keel_home)) else { return 0 };
    let mut folders: Vec<(std::time::SystemTime, PathBuf, u64)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let meta = std::fs::symlink_metadata(entry.path()).ok()?;
            let size: u64 = existing_files(&entry.path()).iter().map(|(_, size)| size).sum();
            let written = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
            Some((written, entry.path(), size))
        })
        .collect();
    let mut total: u64 = folders.iter().map(|(_, _, size)| size).sum();
    folders.sort();
    let mut removed = 0;
    for (_, path, size) in folders {
        if total <= bound {
            break;
        }
        let id = path.file_name().map(|name| name.to_string_lossy().into_owned());
        let live = id.is_some_and(|id| {
            super::lock_holder(&super::SessionLog::path_in(&sessions, &id)).is_some()
        });
        if path == own || live {
            continue;
        }
        // A symlink is removed itself, never followed.
        if std::fs::remove_dir_all(&path).is_ok() {
            total = total.saturating_sub(size);
            removed += 1;
        }
    }
    removed
}

/// One kept output, as the result that was cut names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    pub path: PathBuf,
    pub bytes: u64,
    pub lines: u64,
}

/// A session's kept outputs.
#[derive(Debug)]
pub struct KeptOutputs {
    home: PathBuf,
    dir: PathBuf,
    /// The folders of the sessions this one was forked from: its history
    /// names their files. Read, never written.
    ancestors: Vec<PathBuf>,
    mask: Arc<SecretMask>,
    per_session: u64,
    /// The bound on all sessions' folders together.
    total: u64,
    /// What is kept; `None` until the first keep reads the folder (a
    /// resumed session's files count).
    files: Mutex<Option<Ledger>>,
}

impl KeptOutputs {
    /// The kept outputs of `session_id` under `keel_home`, masked by `mask`.
    pub fn new(keel_home: &Path, session_id: &str, mask: Arc<SecretMask>) -> Self {
        Self {
            home: keel_home.to_owned(),
            dir: session_outputs_dir(keel_home, session_id),
            ancestors: Vec::new(),
            mask,
            per_session: MAX_SESSION_BYTES,
            total: MAX_TOTAL_BYTES,
            files: Mutex::new(None),
        }
    }

    /// The same store with another per-session bound (tests).
    #[cfg(test)]
    fn with_session_bound(mut self, bytes: u64) -> Self {
        self.per_session = bytes;
        self
    }

    /// The same store with another bound on all sessions' folders (tests).
    #[cfg(test)]
    fn with_total_bound(mut self, bytes: u64) -> Self {
        self.total = bytes;
        self
    }

    /// The same store reading the folders of `sessions` too (those a fork
    /// was made from).
    #[must_use]
    pub fn reading_also(mut self, keel_home: &Path, sessions: &[String]) -> Self {
        self.ancestors = sessions.iter().map(|id| session_outputs_dir(keel_home, id)).collect();
        self
    }

    /// The session's folder, where it keeps.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folders `read_file` reads below KEEL_HOME: the session's and
    /// those of the sessions it was forked from.
    pub fn readable(&self) -> impl Iterator<Item = &Path> {
        std::iter::once(self.dir.as_path()).chain(self.ancestors.iter().map(PathBuf::as_path))
    }

    /// Keeps `text`, the whole output of the call `call_id`, masked and
    /// bounded (the module doc), removing the oldest files past the
    /// session's bound. Blocking.
    pub fn keep(&self, call_id: &str, text: &str) -> Result<Kept, KeptOutputError> {
        let masked = self.mask.mask(text);
        let bytes = cut_to(&masked, MAX_KEPT_BYTES);
        let write_error = |path: &Path| {
            let path = path.to_owned();
            move |source| KeptOutputError::Write { path, source }
        };
        let mut files = self.files.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if files.is_none() {
            // Once a session, when it first keeps: sessions removed since go.
            remove_orphans_but(&self.home, Some(&self.dir));
            trim_all_but(&self.home, &self.dir, self.total);
        }
        create_private_dir(&self.dir).map_err(write_error(&self.dir))?;
        let ledger = files.get_or_insert_with(|| Ledger::read(&self.dir));
        let size = bytes.len() as u64;
        let mut total: u64 = ledger.files.iter().map(|(_, size)| size).sum();
        while total + size > self.per_session && !ledger.files.is_empty() {
            let (oldest, oldest_size) = ledger.files.remove(0);
            // Gone already is as good as removed.
            let _ = std::fs::remove_file(&oldest);
            total -= oldest_size;
        }
        let path = self.dir.join(format!("{:04}-{}.txt", ledger.next, file_name_part(call_id)));
        ledger.next += 1;
        write_private(&path, bytes.as_bytes()).map_err(write_error(&path))?;
        ledger.files.push((path.clone(), size));
        let lines = bytes.lines().count() as u64;
        Ok(Kept { path, bytes: size, lines })
    }
}

/// The files kept, oldest first, with their sizes, and the number the
/// next one takes: never one a removed file had, so a result's path never
/// comes to name another output.
#[derive(Debug)]
struct Ledger {
    files: Vec<(PathBuf, u64)>,
    next: usize,
}

impl Ledger {
    fn read(dir: &Path) -> Self {
        let files = existing_files(dir);
        let next = files.last().map_or(0, |(path, _)| number_of(path)) + 1;
        Self { files, next }
    }
}

/// `text` cut at a character boundary to at most `bound` bytes.
fn cut_to(text: &str, bound: usize) -> &str {
    if text.len() <= bound {
        return text;
    }
    let end = (0..=bound).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
    &text[..end]
}

/// `raw` as one file-name component: ASCII letters, digits, `-` and `_`
/// kept, anything else `_` (a call id comes from the model).
fn file_name_part(raw: &str) -> String {
    let part: String = raw
        .chars()
        .take(64)
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .collect();
    if part.is_empty() { "_".to_owned() } else { part }
}

/// The leading number of a kept file's name (0 when it has none).
fn number_of(path: &Path) -> usize {
    let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
    name.split('-').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

/// The files already in `dir`, oldest (lowest number) first.
fn existing_files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<(PathBuf, u64)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            meta.is_file().then(|| (entry.path(), meta.len()))
        })
        .collect();
    files.sort_by_key(|(path, _)| number_of(path));
    files
}

/// Creates `dir` (and `outputs/` above it) 0700, whatever the umask.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)?;
    for folder in [Some(dir), dir.parent()].into_iter().flatten() {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(DIR_MODE))?;
    }
    Ok(())
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    // A parent's default ACL may add bits the mode did not ask for.
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;
    use crate::display::KnownSecret;

    fn store(home: &Path) -> KeptOutputs {
        KeptOutputs::new(home, "s-1", Arc::default())
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn a_kept_output_is_owner_only_in_an_owner_only_folder_of_its_session() {
        let home = tempfile::tempdir().unwrap();
        let kept = store(home.path()).keep("call_1", "line 1\nline 2\n").unwrap();
        assert_eq!(kept.path.parent().unwrap(), home.path().join("outputs/s-1"));
        assert_eq!(std::fs::read_to_string(&kept.path).unwrap(), "line 1\nline 2\n");
        assert_eq!((kept.bytes, kept.lines), (14, 2));
        assert_eq!(mode(&kept.path), 0o600);
        assert_eq!(mode(&home.path().join("outputs/s-1")), 0o700);
        assert_eq!(mode(&home.path().join("outputs")), 0o700);
    }

    #[test]
    fn what_is_kept_is_masked_as_the_model_sees_it() {
        let home = tempfile::tempdir().unwrap();
        let mask = SecretMask::new(&[KnownSecret::new("TOKEN", "canary-secret-1")]).unwrap();
        let outputs = KeptOutputs::new(home.path(), "s", Arc::new(mask));
        let kept = outputs.keep("c", "a canary-secret-1 b").unwrap();
        assert_eq!(std::fs::read_to_string(kept.path).unwrap(), "a [redacted: TOKEN] b");
    }

    #[test]
    fn one_output_is_bounded() {
        let home = tempfile::tempdir().unwrap();
        let text = "é".repeat(MAX_KEPT_BYTES / 2 + 10);
        let kept = store(home.path()).keep("c", &text).unwrap();
        assert!(kept.bytes <= MAX_KEPT_BYTES as u64, "{}", kept.bytes);
        assert!(std::fs::read_to_string(kept.path).is_ok(), "cut at a character boundary");
    }

    #[test]
    fn past_the_session_bound_the_oldest_outputs_go_first() {
        let home = tempfile::tempdir().unwrap();
        let outputs = store(home.path()).with_session_bound(25);
        let first = outputs.keep("a", &"1".repeat(10)).unwrap();
        let second = outputs.keep("b", &"2".repeat(10)).unwrap();
        let third = outputs.keep("c", &"3".repeat(10)).unwrap();
        assert!(!first.path.exists(), "the oldest is removed");
        assert!(second.path.exists() && third.path.exists());
        // A resumed session counts what its folder holds.
        let resumed = store(home.path()).with_session_bound(25);
        let fourth = resumed.keep("d", &"4".repeat(10)).unwrap();
        assert!(!second.path.exists() && third.path.exists() && fourth.path.exists());
        assert_ne!(fourth.path, third.path);
    }

    #[test]
    fn a_call_id_cannot_name_a_path_and_repeated_ids_do_not_collide() {
        let home = tempfile::tempdir().unwrap();
        let outputs = store(home.path());
        let first = outputs.keep("../../x", "a").unwrap();
        let second = outputs.keep("../../x", "b").unwrap();
        assert_eq!(first.path.parent().unwrap(), outputs.dir());
        assert_ne!(first.path, second.path);
        assert_eq!(std::fs::read_to_string(first.path).unwrap(), "a");
    }

    #[test]
    fn the_outputs_of_a_session_whose_log_was_removed_go_at_the_next_keep() {
        let home = tempfile::tempdir().unwrap();
        let sessions = home.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        std::fs::write(sessions.join("live.jsonl"), "").unwrap();
        let live = KeptOutputs::new(home.path(), "live", Arc::default()).keep("c", "x").unwrap();
        let gone = KeptOutputs::new(home.path(), "gone", Arc::default()).keep("c", "y").unwrap();
        assert!(gone.path.exists(), "kept until a session keeps again");
        std::fs::write(sessions.join("next.jsonl"), "").unwrap();
        KeptOutputs::new(home.path(), "next", Arc::default()).keep("c", "z").unwrap();
        assert!(!gone.path.exists() && live.path.exists());
    }

    /// Marks `dir` as last written `secs` after the epoch.
    fn written_at(dir: &Path, secs: u64) {
        let time = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        std::fs::File::open(dir).unwrap().set_modified(time).unwrap();
    }

    // Kept outputs are bounded across sessions: past the total, at a
    // session's first keep, the least recently written folders of other
    // sessions go first, never a live session's (its log locked).
    #[test]
    fn past_the_total_bound_the_oldest_other_sessions_outputs_go_first() {
        let home = tempfile::tempdir().unwrap();
        let sessions = home.path().join("sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        for id in ["live", "old", "newer", "now"] {
            std::fs::write(sessions.join(format!("{id}.jsonl")), "").unwrap();
        }
        let _lock = crate::session::SessionLock::acquire(&sessions.join("live.jsonl")).unwrap();
        let keep = |id: &str, text: &str| {
            KeptOutputs::new(home.path(), id, Arc::default()).keep("c", text).unwrap()
        };
        let live = keep("live", &"l".repeat(400));
        let old = keep("old", &"o".repeat(400));
        let newer = keep("newer", &"n".repeat(400));
        let outputs = outputs_dir(home.path());
        written_at(&outputs.join("live"), 100);
        written_at(&outputs.join("old"), 200);
        written_at(&outputs.join("newer"), 300);
        let now = KeptOutputs::new(home.path(), "now", Arc::default())
            .with_total_bound(1_000)
            .keep("c", &"w".repeat(100))
            .unwrap();
        assert!(live.path.exists(), "a live session's outputs stay, oldest as they are");
        assert!(!old.path.exists(), "the least recently written other session's go");
        assert!(newer.path.exists() && now.path.exists(), "once under the bound, no more go");
    }

    #[test]
    fn a_gone_session_s_outputs_are_removed() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("sessions")).unwrap();
        std::fs::write(home.path().join("sessions/s-1.jsonl"), "").unwrap();
        let kept = store(home.path()).keep("c", "x").unwrap();
        KeptOutputs::new(home.path(), "other", Arc::default()).keep("c", "y").unwrap();
        remove_session_outputs(home.path(), "s-1").unwrap();
        assert!(!kept.path.exists());
        assert!(home.path().join("outputs/other").exists());
        remove_session_outputs(home.path(), "never-was").unwrap();
    }
}
