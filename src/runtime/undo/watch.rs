//! Change detection without walking the workspace: inotify watches on
//! every folder `.gitignore` does not exclude, set up by one walk per
//! session, and the set of paths changed since the last checkpoint. What
//! a shell call changed and what the next checkpoint must look at come
//! from the events, so neither costs more in a bigger repository.
//!
//! Invariants: every path changed after [`Watcher::start`] returned, in a
//! folder that is not ignored, is in the dirty set, unless the watcher
//! [overflowed](Dirty::Everything) (the kernel's queue filled up, a
//! `.gitignore` changed, the dirty set grew past [`MAX_DIRTY`]), and then
//! the next checkpoint looks at everything; `.git` folders and the
//! `excluded` folders (keel's own state, when inside the workspace) are
//! never watched or reported; reading events never blocks. Linux only:
//! elsewhere, or past the system's watch limit, [`Watcher::start`] fails
//! and checkpoints look at everything each turn.

use std::collections::{BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

use super::folder_cache::{self, FolderCache};
use super::ignores::Ignores;
use crate::sandbox::protected;

/// Paths kept before the watcher stops listing them and says "everything".
pub const MAX_DIRTY: usize = 20_000;
/// Ignored paths a shell call changed, kept for the undo notes.
const MAX_IGNORED_NOTED: usize = 20;

/// Why the watcher could not start.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error("inotify is not available: {0}")]
    Init(rustix::io::Errno),
    #[error(
        "the system's inotify watch limit was reached at {watched} folders \
         (fs.inotify.max_user_watches)"
    )]
    Limit { watched: usize },
    #[error("the watch was stopped before it was set up")]
    Stopped,
}

/// What changed since the last [`Watcher::take_dirty`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dirty {
    /// These workspace-relative paths (files, or folders whose whole
    /// content may have changed).
    Paths(Vec<PathBuf>),
    /// Too much, or something the events cannot describe: look at it all.
    Everything,
}

/// inotify watches over one workspace.
#[derive(Debug)]
pub struct Watcher {
    fd: OwnedFd,
    root: PathBuf,
    excluded: Vec<PathBuf>,
    /// Watch descriptor → folder, relative to the root.
    folders: HashMap<i32, PathBuf>,
    dirty: BTreeSet<PathBuf>,
    overflowed: bool,
    /// Relevant events seen so far (a change counter for [`Self::mark`]).
    seen: u64,
    /// Ignored paths changed since the last [`Self::take_ignored`].
    ignored: Vec<PathBuf>,
    ignores: Ignores,
    /// What the first walk notes for the jail's nested `.git` search
    /// ([`Self::start_finding_nested`]); `None` afterwards.
    first_walk: Option<FirstWalk>,
}

/// What [`Watcher::start_finding_nested`]'s walk notes besides watches.
#[derive(Debug, Default)]
struct FirstWalk {
    /// The listings kept from the last walk (read only what changed).
    cache: Option<FolderCache>,
    /// `.git` folders or files below the root (absolute).
    nested_git: Vec<PathBuf>,
    /// Ignored folders, not watched, which the search still reads.
    ignored_folders: Vec<PathBuf>,
}

/// What the watch asks the kernel for: content, metadata (mode, times)
/// and names changing in the folder.
fn watch_flags() -> WatchFlags {
    WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::ONLYDIR
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::EXCL_UNLINK
}

impl Watcher {
    /// Watches every folder under `root` that is not ignored, `.git` or
    /// in `excluded` (absolute paths). Blocking: one walk of the folders,
    /// given up (`Stopped`) as soon as `stop` is set.
    pub fn start(root: &Path, excluded: &[PathBuf], stop: &AtomicBool) -> Result<Self, WatchError> {
        Self::walk(root, excluded, None, stop)
    }

    /// [`Self::start`], and the nested `.git` folders or files below the
    /// root that [`protected::nested_git_dirs`] would find, from the same
    /// walk (so a writing session reads every folder once, not twice, and
    /// with `cache` only those changed since the last walk):
    /// the watched folders all count, and the ignored ones the watch
    /// leaves out are searched within [`protected::NESTED_SCAN_LIMIT`]
    /// folders. Excluded folders (keel's own state) are left out of both.
    pub fn start_finding_nested(
        root: &Path,
        excluded: &[PathBuf],
        cache: Option<FolderCache>,
        stop: &AtomicBool,
    ) -> Result<(Self, Vec<PathBuf>), WatchError> {
        let first = FirstWalk { cache, ..FirstWalk::default() };
        let mut watcher = Self::walk(root, excluded, Some(first), stop)?;
        let FirstWalk { cache, mut nested_git, ignored_folders } =
            watcher.first_walk.take().unwrap_or_default();
        if let Some(cache) = cache {
            tracing::debug!(read = cache.read, "folders read by the first walk");
            cache.save();
        }
        let mut budget = protected::NESTED_SCAN_LIMIT;
        for folder in ignored_folders {
            if folder.file_name().is_some_and(protected::is_skipped) {
                continue;
            }
            nested_git.extend(protected::git_dirs_within(&root.join(folder), &mut budget));
        }
        nested_git.sort();
        Ok((watcher, nested_git))
    }

