//! The model of the TUI and the pure half of its update. Key handling is
//! in `keys.rs`; what runtime events change (transcript, status) in
//! `runtime_events.rs`.
//!
//! Invariants: no I/O, no clock (elapsed time arrives in [`Msg::Tick`]),
//! no channels: what must happen outside is returned as [`Command`]s for
//! the driver. An approval overlay is open exactly while the runtime waits
//! on an answer.

use std::time::Duration;

use crossterm::event::KeyEvent;

use crate::policy::ApprovalMode;
use crate::protocol::{HarnessTool, Item, ToolCall, Usage};
use crate::runtime::{RuntimeEvent, SandboxState};

use super::diff::{self, DiffLine};
use super::input::Editor;
use super::panels::{PlanView, TaskItem};
use super::picker::{PickerView, TrustView};
use super::runtime_events::{add_usage, end_turn, on_runtime, show_diff, show_history};
use super::theme::Theme;
use super::transcript::{CellKind, Level, Transcript};
use crate::protocol::tool_facts::names;

/// Something that happened, for [`update`].
#[derive(Debug, Clone, PartialEq)]
pub enum Msg {
    Key(KeyEvent),
    Paste(String),
    /// The clipboard's image (Ctrl+V) or why there is none
    /// (`attachments.rs`).
    ClipboardImage(Result<crate::protocol::ImagePart, String>),
    /// The terminal changed size; the next frame reflows.
    Resize,
    Runtime(RuntimeEvent),
    /// The runtime waits for an answer about `call`.
    ApprovalRequested {
        call: ToolCall,
        reason: String,
    },
    /// The model asks the user (`ask_user`).
    QuestionAsked {
        question: String,
        choices: Vec<String>,
    },
    /// The next request would cross a spend limit: raise it or stop
    /// (answered like an approval: `Once` raises, `Deny` stops).
    LimitReached(crate::agent::BudgetHit),
    /// The runtime task failed a turn outside the event stream.
    TurnFailed(String),
    /// Time since the running turn started (drives the spinner).
    Tick(Duration),
    /// More of the workspace's files were listed (for `@path` completion).
    FilesListed(Vec<String>),
    /// A resumed session's conversation (shown before anything new) and
    /// its token totals so far.
    /// A resumed session's history, its spend and what that cost (`None`:
    /// not known, a model without prices served some of it).
    History(Vec<Item>, Usage, Option<f64>),
    /// The session's skills: (name, description).
    SkillsListed(Vec<(String, String)>),
    /// The session's custom commands: (name, argument hint, description).
    CommandsListed(Vec<(String, String, String)>),
    /// A message from the driver or the session task.
    Notice(Level, String),
    /// `/compact` ended: whether anything was compacted, or why it failed.
    CompactFinished(Result<bool, String>),
    /// `/diff` produced this `git diff` output.
    DiffReady(String),
    /// The plan under review came back from `$EDITOR` with this text.
    PlanEdited(String),
    /// The session's answer to a [`Command::Rewind`].
    Rewind(super::rewind_view::RewindReply),
    /// What the session runs with now (`slash_info.rs`).
    InForce(Box<crate::runtime::InForce>),
    /// The `!cmd` ran (or was refused, or failed).
    UserShellDone(Result<crate::runtime::UserShell, String>),
}

/// How the user answered an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalReply {
    Once,
    /// Approve, and from now on every call with this prefix.
    Always(AllowPrefix),
    /// Decline; the note goes to the model.
    Deny(Option<String>),
    /// Approve the plan under review; the implementation runs in `mode`.
    /// The note (e.g. "the user edited the plan") goes to the model.
    PlanApproved {
        mode: ApprovalMode,
        note: Option<String>,
    },
}

/// What "yes, always" allows: calls of `tool` whose argv starts with `argv`
/// (empty for tools without a command: every call of the tool).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowPrefix {
    pub tool: String,
    pub argv: Vec<String>,
}

impl AllowPrefix {
    /// What "always" may allow for `call`: for a shell command, the
    /// policy's narrowest useful prefix of the first command that is not
    /// read-only (`python3 test_calc.py`, `npm run test`), or `None` when
    /// no prefix can be allowed always (`rm`, `sudo`, a bare interpreter),
    /// so the overlay does not offer one keel would then refuse; for other
    /// tools, the whole tool for this session.
    pub fn for_call(call: &ToolCall) -> Option<Self> {
        let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let argv = match args.get("command").and_then(|c| c.as_str()) {
            Some(command) => crate::policy::amend::suggest_for_shell(command)?,
            None => Vec::new(),
        };
        Some(Self { tool: call.name.clone(), argv })
    }

