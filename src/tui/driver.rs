//! The driver: the only impure part of the TUI. It turns terminal input and
//! runtime events into [`Msg`]s, performs the [`Command`]s `update`
//! returns, and draws.
//!
//! Redraws are coalesced: a change marks the frame dirty and it is drawn at
//! most once per [`FRAME`]; when nothing changes and no turn runs there is
//! no timer at all, so an idle session costs no CPU. The spinner ticks at
//! [`SPINNER_TICK`] only while a turn runs.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{Event, EventStream, KeyEventKind};
use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until};
use tokio_util::sync::CancellationToken;

use tokio::task::JoinHandle;

use crate::exit::ExitStatus;
use crate::exit::signals::Shutdown;
use crate::policy::ApprovalMode;
use crate::runtime::SessionOptions;

use super::app::{App, ApprovalReply, Command, Msg, update};
use super::bridge::{Op, SessionSource, UiEvent, run_session};
use super::launch::{Launch, Start};
use super::picker::{PickerView, TrustView};
use super::terminal::TerminalGuard;
use super::transcript::Level;
use super::{Theme, TuiError, view};

mod jobs;

/// Shortest time between two frames (60 fps cap).
const FRAME: Duration = Duration::from_millis(16);
/// Spinner and elapsed-time refresh while a turn runs.
const SPINNER_TICK: Duration = Duration::from_millis(100);
/// How long quitting waits for the running turn to wind down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// `keel "prompt"`: sent at once, or (a lone word that may be a mistyped
/// subcommand) left in the input for the user to send with Enter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FirstPrompt {
    Send(String),
    Confirm(String),
}

/// What the user asked for on the command line.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    pub first_prompt: Option<FirstPrompt>,
    /// The mode a new session starts in (a flag, else `default_mode`).
    pub approval: ApprovalMode,
    /// A mode flag, which a resumed session switches to (without one it
    /// keeps its logged mode).
    pub mode_flag: Option<ApprovalMode>,
    pub cwd: PathBuf,
    pub date: String,
    pub theme: Theme,
    /// New session, a resumed one, or the picker.
    pub start: Start,
    /// Environment and flags, to load settings once the session is chosen.
    pub launch: Launch,
    /// SIGTERM, SIGHUP, SIGQUIT and an outside SIGINT end the TUI like
    /// quitting: the turn is interrupted, the session ended, and keel exits
    /// with the signal's code.
    pub shutdown: Shutdown,
}

/// The running TUI's side of the channels.
struct Driver {
    app: App,
    ops: mpsc::UnboundedSender<Op>,
    /// Handed to the session task when it starts.
    ops_rx: Option<mpsc::UnboundedReceiver<Op>>,
    events: mpsc::UnboundedSender<UiEvent>,
    cancel: Option<CancellationToken>,
    reply: Option<oneshot::Sender<ApprovalReply>>,
    /// The session's inbox for what is typed during a turn.
    input: Option<crate::runtime::InputSender>,
    /// The answer to the open `ask_user` question.
    question_reply: Option<oneshot::Sender<Option<String>>>,
    turn_started: Instant,
    quit: bool,
    session: Option<(String, PathBuf)>,
    /// Why the session could not start (reported after the screen is restored).
    failed: Option<TuiError>,
    task: Option<JoinHandle<()>>,
    options: TuiOptions,
    /// The workspace root of the open session (for `/diff`).
    root: Option<PathBuf>,
    /// What the user's editor's inherited environment loses: the
    /// session's `[shell]` filter once one is chosen.
    env_filter: crate::sandbox::EnvFilter,
    /// A plan to open in `$EDITOR` (needs the terminal, so the loop does it).
    edit: Option<(Option<String>, String)>,
    /// A file to open in `$EDITOR` (`/memory N`), likewise.
    edit_file: Option<PathBuf>,
    /// `/resume` chose a session (or `None`: a new one) while this one is
    /// open: the loop ends this one first (it awaits the session task, so
    /// it is done there, not in `perform`).
    switch: Option<Option<PathBuf>>,
    /// Writing the prompt history failed once (said then, not again).
    history_failed: bool,
    /// Entries of the editor's history already in the history file.
    remembered: usize,
    /// `[tui]`: how and when to notify (`notify.rs`), from the session's settings.
    notify: crate::config::TuiSettings,
    /// Where credentials live, for `@path` mentions (`runtime/mentions.rs`).
    secret_places: crate::policy::secret_places::SecretPlaces,
}

