//! Long-running child processes that talk over their stdin and stdout
//! (stdio MCP servers), as opposed to [`super::run`]'s commands that run
//! to an end.
//!
//! Invariants, the same conventions as every other spawn: the child leads
//! a fresh process group; its environment is ours minus credentials (the
//! session's [`EnvFilter`](super::EnvFilter), given in the spec) plus the spec's own
//! variables, which are kept even when named like secrets (a server's
//! token is configured for it on purpose); its stderr goes to a log file,
//! at most [`MAX_STDERR_LOG_BYTES`] of it, so a chatty server can neither
//! fill the disk nor block on a full pipe. [`ServerProcess::stop`] runs the
//! kill ladder (SIGTERM, grace, SIGKILL, verify) on the whole group, and
//! dropping a [`ServerProcess`] runs the same ladder on a thread (SIGTERM
//! first: a dropped session closes its servers as a closed one does). With a launcher (keel
//! itself) the child is the server's stage ([`super::server_stage`]),
//! which ends what the server started outside the group (`setsid`) and
//! everything when keel dies. Servers are not confined by landlock: like Codex's and
//! Claude Code's, they act outside the workspace by design, and policy
//! judges each of their calls instead.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::SandboxError;
use super::group::{Ending, ProcessGroup};

/// Bytes of a server's stderr kept in its log file; the rest is counted
/// and dropped (the pipe is still drained, so the server never blocks).
pub const MAX_STDERR_LOG_BYTES: u64 = 1024 * 1024;

/// A server to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: PathBuf,
    /// Set for the child on top of the filtered environment.
    pub env: Vec<(OsString, OsString)>,
    /// What the inherited environment loses (the session's `[shell]`).
    pub env_filter: super::EnvFilter,
    /// Where the child's stderr is written (created, truncated).
    pub stderr_log: PathBuf,
    /// The keel binary, to start the server under its stage
    /// (`keel sandbox-exec --server-stage`, [`super::server_stage`]);
    /// `None` starts it directly (a test binary is not keel).
    pub launcher: Option<PathBuf>,
}

impl ServerSpec {
    /// A short form for messages.
    pub fn display(&self) -> String {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|part| part.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A running server: its pipes, and its process group to end.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    group: ProcessGroup,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    /// The task copying stderr to the log; it ends when the pipe closes.
    stderr_copy: Option<tokio::task::JoinHandle<()>>,
}

/// How a server that failed to start ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerExit {
    /// It exited on its own with this code.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// It was still running (keel stopped it).
    Running,
}

/// A failed start: how it ended and the last line of its stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedStart {
    pub exit: ServerExit,
    /// The last non-empty line it wrote to stderr (clipped to 200 chars).
    pub stderr_tail: Option<String>,
}

/// Starts `spec`: stdin and stdout piped for the caller, stderr copied to
/// its log file by a background task that ends when the server does.
pub fn spawn_server(spec: &ServerSpec) -> Result<ServerProcess, SandboxError> {
    let spawn_error =
        |source| SandboxError::Spawn { command: spec.display(), cwd: spec.cwd.clone(), source };
    if let Some(dir) = spec.stderr_log.parent() {
        std::fs::create_dir_all(dir).map_err(spawn_error)?;
    }
    let mut command = match &spec.launcher {
        Some(keel) => {
            let mut command = Command::new(keel);
            command.args(["sandbox-exec", "--server-stage", "--"]).arg(&spec.program);
            command
        }
        None => Command::new(&spec.program),
    };
    command.args(&spec.args);
    command
        .env_clear()
        .envs(super::env_filter::filtered_env(&spec.env_filter))
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Not `kill_on_drop`: a dropped server is ended by the ladder
        // (`Drop for ServerProcess`), SIGTERM first, not a SIGKILL.
        .process_group(0);
    let mut child = command.spawn().map_err(spawn_error)?;
    let group = ProcessGroup::led_by(child.id());
    let stderr_copy = child
        .stderr
        .take()
        .map(|stderr| tokio::spawn(copy_bounded(stderr, spec.stderr_log.clone())));
    Ok(ServerProcess {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        child,
        group,
        stderr_copy,
    })
}

impl ServerProcess {
    /// The server's process id (and group id), while it runs.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Whether the server process has ended (reaping it if so).
    pub fn has_exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    /// After a failed start: how the server ended (waiting at most
    /// `grace` for it to exit on its own, else stopping it), with its
    /// stderr copied to the log before this returns (at most `grace` more:
    /// a grandchild may hold the pipe), so the log says what it wrote.
    pub async fn failed_start(
        mut self,
        grace: std::time::Duration,
        stderr_log: &Path,
    ) -> FailedStart {
        use std::os::unix::process::ExitStatusExt;
        drop(self.stdin.take());
        let exit = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => match (status.code(), status.signal()) {
                (Some(code), _) => ServerExit::Exited(code),
                (None, Some(signal)) => ServerExit::Signalled(signal),
                (None, None) => ServerExit::Running,
            },
            Ok(Err(_)) | Err(_) => ServerExit::Running,
        };
        let copy = self.stderr_copy.take();
        drop(self.stdout.take());
        let _ = self.group.end().await;
        let _ = self.child.wait().await;
        if let Some(copy) = copy {
            let _ = tokio::time::timeout(grace, copy).await;
        }
        FailedStart { exit, stderr_tail: last_line(stderr_log).await }
    }

    /// Ends the server and everything it started: closes its stdin (a
    /// polite server exits on EOF), then the kill ladder on its group.
    pub async fn stop(mut self) -> Ending {
        drop(self.stdin.take());
        drop(self.stdout.take());
        let ending = self.group.end().await;
        let _ = self.child.wait().await;
        ending
    }
}

