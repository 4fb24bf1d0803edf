//! The jail's filesystem view, built in its private mount namespace
//! before the command starts (the launcher's step before landlock):
//!
//! 1. every mount is made private (nothing propagates back to the host);
//! 2. every mount outside the writable roots is remounted read-only
//!    (`EROFS`): landlock has no rights for `chmod`, `chown`, extended
//!    attributes or timestamps, a read-only mount refuses them all;
//! 3. each writable root (workspace roots, temp folders, configured
//!    roots) is bound onto itself read-write with `nodev` and `nosuid`,
//!    so a device node made there cannot be opened and no set-uid file
//!    runs with its owner's powers;
//! 4. the carve-outs (`.git`, `.keel`, `.claude` of each workspace root,
//!    nested `.git` folders, keel's own state) are bound onto themselves
//!    read-only, parents first;
//! 5. `/dev` is a fresh read-only tmpfs holding only [`DEV_NODES`] (the
//!    host's nodes bound in), `shm/`, the `fd`/`stdin`/`stdout`/`stderr`
//!    links and `ptmx` into a fresh `/dev/pts` instance, so the user's
//!    terminals cannot be read or written and no other device (loop
//!    control, disks, `/dev/kmsg`, GPUs) can be opened; with
//!    `minimal_dev` off (full-access) only `/dev/pts` is replaced;
//! 6. every unix socket bound on the host when the command starts
//!    (ssh-agent, `docker.sock`, the session bus) has `/dev/null` bound
//!    over it: connecting fails with "connection refused";
//! 7. every credential store that exists ([`MountPlan::hidden`]) is
//!    covered: a folder by an empty read-only tmpfs, a file by `/dev/null`
//!    on a `nodev` mount (opening it fails with "permission denied"), so
//!    no command reads it however it is spelled (`python3 -c open(…)`).
//!
//! Binds are recursive (`rbind`) and only the top mount's flags change,
//! so mounts below keep theirs. Flags a user namespace may not clear
//! (`nosuid`, `nodev`, `noexec`, atime) are kept on every remount.
//!
//! The command cannot undo any of it: landlock forbids mount changes to a
//! sandboxed process, and the init's fresh `/proc` shows no process
//! outside the jail (no `/proc/PID/root` into the host's mounts).

use std::path::{Path, PathBuf};

use rustix::fs::StatVfsMountFlags;
use rustix::mount::{MountFlags, MountPropagationFlags};
use serde::{Deserialize, Serialize};

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct MountPlan {
    /// Bound read-write (`nodev`, `nosuid`); existing folders only.
    pub writable: Vec<PathBuf>,
    /// Bound read-only after the writable roots; existing paths only.
    pub read_only: Vec<PathBuf>,
    /// Remount everything else read-only (mode workspace-write and
    /// read-only; full-access keeps the host's flags).
    pub read_only_system: bool,
    /// Unix socket paths to cover.
    pub sockets: Vec<PathBuf>,
    /// Replace `/dev` with [`DEV_NODES`] only (step 5 of the module doc).
    pub minimal_dev: bool,
    /// Credential stores to cover (step 7); existing paths only.
    pub hidden: Vec<PathBuf>,
}

/// The device nodes the jail's `/dev` holds.
pub const DEV_NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// What the mounts achieved, for the layer report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountReport {
    /// Mounts outside the writable roots made read-only.
    pub system_read_only: bool,
    /// Mount points that could not be remounted read-only.
    pub left_writable: Vec<String>,
    /// Carve-outs bound read-only.
    pub carved_out: usize,
    /// Carve-outs that could not be bound (each with its reason).
    pub carve_failures: Vec<String>,
    /// Host unix sockets covered.
    pub hidden_sockets: usize,
    /// Credential stores covered.
    #[serde(default)]
    pub hidden_secrets: usize,
    /// Credential stores that could not be covered (each with its reason).
    #[serde(default)]
    pub hide_failures: Vec<String>,
    /// `/dev/pts` is a private instance.
    pub private_devpts: bool,
    /// `/dev` holds [`DEV_NODES`] only.
    #[serde(default)]
    pub minimal_dev: bool,
    /// Why it does not, when it was asked for and failed.
    #[serde(default)]
    pub dev_failure: Option<String>,
}

