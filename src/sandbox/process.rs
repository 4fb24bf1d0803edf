//! Spawning one command and driving it to its end: timeout, cancellation,
//! process-group kill and concurrent bounded capture of stdout and stderr.
//!
//! Invariants: the child is the leader of a fresh process group (pgid ==
//! pid); once the leader has ended, timed out or been cancelled, the
//! group's kill ladder runs ([`ProcessGroup::end`]: SIGTERM, grace,
//! SIGKILL, verify), and a dropped future SIGKILLs the group, so nothing
//! the command started keeps running or keeps our pipes open. The child's
//! environment is built from nothing (`env_clear`): ours minus secrets
//! (the spec's [`EnvFilter`](super::EnvFilter), see `env_filter.rs`) or
//! only the minimal set, plus the spec's additions, which are kept even
//! when named like secrets.

use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::capture::{CapturedStream, capture};
use super::group::ProcessGroup;
use super::{CommandOutput, CommandSpec, Program, SandboxError};

/// How long to wait for the output pipes to close after the process group
/// was killed. Only a process that escaped the group (`setsid`) can hold a
/// pipe open this long; we then stop reading and keep what we have.
const PIPE_DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Runs `spec` to completion, timeout or cancellation.
///
/// A timeout returns `Ok` with `timed_out` set and the partial output;
/// cancellation returns [`SandboxError::Cancelled`] with the partial output. Either way the whole
/// process group has been killed and reaped before this returns.
pub async fn run(
    spec: &CommandSpec,
    cancel: &CancellationToken,
) -> Result<CommandOutput, SandboxError> {
    if cancel.is_cancelled() {
        return Err(SandboxError::Cancelled { command: spec.display(), output: None });
    }
    let started = Instant::now();
    let mut child = spawn(spec)?;
    let group = ProcessGroup::led_by(child.id());
    let stop_reading = CancellationToken::new();
    let stdout = child
        .stdout
        .take()
        .map(|out| tokio::spawn(capture(out, spec.output_limit, stop_reading.clone())));
    let stderr = child
        .stderr
        .take()
        .map(|err| tokio::spawn(capture(err, spec.output_limit, stop_reading.clone())));

    let ending = tokio::select! {
        status = child.wait() => Ending::Exited(status),
        () = tokio::time::sleep(spec.timeout) => Ending::TimedOut,
        () = cancel.cancelled() => Ending::Cancelled,
    };
    let ended = group.end().await;
    if ended.survivors > 0 {
        tracing::warn!(command = %spec.display(), survivors = ended.survivors, "processes survived SIGKILL");
    }
    let (status, timed_out, cancelled) = match ending {
        Ending::Exited(status) => (status, false, false),
        Ending::TimedOut => (child.wait().await, true, false),
        Ending::Cancelled => (child.wait().await, false, true),
    };
    let status = status.map_err(|source| SandboxError::Wait { command: spec.display(), source })?;
    let (stdout, stderr) = drain(stdout, stderr, stop_reading).await;
    let output = CommandOutput {
        exit_code: status.code(),
        signal: status.signal(),
        stdout,
        stderr,
        timed_out,
        duration: started.elapsed(),
    };
    if cancelled {
        // What it printed is kept: the model (and a resume) should know
        // how far the command got before the user stopped it.
        let output = Some(Box::new(output));
        return Err(SandboxError::Cancelled { command: spec.display(), output });
    }
    Ok(output)
}

/// How the wait for the child ended.
enum Ending {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Cancelled,
}

fn spawn(spec: &CommandSpec) -> Result<Child, SandboxError> {
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
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command.spawn().map_err(|source| SandboxError::Spawn {
        command: spec.display(),
        cwd: spec.cwd.clone(),
        source,
    })
}

