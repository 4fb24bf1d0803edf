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
//! stdout and stderr go, interleaved as they come, into one [`OutputRing`]
//! of at most [`RING_BYTES`]: older bytes are dropped and counted, never
//! awaited, so a chatty server can neither exhaust memory nor block on a
//! full pipe, and nobody ever awaits the pipes of a live process (a turn
//! cannot hang on one). [`BackgroundProcess::stop`] runs the kill ladder on
//! the whole group; dropping a [`BackgroundProcess`] SIGKILLs it.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, Command};
use tokio::sync::Notify;

use super::group::ProcessGroup;
use super::ring::OutputRing;
use super::{CommandSpec, Program, SandboxError, landlock};

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
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    shared: Arc<Shared>,
    /// Owns the child (`kill_on_drop`) and records its exit.
    waiter: tokio::task::JoinHandle<()>,
}

/// Starts `spec` in the background, in the jail `confinement` describes
/// when there is one. Call from within a tokio runtime's worker (the
/// launcher's parent-death signal is tied to the spawning thread, which
/// must outlive the process: the runtime's threads do).
pub fn start(
    spec: &CommandSpec,
    confinement: Option<&landlock::Confinement>,
) -> Result<BackgroundProcess, SandboxError> {
    let spec = match confinement {
        Some(confinement) => spec.clone().confined(confinement),
        None => spec.clone(),
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
    command
        .env_clear()
        .envs(super::env_filter::child_env(&spec.env_base))
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|source| SandboxError::Spawn {
        command: spec.display(),
        cwd: spec.cwd.clone(),
        source,
    })?;
    let pid = child.id();
    let group = ProcessGroup::led_by(pid);
    let shared = Arc::new(Shared {
        ring: Mutex::new(OutputRing::new(RING_BYTES)),
        exit: Mutex::new(None),
        changed: Notify::new(),
    });
    let readers: Vec<_> = [
        child.stdout.take().map(|out| tokio::spawn(read_into(out, shared.clone()))),
        child.stderr.take().map(|err| tokio::spawn(read_into(err, shared.clone()))),
    ]
    .into_iter()
    .flatten()
    .collect();
    let stdin = child.stdin.take();
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
    let stdin = tokio::sync::Mutex::new(stdin);
    Ok(BackgroundProcess { group, pid, stdin, shared, waiter })
}

/// How long an ended process's pipes are read before its exit is told.
const PIPE_GRACE: Duration = Duration::from_millis(500);

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

    /// Writes `input` to its stdin.
    pub async fn write(&self, input: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let Some(stdin) = stdin.as_mut() else {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        };
        stdin.write_all(input).await?;
        stdin.flush().await
    }

    /// Ends it and everything it started: closes its stdin, runs the kill
    /// ladder on its group, and waits for the exit to be recorded.
    pub async fn stop(&self) -> Option<Exit> {
        drop(self.stdin.lock().await.take());
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

    #[tokio::test]
    async fn output_is_read_as_it_comes_and_stop_ends_the_group() {
        let process = start(&script("echo ready; sh -c 'sleep 1000 & sleep 1000'"), None).unwrap();
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
        let process = start(&script("read line; echo \"got $line\"; exit 4"), None).unwrap();
        process.write(b"hello\n").await.unwrap();
        process.wait_for_exit(Duration::from_secs(10)).await;
        assert_eq!(process.exit(), Some(Exit::Code(4)));
        assert_eq!(process.read_new(1024).text, "got hello\n");
    }

    #[tokio::test]
    async fn dropping_it_kills_the_group() {
        let process = start(&script("sleep 1000"), None).unwrap();
        let pgid = i32::try_from(process.pid().unwrap()).unwrap();
        drop(process);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while super::super::group::members_in_proc(pgid) > 0 {
            assert!(std::time::Instant::now() < deadline, "group {pgid} survived the drop");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test]
    async fn a_flood_keeps_the_newest_megabyte_and_counts_the_rest() {
        let flood = "head -c 3000000 /dev/zero | tr '\\0' x; echo; echo end";
        let process = start(&script(flood), None).unwrap();
        process.wait_for_exit(Duration::from_secs(30)).await;
        assert_eq!(process.exit(), Some(Exit::Code(0)));
        let output = process.read_new(RING_BYTES);
        assert_eq!(output.text.len(), RING_BYTES);
        assert_eq!(output.dropped, 3_000_005 - RING_BYTES as u64);
        assert!(output.text.ends_with("x\nend\n"));
    }
}
