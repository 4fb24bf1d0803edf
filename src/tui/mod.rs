//! The interactive front end (L3): `keel` and `keel "prompt"`.
//!
//! Elm-style: [`App`] is the model, [`update`] the pure transition from a
//! [`Msg`] to [`Command`]s, [`view`] draws the model. The driver
//! (`driver.rs`) owns the terminal and performs commands; the session runs
//! on its own task (`bridge.rs`) and talks to the UI only through channels:
//! prompts and mode changes in, runtime events and approval requests out.
//!
//! Before a session opens, `launch.rs` and `picker.rs` may ask "trust this
//! project?" and show the resume picker (`keel resume`).
//!
//! Invariants: nothing here changes the runtime's behaviour except through
//! the `Approver` (including the mode chosen with a plan approval), the
//! cancellation token and the session's own entry points (`run_turn`,
//! `continue_turn`, `compact`, `undo_turns`, `rewind`, `set_approval_mode`);
//! drawing never panics on any terminal size; the terminal is restored on
//! every exit path (see `terminal.rs`). Must not touch the session log or
//! tools directly.
//!
//! # The parts
//!
//! `keel` / `keel "prompt"` / `keel resume [ID|--last]` (`cli/tui_cmd.rs`; subcommand names win
//! over the optional prompt; `keel exec resume` is separate). `app.rs` is the model and the pure
//! `update(&mut App, Msg) -> Vec<Command>` (keys in `keys.rs`, slash commands in `slash.rs`);
//! `view.rs` draws it; `driver.rs` is the only impure part: it reads crossterm's `EventStream`,
//! performs commands, and owns the cancellation token and the pending approval's oneshot.
//! `bridge.rs` runs the `Session` on a spawned task fed by an mpsc of `Op`s (prompt, skill,
//! compact, continue, undo, mode, model); `ChannelSink` forwards `RuntimeEvent`s and
//! `ChannelApprover` sends each request with a oneshot and keeps "yes, always" prefixes. Shift+Tab
//! and `/mode` call `Session::set_approval_mode` between turns. Esc/Ctrl+C cancel the turn's token
//! and answer an open approval "no".
//!
//! # Behaviour worth knowing before you change it
//!
//! - **Before the session** (`launch.rs`, `picker.rs`): settings are loaded only once the session
//!   is chosen, so a "yes" to the first-run trust question (asked while the workspace has untrusted
//!   `.keel/rules/*.rules`, project hooks, `.keel/config.toml` or `.keel/phases.toml`; recorded
//!   like `keel trust`; "no" asks again next run) applies to it. `keel resume` with no id shows the
//!   picker of this folder's sessions; a resumed session shows its history (`Session::history`) and
//!   its open turn is finished with `continue_turn`. `/resume` inside a session shows this folder's
//!   other sessions in the picker over it (`PickerView::over_session`: Esc returns, the session
//!   keeps running); choosing one ends the live session (the driver drops the ops sender, the
//!   bridge task records `session_ended` and runs SessionEnd hooks, the driver awaits it and drops
//!   its leftover events) and opens the choice like `keel resume` on a fresh `App`. Quitting also
//!   ends the session (`session_ended` is the log's last line) and prints `resume with: keel resume
//!   ID`.
//! - **Start**: `keel`/`keel resume` take `--mode/--full-auto/--yolo` (`cli::ModeArgs`, shared with
//!   exec); without one a new session starts in `default_mode` (config), a resumed one in its
//!   logged mode. `keel WORD` (one word, no such file, not a subcommand) is put in the input with a
//!   hint instead of being sent (`FirstPrompt::Confirm`); close to a subcommand it is a usage error
//!   with "did you mean" (`tui_cmd::closest_subcommand`, strsim).
//! - **Typing during a turn** (`queue.rs`): Enter queues the text for after the turn, Tab steers
//!   the running turn (after its tool batch); the text goes to the session's inbox
//!   (`UiEvent::Inbox`, `runtime/inbox.rs`), the pending list shows it until
//!   `RuntimeEvent::InputDelivered` puts it in the transcript where it landed; the bridge runs the
//!   queued turns after each turn (`Session::run_queued`). The model's `ask_user` question is a
//!   dialog (`question.rs`, `UiEvent::Question`, answered over a oneshot).
//! - **Attached terminals** (`keel attach`, `runtime/attach_host.rs`): `run_session` wraps the sink
//!   and approver with an `AttachHost` and listens once the session is open. An attacher's answer
//!   wins the race with the overlay (`UiEvent::AnsweredElsewhere` closes it); its text goes to the
//!   same inbox, and while no turn runs the bridge starts the queued turn itself
//!   (`UiEvent::QueuedTurn` hands the driver its cancellation token, so Esc stops it).
//! - **Modes**: Shift+Tab cycles ask → auto → plan → yolo, and yolo needs a `y` first
//!   (`App::yolo_confirm`); `/mode NAME` switches directly. A change shows once, as the hint above
//!   the input with what the mode lets run (`keys::set_mode`); `ModeChanged` from the runtime (a
//!   plan approved "then auto") does the same only when it differs from what the UI shows. The
//!   transcript never gets mode lines. `/model NAME` sends `Op::SetModel`: `Session::set_model`
//!   feeds `Input::SetModel` to `step`, which records `model_changed`; the status line follows
//!   `RuntimeEvent::ModelChanged` (model and prices), so a refused switch shows as an error and
//!   changes nothing.
//! - **Workflow**: `RuntimeEvent::WorkflowChanged` (phase, plan path/status, tasks; sent at start
//!   and on every phase/plan/task record) feeds the status line and the tasks panel (shown while
//!   tasks exist; `/tasks` hides it). A `submit_plan` approval request opens the plan review
//!   instead of the approval overlay: `a`/`A` approve then ask/auto, `r` rejects with feedback (the
//!   model stays in plan and revises), `e` opens the saved plan file (else one under
//!   `$KEEL_HOME/plans/`) in `$VISUAL`/`$EDITOR` (`editor.rs`, the one child started outside
//!   `sandbox::run`: it must own the terminal; its environment is `sandbox::child_env`'s,
//!   credentials stripped; the loop suspends the terminal and replaces its `EventStream` first);
//!   approving then tells the model to re-read the file (`runtime/ask.rs` reads its text into
//!   `Input::PlanReviewed`, `step` adopts it). "Then auto" holds for the rest of the same turn:
//!   `ChannelApprover` keeps the mode, the driver takes it (`Approver::take_plan_mode`) with the
//!   answer, and `step` switches right after the plan's result, recorded as `mode_changed` (test
//!   `tests/suite/tui_plan_mode.rs`).
//! - **Tool cells**: a running cell shows the status line's spinner frame (`Transcript::spin` on
//!   each tick turns only the latest turn's running cells); reads that run together each show one,
//!   and the status line says `N calls`. `ToolCell::finish` judges a result with `display::outcome`
//!   (a non-zero exit is a red ✗ with `exit N`, though the shell tool returns it as a result) and
//!   shows a shell call's streams without the framing (`display::parse_shell`); a failed cell's
//!   collapsed preview is its last lines. Tabs are expanded at 8 columns. Every cell's text goes
//!   through `display::for_terminal` when it is wrapped (cached), the approval overlay's too.
//!   Colours: no DIM attribute anywhere; content is the terminal's own foreground, dark grey only
//!   for chrome.
//! - **Approvals**: for `edit_file`/`write_file` the driver reads the file (confined with
//!   `tools::paths::Workspace`, ≤ 4 MiB) and the overlay shows the real unified diff with context
//!   and line numbers (`approval_diff.rs`); otherwise every argument in full
//!   (`display::approval_text`). Nothing is cut: the body scrolls (↑/↓, PgUp/PgDn), a row says
//!   what is above and below, and `y`/`a` show the next page until the last row has been drawn
//!   (`overlay.rs` records what frames showed in `ApprovalView::drawn`; `keys.rs` reads it), so an
//!   answer never covers text no frame showed, nor a key typed before the dialog was drawn. The
//!   call's text goes through `display::escape_visibly` (controls, ANSI, bidi as `\u{…}`).
//! - **Footer**: the input's bottom border carries the keys that matter now (`view::key_hints`,
//!   short form on narrow terminals); `?` on an empty prompt prints the help.
//! - **Status line**: model · mode · phase · ctx % (`context::context_percent` of the latest
//!   request's input tokens) · tokens · cost (each response charged at the prices in force when it
//!   arrived, `Status::spent_usd`; a resume starts from `Session::cost_usd`; cache reads and writes
//!   at their prices; hidden for unknown models; `$spent/$limit` and `tok spent/limit` with spend
//!   limits, in the warning colour from 80 %, with a one-time notice; at the limit the runtime's
//!   `raise_limit` opens a question, `budget.rs`, answered through the approval reply channel) ·
//!   cache hit rate (once the provider reports caching) · sandbox on/off/unavailable
//!   (`SessionStarted.sandbox`) · spinner and elapsed time (`retrying (2/5): reason` while a
//!   request is retried). On narrow terminals whole parts drop, least telling first (tokens, cache,
//!   a working sandbox, cost, ctx, phase).
//! - **Slash commands**: `/help /mode [name] /plan /compact [focus] /tasks /diff /undo /resume
//!   /skills /model [name] /mcp /quit` (`/exit` too), `/mcp__server__prompt` (an MCP server's
//!   prompts, `mcp_view.rs`), `/<command> [words]` (custom commands, sent as typed) and `/<skill>
//!   [words]`; the popup lists commands with their argument hints (`Session::command_index`) and
//!   skills (`Session::skill_index`), sent at start. Those needing the session (`/compact /undo
//!   /diff /<command> /<skill>`, MCP prompts) and `/resume` wait for the running turn. `/diff` runs
//!   `git diff` through `runtime::git::workspace_diff` (keel's own git: repository config that runs
//!   code switched off) and shows a diff cell (untracked files are not in it); `/undo` calls
//!   `Session::undo_turns` so the undo line goes through the session's own log writer.
//! - **Everyday habits** (issue 37): pastes without bracketed paste and long-paste chips
//!   (`paste.rs`; the driver reads a burst of keys at once), `\`+Enter; history kept per folder
//!   in `$KEEL_HOME/history.jsonl` (`history.rs`, written by the driver for each line the editor
//!   adds to its history) and Ctrl+R (`history_search.rs`); `1`/`2`/`3` and Enter in approvals
//!   (`approval_keys.rs`, mapped to keel's letters before the issue-34 rule judges them);
//!   notifications (`notify.rs`, `[tui]` in `config/tui_settings.rs`); colour stripped from the
//!   output under `NO_COLOR`/`TERM=dumb` (`plain_output.rs`); `/clear /new /cost /status /init`
//!   (`slash_session.rs`); `#text` memory notes (`memory_note.rs`); `@path` attachments
//!   (`runtime/mentions.rs`, in the driver before `Op::Prompt`; an image goes as an image); `!cmd` (`user_shell.rs`: `Op::UserShell` →
//!   `Session::run_user_shell`, judged by the loop's policy and run in the session's jail, its
//!   output a logged user message for the next turn; refused while a turn runs); `/context /config
//!   /permissions /agents /hooks /memory [N]` (`slash_info.rs`: the bridge sends
//!   `Session::in_force` after every operation, the driver reads `config::config_sources` at open
//!   and the ledger of the log on `/context`; they work while a turn runs); `/permissions remove
//!   N` sends the N-th "always" answer listed as `Op::RemoveAlways` (after the running turn) to
//!   `Session::remove_always` (`runtime/forget_always.rs`). A modified Enter (Shift, Alt, Ctrl) is
//!   a newline in every encoding: CSI-u `ESC[13;2u`, xterm's modifyOtherKeys `ESC[27;2;13~`
//!   (foot, Ghostty, tmux `extended-keys`; crossterm 0.29 dropped it, so keel builds the
//!   vendored, patched crossterm in `vendor/crossterm/`, see its `KEEL-PATCH.md`), Alt as `ESC`
//!   then Enter.
//! - **Subagents** (`subagents.rs`): `RuntimeEvent::Subagent` updates the `agent` call's cell
//!   (`ToolCell::subagent`: current tool, steps, tokens, its calls; the last 3 collapsed, all with
//!   Ctrl+O) and adds the child's responses to `Status::subagent_usage`/`subagent_cost` (at the
//!   child's own prices), which the status line adds to the session's.
//! - **Alternate screen, not an inline viewport.** Resizes must reflow the whole transcript, and
//!   overlays (approval, plan review) need the full screen; ratatui's inline viewport pushes
//!   finished lines into the terminal's scrollback, where they can never be re-wrapped or restyled
//!   (a streamed cell changes until its message ends). The cost is the terminal's own scrollback:
//!   the transcript scrolls with PageUp/PageDown, and the session id and log path are printed on
//!   exit so nothing is lost. Mouse capture stays off so selecting text works as usual.
//! - **Rendering**: each cell caches its wrapped lines per (width, expanded); `wrap.rs` wraps (not
//!   `Paragraph`) so heights are known. Following the bottom touches only the visible cells. Frames
//!   are coalesced to 60 fps; while idle no timer runs (the spinner ticks at 10 Hz only during a
//!   turn). Figures: `benches/README.md`.
//! - **Terminal restore**: `terminal.rs` guard (`Drop`) plus a panic hook installed once (it leaves
//!   the screen alone for a panic `support::panic_guard` catches); SIGTERM, SIGHUP, SIGQUIT and
//!   SIGINT (raw mode makes Ctrl+C a key, so these come from outside) end the loop through the same
//!   path (`exit::signals::Shutdown` in `TuiOptions`): the turn is interrupted, the session ended,
//!   and keel exits with 128 + the signal's number; a second signal restores the terminal and exits
//!   at once. Keyboard signals are ignored while `$EDITOR` owns the terminal.
//! - **`@path` completion** lists the workspace only once the first `@` is typed
//!   (`Command::ListFiles`), on a blocking thread, in chunks of 2 000 (`Msg::FilesListed` appends):
//!   git's index first (`git ls-files`, no walk), then an `ignore` walk for the rest, capped at 20
//!   000; it ranks fuzzily. Ctrl+O expands the latest cut tool output (a per-cell flag), pressed
//!   again every one, then collapses them (there is no cell selection).
//!
//! # Tests
//!
//! Snapshot tests: `view_tests.rs` (transcript, approvals), `slash_info_tests.rs` (the info
//! commands), `user_shell.rs` (`!cmd` cells), `workflow_view_tests.rs` (status line,
//! plan review, tasks, slash popup with skills, picker, trust) and `subagent_view_tests.rs`;
//! snapshots in `snapshots/`. The end-to-end tests drive the real binary in a private tmux server
//! and assert on `capture-pane` text (`tests/suite/tmux_support.rs`: `Pane`, `launch`,
//! `launch_with`, `record_output`; used by `tui_tmux.rs`, `tui_habits.rs`, `tui_views.rs`,
//! `queue_tmux.rs`, `rewind_tui.rs` and the others); they need `tmux`
//! (installed by `.ci/run`).