/// Runs the TUI until the user quits.
pub async fn run(options: TuiOptions) -> Result<ExitStatus, TuiError> {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let mut guard = TerminalGuard::enter(!options.theme.colour())?;
    let mut driver = Driver {
        app: App::new(options.theme, options.approval),
        ops: ops_tx,
        ops_rx: Some(ops_rx),
        events: events_tx,
        cancel: None,
        reply: None,
        input: None,
        question_reply: None,
        turn_started: Instant::now(),
        quit: false,
        session: None,
        failed: None,
        task: None,
        options,
        root: None,
        env_filter: crate::sandbox::EnvFilter::default(),
        edit: None,
        edit_file: None,
        switch: None,
        history_failed: false,
        remembered: 0,
        notify: crate::config::TuiSettings::default(),
        secret_places: crate::policy::secret_places::SecretPlaces::default(),
    };
    driver.load_history();
    driver.begin();
    let outcome = driver.event_loop(&mut guard, &mut events_rx).await;
    drop(guard);
    if let Some(cancel) = &driver.cancel {
        cancel.cancel();
    }
    drop(driver.reply.take());
    let Driver { ops, session: mut info, failed, task, events, options, .. } = driver;
    drop(ops);
    drop(events);
    if let Some(task) = task {
        if tokio::time::timeout(SHUTDOWN_GRACE, task).await.is_err() {
            tracing::warn!("the session did not stop within {SHUTDOWN_GRACE:?}");
        }
    }
    // Quit before the session said it was ready (a kill right at start):
    // its log exists all the same, so still say where.
    while let Ok(event) = events_rx.try_recv() {
        if let UiEvent::SessionReady { session_id, log_path } = event {
            info.get_or_insert((session_id, log_path));
        }
    }
    drop(events_rx);
    if let Some((id, log)) = info {
        let _ = writeln!(
            std::io::stdout().lock(),
            "session {id}\nlog {}\nresume with: keel resume {id}",
            log.display()
        );
    }
    outcome?;
    match (failed, options.shutdown.signal()) {
        (Some(error), _) => Err(error),
        (None, Some(signal)) => Ok(signal.exit_status()),
        (None, None) => Ok(ExitStatus::Done),
    }
}

impl Driver {
    async fn event_loop(
        &mut self,
        guard: &mut TerminalGuard,
        events: &mut mpsc::UnboundedReceiver<UiEvent>,
    ) -> Result<(), TuiError> {
        let mut input = EventStream::new();
        // Raw mode turns Ctrl+C into a key; signals come from outside (kill,
        // a closed terminal) and end the loop like quitting.
        let stop = self.options.shutdown.token();
        let mut tick = interval(SPINNER_TICK);
        tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut dirty = true;
        let mut next_frame = Instant::now();
        // The rest of a burst of terminal events read at once.
        let mut burst = std::collections::VecDeque::new();
        while !self.quit {
            if dirty && Instant::now() >= next_frame {
                guard.terminal.draw(|frame| view(&self.app, frame)).map_err(TuiError::Draw)?;
                dirty = false;
                next_frame = Instant::now() + FRAME;
            }
            let running = self.app.status.running;
            let msg = if let Some(msg) = burst.pop_front() {
                msg
            } else {
                tokio::select! {
                    terminal = input.next() => match terminal {
                        Some(Ok(event)) => {
                            burst = read_burst(event);
                            match burst.pop_front() {
                                Some(msg) => msg,
                                None => continue,
                            }
                        }
                        // The terminal is gone: leave.
                        Some(Err(_)) | None => break,
                    },
                    event = events.recv() => match event {
                        Some(event) => match self.on_ui_event(event) {
                            Some(msg) => msg,
                            None => { dirty = true; continue; }
                        },
                        None => break,
                    },
                    _ = sleep_until(next_frame), if dirty => continue,
                    _ = tick.tick(), if running => Msg::Tick(self.turn_started.elapsed()),
                    () = stop.cancelled() => break,
                }
            };
            let commands = update(&mut self.app, msg);
            self.perform(commands);
            self.remember();
            if let Some((path, text)) = self.edit.take() {
                // The old reader must stop before the editor reads the tty.
                input = EventStream::new();
                // Ctrl+C typed to a line editor reaches keel too (raw mode
                // is off): it is meant for the editor, not to quit.
                self.options.shutdown.pause_keyboard_signals(true);
                let edited = self.edit_plan(guard, path, text).await;
                self.options.shutdown.pause_keyboard_signals(false);
                edited?;
            }
            if let Some(file) = self.edit_file.take() {
                input = EventStream::new();
                self.options.shutdown.pause_keyboard_signals(true);
                guard.suspend();
                let status = super::editor::edit(&file, &self.env_filter).await;
                let resumed = guard.resume();
                self.options.shutdown.pause_keyboard_signals(false);
                resumed?;
                let msg = match status {
                    Ok(()) => Msg::Notice(
                        Level::Info,
                        format!("edited {} (read again from the next session on)", file.display()),
                    ),
                    Err(message) => Msg::Notice(Level::Warning, message),
                };
                update(&mut self.app, msg);
            }
            if let Some(chosen) = self.switch.take() {
                self.switch_session(events, chosen).await;
            }
            dirty = true;
        }
        Ok(())
    }

