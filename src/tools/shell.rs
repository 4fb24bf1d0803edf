//! `shell`: runs a `bash -c` command in the workspace through the sandbox.
//!
//! Invariants: the command runs with `set -o pipefail` (a pipeline fails
//! when any part fails, so `cargo test | tail` cannot hide failing tests
//! from the model or the verification gate, which reads the exit code);
//! the working directory is confined to the workspace; the
//! command runs with a timeout (default [`DEFAULT_TIMEOUT_MS`], at most
//! [`MAX_TIMEOUT_MS`]) and the user's cancellation; the output the model
//! sees is at most [`MAX_OUTPUT_BYTES`] (head and tail kept); when it was
//! cut and the session keeps outputs (`ToolContext::kept`), each stream is
//! captured up to `session::MAX_KEPT_BYTES`, the whole is kept first and
//! the truncation note names the file and how to read it (a copy that
//! could not be written is said). A non-zero exit is a normal result (the
//! model reads the exit code); failing to start, timing out and being
//! cancelled are errors; a timeout with the network closed says so (a
//! command waiting on a host it cannot reach never finishes) instead of
//! only "raise timeout_ms". With `background`
//! the command is left running instead ([`super::shell_background`]);
//! `pty` (refused without `background`) gives it a terminal.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::args::blocking;
use super::paths::Workspace;
use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::display::{self, KeptCopy, ShellRun};
use crate::policy;
use crate::policy::network::NetworkMode;
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};
use crate::sandbox::background::Stdio;
use crate::sandbox::{self, CapturedStream, CommandOutput, CommandSpec, SandboxError};
use crate::session::{Kept, MAX_KEPT_BYTES};

pub const NAME: &str = tool_facts::SHELL.name;
/// Timeout when the model gives none.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Longer timeouts are lowered to this (and the result says so).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Output shown to the model, stdout and stderr together.
pub const MAX_OUTPUT_BYTES: usize = 30 * 1024;

const DESCRIPTION: &str = "Run a command with `bash -c`. Result: `exit code: N` unless it \
exited 0, then stdout, then `--- stderr ---` and stderr if any; long output keeps start and end. \
Each call is a fresh shell: `cd`, `export` and a virtualenv do not carry over (chain with `&&` or \
use `workdir`). `pipefail` is on: `cargo test 2>&1 | tail -n 40` fails when the tests fail (a \
writer cut by `head` may exit 141). stdin is closed. Credentials in the environment (*_API_KEY, \
*_TOKEN, …) are not passed on.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ShellArgs {
    pub command: String,
    /// Milliseconds before it is killed, at most 600000. Defaults to 120000.
    #[schemars(range(min = 1, max = 600000))]
    pub timeout_ms: Option<u64>,
    /// Folder to run in, a path like any other (relative to the workspace root, else to the working directory); defaults to the working directory.
    pub workdir: Option<String>,
    /// Makes any command a check of your change: passing on exit 0, failing otherwise (tests and builds are checks anyway).
    #[serde(default)]
    pub verify: bool,
    /// Leaves it running (a server, a watcher, a REPL; no timeout): returns its id, its first output and how to reach it.
    #[serde(default)]
    pub background: bool,
    /// With background: its stdin/stdout/stderr are a terminal (a REPL, a prompt, a tool that checks isatty).
    #[serde(default)]
    pub pty: bool,
}

/// What every command runs under: a pipeline fails when any part fails.
const PIPEFAIL: &str = "set -o pipefail; ";

pub struct Shell;

impl TypedTool for Shell {
    const INFO: &'static ToolInfo = &tool_facts::SHELL;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ShellArgs;

    fn call<'a>(
        &'a self,
        args: ShellArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(run(args, ctx))
    }
}