mod app;
mod approval_diff;
mod approval_keys;
mod attachments;
mod bridge;
mod budget;
mod diff;
mod driver;
mod editor;
mod files;
mod history;
mod history_search;
mod input;
mod keys;
mod launch;
mod markdown;
mod mcp_view;
mod memory_note;
mod notify;
mod overlay;
mod panels;
mod paste;
mod picker;
mod plain_output;
mod processes_view;
mod question;
mod queue;
mod rewind_view;
mod runtime_events;
mod slash;
mod slash_info;
mod slash_session;
mod subagents;
mod terminal;
mod theme;
mod transcript;
mod user_shell;
mod view;
mod wrap;

#[cfg(test)]
mod approval_view_tests;
#[cfg(test)]
mod budget_tests;
#[cfg(test)]
mod queue_view_tests;
#[cfg(test)]
mod slash_info_tests;
#[cfg(test)]
mod subagent_view_tests;
#[cfg(test)]
mod view_tests;
#[cfg(test)]
mod workflow_view_tests;

pub use app::{AllowPrefix, App, ApprovalReply, Command, Msg, update};
pub use driver::{FirstPrompt, TuiOptions, run};
pub use launch::{Launch, Start};
pub use panels::{PlanView, TaskItem, TaskState};
pub use terminal::restore as restore_terminal;
pub use theme::Theme;
pub use transcript::{CellKind, Level, ToolCell, ToolStatus};
pub use view::view;

/// Failures that end the TUI.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("cannot set up the terminal: {0}")]
    Terminal(#[source] std::io::Error),
    #[error("cannot draw: {0}")]
    Draw(#[source] std::io::Error),
    #[error("the session could not start: {0}")]
    Session(#[source] crate::runtime::RuntimeError),
    #[error("the session could not start: {0}")]
    Settings(#[source] crate::config::ConfigError),
}
