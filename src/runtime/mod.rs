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
//!   it and feeds the outcome back; `session_controls.rs` what a front end reads and changes between
//!   turns, `announce.rs` what it is told of each record), its owned parts `model_client.rs` (provider, model, context
//!   fill, encoder warm-up), `tool_runner.rs` (registry, read-before-write memory, what the tools
//!   load, parallel reads), `session_hooks.rs` (the hook bus, SessionStart pending),
//!   `plan_store.rs` (plan files) and the log (`session::SessionLog`); `assembly.rs` (loop config,
//!   the prefix's sections, the environment block, the workflow's checks, AGENTS.md, skills and
//!   memory found; `preview.rs` the first request without a session, for `keel debug prompt`);
//!   `events.rs` (`RuntimeEvent` and `EventSink` for the front ends); `attach_host.rs` (other
//!   terminals on a live session, `keel attach`: the socket, the event stream, answers and input
//!   fed to the approver and the inbox), `attach_lines.rs` (what they are shown),
//!   `attach_wire.rs` (the versioned, bounded JSON-lines wire); `telemetry_glue.rs` (the
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
//!   refused before it is sent), `server_window.rs` (the window a local server runs with, learnt
//!   before the session opens), `images.rs` (attached images, the image store, a request's image
//!   bytes), `walls.rs` (what the request says about the sandbox, from the real confinement).
//! - Input while a turn runs: `inbox.rs` (queued and steered prompts), `question.rs` (`ask_user`).
//! - Files: `files.rs` (file hashes around mutating calls, the git facts of the environment
//!   snapshot), `git.rs` (every `git` keel runs itself, neutralised).
//! - `history/`: the session's past read back — resume (`Session::resume`, `continue_turn`, the
//!   resumed read-before-write memory), rewind, fork and the offline `keel replay`; the loop's
//!   side of rewind in `agent/rewind.rs`.
//! - `undo/`: the undo store — the checkpoint before a turn's first change and `keel undo`, the
//!   shadow repository, the inotify watcher and the one walk it shares with the jail's nested
//!   `.git` search.
//! - `subagent/`: `agent` calls run as child sessions (see its doc); `custom_commands.rs`;
//!   `workflow.rs` (the session's side of the workflow); `in_force.rs` (rules, "always" answers,
//!   agent types, hooks and memory in force, for the TUI's `/permissions /agents /hooks /memory`;
//!   `forget_always.rs`: `/permissions remove N`);
//!   `user_shell.rs` (the TUI's `!cmd`: judged and run like a `shell` call, its output a user
//!   message).

mod announce;
mod approval;
mod ask;
mod assembly;
mod attach_host;
mod attach_lines;
pub mod attach_wire;
mod commands;
mod custom_commands;
mod declined;
mod driver;
mod events;
mod execute;
mod files;
mod forget_always;
pub mod git;
mod history;
mod hooks_glue;
mod images;
mod in_force;
mod inbox;
mod mcp_glue;
pub mod mentions;
mod model_client;
mod path_facts;
mod plan_store;
mod preview;
mod prompt_fit;
mod question;
mod sandboxing;
mod secrets;
mod server_window;
mod session_controls;
mod session_hooks;
mod subagent;
mod telemetry_glue;
mod tool_runner;
mod undo;
mod user_shell;
mod walls;
mod workflow;

pub use approval::{ApprovalAnswer, Approver, NonInteractiveApprover};
pub use attach_host::{AttachError, AttachHost, Listening};
pub use declined::DeclinedCall;
pub use driver::{Session, SessionOptions, TurnSummary};
pub use events::{EventSink, RuntimeEvent, SandboxState};
pub use forget_always::ForgetError;
pub use history::fork::{ForkError, Forked, fork};
pub use history::replay::{Difference, ReplayReport, copy_workspace, first_checkpoint, replay};
pub use history::rewind::{RewindFailure, RewindReport, RewindTarget};
pub use images::ImagesRefused;
pub use in_force::{AlwaysAnswer, HookLine, InForce, RuleLine};
pub use inbox::{InputSender, TypedInput};
pub use mcp_glue::mcp_log_dir;
pub use path_facts::gather_links;
pub use preview::first_request;
pub use prompt_fit::PromptTooLarge;
pub use sandboxing::{Confined, confine_commands, mark_sandbox_violation};
pub use secrets::workspace_mask;
pub use server_window::learn_window;
pub use undo::checkpoint::{CheckpointError, ShadowRepo, UndoLimits};
pub use undo::notes::{NotCovered, NotCoveredWhy};
pub use undo::{UndoError, UndoReport, undo};
pub use user_shell::{UserShell, user_shell_message};

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