    /// Whether this (non-shell) approval covers `call`. Shell prefixes are
    /// never matched here: the policy's allowlist judges every command of
    /// a script, so `cargo test && curl x | sh` still asks after "always
    /// for `cargo test`".
    pub fn matches(&self, call: &ToolCall) -> bool {
        self.argv.is_empty() && call.name == self.tool && call.name != names::SHELL
    }

    /// How the overlay names it.
    pub fn describe(&self) -> String {
        if self.argv.is_empty() {
            format!("every `{}` call", self.tool)
        } else {
            format!("`{}`", crate::policy::shell::quoted(&self.argv))
        }
    }
}

/// What the driver must do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Submit(String),
    /// A prompt with the images attached to it (`attachments.rs`).
    SubmitImages {
        text: String,
        images: Vec<crate::protocol::ImagePart>,
    },
    /// The answer to the open `ask_user` question (`None`: dismissed).
    AnswerQuestion(Option<String>),
    /// `/permissions remove N`: take this "always" answer back
    /// (`Session::remove_always`).
    RemoveAlways(crate::policy::ApprovalScope),
    /// Ctrl+V: read the clipboard's image (`sandbox::clipboard`).
    PasteClipboard,
    /// Text typed while a turn runs, for the session's inbox (`queue.rs`),
    /// with the images attached to the input box then.
    TypeDuringTurn {
        text: String,
        mode: crate::protocol::Delivery,
        images: Vec<crate::protocol::ImagePart>,
    },
    Interrupt,
    Answer(ApprovalReply),
    SetMode(ApprovalMode),
    /// `/model NAME`: the model of the requests that follow.
    SetModel(String),
    /// `/<skill> args`.
    Skill {
        name: String,
        args: String,
    },
    /// `/compact [focus]`.
    Compact {
        focus: Option<String>,
    },
    /// `/diff`: run `git diff` in the workspace.
    Diff,
    /// `/undo`.
    Undo,
    /// List the workspace's files for `@path` completion (in the
    /// background, handed over as [`Msg::FilesListed`] chunks).
    ListFiles,
    /// Open the plan under review in `$EDITOR`: the saved plan file when
    /// there is one, else a file under `$KEEL_HOME/plans/` holding `text`.
    EditPlan {
        path: Option<String>,
        text: String,
    },
    /// The answer to "trust this project?".
    Trust(bool),
    /// Open the session picked (a log), or a new one (`None`).
    OpenSession(Option<std::path::PathBuf>),
    /// `/resume`: show this folder's other sessions over this one; the
    /// one chosen opens in its place, Esc returns.
    SwitchSession,
    /// Stop background process N (chosen in `/ps`).
    StopProcess(u32),
    /// Esc Esc, `/rewind`, `/fork` (`rewind_view.rs`).
    Rewind(super::rewind_view::RewindOp),
    /// `/context`: read the ledger of the session's log and show it.
    ShowContext,
    /// `/memory N`: open this file in `$EDITOR`.
    EditFile(std::path::PathBuf),
    /// `!cmd`: run it as the user's own command (`user_shell.rs`).
    UserShell(String),
    /// `#text`: save a memory note there.
    SaveMemory {
        scope: super::memory_note::MemoryScope,
        text: String,
    },
    Quit,
}

/// An open approval request.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalView {
    pub call: ToolCall,
    pub reason: String,
    /// What "always" would allow; `None`: not offered.
    pub prefix: Option<AllowPrefix>,
    pub preview: Option<Vec<DiffLine>>,
    /// `Some` while the user types a note for the model after "no".
    pub note: Option<String>,
    /// First row of the body (the command, arguments or diff) shown; the
    /// arrows and PgUp/PgDn move it.
    pub scroll: usize,
    /// What frames drew of the body: the keys read it, so that an answer
    /// never covers rows no frame has shown.
    pub drawn: std::cell::Cell<BodyDrawn>,
    /// The highlighted choice (an index into [`ApprovalView::choices`]),
    /// which Enter answers.
    pub selected: usize,
}

/// How much of an approval's body frames have shown (the overlay records
/// it when it draws).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BodyDrawn {
    /// The body's rows at the width last drawn; 0: never drawn.
    pub rows: usize,
    /// Body rows one frame shows.
    pub page: usize,
    /// One past the lowest body row any frame has shown.
    pub seen_to: usize,
}

/// One answer of the approval overlay, by its letter (`1`/`2`/`3` are
/// Claude Code's keys for the same answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// `y`, `1`.
    Yes,
    /// `a`, `2` (offered only with a prefix).
    Always,
    /// `n`, `3`.
    No,
}

