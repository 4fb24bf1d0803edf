//! Using a checked path without a race. [`Workspace::resolve`] checks a
//! path (symlinks resolved, confined to the root); the file tools then use
//! it through these functions, which open it again from the root's
//! descriptor one component at a time with `O_NOFOLLOW`, so what is used is
//! exactly what was checked: a folder swapped for a symlink (to `~/.ssh`,
//! say) between the check and the use makes the call fail with
//! [`ToolError::PathChanged`], never reach outside.
//!
//! Invariants: the path given is one [`Workspace::resolve`] (or
//! `resolve_entry`) returned, so every component below the root is a plain
//! name and, when it was checked, no symlink; every open is relative to
//! the previous component's descriptor with `O_NOFOLLOW`; a file is only
//! opened when it is a regular file (`fstatat` first, without following,
//! then the opened descriptor must be the same inode), so FIFOs, sockets
//! and devices are refused without being opened (opening one can block or
//! act); writes go through [`super::atomic`] relative to the parent's
//! descriptor; deleting removes the entry itself. Portable `openat` walking
//! rather than `openat2(RESOLVE_BENEATH)`, which some container seccomp
//! profiles refuse: with single-name steps and `O_NOFOLLOW` the guarantee
//! is the same. Content search ([`open_searchable`]) opens by path and
//! then checks where the opened file really is (`/proc/self/fd`).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

use super::ToolError;
use super::atomic::replace_in;
use super::file_state::Stamp;
use super::paths::Workspace;

/// What is at a path, looked at without following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    Missing,
    /// A regular file: its stamp and permission bits.
    File {
        stamp: Stamp,
        mode: u32,
        len: u64,
    },
    Dir,
    Symlink,
    /// A FIFO, socket or device, named.
    Special(&'static str),
}

const DIR_FLAGS: OFlags =
    OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::NOFOLLOW).union(OFlags::CLOEXEC);
const READ_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NONBLOCK)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

