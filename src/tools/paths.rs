//! Path resolution and workspace confinement for every tool argument.
//!
//! Invariants: [`Workspace::resolve`] returns an absolute path with every
//! existing component's symlinks resolved, and only if that path lies under
//! the canonical workspace root. One rule for every file tool, the same
//! form their results use: a relative path is relative to the workspace
//! root; when it names nothing there but names something relative to the
//! working directory (a session started in a subfolder), that is used
//! instead, since it is unambiguous (`keel apply-patch`, run by a person in
//! a folder, resolves from that folder only: [`Workspace::relative_to_cwd`]).
//! Absolute paths are allowed only inside
//! the workspace. `..` is applied physically (after resolving the symlinks
//! before it), as the OS would; for components that do not exist yet it is
//! applied lexically. A dangling symlink is refused, since writing through
//! it could land anywhere. This is the check; the use goes through
//! `super::beneath`, which opens exactly the checked path from the root
//! without following symlinks, so a swap in between fails the call.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use super::{ToolContext, ToolError};

/// The canonical workspace root and working directory of one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    cwd: PathBuf,
    /// Relative paths start at the cwd only (`keel apply-patch`, run by a
    /// person in a folder, as `git apply` is), not at the root first.
    cwd_only: bool,
}

impl Workspace {
    /// Canonicalizes the context's root and cwd (blocking: call it from
    /// blocking work). A cwd outside the root is refused.
    pub fn new(ctx: &ToolContext) -> Result<Self, ToolError> {
        Self::from_parts(&ctx.workspace_root, &ctx.cwd)
    }

    pub fn from_parts(root: &Path, cwd: &Path) -> Result<Self, ToolError> {
        let root = root.canonicalize().map_err(|source| ToolError::io(root, source))?;
        let cwd = root.join(cwd).canonicalize().map_err(|source| ToolError::io(cwd, source))?;
        if !cwd.starts_with(&root) {
            return Err(ToolError::OutsideWorkspace { path: cwd, root });
        }
        Ok(Self { root, cwd, cwd_only: false })
    }

    /// The same workspace resolving relative paths from the cwd only.
    pub fn relative_to_cwd(mut self) -> Self {
        self.cwd_only = true;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// Resolves `raw` (relative to the root, else to the cwd when only
    /// that names something; or absolute) and confines it to the
    /// workspace. The path need not exist; its missing tail is kept.
    pub fn resolve(&self, raw: &str) -> Result<PathBuf, ToolError> {
        self.pick(raw, |base| self.resolve_from(base, raw))
    }

    /// [`Self::resolve`], or the working directory when no path is given.
    pub fn resolve_or_cwd(&self, raw: Option<&str>) -> Result<PathBuf, ToolError> {
        match raw {
            Some(raw) => self.resolve(raw),
            None => Ok(self.cwd.clone()),
        }
    }

    /// `resolve(root)` unless it names nothing and `resolve(cwd)` names
    /// something (the rule of [`Self::resolve`]).
    fn pick(
        &self,
        raw: &str,
        resolve: impl Fn(&Path) -> Result<PathBuf, ToolError>,
    ) -> Result<PathBuf, ToolError> {
        if self.cwd_only {
            return resolve(&self.cwd);
        }
        let exists = |path: &PathBuf| std::fs::symlink_metadata(path).is_ok();
        let from_root = resolve(&self.root);
        if Path::new(raw).is_absolute() || self.cwd == self.root {
            return from_root;
        }
        if from_root.as_ref().is_ok_and(exists) {
            return from_root;
        }
        match resolve(&self.cwd) {
            Ok(from_cwd) if exists(&from_cwd) => Ok(from_cwd),
            Ok(_) | Err(_) => from_root,
        }
    }

    fn resolve_from(&self, base: &Path, raw: &str) -> Result<PathBuf, ToolError> {
        let given = Path::new(raw);
        let joined = base.join(given);
        let mut resolved = PathBuf::new();
        let mut missing: Vec<OsString> = Vec::new();
        for component in joined.components() {
            match component {
                Component::Prefix(_) | Component::RootDir => resolved.push(component),
                Component::CurDir => {}
                Component::ParentDir => {
                    if missing.pop().is_none() {
                        resolved.pop();
                    }
                }
                Component::Normal(name) if missing.is_empty() => {
                    match self.step(&resolved, name, given)? {
                        Some(next) => resolved = next,
                        None => missing.push(name.to_owned()),
                    }
                }
                Component::Normal(name) => missing.push(name.to_owned()),
            }
        }
        resolved.extend(missing);
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(ToolError::OutsideWorkspace { path: given.to_owned(), root: self.root.clone() })
        }
    }

