//! Workspace checkpoints for undo: a shadow git repository per workspace
//! under `$KEEL_HOME/shadow/<hash of the workspace path>`, driven with the
//! `git` CLI through [`crate::runtime::git`] (neutralised config, minimal env,
//! timeouts).
//!
//! A checkpoint costs what changed, not what exists: the shadow
//! borrows the project's objects and starts from its index
//! (`shadow_seed.rs`), so tracked files unchanged since the user's last
//! `git add` are neither read nor copied; the index is kept between
//! sessions with git's untracked cache, so a full look ([`Scope::Everything`],
//! one `git status`) reads only folders whose listing changed; within a
//! session the watcher names what changed ([`Scope::Paths`]) and only that
//! is looked at. New content is hashed into the shadow's own objects.
//!
//! Invariants: the user's own `.git` is never written (the shadow has its
//! own git dir and index; `.git` folders are never snapshotted); ignored
//! files are not checkpointed, and neither are files over
//! [`UndoLimits::max_file_bytes`] or past [`UndoLimits::max_total_bytes`] of new
//! content in one checkpoint: such a file is kept out of the shadow index
//! altogether (so a restore leaves it alone rather than writing an old
//! version) and named in [`Snapshot::skipped`]; a restore first snapshots
//! the current state, so an undo can itself be undone, reading every
//! folder for it ([`ShadowRepo::snapshot_fresh`]): git's untracked cache
//! compares a folder's times by whole seconds, so a file made in a folder
//! within the second the folder was last listed could be missed, and a
//! restore would leave it behind (found by `tests/suite/rewind_properties.rs`).
//! Checkpoints' own full looks still trust the cache. A failed git
//! command gives its space back: git leaves the temporary object it was
//! writing (`objects/xx/tmp_obj_*`) when it dies, e.g. on a full disk,
//! and that file would keep the disk full for every later session of
//! this KEEL_HOME; [`ShadowRepo`] removes such files after any failure.
//!
//! # Large repositories
//!
//! Nothing at start is proportional to the repository: the environment summary reads `HEAD` and the
//! index header, and runs `git status` only when the index tracks at most 5 000 files
//! (`files::STATUS_MAX_TRACKED`; else "N tracked files, status not read"); the TUI lists files only
//! when asked; the jail's nested `.git` search is registered at start but runs only when a command
//! may write: it starts beside the session's first checkpoint and every writing confined command
//! waits for it (`sandbox::settle_read_only`; reads never do). In a session it is also the undo
//! watcher's walk (`first_walk.rs`: `Watcher::start_finding_nested` watches every folder not
//! ignored, notes their nested `.git`, searches the ignored folders with
//! `protected::git_dirs_within` up to 20 000 folders, and hands the watcher to the checkpoints);
//! `keel tool` keeps the plain `protected::nested_git_dirs`. That walk takes each folder's listing
//! from `folder_cache.rs` (`$KEEL_HOME/shadow/<hash>.folders`, kept between sessions) while the
//! folder's device, inode and ctime are unchanged, so a later session reads only the folders that
//! changed (one `statx` for the others); folders changed within 100 ms of a walk are not recorded.
//! The first walk of a workspace (nothing kept) is the search alone (it fills the cache) and the
//! watcher starts after the first checkpoint, as it does without the sandbox.
//! `tests/suite/large_repo.rs` counts the work with strace.
//!
//! # How a checkpoint works
//!
//! - The shadow repository has `objects/info/alternates` pointing at the project's object store and
//!   starts from a copy of the project's index (`shadow_seed.rs`: same mtime, so git's racy-clean
//!   check still holds; assume-unchanged/skip-worktree bits cleared; not seeded when an attributes
//!   file names a `filter=`, since the index then holds LFS pointers, not what is on disk). The
//!   index is v4 with git's untracked cache and is kept between sessions.
//! - A checkpoint is `git status -z -uall` (whole tree, or `--literal-pathspecs -- <paths>`), then
//!   `shadow_triage.rs` decides per path (save, drop from the index, leave out over `[undo]` caps),
//!   `update-index`, `write-tree`, and `commit-tree` + `update-ref` only when the tree differs from
//!   the last checkpoint's (`keel-last-checkpoint` in the shadow).
//! - The session's first checkpoint looks at everything while `watch::Watcher` is set up (inotify
//!   on every folder not ignored; `.git` and `$KEEL_HOME` excluded; by the nested `.git` search's
//!   walk when there is one, else on its own after the look); later checkpoints look at the
//!   watcher's dirty paths only (`Dirty::Everything` after a queue overflow, a `.gitignore` change,
//!   or more than 20 000 paths). Around each shell call the watcher's mark says whether it changed
//!   anything (`meta.changed`, the workflow gate) and which ignored files it touched
//!   (`meta.not_checkpointed`, which `keel undo` names). The tree fingerprint for resume is kept
//!   only for trees up to 2 000 files.
//! - `RuntimeEvent::Progress` announces the first checkpoint of a large workspace before it starts,
//!   and any checkpoint still running after 0.5 s; exec prints it (`progress` in `--json`), the TUI
//!   shows a notice.
//! - The shadow's checkpoints reference the project's objects: a `git gc --prune=now` after the
//!   user dropped the commits or staged blobs a checkpoint borrowed breaks the undo of that
//!   checkpoint (`write-tree`/`read-tree` name the missing object); git's default two-week grace
//!   period covers ordinary sessions. A failed checkpoint forgets the shadow index, so the next
//!   session seeds afresh.
//! - `benches/large_repo.sh` builds a large repository from the crate sources in the local cargo
//!   registry cache and measures keel against Codex there (`benches/README.md`): `steps20` (`echo`,
//!   which policy proves read-only, so no checkpoint) and `writes20` (each step appends to a file:
//!   the checkpoint and the watcher are paid).

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::shadow_seed::ProjectGit;
use crate::runtime::git;
use crate::sandbox::{SandboxError, run};
use crate::session::content_hash;