/// Why the jail's filesystem could not be built.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    #[error("cannot make the mounts private: {0}")]
    Private(rustix::io::Errno),
    #[error("cannot bind {path} writable: {source}", path = path.display())]
    Writable { path: PathBuf, source: rustix::io::Errno },
    #[error("cannot mount a fresh /proc: {0}")]
    Proc(rustix::io::Errno),
}

/// Builds the view in the current (private) mount namespace.
pub fn build(plan: &MountPlan) -> Result<MountReport, MountError> {
    rustix::mount::mount_change("/", MountPropagationFlags::REC | MountPropagationFlags::PRIVATE)
        .map_err(MountError::Private)?;
    let mut report = MountReport::default();
    let writable = existing_sorted(&plan.writable);
    if plan.read_only_system {
        let mount_points = std::fs::read_to_string("/proc/self/mountinfo")
            .map(|text| mount_points(&text))
            .unwrap_or_default();
        for point in mount_points {
            if writable.iter().any(|root| point.starts_with(root)) {
                continue;
            }
            match remount(&point, Access::ReadOnly) {
                // A mount the user cannot even reach is out of the command's reach too.
                Ok(()) | Err(rustix::io::Errno::ACCESS) => {}
                Err(error) => report.left_writable.push(format!("{}: {error}", point.display())),
            }
        }
        report.system_read_only = report.left_writable.is_empty();
    }
    if plan.minimal_dev {
        match minimal_dev() {
            Ok(()) => report.minimal_dev = true,
            Err(error) => report.dev_failure = Some(format!("/dev: {error}")),
        }
    }
    for root in &writable {
        bind_self(root, Access::Writable)
            .map_err(|source| MountError::Writable { path: root.clone(), source })?;
    }
    for path in existing_sorted(&plan.read_only) {
        match bind_self(&path, Access::ReadOnly) {
            Ok(()) => report.carved_out += 1,
            Err(error) => report.carve_failures.push(format!("{}: {error}", path.display())),
        }
    }
    report.private_devpts = rustix::mount::mount(
        "devpts",
        "/dev/pts",
        "devpts",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"newinstance,ptmxmode=0666,mode=0620"),
    )
    .is_ok();
    if report.minimal_dev {
        // Nothing more is made in `/dev` (its nodes and `shm` keep their own mounts).
        let _ = remount(Path::new("/dev"), Access::ReadOnly);
    }
    report.hidden_sockets = plan.sockets.iter().filter(|path| cover_socket(path)).count();
    for path in existing_sorted(&plan.hidden) {
        match cover_secret(&path) {
            Ok(()) => report.hidden_secrets += 1,
            Err(error) => report.hide_failures.push(format!("{}: {error}", path.display())),
        }
    }
    Ok(report)
}

/// Covers a credential store (step 7 of the module doc); after every
/// bind, so a writable root or carve-out bound later cannot uncover it.
fn cover_secret(path: &Path) -> rustix::io::Result<()> {
    let flags = MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC;
    if path.is_dir() {
        return rustix::mount::mount(
            "tmpfs",
            path,
            "tmpfs",
            flags | MountFlags::RDONLY,
            Some(c"mode=0555,size=4k"),
        );
    }
    rustix::mount::mount_bind("/dev/null", path)?;
    rustix::mount::mount_remount(path, flags | MountFlags::BIND | MountFlags::RDONLY, "")
}