async fn run(args: ShellArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    if args.pty && !args.background {
        return Err(ToolError::InvalidArguments {
            tool: NAME.to_owned(),
            message: "`pty` needs `background: true` (a command run to its end has no terminal; \
                      start it in the background, then use process_write and process_output)"
                .to_owned(),
        });
    }
    let workdir = args.workdir.clone();
    let owned_ctx = ctx.clone();
    let (dir, rel) = blocking(NAME, move || {
        let ws = Workspace::new(&owned_ctx)?;
        // The path rule of every tool: root first, then the working directory.
        let dir = ws.resolve_or_cwd(workdir.as_deref())?;
        let rel = ws.relative(&dir);
        match std::fs::metadata(&dir) {
            Ok(metadata) if metadata.is_dir() => Ok((dir, rel)),
            Ok(_) => Err(ToolError::NotADirectory { path: rel }),
            Err(source) => Err(ToolError::io(rel, source)),
        }
    })
    .await?;
    if args.background {
        let script = format!("{PIPEFAIL}{}", args.command);
        let stdio = if args.pty { Stdio::Terminal } else { Stdio::Pipes };
        return super::shell_background::start(&args.command, script, dir, &rel, stdio, ctx).await;
    }
    let timeout_ms = args.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS).clamp(1, MAX_TIMEOUT_MS);
    // With somewhere to keep it, each stream is captured up to what a kept
    // output holds; the model's share is cut from that below.
    let capture_limit = if ctx.kept.is_some() { MAX_KEPT_BYTES } else { MAX_OUTPUT_BYTES };
    let spec = CommandSpec::script(format!("{PIPEFAIL}{}", args.command), dir)
        .with_timeout(Duration::from_millis(timeout_ms))
        .with_output_limit(capture_limit)
        // Pagers would wait on a terminal that is not there.
        .with_env("PAGER", "cat")
        .with_env("GIT_PAGER", "cat")
        // The jail's launcher names the call in keel's network proxy log
        // (and keeps it from the command).
        .with_env(sandbox::jail::CALL_ID_VARIABLE, &ctx.call_id);
    // A plain `git commit`, `git checkout -b`…: `.git` writable for it
    // (but for its config and hooks), run as a neutralised git.
    let jail = ctx.command_jail();
    let run = match policy::git_write::recognise(&args.command) {
        Some(argv) => jail.run_git(&argv, spec, &ctx.cancel).await,
        None => jail.run(spec, &ctx.cancel).await,
    };
    let output = match run {
        Err(SandboxError::Cancelled { output: Some(partial), .. }) => {
            let shown = render(&partial, MAX_OUTPUT_BYTES, None);
            return Err(ToolError::Interrupted { output: shown.text });
        }
        finished => finished?,
    };
    let shown = render_kept(&output, ctx).await;
    let mut text = shown.text;
    if args.timeout_ms.is_some_and(|asked| asked > MAX_TIMEOUT_MS) {
        // Said, not silent: the model asked for more than it got.
        text = format!("[timeout_ms lowered to {MAX_TIMEOUT_MS}, the most allowed]\n{text}");
    }
    if args.timeout_ms == Some(0) {
        text = format!("[timeout_ms raised to 1, the least allowed]\n{text}");
    }
    if output.timed_out {
        let network = jail.confinement().await.map(|confinement| confinement.network);
        return Err(ToolError::Timeout {
            timeout_ms,
            advice: timeout_advice(network),
            output: text,
        });
    }
    let mut meta = ToolMeta::command(output.exit_code.map(i64::from), output.signal.map(i64::from))
        .with("truncated", shown.omitted > 0)
        .with("omitted_bytes", shown.omitted);
    if let Some(kept) = &shown.kept {
        meta.insert("kept_output", kept.path.to_string_lossy());
    }
    meta.set_duration_ms(u64::try_from(output.duration.as_millis()).unwrap_or(u64::MAX));
    meta.insert("workdir", rel.to_string_lossy());
    meta.insert("verify", args.verify);
    if ctx.read_only {
        // Ran as a read, in the jail with nothing writable.
        meta.set_read_only();
    }
    Ok(ToolOutput::new(text, meta))
}

/// What a timed-out command's result advises: with the network closed, a
/// command may have been waiting on a host it cannot reach, and a longer
/// timeout would only wait longer.
fn timeout_advice(network: Option<NetworkMode>) -> String {
    match network.filter(|network| network.is_closed()) {
        Some(network) => format!(
            "{}; a command waiting on a host it cannot reach never finishes, so raise timeout_ms \
             only if it needs no network",
            crate::sandbox::confinement::network_hint(network)
        ),
        None => "raise timeout_ms or run something that finishes sooner".to_owned(),
    }
}