/// Waits for both readers; if a pipe stays open past the grace period,
/// tells the readers to stop and keeps what they captured.
async fn drain(
    stdout: Option<JoinHandle<CapturedStream>>,
    stderr: Option<JoinHandle<CapturedStream>>,
    stop_reading: CancellationToken,
) -> (CapturedStream, CapturedStream) {
    let both = async { tokio::join!(join(stdout), join(stderr)) };
    tokio::pin!(both);
    tokio::select! {
        streams = &mut both => streams,
        () = tokio::time::sleep(PIPE_DRAIN_GRACE) => {
            stop_reading.cancel();
            both.await
        }
    }
}

async fn join(reader: Option<JoinHandle<CapturedStream>>) -> CapturedStream {
    match reader {
        Some(handle) => handle.await.unwrap_or_default(),
        None => CapturedStream::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(text: &str) -> CommandSpec {
        CommandSpec::script(text, std::env::temp_dir())
    }

    async fn run_ok(spec: CommandSpec) -> CommandOutput {
        match run(&spec, &CancellationToken::new()).await {
            Ok(output) => output,
            Err(error) => panic!("command failed: {error}"),
        }
    }

    /// Whether `pid` is gone (or a zombie nobody reaped yet). A SIGKILLed
    /// process closes its files before it turns into a zombie, so poll
    /// briefly (bounded) instead of reading its state once.
    fn is_dead(pid: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let dead = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => true,
                Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| {
                    matches!(rest.trim_start().chars().next(), Some('Z' | 'X'))
                }),
            };
            if dead || Instant::now() > deadline {
                return dead;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[tokio::test]
    async fn captures_stdout_stderr_and_exit_code() {
        let out = run_ok(script("echo out; echo err >&2; exit 3")).await;
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout.text(), "out\n");
        assert_eq!(out.stderr.text(), "err\n");
        assert!(!out.timed_out && !out.truncated() && !out.success());
    }

    #[tokio::test]
    async fn argv_runs_without_a_shell_and_sees_env_additions() {
        let spec = CommandSpec::argv("printenv", ["KEEL_TEST_VAR"], std::env::temp_dir())
            .with_env("KEEL_TEST_VAR", "hello");
        let out = run_ok(spec).await;
        assert!(out.success());
        assert_eq!(out.stdout.text(), "hello\n");
    }

    #[tokio::test]
    async fn stdin_is_null() {
        let out = run_ok(script("cat; echo end")).await;
        assert_eq!(out.stdout.text(), "end\n");
    }

    #[tokio::test]
    async fn timeout_kills_and_returns_partial_output() {
        let spec =
            script("echo before; sleep 5; echo after").with_timeout(Duration::from_millis(300));
        let out = run_ok(spec).await;
        assert!(out.timed_out);
        assert_eq!(out.stdout.text(), "before\n");
        assert!(out.duration < Duration::from_secs(3), "took {:?}", out.duration);
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let spec = script("sleep 30 & echo $!; wait").with_timeout(Duration::from_millis(300));
        let out = run_ok(spec).await;
        assert!(out.timed_out);
        let text = out.stdout.text();
        let pid = text.trim();
        assert!(!pid.is_empty());
        assert!(is_dead(pid), "background process {pid} survived the timeout");
    }

    #[tokio::test]
    async fn backgrounded_process_does_not_hold_the_command_open() {
        let out = run_ok(script("sleep 30 & echo $!; echo done")).await;
        assert!(out.success());
        assert!(out.duration < Duration::from_secs(5), "took {:?}", out.duration);
        let pid = out.stdout.text().lines().next().unwrap_or_default().to_owned();
        assert!(is_dead(&pid), "background process {pid} outlived its command");
    }

    /// The group id the script printed on its first stdout line.
    fn printed_pgid(out: &CommandOutput) -> i32 {
        let text = out.stdout.text();
        text.lines().next().and_then(|line| line.trim().parse().ok()).unwrap_or_else(|| {
            panic!("no pgid printed: {text:?}");
        })
    }

    #[tokio::test]
    async fn kill_ladder_leaves_no_process_of_the_group() {
        let spec = script("echo $$; sh -c 'sleep 1000 & sleep 1000'")
            .with_timeout(Duration::from_millis(300));
        let out = run_ok(spec).await;
        assert!(out.timed_out);
        let pgid = printed_pgid(&out);
        assert_eq!(crate::sandbox::group::members_in_proc(pgid), 0, "group {pgid} survived");
    }

    #[tokio::test]
    async fn kill_ladder_escalates_when_sigterm_is_ignored() {
        let spec = script("trap '' TERM; echo $$; sh -c 'sleep 1000 & sleep 1000'")
            .with_timeout(Duration::from_millis(300));
        let out = run_ok(spec).await;
        assert!(out.timed_out);
        let pgid = printed_pgid(&out);
        assert_eq!(crate::sandbox::group::members_in_proc(pgid), 0, "group {pgid} survived");
        assert_eq!(out.signal, Some(9), "the leader ignored SIGTERM, so SIGKILL ended it");
    }

    #[tokio::test]
    async fn exit_code_and_signal_are_reported() {
        let out = run_ok(script("kill -TERM $$")).await;
        assert_eq!((out.exit_code, out.signal), (None, Some(15)));
    }

    #[tokio::test]
    async fn spec_additions_named_like_secrets_are_kept() {
        let spec = CommandSpec::argv("printenv", ["KEEL_TEST_TOKEN"], std::env::temp_dir())
            .with_env("KEEL_TEST_TOKEN", "given");
        assert_eq!(run_ok(spec).await.stdout.text(), "given\n");
    }

    #[tokio::test]
    async fn hundred_megabytes_of_output_stay_bounded() {
        let spec = script("head -c 100000000 /dev/zero | tr '\\0' a; echo; echo end")
            .with_output_limit(64 * 1024);
        let out = run_ok(spec).await;
        assert!(out.success());
        assert_eq!(out.stdout.kept_len(), 64 * 1024);
        assert_eq!(out.stdout.omitted_bytes, 100_000_005 - 64 * 1024);
        assert!(
            out.stdout
                .text()
                .contains(&format!("[... {} bytes omitted ...]", out.stdout.omitted_bytes))
        );
        assert!(out.stdout.text().ends_with("a\nend\n"));
    }

    #[tokio::test]
    async fn cancellation_kills_the_command() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let result = run(&script("sleep 5"), &cancel).await;
        assert!(matches!(result, Err(SandboxError::Cancelled { .. })), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn already_cancelled_token_spawns_nothing() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let result = run(&script("touch should-not-exist"), &cancel).await;
        assert!(matches!(result, Err(SandboxError::Cancelled { .. })));
    }

    #[tokio::test]
    async fn chatty_output_is_bounded() {
        let spec = script("head -c 100000 /dev/zero | tr '\\0' a; echo; echo last")
            .with_output_limit(1000);
        let out = run_ok(spec).await;
        assert!(out.truncated());
        assert_eq!(out.stdout.omitted_bytes, 100_006 - 1000);
        assert!(out.stdout.text().starts_with(&"a".repeat(500)));
        assert!(out.stdout.text().ends_with("a\nlast\n"));
        assert!(out.stdout.text().contains("bytes omitted"));
    }

    #[tokio::test]
    async fn spawn_failure_is_an_error() {
        let spec =
            CommandSpec::argv("keel-no-such-program", Vec::<String>::new(), std::env::temp_dir());
        let result = run(&spec, &CancellationToken::new()).await;
        assert!(matches!(result, Err(SandboxError::Spawn { .. })), "{result:?}");
        let missing_cwd = CommandSpec::script("true", "/nonexistent/keel/dir");
        let result = run(&missing_cwd, &CancellationToken::new()).await;
        assert!(matches!(result, Err(SandboxError::Spawn { .. })), "{result:?}");
    }
}
