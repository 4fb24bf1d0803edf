//! Atomic file replacement for every tool that writes: the new bytes go to
//! a temporary file in the same directory, which is flushed to disk and then
//! renamed over the target.
//!
//! Invariants: at every instant the target holds either its old bytes or
//! its new bytes, never a mix (rename within one filesystem is atomic); an
//! existing file keeps its permission bits; parent folders are created; a
//! failed write removes its temporary file. Writing is split into
//! [`Staged::stage`] and [`Staged::commit`] so tests can stop in between.

use std::fs::{File, OpenOptions, Permissions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A temporary file holding the new content, not yet renamed into place.
#[derive(Debug)]
pub struct Staged {
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl Staged {
    /// Writes `bytes` next to `target` (creating parent folders) with the
    /// target's permissions, and flushes them to disk.
    pub fn stage(target: &Path, bytes: &[u8]) -> std::io::Result<Self> {
        let dir = target.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let permissions = existing_permissions(target)?;
        let (temp, file) = create_temp(dir, target)?;
        let staged = Self { temp, target: target.to_owned(), committed: false };
        write_all(file, bytes, permissions)?;
        Ok(staged)
    }

    /// The temporary file's path.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Renames the temporary file over the target.
    pub fn commit(mut self) -> std::io::Result<()> {
        std::fs::rename(&self.temp, &self.target)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.committed {
            // Best effort: a left-over temp file is harmless clutter.
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// Replaces `target` with `bytes` atomically.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> std::io::Result<()> {
    Staged::stage(target, bytes)?.commit()
}

fn existing_permissions(target: &Path) -> std::io::Result<Option<Permissions>> {
    match std::fs::metadata(target) {
        Ok(metadata) => Ok(Some(metadata.permissions())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(error),
    }
}

/// A new file named `.NAME.keel-RANDOM.tmp` in `dir`; retried on a clash.
fn create_temp(dir: &Path, target: &Path) -> std::io::Result<(PathBuf, File)> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut last_error = None;
    for _ in 0..8 {
        let temp = dir.join(format!(".{name}.keel-{:016x}.tmp", fastrand::u64(..)));
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((temp, file)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                last_error = Some(error);
            }
            Err(error) => return Err(error),
        }
    }
    Err(last_error.unwrap_or_else(|| std::io::Error::other("no temporary file name was free")))
}

fn write_all(
    mut file: File,
    bytes: &[u8],
    permissions: Option<Permissions>,
) -> std::io::Result<()> {
    file.write_all(bytes)?;
    if let Some(permissions) = permissions {
        file.set_permissions(permissions)?;
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn replaces_content_and_keeps_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o750)).unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "temp file left behind");
    }

    #[test]
    fn creates_parent_folders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c.txt");
        write_atomic(&path, b"x").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "x");
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
        let staged = Staged::stage(&path, new.as_bytes()).unwrap();
        let temp = staged.temp_path().to_owned();
        std::mem::forget(staged);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
        assert_eq!(std::fs::read_to_string(&temp).unwrap(), new);
        std::fs::remove_file(temp).unwrap();
        Staged::stage(&path, new.as_bytes()).unwrap().commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), new);
    }

    /// The child half of the crash test: stages a write, says where, and
    /// hangs until it is killed. Does nothing unless run by the parent.
    #[test]
    fn crash_child() {
        let Some(target) = std::env::var_os("KEEL_CRASH_CHILD_TARGET") else { return };
        let new = "new line\n".repeat(100_000);
        let staged = Staged::stage(Path::new(&target), new.as_bytes()).unwrap();
        println!("STAGED {}", staged.temp_path().display());
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
            write_atomic(&path, versions[round % versions.len()].as_bytes()).unwrap();
        }
        done.store(true, Ordering::Relaxed);
        reader.join().unwrap();
    }
}
