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
const READ_CHUNK: usize = 64 * 1024;

/// The captured text of one stream: all of it, or its head and tail with
/// the size of the gap between them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedStream {
    /// The start of the output (all of it when nothing was omitted).
    pub head: String,
    /// The end of the output; empty when nothing was omitted.
    pub tail: String,
    /// Bytes dropped between `head` and `tail`.
    pub omitted_bytes: u64,
}

impl CapturedStream {
    /// Whether any byte of the stream was dropped.
    pub fn truncated(&self) -> bool {
        self.omitted_bytes > 0
    }

    /// Bytes kept (head and tail).
    pub fn kept_len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kept_len() == 0 && self.omitted_bytes == 0
    }

    /// Head and tail joined by a marker line saying how much was omitted.
    pub fn text(&self) -> String {
        if self.omitted_bytes == 0 {
            return format!("{}{}", self.head, self.tail);
        }
        let newline = if self.head.is_empty() || self.head.ends_with('\n') { "" } else { "\n" };
        format!(
            "{}{newline}[... {} bytes omitted ...]\n{}",
            self.head, self.omitted_bytes, self.tail
        )
    }

    /// Adds a line of keel's own at the end (e.g. what the sandbox did
    /// after the command).
    pub fn append_note(&mut self, note: &str) {
        let end = if self.tail.is_empty() { &mut self.head } else { &mut self.tail };
        if !end.is_empty() && !end.ends_with('\n') {
            end.push('\n');
        }
        end.push_str(note);
        end.push('\n');
    }

    /// Shrinks to at most `budget` kept bytes (half head, half tail), adding
    /// what it drops to `omitted_bytes`; cuts only at char boundaries.
    pub fn fit_to(&self, budget: usize) -> CapturedStream {
        if self.kept_len() <= budget {
            return self.clone();
        }
        let whole = format!("{}{}", self.head, self.tail);
        let half = budget / 2;
        let head_end = floor_boundary(&self.head, half.min(self.head.len()));
        let tail_keep = budget - half;
        let tail_from = ceil_boundary(&whole, whole.len().saturating_sub(tail_keep).max(head_end));
        let kept = head_end + (whole.len() - tail_from);
        CapturedStream {
            head: whole[..head_end].to_owned(),
            tail: whole[tail_from..].to_owned(),
            omitted_bytes: self.omitted_bytes + (self.kept_len() - kept) as u64,
        }
    }
}

fn floor_boundary(text: &str, at: usize) -> usize {
    (0..=at).rev().find(|&index| text.is_char_boundary(index)).unwrap_or(0)
}

fn ceil_boundary(text: &str, at: usize) -> usize {
    (at..=text.len()).find(|&index| text.is_char_boundary(index)).unwrap_or(text.len())
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
        let mut head = self.head;
        let tail: Vec<u8> = self.tail.into_iter().collect();
        if self.omitted == 0 {
            // Contiguous: decode as one so no character is split in two.
            head.extend_from_slice(&tail);
            let head = String::from_utf8_lossy(&head).into_owned();
            return CapturedStream { head, tail: String::new(), omitted_bytes: 0 };
        }
        CapturedStream {
            head: String::from_utf8_lossy(&head).into_owned(),
            tail: String::from_utf8_lossy(&tail).into_owned(),
            omitted_bytes: self.omitted,
        }
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
        assert_eq!(out.head, "hello world");
        assert_eq!(out.text(), "hello world");
        assert!(!out.truncated());
    }

    #[test]
    fn keeps_head_and_tail_and_counts_the_middle() {
        let out = captured(8, &[b"0123456789", b"abcdefghij"]);
        assert_eq!(out.omitted_bytes, 12);
        assert_eq!(out.text(), "0123\n[... 12 bytes omitted ...]\nghij");
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

    #[test]
    fn fit_to_keeps_both_ends_and_counts_every_dropped_byte() {
        let out = captured(100, &["x".repeat(300).as_bytes()]);
        let fitted = out.fit_to(10);
        assert_eq!(fitted.kept_len(), 10);
        assert_eq!(fitted.omitted_bytes, 290);
        let small = captured(100, &[b"0123456789"]).fit_to(4);
        assert_eq!(small.text(), "01\n[... 6 bytes omitted ...]\n89");
        let unicode = captured(100, &["é".repeat(10).as_bytes()]).fit_to(5);
        assert_eq!(unicode.kept_len() as u64 + unicode.omitted_bytes, 20);
    }
}
