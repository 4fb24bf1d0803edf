//! The connection's side of `keel acp`: what each ACP request does with
//! keel's sessions (`initialize`, `session/new`, `session/load`,
//! `session/prompt`, `session/set_mode`, `session/cancel`) and keel's
//! modes as ACP session modes.
//!
//! Invariants: handlers run in the SDK's dispatch loop, so none waits
//! for a turn or for the client: opening a session and running a prompt
//! happen in the session's own task (`worker.rs`), which answers the
//! request when done; a session is open in at most one task (loading one
//! that is open here ends its task first, so the log has one writer and
//! the load reads what that task wrote); the mode and policy come from
//! keel's configuration for the session's folder and the command line,
//! never from the client (a client chooses among keel's own modes, as the
//! TUI's user does with `/mode`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, FileSystemCapabilities, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, PromptRequest, PromptResponse, SessionMode,
    SessionModeState, SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};
use tokio::sync::{RwLock, mpsc};
use tokio_util::sync::CancellationToken;

use super::AcpOptions;
use super::approver::AcpApprover;
use super::client_files::AcpFiles;
use super::diffs::WorkspaceFiles;
use super::worker::{self, AcpSink, Handle, Op};
use crate::config::{Environment, Settings};
use crate::policy::ApprovalMode;
use crate::runtime::{Session, SessionOptions};
use crate::tools::file_access::ClientFiles;

/// Every mode keel has, as the client lists them.
const MODES: [ApprovalMode; 5] = [
    ApprovalMode::Ask,
    ApprovalMode::Auto,
    ApprovalMode::Plan,
    ApprovalMode::Explore,
    ApprovalMode::Yolo,
];

/// A session open in this connection.
struct Live {
    handle: Handle,
    /// Held (shared) by the session's task until it has ended the session.
    running: Arc<RwLock<()>>,
}

/// The state every handler shares.
pub struct Hub {
    options: AcpOptions,
    /// What the client's `initialize` offered of `fs/*`.
    client_fs: Mutex<FileSystemCapabilities>,
    sessions: Mutex<HashMap<String, Live>>,
    /// Held shared by every session task; taken whole before keel exits.
    pub tasks: Arc<RwLock<()>>,
}

impl Hub {
    pub fn new(options: AcpOptions) -> Self {
        Self {
            options,
            client_fs: Mutex::default(),
            sessions: Mutex::new(HashMap::new()),
            tasks: Arc::new(RwLock::new(())),
        }
    }

    /// The client is gone: every running turn is cancelled (its calls
    /// answered) and every handle dropped, so the tasks end their sessions.
    pub fn close_all(&self) {
        if let Ok(mut sessions) = self.sessions.lock() {
            for (_, live) in sessions.drain() {
                live.handle.cancel();
            }
        }
    }

    pub fn initialize(&self, request: &InitializeRequest) -> InitializeResponse {
        if let Ok(mut fs) = self.client_fs.lock() {
            *fs = request.client_capabilities.fs.clone();
        }
        let prompts = PromptCapabilities::new().image(true).embedded_context(true);
        let capabilities = AgentCapabilities::new().load_session(true).prompt_capabilities(prompts);
        InitializeResponse::new(ProtocolVersion::V1)
            .agent_capabilities(capabilities)
            .agent_info(Implementation::new("keel", env!("CARGO_PKG_VERSION")))
    }

    /// `session/new`: a keel session in the request's folder.
    pub fn new_session(
        self: &Arc<Self>,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        connection: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let hub = self.clone();
        let running = self.tasks.clone();
        // A task of its own, not the connection's: it outlives the
        // connection long enough to end its session.
        tokio::spawn(async move {
            let _running = running.read_owned().await;
            match hub.open(&connection, &request.cwd, None) {
                Ok(opened) => {
                    let modes = modes(opened.session.approval_mode());
                    let response = NewSessionResponse::new(opened.id.clone()).modes(modes);
                    hub.serve(opened, responder, response).await
                }
                Err(message) => responder.respond_with_error(invalid(message)),
            }
        });
        Ok(())
    }

