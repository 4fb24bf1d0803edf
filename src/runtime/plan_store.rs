//! The session's plan files: a submitted plan is written to
//! `.keel/plans/<session>-r<revision>.md` in the workspace (so the user
//! can read and edit it during the review), and read back when the user
//! approves it (the approved plan is the file's text).
//!
//! Invariant: one file per revision; a revision's file is only written
//! when `step` asks (`Effect::SavePlan`), never rewritten by keel.

use std::path::{Path, PathBuf};

/// Where a session keeps its plans.
#[derive(Debug, Clone)]
pub(super) struct PlanStore {
    dir: PathBuf,
    session_id: String,
}

impl PlanStore {
    pub(super) fn new(workspace_root: &Path, session_id: &str) -> Self {
        Self { dir: workspace_root.join(".keel").join("plans"), session_id: session_id.to_owned() }
    }

    /// The file of `revision`.
    pub(super) fn path_of(&self, revision: u32) -> PathBuf {
        self.dir.join(format!("{}-r{revision}.md", self.session_id))
    }

    /// Writes `text` as `revision`'s file (creating `.keel/plans`); its
    /// path.
    pub(super) fn save(&self, revision: u32, text: &str) -> std::io::Result<PathBuf> {
        let path = self.path_of(revision);
        std::fs::create_dir_all(&self.dir)?;
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// A plan file as it is now (the user may have edited it).
    pub(super) fn read(path: &Path) -> std::io::Result<String> {
        std::fs::read_to_string(path)
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
    fn a_save_that_cannot_write_is_an_error_not_a_panic() {
        let root = tempfile::tempdir().unwrap();
        // `.keel` is a file: the plans folder cannot be made.
        std::fs::write(root.path().join(".keel"), "").unwrap();
        let store = PlanStore::new(root.path(), "s1");
        assert!(store.save(1, "plan").is_err());
        assert!(PlanStore::read(&store.path_of(1)).is_err());
    }
}
