//! Background processes: a command the model starts and leaves running (a
//! dev server, a watcher, a REPL), as opposed to [`super::run`]'s commands
//! that are driven to an end within their call.
//!
//! Invariants, the same conventions as every other spawn: the child leads a
//! fresh process group; its environment is ours minus credentials plus the
//! spec's variables. When a confinement is given the command runs through
//! the jail's launcher exactly as a `shell` call would
//! ([`CommandSpec::confined`]), so it gets the same jail, and it dies with
//! keel whatever way keel ends: the launcher has `PR_SET_PDEATHSIG`
//! (SIGKILL) set, the jail's PID 1 dies with the launcher, and the kernel
//! kills every process of a PID namespace whose init died, so even
//! `kill -9 keel` leaves nothing of it running. (Without a jail, only the
//! process group is killed, on [`BackgroundProcess::stop`] or drop.)
//!
//! With a terminal ([`Stdio::Terminal`], `shell`'s `pty`), the child's
//! stdin, stdout and stderr are the slave of a pseudo-terminal ([`pty`]),
//! its controlling terminal in a session of its own, and keel reads and
//! writes the master; what it reads is made plain text as it comes
//! ([`TerminalText`]: no escape sequences, LF line ends) before the ring.
//! Jailed, the launcher leads that session (so the kill ladder on its
//! group and the death with keel are unchanged) and the jail's init takes
//! the terminal; unconfined, `keel sandbox-exec --terminal-stage` does
//! (when keel's binary is not at hand, as in unit tests, the terminal is
//! only the child's stdio, not its controlling terminal).
//!
//! stdout and stderr go, interleaved as they come, into one [`OutputRing`]
//! of at most [`RING_BYTES`]: older bytes are dropped and counted, never
//! awaited, so a chatty server can neither exhaust memory nor block on a
//! full pipe, and nobody ever awaits the pipes of a live process (a turn
//! cannot hang on one). [`BackgroundProcess::stop`] runs the kill ladder on
//! the whole group; dropping a [`BackgroundProcess`] SIGKILLs it.

use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustix::fd::OwnedFd;
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio::sync::Notify;

use super::group::ProcessGroup;
use super::ring::OutputRing;
use super::terminal_text::TerminalText;
use super::{CommandSpec, Program, SandboxError, jail, landlock, pty};

/// Bytes of output kept per process; older bytes are dropped and counted.
pub const RING_BYTES: usize = 1024 * 1024;

/// How a background process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(code) => write!(f, "exited with code {code}"),
            Self::Signal(signal) => write!(f, "was killed by signal {signal}"),
        }
    }
}

/// Output not read yet, and how many bytes of it the ring dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewOutput {
    pub text: String,
    /// Bytes written since the last read that the ring no longer held.
    pub dropped: u64,
}

/// How long a stop waits, after closing stdin, for the process to end by
/// itself before it signals the group.
const STDIN_CLOSE_GRACE: Duration = Duration::from_millis(500);

/// How the child's stdin, stdout and stderr are connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdio {
    /// Three pipes.
    Pipes,
    /// One pseudo-terminal (see the module doc).
    Terminal,
}

/// Where [`BackgroundProcess::write`] writes.
#[derive(Debug)]
enum Input {
    Pipe(tokio::sync::Mutex<Option<ChildStdin>>),
    Terminal(Arc<AsyncFd<OwnedFd>>),
}

/// What the readers, the waiter and the owner share.
#[derive(Debug)]
struct Shared {
    ring: Mutex<OutputRing>,
    exit: Mutex<Option<Exit>>,
    /// Woken on new output and on the exit.
    changed: Notify,
}

