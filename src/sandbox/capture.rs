//! Bounded capture of one output stream: keeps the first and the last bytes
//! of what a process wrote and counts what fell in between.
//!
//! Invariants: a [`BoundedCapture`] never holds more than its limit (head
//! half plus tail half), however much the process writes; `omitted` counts
//! exactly the bytes that were dropped, so `kept + omitted == total`.

use std::collections::VecDeque;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_util::sync::CancellationToken;

/// Read buffer size; one allocation per stream, reused for every read.
const READ_CHUNK: usize = 8 * 1024;

/// The captured text of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedStream {
    /// Head and tail of the output (lossy UTF-8); when bytes were omitted a
    /// marker line between them says how many.
    pub text: String,
    /// Bytes dropped from the middle of the output.
    pub omitted_bytes: u64,
}

impl CapturedStream {
    /// Whether any byte of the stream was dropped.
    pub fn truncated(&self) -> bool {
        self.omitted_bytes > 0
    }
}

/// Keeps the first `limit / 2` and the last `limit - limit / 2` bytes.
#[derive(Debug)]
pub(crate) struct BoundedCapture {
    head: Vec<u8>,
    head_limit: usize,
    tail: VecDeque<u8>,
    tail_limit: usize,
    omitted: u64,
}

impl BoundedCapture {
    pub(crate) fn new(limit: usize) -> Self {
        let head_limit = limit / 2;
        Self {
            head: Vec::new(),
            head_limit,
            tail: VecDeque::new(),
            tail_limit: limit - head_limit,
            omitted: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_limit.saturating_sub(self.head.len());
        let (to_head, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(to_head);
        bytes = rest;
        if bytes.len() > self.tail_limit {
            let skip = bytes.len() - self.tail_limit;
            self.omitted += (skip + self.tail.len()) as u64;
            self.tail.clear();
            bytes = &bytes[skip..];
        }
        let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_limit);
        self.tail.drain(..overflow);
        self.omitted += overflow as u64;
        self.tail.extend(bytes);
    }

    pub(crate) fn finish(self) -> CapturedStream {
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        if self.omitted > 0 {
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&format!("[... {} bytes omitted ...]\n", self.omitted));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        text.push_str(&String::from_utf8_lossy(&tail));
        CapturedStream { text, omitted_bytes: self.omitted }
    }
}

/// Reads `reader` to its end (or until `stop` fires) into a bounded capture.
/// Read errors end the capture early; what was read so far is kept.
pub(crate) async fn capture<R>(
    mut reader: R,
    limit: usize,
    stop: CancellationToken,
) -> CapturedStream
where
    R: AsyncRead + Unpin,
{
    let mut capture = BoundedCapture::new(limit);
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let read = tokio::select! {
            read = reader.read(&mut buf) => read,
            () = stop.cancelled() => break,
        };
        match read {
            Ok(0) | Err(_) => break,
            Ok(n) => capture.push(&buf[..n]),
        }
    }
    capture.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn captured(limit: usize, chunks: &[&[u8]]) -> CapturedStream {
        let mut capture = BoundedCapture::new(limit);
        for chunk in chunks {
            capture.push(chunk);
        }
        capture.finish()
    }

    #[test]
    fn small_output_is_kept_whole() {
        let out = captured(16, &[b"hello ", b"world"]);
        assert_eq!(out.text, "hello world");
        assert!(!out.truncated());
    }

    #[test]
    fn keeps_head_and_tail_and_counts_the_middle() {
        let out = captured(8, &[b"0123456789", b"abcdefghij"]);
        assert_eq!(out.omitted_bytes, 12);
        assert_eq!(out.text, "0123\n[... 12 bytes omitted ...]\nghij");
    }

    #[test]
    fn byte_at_a_time_matches_one_chunk() {
        let data: Vec<u8> = (0..200u8).collect();
        let whole = captured(10, &[&data]);
        let mut capture = BoundedCapture::new(10);
        for byte in &data {
            capture.push(std::slice::from_ref(byte));
        }
        assert_eq!(capture.finish(), whole);
        assert_eq!(whole.omitted_bytes, 190);
    }
}
