//! `process_stop`: ends a background process and everything it started
//! (SIGTERM to its group, SIGKILL after a grace period) and returns the
//! output it had not read yet.
//!
//! Invariants: the process is forgotten whatever its state; counted as a
//! read for policy and the workflow (it only ends what this session
//! started, so it is allowed in every mode, like reading its output).

use schemars::JsonSchema;
use serde::Deserialize;

use super::processes::{self, render_output};
use super::{BoxFuture, MAX_OUTPUT_BYTES, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolOutput, tool_facts};

const DESCRIPTION: &str = "Stop a background process and all it started; returns its unread \
output.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ProcessStopArgs {
    /// The id `shell` returned.
    pub id: u32,
}

pub struct ProcessStop;

impl TypedTool for ProcessStop {
    const INFO: &'static ToolInfo = &tool_facts::PROCESS_STOP;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ProcessStopArgs;

    fn call<'a>(
        &'a self,
        args: ProcessStopArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let process = ctx.processes.get(args.id)?;
            let command = ctx.processes.command(args.id);
            ctx.processes.remove(args.id);
            let ended_before = process.exit();
            let exit = process.stop().await;
            let output = process.read_new(MAX_OUTPUT_BYTES);
            let mut text = render_output(args.id, &command, None, &output);
            let said = match (ended_before, exit) {
                (Some(exit), _) => format!("had ended already: it {exit}"),
                (None, Some(exit)) => format!("is stopped: it {exit}"),
                (None, None) => "did not end within the kill ladder".to_owned(),
            };
            text = text.replacen("is running.", &format!("{said}."), 1);
            let meta = processes::meta(args.id, "stopped", &command, process.pid(), exit);
            Ok(ToolOutput::new(text, meta))
        })
    }
}
