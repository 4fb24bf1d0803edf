//! Every `git` keel runs itself, outside the sandbox and before any trust:
//! the environment summary (`git status` of the user's repository), `/diff`
//! in the TUI, and the shadow repository of checkpoints. A repository is
//! untrusted input, and git executes commands named in its config
//! (`core.fsmonitor`, hooks, pagers, `diff.external`, textconv and filter
//! drivers, `core.sshCommand`, …), so none of that may reach these runs.
//!
//! Invariants, for every command built here:
//! - the environment is built from nothing: `PATH`, `HOME`, `TMPDIR`, `TZ`,
//!   `USER`, `LOGNAME` (no API keys, no `GIT_*` of the caller) plus
//!   [`git_env`]: no system or global config (so no `include` from them,
//!   no `safe.directory` widening), no pager, no prompts, no editor, no
//!   lazy fetches, no optional index writes;
//! - [`NEUTRAL_CONFIG`] is passed with `-c`, which wins over the
//!   repository's own config and everything it includes;
//! - for the user's repository, every filter, textconv, diff and merge
//!   driver its config defines (found with `git config --list`, includes
//!   followed) is overridden to nothing as well ([`RepoGit::new`]); a
//!   driver name `-c` cannot express (with `=`) refuses the command;
//! - the git dir and work tree are explicit (`--git-dir`, `--work-tree`),
//!   so `core.worktree` and discovery cannot point git elsewhere;
//! - every run has a timeout and goes through [`crate::sandbox::run`]
//!   unconfined (keel's own command), with bounded output.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::sandbox::git_write::{ISOLATED_CONFIG_ENV, NEUTRAL_ENV, is_driver_command};
use crate::sandbox::{CommandOutput, CommandSpec, SandboxError, run_blocking};

/// Config that runs programs, switched off (`-c` wins over every file);
/// kept with the sandbox's recognised git commands, in one list.
pub use crate::sandbox::git_write::NEUTRAL_CONFIG;

/// The environment of keel's git, on top of the minimal inherited set:
/// no system or global config, and the neutral environment of every
/// neutralised git.
pub fn git_env() -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    ISOLATED_CONFIG_ENV.iter().chain(NEUTRAL_ENV.iter())
}

/// Why keel's own git could not run.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{0}")]
    Spawn(#[from] SandboxError),
    #[error("`git {command}` took longer than {} s and was stopped", timeout.as_secs())]
    TimedOut { command: String, timeout: Duration },
    #[error("`git {command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("{} is not a git repository", root.display())]
    NotARepository { root: PathBuf },
    #[error("the git command was lost: {message}")]
    Lost { message: String },
    #[error(
        "the repository's config defines `{key}`, which keel cannot switch off safely, so it \
         does not run git there"
    )]
    Unneutralisable { key: String },
}

/// A `git` argv with the neutral config and environment, for `git_dir` and
/// `work_tree`, plus `extra` overrides. `args` follow the global options.
pub fn spec(
    git_dir: &Path,
    work_tree: &Path,
    extra: &[String],
    args: &[&str],
    timeout: Duration,
) -> CommandSpec {
    let mut argv: Vec<OsString> = vec![
        "--no-pager".into(),
        prefixed("--git-dir=", git_dir),
        prefixed("--work-tree=", work_tree),
    ];
    for setting in NEUTRAL_CONFIG.iter().map(|s| (*s).to_owned()).chain(extra.iter().cloned()) {
        argv.push("-c".into());
        argv.push(setting.into());
    }
    argv.extend(args.iter().map(OsString::from));
    git_env().fold(
        CommandSpec::argv("git", argv, work_tree).with_minimal_env().with_timeout(timeout),
        |spec, (key, value)| spec.with_env(key, value),
    )
}

fn prefixed(flag: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(flag);
    arg.push(path.as_os_str());
    arg
}