/// A result as the model reads it.
struct Shown {
    text: String,
    /// Bytes left out of what the model reads, in all.
    omitted: u64,
    /// Where the whole output was kept, when it was cut and kept.
    kept: Option<Kept>,
}

/// The result the model reads; when it was cut and the session keeps
/// outputs, the whole output (up to [`MAX_KEPT_BYTES`]) is kept first and
/// the truncation note names it. A copy that cannot be written is said.
async fn render_kept(output: &CommandOutput, ctx: &ToolContext) -> Shown {
    let shown = render(output, MAX_OUTPUT_BYTES, None);
    let Some(store) = ctx.kept.clone().filter(|_| shown.omitted > 0) else { return shown };
    let whole = render(output, MAX_KEPT_BYTES, None);
    let complete = whole.omitted == 0;
    let call_id = ctx.call_id.clone();
    let kept = tokio::task::spawn_blocking(move || store.keep(&call_id, &whole.text)).await;
    match kept {
        Ok(Ok(kept)) => {
            let path = kept.path.to_string_lossy().into_owned();
            let copy =
                KeptCopy { path: &path, bytes: kept.bytes, lines: kept.lines, whole: complete };
            Shown { kept: Some(kept.clone()), ..render(output, MAX_OUTPUT_BYTES, Some(copy)) }
        }
        Ok(Err(error)) => Shown { text: format!("[{error}]\n{}", shown.text), ..shown },
        Err(_) => shown,
    }
}

/// The result the model reads (`display::frame_shell` owns the format),
/// fitted into `budget` bytes; also says how many bytes were left out
/// in all.
fn render(output: &CommandOutput, budget: usize, kept: Option<KeptCopy<'_>>) -> Shown {
    let (stdout, stderr) = fit(&output.stdout, &output.stderr, budget);
    let omitted = stdout.omitted_bytes + stderr.omitted_bytes;
    // Binary on stdout is summarised, not shown as replacement characters.
    let stdout =
        super::shell_binary::binary_summary(&output.stdout).unwrap_or_else(|| stdout.text());
    let stderr = stderr.text();
    let text = display::frame_shell(&ShellRun {
        exit_code: output.exit_code,
        signal: output.signal,
        omitted_bytes: omitted,
        stdout: &stdout,
        stderr: &stderr,
        kept,
    });
    Shown { text, omitted, kept: None }
}