    /// A session chosen in the `/resume` overlay: ends the open session
    /// (its task records the end and runs SessionEnd hooks), drops what it
    /// still reported, and opens the choice on a fresh screen, like `keel
    /// resume` (`None`: a new session).
    async fn switch_session(
        &mut self,
        events: &mut mpsc::UnboundedReceiver<UiEvent>,
        chosen: Option<PathBuf>,
    ) {
        let (ops, ops_rx) = mpsc::unbounded_channel();
        // Dropping the old sender ends the session task's loop.
        self.ops = ops;
        self.ops_rx = Some(ops_rx);
        if let Some(task) = self.task.take() {
            if tokio::time::timeout(SHUTDOWN_GRACE, task).await.is_err() {
                tracing::warn!("the session did not stop within {SHUTDOWN_GRACE:?}");
            }
        }
        while events.try_recv().is_ok() {}
        self.cancel = None;
        self.reply = None;
        self.root = None;
        let previous = self.session.take();
        let mode = self.app.status.mode;
        self.app = App::new(self.app.theme, mode);
        if let Some((id, _)) = previous {
            self.app.notice(Level::Info, format!("the previous session is kept: keel resume {id}"));
        }
        self.load_history();
        self.options.approval = mode;
        self.open(chosen);
    }

    /// This folder's prompts from earlier runs, for Up/Down and Ctrl+R.
    fn load_history(&mut self) {
        let home = &self.options.launch.env.keel_home;
        match super::history::load(home, &self.options.cwd) {
            Ok(earlier) => self.app.editor.load_history(earlier),
            Err(error) => self.app.notice(Level::Warning, error.to_string()),
        }
        self.remembered = self.app.editor.history().len();
    }

    /// Writes the lines the editor added to its history since the last
    /// call (each prompt or command sent) to the history file; a failure
    /// is said once.
    fn remember(&mut self) {
        let history = self.app.editor.history();
        if history.len() <= self.remembered {
            self.remembered = history.len();
            return;
        }
        let new: Vec<String> = history[self.remembered..].to_vec();
        self.remembered = history.len();
        let home = &self.options.launch.env.keel_home;
        for text in new {
            if let Err(error) = super::history::append(home, &self.options.cwd, &text) {
                if !std::mem::replace(&mut self.history_failed, true) {
                    self.app.notice(Level::Warning, error.to_string());
                }
            }
        }
    }

    /// `/resume`: this folder's other sessions in a picker over the live
    /// one; Esc returns to it.
    fn show_resume_picker(&mut self) {
        let current = self.session.as_ref().map(|(_, log)| log.clone());
        let sessions: Vec<_> = self
            .options
            .launch
            .sessions_here()
            .into_iter()
            .filter(|session| Some(&session.path) != current.as_ref())
            .collect();
        let mut picker = PickerView::from_sessions(&sessions);
        picker.over_session = true;
        self.app.picker = Some(picker);
    }

