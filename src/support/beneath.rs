//! Opening a file beneath a folder without following a symlink: what keel
//! reads from (skills, memory notes, instruction files) or writes to (plans,
//! "always" rules, rewritten whole with [`replace_beneath`]) a folder a
//! repository or a command can change. The folder
//! itself is opened as named; every component below it is opened from the
//! previous one's descriptor with `O_NOFOLLOW`, so a component swapped for a
//! symlink (`.keel/plans -> ~/elsewhere`, `SKILL.md -> /proc/self/environ`)
//! fails the open instead of leading outside, whenever the swap happened.
//!
//! Invariants: only plain names below the root (no `..`, no absolute part);
//! a read opens only a regular file (FIFOs and devices are refused without
//! blocking: `O_NONBLOCK`, then `fstat`); a write creates missing folders
//! (mode 0700) and the file (the mode given) beneath the root, never
//! through a link. Portable `openat` walking, as `tools::beneath` does for
//! the file tools (`openat2` is refused by some container seccomp
//! profiles); this one serves modules below `tools`.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why a file beneath a folder could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum BeneathError {
    #[error("{path} is not a plain path beneath {root}", path = path.display(), root = root.display())]
    NotBeneath { root: PathBuf, path: PathBuf },
    #[error("{path} leads through a symlink (keel does not follow links here)", path = path.display())]
    Symlink { path: PathBuf },
    #[error("{path} is not a regular file", path = path.display())]
    NotRegular { path: PathBuf },
    #[error("cannot open {path}: {source}", path = path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

impl BeneathError {
    /// Whether the file (or a folder on its way) does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, BeneathError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
    }
}

/// How a write opens its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteMode {
    /// Created or emptied.
    Truncate,
    /// Created or added to at the end.
    Append,
}

/// The folder `levels` components above `path` (`/` past the top): the
/// root a file found at `path` is opened beneath when its last `levels`
/// components may be swapped (a note and its `memory` folder: 2).
pub fn root_above(path: &Path, levels: usize) -> &Path {
    path.ancestors().nth(levels).unwrap_or(Path::new("/"))
}

const DIR_FLAGS: OFlags =
    OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);

/// Opens the regular file `path` (absolute beneath `root`, or relative to
/// it) for reading.
pub fn open_beneath(root: &Path, path: &Path) -> Result<File, BeneathError> {
    let full = root.join(path);
    let (dir, name) = walk(root, path, false)?;
    let flags = OFlags::RDONLY
        .union(OFlags::NOFOLLOW)
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC);
    let fd = rustix::fs::openat(&dir, &name, flags, Mode::empty())
        .map_err(|error| classify(&full, error))?;
    let stat = rustix::fs::fstat(&fd).map_err(|error| io(&full, error))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(BeneathError::NotRegular { path: full });
    }
    // Reads block from here on, as a plain `File::open` would.
    let flags = rustix::fs::fcntl_getfl(&fd).map_err(|error| io(&full, error))?;
    rustix::fs::fcntl_setfl(&fd, flags.difference(OFlags::NONBLOCK))
        .map_err(|error| io(&full, error))?;
    Ok(File::from(fd))
}

/// Opens `path` (beneath `root`) for writing, creating missing folders
/// (0700) and the file (`mode`, before the umask).
pub fn create_beneath(
    root: &Path,
    path: &Path,
    how: WriteMode,
    mode: u32,
) -> Result<File, BeneathError> {
    let full = root.join(path);
    let (dir, name) = walk(root, path, true)?;
    let how = match how {
        WriteMode::Truncate => OFlags::TRUNC,
        WriteMode::Append => OFlags::APPEND,
    };
    let flags = OFlags::WRONLY
        .union(OFlags::CREATE)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC)
        .union(how);
    let fd = rustix::fs::openat(&dir, &name, flags, Mode::from_raw_mode(mode))
        .map_err(|error| classify(&full, error))?;
    let stat = rustix::fs::fstat(&fd).map_err(|error| io(&full, error))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(BeneathError::NotRegular { path: full });
    }
    Ok(File::from(fd))
}

/// Writes `bytes` as the whole of `path` beneath `root` ([`create_beneath`]).
pub fn write_beneath(
    root: &Path,
    path: &Path,
    bytes: &[u8],
    mode: u32,
) -> Result<(), BeneathError> {
    use std::io::Write;
    let mut file = create_beneath(root, path, WriteMode::Truncate, mode)?;
    file.write_all(bytes).map_err(|source| BeneathError::Io { path: root.join(path), source })
}

