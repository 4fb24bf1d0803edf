//! One writer per session log: the process that appends to a log holds an
//! exclusive `flock` on it for as long as it runs.
//!
//! Without it two `keel exec resume` of one crashed session (or a resume
//! while the original still ran) would both append: duplicated `seq`
//! values, every remaining command run twice; `keel undo` would revert
//! files under a live turn. A second writer (`exec resume`, `--resume`,
//! `--last`, `undo`, the TUI's resume) refuses with the holder's pid and
//! host.
//!
//! The lock is taken on the log's own open file description, so the kernel
//! releases it when the holder exits or is killed: a crashed session's lock
//! is never stale. Who holds it is written to a sidecar (`<id>.owner`, JSON
//! `{pid, host}`) for the refusal message and for `keel sessions`; the
//! sidecar is advisory only (a dead holder's file is overwritten by the
//! next one), the flock decides.
//!
//! Checking whether a log is live ([`holder`]) takes a shared lock for a
//! moment; a writer that finds the lock busy retries briefly, so such a
//! probe never makes a resume fail.
//!
//! Invariants: a [`SessionLock`] exists only while its flock is held; the
//! log file is opened for appending only through one; the sidecar is
//! removed when the lock is dropped normally.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::{FlockOperation, flock};
use serde::{Deserialize, Serialize};

use super::SessionError;

/// How often a busy lock is tried again (a `keel sessions` probe holds it
/// for microseconds; a real writer for its whole life).
const BUSY_RETRIES: u32 = 20;
const BUSY_PAUSE: Duration = Duration::from_millis(5);

/// Who holds a session's lock, as its sidecar says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockHolder {
    pub pid: u32,
    pub host: String,
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.pid == 0 {
            return write!(f, "pid and host not recorded");
        }
        write!(f, "pid {} on host {}", self.pid, self.host)
    }
}

/// The exclusive right to append to one log, held until dropped.
#[derive(Debug)]
pub struct SessionLock {
    path: PathBuf,
    /// The log, opened for appending; the flock lives on this description.
    file: File,
    owner: PathBuf,
}

impl SessionLock {
    /// Locks the existing log at `path`, or says who holds it.
    pub fn acquire(path: &Path) -> Result<Self, SessionError> {
        let open_error = |source| SessionError::Open { path: path.to_owned(), source };
        let file = OpenOptions::new().append(true).open(path).map_err(open_error)?;
        Self::lock(path, file)
    }

    /// Locks `file`, just opened for appending to `path`.
    pub(super) fn lock(path: &Path, file: File) -> Result<Self, SessionError> {
        let mut tries = 0;
        loop {
            match flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => break,
                Err(rustix::io::Errno::WOULDBLOCK) if tries < BUSY_RETRIES => {
                    tries += 1;
                    std::thread::sleep(BUSY_PAUSE);
                }
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    let holder = current_owner(path).map_or_else(
                        || "another keel process".to_owned(),
                        |h| format!("keel ({h})"),
                    );
                    return Err(SessionError::Locked { path: path.to_owned(), holder });
                }
                Err(error) => {
                    return Err(SessionError::Open { path: path.to_owned(), source: error.into() });
                }
            }
        }
        let owner = owner_path(path);
        // Advisory: a failure to write it only makes a refusal less precise.
        if let Err(error) = write_owner(&owner) {
            tracing::debug!(
                "cannot record the session lock's owner in {}: {error}",
                owner.display()
            );
        }
        Ok(Self { path: path.to_owned(), file, owner })
    }

    /// The locked log.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The locked log, for appending.
    pub(super) fn file(&mut self) -> &mut File {
        &mut self.file
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        // Before the file (and so the lock) is released.
        let _ = std::fs::remove_file(&self.owner);
    }
}

/// Who holds the lock on the log at `path` right now, if anyone: the
/// sidecar's pid and host, or an unknown holder when it cannot be read.
pub fn holder(path: &Path) -> Option<LockHolder> {
    let file = File::open(path).ok()?;
    match flock(&file, FlockOperation::NonBlockingLockShared) {
        Ok(()) => None,
        Err(_) => Some(current_owner(path).unwrap_or(LockHolder { pid: 0, host: String::new() })),
    }
}

/// `<dir>/<id>.owner` beside `<dir>/<id>.jsonl`.
fn owner_path(log: &Path) -> PathBuf {
    log.with_extension("owner")
}

/// The sidecar's holder, if it names a live process: a holder writes it a
/// moment after taking the lock, so a dead pid (left by a crashed earlier
/// holder) or no sidecar yet is read again for a little while.
fn current_owner(log: &Path) -> Option<LockHolder> {
    let me = host_name();
    for _ in 0..BUSY_RETRIES {
        let owner = read_owner(&owner_path(log));
        if let Some(owner) = owner.filter(|owner| owner.host != me || pid_alive(owner.pid)) {
            return Some(owner);
        }
        std::thread::sleep(BUSY_PAUSE);
    }
    None
}

fn pid_alive(pid: u32) -> bool {
    let pid = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw);
    pid.is_some_and(|pid| rustix::process::test_kill_process(pid).is_ok())
}

fn read_owner(path: &Path) -> Option<LockHolder> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Writes this process's pid and host, whole (temp file, then rename).
fn write_owner(path: &Path) -> std::io::Result<()> {
    let me = LockHolder { pid: std::process::id(), host: host_name() };
    let text = serde_json::to_vec(&me).map_err(std::io::Error::other)?;
    let temp = path.with_extension(format!("owner.{}", me.pid));
    std::fs::write(&temp, text)?;
    std::fs::rename(&temp, path)
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_owned())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        std::fs::write(&path, "").unwrap();
        (dir, path)
    }

    #[test]
    fn a_second_lock_is_refused_naming_the_holder() {
        let (_dir, path) = log();
        let first = SessionLock::acquire(&path).unwrap();
        let me = holder(&path).unwrap();
        assert_eq!(me.pid, std::process::id());
        let error = SessionLock::acquire(&path).unwrap_err().to_string();
        assert!(error.contains(&format!("pid {}", std::process::id())), "{error}");
        assert!(error.contains(&me.host), "{error}");
        drop(first);
        assert_eq!(holder(&path), None);
        assert!(!owner_path(&path).exists(), "the sidecar goes with the lock");
        SessionLock::acquire(&path).unwrap();
    }

    #[test]
    fn a_probe_leaves_the_log_unlocked() {
        let (_dir, path) = log();
        assert_eq!(holder(&path), None);
        assert!(SessionLock::acquire(&path).is_ok());
    }

    #[test]
    fn a_stale_sidecar_does_not_lock() {
        let (_dir, path) = log();
        std::fs::write(owner_path(&path), r#"{"pid":1,"host":"gone"}"#).unwrap();
        assert_eq!(holder(&path), None);
        let lock = SessionLock::acquire(&path).unwrap();
        assert_eq!(read_owner(&owner_path(&path)).unwrap().pid, std::process::id());
        drop(lock);
    }
}
