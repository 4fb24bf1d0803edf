//! Whether a workspace path is ignored by the `.gitignore` files on its
//! way from the root, as git decides it (the deepest file with a matching
//! pattern wins; `!pattern` re-includes), for paths the watcher reports
//! one at a time.
//!
//! Invariants: only `.gitignore` files inside the workspace are read (not
//! the user's global excludes, not `.git/info/exclude`), so this ignores at
//! most what keel's own git ignores and a change it keeps is never one git
//! would have seen while this dropped it; a `.gitignore` that is not a
//! regular file (a FIFO in a cloned repository) or is huge is treated as
//! empty, never read blocking or whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Bytes read from one `.gitignore`.
const MAX_GITIGNORE_BYTES: u64 = 1024 * 1024;

/// The `.gitignore` matchers of one workspace, read on first use per folder.
#[derive(Debug)]
pub(in crate::runtime) struct Ignores {
    root: PathBuf,
    /// Folder (relative, `""` for the root) → its `.gitignore`, if any.
    by_dir: HashMap<PathBuf, Option<Gitignore>>,
}

impl Ignores {
    pub fn new(root: &Path) -> Self {
        Self { root: root.to_owned(), by_dir: HashMap::new() }
    }

    /// Whether `rel` (relative to the root) is ignored. Its parent folders
    /// are taken as not ignored themselves: the watcher never watches
    /// inside an ignored folder.
    pub fn is_ignored(&mut self, rel: &Path, is_dir: bool) -> bool {
        let mut dir = rel.parent();
        while let Some(folder) = dir {
            if let Some(matcher) = self.matcher(folder) {
                match matcher.matched(rel, is_dir) {
                    Match::Ignore(_) => return true,
                    Match::Whitelist(_) => return false,
                    Match::None => {}
                }
            }
            dir = folder.parent();
        }
        false
    }

    /// Whether `rel` or any folder on its way is ignored (for a path
    /// named in the log, not reported by the watcher).
    pub fn is_ignored_anywhere(&mut self, rel: &Path) -> bool {
        let mut prefix = PathBuf::new();
        let mut components = rel.components().peekable();
        while let Some(component) = components.next() {
            prefix.push(component);
            let is_dir = components.peek().is_some();
            if self.is_ignored(&prefix, is_dir) {
                return true;
            }
        }
        false
    }

    /// Records that `dir` has no `.gitignore` (its listing was just read),
    /// so asking about it later costs no `stat`.
    pub fn known_absent(&mut self, dir: &Path) {
        self.by_dir.entry(dir.to_owned()).or_insert(None);
    }

    /// Drops the cached matcher of `dir` (its `.gitignore` changed).
    pub fn forget(&mut self, dir: &Path) {
        self.by_dir.remove(dir);
    }

    fn matcher(&mut self, dir: &Path) -> Option<&Gitignore> {
        if !self.by_dir.contains_key(dir) {
            let built = read_gitignore(&self.root, dir);
            self.by_dir.insert(dir.to_owned(), built);
        }
        self.by_dir.get(dir).and_then(Option::as_ref)
    }
}

/// The matcher of `root/dir/.gitignore`, with paths relative to the root.
fn read_gitignore(root: &Path, dir: &Path) -> Option<Gitignore> {
    use std::io::Read;
    let path = root.join(dir).join(".gitignore");
    // Opened without blocking or following a symlink, then checked: a
    // FIFO swapped in after a stat could not hang the watcher.
    let file = super::shadow_seed::open_regular(&path)?;
    if file.metadata().ok()?.len() > MAX_GITIGNORE_BYTES {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_GITIGNORE_BYTES).read_to_string(&mut text).ok()?;
    // Patterns are relative to their folder; matching takes root-relative
    // paths, so the builder's root is the folder as seen from the root.
    let mut builder = GitignoreBuilder::new(dir);
    for line in text.lines() {
        let _ = builder.add_line(Some(path.clone()), line);
    }
    builder.build().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deeper_files_win_and_negations_re_include() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(".gitignore"), "*.log\ntarget/\n").unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/.gitignore"), "!keep.log\nlocal\n").unwrap();
        let mut ignores = Ignores::new(root);
        assert!(ignores.is_ignored(Path::new("debug.log"), false));
        assert!(ignores.is_ignored(Path::new("sub/other.log"), false));
        assert!(!ignores.is_ignored(Path::new("sub/keep.log"), false));
        assert!(ignores.is_ignored(Path::new("target"), true));
        assert!(!ignores.is_ignored(Path::new("target"), false), "target/ names folders only");
        assert!(ignores.is_ignored(Path::new("sub/local"), false));
        assert!(!ignores.is_ignored(Path::new("local"), false), "sub's rules stay in sub");
        assert!(!ignores.is_ignored(Path::new("src/main.rs"), false));
        assert!(ignores.is_ignored_anywhere(Path::new("target/debug/out")));
        assert!(!ignores.is_ignored_anywhere(Path::new("src/target")));
    }

    #[test]
    fn a_changed_gitignore_is_read_again_once_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let mut ignores = Ignores::new(dir.path());
        assert!(!ignores.is_ignored(Path::new("out.bin"), false));
        std::fs::write(dir.path().join(".gitignore"), "*.bin\n").unwrap();
        ignores.forget(Path::new(""));
        assert!(ignores.is_ignored(Path::new("out.bin"), false));
    }

    #[test]
    fn a_fifo_named_gitignore_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join(".gitignore"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Reading it would block this test forever.
        assert!(!Ignores::new(dir.path()).is_ignored(Path::new("x"), false));
    }
}