    /// Asks "trust this project?" if it must, else goes on to [`Self::choose`].
    fn begin(&mut self) {
        match self.options.launch.settings(None) {
            Ok(settings) => {
                let found = super::launch::untrusted_supplies(&settings);
                if found.is_empty() {
                    self.choose();
                } else {
                    let root = settings.workspace_root.display().to_string();
                    self.app.trust = Some(TrustView { root, found });
                }
            }
            Err(error) => self.fail(TuiError::Settings(error)),
        }
    }

    /// Opens the session asked for, or shows the picker.
    fn choose(&mut self) {
        match std::mem::replace(&mut self.options.start, Start::New) {
            Start::New => self.open(None),
            Start::Resume(log) => self.open(Some(log)),
            Start::Pick(sessions) => self.app.picker = Some(PickerView::from_sessions(&sessions)),
        }
    }

    /// Starts the session task (new, or resuming `resume` and finishing
    /// its open turn); the first prompt waits for `SessionReady`.
    fn open(&mut self, resume: Option<PathBuf>) {
        let Some(ops_rx) = self.ops_rx.take() else { return };
        let settings = match self.options.launch.settings(resume.as_deref()) {
            Ok(settings) => settings,
            Err(error) => return self.fail(TuiError::Settings(error)),
        };
        self.root = Some(settings.workspace_root.clone());
        self.env_filter = settings.env_filter.clone();
        self.notify = settings.tui;
        self.secret_places = settings.secret_places.clone();
        self.app.facts.network = settings.sandbox.network.mode.as_str().to_owned();
        self.app.info.config = crate::config::config_sources(
            &self.options.launch.env,
            &self.options.launch.overrides,
            settings.project_trusted,
        );
        let session_options = SessionOptions {
            approval: self.options.approval,
            cwd: self.options.cwd.clone(),
            date: self.options.date.clone(),
            headless: false,
            script_answers: false,
        };
        let source = match resume {
            Some(log) => {
                if let Some(mode) = self.options.mode_flag {
                    let _ = self.ops.send(Op::SetMode(mode));
                }
                let cancel = self.new_turn();
                let _ = self.ops.send(Op::Continue { cancel });
                SessionSource::Resume(log)
            }
            None => SessionSource::New,
        };
        let events = self.events.clone();
        self.task =
            Some(tokio::spawn(run_session(settings, session_options, source, ops_rx, events)));
    }

    /// `keel "prompt"`: sent once the session is open, so the transcript
    /// starts with the session line, then the prompt.
    fn send_first_prompt(&mut self) {
        match self.options.first_prompt.take() {
            Some(FirstPrompt::Send(prompt)) => {
                self.app.editor.insert(&prompt);
                let commands = super::keys::submit(&mut self.app);
                self.perform(commands);
            }
            Some(FirstPrompt::Confirm(word)) => {
                self.app.editor.insert(&word);
                self.app.hint = Some(format!(
                    "`{}` is not a keel command: Enter sends it to the model",
                    word.trim()
                ));
            }
            None => {}
        }
    }

    fn fail(&mut self, error: TuiError) {
        self.failed = Some(error);
        self.quit = true;
    }

    /// A fresh cancellation token for the operation about to start.
    fn new_turn(&mut self) -> CancellationToken {
        let cancel = CancellationToken::new();
        self.cancel = Some(cancel.clone());
        self.turn_started = Instant::now();
        cancel
    }

    /// Writes a notification (`notify.rs`) to the terminal.
    fn notify_user(&self, text: &str) {
        let tmux = self.options.launch.env.var("TMUX").is_some_and(|value| !value.is_empty());
        let sequence = super::notify::sequence(self.notify.notify, tmux, text);
        if !sequence.is_empty() {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(sequence.as_bytes()).and_then(|()| out.flush());
        }
    }

    /// A turn ended: worth a notification if it ran long enough.
    fn turn_ended(&self) {
        let secs = self.turn_started.elapsed().as_secs();
        if super::notify::long_turn(secs, self.notify.notify_after_secs) {
            self.notify_user(&format!("keel: the turn ended after {secs}s"));
        }
    }

