//! Atomic file replacement for every tool that writes: the new bytes go to
//! a temporary file in the target's directory, which is flushed to disk and
//! then renamed over the target. The directory is an open descriptor
//! (found beneath the workspace root by [`super::beneath`]) and every step
//! is relative to it (`openat`, `renameat`, `unlinkat`), so no path is
//! looked up twice and a folder swapped for a symlink meanwhile changes
//! nothing.
//!
//! Invariants: at every instant the target holds either its old bytes or
//! its new bytes, never a mix (rename within one filesystem is atomic); an
//! existing file keeps its permission bits (the caller passes them); the
//! temporary file is created exclusively and never through a symlink; a
//! failed write removes it. Writing is split into [`Staged::stage`] and
//! [`Staged::commit`] so tests can stop in between.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, Mode, OFlags};

/// A temporary file holding the new content, not yet renamed into place.
#[derive(Debug)]
pub struct Staged {
    dir: OwnedFd,
    temp: OsString,
    target: OsString,
    committed: bool,
}

impl Staged {
    /// Writes `bytes` to a new temporary file in `dir` next to `target`,
    /// with permission bits `mode` (else the default for new files), and
    /// flushes them to disk.
    pub fn stage(
        dir: &OwnedFd,
        target: &OsStr,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> std::io::Result<Self> {
        let dir = dir.try_clone()?;
        let (temp, file) = create_temp(&dir, target)?;
        let staged = Self { dir, temp, target: target.to_owned(), committed: false };
        write_all(file, bytes, mode)?;
        Ok(staged)
    }

    /// The temporary file's name in the directory.
    pub fn temp_name(&self) -> &OsStr {
        &self.temp
    }

    /// Renames the temporary file over the target.
    pub fn commit(mut self) -> std::io::Result<()> {
        rustix::fs::renameat(&self.dir, &self.temp, &self.dir, &self.target)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: a left-over temp file is harmless clutter.
            let _ = rustix::fs::unlinkat(&self.dir, &self.temp, AtFlags::empty());
        }
    }
}

/// Replaces `target` in `dir` with `bytes` atomically.
pub fn replace_in(
    dir: &OwnedFd,
    target: &OsStr,
    bytes: &[u8],
    mode: Option<u32>,
) -> std::io::Result<()> {
    Staged::stage(dir, target, bytes, mode)?.commit()
}

/// A new file named `.NAME.keel-RANDOM.tmp` in `dir`; retried on a clash.
fn create_temp(dir: &OwnedFd, target: &OsStr) -> std::io::Result<(OsString, File)> {
    let name = target.to_string_lossy();
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut last_error = None;
    for _ in 0..8 {
        let temp = OsString::from(format!(".{name}.keel-{:016x}.tmp", fastrand::u64(..)));
        match rustix::fs::openat(dir, &temp, flags, Mode::from_raw_mode(0o666)) {
            Ok(fd) => return Ok((temp, File::from(fd))),
            Err(rustix::io::Errno::EXIST) => last_error = Some(rustix::io::Errno::EXIST.into()),
            Err(error) => return Err(error.into()),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no temporary file name was free")))
}

fn write_all(mut file: File, bytes: &[u8], mode: Option<u32>) -> std::io::Result<()> {
    file.write_all(bytes)?;
    if let Some(mode) = mode {
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode & 0o7777))?;
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    fn open_dir(path: &Path) -> OwnedFd {
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        rustix::fs::open(path, flags, Mode::empty()).unwrap()
    }

    fn write_atomic(path: &Path, bytes: &[u8]) {
        let mode = std::fs::metadata(path).ok().map(|m| m.permissions().mode());
        let dir = open_dir(path.parent().unwrap());
        replace_in(&dir, path.file_name().unwrap(), bytes, mode).unwrap();
    }

    fn stage(path: &Path, bytes: &[u8]) -> Staged {
        let dir = open_dir(path.parent().unwrap());
        Staged::stage(&dir, path.file_name().unwrap(), bytes, None).unwrap()
    }

    #[test]
    fn replaces_content_and_keeps_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
        write_atomic(&path, b"new");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temp file left behind");
    }

    #[test]
    fn the_target_name_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("victim"), "keep").unwrap();
        std::os::unix::fs::symlink(outside.path().join("victim"), dir.path().join("f")).unwrap();
        write_atomic(&dir.path().join("f"), b"new");
        assert_eq!(std::fs::read_to_string(outside.path().join("victim")).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(dir.path().join("f")).unwrap(), "new");
    }

    /// A crash between writing the temp file and renaming it: the process
    /// dies without running any cleanup (`forget`), and the target still
    /// holds exactly its old bytes; committing instead gives exactly the new.
    #[test]
    fn crash_before_rename_leaves_the_old_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let old = "old line\n".repeat(10_000);
        let new = "new line\n".repeat(20_000);
        std::fs::write(&path, &old).unwrap();
        let staged = stage(&path, new.as_bytes());
        let temp = dir.path().join(staged.temp_name());
        std::mem::forget(staged);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
        assert_eq!(std::fs::read_to_string(&temp).unwrap(), new);
        std::fs::remove_file(temp).unwrap();
        stage(&path, new.as_bytes()).commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), new);
    }

    /// The child half of the crash test: stages a write, says where, and
    /// hangs until it is killed. Does nothing unless run by the parent.
    #[test]
    fn crash_child() {
        let Some(target) = std::env::var_os("KEEL_CRASH_CHILD_TARGET") else { return };
        let target = PathBuf::from(target);
        let new = "new line\n".repeat(100_000);
        let staged = stage(&target, new.as_bytes());
        println!("STAGED {}", target.parent().unwrap().join(staged.temp_name()).display());
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line); // blocks until killed
        staged.commit().unwrap();
    }

    /// A real crash: a process is SIGKILLed after writing the temp file and
    /// before renaming it; the target still holds exactly its old bytes.
    #[test]
    fn process_killed_between_temp_write_and_rename_leaves_the_old_file() {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let old = "old line\n".repeat(50_000);
        std::fs::write(&path, &old).unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "tools::atomic::tests::crash_child",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("KEEL_CRASH_CHILD_TARGET", &path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let temp = stdout
            .lines()
            .map_while(Result::ok)
            .find_map(|line| line.split_once("STAGED ").map(|(_, path)| PathBuf::from(path)))
            .expect("the child never staged its write");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), old, "target changed by a crash");
        assert_eq!(std::fs::metadata(&temp).unwrap().len(), 900_000, "temp was fully written");
    }

    /// A reader racing many writers only ever sees a whole old or a whole
    /// new version.
    #[test]
    fn concurrent_reader_never_sees_a_mix() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let versions: Vec<String> = (0..4).map(|v| format!("{v}").repeat(200_000)).collect();
        std::fs::write(&path, &versions[0]).unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let reader = {
            let (path, done, versions) = (path.clone(), done.clone(), versions.clone());
            std::thread::spawn(move || {
                let mut reads = 0;
                while !done.load(Ordering::Relaxed) || reads == 0 {
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert!(versions.contains(&text), "saw a mixed file");
                    reads += 1;
                }
            })
        };
        for round in 0..40 {
            write_atomic(&path, versions[round % versions.len()].as_bytes());
        }
        done.store(true, Ordering::Relaxed);
        reader.join().unwrap();
    }
}