/// Puts a fresh tmpfs on `/dev` holding the host's [`DEV_NODES`] (bound
/// from descriptors opened before it covers them), `shm/` (the host's, a
/// temp root bound writable later) and the usual links; `/dev/pts` is
/// mounted by the caller. Before the writable roots are bound.
fn minimal_dev() -> rustix::io::Result<()> {
    use rustix::fs::{Mode, OFlags};
    let open = |path: &str| rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty());
    let nodes: Vec<_> =
        DEV_NODES.iter().map(|name| (name, open(&format!("/dev/{name}")))).collect();
    let shm = open("/dev/shm").ok();
    rustix::mount::mount(
        "tmpfs",
        "/dev",
        "tmpfs",
        MountFlags::NOSUID | MountFlags::NOEXEC,
        Some(c"mode=0755,size=64k"),
    )?;
    let dev = Path::new("/dev");
    let via = |fd: &rustix::fd::OwnedFd| {
        use rustix::fd::AsRawFd;
        PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
    };
    for (name, fd) in &nodes {
        // A node the host lacks is left out, as the host has it.
        let Ok(fd) = fd else { continue };
        let target = dev.join(name);
        std::fs::File::create(&target).map_err(io_errno)?;
        rustix::mount::mount_bind(via(fd), &target)?;
    }
    if let Some(fd) = &shm {
        std::fs::create_dir(dev.join("shm")).map_err(io_errno)?;
        rustix::mount::mount_bind_recursive(via(fd), dev.join("shm"))?;
    }
    std::fs::create_dir(dev.join("pts")).map_err(io_errno)?;
    for (link, target) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(link)).map_err(io_errno)?;
    }
    Ok(())
}

fn io_errno(error: std::io::Error) -> rustix::io::Errno {
    error.raw_os_error().map_or(rustix::io::Errno::IO, rustix::io::Errno::from_raw_os_error)
}

/// Mounts a fresh `/proc` for the current PID namespace: only the jail's
/// processes are in it, so no other process's environment, command line
/// or root is readable. Called by the jail's init (PID 1).
pub fn mount_fresh_proc() -> Result<(), MountError> {
    rustix::mount::mount(
        "proc",
        "/proc",
        "proc",
        MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
        None,
    )
    .map_err(MountError::Proc)
}

/// Canonical forms of the paths that exist, shortest first (parents are
/// bound before their children), without duplicates.
fn existing_sorted(paths: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> =
        paths.iter().filter_map(|path| std::fs::canonicalize(path).ok()).collect();
    found.sort_by_key(|path| path.components().count());
    found.dedup();
    found
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    ReadOnly,
    Writable,
}

/// Binds `path` (and the mounts below it) onto itself, then sets the top
/// mount's access.
fn bind_self(path: &Path, access: Access) -> rustix::io::Result<()> {
    rustix::mount::mount_bind_recursive(path, path)?;
    remount(path, access)
}

/// Changes the flags of the mount at `path` (a bind remount: the mount,
/// never the filesystem), keeping the flags a user namespace may not
/// clear.
fn remount(path: &Path, access: Access) -> rustix::io::Result<()> {
    let kept = rustix::fs::statvfs(path)?.f_flag;
    let mut flags = MountFlags::BIND;
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
    match access {
        Access::ReadOnly => flags |= MountFlags::RDONLY,
        Access::Writable => flags |= MountFlags::NODEV | MountFlags::NOSUID,
    }
    if access == Access::ReadOnly && kept.contains(StatVfsMountFlags::RDONLY) {
        return Ok(());
    }
    rustix::mount::mount_remount(path, flags, "")
}

/// Binds `/dev/null` over a unix socket (checked: never over anything
/// else). Whether it did.
fn cover_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_socket());
    is_socket && rustix::mount::mount_bind("/dev/null", path).is_ok()
}

/// The mount points listed in `/proc/self/mountinfo` (field 5, octal
/// escapes decoded), in the kernel's order (parents first).
pub fn mount_points(mountinfo: &str) -> Vec<PathBuf> {
    mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|field| PathBuf::from(unescape_octal(field)))
        .collect()
}

/// Decodes the `\040`-style escapes the kernel writes for space, tab,
/// newline and backslash.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits =
            bytes.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], digits) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_points_are_field_five_decoded() {
        let info = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                    30 22 0:5 / /mnt/with\\040space rw - tmpfs tmpfs rw\n\
                    31 22 0:6 / /a\\134b rw - tmpfs tmpfs rw\n";
        assert_eq!(
            mount_points(info),
            [PathBuf::from("/"), PathBuf::from("/mnt/with space"), PathBuf::from("/a\\b")]
        );
    }

    #[test]
    fn a_lone_backslash_is_kept() {
        assert_eq!(unescape_octal("a\\9b\\"), "a\\9b\\");
    }

    #[test]
    fn existing_paths_come_parents_first() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        let sorted =
            existing_sorted(&[deep.clone(), dir.path().join("missing"), dir.path().into()]);
        let root = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(sorted, [root.clone(), root.join("a/b")]);
    }
}
