//! [`TerminalText`]: what a program wrote to a pseudo-terminal, turned into
//! plain text for the model as it comes (background processes started with
//! a terminal, [`super::background`]).
//!
//! Invariants: pure (no I/O) and streaming: a sequence split across chunks
//! is recognised whole, so feeding the bytes in any split gives the same
//! text; its state is a few bytes whatever it is fed (a never-ending OSC
//! string is dropped as it comes, never buffered); output never holds ESC
//! nor any C0 control but `\n` and `\t`. What it does:
//! - CSI sequences (`ESC [` … final byte: colours, cursor moves, erases),
//!   OSC strings (`ESC ]` … BEL or `ESC \`: titles, hyperlinks' targets),
//!   DCS/SOS/PM/APC strings (`ESC P`, `X`, `^`, `_` … `ESC \`) and
//!   two-byte escapes (`ESC (B`, `ESC =`, `ESC 7` …) are removed;
//! - CR-LF (and CR CR LF) becomes LF; a lone CR (a progress bar redrawing
//!   its line) becomes LF too, so each state is a line;
//! - backspace, BEL and the other C0 controls are removed. Bytes at or
//!   above 0x80 pass (UTF-8 text; C1 controls are not recognised, as
//!   they collide with UTF-8's continuation bytes).

/// Where the filter is inside an escape sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Text,
    /// After ESC.
    Escape,
    /// After ESC and intermediate bytes (0x20–0x2F): waits for a final.
    EscapeIntermediate,
    /// Inside `ESC [`: parameters and intermediates until a final byte.
    Csi,
    /// Inside an OSC string: until BEL or ST (`ESC \`).
    Osc,
    /// Inside a DCS/SOS/PM/APC string: until ST.
    Str,
    /// An ESC inside an OSC or other string: `\` ends it.
    StrEscape,
}

/// The streaming filter (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct TerminalText {
    state: State,
    /// A CR was seen and not yet turned into a line end.
    pending_cr: bool,
}

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

impl TerminalText {
    pub fn new() -> Self {
        Self::default()
    }

    /// The plain text of `bytes`, given everything fed before.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bytes.len());
        for &byte in bytes {
            self.step(byte, &mut out);
        }
        out
    }

    fn step(&mut self, byte: u8, out: &mut Vec<u8>) {
        match self.state {
            State::Text => self.text(byte, out),
            State::Escape => {
                self.state = match byte {
                    b'[' => State::Csi,
                    b']' => State::Osc,
                    b'P' | b'X' | b'^' | b'_' => State::Str,
                    0x20..=0x2f => State::EscapeIntermediate,
                    // A second ESC starts over; a control aborts.
                    ESC => State::Escape,
                    _ => State::Text,
                };
            }
            State::EscapeIntermediate => {
                if !(0x20..=0x2f).contains(&byte) {
                    self.state = if byte == ESC { State::Escape } else { State::Text };
                }
            }
            State::Csi => match byte {
                0x40..=0x7e => self.state = State::Text,
                ESC => self.state = State::Escape,
                // CAN and SUB abort a sequence.
                0x18 | 0x1a => self.state = State::Text,
                _ => {}
            },
            State::Osc | State::Str => match byte {
                BEL if self.state == State::Osc => self.state = State::Text,
                ESC => self.state = State::StrEscape,
                0x18 | 0x1a => self.state = State::Text,
                _ => {}
            },
            State::StrEscape => match byte {
                b'\\' => self.state = State::Text,
                ESC => {}
                // Not ST: the string was left open; a new escape begins.
                _ => {
                    self.state = State::Escape;
                    self.step(byte, out);
                }
            },
        }
    }

    fn text(&mut self, byte: u8, out: &mut Vec<u8>) {
        match byte {
            b'\r' => self.pending_cr = true,
            b'\n' => {
                self.pending_cr = false;
                out.push(b'\n');
            }
            ESC => self.state = State::Escape,
            b'\t' => self.printable(byte, out),
            0x00..=0x1f | 0x7f => {}
            _ => self.printable(byte, out),
        }
    }

    fn printable(&mut self, byte: u8, out: &mut Vec<u8>) {
        if std::mem::take(&mut self.pending_cr) {
            out.push(b'\n');
        }
        out.push(byte);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(bytes: &[u8]) -> String {
        String::from_utf8(TerminalText::new().feed(bytes)).unwrap()
    }

    #[test]
    fn colours_titles_and_cursor_moves_are_removed_and_crlf_is_lf() {
        let soup =
            b"\x1b]0;python3\x07\x1b[?2004h>>> print(6*7)\r\n\x1b[1;32m42\x1b[0m\r\n\x1b[K>>> ";
        assert_eq!(plain(soup), ">>> print(6*7)\n42\n>>> ");
    }

    #[test]
    fn strings_end_at_st_and_two_byte_escapes_go() {
        let text =
            b"a\x1b]8;;http://127.0.0.1/\x1b\\link\x1b]8;;\x1b\\b\x1b(Bc\x1b=d\x1bPq#0\x1b\\e";
        assert_eq!(plain(text), "alinkbcde");
    }

    #[test]
    fn a_lone_cr_makes_a_line_and_controls_go() {
        assert_eq!(plain(b"10%\r20%\r\r\n\x07ok\x08\t!\n"), "10%\n20%\nok\t!\n");
        assert_eq!(plain("héllo ✓\r\n".as_bytes()), "héllo ✓\n");
    }

    #[test]
    fn any_split_gives_the_same_text() {
        let soup: &[u8] = b"\x1b]0;t\x07x\x1b[38;5;196mred\x1b[0m\r\ny\x1bP1\x1b\\z\r\n";
        let whole = plain(soup);
        assert_eq!(whole, "xred\nyz\n");
        for cut in 0..soup.len() {
            let mut filter = TerminalText::new();
            let mut out = filter.feed(&soup[..cut]);
            out.extend(filter.feed(&soup[cut..]));
            assert_eq!(String::from_utf8(out).unwrap(), whole, "cut at {cut}");
        }
    }

    #[test]
    fn an_endless_string_is_dropped_not_kept() {
        let mut filter = TerminalText::new();
        let mut endless = b"\x1b]0;".to_vec();
        endless.extend(std::iter::repeat_n(b'x', 100_000));
        assert!(filter.feed(&endless).is_empty());
        assert_eq!(filter.feed(b"\x07after"), b"after");
    }
}
