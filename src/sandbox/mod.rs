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
//! cannot be enforced is refused when required. After a confined command
//! [`run`] removes any `.git`, `.keel` or `.claude` it created
//! ([`protected`]).
//!
//! Background processes ([`background`]) are the one kind of child that
//! outlives its call: started in the same jail, they run until stopped,
//! until the session ends, or until keel dies (the jail dies with it).
//!
//! Files: `process.rs` and `group.rs` (spawning, process groups, the kill ladder), `capture.rs`
//! (bounded capture), `background.rs` and `ring.rs` (the model's background processes, their
//! output in a ring read by position), `server.rs` (long-running stdio servers for MCP: piped,
//! stderr to a bounded log, kill ladder on stop, SIGKILL on drop; `failed_start` after a failed
//! handshake),
//! `confinement.rs` (what a confined command may do, the launcher's arguments, the session-start
//! probe, `looks_like_violation`), `jail/` (`keel sandbox-exec`: `namespaces.rs`, `mounts.rs`,
//! `sockets.rs`, `privileges.rs`, `seccomp.rs`, `layers.rs` the report, `mod.rs` the two stages:
//! launcher and PID-1 init), `landlock.rs` (the ruleset, with scopes), `protected.rs` (`.git`,
//! `.keel`, `.claude`; nested `.git` found before the first writing command), `env_filter.rs`
//! (every child starts from an empty environment, filtered or minimal). Why the jail is built as it
//! is: `docs/security.md`.

pub mod background;
mod capture;
pub mod confinement;
mod env_filter;
pub mod group;
pub mod jail;
pub mod landlock;
mod process;
pub mod protected;
mod ring;
pub mod server;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use capture::CapturedStream;
pub use env_filter::{DEFAULT_STRIP, EnvBase, EnvFilter, child_env, set_env_filter, wildcard};

/// The confinement every command run through [`run`] gets, set once per
/// session by the runtime. A process-wide setting because keel runs one
/// session per process and the tools that spawn commands (`shell`) do not
/// carry sandbox settings in their context yet; `CommandSpec::confined`
/// is the explicit form.
static SESSION_CONFINEMENT: std::sync::RwLock<Option<landlock::Confinement>> =
    std::sync::RwLock::new(None);

/// Sets (or clears) the confinement for every later [`run`].
pub fn set_session_confinement(confinement: Option<landlock::Confinement>) {
    if let Ok(mut slot) = SESSION_CONFINEMENT.write() {
        *slot = confinement;
    }
}

/// The confinement set by [`set_session_confinement`].
pub fn session_confinement() -> Option<landlock::Confinement> {
    SESSION_CONFINEMENT.read().ok().and_then(|slot| slot.clone())
}

/// A search for more read-only paths of the session confinement.
type Search = Box<dyn FnOnce() -> Vec<PathBuf> + Send>;

/// Read-only paths of the session confinement not found yet: the nested
/// `.git` folders, whose search reads every folder of the workspace, so
/// a session start does not wait for it (issue 21); it starts with the
/// first undo checkpoint ([`start_read_only_search`]) or the first
/// confined command that can write, which waits for it. Held across the
/// wait, so a second command waits too.
enum PendingReadOnly {
    NotStarted(Search),
    Running(tokio::sync::oneshot::Receiver<Vec<PathBuf>>),
}

static PENDING_READ_ONLY: tokio::sync::Mutex<Option<PendingReadOnly>> =
    tokio::sync::Mutex::const_new(None);

/// Sets the search whose paths the session confinement's `read_only`
/// gets before the first confined command that can write. Called when a
/// session sets its confinement, before any command runs (so the slot is
/// free).
pub fn add_read_only_when_needed(search: impl FnOnce() -> Vec<PathBuf> + Send + 'static) {
    if let Ok(mut slot) = PENDING_READ_ONLY.try_lock() {
        *slot = Some(PendingReadOnly::NotStarted(Box::new(search)));
    }
}

/// Starts the pending search on a thread of its own, if there is one and
/// it has not started: a writing command is coming (its checkpoint is
/// being taken), and the search runs alongside.
pub fn start_read_only_search() {
    let Ok(mut slot) = PENDING_READ_ONLY.try_lock() else { return };
    if let Some(PendingReadOnly::NotStarted(_)) = &*slot
        && let Some(PendingReadOnly::NotStarted(search)) = slot.take()
    {
        let (found, receiver) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = found.send(search());
        });
        *slot = Some(PendingReadOnly::Running(receiver));
    }
}

