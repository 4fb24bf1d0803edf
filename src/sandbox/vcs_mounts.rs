//! Keeping `.git` and `.keel` read-only for a confined command with a
//! private mount namespace (the launcher's first step, before landlock).
//!
//! Landlock cannot subtract a folder from a grant, so the launcher does it
//! with mounts instead: it unshares a mount namespace (as a user with
//! `CAP_SYS_ADMIN`: `CLONE_NEWNS`; otherwise `CLONE_NEWUSER|CLONE_NEWNS`
//! with the caller's uid and gid mapped to themselves and `setgroups`
//! denied), makes `/` recursively private (nothing leaks back to the
//! host), bind-mounts each protected folder onto itself and remounts that
//! bind read-only. Landlock then grants the workspace root as a whole, so
//! new top-level entries (`target/`) can be created.
//!
//! The command cannot undo it: landlock forbids `mount`/`umount` to a
//! sandboxed process, and forbids reaching another process's mount
//! namespace through `/proc/PID/root` (its ptrace restriction). Without a
//! user namespace (root) the command keeps root's powers otherwise.
//!
//! `unshare` is rustix's deprecated safe `unshare`: its replacement
//! `unshare_unsafe` is `unsafe` only because of `CLONE_FILES` (file
//! descriptor tables split between threads), which is never passed here,
//! and the crate forbids `unsafe`.

use std::path::{Path, PathBuf};

use rustix::fs::StatVfsMountFlags;
use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::thread::UnshareFlags;

/// Why the protected folders could not be made read-only.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error(
        "cannot create a private mount namespace (unprivileged user namespaces disabled?): {0}"
    )]
    Unshare(rustix::io::Errno),
    #[error("cannot write {path} in the new user namespace: {source}")]
    IdMap { path: &'static str, source: std::io::Error },
    #[error("cannot make the mounts private: {0}")]
    Private(rustix::io::Errno),
    #[error("cannot read the mount flags of {path}: {source}", path = path.display())]
    Stat { path: PathBuf, source: rustix::io::Errno },
    #[error("cannot bind-mount {path}: {source}", path = path.display())]
    Bind { path: PathBuf, source: rustix::io::Errno },
    #[error("cannot remount {path} read-only: {source}", path = path.display())]
    Remount { path: PathBuf, source: rustix::io::Errno },
}

/// The folders to keep read-only: `.git` and `.keel` of each workspace
/// root, those that exist (a file `.git`, as in a git worktree, counts).
pub fn protected_paths(workspace_roots: &[PathBuf]) -> Vec<PathBuf> {
    workspace_roots
        .iter()
        .flat_map(|root| [root.join(".git"), root.join(".keel")])
        .filter(|path| path.exists())
        .collect()
}

/// Moves the calling process into a private mount namespace in which each
/// of `paths` is read-only. Must run while the process has one thread
/// (a user namespace requires it). On error the process may already be in
/// the new namespace with some of `paths` read-only.
pub fn make_read_only(paths: &[PathBuf]) -> Result<(), MountError> {
    enter_namespace()?;
    rustix::mount::mount_change("/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE)
        .map_err(MountError::Private)?;
    for path in paths {
        remount_read_only(path)?;
    }
    Ok(())
}

#[allow(deprecated)] // see the module doc: `unshare_unsafe` only for CLONE_FILES
fn enter_namespace() -> Result<(), MountError> {
    // With CAP_SYS_ADMIN (root) a mount namespace alone is enough.
    if rustix::thread::unshare(UnshareFlags::NEWNS).is_ok() {
        return Ok(());
    }
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    rustix::thread::unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS)
        .map_err(MountError::Unshare)?;
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))?;
    Ok(())
}

fn write_proc(path: &'static str, text: &str) -> Result<(), MountError> {
    std::fs::write(path, text).map_err(|source| MountError::IdMap { path, source })
}

/// Bind-mounts `path` onto itself and remounts it read-only, keeping the
/// flags a user namespace may not clear (nosuid, nodev, noexec, atime).
fn remount_read_only(path: &Path) -> Result<(), MountError> {
    let stat = rustix::fs::statvfs(path)
        .map_err(|source| MountError::Stat { path: path.to_owned(), source })?;
    let kept = stat.f_flag;
    let mut flags = MountFlags::BIND | MountFlags::RDONLY;
    for (statvfs, mount) in [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ] {
        if kept.contains(statvfs) {
            flags |= mount;
        }
    }
    rustix::mount::mount_bind(path, path)
        .map_err(|source| MountError::Bind { path: path.to_owned(), source })?;
    rustix::mount::mount_remount(path, flags, "")
        .map_err(|source| MountError::Remount { path: path.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_existing_folders_are_protected() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let paths = protected_paths(&[dir.path().to_owned()]);
        assert_eq!(paths, [dir.path().join(".git")]);
    }
}
