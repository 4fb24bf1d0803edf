//! The cap on one message from a stdio MCP server.
//!
//! rmcp's own line cap drops an oversized line and reads on, so the call
//! that line answered waits for its timeout (a minute by default) and the
//! model hears "no answer". [`FrameCap`] sits under rmcp's reader and
//! ends the stream instead: the server's stdout reads as an error once a
//! line passes the cap, rmcp closes the connection, the waiting call fails
//! at once, and [`Oversized`] lets keel say why rather than "closed".
//!
//! Invariant: no line longer than the cap is ever passed up, and nothing
//! past it is read; memory stays bounded by rmcp's buffer for one line.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// Set once a server's line passed the cap (shared with the connection).
#[derive(Debug, Clone, Default)]
pub struct Oversized(Arc<AtomicBool>);

impl Oversized {
    pub fn happened(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn mark(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A reader that fails once the bytes since the last newline pass `cap`.
pub struct FrameCap<R> {
    inner: R,
    cap: usize,
    since_newline: usize,
    oversized: Oversized,
}

impl<R> FrameCap<R> {
    pub fn new(inner: R, cap: usize, oversized: Oversized) -> Self {
        FrameCap { inner, cap, since_newline: 0, oversized }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for FrameCap<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.oversized.happened() {
            return Poll::Ready(Err(too_long(this.cap)));
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let read = &buf.filled()[before..];
        // The first piece extends the line already open; each later one
        // starts a line of its own; the last stays open.
        let mut open = this.since_newline;
        for (index, piece) in read.split(|byte| *byte == b'\n').enumerate() {
            open = if index == 0 { open.saturating_add(piece.len()) } else { piece.len() };
            if open > this.cap {
                this.oversized.mark();
                buf.set_filled(before);
                return Poll::Ready(Err(too_long(this.cap)));
            }
        }
        this.since_newline = open;
        Poll::Ready(Ok(()))
    }
}

fn too_long(cap: usize) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the server sent a message longer than {} MiB", cap / (1024 * 1024)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], cap: usize) -> (io::Result<Vec<u8>>, bool) {
        let oversized = Oversized::default();
        let mut reader = FrameCap::new(input, cap, oversized.clone());
        let mut out = Vec::new();
        let result = reader.read_to_end(&mut out).await.map(|_| out);
        (result, oversized.happened())
    }

    #[tokio::test]
    async fn lines_within_the_cap_pass_whole() {
        let (out, oversized) = read_all(b"12345\n1234\n123", 5).await;
        assert_eq!(out.unwrap(), b"12345\n1234\n123");
        assert!(!oversized);
    }

    #[tokio::test]
    async fn a_line_past_the_cap_ends_the_stream_and_is_marked() {
        let (out, oversized) = read_all(b"ok\n123456\nnever", 5).await;
        let error = out.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(oversized);
    }

    #[tokio::test]
    async fn a_long_line_split_across_reads_is_counted_whole() {
        // `&[u8]` reads everything at once; a chain of small reads splits
        // the line across polls.
        let oversized = Oversized::default();
        let chained = (&b"abc"[..]).chain(&b"def"[..]).chain(&b"\n"[..]);
        let mut reader = FrameCap::new(chained, 5, oversized.clone());
        let mut out = Vec::new();
        assert!(reader.read_to_end(&mut out).await.is_err());
        assert!(oversized.happened());
    }
}
