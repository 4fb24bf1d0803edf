//! The wire of `keel attach` (issue 40): JSON lines over the session's Unix
//! socket, one object per line, each with a `type`. The owner (the process
//! that holds the log's one writer, `attach_host.rs`) sends [`HostLine`]s;
//! an attacher (the front end in `src/attach/`) sends [`AttacherLine`]s. Both sides open
//! with `hello` carrying [`WIRE_VERSION`]; a side that sees another version
//! says so and closes.
//!
//! Invariants: a line is at most [`MAX_HOST_LINE`] bytes from the owner and
//! [`MAX_ATTACHER_LINE`] from an attacher; [`read_line`] never buffers more
//! than its cap, and a longer line ends the connection
//! ([`WireError::TooLong`]), so neither side can make the other grow without
//! bound. Text on the wire is untrusted on both sides: the attacher makes it
//! terminal-safe before printing; the owner treats a prompt as typed input
//! and an answer only as the answer to the approval it names.
//! Where the socket lives: [`socket_path`] (`$KEEL_HOME/attach/ID.sock`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt};

/// The protocol's version; both `hello`s carry it.
pub const WIRE_VERSION: u32 = 1;
/// The longest line the owner sends (an approval's full text fits; a
/// larger one is announced without its text).
pub const MAX_HOST_LINE: usize = 1 << 20;
/// The longest line an attacher may send (a prompt of 16 KiB).
pub const MAX_ATTACHER_LINE: usize = 16 << 10;

fn takes_input() -> bool {
    true
}

/// What the owner sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostLine {
    Hello {
        v: u32,
        session_id: String,
        /// The owning process.
        pid: u32,
        /// Whether typed text is taken (a `keel exec` run takes none: its
        /// attachers watch). Absent from older owners: taken.
        #[serde(default = "takes_input")]
        input: bool,
    },
    /// A piece of the transcript so far (Markdown, as `keel export`).
    Transcript {
        text: String,
    },
    TurnStarted {
        turn: u32,
    },
    /// A prompt or queued input reached the model.
    User {
        text: String,
    },
    /// Input typed in some terminal waits for delivery.
    Queued {
        id: u64,
        text: String,
        steer: bool,
    },
    Assistant {
        text: String,
    },
    ToolStarted {
        call_id: String,
        name: String,
        text: String,
    },
    ToolFinished {
        call_id: String,
        name: String,
        ok: bool,
        output: String,
    },
    /// A call waits for approval; `text` is `display::approval_text` in
    /// full, `None` when it is too large for a line or cannot be answered
    /// here (a plan review): then only the owning terminal answers it.
    Approval {
        id: u64,
        call_id: String,
        tool: String,
        reason: String,
        text: Option<String>,
    },
    /// Approval `id` was answered (`by`: `owner` or `attacher`).
    Settled {
        id: u64,
        approved: bool,
        by: String,
    },
    Notice {
        level: String,
        text: String,
    },
    TurnEnded {
        turn: u32,
        outcome: String,
    },
    /// The owner closes this connection (the session ended, the attacher
    /// fell behind, a protocol error).
    Bye {
        reason: String,
    },
}

/// What an attacher sends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AttacherLine {
    Hello {
        v: u32,
    },
    /// The answer to approval `id` (a "yes" counts once).
    Answer {
        id: u64,
        approve: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// Typed input: queued for after the turn, or a steer into it.
    Prompt {
        text: String,
        steer: bool,
    },
}

/// Failures reading or writing the wire.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("a line longer than {cap} bytes")]
    TooLong { cap: usize },
    #[error("a line that is not a message of this protocol: {0}")]
    Malformed(#[source] serde_json::Error),
    #[error("the connection failed: {0}")]
    Io(#[from] std::io::Error),
}

/// Where session `id`'s owner listens.
pub fn socket_path(keel_home: &Path, session_id: &str) -> PathBuf {
    attach_dir(keel_home).join(format!("{session_id}.sock"))
}

/// The folder of the sockets (0700).
pub fn attach_dir(keel_home: &Path) -> PathBuf {
    keel_home.join("attach")
}

/// Reads one line of at most `cap` bytes (without its `\n`); `None` at a
/// clean end of stream. Never holds more than `cap` bytes.
pub async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    cap: usize,
) -> Result<Option<Vec<u8>>, WireError> {
    let mut line = Vec::new();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (taken, done) = match available.iter().position(|&byte| byte == b'\n') {
            Some(at) => (at, true),
            None => (available.len(), false),
        };
        if line.len() + taken > cap {
            return Err(WireError::TooLong { cap });
        }
        line.extend_from_slice(&available[..taken]);
        reader.consume(if done { taken + 1 } else { taken });
        if done {
            return Ok(Some(line));
        }
    }
}

/// Parses one line as `T`.
pub fn parse<T: serde::de::DeserializeOwned>(line: &[u8]) -> Result<T, WireError> {
    serde_json::from_slice(line).map_err(WireError::Malformed)
}

/// `message` as one line with its `\n`.
pub fn encode<T: Serialize>(message: &T) -> String {
    // Our own enums of strings and numbers always serialize.
    let mut line = serde_json::to_string(message).unwrap_or_default();
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_read_up_to_their_cap_and_no_further() {
        let mut input: &[u8] = b"{\"a\":1}\nshort\n";
        assert_eq!(read_line(&mut input, 8).await.unwrap().unwrap(), b"{\"a\":1}");
        assert_eq!(read_line(&mut input, 8).await.unwrap().unwrap(), b"short");
        assert!(read_line(&mut input, 8).await.unwrap().is_none());
        let long = vec![b'x'; 100];
        let mut input: &[u8] = &long;
        assert!(matches!(read_line(&mut input, 99).await, Err(WireError::TooLong { cap: 99 })));
        // A last line without its newline still counts.
        let mut input: &[u8] = b"tail";
        assert_eq!(read_line(&mut input, 8).await.unwrap().unwrap(), b"tail");
    }

    #[test]
    fn messages_round_trip_with_their_type() {
        let line = encode(&AttacherLine::Answer { id: 3, approve: true, note: None });
        assert_eq!(line, "{\"type\":\"answer\",\"id\":3,\"approve\":true}\n");
        let back: AttacherLine = parse(line.trim_end().as_bytes()).unwrap();
        assert_eq!(back, AttacherLine::Answer { id: 3, approve: true, note: None });
        assert!(parse::<HostLine>(b"{\"type\":\"nope\"}").is_err());
    }
}
