//! One walk of the workspace for two needs of a writing session: the
//! jail's nested `.git` search (read-only mounts, needed before the first
//! command that can write) and the undo [`Watcher`]'s inotify watches
//! (needed by the checkpoints after the first). Both read every folder;
//! done apart, a large repository paid for the reads twice, and the
//! watcher's walk ran alongside the session's first steps.
//!
//! The session's jail runs the search
//! ([`crate::sandbox::CommandJail::with_nested_search`]), so the walk is
//! the search's closure ([`search_and_watch`]); it hands the watcher over
//! through the [`OfferedWatch`] the session's checkpoints hold. Both read
//! the folder listings kept from the last walk ([`FolderCache`]); the
//! first walk of a workspace (no listings kept yet) is the search alone,
//! and the watcher starts after the first checkpoint as it would without
//! the sandbox.
//!
//! Invariants: the nested `.git` paths are those
//! [`protected::nested_git_dirs`] finds (its own search runs instead when
//! inotify cannot watch the tree); a watcher is claimed only for the
//! workspace it was walked for; a claimed walk that never reports (its
//! search was replaced or died) leaves the checkpoints to start a watcher
//! of their own.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use tokio::sync::oneshot;

use super::checkpoint::shadow_dir;
use super::folder_cache::FolderCache;
use super::watch::{WatchError, Watcher};
use crate::sandbox::protected;

#[cfg(test)]
#[path = "first_walk_tests.rs"]
mod tests;

/// A watcher set up, or why not.
pub(in crate::runtime) type Started = Result<Watcher, WatchError>;

/// The watcher a session's [`search_and_watch`] sets up: its workspace
/// and where the watcher arrives. Held by that session's checkpoints.
#[derive(Debug)]
pub(in crate::runtime) struct OfferedWatch {
    root: PathBuf,
    receiver: oneshot::Receiver<Started>,
}

impl OfferedWatch {
    /// Where the watcher arrives, if it was walked for `root`.
    pub(in crate::runtime) fn claim(self, root: &Path) -> Option<oneshot::Receiver<Started>> {
        (self.root == root).then_some(self.receiver)
    }
}

/// The jail's nested `.git` search for `root`, which also sets up the
/// undo watcher it offers. keel's state (`keel_home`) is neither watched
/// nor searched; it keeps the folder listings between sessions
/// ([`FolderCache`], next to the shadow repository).
pub(in crate::runtime) fn search_and_watch(
    root: PathBuf,
    keel_home: PathBuf,
) -> (impl FnOnce() -> Vec<PathBuf> + Send + 'static, OfferedWatch) {
    let (sender, receiver) = oneshot::channel();
    let offered = OfferedWatch { root: root.clone(), receiver };
    let search = move || {
        let mut cache = FolderCache::load(shadow_dir(&keel_home, &root).with_extension("folders"));
        if cache.is_empty() {
            // The first walk of this workspace: the search alone, beside
            // the first checkpoint's `git status` (which reads every folder
            // too), and the watcher after it, as without a cache: both at
            // once made the first writing command wait longer on two cores.
            // The search leaves the listings for the next session.
            drop(sender);
            let nested = nested_git_dirs(&root, &mut cache);
            cache.save();
            return nested;
        }
        let excluded = [keel_home];
        match Watcher::start_finding_nested(&root, &excluded, Some(cache), &AtomicBool::new(false))
        {
            Ok((watcher, nested)) => {
                let _ = sender.send(Ok(watcher));
                nested
            }
            Err(error) => {
                let _ = sender.send(Err(error));
                protected::nested_git_dirs(&root)
            }
        }
    };
    (search, offered)
}

/// [`protected::nested_git_dirs`] with the folder listings of `cache`.
fn nested_git_dirs(root: &Path, cache: &mut FolderCache) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    let mut budget = protected::NESTED_SCAN_LIMIT;
    while let Some(rel) = pending.pop() {
        let Some(left) = budget.checked_sub(1) else { break };
        budget = left;
        let absolute = root.join(&rel);
        let Some(folder) = cache.folder(&rel, &absolute) else { continue };
        if folder.has_git && !rel.as_os_str().is_empty() {
            found.push(absolute.join(".git"));
        }
        for child in folder.children {
            if !protected::is_skipped(&child) {
                pending.push(rel.join(child));
            }
        }
    }
    found.sort();
    found
}