impl Workspace {
    /// What is at `abs` now (a missing parent folder means `Missing`).
    pub(crate) fn entry(&self, abs: &Path) -> Result<Entry, ToolError> {
        if abs == self.root() {
            return Ok(Entry::Dir);
        }
        let Some((dir, name)) = self.open_parent(abs, false).map(Some).or_else(missing_is_none)?
        else {
            return Ok(Entry::Missing);
        };
        match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(entry_of(&stat)),
            Err(Errno::NOENT) => Ok(Entry::Missing),
            Err(error) => Err(self.io_error(abs, error)),
        }
    }

    /// Opens the regular file at `abs` for reading, with its stamp.
    pub(crate) fn open_regular(&self, abs: &Path) -> Result<(File, Stamp), ToolError> {
        let rel = self.relative(abs);
        let (dir, name) = self.open_parent(abs, false)?;
        let before = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(error) => return Err(self.io_error(abs, error)),
        };
        match entry_of(&before) {
            Entry::File { .. } => {}
            Entry::Missing => return Err(ToolError::NotFound { path: rel }),
            Entry::Dir => return Err(ToolError::IsADirectory { path: rel }),
            Entry::Symlink => return Err(ToolError::PathChanged { path: rel }),
            Entry::Special(kind) => return Err(ToolError::NotRegularFile { path: rel, kind }),
        }
        let fd = rustix::fs::openat(&dir, &name, READ_FLAGS, Mode::empty())
            .map_err(|error| self.io_error(abs, error))?;
        let after = rustix::fs::fstat(&fd).map_err(|error| self.io_error(abs, error))?;
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino)
            || FileType::from_raw_mode(after.st_mode) != FileType::RegularFile
        {
            return Err(ToolError::PathChanged { path: rel });
        }
        Ok((File::from(fd), Stamp::from_stat(&after)))
    }

    /// Replaces (or creates) the file at `abs` with `bytes` atomically,
    /// creating missing parent folders, with permission bits `mode`.
    /// Returns the new file's stamp.
    pub(crate) fn replace_file(
        &self,
        abs: &Path,
        bytes: &[u8],
        mode: Option<u32>,
    ) -> Result<Stamp, ToolError> {
        let rel = self.relative(abs);
        let (dir, name) = self.open_parent(abs, true)?;
        match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW).map(|s| entry_of(&s)) {
            Ok(Entry::File { .. }) | Err(Errno::NOENT) => {}
            Ok(Entry::Dir) => return Err(ToolError::IsADirectory { path: rel }),
            Ok(Entry::Symlink) => return Err(ToolError::PathChanged { path: rel }),
            Ok(Entry::Special(kind)) => return Err(ToolError::NotRegularFile { path: rel, kind }),
            Ok(Entry::Missing) => {}
            Err(error) => return Err(self.io_error(abs, error)),
        }
        replace_in(&dir, &name, bytes, mode).map_err(|source| ToolError::io(&rel, source))?;
        let stat = rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|error| self.io_error(abs, error))?;
        Ok(Stamp::from_stat(&stat))
    }

    /// Removes the entry at `abs` (a symlink itself, not its target);
    /// folders are refused.
    pub(crate) fn remove_entry(&self, abs: &Path) -> Result<(), ToolError> {
        let rel = self.relative(abs);
        let (dir, name) = self.open_parent(abs, false)?;
        match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW).map(|s| entry_of(&s)) {
            Ok(Entry::Dir) => return Err(ToolError::IsADirectory { path: rel }),
            Ok(_) => {}
            Err(error) => return Err(self.io_error(abs, error)),
        }
        rustix::fs::unlinkat(&dir, &name, AtFlags::empty())
            .map_err(|error| self.io_error(abs, error))
    }

    /// Opens the folder at `abs` (every component a real folder).
    pub(crate) fn open_dir(&self, abs: &Path) -> Result<OwnedFd, ToolError> {
        let names = self.names(abs)?;
        self.walk(abs, &names, false)
    }

    /// The folder holding `abs` (created when `create`) and the final name.
    fn open_parent(&self, abs: &Path, create: bool) -> Result<(OwnedFd, OsString), ToolError> {
        let mut names = self.names(abs)?;
        let Some(name) = names.pop() else {
            return Err(ToolError::IsADirectory { path: self.relative(abs) });
        };
        Ok((self.walk(abs, &names, create)?, name.to_owned()))
    }

    /// The components of `abs` below the root; anything but plain names
    /// (or a path outside the root) is refused.
    fn names<'a>(&self, abs: &'a Path) -> Result<Vec<&'a OsStr>, ToolError> {
        let outside =
            || ToolError::OutsideWorkspace { path: abs.to_owned(), root: self.root().to_owned() };
        let below = abs.strip_prefix(self.root()).map_err(|_| outside())?;
        below
            .components()
            .map(|component| match component {
                Component::Normal(name) => Ok(name),
                Component::CurDir
                | Component::ParentDir
                | Component::RootDir
                | Component::Prefix(_) => Err(outside()),
            })
            .collect()
    }

    /// Opens the root, then each folder of `names` below it without
    /// following symlinks (creating missing ones when `create`).
    fn walk(&self, abs: &Path, names: &[&OsStr], create: bool) -> Result<OwnedFd, ToolError> {
        let mut dir = rustix::fs::open(self.root(), DIR_FLAGS, Mode::empty())
            .map_err(|error| self.io_error(self.root(), error))?;
        for name in names {
            dir = match rustix::fs::openat(&dir, *name, DIR_FLAGS, Mode::empty()) {
                Ok(next) => next,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&dir, *name, Mode::from_raw_mode(0o777)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(error) => return Err(self.io_error(abs, error)),
                    }
                    rustix::fs::openat(&dir, *name, DIR_FLAGS, Mode::empty())
                        .map_err(|error| self.step_error(&dir, name, abs, error))?
                }
                Err(error) => return Err(self.step_error(&dir, name, abs, error)),
            };
        }
        Ok(dir)
    }

    /// Why one step of a walk failed: a symlink where a folder was checked
    /// is a change; a file is "not a directory".
    fn step_error(&self, dir: &OwnedFd, name: &OsStr, abs: &Path, error: Errno) -> ToolError {
        let rel = self.relative(abs);
        match error {
            Errno::NOTDIR | Errno::LOOP => {
                match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).map(|s| entry_of(&s))
                {
                    Ok(Entry::File { .. } | Entry::Special(_)) => {
                        ToolError::NotADirectory { path: rel }
                    }
                    Ok(Entry::Symlink | Entry::Dir | Entry::Missing) | Err(_) => {
                        ToolError::PathChanged { path: rel }
                    }
                }
            }
            other => self.io_error(abs, other),
        }
    }

    fn io_error(&self, abs: &Path, error: Errno) -> ToolError {
        let rel = self.relative(abs);
        match error {
            Errno::LOOP => ToolError::PathChanged { path: rel },
            other => ToolError::io(rel, other.into()),
        }
    }
}