/// Why a checkpoint could not be taken or restored.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot create the shadow repository folder {path}: {source}")]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot run git for checkpoints: {0}")]
    Spawn(#[from] SandboxError),
    #[error("`git {command}` failed for the checkpoint repository: {stderr}")]
    Git { command: String, stderr: String },
    #[error("`git {command}` printed more than keel reads ({limit} bytes)")]
    TooMuchOutput { command: String, limit: usize },
}

/// What a checkpoint looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole work tree (one `git status`).
    Everything,
    /// Only these workspace-relative paths (files, or whole folders).
    Paths(Vec<PathBuf>),
}

/// How a look lists the files git does not track yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Listing {
    /// Through git's untracked cache: a folder whose listing did not
    /// change is not read again.
    Cached,
    /// Every folder read. The cache compares a folder's times by whole
    /// seconds, so a folder changed within the second it was listed looks
    /// unchanged once an index written later makes the cache look settled.
    Fresh,
}

/// Size caps of what one checkpoint copies (`[undo]` settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoLimits {
    /// Files larger than this are not checkpointed.
    pub max_file_bytes: u64,
    /// New content one checkpoint copies at most.
    pub max_total_bytes: u64,
}

impl Default for UndoLimits {
    fn default() -> Self {
        crate::config::UndoSettings::default().into()
    }
}

impl From<crate::config::UndoSettings> for UndoLimits {
    fn from(settings: crate::config::UndoSettings) -> Self {
        const MB: u64 = 1024 * 1024;
        Self {
            max_file_bytes: settings.max_file_mb.saturating_mul(MB),
            max_total_bytes: settings.max_total_mb.saturating_mul(MB),
        }
    }
}

/// A file a checkpoint left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub path: String,
    pub bytes: u64,
    pub reason: SkipReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Over [`UndoLimits::max_file_bytes`].
    FileTooLarge,
    /// Past [`UndoLimits::max_total_bytes`] of new content.
    OverBudget,
    /// Not a regular file or symlink (FIFO, socket, device), a nested
    /// repository, or a name that is not UTF-8.
    Unsupported,
}

/// A checkpoint taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// Commit id in the shadow repository.
    pub commit: String,
    /// Files looked at and saved (new or changed since the shadow last saw them).
    pub saved_files: usize,
    pub saved_bytes: u64,
    pub skipped: Vec<Skipped>,
}