impl Drop for ServerProcess {
    /// A server dropped without [`ServerProcess::stop`] (its session was
    /// dropped, not closed) ends as a stopped one does: stdin closed, then
    /// SIGTERM to its group and the grace before SIGKILL, on a thread of
    /// its own (its stage, with a launcher, passes the SIGTERM on to what
    /// the server started). After `stop` the group is empty and nothing
    /// is sent.
    fn drop(&mut self) {
        drop(self.stdin.take());
        drop(self.stdout.take());
        std::mem::replace(&mut self.group, ProcessGroup::led_by(None)).end_in_background();
    }
}

/// Copies `stderr` into the file at `path`, keeping the first
/// [`MAX_STDERR_LOG_BYTES`] and a last line saying how much was dropped.
async fn copy_bounded(mut stderr: tokio::process::ChildStderr, path: PathBuf) {
    let mut file = open_log(&path).await;
    let mut buffer = vec![0u8; 16 * 1024];
    let mut kept: u64 = 0;
    let mut dropped: u64 = 0;
    loop {
        let read = match stderr.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => read,
        };
        let room = usize::try_from(MAX_STDERR_LOG_BYTES.saturating_sub(kept)).unwrap_or(0);
        let keep = read.min(room);
        if let (Some(file), true) = (file.as_mut(), keep > 0)
            && file.write_all(&buffer[..keep]).await.is_err()
        {
            break;
        }
        kept += keep as u64;
        dropped += (read - keep) as u64;
    }
    if let (Some(file), true) = (file.as_mut(), dropped > 0) {
        let note = format!("\n[keel: {dropped} more bytes of stderr were not kept]\n");
        let _ = file.write_all(note.as_bytes()).await;
    }
    if let Some(file) = file.as_mut() {
        let _ = file.flush().await;
    }
}

/// The last non-empty line of a log, clipped to 200 characters.
async fn last_line(log: &Path) -> Option<String> {
    let bytes = tokio::fs::read(log).await.ok()?;
    let tail = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(4096)..]).into_owned();
    let line = tail.lines().rev().map(str::trim).find(|line| !line.is_empty())?;
    Some(line.chars().take(200).collect())
}

/// The log file, or `None` if it cannot be created (the pipe is still
/// drained, so the server runs on).
async fn open_log(path: &Path) -> Option<tokio::fs::File> {
    tokio::fs::File::create(path).await.ok()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncBufReadExt;

    use super::*;

    fn spec(dir: &Path, script: &str) -> ServerSpec {
        ServerSpec {
            program: "bash".into(),
            args: vec!["-c".into(), script.into()],
            cwd: dir.to_owned(),
            env: vec![("MY_SERVER_TOKEN".into(), "kept".into())],
            env_filter: crate::sandbox::EnvFilter::default(),
            stderr_log: dir.join("logs/server.log"),
            launcher: None,
        }
    }

    #[tokio::test]
    async fn talks_over_pipes_logs_stderr_and_dies_with_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let script = "echo starting >&2; read line; echo \"got $line $MY_SERVER_TOKEN\"; sleep 30";
        let mut server = spawn_server(&spec(dir.path(), script)).unwrap();
        let mut stdin = server.stdin.take().unwrap();
        stdin.write_all(b"hello\n").await.unwrap();
        let mut lines = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
        let line = lines.next_line().await.unwrap().unwrap();
        assert_eq!(line, "got hello kept");
        let pgid = i32::try_from(server.id().unwrap()).unwrap();
        let ending = server.stop().await;
        assert_eq!(ending.survivors, 0);
        assert_eq!(super::super::group::members_in_proc(pgid), 0, "the sleep was killed too");
        // The stderr task ends once the pipe closes.
        let log = dir.path().join("logs/server.log");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while !std::fs::read_to_string(&log).unwrap_or_default().contains("starting") {
            assert!(std::time::Instant::now() < deadline, "stderr never reached the log");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Issue 35: a dropped (not stopped) server got SIGKILL at once and
    /// could not close; now it gets EOF and SIGTERM, as a stopped one.
    #[tokio::test]
    async fn a_dropped_server_is_closed_gracefully_not_killed() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("closed");
        let script = format!(
            "trap 'echo term > {m}; exit 0' TERM; echo up; while read line; do :; done; \
             sleep 0.2; echo eof > {m}; sleep 30 & wait",
            m = marker.display()
        );
        let mut server = spawn_server(&spec(dir.path(), &script)).unwrap();
        let mut lines = tokio::io::BufReader::new(server.stdout.take().unwrap()).lines();
        assert_eq!(lines.next_line().await.unwrap().unwrap(), "up");
        let pgid = i32::try_from(server.id().unwrap()).unwrap();
        drop(lines);
        drop(server);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while super::super::group::members_in_proc(pgid) > 0 {
            assert!(std::time::Instant::now() < deadline, "the dropped server's group lives on");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let said = std::fs::read_to_string(&marker).unwrap_or_default();
        assert!(said == "eof\n" || said == "term\n", "the server was killed: {said:?}");
    }

    #[tokio::test]
    async fn a_chatty_server_keeps_a_bounded_log() {
        let dir = tempfile::tempdir().unwrap();
        let script = "head -c 3000000 /dev/zero | tr '\\0' x >&2; echo done";
        let mut server = spawn_server(&spec(dir.path(), script)).unwrap();
        let mut out = String::new();
        server.stdout.take().unwrap().read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "done\n");
        let _ = server.stop().await;
        let log = dir.path().join("logs/server.log");
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.contains("more bytes of stderr were not kept") {
                assert!(text.len() as u64 <= MAX_STDERR_LOG_BYTES + 100, "{}", text.len());
                break;
            }
            assert!(std::time::Instant::now() < deadline, "no truncation note");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