/// The user's repository at a work tree root, with the drivers its config
/// defines known, so each command can switch them off.
#[derive(Debug, Clone)]
pub struct RepoGit {
    git_dir: PathBuf,
    work_tree: PathBuf,
    overrides: Vec<String>,
}

/// How long reading the repository's config names may take.
const CONFIG_TIMEOUT: Duration = Duration::from_secs(5);

impl RepoGit {
    /// Reads the names of the repository's config (blocking; includes
    /// followed) and prepares an override for every driver among them.
    /// `None` when `root` has no `.git`.
    pub fn new(root: &Path) -> Option<Result<Self, GitError>> {
        let git_dir = root.join(".git");
        std::fs::symlink_metadata(&git_dir).ok()?;
        let mut repo = Self { git_dir, work_tree: root.to_owned(), overrides: Vec::new() };
        Some(repo.load_overrides().map(|()| repo))
    }

    fn load_overrides(&mut self) -> Result<(), GitError> {
        let names = self.run(&["config", "--list", "--name-only", "-z"], CONFIG_TIMEOUT)?;
        for name in names.split('\0').filter(|name| is_driver_command(name)) {
            if name.contains('=') {
                return Err(GitError::Unneutralisable { key: name.to_owned() });
            }
            self.overrides.push(format!("{name}="));
            let is_filter = name.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("filter."));
            if let Some((driver, _)) = name.rsplit_once('.').filter(|_| is_filter) {
                // A required filter that does nothing would fail every command.
                self.overrides.push(format!("{driver}.required=false"));
            }
        }
        Ok(())
    }

    /// The command `git ARGS` for this repository, neutralised.
    pub fn command(&self, args: &[&str], timeout: Duration) -> CommandSpec {
        spec(&self.git_dir, &self.work_tree, &self.overrides, args, timeout)
    }

    /// Runs `git ARGS` (blocking) and returns its stdout; a non-zero exit or
    /// a timeout is an error.
    pub fn run(&self, args: &[&str], timeout: Duration) -> Result<String, GitError> {
        let output = run_blocking(&self.command(args, timeout))?;
        checked(args, timeout, output)
    }
}

/// How long `/diff` may take.
const DIFF_TIMEOUT: Duration = Duration::from_secs(30);

/// `git diff` of the work tree at `root` (the TUI's `/diff`): no external
/// diff, no textconv, every driver of the repository's config off.
pub async fn workspace_diff(root: PathBuf) -> Result<String, GitError> {
    let args = ["diff", "--no-ext-diff", "--no-textconv", "--ignore-submodules=all"];
    tokio::task::spawn_blocking(move || match RepoGit::new(&root) {
        Some(repo) => repo?.run(&args, DIFF_TIMEOUT),
        None => Err(GitError::NotARepository { root }),
    })
    .await
    .unwrap_or_else(|error| Err(GitError::Lost { message: error.to_string() }))
}

/// A finished git's stdout, or why it is not usable.
pub fn checked(
    args: &[&str],
    timeout: Duration,
    output: CommandOutput,
) -> Result<String, GitError> {
    let command = args.join(" ");
    if output.timed_out {
        return Err(GitError::TimedOut { command, timeout });
    }
    if !output.success() {
        return Err(GitError::Failed { command, stderr: output.stderr.text().trim().to_owned() });
    }
    Ok(output.stdout.text())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_commands_are_recognised_by_section_and_key() {
        for name in [
            "filter.lfs.clean",
            "filter.Evil Name.smudge",
            "filter.x.process",
            "diff.pdf.textconv",
            "diff.x.command",
            "merge.ours.driver",
            "FILTER.A.b.CLEAN",
        ] {
            assert!(is_driver_command(name), "{name}");
        }
        for name in
            ["filter.clean", "core.fsmonitor", "diff.external", "user.name", "diff.x.binary"]
        {
            assert!(!is_driver_command(name), "{name}");
        }
    }
}
