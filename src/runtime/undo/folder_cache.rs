//! What each folder of a workspace held when the last walk read it (its
//! subfolders, whether it has a `.git` and a `.gitignore`), kept between
//! sessions in keel's state, so the next walk (the undo watcher's and the
//! jail's nested `.git` search, [`super::first_walk`]) reads only the
//! folders that changed: one `statx` for each of the others, where a read
//! of a large repository's 9 000 folders took seconds on a loaded machine
//! whose page cache had let go of them.
//!
//! Invariants: a folder's listing is taken from the cache only when its
//! device, inode and change time (`ctime`: set by the kernel whenever an
//! entry is added, removed or renamed, and which no process can set back)
//! are those recorded; a folder whose change time was within
//! [`RACY`] of the walk is not recorded (a change in the same clock tick
//! would keep its time), so it is read again next time; the file is
//! written whole to a temporary name and renamed, and one that does not
//! parse is an empty cache. It lives in keel's state folder, which the
//! jail keeps read-only.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, CWD, StatxFlags, statx};

/// Changes this close to the walk may share their folder's recorded time
/// (timestamps advance by clock ticks of at most 10 ms on Linux).
const RACY: Duration = Duration::from_millis(100);
/// First line of the file (a format change makes old files empty caches).
const HEADER: &[u8] = b"keel-folders 1\n";

/// One folder as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::runtime) struct Folder {
    /// Subfolder names (not `.git`, symlinks not counted).
    pub children: Vec<OsString>,
    /// It holds a `.git` (folder or file).
    pub has_git: bool,
    /// It holds a `.gitignore`.
    pub has_gitignore: bool,
}

/// What identifies a folder's listing: device, inode, change time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    ctime_sec: i64,
    ctime_nsec: u32,
}

/// The folders of one workspace: those recorded last time, and those
/// read or confirmed by this walk (what [`FolderCache::save`] keeps).
#[derive(Debug, Default)]
pub(in crate::runtime) struct FolderCache {
    file: Option<PathBuf>,
    old: HashMap<PathBuf, (Stamp, Folder)>,
    new: HashMap<PathBuf, (Stamp, Folder)>,
    /// Folders read from disk by this walk (the rest came from the cache).
    pub read: usize,
}

impl FolderCache {
    /// The cache kept in `file` (empty when missing or unreadable).
    pub fn load(file: PathBuf) -> Self {
        let old = std::fs::read(&file).ok().and_then(|bytes| parse(&bytes)).unwrap_or_default();
        Self { file: Some(file), old, new: HashMap::new(), read: 0 }
    }

    /// Whether nothing was kept from an earlier walk.
    pub fn is_empty(&self) -> bool {
        self.old.is_empty()
    }

    /// The listing of `absolute` (at `rel` in the workspace): the
    /// recorded one while the folder is unchanged, else read now. `None`
    /// when it cannot be read (gone, not a folder).
    pub fn folder(&mut self, rel: &Path, absolute: &Path) -> Option<Folder> {
        let stamp = stamp_of(absolute)?;
        if let Some((recorded, folder)) = self.old.remove(rel)
            && recorded == stamp
        {
            self.new.insert(rel.to_owned(), (stamp, folder.clone()));
            return Some(folder);
        }
        let folder = read_folder(absolute)?;
        self.read += 1;
        if !is_racy(stamp) {
            self.new.insert(rel.to_owned(), (stamp, folder.clone()));
        }
        Some(folder)
    }

    /// Writes what this walk saw (best effort: a cache that cannot be
    /// written is only slower next time).
    pub fn save(self) {
        let Some(file) = self.file else { return };
        let mut bytes = HEADER.to_vec();
        for (rel, (stamp, folder)) in &self.new {
            push_field(&mut bytes, rel.as_os_str().as_bytes());
            for number in [stamp.dev, stamp.ino] {
                push_field(&mut bytes, number.to_string().as_bytes());
            }
            push_field(&mut bytes, stamp.ctime_sec.to_string().as_bytes());
            push_field(&mut bytes, stamp.ctime_nsec.to_string().as_bytes());
            let flags = u8::from(folder.has_git) | (u8::from(folder.has_gitignore) << 1);
            push_field(&mut bytes, flags.to_string().as_bytes());
            push_field(&mut bytes, folder.children.len().to_string().as_bytes());
            for child in &folder.children {
                push_field(&mut bytes, child.as_bytes());
            }
        }
        let Some(parent) = file.parent() else { return };
        let temporary = file.with_extension(format!("tmp{}", std::process::id()));
        let written = std::os::unix::fs::DirBuilderExt::mode(
            std::fs::DirBuilder::new().recursive(true),
            0o700,
        )
        .create(parent)
        .and_then(|()| crate::support::private_dir::write_private(&temporary, &bytes))
        .and_then(|()| std::fs::rename(&temporary, &file));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
    }
}

fn push_field(bytes: &mut Vec<u8>, field: &[u8]) {
    bytes.extend_from_slice(field);
    bytes.push(0);
}

