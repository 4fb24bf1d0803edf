//! The session's [`Files`]: a file the model's call names, read inside the
//! workspace for the diffs an ACP client is shown.
//!
//! Invariants: a path is resolved as the tools resolve it
//! (`tools::paths::Workspace`: confined to the workspace) and then opened
//! with `support::beneath` (no symlink followed), so a call naming a path
//! outside the workspace reads nothing; files past
//! [`MAX_DIFF_FILE_BYTES`] or not UTF-8 are not shown (the call's own
//! result still says what it did).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::tool_calls::{FileText, Files};
use crate::support::beneath;
use crate::tools::paths::Workspace;

/// Files larger than this are not read for a diff.
pub const MAX_DIFF_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Reads the session's workspace.
pub struct WorkspaceFiles {
    root: PathBuf,
    cwd: PathBuf,
}

impl WorkspaceFiles {
    pub fn new(root: &Path, cwd: &Path) -> Self {
        Self { root: root.to_owned(), cwd: cwd.to_owned() }
    }
}

impl Files for WorkspaceFiles {
    fn read(&self, raw: &str) -> Option<FileText> {
        let workspace = Workspace::from_parts(&self.root, &self.cwd).ok()?;
        let path = workspace.resolve(raw).ok()?;
        let text = match beneath::open_beneath(workspace.root(), &path) {
            Ok(file) => {
                let mut bytes = Vec::new();
                file.take(MAX_DIFF_FILE_BYTES + 1).read_to_end(&mut bytes).ok()?;
                if bytes.len() as u64 > MAX_DIFF_FILE_BYTES {
                    return None;
                }
                Some(String::from_utf8(bytes).ok()?)
            }
            Err(error) if error.is_not_found() => None,
            Err(_) => return None,
        };
        Some(FileText { path, text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inside_the_workspace_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "hello\n").unwrap();
        std::os::unix::fs::symlink("/etc/hostname", root.join("link")).unwrap();
        let files = WorkspaceFiles::new(&root, &root);
        let a = files.read("a.txt").unwrap();
        assert_eq!((a.path, a.text.as_deref()), (root.join("a.txt"), Some("hello\n")));
        assert_eq!(files.read("new.txt").unwrap().text, None, "missing: no text");
        assert!(files.read("../outside").is_none());
        assert!(files.read("/etc/hostname").is_none());
        assert!(files.read("link").is_none_or(|file| file.text.is_none()), "symlink out");
    }
}
