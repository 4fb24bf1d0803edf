//! The session's plan files: a submitted plan is written to
//! `.keel/plans/<session>-r<revision>.md` in the workspace (so the user
//! can read and edit it during the review), and read back when the user
//! approves it (the approved plan is the file's text).
//!
//! Invariant: one file per revision; a revision's file is only written
//! when `step` asks (`Effect::SavePlan`), never rewritten by keel; it is
//! written and read beneath the workspace root without following a
//! symlink (`support::beneath`): a repository's `.keel/plans` link to a
//! folder elsewhere is refused, not written through.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::support::beneath;

/// Where a session keeps its plans.
#[derive(Debug, Clone)]
pub(super) struct PlanStore {
    root: PathBuf,
    dir: PathBuf,
    session_id: String,
}

impl PlanStore {
    pub(super) fn new(workspace_root: &Path, session_id: &str) -> Self {
        Self {
            root: workspace_root.to_owned(),
            dir: workspace_root.join(".keel").join("plans"),
            session_id: session_id.to_owned(),
        }
    }

    /// The file of `revision`.
    pub(super) fn path_of(&self, revision: u32) -> PathBuf {
        self.dir.join(format!("{}-r{revision}.md", self.session_id))
    }

    /// Writes `text` as `revision`'s file (creating `.keel/plans`); its
    /// path.
    pub(super) fn save(&self, revision: u32, text: &str) -> std::io::Result<PathBuf> {
        let path = self.path_of(revision);
        beneath::write_beneath(&self.root, &path, text.as_bytes(), 0o644)
            .map_err(std::io::Error::other)?;
        Ok(path)
    }

    /// A plan file as it is now (the user may have edited it), read beneath
    /// the workspace root (`<root>/.keel/plans/<file>`).
    pub(super) fn read(path: &Path) -> std::io::Result<String> {
        let mut text = String::new();
        beneath::open_beneath(beneath::root_above(path, 3), path)
            .map_err(std::io::Error::other)?
            .read_to_string(&mut text)?;
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::PlanStore;

    #[test]
    fn each_revision_gets_its_own_file_under_keel_plans() {
        let root = tempfile::tempdir().unwrap();
        let store = PlanStore::new(root.path(), "s1");
        let first = store.save(1, "1. one").unwrap();
        let second = store.save(2, "1. two").unwrap();
        assert_eq!(first, root.path().join(".keel/plans/s1-r1.md"));
        assert_eq!(PlanStore::read(&first).unwrap(), "1. one");
        assert_eq!(PlanStore::read(&second).unwrap(), "1. two");
    }

    #[test]
    fn a_committed_plans_symlink_is_refused_not_written_through() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join(".keel")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join(".keel/plans")).unwrap();
        let error = PlanStore::new(root.path(), "s1").save(1, "1. plan").unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "nothing outside");
    }

    #[test]
    fn a_save_that_cannot_write_is_an_error_not_a_panic() {
        let root = tempfile::tempdir().unwrap();
        // `.keel` is a file: the plans folder cannot be made.
        std::fs::write(root.path().join(".keel"), "").unwrap();
        let store = PlanStore::new(root.path(), "s1");
        assert!(store.save(1, "plan").is_err());
        assert!(PlanStore::read(&store.path_of(1)).is_err());
    }
}
