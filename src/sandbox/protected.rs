//! The entries of a workspace a command must never change, because what
//! they hold runs later outside the jail: `.git` (hooks, `core.fsmonitor`,
//! aliases run by the user's git), `.keel` (rules, hooks, config of the
//! next session), `.claude` (Claude Code hooks keel can import),
//! `.mcp.json` (servers the next session starts), editor tasks and the
//! like: [`names`], which are `policy::paths::RUNS_PROGRAMS` (one list for
//! the tools' protected paths and the jail's read-only entries).
//!
//! - Existing ones (and the nested `.git` folders [`nested_git_dirs`]
//!   finds when the session starts) are read-only mounts in the jail.
//! - A recognised git command (`super::git_write`) may write `.git`,
//!   except [`GIT_DIR_GUARDED`] (its config, hooks, `info/`, …), bound
//!   read-only inside it.
//! - One the command *creates* cannot be stopped by a mount (a mount needs
//!   an existing path, and a writable folder accepts any new name), so
//!   [`Sweep`] removes it as soon as the command has ended (the jail's PID
//!   namespace guarantees nothing of the command is left to recreate it)
//!   and says so in the output. Placeholder folders created ahead of time
//!   were the alternative; they litter every workspace and race with other
//!   keel processes, so the sweep was chosen.

use std::path::{Path, PathBuf};

/// The protected names at each workspace root (folders and files).
pub fn names() -> impl Iterator<Item = &'static str> + Clone {
    crate::policy::paths::RUNS_PROGRAMS.iter().map(|entry| entry.name)
}

/// The protected names in words, for the jail's messages.
pub fn names_in_words() -> String {
    names().collect::<Vec<_>>().join(", ")
}

/// What stays read-only in a home folder that lies in a writable root
/// and holds the workspace (CI containers, a workspace under a temp
/// home), beside the shell start-up files (`policy::paths::RC_FILES`):
/// git's config and what holds keys. The home itself cannot be bound
/// read-only there (it would cover the workspace), so these are, one by
/// one; existing ones only (a bind needs a path).
pub const HOME_GUARDED: [&str; 7] = [
    ".gitconfig",
    ".config/git",
    ".ssh",
    ".gnupg",
    ".config/fish",
    ".pam_environment",
    ".xprofile",
];

/// What stays read-only inside a workspace's `.git` when a recognised
/// git command may write it (`super::git_write`): what makes git run
/// programs or read its configuration (and hooks) from elsewhere —
/// config files, hooks, `info/` (attributes, excludes, sparse checkout,
/// grafts), submodules' and worktrees' git folders, `commondir` (a
/// common folder elsewhere: its config and hooks), legacy remotes.
pub const GIT_DIR_GUARDED: [&str; 9] = [
    "config",
    "config.worktree",
    "hooks",
    "info",
    "modules",
    "worktrees",
    "commondir",
    "remotes",
    "branches",
];

/// The protected paths of `workspace_roots`: their protected names, and
/// with `git_write` the guarded names inside their `.git` folders.
pub fn guarded_paths(workspace_roots: &[PathBuf], git_write: bool) -> Vec<PathBuf> {
    let inside_git = workspace_roots
        .iter()
        .filter(|_| git_write)
        .flat_map(|root| GIT_DIR_GUARDED.map(|name| root.join(".git").join(name)));
    workspace_roots
        .iter()
        .flat_map(|root| names().map(|name| root.join(name)))
        .chain(inside_git)
        .collect()
}

/// Folders scanned at most when looking for nested `.git` folders (a
/// session start on a huge tree stays fast; deeper ones stay writable).
pub const NESTED_SCAN_LIMIT: usize = 20_000;
/// Folders that hold dependencies or build output, never nested repos
/// worth the scan time.
const SKIPPED: [&str; 4] = ["node_modules", "target", ".venv", "__pycache__"];

/// The protected names missing at each workspace root before a command.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    absent: Vec<PathBuf>,
}

