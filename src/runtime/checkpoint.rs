//! Workspace checkpoints for undo: a shadow git repository per workspace
//! under `$KEEL_HOME/shadow/<hash of the workspace path>`, driven with the
//! `git` CLI through [`crate::sandbox::run`] (the only process spawner).
//!
//! Invariants: the user's own `.git` is never touched (the shadow has its
//! own git dir; `.git` directories are never snapshotted); the workspace's
//! `.gitignore` is honoured, so build output is not copied; nothing the
//! workspace or the user's git config names runs (hooks, fsmonitor,
//! filters, signing: [`super::git`]'s neutral config and environment, no
//! global or system config, no init template, `--no-verify`); a restore
//! first snapshots the current state, so an undo can itself be undone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::git;
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
}

/// The shadow repository of one workspace.
#[derive(Debug, Clone)]
pub struct ShadowRepo {
    git_dir: PathBuf,
    work_tree: PathBuf,
}

const GIT_TIMEOUT: Duration = Duration::from_secs(300);

impl ShadowRepo {
    pub fn for_workspace(keel_home: &Path, workspace_root: &Path) -> Self {
        let key = content_hash(workspace_root.display().to_string().as_bytes());
        let key = key.trim_start_matches("fnv1a64:").to_owned();
        Self { git_dir: keel_home.join("shadow").join(key), work_tree: workspace_root.to_owned() }
    }

    /// Commits the whole workspace as it is now; returns the commit id.
    pub async fn snapshot(&self, message: &str) -> Result<String, CheckpointError> {
        self.ensure_init().await?;
        self.git(&["add", "-A", "--", "."]).await?;
        self.git(&["commit", "-q", "--allow-empty", "--no-verify", "-m", message]).await?;
        Ok(self.git(&["rev-parse", "HEAD"]).await?.trim().to_owned())
    }

    /// Makes the workspace equal `commit`: changed files are restored,
    /// files created since are removed. Snapshots the current state first.
    pub async fn restore(&self, commit: &str) -> Result<String, CheckpointError> {
        let before_undo = self.snapshot("before undo").await?;
        self.git(&["read-tree", "-u", "--reset", commit]).await?;
        Ok(before_undo)
    }

    /// The paths that differ between two commits (workspace-relative).
    pub async fn changed_between(
        &self,
        from: &str,
        to: &str,
    ) -> Result<Vec<String>, CheckpointError> {
        let names = self.git(&["diff", "--name-only", "--no-renames", from, to]).await?;
        Ok(names.lines().filter(|line| !line.is_empty()).map(str::to_owned).collect())
    }

    /// Writes the files of `commit` into `dest` (an empty folder), leaving
    /// the shadow repository's index and the workspace alone.
    pub async fn export(&self, commit: &str, dest: &Path) -> Result<(), CheckpointError> {
        let index = dest.join(".keel-export-index");
        let export = Self { git_dir: self.git_dir.clone(), work_tree: dest.to_owned() };
        export.git_with_index(&["read-tree", "-u", "--reset", commit], Some(&index)).await?;
        let _ = std::fs::remove_file(index);
        Ok(())
    }

    async fn ensure_init(&self) -> Result<(), CheckpointError> {
        if self.git_dir.join("HEAD").is_file() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.git_dir)
            .map_err(|source| CheckpointError::CreateDir { path: self.git_dir.clone(), source })?;
        // No template: nothing (hooks included) is copied into the shadow.
        self.git(&["init", "-q", "--template="]).await?;
        Ok(())
    }

    async fn git(&self, args: &[&str]) -> Result<String, CheckpointError> {
        self.git_with_index(args, None).await
    }

    async fn git_with_index(
        &self,
        args: &[&str],
        index: Option<&Path>,
    ) -> Result<String, CheckpointError> {
        let identity = ["user.name=keel", "user.email=keel@localhost", "core.autocrlf=false"]
            .map(str::to_owned);
        let mut spec = git::spec(&self.git_dir, &self.work_tree, &identity, args, GIT_TIMEOUT);
        if let Some(index) = index {
            spec = spec.with_env("GIT_INDEX_FILE", index);
        }
        let output = run(&spec, &CancellationToken::new()).await?;
        if !output.success() {
            return Err(CheckpointError::Git {
                command: args.join(" "),
                stderr: output.stderr.text().trim().to_owned(),
            });
        }
        Ok(output.stdout.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn restore_brings_back_changed_and_removes_created_files() {
        let home = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("a.txt"), "one").unwrap();
        std::fs::write(work.path().join(".gitignore"), "build/\n").unwrap();
        let shadow = ShadowRepo::for_workspace(home.path(), work.path());
        let commit = shadow.snapshot("turn 1").await.unwrap();
        std::fs::write(work.path().join("a.txt"), "two").unwrap();
        std::fs::write(work.path().join("new.txt"), "new").unwrap();
        std::fs::create_dir(work.path().join("build")).unwrap();
        std::fs::write(work.path().join("build/out"), "o").unwrap();
        let saved = shadow.restore(&commit).await.unwrap();
        let changed = shadow.changed_between(&saved, &commit).await.unwrap();
        assert_eq!(changed, ["a.txt", "new.txt"]);
        assert_eq!(std::fs::read_to_string(work.path().join("a.txt")).unwrap(), "one");
        assert!(!work.path().join("new.txt").exists());
        assert!(work.path().join("build/out").exists(), "ignored files are left alone");

        let copy = tempfile::tempdir().unwrap();
        shadow.export(&commit, copy.path()).await.unwrap();
        assert_eq!(std::fs::read_to_string(copy.path().join("a.txt")).unwrap(), "one");
        assert!(!copy.path().join(".keel-export-index").exists());
    }
}
