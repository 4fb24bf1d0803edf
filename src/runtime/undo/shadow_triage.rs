//! What a checkpoint does with each path `git status` reported: save it
//! (hash it into the shadow), drop it from the shadow index, or leave it
//! out, by what is on disk now and the size caps.
//!
//! Invariant: a tracked path that is not saved is dropped from the index,
//! never left with an older version a restore would write back.

use std::path::Path;

use super::checkpoint::{SkipReason, Skipped, UndoLimits};

/// What to do with the paths of one checkpoint.
#[derive(Debug, Default, PartialEq, Eq)]
pub(in crate::runtime) struct Plan {
    /// Paths to hand to `update-index --add --remove` (saved or removed).
    pub update: Vec<String>,
    /// Tracked paths to drop from the shadow index.
    pub drop: Vec<String>,
    pub skipped: Vec<Skipped>,
    pub saved_files: usize,
    pub saved_bytes: u64,
}

/// What a path is on disk now.
enum OnDisk {
    Missing,
    /// A regular file or symlink of this many bytes.
    Saveable(u64),
    /// A folder (its files are listed on their own).
    Folder,
    /// A FIFO, socket or device.
    Special,
}

fn on_disk(path: &Path) -> OnDisk {
    match std::fs::symlink_metadata(path) {
        Err(_) => OnDisk::Missing,
        Ok(meta) if meta.is_file() || meta.file_type().is_symlink() => OnDisk::Saveable(meta.len()),
        Ok(meta) if meta.is_dir() => OnDisk::Folder,
        Ok(_) => OnDisk::Special,
    }
}

/// Decides each `(XY, path)` status entry.
pub(in crate::runtime) fn triage(
    work_tree: &Path,
    changes: &[(String, String)],
    limits: UndoLimits,
) -> Plan {
    let mut plan = Plan::default();
    for (code, path) in changes {
        let untracked = code == "??";
        if !untracked && !work_tree_side(code) {
            continue;
        }
        if path.ends_with('/') || path.contains('\u{FFFD}') {
            // A nested repository (git lists it, not its files), or a name
            // git printed that is not UTF-8 and so cannot be named back.
            plan.skip(path, 0, SkipReason::Unsupported, !untracked);
            continue;
        }
        match on_disk(&work_tree.join(path)) {
            OnDisk::Missing if untracked => {}
            OnDisk::Missing => plan.update.push(path.clone()),
            OnDisk::Folder if untracked => {}
            OnDisk::Folder => plan.drop.push(path.clone()),
            OnDisk::Special => plan.skip(path, 0, SkipReason::Unsupported, !untracked),
            OnDisk::Saveable(bytes) if bytes > limits.max_file_bytes => {
                plan.skip(path, bytes, SkipReason::FileTooLarge, !untracked);
            }
            OnDisk::Saveable(bytes) if plan.saved_bytes + bytes > limits.max_total_bytes => {
                plan.skip(path, bytes, SkipReason::OverBudget, !untracked);
            }
            OnDisk::Saveable(bytes) => {
                plan.update.push(path.clone());
                plan.saved_files += 1;
                plan.saved_bytes += bytes;
            }
        }
    }
    plan
}

/// Whether a tracked entry's work tree side differs from the shadow
/// index (`XY` with Y set), or the entry is unmerged.
fn work_tree_side(code: &str) -> bool {
    let mut chars = code.chars();
    let (x, y) = (chars.next().unwrap_or(' '), chars.next().unwrap_or(' '));
    y != ' ' || x == 'U' || code == "DD" || code == "AA"
}

impl Plan {
    fn skip(&mut self, path: &str, bytes: u64, reason: SkipReason, tracked: bool) {
        if tracked {
            self.drop.push(path.to_owned());
        }
        self.skipped.push(Skipped { path: path.to_owned(), bytes, reason });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(code: &str, path: &str) -> (String, String) {
        (code.to_owned(), path.to_owned())
    }

    #[test]
    fn caps_leave_files_out_and_drop_tracked_ones_from_the_index() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("small"), vec![b'a'; 10]).unwrap();
        std::fs::write(root.join("big"), vec![b'b'; 100]).unwrap();
        std::fs::write(root.join("mid1"), vec![b'c'; 40]).unwrap();
        std::fs::write(root.join("mid2"), vec![b'd'; 40]).unwrap();
        let limits = UndoLimits { max_file_bytes: 50, max_total_bytes: 60 };
        let changes = [
            entry(" M", "big"),
            entry("??", "mid1"),
            entry("??", "mid2"),
            entry(" D", "gone"),
            entry("??", "vanished"),
            entry("M ", "staged-only"),
            entry("??", "small"),
            entry("??", "nested/"),
        ];
        let plan = triage(root, &changes, limits);
        assert_eq!(plan.update, ["mid1", "gone", "small"]);
        assert_eq!(plan.drop, ["big"]);
        let skipped: Vec<(&str, SkipReason)> =
            plan.skipped.iter().map(|s| (s.path.as_str(), s.reason)).collect();
        assert_eq!(
            skipped,
            [
                ("big", SkipReason::FileTooLarge),
                ("mid2", SkipReason::OverBudget),
                ("nested/", SkipReason::Unsupported)
            ]
        );
        assert_eq!((plan.saved_files, plan.saved_bytes), (2, 50));
    }

    #[test]
    fn unmerged_entries_are_resolved_to_what_is_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("conflict"), "x").unwrap();
        let plan = triage(dir.path(), &[entry("UU", "conflict")], UndoLimits::default());
        assert_eq!(plan.update, ["conflict"]);
    }
}