    /// Like [`Self::resolve`] but leaves a final symlink unresolved: the
    /// path of the directory entry itself, for operations on the entry
    /// (deleting a symlink removes the link, not its target).
    pub fn resolve_entry(&self, raw: &str) -> Result<PathBuf, ToolError> {
        self.pick(raw, |base| self.resolve_entry_from(base, raw))
    }

    fn resolve_entry_from(&self, base: &Path, raw: &str) -> Result<PathBuf, ToolError> {
        let given = Path::new(raw);
        let (Some(parent), Some(name)) = (given.parent(), given.file_name()) else {
            return self.resolve_from(base, raw);
        };
        let parent = self.resolve_from(base, &parent.to_string_lossy())?;
        let entry = parent.join(name);
        if entry.starts_with(&self.root) && entry != self.root {
            Ok(entry)
        } else {
            Err(ToolError::OutsideWorkspace { path: given.to_owned(), root: self.root.clone() })
        }
    }

    /// Appends one existing component to the canonical `base`, resolving a
    /// symlink; `None` when the component does not exist.
    fn step(
        &self,
        base: &Path,
        name: &std::ffi::OsStr,
        given: &Path,
    ) -> Result<Option<PathBuf>, ToolError> {
        let next = base.join(name);
        let metadata = match std::fs::symlink_metadata(&next) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(ToolError::io(given, error)),
        };
        if !metadata.file_type().is_symlink() {
            return Ok(Some(next));
        }
        match next.canonicalize() {
            Ok(target) => Ok(Some(target)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                Err(ToolError::DanglingSymlink { path: given.to_owned() })
            }
            Err(error) => Err(ToolError::io(given, error)),
        }
    }

    /// `abs` relative to the workspace root, as the model should see it
    /// (`.` for the root itself; unchanged if outside).
    pub fn relative(&self, abs: &Path) -> PathBuf {
        match abs.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => PathBuf::from("."),
            Ok(rel) => rel.to_owned(),
            Err(_) => abs.to_owned(),
        }
    }

    /// [`Self::relative`] as a string with `/` separators.
    pub fn display(&self, abs: &Path) -> String {
        self.relative(abs).to_string_lossy().into_owned()
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    fn workspace(ws: &TestWorkspace) -> Workspace {
        Workspace::new(&ws.ctx).unwrap()
    }

    fn outside(result: Result<PathBuf, ToolError>) -> bool {
        matches!(result, Err(ToolError::OutsideWorkspace { .. }))
    }

    #[test]
    fn relative_existing_file_resolves_inside() {
        let ws = TestWorkspace::new();
        ws.write("src/main.rs", "");
        let resolved = workspace(&ws).resolve("src/main.rs").unwrap();
        assert_eq!(resolved, ws.canonical_root().join("src/main.rs"));
    }

    #[test]
    fn new_nested_file_keeps_its_missing_tail() {
        let ws = TestWorkspace::new();
        let resolved = workspace(&ws).resolve("a/b/c.txt").unwrap();
        assert_eq!(resolved, ws.canonical_root().join("a/b/c.txt"));
    }

    #[test]
    fn dot_is_the_cwd_and_root() {
        let ws = TestWorkspace::new();
        let w = workspace(&ws);
        assert_eq!(w.resolve(".").unwrap(), ws.canonical_root());
        assert_eq!(w.resolve("").unwrap(), ws.canonical_root());
        assert_eq!(w.display(&ws.canonical_root()), ".");
    }

    #[test]
    fn parent_escape_is_rejected() {
        let ws = TestWorkspace::new();
        ws.write("sub/file", "");
        let w = workspace(&ws);
        assert!(outside(w.resolve("..")));
        assert!(outside(w.resolve("../etc/passwd")));
        assert!(outside(w.resolve("sub/../../x")));
        assert!(outside(w.resolve("new/../../x")));
    }

    #[test]
    fn parent_that_stays_inside_is_fine() {
        let ws = TestWorkspace::new();
        ws.write("sub/file", "");
        let w = workspace(&ws);
        assert_eq!(w.resolve("sub/../sub/file").unwrap(), ws.canonical_root().join("sub/file"));
        assert_eq!(w.resolve("new/../file").unwrap(), ws.canonical_root().join("file"));
    }

    #[test]
    fn absolute_paths_only_inside() {
        let ws = TestWorkspace::new();
        ws.write("a.txt", "");
        let w = workspace(&ws);
        assert!(outside(w.resolve("/etc/passwd")));
        assert!(outside(w.resolve("/")));
        let inside = ws.canonical_root().join("a.txt");
        assert_eq!(w.resolve(&inside.to_string_lossy()).unwrap(), inside);
    }

    #[test]
    fn symlink_pointing_outside_is_rejected() {
        let ws = TestWorkspace::new();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("secret"), "s").unwrap();
        symlink(elsewhere.path(), ws.path("link")).unwrap();
        symlink(elsewhere.path().join("secret"), ws.path("file-link")).unwrap();
        let w = workspace(&ws);
        assert!(outside(w.resolve("link")));
        assert!(outside(w.resolve("link/secret")));
        assert!(outside(w.resolve("link/new-file.txt")));
        assert!(outside(w.resolve("file-link")));
    }

    #[test]
    fn symlink_within_the_workspace_resolves_to_its_target() {
        let ws = TestWorkspace::new();
        ws.write("real/file", "");
        symlink(ws.path("real"), ws.path("alias")).unwrap();
        let resolved = workspace(&ws).resolve("alias/file").unwrap();
        assert_eq!(resolved, ws.canonical_root().join("real/file"));
    }

    #[test]
    fn dangling_symlink_is_rejected() {
        let ws = TestWorkspace::new();
        symlink("/nonexistent/keel/target", ws.path("dangling")).unwrap();
        let result = workspace(&ws).resolve("dangling");
        assert!(matches!(result, Err(ToolError::DanglingSymlink { .. })), "{result:?}");
    }

    #[test]
    fn entry_resolution_keeps_a_final_symlink() {
        let ws = TestWorkspace::new();
        ws.write("real.txt", "");
        symlink(ws.path("real.txt"), ws.path("link")).unwrap();
        let w = workspace(&ws);
        assert_eq!(w.resolve_entry("link").unwrap(), ws.canonical_root().join("link"));
        assert_eq!(w.resolve("link").unwrap(), ws.canonical_root().join("real.txt"));
        assert!(outside(w.resolve_entry("../x")));
        assert!(outside(w.resolve_entry("..")));
    }

    #[test]
    fn relative_paths_start_at_the_root_else_the_cwd_when_only_that_exists() {
        let mut ws = TestWorkspace::new();
        ws.write("crate/src/lib.rs", "");
        ws.write("crate/only-here.txt", "");
        ws.write("README.md", "");
        ws.write("crate/README.md", "");
        ws.ctx.cwd = ws.path("crate");
        let w = workspace(&ws);
        let root = ws.canonical_root();
        assert_eq!(w.resolve("crate/src/lib.rs").unwrap(), root.join("crate/src/lib.rs"));
        assert_eq!(w.resolve("src/lib.rs").unwrap(), root.join("crate/src/lib.rs"));
        assert_eq!(w.resolve("only-here.txt").unwrap(), root.join("crate/only-here.txt"));
        assert_eq!(w.resolve("README.md").unwrap(), root.join("README.md"), "the root wins");
        assert_eq!(w.resolve("new.txt").unwrap(), root.join("new.txt"), "new files: the root");
        assert_eq!(w.resolve("..").unwrap(), root, "only the cwd's reading is inside");
        assert_eq!(w.resolve_or_cwd(None).unwrap(), root.join("crate"));
        assert!(outside(w.resolve("../..")));
        let from_cwd = workspace(&ws).relative_to_cwd();
        assert_eq!(from_cwd.resolve("README.md").unwrap(), root.join("crate/README.md"));
        assert_eq!(from_cwd.resolve("crate/x").unwrap(), root.join("crate/crate/x"));
    }

    #[test]
    fn cwd_outside_the_root_is_refused() {
        let mut ws = TestWorkspace::new();
        ws.ctx.cwd = std::env::temp_dir();
        assert!(matches!(Workspace::new(&ws.ctx), Err(ToolError::OutsideWorkspace { .. })));
    }
}