    /// `session/load`: the session keel logged under that id, replayed to
    /// the client, then open for prompts.
    pub fn load_session(
        self: &Arc<Self>,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        connection: ConnectionTo<Client>,
    ) -> Result<(), Error> {
        let hub = self.clone();
        let running = self.tasks.clone();
        let id = request.session_id.0.to_string();
        tokio::spawn(async move {
            let _running = running.read_owned().await;
            // Open here: its task ends the session first (one writer).
            let open = hub.sessions.lock().ok().and_then(|mut sessions| sessions.remove(&id));
            if let Some(live) = open {
                drop(live.handle);
                let _ended = live.running.write().await;
            }
            let log = match hub.find_log(&id) {
                Ok(log) => log,
                Err(message) => return responder.respond_with_error(invalid(message)),
            };
            match hub.open(&connection, &request.cwd, Some(&log)) {
                Ok(opened) => {
                    let files = WorkspaceFiles::new(&opened.root, &opened.cwd);
                    let session = &opened.session;
                    for update in super::replay::replay(session.history(), session.tasks(), &files)
                    {
                        worker::send(&connection, &opened.id, update);
                    }
                    let modes = modes(opened.session.approval_mode());
                    hub.serve(opened, responder, LoadSessionResponse::new().modes(modes)).await
                }
                Err(message) => responder.respond_with_error(invalid(message)),
            }
        });
        Ok(())
    }

    /// `session/prompt`: handed to the session's task, which answers it.
    pub fn prompt(
        &self,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
    ) -> Result<(), Error> {
        let id = request.session_id.0.to_string();
        let Some(handle) = self.handle(&id) else {
            return responder.respond_with_error(unknown_session(&id));
        };
        let op = Op::Prompt { blocks: request.prompt, responder: Box::new(responder) };
        if let Err(mpsc::error::SendError(Op::Prompt { responder, .. })) = handle.ops.send(op) {
            return responder.respond_with_error(unknown_session(&id));
        }
        Ok(())
    }

    /// `session/set_mode`: one of keel's modes, applied between turns.
    pub fn set_mode(
        &self,
        request: &SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    ) -> Result<(), Error> {
        let id = request.session_id.0.to_string();
        let Some(mode) = ApprovalMode::parse(&request.mode_id.0) else {
            let message = format!("keel has no mode `{}`", request.mode_id.0);
            return responder.respond_with_error(invalid(message));
        };
        match self.handle(&id) {
            Some(handle) if handle.ops.send(Op::SetMode(mode)).is_ok() => {
                responder.respond(SetSessionModeResponse::new())
            }
            Some(_) | None => responder.respond_with_error(unknown_session(&id)),
        }
    }

    /// `session/cancel`: the running turn stops (its calls answered).
    pub fn cancel(&self, id: &str) {
        if let Some(handle) = self.handle(id) {
            handle.cancel();
        }
    }

    fn handle(&self, id: &str) -> Option<Handle> {
        self.sessions.lock().ok()?.get(id).map(|live| live.handle.clone())
    }

    fn find_log(&self, id: &str) -> Result<PathBuf, String> {
        let dir = crate::session::sessions_dir(&self.options.env.keel_home);
        crate::session::find_by_prefix(&dir, id).map_err(|error| error.to_string())
    }

    /// Opens a session in `cwd` (or resumes the one logged at `log`).
    fn open(
        &self,
        connection: &ConnectionTo<Client>,
        cwd: &Path,
        log: Option<&Path>,
    ) -> Result<Opened, String> {
        let cwd = std::fs::canonicalize(cwd)
            .map_err(|error| format!("cannot work in {}: {error}", cwd.display()))?;
        let settings = self.settings(&cwd, log)?;
        let root = settings.workspace_root.clone();
        let session_id = Arc::new(OnceLock::new());
        let files = || WorkspaceFiles::new(&root, &cwd);
        let last_error = worker::LastError::default();
        let sink = Box::new(AcpSink::new(
            connection.clone(),
            session_id.clone(),
            files(),
            last_error.clone(),
        ));
        let approver = Box::new(AcpApprover::new(connection.clone(), session_id.clone(), files()));
        let options = SessionOptions {
            approval: self.options.mode.unwrap_or(settings.default_mode),
            cwd: cwd.clone(),
            date: self.options.date.clone(),
            headless: false,
            script_answers: false,
        };
        let mut session = match log {
            None => Session::start(&settings, options, sink, approver),
            Some(log) => Session::resume(&settings, log, options, sink, approver),
        }
        .map_err(|error| error.to_string())?;
        if let (Some(mode), Some(_)) = (self.options.mode, log) {
            session.set_approval_mode(mode);
        }
        let offered = self.client_fs.lock().map(|fs| fs.clone()).unwrap_or_default();
        if let Some(files) = AcpFiles::offered(connection.clone(), session_id.clone(), &offered) {
            session.use_client_files(ClientFiles::new(Arc::new(files)));
        }
        let id = session.id().to_owned();
        // From here on the sink and the approver speak for this session.
        let _ = session_id.set(id.clone());
        Ok(Opened { id, session, root, cwd, last_error, connection: connection.clone() })
    }