/// The shadow repository of one workspace.
#[derive(Debug, Clone)]
pub struct ShadowRepo {
    pub(in crate::runtime) git_dir: PathBuf,
    pub(in crate::runtime) work_tree: PathBuf,
    pub(in crate::runtime) project: Option<ProjectGit>,
}

const GIT_TIMEOUT: Duration = Duration::from_secs(300);
/// File in the shadow's git dir: `<tree> <commit>` of the last checkpoint.
const LAST_CHECKPOINT: &str = "keel-last-checkpoint";
/// Bytes of git output read (a `git status` of a large fresh tree).
const OUTPUT_LIMIT: usize = 256 * 1024 * 1024;
/// Bytes of paths passed on one git command line.
const ARGS_BYTES: usize = 96 * 1024;
/// Paths (or their bytes, [`ARGS_BYTES`]) past which a partial look is
/// no cheaper than a full one.
pub const MAX_SCOPE_PATHS: usize = 2_000;

impl ShadowRepo {
    pub fn for_workspace(keel_home: &Path, workspace_root: &Path) -> Self {
        Self {
            git_dir: shadow_dir(keel_home, workspace_root),
            work_tree: workspace_root.to_owned(),
            project: ProjectGit::find(workspace_root),
        }
    }

    /// Whether this workspace was never checkpointed (the first one copies
    /// or reads the most).
    pub fn is_new(&self) -> bool {
        !self.index_path().is_file()
    }

    /// Files the project's git tracks, if it is a repository.
    pub fn tracked_files(&self) -> Option<u32> {
        self.project.as_ref().and_then(ProjectGit::tracked_files)
    }

    /// Records the work tree as it is now (what `scope` names of it) and
    /// returns the checkpoint.
    pub async fn snapshot(
        &self,
        scope: &Scope,
        limits: UndoLimits,
        message: &str,
    ) -> Result<Snapshot, CheckpointError> {
        self.snapshot_listing(scope, limits, message, Listing::Cached).await
    }

    /// Records the whole work tree, every folder read (not trusting git's
    /// untracked cache): what a restore is about to remove or overwrite
    /// must all be in it.
    pub async fn snapshot_fresh(
        &self,
        limits: UndoLimits,
        message: &str,
    ) -> Result<Snapshot, CheckpointError> {
        self.snapshot_listing(&Scope::Everything, limits, message, Listing::Fresh).await
    }

    async fn snapshot_listing(
        &self,
        scope: &Scope,
        limits: UndoLimits,
        message: &str,
        listing: Listing,
    ) -> Result<Snapshot, CheckpointError> {
        self.prepare().await?;
        let scope = match scope {
            Scope::Paths(paths) if self.is_new() || !fits_on_command_line(paths) => {
                &Scope::Everything
            }
            Scope::Paths(_) | Scope::Everything => scope,
        };
        let changes = self.changes(scope, listing).await?;
        let plan = super::shadow_triage::triage(&self.work_tree, &changes, limits);
        for chunk in chunked(&plan.update) {
            let mut args = vec!["update-index", "--add", "--remove", "--"];
            args.extend(chunk);
            self.git(&args).await?;
        }
        for chunk in chunked(&plan.drop) {
            let mut args = vec!["update-index", "--force-remove", "--"];
            args.extend(chunk);
            self.git(&args).await?;
        }
        let tree = self.git(&["write-tree"]).await?.trim().to_owned();
        let commit = match self.last_checkpoint() {
            // Nothing changed since: the last checkpoint is this one too.
            Some((last_tree, commit)) if last_tree == tree => commit,
            Some(_) | None => self.commit(&tree, message).await?,
        };
        Ok(Snapshot {
            commit,
            saved_files: plan.saved_files,
            saved_bytes: plan.saved_bytes,
            skipped: plan.skipped,
        })
    }