impl Choice {
    /// keel's letter and Claude Code's number for it.
    pub fn keys(self) -> (char, char) {
        match self {
            Self::Yes => ('y', '1'),
            Self::Always => ('a', '2'),
            Self::No => ('n', '3'),
        }
    }
}

impl ApprovalView {
    /// The choices offered, in the overlay's order.
    pub fn choices(&self) -> Vec<Choice> {
        let always = self.prefix.is_some().then_some(Choice::Always);
        [Some(Choice::Yes), always, Some(Choice::No)].into_iter().flatten().collect()
    }

    /// The highlighted choice.
    pub fn highlighted(&self) -> Choice {
        let choices = self.choices();
        choices.get(self.selected).or(choices.last()).copied().unwrap_or(Choice::No)
    }

    /// Whether every row of the body has been on screen, so that an
    /// answer covers only what the user could read. Never drawn: no.
    pub fn all_seen(&self) -> bool {
        let drawn = self.drawn.get();
        drawn.rows > 0 && drawn.seen_to >= drawn.rows
    }
}

/// The status line's facts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Status {
    pub provider: String,
    pub model: String,
    pub mode: ApprovalMode,
    /// Context used by the latest request, for models with a known window.
    pub context_percent: Option<u8>,
    /// Window and prices of the session's model (`[context]` applied).
    pub pricing: crate::context::Pricing,
    pub usage: Usage,
    /// What the session's own responses cost, each at the prices of the
    /// model that served it, unless `unpriced`: one was served by a model
    /// without prices, so the cost is not known.
    pub spent_usd: f64,
    pub unpriced: bool,
    /// The session's spend limits (shown as `$spent/$limit`).
    pub limits: crate::agent::SpendLimits,
    /// The 80 % notice was shown (again after a raise).
    pub budget_warned: bool,
    /// The workflow phase (`orient`, `plan`, …); empty until known.
    pub phase: String,
    /// Whether the model's commands run confined; `None` until known.
    pub sandbox: Option<SandboxState>,
    /// What subagents spent (their responses), and its cost at their
    /// models' prices: shown in the tokens and cost.
    pub subagent_usage: Usage,
    pub subagent_cost: f64,
    pub running: bool,
    pub elapsed: Duration,
    /// What the running turn waits on ("thinking", "shell", …).
    pub activity: String,
}

/// The whole UI state.
#[derive(Debug, Default)]
pub struct App {
    pub theme: Theme,
    /// Images pasted for the next prompt.
    pub attachments: super::attachments::Attachments,
    pub transcript: Transcript,
    pub editor: Editor,
    pub status: Status,
    pub approval: Option<ApprovalView>,
    /// The open "raise the spend limit?" question.
    pub limit: Option<crate::agent::BudgetHit>,
    pub plan: Option<PlanView>,
    pub tasks: Vec<TaskItem>,
    /// The tasks panel shows while there are tasks, unless `/tasks` hid it.
    pub show_tasks: bool,
    /// Where the latest plan is saved, from the workflow events.
    pub plan_path: Option<String>,
    /// The resume picker (`keel resume`), before any session is open.
    pub picker: Option<PickerView>,
    /// "Trust this project?", before the session.
    pub trust: Option<TrustView>,
    /// Every tool output shown in full (Ctrl+O pressed twice); one cell's
    /// own expansion lives in the transcript.
    pub expanded: bool,
    /// Rows scrolled up from the bottom of the transcript.
    pub scroll: usize,
    /// Most rows the transcript can scroll up, as of the last frame drawn
    /// scrolled (the view records it; PageUp clamps to it).
    pub transcript_rows: std::cell::Cell<usize>,
    /// A first Ctrl+C on an idle, empty prompt.
    pub quit_armed: bool,
    /// A one-line hint above the input (cleared by the next key).
    pub hint: Option<String>,
    /// Shift+Tab reached yolo: the next key confirms (`y`) or skips it.
    pub yolo_confirm: bool,
    /// Workspace files for `@path` completion, as found so far.
    pub files: Vec<String>,
    /// MCP servers as their last status events described them (`/mcp`).
    pub mcp: Vec<super::mcp_view::McpLine>,
    /// Background processes as their last results described them (`/ps`).
    pub processes: Vec<super::processes_view::ProcessLine>,
    /// The `/ps` overlay, when open.
    pub ps: Option<super::processes_view::PsView>,
    /// The listing was asked for (the first `@` typed).
    pub files_requested: bool,
    /// The rewind list and the first Esc of Esc Esc (`rewind_view.rs`).
    pub rewind: super::rewind_view::RewindState,
    /// Each running subagent's prices, by its `agent` call.
    pub subagent_pricing: std::collections::HashMap<String, crate::context::Pricing>,
    /// Input typed during a turn, waiting for delivery (`queue.rs`).
    pub pending: Vec<super::queue::Pending>,
    /// The model's open `ask_user` question (`question.rs`).
    pub question: Option<super::question::QuestionView>,
    /// The open Ctrl+R history search.
    pub search: Option<super::history_search::HistorySearch>,
    /// The session's id, log and workspace (`/status`).
    pub facts: super::slash_session::SessionFacts,
    /// `#text`: the open "save to which memory?" picker.
    pub memory: Option<super::memory_note::MemoryPick>,
    /// What `/config /permissions /agents /hooks /memory` show.
    pub info: super::slash_info::SessionInfo,
}