/// Waits for the pending search and adds what it found to the session
/// confinement (once).
async fn settle_read_only() {
    let mut slot = PENDING_READ_ONLY.lock().await;
    if slot.is_none() || session_confinement().is_none() {
        // Nothing pending, or the confinement is lifted for the moment
        // (an approved unsandboxed re-run): the paths wait for it.
        return;
    }
    // A search that died leaves what it would have found writable, as a
    // search past its folder limit does.
    let paths = match slot.take() {
        Some(PendingReadOnly::NotStarted(search)) => {
            tokio::task::spawn_blocking(search).await.unwrap_or_default()
        }
        Some(PendingReadOnly::Running(receiver)) => receiver.await.unwrap_or_default(),
        None => Vec::new(),
    };
    if let Ok(mut confinement) = SESSION_CONFINEMENT.write()
        && let Some(confinement) = confinement.as_mut()
    {
        confinement.read_only.extend(paths);
    }
}

/// Makes the session confinement complete for a command of the model
/// that can write and is spawned outside [`run`] (a background process,
/// [`background::start`]): the pending read-only paths are added first.
pub async fn settle_before_writable_command() {
    settle_read_only().await;
}

/// Runs `spec` (see [`process::run`]), confined by the session's sandbox
/// when it is the model's command, one is set, and it is not confined already.
pub async fn run(
    spec: &CommandSpec,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<CommandOutput, SandboxError> {
    let for_session_jail = spec.for_model && spec.display_as.is_none();
    if for_session_jail && !spec.read_only {
        // A read's jail has nothing writable: it needs no carve-out.
        settle_read_only().await;
    }
    match session_confinement() {
        Some(confinement) if for_session_jail => {
            let confinement = if spec.read_only { confinement.for_reads() } else { confinement };
            run_confined(spec, &confinement, cancel).await
        }
        Some(_) | None => process::run(spec, cancel).await,
    }
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

/// Runs `spec` in the jail, then removes the protected folders it created
/// (whatever its outcome: nothing of it runs any more) and says so on its
/// stderr.
async fn run_confined(
    spec: &CommandSpec,
    confinement: &landlock::Confinement,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<CommandOutput, SandboxError> {
    let sweep =
        confinement.protect_vcs.then(|| protected::Sweep::before(&confinement.workspace_roots));
    let result = process::run(&spec.clone().confined(confinement), cancel).await;
    let removed = sweep.map(|sweep| sweep.after()).unwrap_or_default();
    let mut output = result?;
    if !removed.is_empty() {
        output.stderr.append_note(&removed.join("\n"));
        if output.exit_code == Some(0) {
            output.exit_code = Some(1);
        }
    }
    Ok(output)
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
    /// never the whole of it (see `env_filter.rs`).
    pub env_base: EnvBase,
    /// Bytes kept per stream; the middle of longer output is dropped.
    pub output_limit: usize,
    /// What [`CommandSpec::display`] shows when the program was rewritten
    /// (confined commands show the command, not the launcher).
    pub display_as: Option<String>,
    /// A command the model asked for: the session's sandbox applies. keel's
    /// own commands (the shadow git of undo) and the user's hooks do not
    /// run confined.
    pub for_model: bool,
    /// The model's command was judged read-only and runs alongside other
    /// reads: the session's jail, with no writable root at all
    /// ([`landlock::Confinement::for_reads`]).
    pub read_only: bool,
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
            env_base: EnvBase::Filtered,
            output_limit: DEFAULT_OUTPUT_LIMIT,
            display_as: None,
            for_model: false,
            read_only: false,
        }
    }

    /// Marks the command as the model's: the session sandbox confines it.
    pub fn for_model(mut self) -> Self {
        self.for_model = true;
        self
    }

    /// Marks the model's command as judged read-only: it runs in the
    /// session's jail with nothing writable (the field of the same name).
    pub fn read_only(mut self, read_only: bool) -> Self {
        self.read_only = read_only;
        self
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
        self
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
