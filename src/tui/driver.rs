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
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, MissedTickBehavior, interval, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::exec::ExitStatus;
use crate::policy::ApprovalMode;
use crate::runtime::SessionOptions;

use super::app::{App, ApprovalReply, Command, Msg, update};
use super::bridge::{Op, UiEvent, run_session};
use super::terminal::TerminalGuard;
use super::transcript::Level;
use super::{Theme, TuiError, view};

/// Shortest time between two frames (60 fps cap).
const FRAME: Duration = Duration::from_millis(16);
/// Spinner and elapsed-time refresh while a turn runs.
const SPINNER_TICK: Duration = Duration::from_millis(100);
/// How long quitting waits for the running turn to wind down.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

/// What the user asked for on the command line.
#[derive(Debug, Clone)]
pub struct TuiOptions {
    pub first_prompt: Option<String>,
    pub approval: ApprovalMode,
    pub cwd: PathBuf,
    pub date: String,
    pub theme: Theme,
}

/// The running TUI's side of the channels.
struct Driver {
    app: App,
    ops: mpsc::UnboundedSender<Op>,
    cancel: Option<CancellationToken>,
    reply: Option<oneshot::Sender<ApprovalReply>>,
    turn_started: Instant,
    quit: bool,
    session: Option<(String, PathBuf)>,
    /// Why the session could not start (reported after the screen is restored).
    failed: Option<String>,
}

/// Runs the TUI until the user quits.
pub async fn run(settings: Settings, options: TuiOptions) -> Result<ExitStatus, TuiError> {
    let (ops_tx, ops_rx) = mpsc::unbounded_channel();
    let (events_tx, mut events_rx) = mpsc::unbounded_channel();
    let session_options =
        SessionOptions { approval: options.approval, cwd: options.cwd.clone(), date: options.date };
    let files_tx = events_tx.clone();
    let root = settings.workspace_root.clone();
    tokio::task::spawn_blocking(move || {
        let _ = files_tx.send(UiEvent::Files(super::files::list_files(&root)));
    });
    let session = tokio::spawn(run_session(settings, session_options, ops_rx, events_tx));
    let mut guard = TerminalGuard::enter()?;
    let mut driver = Driver {
        app: App::new(options.theme, options.approval),
        ops: ops_tx,
        cancel: None,
        reply: None,
        turn_started: Instant::now(),
        quit: false,
        session: None,
        failed: None,
    };
    if let Some(prompt) = options.first_prompt {
        driver.app.editor.insert(&prompt);
        let commands = super::keys::submit(&mut driver.app);
        driver.perform(commands);
    }
    let outcome = driver.event_loop(&mut guard, &mut events_rx).await;
    drop(guard);
    if let Some(cancel) = &driver.cancel {
        cancel.cancel();
    }
    drop(driver.reply.take());
    let Driver { ops, session: info, failed, .. } = driver;
    drop(ops);
    drop(events_rx);
    if tokio::time::timeout(SHUTDOWN_GRACE, session).await.is_err() {
        tracing::warn!("the session did not stop within {SHUTDOWN_GRACE:?}");
    }
    if let Some((id, log)) = info {
        let _ = writeln!(std::io::stdout().lock(), "session {id}\nlog {}", log.display());
    }
    outcome?;
    match failed {
        Some(message) => Err(TuiError::Session(message)),
        None => Ok(ExitStatus::Done),
    }
}

impl Driver {
    async fn event_loop(
        &mut self,
        guard: &mut TerminalGuard,
        events: &mut mpsc::UnboundedReceiver<UiEvent>,
    ) -> Result<(), TuiError> {
        let mut input = EventStream::new();
        // Raw mode turns Ctrl+C into a key; these come from outside (kill,
        // a closed terminal) and must still restore the screen.
        let mut term = signal(SignalKind::terminate()).map_err(TuiError::Terminal)?;
        let mut hangup = signal(SignalKind::hangup()).map_err(TuiError::Terminal)?;
        let mut interrupt = signal(SignalKind::interrupt()).map_err(TuiError::Terminal)?;
        let mut tick = interval(SPINNER_TICK);
        tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut dirty = true;
        let mut next_frame = Instant::now();
        while !self.quit {
            if dirty && Instant::now() >= next_frame {
                guard.terminal.draw(|frame| view(&self.app, frame)).map_err(TuiError::Draw)?;
                dirty = false;
                next_frame = Instant::now() + FRAME;
            }
            let running = self.app.status.running;
            let msg = tokio::select! {
                terminal = input.next() => match terminal {
                    Some(Ok(event)) => match to_msg(event) {
                        Some(msg) => msg,
                        None => continue,
                    },
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
                _ = term.recv() => break,
                _ = hangup.recv() => break,
                _ = interrupt.recv() => break,
            };
            let commands = update(&mut self.app, msg);
            self.perform(commands);
            dirty = true;
        }
        Ok(())
    }

    fn on_ui_event(&mut self, event: UiEvent) -> Option<Msg> {
        match event {
            UiEvent::Runtime(event) => Some(Msg::Runtime(event)),
            UiEvent::Approval { call, reason, reply } => {
                self.reply = Some(reply);
                Some(Msg::ApprovalRequested { call, reason })
            }
            UiEvent::TurnFailed(message) => Some(Msg::TurnFailed(message)),
            UiEvent::Files(files) => Some(Msg::FilesListed(files)),
            UiEvent::SessionFailed(message) => {
                self.failed = Some(message);
                self.quit = true;
                None
            }
            UiEvent::SessionReady { session_id, log_path } => {
                self.session = Some((session_id, log_path));
                None
            }
        }
    }

    fn perform(&mut self, commands: Vec<Command>) {
        for command in commands {
            match command {
                Command::Submit(text) => {
                    let cancel = CancellationToken::new();
                    self.cancel = Some(cancel.clone());
                    self.turn_started = Instant::now();
                    if self.ops.send(Op::Prompt { text, cancel }).is_err() {
                        let msg = Msg::TurnFailed("the session has stopped; restart keel".into());
                        update(&mut self.app, msg);
                    }
                }
                Command::Interrupt => {
                    if let Some(cancel) = &self.cancel {
                        cancel.cancel();
                    }
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
                Command::PlanDecided(decision) => {
                    let text = format!("plan review is not wired to a workflow yet ({decision:?})");
                    self.app.notice(Level::Warning, text);
                }
                Command::Quit => self.quit = true,
            }
        }
    }
}

fn to_msg(event: Event) -> Option<Msg> {
    match event {
        Event::Key(key) if key.kind != KeyEventKind::Release => Some(Msg::Key(key)),
        Event::Paste(text) => Some(Msg::Paste(text)),
        Event::Resize(..) => Some(Msg::Resize),
        Event::Key(_) | Event::FocusGained | Event::FocusLost | Event::Mouse(_) => None,
    }
}