/// `Ok(None)` for a missing folder on the way (the entry is then missing).
fn missing_is_none(error: ToolError) -> Result<Option<(OwnedFd, OsString)>, ToolError> {
    match error {
        ToolError::NotFound { .. } => Ok(None),
        other => Err(other),
    }
}

fn entry_of(stat: &Stat) -> Entry {
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Entry::File {
            stamp: Stamp::from_stat(stat),
            mode: stat.st_mode & 0o7777,
            len: u64::try_from(stat.st_size).unwrap_or(0),
        },
        FileType::Directory => Entry::Dir,
        FileType::Symlink => Entry::Symlink,
        FileType::Fifo => Entry::Special("FIFO (named pipe)"),
        FileType::Socket => Entry::Special("socket"),
        FileType::CharacterDevice => Entry::Special("character device"),
        FileType::BlockDevice => Entry::Special("block device"),
        FileType::Unknown => Entry::Special("special file"),
    }
}

/// Opens `path` (found by a walk under `root`) for a content search: a
/// regular file, not through a final symlink, and really under `root`
/// once opened (a folder on the way swapped for a symlink is caught
/// here). `None` for anything else; the search skips it.
pub(crate) fn open_searchable(ws: &Workspace, path: &Path) -> Option<File> {
    let fd = rustix::fs::open(path, READ_FLAGS, Mode::empty()).ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let file = File::from(fd);
    match opened_path(&file) {
        Some(real) => real.starts_with(ws.root()).then_some(file),
        // No /proc: walk from the root instead (slower, as strict).
        None => ws.open_regular(path).ok().map(|(file, _)| file),
    }
}

/// Where the kernel says an open file is.
fn opened_path(file: &File) -> Option<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    fn workspace(ws: &TestWorkspace) -> Workspace {
        Workspace::new(&ws.ctx).unwrap()
    }

    #[test]
    fn reads_regular_files_and_names_what_else_is_there() {
        let ws = TestWorkspace::new();
        ws.write("a/b.txt", "hello");
        let w = workspace(&ws);
        let (mut file, stamp) = w.open_regular(&w.resolve("a/b.txt").unwrap()).unwrap();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!((text.as_str(), stamp.bytes()), ("hello", 5));
        let fifo = ws.path("pipe");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0)
            .unwrap();
        let error = w.open_regular(&w.resolve("pipe").unwrap()).err();
        assert!(matches!(error, Some(ToolError::NotRegularFile { .. })), "{error:?}");
        let error = w.open_regular(&w.resolve("a").unwrap()).err();
        assert!(matches!(error, Some(ToolError::IsADirectory { .. })), "{error:?}");
    }

    #[test]
    fn a_folder_swapped_for_a_symlink_after_the_check_is_caught() {
        let ws = TestWorkspace::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x"), "secret").unwrap();
        ws.write("real/x", "inside");
        let w = workspace(&ws);
        let checked = w.resolve("real/x").unwrap();
        std::fs::rename(ws.path("real"), ws.path("moved")).unwrap();
        symlink(outside.path(), ws.path("real")).unwrap();
        let read = w.open_regular(&checked).err();
        assert!(matches!(read, Some(ToolError::PathChanged { .. })), "{read:?}");
        let write = w.replace_file(&checked, b"pwned", None).err();
        assert!(matches!(write, Some(ToolError::PathChanged { .. })), "{write:?}");
        assert!(w.remove_entry(&checked).is_err());
        assert_eq!(std::fs::read_to_string(outside.path().join("x")).unwrap(), "secret");
    }

    #[test]
    fn writes_create_folders_and_removal_takes_the_link_not_the_target() {
        let ws = TestWorkspace::new();
        let w = workspace(&ws);
        let stamp = w.replace_file(&w.resolve("n/e/w.txt").unwrap(), b"abc", None).unwrap();
        assert_eq!((ws.read("n/e/w.txt").as_str(), stamp.bytes()), ("abc", 3));
        symlink(ws.path("n/e/w.txt"), ws.path("link")).unwrap();
        w.remove_entry(&w.resolve_entry("link").unwrap()).unwrap();
        assert_eq!(ws.read("n/e/w.txt"), "abc");
        assert!(matches!(w.entry(&w.resolve("nope/x").unwrap()), Ok(Entry::Missing)));
    }
}