    /// Commits `tree` on top of the last checkpoint (so older ones stay
    /// reachable) and remembers it.
    async fn commit(&self, tree: &str, message: &str) -> Result<String, CheckpointError> {
        let mut args = vec!["commit-tree", tree, "-m", message];
        let parent = self.head();
        if let Some(parent) = &parent {
            args.extend(["-p", parent.as_str()]);
        }
        let commit = self.git(&args).await?.trim().to_owned();
        self.git(&["update-ref", "HEAD", &commit]).await?;
        let _ = crate::support::private_dir::write_private(
            &self.git_dir.join(LAST_CHECKPOINT),
            format!("{tree} {commit}\n").as_bytes(),
        );
        Ok(commit)
    }

    /// The tree and commit of the last checkpoint, if recorded.
    fn last_checkpoint(&self) -> Option<(String, String)> {
        let text = std::fs::read_to_string(self.git_dir.join(LAST_CHECKPOINT)).ok()?;
        let (tree, commit) = text.trim().split_once(' ')?;
        Some((tree.to_owned(), commit.to_owned()))
    }

    /// Makes the workspace equal `commit`: changed files are restored,
    /// files created since are removed (what no checkpoint covers is left
    /// alone). Snapshots the current state first; returns that snapshot.
    pub async fn restore(
        &self,
        commit: &str,
        limits: UndoLimits,
    ) -> Result<Snapshot, CheckpointError> {
        let before_undo = self.snapshot_fresh(limits, "before undo").await?;
        // The index now holds `commit`'s tree, which the next checkpoint
        // must not take for the last one's.
        let _ = std::fs::remove_file(self.git_dir.join(LAST_CHECKPOINT));
        self.git(&["read-tree", "-u", "--reset", commit]).await?;
        Ok(before_undo)
    }

    /// The paths that differ between two commits (workspace-relative).
    pub async fn changed_between(
        &self,
        from: &str,
        to: &str,
    ) -> Result<Vec<String>, CheckpointError> {
        let names = self.git(&["diff", "--name-only", "-z", "--no-renames", from, to]).await?;
        Ok(names.split('\0').filter(|line| !line.is_empty()).map(str::to_owned).collect())
    }

    /// Writes the files of `commit` into `dest` (an empty folder), leaving
    /// the shadow repository's index and the workspace alone.
    pub async fn export(&self, commit: &str, dest: &Path) -> Result<(), CheckpointError> {
        let index = dest.join(".keel-export-index");
        let export =
            Self { git_dir: self.git_dir.clone(), work_tree: dest.to_owned(), project: None };
        export.git_with_index(&["read-tree", "-u", "--reset", commit], Some(&index)).await?;
        let _ = std::fs::remove_file(index);
        Ok(())
    }

    /// Forgets the shadow index (the next checkpoint starts afresh): after
    /// a failure that may have left it inconsistent.
    pub fn reset_index(&self) {
        let _ = std::fs::remove_file(self.index_path());
        let _ = std::fs::remove_file(self.git_dir.join(LAST_CHECKPOINT));
    }

    pub(in crate::runtime) fn index_path(&self) -> PathBuf {
        self.git_dir.join("index")
    }

    /// What `git status` says differs between the shadow index and the
    /// work tree, as (`XY`, path) pairs.
    async fn changes(
        &self,
        scope: &Scope,
        listing: Listing,
    ) -> Result<Vec<(String, String)>, CheckpointError> {
        let mut args = match listing {
            Listing::Cached => Vec::new(),
            Listing::Fresh => vec!["-c", "core.untrackedCache=false"],
        };
        args.extend([
            "--literal-pathspecs",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
        ]);
        let paths: Vec<String>;
        if let Scope::Paths(list) = scope {
            if list.is_empty() {
                return Ok(Vec::new());
            }
            paths = list.iter().map(|path| path.display().to_string()).collect();
            args.push("--");
            args.extend(paths.iter().map(String::as_str));
        }
        let output = self.git(&args).await?;
        Ok(output
            .split('\0')
            .filter_map(|entry| {
                let code = entry.get(..2)?;
                let path = entry.get(3..)?;
                Some((code.to_owned(), path.to_owned()))
            })
            .collect())
    }