impl App {
    pub fn new(theme: Theme, mode: ApprovalMode) -> Self {
        let status = Status { mode, ..Status::default() };
        Self { theme, status, show_tasks: true, ..Self::default() }
    }

    pub(crate) fn notice(&mut self, level: Level, text: impl Into<String>) {
        self.transcript.push(CellKind::Notice { level, text: text.into() });
    }
}

/// Applies one message; returns what the driver must do.
pub fn update(app: &mut App, msg: Msg) -> Vec<Command> {
    match msg {
        Msg::Key(key) => super::keys::on_key(app, key),
        Msg::Paste(text) => {
            super::keys::on_paste(app, &text);
            Vec::new()
        }
        Msg::ClipboardImage(image) => {
            super::attachments::attach_clipboard(app, image);
            Vec::new()
        }
        Msg::Resize => Vec::new(),
        Msg::Runtime(event) => {
            on_runtime(app, event);
            Vec::new()
        }
        Msg::ApprovalRequested { call, reason }
            if call.harness_tool() == Some(HarnessTool::SubmitPlan) =>
        {
            app.status.activity = "waiting for plan review".into();
            app.plan = Some(PlanView::for_call(&call, &reason, app.plan_path.clone()));
            Vec::new()
        }
        Msg::ApprovalRequested { call, reason } => {
            app.status.activity = "waiting for approval".into();
            app.approval = Some(ApprovalView {
                prefix: AllowPrefix::for_call(&call),
                preview: diff::preview(&call.name, &call.arguments),
                call,
                reason,
                note: None,
                scroll: 0,
                drawn: std::cell::Cell::default(),
                selected: 0,
            });
            Vec::new()
        }
        Msg::LimitReached(hit) => {
            app.status.activity = "waiting: spend limit".into();
            app.limit = Some(hit);
            Vec::new()
        }
        Msg::QuestionAsked { question, choices } => {
            app.status.activity = "waiting for your answer".into();
            app.question = Some(super::question::QuestionView::new(question, choices));
            Vec::new()
        }
        Msg::TurnFailed(message) => {
            app.notice(Level::Error, message);
            end_turn(app);
            Vec::new()
        }
        Msg::Tick(elapsed) => {
            app.status.elapsed = elapsed;
            app.transcript.spin(elapsed);
            Vec::new()
        }
        Msg::FilesListed(files) => {
            app.files.extend(files);
            Vec::new()
        }
        Msg::History(items, usage, cost) => {
            show_history(app, &items);
            add_usage(&mut app.status.usage, &usage);
            match cost {
                Some(cost) => app.status.spent_usd += cost,
                None => app.status.unpriced = true,
            }
            super::budget::after_usage(app);
            Vec::new()
        }
        Msg::SkillsListed(skills) => {
            app.editor.skills = skills;
            Vec::new()
        }
        Msg::CommandsListed(commands) => {
            app.editor.commands = commands;
            Vec::new()
        }
        Msg::Notice(level, text) => {
            app.notice(level, text);
            Vec::new()
        }
        Msg::CompactFinished(outcome) => {
            match outcome {
                Ok(true) => {}
                Ok(false) => app.notice(Level::Info, "nothing to compact"),
                Err(error) => app.notice(Level::Error, format!("compaction failed: {error}")),
            }
            end_turn(app);
            Vec::new()
        }
        Msg::Rewind(reply) => super::rewind_view::on_reply(app, reply),
        Msg::InForce(in_force) => {
            app.info.in_force = Some(*in_force);
            Vec::new()
        }
        Msg::UserShellDone(outcome) => {
            super::user_shell::finished(app, outcome);
            Vec::new()
        }
        Msg::DiffReady(text) => {
            show_diff(app, &text);
            Vec::new()
        }
        Msg::PlanEdited(text) => {
            if let Some(plan) = app.plan.as_mut() {
                plan.markdown = text;
                plan.edited = true;
                plan.scroll = 0;
            }
            Vec::new()
        }
    }
}
