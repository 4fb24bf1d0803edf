//! An incremental `text/event-stream` decoder: bytes in (in chunks of any
//! size), complete `(event, data)` pairs out.
//!
//! Invariants: the output depends only on the bytes, never on where the
//! chunks were cut (lines are split only at `\n`/`\r`, which never occur
//! inside a UTF-8 sequence, so text is decoded per complete line). Work is
//! linear in the input: each byte is scanned once and the buffer is
//! compacted once per chunk. No I/O, never panics. Memory is bounded: a
//! line, and the data of one event, may not pass the decoder's limit
//! ([`MAX_EVENT_BYTES`]); past it `push` fails with [`EventTooLarge`] and
//! nothing more of the line is kept, whatever a server sends.
//!
//! We decode ourselves rather than through `eventsource-stream`: that crate
//! re-copies its whole buffer after every line (quadratic in chunk size),
//! which made "split the capture at every byte" tests infeasible.

/// One dispatched server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` field, or `message` when there was none.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// The longest line, and the most data one event may carry. A Responses
/// `response.completed` event repeats the whole output, and a real one is
/// well under 1 MiB (128k tokens of text); 8 MiB is room for any real
/// response, not for a server that never ends a line.
pub(crate) const MAX_EVENT_BYTES: usize = 8 * 1024 * 1024;

/// A line or an event's data passed the decoder's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("one event passed {limit} bytes")]
pub(crate) struct EventTooLarge {
    pub limit: usize,
}

/// Decoder state between chunks.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    /// The most bytes one line, or one event's data, may have.
    limit: usize,
    /// Bytes of an unterminated line.
    partial: Vec<u8>,
    /// The previous line ended in `\r`: a leading `\n` belongs to it.
    after_cr: bool,
    /// At least one line was processed (the BOM is only stripped before).
    started: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::with_limit(MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    /// A decoder whose lines and events may have at most `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            partial: Vec::new(),
            after_cr: false,
            started: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
        }
    }

    /// Feeds one chunk, appending every event it completes to `out`. After
    /// an error the decoder is spent: the stream is to be abandoned.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        let mut rest = chunk;
        if self.after_cr {
            match rest.first() {
                Some(b'\n') => {
                    rest = &rest[1..];
                    self.after_cr = false;
                }
                Some(_) => self.after_cr = false,
                None => return Ok(()),
            }
        }
        while let Some(end) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let (line, tail) = rest.split_at(end);
            let ending = tail.first().copied();
            rest = tail.get(1..).unwrap_or_default();
            if ending == Some(b'\r') {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            self.check(self.partial.len().saturating_add(line.len()))?;
            if self.partial.is_empty() {
                self.line(line, out)?;
            } else {
                let mut joined = std::mem::take(&mut self.partial);
                joined.extend_from_slice(line);
                self.line(&joined, out)?;
                joined.clear();
                self.partial = joined;
            }
        }
        self.check(self.partial.len().saturating_add(rest.len()))?;
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Fails when `len` bytes would pass the limit, dropping what is kept.
    fn check(&mut self, len: usize) -> Result<(), EventTooLarge> {
        if len <= self.limit {
            return Ok(());
        }
        self.partial = Vec::new();
        self.data = String::new();
        Err(EventTooLarge { limit: self.limit })
    }

    /// Ends the stream, dispatching what is pending: an unterminated last
    /// line counts as a line (real captures end on `data: {…}` with no
    /// newline), and an event lacking its final blank line is dispatched.
    /// If the body was cut mid-line, that last event's data is truncated;
    /// the assembler treats unparsable data at EOF as a cut stream.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        let partial = std::mem::take(&mut self.partial);
        if !partial.is_empty() {
            self.line(&partial, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn line(&mut self, mut line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), EventTooLarge> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line.first() == Some(&b':') {
            return Ok(()); // comment
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            b"data" => {
                self.check(self.data.len().saturating_add(value.len()).saturating_add(1))?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
            }
            _ => {} // `id`, `retry` and unknown fields do not matter here
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        let event = if event.is_empty() { "message".to_owned() } else { event };
        out.push(SseEvent { event, data: std::mem::take(&mut self.data) });
    }
}

/// Decodes a whole body given as chunks (tests and replays).
#[cfg(test)]
pub(crate) fn decode_chunks<'a>(chunks: impl IntoIterator<Item = &'a [u8]>) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::default();
    let mut out = Vec::new();
    for chunk in chunks {
        decoder.push(chunk, &mut out).unwrap();
    }
    decoder.finish(&mut out).unwrap();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent { event: event.to_owned(), data: data.to_owned() }
    }

    #[test]
    fn decodes_fields_comments_and_multiline_data() {
        let body =
            b"\xEF\xBB\xBF: hi\nevent: a\ndata: {\"x\":1}  \n\ndata:one\ndata: two\nid: 7\n\n";
        assert_eq!(
            decode_chunks([&body[..]]),
            vec![ev("a", "{\"x\":1}  "), ev("message", "one\ntwo")]
        );
    }

    #[test]
    fn accepts_crlf_and_cr_line_endings_split_anywhere() {
        let body = b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r";
        let want = vec![ev("a", "1"), ev("b", "2")];
        for cut in 0..=body.len() {
            assert_eq!(decode_chunks([&body[..cut], &body[cut..]]), want, "cut at {cut}");
        }
    }

    #[test]
    fn keeps_multibyte_text_split_inside_a_character() {
        let body = "data: “é”\n\n".as_bytes();
        for cut in 0..=body.len() {
            assert_eq!(decode_chunks([&body[..cut], &body[cut..]]), vec![ev("message", "“é”")]);
        }
    }

    #[test]
    fn a_line_or_an_event_past_the_limit_fails_wherever_the_chunks_are_cut() {
        let mut out = Vec::new();
        // One endless line, in small chunks: the limit stops it.
        let mut decoder = SseDecoder::with_limit(16);
        let chunks = [&b"data: 0123"[..], b"456789", b"abcdef"];
        let results: Vec<_> = chunks.iter().map(|c| decoder.push(c, &mut out)).collect();
        assert_eq!(results[..2], [Ok(()), Ok(())]);
        assert_eq!(results[2], Err(EventTooLarge { limit: 16 }));
        assert!(decoder.partial.capacity() == 0, "nothing of the line is kept");
        // A whole line past the limit in one chunk.
        let long = b"data: 0123456789abcdef\n";
        assert!(SseDecoder::with_limit(16).push(long, &mut out).is_err());
        // Short lines whose data adds up past the limit in one event.
        let mut decoder = SseDecoder::with_limit(16);
        assert!(decoder.push(b"data: 01234567\n", &mut out).is_ok());
        assert!(decoder.push(b"data: 01234567\n", &mut out).is_err());
        // Lines at the limit, and events that each fit, pass.
        let fits = b"data: 0123456789\n\ndata: 0123456789\n\n";
        let mut decoder = SseDecoder::with_limit(16);
        assert_eq!(decoder.push(fits, &mut out), Ok(()));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn flushes_the_unterminated_tail_at_eof() {
        let cut = decode_chunks([&b"data: {\"a\":1}\n\ndata: {\"b\""[..]]);
        assert_eq!(cut, vec![ev("message", "{\"a\":1}"), ev("message", "{\"b\"")]);
        assert_eq!(decode_chunks([&b"data: [DONE]\n"[..]]), vec![ev("message", "[DONE]")]);
        assert!(decode_chunks([&b"event: x\n\n\n"[..]]).is_empty());
    }
}
