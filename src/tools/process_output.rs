//! `process_output`: the output a background process wrote since the last
//! read, waiting up to `wait_ms` for some when there is none yet.
//!
//! Invariants: a read, so it runs alongside other reads and is allowed in
//! every mode; it returns at once when output is waiting or the process
//! ended, and at most [`MAX_OUTPUT_BYTES`] (the newest; the rest is
//! counted as dropped); the user's Ctrl-C ends the wait, not the process.
//! A process that ended is forgotten once its last output was returned.

use schemars::JsonSchema;
use serde::Deserialize;

use super::processes::{self, render_output};
use super::{BoxFuture, MAX_OUTPUT_BYTES, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolOutput, tool_facts};

const DESCRIPTION: &str = "New output of a background process since the last read (stdout and \
stderr interleaved) and whether it still runs.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProcessOutputArgs {
    /// The id `shell` returned.
    pub id: u32,
    /// Milliseconds to wait for output when there is none yet, at most 60000.
    #[schemars(range(max = 60000))]
    pub wait_ms: Option<u64>,
}

pub struct ProcessOutput;

impl TypedTool for ProcessOutput {
    const INFO: &'static ToolInfo = &tool_facts::PROCESS_OUTPUT;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ProcessOutputArgs;

    fn call<'a>(
        &'a self,
        args: ProcessOutputArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let process = ctx.processes.get(args.id)?;
            let (wait, note) = processes::wait(args.wait_ms, 0);
            tokio::select! {
                () = process.wait_for_output(wait) => {}
                () = ctx.cancel.cancelled() => {}
            }
            Ok(with_note(read(ctx, args.id, &process), note))
        })
    }
}

/// `output` with `note` (a bound said) on its first line.
pub(super) fn with_note(mut output: ToolOutput, note: Option<String>) -> ToolOutput {
    if let Some(note) = note {
        output.text = format!("{note}\n{}", output.text);
    }
    output
}

/// Reads `id`'s new output as a result, forgetting it if it ended.
pub(super) fn read(
    ctx: &ToolContext,
    id: u32,
    process: &crate::sandbox::background::BackgroundProcess,
) -> ToolOutput {
    let command = ctx.processes.command(id);
    // The exit first: once it is known, all the output is in the ring.
    let exit = process.exit();
    let output = process.read_new(MAX_OUTPUT_BYTES);
    let status = if exit.is_some() {
        ctx.processes.remove(id);
        "exited"
    } else {
        "running"
    };
    let text = render_output(id, &command, exit, &output);
    let meta = processes::meta(id, status, &command, process.pid(), exit)
        .with("omitted_bytes", output.dropped);
    ToolOutput::new(text, meta)
}
