//! keel's own folder (`$KEEL_HOME`: session logs, the undo store, the
//! trust record, history) readable by its owner only, whatever the umask:
//! the folder is created 0700, or narrowed to 0700 when it is the user's
//! and lets others in, so nothing below it can be read by another user
//! even where a writer (git for the undo store, say) created a file 0644.
//! Session logs are also created 0600 themselves (`session::writer`).
//!
//! Invariants: only ever removes permission bits, and only on a folder the
//! current user owns; the home folder itself is never changed (a KEEL_HOME
//! set to `$HOME` keeps the home folder's mode); a failure is returned for
//! the caller to say, never a panic.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

/// The bits keel keeps on the files it writes below its folder.
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Writes `bytes` to `path` (created or truncated) readable by its owner
/// only, whatever the umask: a file that let others in is narrowed
/// first (the undo store's bookkeeping, the folder cache).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(PRIVATE_FILE_MODE)
        .open(path)?;
    if file.metadata()?.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_FILE_MODE))?;
    }
    file.write_all(bytes)
}

/// The bits keel keeps on its folder.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// What was done to the folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Secured {
    Created,
    Narrowed {
        was: u32,
    },
    AlreadyPrivate,
    /// Not the user's (or the home folder itself): left as it is.
    LeftAlone,
}

/// Makes `dir` owner-only (see the module doc); `home` is the user's home
/// folder, never changed.
pub fn make_private(dir: &Path, home: Option<&Path>) -> std::io::Result<Secured> {
    let meta = match std::fs::metadata(dir) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new().recursive(true).mode(PRIVATE_DIR_MODE).create(dir)?;
            // The umask may not add bits, but a parent's default ACL could.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(PRIVATE_DIR_MODE))?;
            return Ok(Secured::Created);
        }
        Err(error) => return Err(error),
    };
    let is_home = home
        .is_some_and(|home| std::fs::canonicalize(home).ok() == std::fs::canonicalize(dir).ok());
    if !meta.is_dir() || is_home || meta.uid() != rustix::process::geteuid().as_raw() {
        return Ok(Secured::LeftAlone);
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(Secured::AlreadyPrivate);
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode & !0o077))?;
    Ok(Secured::Narrowed { was: mode })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn keels_folder_is_created_or_narrowed_to_its_owner_and_home_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("a/keel");
        assert_eq!(make_private(&fresh, None).unwrap(), Secured::Created);
        assert_eq!(mode(&fresh), 0o700);
        let open = dir.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(make_private(&open, None).unwrap(), Secured::Narrowed { was: 0o755 });
        assert_eq!(mode(&open), 0o700);
        assert_eq!(make_private(&open, None).unwrap(), Secured::AlreadyPrivate);
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(make_private(&open, Some(&open)).unwrap(), Secured::LeftAlone);
        assert_eq!(mode(&open), 0o755);
    }
}