    fn on_ui_event(&mut self, event: UiEvent) -> Option<Msg> {
        match event {
            UiEvent::Runtime(event) => {
                if matches!(event, crate::runtime::RuntimeEvent::TurnCompleted { .. }) {
                    self.turn_ended();
                }
                Some(Msg::Runtime(event))
            }
            UiEvent::Approval { call, reason, always, reply } => {
                self.notify_user(&format!("keel: {} waits for your approval", call.name));
                self.reply = Some(reply);
                let diff = self.root.as_deref().and_then(|root| {
                    super::approval_diff::approval_diff(root, &self.options.cwd, &call)
                });
                update(&mut self.app, Msg::ApprovalRequested { call, reason });
                if let Some(approval) = self.app.approval.as_mut() {
                    if let Some(diff) = diff {
                        approval.preview = Some(super::diff::parse(&diff));
                    }
                    if !always {
                        // Asked anew each time: "always" is not an answer.
                        approval.prefix = None;
                    }
                }
                None
            }
            UiEvent::RaiseLimit { hit, reply } => {
                self.notify_user("keel: the spend limit is reached; raise it or stop");
                self.reply = Some(reply);
                Some(Msg::LimitReached(hit))
            }
            UiEvent::TurnFailed(message) => Some(Msg::TurnFailed(message)),
            UiEvent::Files(files) => Some(Msg::FilesListed(files)),
            UiEvent::SessionFailed(error) => {
                self.fail(TuiError::Session(error));
                None
            }
            UiEvent::SessionReady { session_id, log_path } => {
                self.session = Some((session_id, log_path));
                self.send_first_prompt();
                None
            }
            UiEvent::History(items, usage, cost) => Some(Msg::History(items, usage, cost)),
            UiEvent::Skills(skills) => Some(Msg::SkillsListed(skills)),
            UiEvent::Commands(commands) => Some(Msg::CommandsListed(commands)),
            UiEvent::Notice(level, text) => Some(Msg::Notice(level, text)),
            UiEvent::ClipboardImage(image) => Some(Msg::ClipboardImage(image)),
            UiEvent::Compacted(outcome) => Some(Msg::CompactFinished(outcome)),
            UiEvent::Diff(Ok(text)) => Some(Msg::DiffReady(text)),
            UiEvent::Diff(Err(message)) => Some(Msg::Notice(Level::Warning, message)),
            UiEvent::Rewind(reply) => Some(Msg::Rewind(reply)),
            UiEvent::Question { question, choices, reply } => {
                self.question_reply = Some(reply);
                Some(Msg::QuestionAsked { question, choices })
            }
            UiEvent::UserShell(outcome) => Some(Msg::UserShellDone(outcome)),
            UiEvent::InForce(in_force) => Some(Msg::InForce(in_force)),
            UiEvent::Inbox(sender) => {
                self.input = Some(sender);
                None
            }
            UiEvent::AnsweredElsewhere { call_id } => {
                if self.app.approval.as_ref().is_some_and(|open| open.call.call_id == call_id) {
                    self.app.approval = None;
                    drop(self.reply.take());
                }
                Some(Msg::Notice(Level::Info, "answered in an attached terminal".into()))
            }
            UiEvent::QueuedTurn(cancel) => {
                self.cancel = Some(cancel);
                self.turn_started = Instant::now();
                None
            }
        }
    }