    fn walk(
        root: &Path,
        excluded: &[PathBuf],
        first_walk: Option<FirstWalk>,
        stop: &AtomicBool,
    ) -> Result<Self, WatchError> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)
            .map_err(WatchError::Init)?;
        let mut watcher = Self {
            fd,
            root: root.to_owned(),
            excluded: excluded.to_vec(),
            folders: HashMap::new(),
            dirty: BTreeSet::new(),
            overflowed: false,
            seen: 0,
            ignored: Vec::new(),
            ignores: Ignores::new(root),
            first_walk,
        };
        watcher.watch_tree(Path::new(""), stop)?;
        Ok(watcher)
    }

    /// How many folders are watched.
    pub fn folders(&self) -> usize {
        self.folders.len()
    }

    /// A point to compare later changes against ([`Self::changed_since`]).
    pub fn mark(&mut self) -> u64 {
        self.poll();
        self.seen
    }

    /// Whether anything not ignored changed after `mark`.
    pub fn changed_since(&mut self, mark: u64) -> bool {
        self.poll();
        self.seen != mark || self.overflowed
    }

    /// What changed since the last call (or since the watcher started).
    pub fn take_dirty(&mut self) -> Dirty {
        self.poll();
        let dirty = std::mem::take(&mut self.dirty);
        if std::mem::take(&mut self.overflowed) {
            return Dirty::Everything;
        }
        Dirty::Paths(dirty.into_iter().collect())
    }

    /// Ignored paths changed since the last call (at most a few).
    pub fn take_ignored(&mut self) -> Vec<PathBuf> {
        self.poll();
        std::mem::take(&mut self.ignored)
    }

    /// Reads every queued event, without blocking.
    fn poll(&mut self) {
        let mut buffer = vec![MaybeUninit::<u8>::uninit(); 64 * 1024];
        let mut events = Vec::new();
        {
            let mut reader = inotify::Reader::new(&self.fd, &mut buffer);
            loop {
                match reader.next() {
                    Ok(event) => {
                        let name = event.file_name().map(|name| {
                            PathBuf::from(std::ffi::OsStr::from_bytes(name.to_bytes()))
                        });
                        events.push((event.wd(), event.events(), name));
                    }
                    Err(rustix::io::Errno::INTR) => {}
                    // AGAIN: nothing more queued; anything else: the fd
                    // is unusable, so say everything may have changed.
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(_) => {
                        self.overflowed = true;
                        break;
                    }
                }
            }
        }
        for (wd, flags, name) in events {
            self.handle(wd, flags, name);
        }
    }

    fn handle(&mut self, wd: i32, flags: ReadFlags, name: Option<PathBuf>) {
        if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
            self.overflowed = true;
            self.seen += 1;
            return;
        }
        if flags.contains(ReadFlags::IGNORED) {
            self.folders.remove(&wd);
            return;
        }
        let Some(folder) = self.folders.get(&wd).cloned() else { return };
        let Some(name) = name else {
            // The folder itself was deleted or moved: its content is gone
            // from where the index has it.
            if flags.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
                self.note(folder);
            }
            return;
        };
        if name.as_os_str() == ".git" {
            return;
        }
        let path = folder.join(&name);
        if self.is_excluded(&path) {
            return;
        }
        let is_dir = flags.contains(ReadFlags::ISDIR);
        if name.as_os_str() == ".gitignore" {
            // What is ignored changed: folders may need watching that
            // were skipped, so the next checkpoint looks at everything.
            self.ignores.forget(&folder);
            self.overflowed = true;
        }
        if self.ignores.is_ignored(&path, is_dir) {
            if self.ignored.len() < MAX_IGNORED_NOTED && !self.ignored.contains(&path) {
                self.ignored.push(path);
            }
            return;
        }
        if is_dir && flags.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
            // Files made in it before its watch existed send no event; the
            // folder as a whole is dirty.
            if self.watch_tree(&path, &AtomicBool::new(false)).is_err() {
                self.overflowed = true;
            }
        }
        self.note(path);
    }

    fn note(&mut self, path: PathBuf) {
        self.seen += 1;
        if self.dirty.len() >= MAX_DIRTY {
            self.overflowed = true;
            return;
        }
        self.dirty.insert(path);
    }

    fn is_excluded(&self, rel: &Path) -> bool {
        let absolute = self.root.join(rel);
        self.excluded.iter().any(|excluded| absolute.starts_with(excluded))
    }

    /// Watches `rel` and every folder under it that is not ignored. A
    /// folder is watched before it is read, so nothing made in it
    /// afterwards goes unseen.
    fn watch_tree(&mut self, rel: &Path, stop: &AtomicBool) -> Result<(), WatchError> {
        let mut stack = vec![rel.to_owned()];
        while let Some(folder) = stack.pop() {
            if stop.load(Ordering::Relaxed) {
                return Err(WatchError::Stopped);
            }
            let absolute = self.root.join(&folder);
            match inotify::add_watch(&self.fd, &absolute, watch_flags()) {
                Ok(wd) => {
                    self.folders.insert(wd, folder.clone());
                }
                Err(rustix::io::Errno::NOSPC) => {
                    return Err(WatchError::Limit { watched: self.folders.len() });
                }
                // Gone, not a folder (any more) or unreadable: nothing to watch.
                Err(_) => continue,
            }
            let listing = match &mut self.first_walk {
                Some(FirstWalk { cache: Some(cache), .. }) => cache.folder(&folder, &absolute),
                Some(_) | None => folder_cache::read_folder(&absolute),
            };
            let Some(listing) = listing else { continue };
            if listing.has_git
                && !folder.as_os_str().is_empty()
                && let Some(first) = &mut self.first_walk
            {
                first.nested_git.push(absolute.join(".git"));
            }
            if !listing.has_gitignore {
                self.ignores.known_absent(&folder);
            }
            let children = listing.children.into_iter().map(|name| folder.join(name));
            for child in children {
                if self.is_excluded(&child) {
                    continue;
                }
                if !self.ignores.is_ignored(&child, true) {
                    stack.push(child);
                } else if let Some(first) = &mut self.first_walk {
                    first.ignored_folders.push(child);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "watch_tests.rs"]
mod tests;