fn parse(bytes: &[u8]) -> Option<HashMap<PathBuf, (Stamp, Folder)>> {
    let body = bytes.strip_prefix(HEADER)?;
    // Every field ends with a NUL.
    let body = body.strip_suffix(&[0]).unwrap_or(body);
    let mut fields = body.split(|byte| *byte == 0);
    let mut folders = HashMap::new();
    if body.is_empty() {
        return Some(folders);
    }
    while let Some(rel) = fields.next() {
        let rel = PathBuf::from(OsString::from_vec(rel.to_vec()));
        let dev = number(fields.next())?;
        let ino = number(fields.next())?;
        let ctime_sec = i64::try_from(number(fields.next())?).ok()?;
        let ctime_nsec = u32::try_from(number(fields.next())?).ok()?;
        let flags = number(fields.next())?;
        let count = usize::try_from(number(fields.next())?).ok()?;
        let mut children = Vec::with_capacity(count.min(4096));
        for _ in 0..count {
            children.push(OsString::from_vec(fields.next()?.to_vec()));
        }
        let folder = Folder { children, has_git: flags & 1 != 0, has_gitignore: flags & 2 != 0 };
        folders.insert(rel, (Stamp { dev, ino, ctime_sec, ctime_nsec }, folder));
    }
    Some(folders)
}

fn number(field: Option<&[u8]>) -> Option<u64> {
    std::str::from_utf8(field?).ok()?.parse().ok()
}

/// The folder's identity and change time, symlinks not followed; `None`
/// unless it is a folder.
fn stamp_of(path: &Path) -> Option<Stamp> {
    let stat = statx(
        CWD,
        path,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::TYPE | StatxFlags::INO | StatxFlags::CTIME,
    )
    .ok()?;
    let is_dir = u32::from(stat.stx_mode) & 0o170_000 == 0o040_000;
    is_dir.then(|| Stamp {
        dev: (u64::from(stat.stx_dev_major) << 32) | u64::from(stat.stx_dev_minor),
        ino: stat.stx_ino,
        ctime_sec: stat.stx_ctime.tv_sec,
        ctime_nsec: stat.stx_ctime.tv_nsec,
    })
}

fn is_racy(stamp: Stamp) -> bool {
    let Ok(seconds) = u64::try_from(stamp.ctime_sec) else { return true };
    let changed = UNIX_EPOCH + Duration::new(seconds, stamp.ctime_nsec);
    SystemTime::now().duration_since(changed).map_or(true, |age| age < RACY)
}

/// Reads a folder's entries: the kind from the directory entry (no stat,
/// symlinks not followed).
pub(in crate::runtime) fn read_folder(path: &Path) -> Option<Folder> {
    let entries = std::fs::read_dir(path).ok()?;
    let mut folder = Folder { children: Vec::new(), has_git: false, has_gitignore: false };
    for entry in entries.flatten() {
        let name = entry.file_name();
        folder.has_gitignore |= name == ".gitignore";
        if name == ".git" {
            folder.has_git = true;
        } else if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            folder.children.push(name);
        }
    }
    Some(folder)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unchanged_folder_is_not_read_again_and_a_replaced_one_is() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        let file = root.join("state/folders");
        let mut cache = FolderCache::load(file.clone());
        let folder = cache.folder(Path::new("a"), &root.join("a")).unwrap();
        assert_eq!(folder.children, [OsString::from("b")]);
        assert_eq!(cache.read, 1);
        assert!(cache.new.is_empty(), "just changed: racy, so not recorded");
        // As if it had been read long after its last change.
        let stamp = stamp_of(&root.join("a")).unwrap();
        cache.new.insert(PathBuf::from("a"), (stamp, folder.clone()));
        cache.save();

        let mut cache = FolderCache::load(file.clone());
        assert_eq!(cache.folder(Path::new("a"), &root.join("a")), Some(folder));
        assert_eq!(cache.read, 0, "unchanged: taken from the cache");
        cache.save();

        // Another folder renamed into its place (a new inode).
        std::fs::rename(root.join("a"), root.join("old")).unwrap();
        std::fs::create_dir_all(root.join("a/.git")).unwrap();
        let mut cache = FolderCache::load(file);
        assert_eq!(cache.old.len(), 1, "the recorded folder was kept");
        let replaced = cache.folder(Path::new("a"), &root.join("a")).unwrap();
        assert_eq!(cache.read, 1, "read again");
        assert!(replaced.has_git && replaced.children.is_empty(), "{replaced:?}");
    }

    #[test]
    fn a_damaged_file_is_an_empty_cache() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("folders");
        std::fs::write(&file, b"keel-folders 1\na\x001\x00x\x00").unwrap();
        assert!(FolderCache::load(file.clone()).old.is_empty());
        std::fs::write(&file, b"something else").unwrap();
        assert!(FolderCache::load(file).old.is_empty());
    }
}
