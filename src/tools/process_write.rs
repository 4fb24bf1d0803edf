//! `process_write`: sends text to a background process's stdin, then
//! returns what it answered within `wait_ms`.
//!
//! Invariants: judged as a change (input to a REPL can do anything the
//! process can; it runs in the same jail as its start); stdin is a pipe,
//! where control characters are bytes like any other (to interrupt, use
//! `process_stop`), or, for a process started with `pty`, its terminal,
//! where they act as typed (`\u0003` interrupts, `\u0004` ends input).

use schemars::JsonSchema;
use serde::Deserialize;

use super::processes::{self, ProcessError};
use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolOutput, tool_facts};

/// How long it waits for an answer when the call names no wait.
const DEFAULT_WAIT_MS: u64 = 1000;

const DESCRIPTION: &str = "Write `input` to a background process's stdin (a pipe, or its \
terminal when started with `pty`; include the `\\n`) and return its answer.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProcessWriteArgs {
    /// The id `shell` returned.
    pub id: u32,
    /// The text to write, sent as is.
    pub input: String,
    /// Milliseconds to wait for the answer, at most 60000 (default 1000).
    #[schemars(range(max = 60000))]
    pub wait_ms: Option<u64>,
}

pub struct ProcessWrite;

impl TypedTool for ProcessWrite {
    const INFO: &'static ToolInfo = &tool_facts::PROCESS_WRITE;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ProcessWriteArgs;

    fn call<'a>(
        &'a self,
        args: ProcessWriteArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let process = ctx.processes.get(args.id)?;
            process
                .write(args.input.as_bytes())
                .await
                .map_err(|source| ProcessError::Input { id: args.id, source })?;
            let (wait, note) = processes::wait(args.wait_ms, DEFAULT_WAIT_MS);
            tokio::select! {
                () = process.wait_for_output(wait) => {}
                () = ctx.cancel.cancelled() => {}
            }
            let output = super::process_output::read(ctx, args.id, &process);
            Ok(super::process_output::with_note(output, note))
        })
    }
}
