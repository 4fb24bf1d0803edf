//! `process_output`: the output a background process wrote since the last
//! read, waiting up to `wait_ms` for some when there is none yet.
//!
//! Invariants: a read, so it runs alongside other reads and is allowed in
//! every mode; it returns at once when output is waiting or the process
//! ended, and at most [`MAX_OUTPUT_BYTES`] (the newest; the rest is
//! counted as dropped, or, when the session keeps outputs, kept with the
//! newest in a file the result names: `session::KeptOutputs`); binary
//! output is summarised as `shell`'s is; the user's Ctrl-C ends the wait, not the process.
//! A process that ended is forgotten once its last output was returned.

use schemars::JsonSchema;
use serde::Deserialize;

use super::processes::{self, render_output};
use super::{BoxFuture, MAX_OUTPUT_BYTES, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolOutput, tool_facts};
use crate::sandbox::CapturedStream;
use crate::sandbox::background::{BackgroundProcess, NewOutput, RING_BYTES};
use crate::session::Kept;

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
pub(super) fn read(ctx: &ToolContext, id: u32, process: &BackgroundProcess) -> ToolOutput {
    let command = ctx.processes.command(id);
    // The exit first: once it is known, all the output is in the ring.
    let exit = process.exit();
    let (output, kept) = read_new(ctx, process);
    let status = if exit.is_some() {
        ctx.processes.remove(id);
        "exited"
    } else {
        "running"
    };
    let mut text = render_output(id, &command, exit, &output);
    if let Some((kept, older)) = &kept {
        text = with_kept_note(&text, kept, *older);
    }
    let mut meta = processes::meta(id, status, &command, process.pid(), exit)
        .with("omitted_bytes", output.dropped);
    if let Some((kept, _)) = &kept {
        meta.insert("kept_output", kept.path.to_string_lossy());
    }
    ToolOutput::new(text, meta)
}

/// The new output of `process` the model reads: the newest
/// [`MAX_OUTPUT_BYTES`]. When the session keeps outputs, all the ring
/// holds of it is read, and a read longer than the model's share is kept
/// whole (`session::KeptOutputs`; at most the ring, 1 MiB, so written
/// here); also how many older bytes the model does not see. Binary is
/// summarised, as for `shell`.
pub(super) fn read_new(
    ctx: &ToolContext,
    process: &BackgroundProcess,
) -> (NewOutput, Option<(Kept, u64)>) {
    let Some(store) = &ctx.kept else {
        return (summarised(process.read_new(MAX_OUTPUT_BYTES)), None);
    };
    let output = summarised(process.read_new(RING_BYTES));
    if output.text.len() <= MAX_OUTPUT_BYTES {
        return (output, None);
    }
    let from = output.text.len() - MAX_OUTPUT_BYTES;
    let from =
        (from..output.text.len()).find(|&at| output.text.is_char_boundary(at)).unwrap_or(from);
    let newest = NewOutput { text: output.text[from..].to_owned(), dropped: output.dropped };
    match store.keep(&ctx.call_id, &output.text) {
        Ok(kept) => (newest, Some((kept, from as u64))),
        // Not kept: the older bytes count as dropped, as without a store.
        Err(_) => (NewOutput { dropped: output.dropped + from as u64, ..newest }, None),
    }
}

/// `output` with binary text replaced by its summary (`shell_binary`).
fn summarised(output: NewOutput) -> NewOutput {
    let stream = CapturedStream { head: output.text, tail: String::new(), omitted_bytes: 0 };
    match super::shell_binary::binary_summary(&stream) {
        Some(summary) => NewOutput { text: summary, dropped: output.dropped },
        None => NewOutput { text: stream.head, dropped: output.dropped },
    }
}

/// `text` (a rendered read) with the note saying where its older bytes are.
pub(super) fn with_kept_note(text: &str, kept: &Kept, older: u64) -> String {
    let (status, rest) = text.split_once('\n').unwrap_or((text, ""));
    format!(
        "{status}\n[{older} older bytes of this read are not shown; all of it ({} bytes, {} \
         lines) is kept in {}: read_file it with offset and limit (in lines)]\n{rest}",
        kept.bytes,
        kept.lines,
        kept.path.display()
    )
}
