//! Lexical path facts the policy needs: where home, the workspace and the
//! working directory are, how a word from a command names a path, and
//! which paths are protected.
//!
//! Pure: nothing here touches the filesystem, so symlinks are not
//! resolved. That is why file tools confine paths again (with symlinks
//! resolved) in `tools/paths.rs`, and why shell commands run sandboxed.

use std::path::{Component, Path, PathBuf};

/// The places a decision depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathContext {
    pub home: PathBuf,
    pub workspace_root: PathBuf,
    pub cwd: PathBuf,
}

/// Shell start-up files: writing one runs code in every later shell.
const RC_FILES: [&str; 12] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".inputrc",
    ".kshrc",
    ".cshrc",
];

/// Directory names that are protected wherever they appear.
const PROTECTED_DIRS: [&str; 3] = [".git", ".keel", ".ssh"];

impl PathContext {
    /// A word from a command (`~/x`, `$HOME/x`, `../x`, `/x`) as an
    /// absolute, lexically normalised path.
    pub fn resolve(&self, word: &str) -> PathBuf {
        self.resolve_in(&self.cwd, word)
    }

    /// A file tool's `path` as the tools read it first: from the workspace
    /// root (`tools::paths`; they fall back to the cwd's reading when only
    /// that names something, so policy judges both).
    pub fn resolve_from_root(&self, word: &str) -> PathBuf {
        self.resolve_in(&self.workspace_root, word)
    }

    fn resolve_in(&self, base: &Path, word: &str) -> PathBuf {
        let home = self.home.to_string_lossy();
        let expanded = if word == "~" || word == "$HOME" || word == "${HOME}" {
            home.to_string()
        } else if let Some(rest) =
            ["~/", "$HOME/", "${HOME}/"].iter().find_map(|prefix| word.strip_prefix(prefix))
        {
            format!("{home}/{rest}")
        } else {
            word.to_owned()
        };
        normalize(&base.join(expanded))
    }

    /// The path relative to the workspace root (`/`-separated), or `None`
    /// when it lies outside.
    pub fn in_workspace(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.workspace_root).ok()?;
        Some(rel.to_string_lossy().replace('\\', "/"))
    }

    /// Whether a write to `path` needs a human: anything under a `.git`,
    /// `.keel` or `.ssh` folder, or a shell start-up file.
    pub fn is_protected(&self, path: &Path) -> bool {
        let names: Vec<String> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                Component::RootDir
                | Component::CurDir
                | Component::ParentDir
                | Component::Prefix(_) => None,
            })
            .collect();
        let in_protected_dir = names.iter().any(|n| PROTECTED_DIRS.contains(&n.as_str()));
        let rc_file = names.last().is_some_and(|n| RC_FILES.contains(&n.as_str()));
        in_protected_dir || rc_file
    }

    /// Whether destroying `path` destroys the system, the home folder or
    /// the workspace: `/`, a top-level system folder, home or an ancestor
    /// of it, the workspace root or an ancestor of it.
    pub fn is_critical(&self, path: &Path) -> bool {
        const SYSTEM: [&str; 14] = [
            "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
            "/sbin", "/sys", "/usr", "/var",
        ];
        path == Path::new("/")
            || SYSTEM.iter().any(|dir| path == Path::new(dir))
            || self.home.starts_with(path)
            || self.workspace_root.starts_with(path)
    }
}

/// Removes `.` and `..` without touching the filesystem; `..` never climbs
/// above the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PathContext {
        PathContext {
            home: "/home/u".into(),
            workspace_root: "/home/u/ws".into(),
            cwd: "/home/u/ws/src".into(),
        }
    }

    #[test]
    fn resolves_home_and_parents() {
        assert_eq!(ctx().resolve("~/.ssh/id"), Path::new("/home/u/.ssh/id"));
        assert_eq!(ctx().resolve("$HOME"), Path::new("/home/u"));
        assert_eq!(ctx().resolve("../../../../x"), Path::new("/x"));
        assert_eq!(ctx().resolve("a/./b"), Path::new("/home/u/ws/src/a/b"));
    }

    #[test]
    fn critical_and_protected() {
        let c = ctx();
        assert!(c.is_critical(&c.resolve("..")));
        assert!(c.is_critical(&c.resolve("/")));
        assert!(!c.is_critical(&c.resolve("target")));
        assert!(c.is_protected(&c.resolve("../.git/hooks/pre-commit")));
        assert!(c.is_protected(&c.resolve("~/.bashrc")));
        assert!(!c.is_protected(&c.resolve("main.rs")));
    }
}