impl Sweep {
    /// Notes which of the protected `paths` ([`guarded_paths`]) do not
    /// exist yet.
    pub fn before(paths: Vec<PathBuf>) -> Self {
        let absent =
            paths.into_iter().filter(|path| std::fs::symlink_metadata(path).is_err()).collect();
        Self { absent }
    }

    /// Removes every protected name the command created (a symlink is
    /// removed, never followed) and returns one line per removal for the
    /// command's output.
    pub fn after(&self) -> Vec<String> {
        self.absent.iter().filter_map(|path| remove_created(path)).collect()
    }
}

fn remove_created(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let removed =
        if meta.is_dir() { std::fs::remove_dir_all(path) } else { std::fs::remove_file(path) };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let in_git = path.parent().and_then(Path::file_name).is_some_and(|parent| parent == ".git");
    let name = if in_git { format!(".git/{name}") } else { name };
    Some(match removed {
        Ok(()) => format!(
            "keel: removed `{name}` created by the command: {} (.git's config and hooks even for git) are read-only in the sandbox (what they hold runs outside it)",
            names_in_words()
        ),
        Err(error) => format!(
            "keel: WARNING: the command created `{}` and it could not be removed: {error}",
            path.display()
        ),
    })
}

/// `.git` folders (or files, as in worktrees and submodules) below
/// `root`, not counting `root/.git`; symlinks are not followed.
pub fn nested_git_dirs(root: &Path) -> Vec<PathBuf> {
    let mut budget = NESTED_SCAN_LIMIT;
    let mut found = git_dirs_within(root, &mut budget);
    let own = root.join(".git");
    found.retain(|path| *path != own);
    found.sort();
    found
}

/// Whether the search leaves a folder of this name alone (dependencies
/// or build output, never nested repositories worth the time).
pub fn is_skipped(name: &std::ffi::OsStr) -> bool {
    SKIPPED.iter().any(|skip| name == *skip)
}

/// `.git` folders or files in `folder` and below it (folders named by
/// [`is_skipped`] aside), reading at most `budget` folders and taking
/// what it read from `budget`; symlinks are not followed.
pub fn git_dirs_within(folder: &Path, budget: &mut usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![folder.to_owned()];
    while let Some(dir) = pending.pop() {
        let Some(left) = budget.checked_sub(1) else { break };
        *budget = left;
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else { continue };
            if name == ".git" {
                found.push(entry.path());
            } else if kind.is_dir() && !is_skipped(&name) {
                pending.push(entry.path());
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_names_are_removed_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let sweep = Sweep::before(guarded_paths(&[dir.path().to_owned()], false));
        std::fs::create_dir_all(dir.path().join(".keel/rules")).unwrap();
        std::os::unix::fs::symlink("/etc", dir.path().join(".claude")).unwrap();
        let lines = sweep.after();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains("removed `.keel`"), "{lines:?}");
        assert!(!dir.path().join(".keel").exists());
        assert!(std::fs::symlink_metadata(dir.path().join(".claude")).is_err());
        assert!(Path::new("/etc/passwd").exists(), "the symlink was not followed");
        assert!(dir.path().join(".git").is_dir(), "an existing name is left alone");
    }

    #[test]
    fn nested_git_folders_are_found_outside_dependency_folders() {
        let dir = tempfile::tempdir().unwrap();
        for path in [".git", "vendor/lib/.git", "node_modules/x/.git", "sub/deeper/.git"] {
            std::fs::create_dir_all(dir.path().join(path)).unwrap();
        }
        std::fs::write(dir.path().join("module/.git"), "gitdir: ../.git/modules/m").unwrap_or_else(
            |_| {
                std::fs::create_dir_all(dir.path().join("module")).unwrap();
                std::fs::write(dir.path().join("module/.git"), "gitdir: x").unwrap();
            },
        );
        assert_eq!(
            nested_git_dirs(dir.path()),
            ["module/.git", "sub/deeper/.git", "vendor/lib/.git"].map(|p| dir.path().join(p))
        );
    }
}