impl Shared {
    fn ring(&self) -> MutexGuard<'_, OutputRing> {
        self.ring.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn exit(&self) -> Option<Exit> {
        *self.exit.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running (or ended, not yet stopped) background process.
#[derive(Debug)]
pub struct BackgroundProcess {
    group: ProcessGroup,
    pid: Option<u32>,
    input: Input,
    shared: Arc<Shared>,
    /// Owns the child (`kill_on_drop`) and records its exit.
    waiter: tokio::task::JoinHandle<()>,
}

/// Starts `spec` in the background, in the jail `confinement` describes
/// when there is one, its stdio as `stdio` says. Call from within a tokio
/// runtime's worker (the launcher's parent-death signal is tied to the
/// spawning thread, which must outlive the process: the runtime's threads
/// do).
pub fn start(
    spec: &CommandSpec,
    confinement: Option<&landlock::Confinement>,
    stdio: Stdio,
) -> Result<BackgroundProcess, SandboxError> {
    let mut spec = spec.clone();
    if stdio == Stdio::Terminal {
        spec = spec.with_env("TERM", pty::TERM);
    }
    // Whether the first process started makes its own session (and leads
    // its group: `process_group(0)` would forbid its `setsid`).
    let mut own_session = false;
    let spec = match (confinement, stdio) {
        (Some(confinement), Stdio::Pipes) => spec.confined(confinement),
        (Some(confinement), Stdio::Terminal) => {
            own_session = true;
            on_terminal(spec.confined(confinement), jail::TERMINAL_FLAG)
        }
        (None, Stdio::Pipes) => spec,
        (None, Stdio::Terminal) => match super::server_stage::launcher() {
            Some(keel) => {
                own_session = true;
                terminal_stage(spec, keel)
            }
            None => spec,
        },
    };
    let mut command = match &spec.program {
        Program::Script(script) => {
            let mut command = Command::new("bash");
            command.arg("-c").arg(script);
            command
        }
        Program::Argv { program, args } => {
            let mut command = Command::new(program);
            command.args(args);
            command
        }
    };
    let spawn_error =
        |source| SandboxError::Spawn { command: spec.display(), cwd: spec.cwd.clone(), source };
    command
        .env_clear()
        .envs(super::env_filter::child_env(&spec.env_base))
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .kill_on_drop(true);
    if !own_session {
        command.process_group(0);
    }
    let terminal = match stdio {
        Stdio::Pipes => {
            command
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            None
        }
        Stdio::Terminal => {
            let pair = pty::open().map_err(|error| spawn_error(std::io::Error::other(error)))?;
            let copy = |fd: &OwnedFd| fd.try_clone().map_err(spawn_error);
            command.stdin(copy(&pair.slave)?).stdout(copy(&pair.slave)?).stderr(pair.slave);
            Some(Arc::new(pty::register(pair.master).map_err(spawn_error)?))
        }
    };
    let mut child = command.spawn().map_err(spawn_error)?;
    // The command holds the slave's copies: the master reads its end only
    // once no process has one.
    drop(command);
    let pid = child.id();
    let group = ProcessGroup::led_by(pid);
    let shared = Arc::new(Shared {
        ring: Mutex::new(OutputRing::new(RING_BYTES)),
        exit: Mutex::new(None),
        changed: Notify::new(),
    });
    let readers: Vec<_> = match &terminal {
        Some(master) => vec![tokio::spawn(read_terminal(master.clone(), shared.clone()))],
        None => [
            child.stdout.take().map(|out| tokio::spawn(read_into(out, shared.clone()))),
            child.stderr.take().map(|err| tokio::spawn(read_into(err, shared.clone()))),
        ]
        .into_iter()
        .flatten()
        .collect(),
    };
    let input = match terminal {
        Some(master) => Input::Terminal(master),
        None => Input::Pipe(tokio::sync::Mutex::new(child.stdin.take())),
    };
    let for_waiter = shared.clone();
    let waiter = tokio::spawn(async move {
        let status = child.wait().await;
        // What it wrote before it ended is read before the ending is told
        // (bounded: a process that left the group may hold a pipe open).
        for reader in readers {
            let _ = tokio::time::timeout(PIPE_GRACE, reader).await;
        }
        let exit = match status {
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => Exit::Code(code),
                (None, signal) => Exit::Signal(signal.unwrap_or(9)),
            },
            Err(_) => Exit::Signal(9),
        };
        *for_waiter.exit.lock().unwrap_or_else(PoisonError::into_inner) = Some(exit);
        for_waiter.changed.notify_waiters();
    });
    Ok(BackgroundProcess { group, pid, input, shared, waiter })
}

/// `spec` (the launcher's command line) with `flag` right after its
/// `sandbox-exec`: the launcher makes the command's terminal its own.
fn on_terminal(mut spec: CommandSpec, flag: &str) -> CommandSpec {
    if let Program::Argv { args, .. } = &mut spec.program {
        let at = usize::from(!args.is_empty());
        args.insert(at, flag.into());
    }
    spec
}

/// `spec` run under `keel sandbox-exec --terminal-stage` ([`pty::stage`]).
fn terminal_stage(mut spec: CommandSpec, keel: std::path::PathBuf) -> CommandSpec {
    let command: Vec<std::ffi::OsString> = match &spec.program {
        Program::Script(script) => vec!["bash".into(), "-c".into(), script.into()],
        Program::Argv { program, args } => {
            std::iter::once(program.clone()).chain(args.iter().cloned()).collect()
        }
    };
    spec.display_as = Some(spec.display());
    let mut args: Vec<std::ffi::OsString> =
        vec!["sandbox-exec".into(), jail::TERMINAL_STAGE_FLAG.into(), "--".into()];
    args.extend(command);
    spec.program = Program::Argv { program: keel.into_os_string(), args };
    spec
}

/// How long an ended process's pipes are read before its exit is told.
const PIPE_GRACE: Duration = Duration::from_millis(500);

/// Copies what the terminal shows, as plain text, into the ring until it ends.
async fn read_terminal(master: Arc<AsyncFd<OwnedFd>>, shared: Arc<Shared>) {
    let mut buffer = vec![0u8; 16 * 1024];
    let mut text = TerminalText::new();
    loop {
        match pty::read(&master, &mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let plain = text.feed(&buffer[..read]);
                if !plain.is_empty() {
                    shared.ring().push(&plain);
                    shared.changed.notify_waiters();
                }
            }
        }
    }
}

