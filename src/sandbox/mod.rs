//! Process execution: the only module that spawns processes. Runs a command
//! (a `bash -c` script or an argv) with a timeout, bounded output capture and
//! cancellation.
//!
//! Invariants:
//! - stdin is null; stdout and stderr are read concurrently into bounded
//!   head+tail buffers, so a chatty command cannot exhaust memory.
//! - Every child runs in its own process group, and that whole group is
//!   killed (SIGKILL) when the command ends, times out, is cancelled, or the
//!   [`run`] future is dropped: no process outlives its command, including
//!   ones it backgrounded. Commands that must keep running past their own
//!   exit (servers, daemons) are started with [`background`] instead.
//! - A timeout is not an error: [`run`] returns the partial output with
//!   `timed_out` set. Cancellation is [`SandboxError::Cancelled`].
//!
//! Confinement ([`confinement`], [`jail`]): [`CommandSpec::confined`]
//! rewrites the command to run through `keel sandbox-exec …`, the jail's
//! launcher (namespaces, read-only mounts, a PID-1 init, landlock,
//! seccomp; the crate forbids `unsafe`, so no `pre_exec`). A layer the
//! kernel cannot offer is reported by the launcher, and a sandbox that
//! cannot be enforced is refused when required.
//!
//! No sandbox state is process-wide: the confinement and the environment
//! filter of the model's commands are a value, the session's
//! [`CommandJail`] ([`command_jail`]), handed to every spawn that needs
//! them; everything else gets its filter in its spec ([`EnvBase`]). After
//! a confined command the jail removes any `.git`, `.keel` or `.claude`
//! it created ([`protected`]).
//!
//! Background processes ([`background`]) are the one kind of child that
//! outlives its call: started in the same jail, they run until stopped,
//! until the session ends, or until keel dies (the jail dies with it).
//! With `pty` their stdio is a pseudo-terminal ([`pty`]), its output made
//! plain text by `terminal_text.rs` before their ring.
//!
//! Files: `process.rs` and `group.rs` (spawning, process groups, the kill ladder), `capture.rs`
//! (bounded capture), `background.rs` and `ring.rs` (the model's background processes, their
//! output in a ring read by position), `pty.rs` and `terminal_text.rs` (their terminal, its
//! output as plain text), `command_jail.rs` (a session's jail as a value:
//! confinement, environment filter, the nested `.git` search; `ToolContext::command_jail` hands it
//! to tools), `server.rs` (long-running stdio servers for MCP: piped, stderr to a bounded log, kill
//! ladder on stop, SIGKILL on drop; `failed_start` after a failed handshake),
//! `confinement.rs` (what a confined command may do, the launcher's arguments, the session-start
//! probe, `looks_like_violation`), `jail/` (`keel sandbox-exec`: `namespaces.rs`, `mounts.rs`,
//! `sockets.rs`, `privileges.rs`, `seccomp.rs`, `loopback.rs` the private network's `lo` and
//! bridge listeners, `layers.rs` the report, `mod.rs` the two stages: launcher and PID-1 init),
//! `netproxy/` (keel's side of the jail's network: the allowlist proxy, `host_ports` forwarders,
//! their unix sockets and the allow/deny events), `landlock.rs` (the ruleset, with scopes),
//! `protected.rs` (`.git`, `.keel`, `.claude`; nested `.git` found before the first writing
//! command; what stays guarded inside `.git` for a recognised git command), `git_write.rs` (git
//! without the programs it runs: the neutral config and environment, and how a recognised git
//! command runs), `clipboard.rs` (the TUI's Ctrl+V: the user's `wl-paste`/`xclip`, unjailed
//! because it runs for the user and must reach the display, never from the workspace),
//! `env_filter.rs`
//! (every child starts from an empty environment, filtered or minimal). Why the jail is built as it
//! is: `docs/security.md`.

pub mod background;
mod capture;
pub mod clipboard;
pub mod command_jail;
pub mod confinement;
mod env_filter;
pub mod git_write;
pub mod group;
pub mod jail;
pub mod landlock;
pub mod netproxy;
mod process;
pub mod protected;
pub mod pty;
mod ring;
pub mod server;
pub mod server_stage;
pub mod session_net;
mod terminal_text;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use capture::CapturedStream;
pub use command_jail::{CallJail, CommandAccess, CommandJail};
pub use env_filter::{
    DEFAULT_STRIP, EnvBase, EnvFilter, child_env, filtered_env, protect_own_environ, wildcard,
};

/// Runs `spec` (see [`process::run`]) as it is: unconfined, with the
/// environment its [`EnvBase`] says (keel's own commands, the user's
/// hooks). The model's commands run through their session's
/// [`CommandJail`] instead, which confines them.
pub async fn run(
    spec: &CommandSpec,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<CommandOutput, SandboxError> {
    process::run(spec, cancel).await
}

/// [`run`] from synchronous code (inside or outside an async runtime): the
/// command runs on a helper thread with its own runtime, so the same
/// timeout, process-group kill and bounded capture apply.
pub fn run_blocking(spec: &CommandSpec) -> Result<CommandOutput, SandboxError> {
    let spec = spec.clone();
    let command = spec.display();
    let runner = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(
            |source| SandboxError::Spawn { command: spec.display(), cwd: spec.cwd.clone(), source },
        )?;
        runtime.block_on(run(&spec, &tokio_util::sync::CancellationToken::new()))
    });
    runner.join().unwrap_or_else(|_| {
        Err(SandboxError::Wait { command, source: std::io::Error::other("runner panicked") })
    })
}

