//! The async driver: owns a session's adapters (model client, tools, log)
//! and carries out the [`Effect`](crate::agent::Effect)s of the pure loop,
//! feeding each outcome back as the next [`Input`](crate::agent::Input).
//!
//! Invariants: every `Record` effect is appended to the log before any later
//! effect runs (write-ahead); front ends learn what happens only through
//! [`RuntimeEvent`]s; cancellation (Ctrl-C) stops the model stream and
//! running tools, and the turn still ends with every call answered.
//!
//! # Files
//!
//! - The session: `driver.rs` (`Session`; `drive` only dispatches each effect to the part that owns
//!   it and feeds the outcome back), its owned parts `model_client.rs` (provider, model, context
//!   fill, encoder warm-up), `tool_runner.rs` (registry, read-before-write memory, what the tools
//!   load, parallel reads), `session_hooks.rs` (the hook bus, SessionStart pending),
//!   `plan_store.rs` (plan files) and the log (`session::SessionLog`); `assembly.rs` (loop config,
//!   the prefix's sections, the environment block, the workflow's checks, AGENTS.md, skills and
//!   memory found; `preview.rs` the first request without a session, for `keel debug prompt`);
//!   `events.rs` (`RuntimeEvent` and `EventSink` for the front ends); `telemetry_glue.rs` (the
//!   OpenTelemetry exporter a session's log is tapped by, shared with its subagents).
//! - Effects: `execute.rs` (a batch: mutation bookkeeping, internal errors, sandbox violations
//!   marked; the unsandboxed re-run; results masked by `secrets.rs`, the session's known secret
//!   values), `ask.rs` (an approval: Notification hooks, `Approver`, the
//!   plan file read back, "always" rules written, limit questions), `approval.rs` (`Approver`:
//!   `can_ask() == false` for headless runs, where each "no" becomes a `DeclinedCall`,
//!   `declined.rs` naming the narrowest of `--full-auto`, `--yolo`, an allow rule or an interactive
//!   approval; `ask_anew` for a question no remembered "always" may answer), `commands.rs`
//!   (`/compact`, skills, the summary call), `hooks_glue.rs` (payloads, `hook_ran` lines,
//!   `CheckCalls`: the checkpoint before a writing batch, PreToolUse hooks and symlinks per call;
//!   PostToolUse hooks), `path_facts.rs` (symlinks on a call's paths), `sandboxing.rs` (the
//!   session's policy and confinement, set up at start; a command blocked by it recognised),
//!   `mcp_glue.rs` (MCP at turn boundaries), `prompt_fit.rs` (a prompt too large for the window
//!   refused before it is sent), `images.rs` (attached images, the image store, a request's image
//!   bytes).
//! - Resume and files: `resume.rs` (`Session::resume`, `continue_turn`), `file_memory.rs` (resumed
//!   read-before-write memory), `files.rs` (file hashes around mutating calls, the git facts of the
//!   environment snapshot), `replay.rs` (offline `keel replay`), `git.rs` (every `git` keel runs
//!   itself, neutralised).
//! - Rewind and fork: `rewind.rs` (`Session::rewind`: the conversation, the workspace or both back
//!   to before a prompt; the user's later edits kept), `fork.rs` (a new session copied from another's
//!   log up to a prompt); the loop's side in `agent/rewind.rs`.
//! - Undo: `checkpoint.rs` (see its doc), `shadow_seed.rs`, `shadow_triage.rs`, `undo.rs`,
//!   `undo_notes.rs`; the inotify watcher `watch.rs`, `ignores.rs`; its first walk shared with the
//!   jail's nested `.git` search `first_walk.rs`, `folder_cache.rs`.
//! - Subagents and commands: `subagent.rs` (see its doc), `subagent_run.rs`, `subagent_link.rs`,
//!   `subagent_resume.rs`, `subagent_mcp.rs`; `custom_commands.rs`; `workflow.rs` (the session's
//!   side of the workflow).

mod approval;
mod ask;
mod assembly;
mod checkpoint;
mod commands;
mod custom_commands;
mod declined;
mod driver;
mod events;
mod execute;
mod file_memory;
mod files;
mod first_walk;
mod folder_cache;
mod fork;
pub mod git;
mod hooks_glue;
mod ignores;
mod images;
mod inbox;
mod mcp_glue;
mod model_client;
mod path_facts;
mod plan_store;
mod preview;
mod prompt_fit;
mod question;
mod replay;
mod resume;
mod rewind;
mod sandboxing;
mod secrets;
mod session_hooks;
mod shadow_seed;
mod shadow_triage;
mod subagent;
mod subagent_link;
mod subagent_mcp;
mod subagent_resume;
mod subagent_run;
mod telemetry_glue;
mod tool_runner;
mod undo;
mod undo_notes;
mod walls;
mod watch;
mod workflow;

pub use approval::{ApprovalAnswer, Approver, NonInteractiveApprover};
pub use checkpoint::{CheckpointError, ShadowRepo, UndoLimits};
pub use declined::DeclinedCall;
pub use driver::{Session, SessionOptions, TurnSummary};
pub use events::{EventSink, RuntimeEvent, SandboxState};
pub use fork::{ForkError, Forked, fork};
pub use images::ImagesRefused;
pub use inbox::{InputSender, TypedInput};
pub use mcp_glue::mcp_log_dir;
pub use path_facts::gather_links;
pub use preview::first_request;
pub use prompt_fit::PromptTooLarge;
pub use replay::{Difference, ReplayReport, copy_workspace, first_checkpoint, replay};
pub use rewind::{RewindFailure, RewindReport, RewindTarget};
pub use sandboxing::{Confined, confine_commands, mark_sandbox_violation};
pub use secrets::workspace_mask;
pub use undo::{UndoError, UndoReport, undo};
pub use undo_notes::{NotCovered, NotCoveredWhy};

use crate::llm::LlmError;
use crate::session::SessionError;

/// Failures that end a session (as opposed to tool errors, which the model
/// reads, and model errors, which fail one turn).
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Log(#[from] SessionError),
    #[error("cannot set up the model client: {0}")]
    Client(#[source] LlmError),
    #[error("the loop stopped without ending the turn (a bug in keel's state machine)")]
    Stalled,
    #[error(
        "cannot resume {path} without guessing: {calls}; running them again could repeat what \
         they did. Start a new session, or delete the unreadable line(s) from the log to have \
         them judged and run again"
    )]
    AmbiguousLog {
        path: std::path::PathBuf,
        /// Which calls, and the line that could have been their start or result.
        calls: String,
    },
    #[error(
        "this session has a cost limit, and keel knows no prices for `{model}`: set \
         `input_price` and `output_price` under `[context]` (US dollars per million tokens), \
         or resume with the model it was started with"
    )]
    UnpricedCostLimit { model: String },
    #[error(
        "cannot switch to `{model}`: this session has a cost limit, and keel knows no prices for \
         `{model}` (`[context]` prices are the configured model's); start a session with \
         --model {model} and its `input_price` and `output_price` under `[context]`, or limit \
         the session with --max-tokens instead"
    )]
    UnpricedModelSwitch { model: String },
    /// The prompt cannot fit the model's window; nothing was sent.
    #[error(transparent)]
    PromptTooLarge(Box<prompt_fit::PromptTooLarge>),
    /// A custom command's expansion would pass its bound; nothing was sent.
    #[error("/{name}: {source}; nothing was sent: give it shorter arguments")]
    CommandTooLarge {
        name: String,
        #[source]
        source: crate::config::commands::ExpansionTooLarge,
    },
}