/// Shares the output budget: stderr keeps at least a quarter when both
/// streams are long, and whatever stdout leaves unused otherwise.
fn fit(
    stdout: &CapturedStream,
    stderr: &CapturedStream,
    budget: usize,
) -> (CapturedStream, CapturedStream) {
    let (out_len, err_len) = (stdout.kept_len(), stderr.kept_len());
    if out_len + err_len <= budget {
        return (stdout.clone(), stderr.clone());
    }
    let stderr_budget = err_len.min((budget / 4).max(budget.saturating_sub(out_len)));
    (stdout.fit_to(budget - stderr_budget), stderr.fit_to(stderr_budget))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    async fn shell(ws: &TestWorkspace, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        ws.run(&Shell, args).await
    }

    #[tokio::test]
    async fn runs_in_the_workspace_and_reports_exit_code() {
        let ws = TestWorkspace::new();
        ws.write("hello.txt", "hi");
        let out = shell(&ws, json!({ "command": "cat hello.txt; echo; pwd" })).await.unwrap();
        let root = ws.canonical_root();
        assert_eq!(out.text, format!("hi\n{}", root.display()));
        assert_eq!(out.meta["exit_code"], 0);
        assert_eq!(out.meta["timed_out"], false);
        assert_eq!(out.meta["truncated"], false);
    }

    #[tokio::test]
    async fn nonzero_exit_is_a_result_not_an_error() {
        let ws = TestWorkspace::new();
        let out =
            shell(&ws, json!({ "command": "echo out; echo oops >&2; exit 2" })).await.unwrap();
        assert_eq!(out.text, "exit code: 2\nout\n--- stderr ---\noops");
        assert_eq!(out.meta["exit_code"], 2);
    }

    #[tokio::test]
    async fn a_failing_command_piped_through_tail_fails() {
        let ws = TestWorkspace::new();
        let command = "echo 'test result: FAILED'; exit 101";
        let out = shell(&ws, json!({ "command": format!("({command}) 2>&1 | tail -n 50") }))
            .await
            .unwrap();
        assert_eq!(out.meta["exit_code"], 101, "{}", out.text);
        let passing = shell(&ws, json!({ "command": "true | tail -n 1" })).await.unwrap();
        assert_eq!(passing.meta["exit_code"], 0);
    }

    #[tokio::test]
    async fn the_verify_flag_is_accepted_and_optional() {
        let ws = TestWorkspace::new();
        let out = shell(&ws, json!({ "command": "true", "verify": true })).await.unwrap();
        assert_eq!(out.meta["exit_code"], 0);
    }

    #[tokio::test]
    async fn no_output_says_so() {
        let ws = TestWorkspace::new();
        let out = shell(&ws, json!({ "command": "true" })).await.unwrap();
        assert_eq!(out.text, "(no output)");
    }

    #[tokio::test]
    async fn workdir_is_confined_to_the_workspace() {
        let ws = TestWorkspace::new();
        ws.write("sub/file", "");
        let out = shell(&ws, json!({ "command": "ls", "workdir": "sub" })).await.unwrap();
        assert_eq!(out.text, "file");
        assert_eq!(out.meta["workdir"], "sub");
        let outside = shell(&ws, json!({ "command": "ls", "workdir": ".." })).await;
        assert!(matches!(outside, Err(ToolError::OutsideWorkspace { .. })), "{outside:?}");
        let file = shell(&ws, json!({ "command": "ls", "workdir": "sub/file" })).await;
        assert!(matches!(file, Err(ToolError::NotADirectory { .. })), "{file:?}");
    }

    #[tokio::test]
    async fn binary_stdout_is_summarised() {
        let ws = TestWorkspace::new();
        let out =
            shell(&ws, json!({ "command": "printf '\\177ELF\\002\\001\\000\\000\\377\\376'" }))
                .await
                .unwrap();
        assert!(out.text.starts_with("[binary output, about"), "{}", out.text);
        assert!(out.text.contains("ELF executable"), "{}", out.text);
        assert!(!out.text.contains('\u{fffd}'), "{}", out.text);
    }

    #[tokio::test]
    async fn workdir_follows_the_path_rule_of_the_file_tools() {
        let ws = TestWorkspace::new();
        ws.write("pkg/inner/f", "");
        let mut ctx = ws.ctx.clone();
        ctx.cwd = ws.path("pkg");
        let run = |workdir: Option<&str>| {
            let mut args = json!({ "command": "ls" });
            if let Some(workdir) = workdir {
                args["workdir"] = json!(workdir);
            }
            let ctx = ctx.clone();
            async move { crate::tools::Tool::run(&Shell, args, &ctx).await.map(|out| out.text) }
        };
        assert_eq!(run(Some("pkg/inner")).await.unwrap(), "f", "root-relative, as the prompt says");
        assert_eq!(run(Some("inner")).await.unwrap(), "f", "relative to the working directory");
        assert_eq!(run(None).await.unwrap(), "inner", "the working directory by default");
    }

    #[tokio::test]
    async fn timeout_kills_and_is_an_error_with_partial_output() {
        let ws = TestWorkspace::new();
        let started = Instant::now();
        let result =
            shell(&ws, json!({ "command": "echo started; sleep 5", "timeout_ms": 300 })).await;
        assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
        let Err(error) = result else { panic!("expected a timeout, got {result:?}") };
        assert!(matches!(error, ToolError::Timeout { timeout_ms: 300, .. }), "{error:?}");
        assert!(error.to_string().contains("started"), "{error}");
        assert_eq!(error.meta()["timed_out"], true);
    }

    #[tokio::test]
    async fn cancellation_kills_the_command() {
        let ws = TestWorkspace::new();
        let trigger = ws.ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            trigger.cancel();
        });
        let started = Instant::now();
        let result = shell(&ws, json!({ "command": "sleep 5" })).await;
        assert!(matches!(result, Err(ToolError::Interrupted { .. })), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn ctrl_c_runs_the_kill_ladder_on_the_whole_group() {
        let ws = TestWorkspace::new();
        let command = "echo $$ > pgid.txt; sh -c 'sleep 1000 & sleep 1000'";
        let call = shell(&ws, json!({ "command": command }));
        let watcher = async {
            // Wait (bounded) until the command is running, then "press Ctrl-C".
            let deadline = Instant::now() + Duration::from_secs(10);
            let pgid = loop {
                let text = std::fs::read_to_string(ws.path("pgid.txt")).unwrap_or_default();
                if let Ok(pgid) = text.trim().parse::<i32>() {
                    break pgid;
                }
                assert!(Instant::now() < deadline, "command never started");
                tokio::time::sleep(Duration::from_millis(5)).await;
            };
            ws.ctx.cancel.cancel();
            pgid
        };
        let (result, pgid) = tokio::join!(call, watcher);
        assert!(matches!(result, Err(ToolError::Interrupted { .. })), "{result:?}");
        assert_eq!(crate::sandbox::group::members_in_proc(pgid), 0, "group {pgid} survived");
    }

    #[tokio::test]
    async fn hundred_megabytes_return_promptly_with_a_note_of_the_cut() {
        let ws = TestWorkspace::new();
        let started = Instant::now();
        let out = shell(&ws, json!({ "command": "head -c 100000000 /dev/zero | tr '\\0' x" }))
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(30), "took {:?}", started.elapsed());
        assert!(out.text.len() < MAX_OUTPUT_BYTES + 500, "{}", out.text.len());
        let omitted = out.meta["omitted_bytes"].as_u64().unwrap_or_default();
        assert_eq!(omitted, 100_000_000 - MAX_OUTPUT_BYTES as u64);
        assert!(out.text.contains(&format!("[output truncated: {omitted} bytes cut")));
    }

    #[tokio::test]
    async fn long_output_keeps_head_and_tail() {
        let ws = TestWorkspace::new();
        let out = shell(&ws, json!({ "command": "seq 1 100000; echo bad >&2" })).await.unwrap();
        assert!(out.text.len() < MAX_OUTPUT_BYTES + 500, "{}", out.text.len());
        assert!(out.text.contains("grep]\n1\n2\n3\n"), "{}", &out.text[..200]);
        assert!(out.text.contains("99999\n100000\n"));
        assert_eq!(out.text.matches("bytes omitted").count(), 1, "{}", out.text);
        assert!(out.text.ends_with("--- stderr ---\nbad"), "{}", &out.text[out.text.len() - 100..]);
        assert_eq!(out.meta["truncated"], true);
    }

    #[test]
    fn a_timeout_under_a_closed_network_says_the_network_is_closed() {
        for closed in [NetworkMode::Off, NetworkMode::Allowlist] {
            let error = ToolError::Timeout {
                timeout_ms: 300,
                advice: timeout_advice(Some(closed)),
                output: String::new(),
            };
            let text = error.to_string();
            assert!(text.contains("a command waiting on a host it cannot reach"), "{text}");
            assert!(text.contains("[sandbox]"), "how the user opens it: {text}");
        }
        let off = timeout_advice(Some(NetworkMode::Off));
        assert!(off.contains("the network is off for commands"), "{off}");
        for open in [Some(NetworkMode::On), None] {
            let advice = timeout_advice(open);
            assert_eq!(advice, "raise timeout_ms or run something that finishes sooner");
        }
    }

    fn stream(text: &str) -> CapturedStream {
        CapturedStream { head: text.to_owned(), ..CapturedStream::default() }
    }

    #[test]
    fn budget_is_shared_between_streams() {
        let long = stream(&"o".repeat(MAX_OUTPUT_BYTES * 2));
        let err = stream(&"e".repeat(MAX_OUTPUT_BYTES * 2));
        let (stdout, stderr) = fit(&long, &err, MAX_OUTPUT_BYTES);
        assert_eq!(stdout.kept_len() + stderr.kept_len(), MAX_OUTPUT_BYTES);
        assert_eq!(stderr.kept_len(), MAX_OUTPUT_BYTES / 4);
        let (stdout, stderr) = fit(&long, &stream("short"), MAX_OUTPUT_BYTES);
        assert_eq!(stderr.text(), "short");
        assert_eq!(stdout.kept_len(), MAX_OUTPUT_BYTES - 5);
        assert_eq!(stdout.omitted_bytes as usize, MAX_OUTPUT_BYTES * 2 - stdout.kept_len());
    }
}
