//! The owning side of `keel attach` (issue 40): a live session accepts
//! other terminals of the same user on a Unix socket, streams them what
//! happens and takes their approval answers and typed input.
//!
//! A front end builds an [`AttachHost`] before the session opens, wraps its
//! [`EventSink`] with [`AttachHost::sink`] and its [`Approver`] with
//! [`AttachHost::approver`], and once the session has an id calls
//! [`AttachHost::listen`] with the session's [`InputSender`]. The returned
//! [`Listening`] guard ends the listener and removes the socket when
//! dropped.
//!
//! Invariants:
//! - The owner keeps the log's only writer: an attacher's answer goes
//!   through the session's approver (so `step` records the `approval` line
//!   as for the TUI's own answer) and its text through the session's inbox
//!   (`input_queued`, like text typed in the TUI). Nothing here writes the
//!   log; it is read once per attacher for the transcript so far.
//! - Owner-only: the socket's folder `$KEEL_HOME/attach` is 0700 (checked
//!   to be the user's own folder, not a symlink), the socket 0600, and
//!   every connection's peer uid (SO_PEERCRED) must be keel's own, else it
//!   is closed unanswered. A socket file left by a dead owner is replaced:
//!   the session's lock says no other owner lives.
//! - An approval is answered once: whichever of the owner's approver and an
//!   attacher answers first wins; the other is told (`settled`, and
//!   [`Approver::answered_elsewhere`]). An attacher answers only the
//!   approval it names, only when it got its full text, never a plan
//!   review.
//! - Bounded: at most [`MAX_ATTACHERS`] connections; each line is capped
//!   (`attach_wire.rs`); the live stream is a ring of [`BACKLOG`] lines
//!   and an attacher that falls behind it is disconnected.

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use crate::agent::{BudgetHit, SpendLimits};
use crate::policy::{ApprovalMode, ApprovalScope};
use crate::protocol::{Delivery, HarnessTool, ToolCall};

use super::attach_wire::{
    AttacherLine, HostLine, MAX_ATTACHER_LINE, MAX_HOST_LINE, WIRE_VERSION, attach_dir, encode,
    parse, read_line, socket_path,
};
use super::{ApprovalAnswer, Approver, EventSink, InputSender, RuntimeEvent};

