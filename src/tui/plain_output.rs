//! The TUI's output to the terminal, with colour taken out when colour is
//! off (`NO_COLOR` set, or `TERM=dumb`).
//!
//! The theme already draws no colour then (`theme.rs`), but ratatui's
//! crossterm backend still resets the colours at the end of every frame
//! (`ESC[39m`, `ESC[49m`, `ESC[59m`) and around styled cells. This writer
//! sits between the backend and stdout and drops each colour parameter of
//! an SGR sequence (`ESC [ … m`: 30–49, 90–107, 58/59, and 38/48/58 with
//! their `5;n` or `2;r;g;b`), keeping the attributes (bold, reverse) and
//! every other sequence (cursor, screen) byte for byte.
//!
//! Invariants: with colour on it is a plain pass-through; a sequence split
//! across writes is held until it is complete (at most [`MAX_HELD`] bytes,
//! past which the bytes go out unchanged), so filtering never depends on
//! how the backend cuts its writes (`flush` passes on what is complete;
//! an incomplete sequence waits for its end).

use std::io::{self, Write};

/// Longest escape sequence held back while incomplete.
pub const MAX_HELD: usize = 64;

/// Stdout (or any writer) with colour parameters removed when `strip`.
pub struct PlainOutput<W: Write> {
    inner: W,
    strip: bool,
    /// An escape sequence begun and not yet complete.
    held: Vec<u8>,
}

impl<W: Write> PlainOutput<W> {
    pub fn new(inner: W, strip: bool) -> Self {
        Self { inner, strip, held: Vec::new() }
    }

    /// Takes in one byte; returns what to write now.
    fn feed(&mut self, byte: u8, out: &mut Vec<u8>) {
        if self.held.is_empty() {
            if byte == 0x1b {
                self.held.push(byte);
            } else {
                out.push(byte);
            }
            return;
        }
        self.held.push(byte);
        let complete = match self.held.as_slice() {
            [0x1b, b'['] => false,
            [0x1b, _] => true,
            [0x1b, b'[', .., last] => (0x40..=0x7e).contains(last),
            _ => true,
        };
        if complete {
            let sequence = std::mem::take(&mut self.held);
            out.extend(without_colour(&sequence));
        } else if self.held.len() >= MAX_HELD {
            out.append(&mut self.held);
        }
    }
}

/// An SGR sequence with its colour parameters removed (dropped whole when
/// nothing else is left); any other sequence as it is.
fn without_colour(sequence: &[u8]) -> Vec<u8> {
    let Some(params) = sequence.strip_prefix(b"\x1b[").and_then(|s| s.strip_suffix(b"m")) else {
        return sequence.to_vec();
    };
    let Ok(params) = std::str::from_utf8(params) else { return sequence.to_vec() };
    if params.is_empty() {
        return sequence.to_vec();
    }
    let mut kept = Vec::new();
    let mut parts = params.split([';', ':']);
    while let Some(part) = parts.next() {
        match part.parse::<u16>() {
            Ok(38 | 48 | 58) => {
                // 5;n or 2;r;g;b follow.
                let skip = match parts.next() {
                    Some("5") => 1,
                    Some("2") => 3,
                    _ => 0,
                };
                for _ in 0..skip {
                    parts.next();
                }
            }
            Ok(30..=37 | 39..=47 | 49 | 59 | 90..=97 | 100..=107) => {}
            _ => kept.push(part),
        }
    }
    if kept.is_empty() {
        return Vec::new();
    }
    format!("\x1b[{}m", kept.join(";")).into_bytes()
}

impl<W: Write> Write for PlainOutput<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.strip {
            return self.inner.write(buf);
        }
        let mut out = Vec::with_capacity(buf.len());
        for &byte in buf {
            self.feed(byte, &mut out);
        }
        self.inner.write_all(&out)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filtered(chunks: &[&[u8]]) -> Vec<u8> {
        let mut output = PlainOutput::new(Vec::new(), true);
        for chunk in chunks {
            output.write_all(chunk).unwrap();
        }
        output.inner
    }

    #[test]
    fn colour_goes_and_everything_else_stays() {
        let frame =
            b"\x1b[2;5Hhi\x1b[1m bold\x1b[39m\x1b[49m\x1b[59m\x1b[0m\x1b[38;5;8mgrey\x1b[?25h";
        assert_eq!(filtered(&[frame]), b"\x1b[2;5Hhi\x1b[1m bold\x1b[0mgrey\x1b[?25h".to_vec());
    }

    #[test]
    fn mixed_sgr_keeps_its_attributes() {
        assert_eq!(filtered(&[b"\x1b[1;31;48;2;1;2;3;7mx"]), b"\x1b[1;7mx".to_vec());
    }

    #[test]
    fn a_sequence_split_across_writes_is_still_filtered() {
        let frame: &[u8] = b"a\x1b[38;5;196mb\x1b[39mc";
        for cut in 0..frame.len() {
            let (one, two) = frame.split_at(cut);
            assert_eq!(filtered(&[one, two]), b"abc".to_vec(), "cut at {cut}");
        }
    }

    #[test]
    fn with_colour_on_bytes_pass_through() {
        let mut output = PlainOutput::new(Vec::new(), false);
        output.write_all(b"\x1b[31mred").unwrap();
        assert_eq!(output.inner, b"\x1b[31mred".to_vec());
    }
}