    /// Settings for `cwd`; a resumed session keeps its logged provider and
    /// model unless the command line named others.
    fn settings(&self, cwd: &Path, log: Option<&Path>) -> Result<Settings, String> {
        let env = Environment { cwd: cwd.to_owned(), ..self.options.env.clone() };
        let mut overrides = self.options.overrides.clone();
        if let Some((provider, model)) = log.and_then(crate::session::logged_model) {
            overrides.provider.get_or_insert(provider);
            overrides.model.get_or_insert(model);
        }
        crate::config::load(&env, &overrides).map_err(|error| error.to_string())
    }

    /// Registers the opened session, answers the request that opened it
    /// and runs the session's task until the connection lets go of it.
    async fn serve<T: agent_client_protocol::JsonRpcResponse>(
        &self,
        opened: Opened,
        responder: Responder<T>,
        response: T,
    ) -> Result<(), Error> {
        let (ops, receiver) = mpsc::unbounded_channel();
        let turn = Arc::new(Mutex::new(CancellationToken::new()));
        let running = Arc::new(RwLock::new(()));
        let held = running.clone().read_owned().await;
        let handle = Handle { ops, turn: turn.clone() };
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(opened.id.clone(), Live { handle, running });
        }
        let answered = responder.respond(response);
        if let Some(update) = super::updates::commands(&opened.session.command_index()) {
            worker::send(&opened.connection, &opened.id, update);
        }
        worker::run(opened.session, receiver, turn, opened.last_error).await;
        drop(held);
        answered
    }
}

/// A session just opened.
struct Opened {
    id: String,
    session: Session,
    root: PathBuf,
    cwd: PathBuf,
    last_error: worker::LastError,
    connection: ConnectionTo<Client>,
}

/// keel's modes, `current` selected.
fn modes(current: ApprovalMode) -> SessionModeState {
    let available = MODES
        .iter()
        .map(|mode| {
            SessionMode::new(mode.as_str(), mode.as_str()).description(describe(*mode).to_owned())
        })
        .collect();
    SessionModeState::new(current.as_str(), available)
}

fn describe(mode: ApprovalMode) -> &'static str {
    match mode {
        ApprovalMode::Ask => "reads and known read-only commands run; everything else asks",
        ApprovalMode::Auto => {
            "workspace writes and sandboxed commands run without asking; protected paths ask"
        }
        ApprovalMode::Plan => "read-only until a plan is approved",
        ApprovalMode::Explore => "read-only, for looking around",
        ApprovalMode::Yolo => {
            "everything but hard-denied calls, forbidden and prompt rules runs without asking"
        }
    }
}

fn invalid(message: String) -> Error {
    Error::invalid_params().data(message)
}

fn unknown_session(id: &str) -> Error {
    invalid(format!("no session `{id}` is open in this connection; load it first"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_keel_mode_is_offered_under_its_cli_name() {
        let state = serde_json::to_value(modes(ApprovalMode::Plan)).unwrap();
        assert_eq!(state["currentModeId"], "plan");
        let ids: Vec<&str> = state["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["ask", "auto", "plan", "explore", "yolo"]);
        for id in ids {
            assert!(ApprovalMode::parse(id).is_some(), "{id} is a mode set_mode takes");
        }
    }
}