    /// The last checkpoint, read from the ref files (the shadow never
    /// packs refs): the next one's parent, so older ones stay reachable.
    fn head(&self) -> Option<String> {
        let head = std::fs::read_to_string(self.git_dir.join("HEAD")).ok()?;
        let reference = head.trim().strip_prefix("ref: ")?;
        if reference.split('/').any(|part| part == ".." || part.is_empty()) {
            return None;
        }
        let commit = std::fs::read_to_string(self.git_dir.join(reference)).ok()?;
        let commit = commit.trim();
        (commit.len() >= 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| commit.to_owned())
    }

    pub(in crate::runtime) async fn git(&self, args: &[&str]) -> Result<String, CheckpointError> {
        self.git_with_index(args, None).await
    }

    async fn git_with_index(
        &self,
        args: &[&str],
        index: Option<&Path>,
    ) -> Result<String, CheckpointError> {
        let config = [
            "user.name=keel",
            "user.email=keel@localhost",
            "core.autocrlf=false",
            // Folders whose listing did not change are not read again.
            "core.untrackedCache=true",
            "status.showUntrackedFiles=all",
            "index.version=4",
            // Every file and folder git writes is the owner's only,
            // whatever the umask (KEEL_HOME's 0700 is the first wall).
            "core.sharedRepository=0600",
        ]
        .map(str::to_owned);
        let mut spec = git::spec(&self.git_dir, &self.work_tree, &config, args, GIT_TIMEOUT)
            .with_output_limit(OUTPUT_LIMIT)
            // The shadow's own index: `status` may save what it refreshed.
            .with_env("GIT_OPTIONAL_LOCKS", "1");
        if let Some(index) = index {
            spec = spec.with_env("GIT_INDEX_FILE", index);
        }
        let output = run(&spec, &CancellationToken::new()).await?;
        let command = args.join(" ");
        if !output.success() {
            self.remove_temporary_objects();
            let stderr = output.stderr.text().trim().to_owned();
            return Err(CheckpointError::Git { command, stderr });
        }
        if output.stdout.truncated() {
            return Err(CheckpointError::TooMuchOutput { command, limit: OUTPUT_LIMIT });
        }
        Ok(output.stdout.text())
    }
}

impl ShadowRepo {
    /// Deletes the temporary files a git that died mid-write left in the
    /// object store (`tmp_obj_*` loose objects, `tmp_*` packs). Best
    /// effort: what cannot be listed or removed stays, as before.
    fn remove_temporary_objects(&self) {
        let objects = self.git_dir.join("objects");
        let Ok(entries) = std::fs::read_dir(&objects) else { return };
        let mut folders = vec![objects.clone()];
        folders.extend(entries.flatten().map(|entry| entry.path()).filter(|path| path.is_dir()));
        for folder in folders {
            let Ok(entries) = std::fs::read_dir(&folder) else { continue };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let temporary = name.starts_with("tmp_obj_")
                    || (folder.ends_with("pack") && name.starts_with("tmp_"));
                if temporary && entry.file_type().is_ok_and(|kind| kind.is_file()) {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
    }
}

/// Where the shadow repository of `workspace_root` lives.
pub(in crate::runtime) fn shadow_dir(keel_home: &Path, workspace_root: &Path) -> PathBuf {
    let key = content_hash(workspace_root.display().to_string().as_bytes());
    keel_home.join("shadow").join(key.trim_start_matches("fnv1a64:"))
}

fn fits_on_command_line(paths: &[PathBuf]) -> bool {
    let bytes: usize = paths.iter().map(|path| path.as_os_str().len() + 1).sum();
    paths.len() <= MAX_SCOPE_PATHS && bytes <= ARGS_BYTES
}

/// `paths` in groups that fit one command line.
pub(in crate::runtime) fn chunked<S: AsRef<str>>(paths: &[S]) -> Vec<Vec<&str>> {
    let mut chunks: Vec<Vec<&str>> = Vec::new();
    let mut bytes = ARGS_BYTES;
    for path in paths {
        let path = path.as_ref();
        if bytes + path.len() > ARGS_BYTES {
            chunks.push(Vec::new());
            bytes = 0;
        }
        bytes += path.len() + 1;
        if let Some(chunk) = chunks.last_mut() {
            chunk.push(path);
        }
    }
    chunks
}

#[cfg(test)]
#[path = "checkpoint_tests.rs"]
mod tests;
