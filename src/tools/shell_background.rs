//! `shell` with `background: true`: starts the command and returns after
//! [`FIRST_OUTPUT_WAIT`] (or as soon as it ends) with its number and its
//! first output, leaving it running in the session's jail.
//!
//! Invariants: the command is the same `bash -c` script with `pipefail`,
//! in the same confined working directory, judged by policy as any `shell`
//! call (the runtime judges the call before it gets here); it counts
//! against [`MAX_PROCESSES`](super::processes::MAX_PROCESSES); a command
//! that ended within the wait is reported with its exit and not kept;
//! nothing awaits the pipes of a process that still runs, so the turn goes
//! on. With `pty` its stdio is a terminal (`sandbox::background::Stdio`),
//! and the hint names `process_write` as typing on it. Python's output is unbuffered (`PYTHONUNBUFFERED`), so a server's
//! first lines are seen at once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::processes::{self, render_output};
use super::{MAX_OUTPUT_BYTES, ToolContext, ToolError};
use crate::protocol::ToolOutput;
use crate::protocol::tool_facts::names;
use crate::sandbox::CommandSpec;
use crate::sandbox::background::{self, Stdio};

/// How long a start waits for the command's first output (or its end).
pub const FIRST_OUTPUT_WAIT: Duration = Duration::from_millis(1000);