/// Replaces `path` beneath `root` with `bytes` atomically: written to a
/// temporary file in the same folder, synced, then renamed over it, so a
/// reader (or a crash) sees the old text or the new, never a part.
pub fn replace_beneath(
    root: &Path,
    path: &Path,
    bytes: &[u8],
    mode: u32,
) -> Result<(), BeneathError> {
    use std::io::Write;
    let full = root.join(path);
    let (dir, name) = walk(root, path, true)?;
    let mut temporary = std::ffi::OsString::from(".");
    temporary.push(&name);
    temporary.push(format!(".keel-{}.tmp", std::process::id()));
    let flags = OFlags::WRONLY
        .union(OFlags::CREATE)
        .union(OFlags::EXCL)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);
    let fd = rustix::fs::openat(&dir, &temporary, flags, Mode::from_raw_mode(mode))
        .map_err(|error| classify(&full, error))?;
    let mut file = File::from(fd);
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    let renamed =
        written.map_err(|source| BeneathError::Io { path: full.clone(), source }).and_then(|()| {
            rustix::fs::renameat(&dir, &temporary, &dir, &name).map_err(|error| io(&full, error))
        });
    if renamed.is_err() {
        let _ = rustix::fs::unlinkat(&dir, &temporary, rustix::fs::AtFlags::empty());
    }
    renamed
}

/// The folder holding the last component of `path` (opened beneath
/// `root`, created on the way when `create`) and that component.
fn walk(root: &Path, path: &Path, create: bool) -> Result<(OwnedFd, PathBuf), BeneathError> {
    let not_beneath = || BeneathError::NotBeneath { root: root.to_owned(), path: path.to_owned() };
    let rel =
        if path.is_absolute() { path.strip_prefix(root).map_err(|_| not_beneath())? } else { path };
    let mut names = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(not_beneath());
            }
        }
    }
    let Some(last) = names.pop() else { return Err(not_beneath()) };
    let root_flags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);
    if create {
        std::fs::create_dir_all(root)
            .map_err(|source| BeneathError::Io { path: root.to_owned(), source })?;
    }
    let mut dir =
        rustix::fs::open(root, root_flags, Mode::empty()).map_err(|error| io(root, error))?;
    let mut so_far = root.to_owned();
    for name in names {
        so_far.push(name);
        if create {
            match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(0o700)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(error) => return Err(io(&so_far, error)),
            }
        }
        dir = rustix::fs::openat(&dir, name, DIR_FLAGS, Mode::empty())
            .map_err(|error| classify(&so_far, error))?;
    }
    Ok((dir, PathBuf::from(last)))
}

/// A symlink met with `O_NOFOLLOW` is `ELOOP` (a file) or `ENOTDIR` (a
/// folder step, where the link is no folder); both are said as a link
/// when the entry is one.
fn classify(path: &Path, error: Errno) -> BeneathError {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink());
    if is_link && matches!(error, Errno::LOOP | Errno::NOTDIR | Errno::MLINK) {
        BeneathError::Symlink { path: path.to_owned() }
    } else {
        io(path, error)
    }
}

fn io(path: &Path, error: Errno) -> BeneathError {
    BeneathError::Io { path: path.to_owned(), source: std::io::Error::from(error) }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    #[test]
    fn a_replacement_is_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/f.rules"), "old\n").unwrap();
        replace_beneath(root, Path::new("a/f.rules"), b"new\n", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(root.join("a/f.rules")).unwrap(), "new\n");
        let names: Vec<_> =
            std::fs::read_dir(root.join("a")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["f.rules"]);
        std::os::unix::fs::symlink(root.join("a"), root.join("b")).unwrap();
        let error = replace_beneath(root, Path::new("b/f.rules"), b"x", 0o644).unwrap_err();
        assert!(matches!(error, BeneathError::Symlink { .. }), "{error}");
    }

    #[test]
    fn a_link_anywhere_below_the_root_is_refused_and_plain_files_open() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/note.md"), "hi").unwrap();
        let mut text = String::new();
        open_beneath(root, Path::new("a/b/note.md")).unwrap().read_to_string(&mut text).unwrap();
        assert_eq!(text, "hi");
        std::os::unix::fs::symlink("/proc/self/environ", root.join("a/b/env.md")).unwrap();
        let error = open_beneath(root, &root.join("a/b/env.md")).unwrap_err();
        assert!(matches!(error, BeneathError::Symlink { .. }), "{error}");
        std::os::unix::fs::symlink("/etc", root.join("a/etc")).unwrap();
        let error = open_beneath(root, Path::new("a/etc/passwd")).unwrap_err();
        assert!(matches!(error, BeneathError::Symlink { .. }), "{error}");
        let error = open_beneath(root, Path::new("a/../../x")).unwrap_err();
        assert!(matches!(error, BeneathError::NotBeneath { .. }), "{error}");
        assert!(open_beneath(root, Path::new("a/missing.md")).unwrap_err().is_not_found());
    }

    #[test]
    fn a_write_creates_folders_beneath_and_never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mut file =
            create_beneath(root, Path::new(".keel/plans/p.md"), WriteMode::Truncate, 0o600)
                .unwrap();
        file.write_all(b"plan").unwrap();
        assert_eq!(std::fs::read_to_string(root.join(".keel/plans/p.md")).unwrap(), "plan");
        std::os::unix::fs::symlink(outside.path(), root.join(".keel/rules")).unwrap();
        let error =
            create_beneath(root, Path::new(".keel/rules/local.rules"), WriteMode::Append, 0o600)
                .unwrap_err();
        assert!(matches!(error, BeneathError::Symlink { .. }), "{error}");
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "nothing outside");
    }
}