/// Default time a command may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default number of bytes kept per stream (half head, half tail).
pub const DEFAULT_OUTPUT_LIMIT: usize = 64 * 1024;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// A script run with `bash -c`.
    Script(String),
    /// A program and its arguments, run directly (looked up on `PATH`).
    Argv { program: OsString, args: Vec<OsString> },
}

/// A command to run, built with [`CommandSpec::script`] or
/// [`CommandSpec::argv`] and the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSpec {
    pub program: Program,
    /// Working directory; the caller confines it (e.g. to the workspace).
    pub cwd: PathBuf,
    /// The command is killed (with its whole process group) after this.
    pub timeout: Duration,
    /// Variables added to (or overriding) the inherited environment.
    pub env: Vec<(OsString, OsString)>,
    /// What the child inherits of keel's own environment before `env`:
    /// never the whole of it (see `env_filter.rs`); the minimal set
    /// unless a filter is given ([`CommandSpec::with_filtered_env`]).
    pub env_base: EnvBase,
    /// Bytes kept per stream; the middle of longer output is dropped.
    pub output_limit: usize,
    /// What [`CommandSpec::display`] shows when the program was rewritten
    /// (confined commands show the command, not the launcher).
    pub display_as: Option<String>,
}

impl CommandSpec {
    /// A `bash -c SCRIPT` command with default timeout and output limit.
    pub fn script(script: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        Self::new(Program::Script(script.into()), cwd.into())
    }

    /// A direct program invocation with default timeout and output limit.
    pub fn argv<I, S>(program: impl Into<OsString>, args: I, cwd: impl Into<PathBuf>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        let args = args.into_iter().map(Into::into).collect();
        Self::new(Program::Argv { program: program.into(), args }, cwd.into())
    }

    fn new(program: Program, cwd: PathBuf) -> Self {
        Self {
            program,
            cwd,
            timeout: DEFAULT_TIMEOUT,
            env: Vec::new(),
            env_base: EnvBase::Minimal,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            display_as: None,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Inherits only [`EnvBase::Minimal`] (keel's own helpers, e.g. git).
    pub fn with_minimal_env(mut self) -> Self {
        self.env_base = EnvBase::Minimal;
        self
    }

    /// Inherits keel's environment minus what `filter` strips
    /// ([`EnvBase::Filtered`]: the model's commands, hooks).
    pub fn with_filtered_env(mut self, filter: EnvFilter) -> Self {
        self.env_base = EnvBase::Filtered(filter);
        self
    }

    pub fn with_output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = bytes;
        self
    }

    /// The same command run through the landlock launcher. The display
    /// form (for messages) stays the original command.
    pub fn confined(mut self, confinement: &landlock::Confinement) -> Self {
        let program = match &self.program {
            Program::Script(script) => vec!["bash".into(), "-c".into(), script.into()],
            Program::Argv { program, args } => {
                std::iter::once(program.clone()).chain(args.iter().cloned()).collect()
            }
        };
        self.display_as = Some(self.display());
        self.program = Program::Argv {
            program: confinement.launcher.clone().into_os_string(),
            args: confinement.launcher_args(&program),
        };
        // The launcher refuses to start once keel is gone (issue 31).
        self.with_env(jail::PARENT_VARIABLE, std::process::id().to_string())
    }

    /// A short human-readable form for messages.
    pub fn display(&self) -> String {
        if let Some(shown) = &self.display_as {
            return shown.clone();
        }
        match &self.program {
            Program::Script(script) => script.clone(),
            Program::Argv { program, args } => std::iter::once(program)
                .chain(args)
                .map(|part| part.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
        }
    }
}

/// What a finished (or timed-out) command produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandOutput {
    /// The exit code; `None` when the process was killed by a signal.
    pub exit_code: Option<i32>,
    /// The signal that killed the process, if any.
    pub signal: Option<i32>,
    pub stdout: CapturedStream,
    pub stderr: CapturedStream,
    /// The command hit its timeout and was killed.
    pub timed_out: bool,
    pub duration: Duration,
}

impl CommandOutput {
    /// Whether bytes were dropped from either stream.
    pub fn truncated(&self) -> bool {
        self.stdout.truncated() || self.stderr.truncated()
    }

    /// Exited on its own with code 0.
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// Why a command could not run to completion.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("failed to start `{command}` in {cwd}: {source}", cwd = cwd.display())]
    Spawn {
        command: String,
        cwd: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("failed to wait for `{command}`: {source}")]
    Wait {
        command: String,
        #[source]
        source: std::io::Error,
    },
    /// `output`: what the command printed before it was killed (none
    /// when it was cancelled before it started).
    #[error("command `{command}` was cancelled and killed")]
    Cancelled { command: String, output: Option<Box<CommandOutput>> },
}