/// Starts `script` (the model's command, `pipefail` prepended) in `dir`.
pub(super) async fn start(
    command: &str,
    script: String,
    dir: PathBuf,
    rel: &Path,
    stdio: Stdio,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let slot = ctx.processes.reserve()?;
    // The session's jail for this call, as for every `shell` command
    // (`ToolContext::command_jail`): the nested `.git` search settled for
    // one that can write, nothing writable for one judged a read.
    let jail = ctx.command_jail();
    let confinement = jail.confinement().await;
    let spec = CommandSpec::script(script, dir)
        .with_env("PAGER", "cat")
        .with_env("GIT_PAGER", "cat")
        .with_env("PYTHONUNBUFFERED", "1")
        .with_filtered_env(jail.env_filter().clone());
    let process = Arc::new(
        background::start(&spec, confinement.as_ref(), stdio)
            .map_err(|source| ToolError::Command { source })?,
    );
    let cancelled = tokio::select! {
        () = process.wait_for_exit(FIRST_OUTPUT_WAIT) => false,
        () = ctx.cancel.cancelled() => true,
    };
    if cancelled {
        let _ = process.stop().await;
        return Err(ToolError::Interrupted { output: process.read_new(MAX_OUTPUT_BYTES).text });
    }
    let id = slot.id;
    let exit = process.exit();
    let (output, kept) = super::process_output::read_new(ctx, &process);
    let mut text = render_output(id, command, exit, &output);
    if let Some((kept, older)) = &kept {
        text = super::process_output::with_kept_note(&text, kept, *older);
    }
    let status = match exit {
        Some(_) => "exited",
        None => {
            // The process tools wait behind `call_tool` (`agent::deferred`).
            text.push_str(&format!(
                "\n(it runs on until the session ends; through call_tool: {} \
                 {{\"id\": {id}, \"wait_ms\": 2000}} reads new output, {} {{\"id\": {id}, \
                 \"input\": \"…\\n\"}} {}, {} {{\"id\": {id}}} stops it)",
                names::PROCESS_OUTPUT,
                names::PROCESS_WRITE,
                if process.on_terminal() { "types on its terminal" } else { "writes to its stdin" },
                names::PROCESS_STOP
            ));
            slot.fill(command.to_owned(), process.clone());
            "running"
        }
    };
    let mut meta = processes::meta(id, status, command, process.pid(), exit);
    meta.insert("workdir", rel.to_string_lossy());
    if let Some((kept, _)) = &kept {
        meta.insert("kept_output", kept.path.to_string_lossy());
    }
    Ok(ToolOutput::new(text, meta))
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use serde_json::json;

    use super::super::process_output::ProcessOutput;
    use super::super::process_stop::ProcessStop;
    use super::super::process_write::ProcessWrite;
    use super::super::shell::Shell;
    use super::*;
    use crate::tools::testutil::TestWorkspace;

    async fn start_in(ws: &TestWorkspace, command: &str) -> ToolOutput {
        let args = json!({ "command": command, "background": true });
        ws.run(&Shell, args).await.unwrap()
    }

    fn id_of(out: &ToolOutput) -> u64 {
        out.meta["background"]["id"].as_u64().unwrap()
    }

    #[tokio::test]
    async fn a_started_process_runs_on_is_read_written_and_stopped() {
        let ws = TestWorkspace::new();
        let started = Instant::now();
        let out = start_in(&ws, "echo ready; while read line; do echo \"got $line\"; done").await;
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        assert_eq!(out.meta["background"]["status"], "running", "{}", out.text);
        assert!(out.text.contains("is running.\nready\n(it runs on"), "{}", out.text);
        let id = id_of(&out);
        let quiet = ws.run(&ProcessOutput, json!({ "id": id })).await.unwrap();
        assert!(quiet.text.ends_with("(no new output)"), "{}", quiet.text);
        let answer =
            ws.run(&ProcessWrite, json!({ "id": id, "input": "ping\n", "wait_ms": 5000 })).await;
        assert!(answer.unwrap().text.ends_with("got ping"));
        let stopped = ws.run(&ProcessStop, json!({ "id": id })).await.unwrap();
        // Its stdin closed first and it had a moment to end on its own (a
        // loaded machine may still need the signal).
        assert!(stopped.text.contains("is stopped: it "), "{}", stopped.text);
        assert_eq!(stopped.meta["background"]["status"], "stopped");
        let gone = ws.run(&ProcessOutput, json!({ "id": id })).await;
        let Err(error) = gone else { panic!("{gone:?}") };
        assert!(error.to_string().contains("there is no background process 1"), "{error}");
        assert_eq!(error.meta()["error"], "no_such_process");
    }

    #[tokio::test]
    async fn a_command_that_ends_at_once_is_reported_and_not_kept() {
        let ws = TestWorkspace::new();
        let out = start_in(&ws, "echo done; exit 3").await;
        assert_eq!(out.meta["background"]["status"], "exited");
        assert_eq!(out.meta["background"]["exit_code"], 3);
        assert!(out.text.contains("exited with code 3; it is gone now"), "{}", out.text);
        assert!(ws.ctx.processes.list().is_empty());
    }

    #[tokio::test]
    async fn the_ninth_start_is_refused_naming_the_running_ones() {
        let ws = TestWorkspace::new();
        for _ in 0..processes::MAX_PROCESSES {
            let out = start_in(&ws, "sleep 1000").await;
            assert_eq!(out.meta["background"]["status"], "running");
        }
        let args = json!({ "command": "sleep 1000", "background": true });
        let Err(error) = ws.run(&Shell, args).await else { panic!("the ninth start ran") };
        assert_eq!(
            error.to_string(),
            "8 background processes are running already, the most a session may have; stop one \
             with process_stop first (running: 1, 2, 3, 4, 5, 6, 7, 8)"
        );
        assert_eq!(ws.ctx.processes.list().len(), 8);
        ws.ctx.processes.stop_all().await;
        assert!(ws.ctx.processes.list().is_empty());
    }

    #[tokio::test]
    async fn a_wait_for_output_returns_when_output_comes() {
        let ws = TestWorkspace::new();
        let out = start_in(&ws, "read go; echo late").await;
        let id = id_of(&out);
        let waiting = ws.run(&ProcessOutput, json!({ "id": id, "wait_ms": 30000 }));
        let started = Instant::now();
        let poke = async {
            tokio::task::yield_now().await;
            ws.ctx.processes.get(u32::try_from(id).unwrap()).unwrap().write(b"\n").await.unwrap();
        };
        let (read, ()) = tokio::join!(waiting, poke);
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
        assert!(read.unwrap().text.contains("late"));
    }
}