    fn perform(&mut self, commands: Vec<Command>) {
        for command in commands {
            match command {
                Command::Submit(text) => {
                    let (text, images) = self.attach_mentions(text);
                    let cancel = self.new_turn();
                    self.send(Op::Prompt { text, images, cancel });
                }
                Command::SubmitImages { text, images } => {
                    let cancel = self.new_turn();
                    self.send(Op::Prompt { text, images, cancel });
                }
                Command::AnswerQuestion(answer) => {
                    if let Some(reply) = self.question_reply.take() {
                        let _ = reply.send(answer);
                    }
                }
                Command::TypeDuringTurn { text, mode, images } => {
                    let sent = self
                        .input
                        .as_ref()
                        .is_some_and(|input| input.send_with_images(text, mode, images));
                    if !sent {
                        let why = "the session is not ready for input; it was not sent".into();
                        update(&mut self.app, Msg::Notice(Level::Warning, why));
                    }
                }
                Command::Skill { name, args } => {
                    let cancel = self.new_turn();
                    self.send(Op::Skill { name, args, cancel });
                }
                Command::Compact { focus } => {
                    let cancel = self.new_turn();
                    self.send(Op::Compact { focus, cancel });
                }
                Command::PasteClipboard => self.paste_clipboard(),
                Command::Undo => self.send(Op::Undo),
                Command::Rewind(op) => self.send(Op::Rewind(op)),
                Command::StopProcess(id) => self.send(Op::StopProcess(id)),
                Command::RemoveAlways(scope) => self.send(Op::RemoveAlways(scope)),
                Command::SaveMemory { scope, text } => self.save_memory(scope, &text),
                Command::ShowContext => self.show_context(),
                Command::EditFile(path) => self.edit_file = Some(path),
                Command::UserShell(command) => {
                    let cancel = self.new_turn();
                    self.send(Op::UserShell { command, cancel });
                }
                Command::Diff => self.diff(),
                Command::ListFiles => self.list_files(),
                Command::Interrupt => {
                    if let Some(cancel) = &self.cancel {
                        cancel.cancel();
                    }
                    // The open question goes unanswered with the turn.
                    drop(self.question_reply.take());
                    if let Some(reply) = self.reply.take() {
                        let note = "the user stopped the turn".to_owned();
                        let _ = reply.send(ApprovalReply::Deny(Some(note)));
                    }
                }
                Command::Answer(answer) => {
                    if let Some(reply) = self.reply.take() {
                        let _ = reply.send(answer);
                    }
                }
                Command::SetMode(mode) => {
                    let _ = self.ops.send(Op::SetMode(mode));
                }
                Command::SetModel(model) => {
                    let _ = self.ops.send(Op::SetModel(model));
                }
                Command::EditPlan { path, text } => self.edit = Some((path, text)),
                Command::Trust(yes) => {
                    if yes {
                        let msg = match self.options.launch.trust() {
                            Ok(path) => Msg::Notice(
                                Level::Info,
                                format!("trusted this project (recorded in {})", path.display()),
                            ),
                            Err(error) => {
                                Msg::Notice(Level::Error, format!("not trusted: {error}"))
                            }
                        };
                        update(&mut self.app, msg);
                    }
                    self.choose();
                }
                Command::OpenSession(log) if self.task.is_some() => self.switch = Some(log),
                Command::OpenSession(log) => self.open(log),
                Command::SwitchSession => self.show_resume_picker(),
                Command::Quit => self.quit = true,
            }
        }
    }

    /// Sends an operation to the session task; a stopped task ends the turn.
    fn send(&mut self, op: Op) {
        if self.ops.send(op).is_err() {
            let msg = Msg::TurnFailed("the session has stopped; restart keel".into());
            update(&mut self.app, msg);
        }
    }
}

/// `first` and every terminal event already waiting behind it, as
/// messages: a burst of plain keys that holds a line break is one paste
/// (`paste::burst_text`), anything else one message per event. Called only
/// right after the `EventStream` yielded `first`, when its waker thread is
/// idle, so the zero-timeout polls here never wait.
fn read_burst(first: Event) -> std::collections::VecDeque<Msg> {
    let mut events = vec![first];
    while matches!(crossterm::event::poll(Duration::ZERO), Ok(true)) {
        match crossterm::event::read() {
            Ok(event) => events.push(event),
            Err(_) => break,
        }
    }
    let keys: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::Key(key) if key.kind != KeyEventKind::Release => Some(*key),
            _ => None,
        })
        .collect();
    let only_keys = events.iter().all(|event| matches!(event, Event::Key(_)));
    if let Some(text) = only_keys.then(|| super::paste::burst_text(&keys)).flatten() {
        return std::collections::VecDeque::from([Msg::Paste(text)]);
    }
    events.into_iter().filter_map(to_msg).collect()
}

fn to_msg(event: Event) -> Option<Msg> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => Some(Msg::Key(key)),
        Event::Paste(text) => Some(Msg::Paste(text)),
        Event::Resize(..) => Some(Msg::Resize),
        Event::Key(_) | Event::FocusGained | Event::FocusLost | Event::Mouse(_) => None,
    }
}