/// Connections served at once, at most.
pub const MAX_ATTACHERS: usize = 8;
/// Live lines kept for attachers that have not read them yet.
pub const BACKLOG: usize = 256;
/// How long a new connection may take to say hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a session cannot accept attachers (it runs on without them).
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error("cannot prepare {path}: {source}")]
    Folder {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not keel's own private folder (owner uid {uid}, mode {mode:o})")]
    NotPrivate { path: PathBuf, uid: u32, mode: u32 },
    #[error("{path} exists and is not a socket; not replacing it")]
    NotASocket { path: PathBuf },
    #[error("cannot listen on {path}: {source}")]
    Bind {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// The state attachers share with the session's sink and approver.
#[derive(Clone)]
pub struct AttachHost {
    shared: Arc<Shared>,
}

struct Shared {
    lines: broadcast::Sender<Arc<str>>,
    pending: Mutex<Option<Pending>>,
    next_id: AtomicUsize,
    connections: AtomicUsize,
    /// Told each time a connection ends (for [`Listening::close`]).
    left: tokio::sync::Notify,
    ended: CancellationToken,
}

/// The approval waiting now.
struct Pending {
    id: u64,
    line: Arc<str>,
    reply: Option<oneshot::Sender<ApprovalAnswer>>,
}

impl Default for AttachHost {
    fn default() -> Self {
        Self::new()
    }
}

impl AttachHost {
    pub fn new() -> Self {
        let (lines, _) = broadcast::channel(BACKLOG);
        let shared = Shared {
            lines,
            pending: Mutex::new(None),
            next_id: AtomicUsize::new(1),
            connections: AtomicUsize::new(0),
            left: tokio::sync::Notify::new(),
            ended: CancellationToken::new(),
        };
        Self { shared: Arc::new(shared) }
    }

    /// `inner` with every event also streamed to attachers.
    pub fn sink(&self, inner: Box<dyn EventSink>) -> Box<dyn EventSink> {
        Box::new(AttachSink { inner, host: self.clone() })
    }

    /// `inner` racing attachers for each approval.
    pub fn approver(&self, inner: Box<dyn Approver>) -> Box<dyn Approver> {
        Box::new(AttachApprover { inner, host: self.clone() })
    }

    fn publish(&self, line: &HostLine) -> Arc<str> {
        let text: Arc<str> = encode(line).into();
        // No receiver is fine: nobody is attached.
        let _ = self.shared.lines.send(text.clone());
        text
    }

    /// Announces an approval; the receiver gets an attacher's answer.
    fn open_approval(
        &self,
        call: &ToolCall,
        reason: &str,
    ) -> (u64, oneshot::Receiver<ApprovalAnswer>) {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed) as u64;
        let answerable = call.harness_tool() != Some(HarnessTool::SubmitPlan);
        let full = crate::display::approval_text(call);
        let mut line = HostLine::Approval {
            id,
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            reason: super::attach_lines::cut(reason, 4096),
            text: answerable.then_some(full),
        };
        if encode(&line).len() > MAX_HOST_LINE
            && let HostLine::Approval { text, .. } = &mut line
        {
            *text = None;
        }
        let can_answer = matches!(&line, HostLine::Approval { text: Some(_), .. });
        let (reply, answer) = oneshot::channel();
        let text = self.publish(&line);
        let pending = Pending { id, line: text, reply: can_answer.then_some(reply) };
        *self.lock_pending() = Some(pending);
        (id, answer)
    }

    fn settle(&self, id: u64, approved: bool, by: &str) {
        let mut pending = self.lock_pending();
        if pending.as_ref().is_some_and(|p| p.id == id) {
            *pending = None;
        }
        drop(pending);
        self.publish(&HostLine::Settled { id, approved, by: by.to_owned() });
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Option<Pending>> {
        // A panic while holding it left plain data: still usable.
        self.shared.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An attacher's answer to approval `id`; false when it is not the
    /// open one (or cannot be answered from there).
    fn answer(&self, id: u64, approve: bool, note: Option<String>) -> bool {
        let reply = match self.lock_pending().as_mut() {
            Some(pending) if pending.id == id => pending.reply.take(),
            Some(_) | None => None,
        };
        let Some(reply) = reply else { return false };
        let note = if approve {
            None
        } else {
            Some(note.unwrap_or_else(|| "the user declined this call".to_owned()))
        };
        reply.send(ApprovalAnswer { approved: approve, note, scope: ApprovalScope::Once }).is_ok()
    }

    /// Listens for attachers of session `session_id` until the guard is
    /// dropped. Must run inside the tokio runtime. `input`: where their
    /// typed text goes; `None` for a front end that takes none (`keel
    /// exec`: an open sender would keep its run waiting for more), whose
    /// attachers are told so.
    pub fn listen(
        &self,
        keel_home: &Path,
        session_id: &str,
        log_path: PathBuf,
        input: Option<InputSender>,
    ) -> Result<Listening, AttachError> {
        let path = socket_path(keel_home, session_id);
        let listener = bind(&attach_dir(keel_home), &path)?;
        let serving =
            Serving { host: self.clone(), session_id: session_id.to_owned(), log_path, input };
        let task = tokio::spawn(accept_loop(listener, serving));
        Ok(Listening { path, task, shared: self.shared.clone() })
    }
}

/// While alive, the session accepts attachers.
pub struct Listening {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
}

/// How long [`Listening::close`] waits for attachers to get the last lines.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

impl Listening {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ends the session for its attachers and waits (at most
    /// [`CLOSE_GRACE`]) until each got what was streamed and the goodbye:
    /// for a front end whose process exits right after (`keel exec`).
    pub async fn close(self) {
        self.shared.ended.cancel();
        let shared = self.shared.clone();
        let all_gone = async move {
            loop {
                let left = shared.left.notified();
                if shared.connections.load(Ordering::SeqCst) == 0 {
                    return;
                }
                left.await;
            }
        };
        let _ = tokio::time::timeout(CLOSE_GRACE, all_gone).await;
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.shared.ended.cancel();
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Makes the private folder and binds the socket (0600), replacing a
/// stale socket file.
fn bind(dir: &Path, path: &Path) -> Result<UnixListener, AttachError> {
    let folder = |source| AttachError::Folder { path: dir.to_owned(), source };
    crate::support::private_dir::make_private(dir, None).map_err(folder)?;
    let meta = std::fs::symlink_metadata(dir).map_err(folder)?;
    let mode = meta.mode() & 0o7777;
    let me = rustix::process::geteuid().as_raw();
    if !meta.is_dir() || meta.uid() != me || mode & 0o077 != 0 {
        return Err(AttachError::NotPrivate { path: dir.to_owned(), uid: meta.uid(), mode });
    }
    match std::fs::symlink_metadata(path) {
        // The session's lock is ours, so no live owner listens there.
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(path).map_err(folder)?;
        }
        Ok(_) => return Err(AttachError::NotASocket { path: path.to_owned() }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(folder(error)),
    }
    let bound = |source| AttachError::Bind { path: path.to_owned(), source };
    let listener = std::os::unix::net::UnixListener::bind(path).map_err(bound)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(bound)?;
    listener.set_nonblocking(true).map_err(bound)?;
    UnixListener::from_std(listener).map_err(bound)
}

/// What every connection needs.
#[derive(Clone)]
struct Serving {
    host: AttachHost,
    session_id: String,
    log_path: PathBuf,
    input: Option<InputSender>,
}

async fn accept_loop(listener: UnixListener, serving: Serving) {
    let me = rustix::process::geteuid().as_raw();
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        // Another user's process gets nothing, not even a hello.
        if stream.peer_cred().ok().map(|cred| cred.uid()) != Some(me) {
            continue;
        }
        let connections = &serving.host.shared.connections;
        if connections.fetch_add(1, Ordering::SeqCst) >= MAX_ATTACHERS {
            connections.fetch_sub(1, Ordering::SeqCst);
            let mut stream = stream;
            let bye = HostLine::Bye { reason: format!("{MAX_ATTACHERS} terminals are attached") };
            let _ = stream.write_all(encode(&bye).as_bytes()).await;
            continue;
        }
        let serving = serving.clone();
        tokio::spawn(async move {
            serve(stream, &serving).await;
            serving.host.shared.connections.fetch_sub(1, Ordering::SeqCst);
            serving.host.shared.left.notify_waiters();
        });
    }
}

/// One attacher: hello, the transcript so far, the open approval, then
/// the live lines, while its own lines are read beside.
async fn serve(stream: UnixStream, serving: &Serving) {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let hello = tokio::time::timeout(HELLO_TIMEOUT, read_line(&mut reader, MAX_ATTACHER_LINE));
    let version = match hello.await {
        Ok(Ok(Some(line))) => match parse::<AttacherLine>(&line) {
            Ok(AttacherLine::Hello { v }) => Some(v),
            Ok(_) | Err(_) => None,
        },
        Ok(Ok(None) | Err(_)) | Err(_) => None,
    };
    if version != Some(WIRE_VERSION) {
        let reason = format!("this keel speaks attach protocol {WIRE_VERSION}; say hello first");
        let _ = write.write_all(encode(&HostLine::Bye { reason }).as_bytes()).await;
        return;
    }
    // Subscribed before the log is read: a line may come twice, none is lost.
    let mut live = serving.host.shared.lines.subscribe();
    let mut opening = vec![encode(&HostLine::Hello {
        v: WIRE_VERSION,
        session_id: serving.session_id.clone(),
        pid: std::process::id(),
        input: serving.input.is_some(),
    })];
    opening.extend(transcript(&serving.log_path, &serving.session_id).iter().map(encode));
    if let Some(pending) = serving.host.lock_pending().as_ref() {
        opening.push(pending.line.to_string());
    }
    for line in opening {
        if write.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
    let mut reading = tokio::spawn(read_attacher(reader, serving.clone()));
    let ended = serving.host.shared.ended.clone();
    let bye = loop {
        tokio::select! {
            // What was streamed goes out before the goodbye.
            biased;
            line = live.recv() => match line {
                Ok(line) => {
                    if write.write_all(line.as_bytes()).await.is_err() {
                        break None;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    break Some("this terminal fell behind the session; attach again".to_owned());
                }
                Err(broadcast::error::RecvError::Closed) => break Some("the session ended".into()),
            },
            () = ended.cancelled() => {
                while let Ok(line) = live.try_recv() {
                    if write.write_all(line.as_bytes()).await.is_err() {
                        break;
                    }
                }
                break Some("the session ended".to_owned());
            }
            _ = &mut reading => break None,
        }
    };
    reading.abort();
    if let Some(reason) = bye {
        let _ = write.write_all(encode(&HostLine::Bye { reason }).as_bytes()).await;
    }
}

/// The transcript so far, from the log (read, never written).
fn transcript(log_path: &Path, session_id: &str) -> Vec<HostLine> {
    let read = crate::session::read_log(log_path).map_err(|error| error.to_string());
    let markdown = read.and_then(|contents| {
        let mask = crate::display::SecretMask::new(&[]).map_err(|error| error.to_string())?;
        crate::export::export(&contents.records, crate::export::Format::Markdown, &mask)
            .map_err(|error| error.to_string())
    });
    match markdown {
        Ok(markdown) => super::attach_lines::transcript_lines(&markdown, session_id),
        Err(error) => vec![HostLine::Notice {
            level: "warning".into(),
            text: format!("cannot show the transcript so far: {error}"),
        }],
    }
}

/// Reads an attacher's lines until it leaves or breaks the protocol.
async fn read_attacher(mut reader: BufReader<tokio::net::unix::OwnedReadHalf>, serving: Serving) {
    while let Ok(Some(line)) = read_line(&mut reader, MAX_ATTACHER_LINE).await {
        match parse::<AttacherLine>(&line) {
            Ok(AttacherLine::Answer { id, approve, note }) => {
                if !serving.host.answer(id, approve, note) {
                    let text = format!("approval {id} is not open here (answered already?)");
                    serving.host.publish(&HostLine::Notice { level: "warning".into(), text });
                }
            }
            Ok(AttacherLine::Prompt { text, steer }) if !text.trim().is_empty() => {
                let mode = if steer { Delivery::Steer } else { Delivery::Queue };
                let Some(input) = &serving.input else {
                    let text = "this session is a `keel exec` run: it takes no typed input \
                                (a script feeds one with `--input-stream`); watching only"
                        .to_owned();
                    serving.host.publish(&HostLine::Notice { level: "warning".into(), text });
                    continue;
                };
                if !input.send(text, mode) {
                    return;
                }
            }
            Ok(AttacherLine::Prompt { .. } | AttacherLine::Hello { .. }) => {}
            Err(_) => return,
        }
    }
}

/// Streams every event to attachers, then hands it on.
struct AttachSink {
    inner: Box<dyn EventSink>,
    host: AttachHost,
}

impl EventSink for AttachSink {
    fn emit(&mut self, event: RuntimeEvent) {
        if let Some(line) = super::attach_lines::line_of(&event) {
            self.host.publish(&line);
        }
        self.inner.emit(event);
    }
}

/// Asks the owner's approver and any attacher at once; the first answer
/// wins.
struct AttachApprover {
    inner: Box<dyn Approver>,
    host: AttachHost,
}

impl AttachApprover {
    async fn race(&mut self, call: &ToolCall, reason: &str, anew: Option<bool>) -> ApprovalAnswer {
        let (id, from_attacher) = self.host.open_approval(call, reason);
        let asking = match anew {
            None => self.inner.decide(call, reason),
            Some(always) => self.inner.ask_anew(call, reason, always),
        };
        let (answer, by) = tokio::select! {
            answer = asking => (answer, "owner"),
            Ok(answer) = from_attacher => (answer, "attacher"),
        };
        if by == "attacher" {
            self.inner.answered_elsewhere(&call.call_id);
        }
        self.host.settle(id, answer.approved, by);
        answer
    }
}

impl Approver for AttachApprover {
    fn decide<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(self.race(call, reason, None))
    }

    fn ask_anew<'a>(
        &'a mut self,
        call: &'a ToolCall,
        reason: &'a str,
        always: bool,
    ) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(self.race(call, reason, Some(always)))
    }

    fn take_plan_mode(&mut self) -> Option<ApprovalMode> {
        self.inner.take_plan_mode()
    }

    fn can_ask(&self) -> bool {
        self.inner.can_ask()
    }

    fn ask_user<'a>(
        &'a mut self,
        question: &'a str,
        choices: &'a [String],
    ) -> BoxFuture<'a, Option<String>> {
        self.inner.ask_user(question, choices)
    }

    fn raise_limit<'a>(&'a mut self, hit: &'a BudgetHit) -> BoxFuture<'a, Option<SpendLimits>> {
        self.inner.raise_limit(hit)
    }

    fn forget_always(&mut self, scope: &crate::policy::ApprovalScope) {
        self.inner.forget_always(scope);
    }

    fn answered_elsewhere(&mut self, call_id: &str) {
        self.inner.answered_elsewhere(call_id);
    }
}

#[cfg(test)]
#[path = "attach_host_tests.rs"]
mod tests;