/// Copies a pipe into the ring until it closes.
async fn read_into(mut pipe: impl AsyncRead + Unpin, shared: Arc<Shared>) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                shared.ring().push(&buffer[..read]);
                shared.changed.notify_waiters();
            }
        }
    }
}

impl BackgroundProcess {
    /// The process id (of the jail's launcher when confined).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// How it ended, once it has.
    pub fn exit(&self) -> Option<Exit> {
        self.shared.exit()
    }

    /// Bytes it wrote so far (dropped ones included).
    pub fn written(&self) -> u64 {
        self.shared.ring().written()
    }

    /// Bytes written since the last read.
    pub fn unread(&self) -> u64 {
        self.shared.ring().unread()
    }

    /// Waits until there is unread output or the process has ended, at
    /// most `wait`; returns at once when either holds already.
    pub async fn wait_for_output(&self, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shared.ring().unread() > 0 || self.exit().is_some() {
                return;
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// Waits until the process has ended, at most `wait`.
    pub async fn wait_for_exit(&self, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.exit().is_some() {
                return;
            }
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// The output written since the last read (at most `limit` bytes, the
    /// newest; the rest counts as dropped), marking it read.
    pub fn read_new(&self, limit: usize) -> NewOutput {
        let (bytes, dropped) = self.shared.ring().read_new(limit);
        NewOutput { text: String::from_utf8_lossy(&bytes).into_owned(), dropped }
    }

    /// Whether its stdio is a terminal.
    pub fn on_terminal(&self) -> bool {
        matches!(self.input, Input::Terminal(_))
    }

    /// Writes `input` to its stdin (typed on its terminal, with one).
    pub async fn write(&self, input: &[u8]) -> std::io::Result<()> {
        let stdin = match &self.input {
            Input::Terminal(master) => return pty::write_all(master, input).await,
            Input::Pipe(stdin) => stdin,
        };
        let mut stdin = stdin.lock().await;
        let Some(stdin) = stdin.as_mut() else {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        };
        stdin.write_all(input).await?;
        stdin.flush().await
    }

    /// Ends it and everything it started: closes its stdin (on a terminal:
    /// types the end-of-file character), runs the kill ladder on its
    /// group, and waits for the exit to be recorded.
    pub async fn stop(&self) -> Option<Exit> {
        match &self.input {
            Input::Pipe(stdin) => drop(stdin.lock().await.take()),
            Input::Terminal(master) => {
                let _ =
                    tokio::time::timeout(STDIN_CLOSE_GRACE, pty::write_all(master, b"\x04")).await;
            }
        }
        // A REPL or a read loop ends on its own once its stdin closes:
        // give it a moment before the kill ladder.
        self.wait_for_exit(STDIN_CLOSE_GRACE).await;
        if self.exit().is_none() {
            let _ = self.group.end().await;
        }
        self.wait_for_exit(super::group::KILL_VERIFY).await;
        self.exit()
    }
}

impl Drop for BackgroundProcess {
    fn drop(&mut self) {
        // The group is SIGKILLed by its own drop; the waiter owns the child
        // (`kill_on_drop`) and ends with it.
        self.group.kill_now();
        self.waiter.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(text: &str) -> CommandSpec {
        CommandSpec::script(text, std::env::temp_dir())
    }

    fn start_piped(
        spec: &CommandSpec,
        confinement: Option<&landlock::Confinement>,
    ) -> Result<BackgroundProcess, SandboxError> {
        start(spec, confinement, Stdio::Pipes)
    }

    #[tokio::test]
    async fn output_is_read_as_it_comes_and_stop_ends_the_group() {
        let process =
            start_piped(&script("echo ready; sh -c 'sleep 1000 & sleep 1000'"), None).unwrap();
        process.wait_for_output(Duration::from_secs(10)).await;
        assert_eq!(process.read_new(1024).text, "ready\n");
        assert_eq!(process.read_new(1024), NewOutput::default(), "nothing new");
        assert_eq!(process.exit(), None);
        let pgid = i32::try_from(process.pid().unwrap()).unwrap();
        let exit = process.stop().await;
        assert_eq!(exit, Some(Exit::Signal(15)));
        assert_eq!(super::super::group::members_in_proc(pgid), 0, "the sleeps were killed too");
    }

    #[tokio::test]
    async fn stdin_reaches_the_process_and_its_exit_is_recorded() {
        let process = start_piped(&script("read line; echo \"got $line\"; exit 4"), None).unwrap();
        process.write(b"hello\n").await.unwrap();
        process.wait_for_exit(Duration::from_secs(10)).await;
        assert_eq!(process.exit(), Some(Exit::Code(4)));
        assert_eq!(process.read_new(1024).text, "got hello\n");
    }

    #[tokio::test]
    async fn dropping_it_kills_the_group() {
        let process = start_piped(&script("sleep 1000"), None).unwrap();
        let pgid = i32::try_from(process.pid().unwrap()).unwrap();
        drop(process);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while super::super::group::members_in_proc(pgid) > 0 {
            assert!(std::time::Instant::now() < deadline, "group {pgid} survived the drop");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Reads until the output holds `needle` (bounded).
    async fn read_until(process: &BackgroundProcess, needle: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut seen = String::new();
        while !seen.contains(needle) {
            assert!(std::time::Instant::now() < deadline, "no {needle:?} in {seen:?}");
            process.wait_for_output(Duration::from_secs(1)).await;
            seen.push_str(&process.read_new(RING_BYTES).text);
        }
        seen
    }

    #[tokio::test]
    async fn on_a_terminal_a_repl_answers_in_plain_text_and_ends_on_eof() {
        let command = "test -t 0 && test -t 1 && test -t 2 && echo \"tty $TERM\"; stty size; \
                       printf '\\033[1;31mred\\033[0m\\r\\n'; exec python3 -i -q";
        let process = start(&script(command), None, Stdio::Terminal).unwrap();
        assert!(process.on_terminal());
        let first = read_until(&process, ">>> ").await;
        assert!(first.starts_with("tty dumb\n40 120\nred\n"), "{first:?}");
        process.write(b"print(6*7)\n").await.unwrap();
        let answer = read_until(&process, "42\n>>> ").await;
        assert_eq!(answer, "print(6*7)\n42\n>>> ", "echoed, answered, plain");
        assert!(!answer.contains('\r') && !answer.contains('\u{1b}'));
        // The end-of-file character ends the REPL before any signal.
        assert_eq!(process.stop().await, Some(Exit::Code(0)));
    }

    #[tokio::test]
    async fn with_pipes_nothing_is_a_terminal() {
        let process = start_piped(&script("test -t 0 || test -t 1 || echo no-tty"), None).unwrap();
        process.wait_for_exit(Duration::from_secs(10)).await;
        assert!(!process.on_terminal());
        assert_eq!(process.read_new(1024).text, "no-tty\n");
    }

    #[tokio::test]
    async fn a_flood_keeps_the_newest_megabyte_and_counts_the_rest() {
        let flood = "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end";
        let process = start_piped(&script(flood), None).unwrap();
        process.wait_for_exit(Duration::from_secs(30)).await;
        assert_eq!(process.exit(), Some(Exit::Code(0)));
        let output = process.read_new(RING_BYTES);
        assert_eq!(output.text.len(), RING_BYTES);
        assert_eq!(output.dropped, 3_000_005 - RING_BYTES as u64);
        assert!(output.text.ends_with("x\nend\n"));
    }
}
