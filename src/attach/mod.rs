//! `keel attach ID` (L3, issue 40): a second terminal on a live session.
//! It connects to the owning keel's socket (`runtime/attach_host.rs`,
//! `runtime/attach_wire.rs`), prints the transcript so far and then what
//! happens, answers approvals and sends typed input; leaving (`/detach`,
//! Ctrl+D, Ctrl+C, or being killed) leaves the session running. A `keel
//! exec` run is watched only (its hello says it takes no input). When no
//! keel owns the session ([`Outcome::NoOwner`]: no socket, or one nobody
//! listens on) the caller resumes it as `keel resume ID` does.
//!
//! A plain line front end, not the TUI: the transcript and events are
//! lines on stdout (`render.rs`), input lines on stdin (`input.rs`). The
//! owning terminal keeps the full-screen views; a line mode is all a
//! second terminal needs to watch, answer and queue, and it works over any
//! pipe.
//!
//! Invariants: talks only to a socket that is the user's own (its owner
//! uid, then the peer's SO_PEERCRED uid, both checked) and says so when it
//! is not; `y`/`n` answer only the approval whose full text was printed
//! (the wire's `id` names it), and `y` with none open is refused, never
//! sent as a prompt; every text from the owner is made terminal-safe
//! before printing; lines are capped both ways (`attach_wire.rs`).

mod input;
mod render;

use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::mpsc;

use crate::runtime::attach_wire::{
    AttacherLine, HostLine, MAX_HOST_LINE, WIRE_VERSION, WireError, encode, parse, read_line,
    socket_path,
};

use input::Typed;

/// How an attach ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The user left; the session goes on.
    Detached,
    /// The owner closed the connection, saying why (the session ended).
    Closed(String),
    /// No keel owns the session now: resume it instead.
    NoOwner,
}

/// Failures of `keel attach`.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    #[error(
        "{path} is not keel's socket for this user (a {kind} owned by uid {uid}); not attaching"
    )]
    NotOurs { path: PathBuf, kind: &'static str, uid: u32 },
    #[error("the process on {path} runs as uid {uid}, not as you; not attaching")]
    Peer { path: PathBuf, uid: u32 },
    #[error("cannot reach the session's keel on {path}: {source}")]
    Connect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the session's keel refused: {0}")]
    Refused(String),
    #[error("the session's keel speaks attach protocol {0}, this one {WIRE_VERSION}")]
    Version(u32),
    #[error("the session's keel broke the protocol: {0}")]
    Wire(#[from] WireError),
}

/// Attaches this terminal to session `session_id` until the user leaves
/// or the session ends.
pub async fn run(keel_home: &Path, session_id: &str) -> Result<Outcome, AttachError> {
    let path = socket_path(keel_home, session_id);
    let Some(stream) = connect(&path).await? else { return Ok(Outcome::NoOwner) };
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let hello = encode(&AttacherLine::Hello { v: WIRE_VERSION });
    let said = write.write_all(hello.as_bytes()).await;
    said.map_err(|source| AttachError::Connect { path: path.clone(), source })?;
    let takes_input = match read_line(&mut reader, MAX_HOST_LINE).await? {
        None => return Ok(Outcome::NoOwner),
        Some(line) => match parse::<HostLine>(&line)? {
            HostLine::Hello { v, input, .. } if v == WIRE_VERSION => input,
            HostLine::Hello { v, .. } => return Err(AttachError::Version(v)),
            HostLine::Bye { reason } => return Err(AttachError::Refused(reason)),
            other => return Err(AttachError::Refused(format!("no hello but {other:?}"))),
        },
    };
    let mut out = std::io::stdout().lock();
    let _ = if takes_input {
        writeln!(
            out,
            "attached to {session_id}: type to queue a prompt, /steer TEXT, y/n for an approval, \
             /detach to leave (the session goes on)"
        )
    } else {
        writeln!(
            out,
            "attached to {session_id}, a `keel exec` run: watching only (it takes no typed \
             input and answers its own approvals); /detach or Ctrl+D to leave (the run goes on)"
        )
    };
    drop(out);
    let (lines_tx, mut lines) = mpsc::channel(64);
    tokio::spawn(read_host(reader, lines_tx));
    let mut typed = input::spawn_stdin();
    let mut shown = render::Screen::default();
    loop {
        tokio::select! {
            line = lines.recv() => match line {
                Some(Ok(HostLine::Bye { reason })) => return Ok(Outcome::Closed(reason)),
                Some(Ok(line)) => shown.show(&line),
                Some(Err(error)) => return Err(error.into()),
                None => return Ok(Outcome::Closed("the session's keel closed the connection".into())),
            },
            typed_line = typed.recv() => {
                let Some(text) = typed_line else { return Ok(Outcome::Detached) };
                match input::parse(&text, shown.open_approval()) {
                    Typed::Send(message) => {
                        if write.write_all(encode(&message).as_bytes()).await.is_err() {
                            return Ok(Outcome::Closed("the session's keel is gone".into()));
                        }
                        if let AttacherLine::Prompt { steer, .. } = message {
                            let when = if steer { "after the running tool batch" } else { "after the turn" };
                            shown.say(&format!("sent; the session takes it at its next step and runs it {when}"));
                        }
                    }
                    Typed::Say(text) => shown.say(&text),
                    Typed::Detach => return Ok(Outcome::Detached),
                    Typed::Nothing => {}
                }
            }
        }
    }
}

/// The owner's socket, checked to be the user's own; `None` when nobody
/// owns the session (no socket, or a stale one nobody listens on).
async fn connect(path: &Path) -> Result<Option<UnixStream>, AttachError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(AttachError::Connect { path: path.to_owned(), source }),
    };
    let me = rustix::process::geteuid().as_raw();
    if !meta.file_type().is_socket() || meta.uid() != me {
        let kind = if meta.file_type().is_socket() { "socket" } else { "file that is no socket" };
        return Err(AttachError::NotOurs { path: path.to_owned(), kind, uid: meta.uid() });
    }
    let stream = match UnixStream::connect(path).await {
        Ok(stream) => stream,
        // A socket file left by a keel that died.
        Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => return Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(AttachError::Connect { path: path.to_owned(), source }),
    };
    let peer = stream
        .peer_cred()
        .map_err(|source| AttachError::Connect { path: path.to_owned(), source })?;
    if peer.uid() != me {
        return Err(AttachError::Peer { path: path.to_owned(), uid: peer.uid() });
    }
    Ok(Some(stream))
}

/// Reads the owner's lines into `lines` until it closes or breaks the
/// protocol (then the error is the last thing sent).
async fn read_host(
    mut reader: BufReader<tokio::net::unix::OwnedReadHalf>,
    lines: mpsc::Sender<Result<HostLine, WireError>>,
) {
    loop {
        let line = match read_line(&mut reader, MAX_HOST_LINE).await {
            Ok(Some(line)) => parse::<HostLine>(&line),
            Ok(None) => return,
            Err(error) => Err(error),
        };
        let failed = line.is_err();
        if lines.send(line).await.is_err() || failed {
            return;
        }
    }
}
