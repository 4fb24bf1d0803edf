//! Parser for Codex's patch format: `*** Begin Patch`, then `*** Add File:`,
//! `*** Delete File:` and `*** Update File:` (with an optional `*** Move to:`
//! and `@@` chunks of ` `/`-`/`+` lines, optionally closed by
//! `*** End of File`), then `*** End Patch`.
//!
//! Invariants: pure (no filesystem); never panics on any input; markers are
//! recognised with surrounding whitespace trimmed (models pad them), while
//! chunk lines keep their bytes. Errors name the 1-based line number.
//!
//! It lives in `protocol` (L0) because two readers must agree on it: the
//! `apply_patch` tool applies what it parses, and policy judges every
//! path it names (Add, Delete, Update and `Move to`); one parser means
//! policy never judges a different patch than the one that runs.

use thiserror::Error;

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File: ";
const DELETE: &str = "*** Delete File: ";
const UPDATE: &str = "*** Update File: ";
const MOVE_TO: &str = "*** Move to: ";
const END_OF_FILE: &str = "*** End of File";

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hunk {
    Add { path: String, contents: String },
    Delete { path: String },
    Update { path: String, move_to: Option<String>, chunks: Vec<Chunk> },
}

/// One `@@` chunk of an update: replace `old` with `new`, after the line
/// `context` (if any), at the end of the file when `end_of_file`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunk {
    pub context: Option<String>,
    pub old: Vec<String>,
    pub new: Vec<String>,
    pub end_of_file: bool,
}

/// Why a patch could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ParseError {
    #[error("the first line of the patch must be `{BEGIN}`")]
    MissingBegin,
    #[error("the last line of the patch must be `{END}`")]
    MissingEnd,
    #[error("the patch contains no file operation; nothing was changed")]
    Empty,
    #[error(
        "line {line}: `{text}` is not a valid hunk header; valid headers are `*** Add File: PATH`, \
         `*** Delete File: PATH` and `*** Update File: PATH`"
    )]
    InvalidHeader { line: usize, text: String },
    #[error("line {line}: update of `{path}` has no `@@` chunk; say which lines change")]
    EmptyUpdate { line: usize, path: String },
    #[error(
        "line {line}: `{text}` is not a chunk line; chunk lines start with ' ' (context), \
         '-' (remove) or '+' (add)"
    )]
    InvalidChunkLine { line: usize, text: String },
    #[error("line {line}: the operation names no path")]
    MissingPath { line: usize },
}

/// Parses a whole patch into its operations, in order.
pub fn parse(text: &str) -> Result<Vec<Hunk>, ParseError> {
    let lines: Vec<&str> = text.trim().lines().collect();
    match lines.first() {
        Some(first) if first.trim() == BEGIN => {}
        _ => return Err(ParseError::MissingBegin),
    }
    let last = lines.len() - 1;
    if last == 0 || lines[last].trim() != END {
        return Err(ParseError::MissingEnd);
    }
    let mut cursor = Cursor { lines: &lines[..last], at: 1 };
    let mut hunks = Vec::new();
    while cursor.at < cursor.lines.len() {
        hunks.push(cursor.hunk()?);
    }
    if hunks.is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(hunks)
}

/// The lines between the markers and the index of the next one to read.
struct Cursor<'a> {
    lines: &'a [&'a str],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.at).copied()
    }

    /// The 1-based line number of the current line in the patch.
    fn line_number(&self) -> usize {
        self.at + 1
    }

    fn hunk(&mut self) -> Result<Hunk, ParseError> {
        let line = self.line_number();
        let text = self.peek().unwrap_or_default();
        let header = text.trim();
        self.at += 1;
        if let Some(path) = header.strip_prefix(ADD) {
            return Ok(Hunk::Add { path: path_of(path, line)?, contents: self.added_lines() });
        }
        if let Some(path) = header.strip_prefix(DELETE) {
            return Ok(Hunk::Delete { path: path_of(path, line)? });
        }
        if let Some(path) = header.strip_prefix(UPDATE) {
            return self.update(path_of(path, line)?, line);
        }
        Err(ParseError::InvalidHeader { line, text: text.to_owned() })
    }

    fn added_lines(&mut self) -> String {
        let mut contents = String::new();
        while let Some(added) = self.peek().and_then(|line| line.strip_prefix('+')) {
            contents.push_str(added);
            contents.push('\n');
            self.at += 1;
        }
        contents
    }

    fn update(&mut self, path: String, line: usize) -> Result<Hunk, ParseError> {
        let mut move_to = None;
        if let Some(target) = self.peek().and_then(|text| text.trim().strip_prefix(MOVE_TO)) {
            move_to = Some(path_of(target, self.line_number())?);
            self.at += 1;
        }
        let mut chunks = Vec::new();
        while let Some(text) = self.peek() {
            if is_header(text) {
                break;
            }
            if text.trim().is_empty() && self.next_is_header_or_end() {
                // A blank line between operations.
                self.at += 1;
                continue;
            }
            chunks.push(self.chunk(chunks.is_empty())?);
        }
        if chunks.is_empty() {
            return Err(ParseError::EmptyUpdate { line, path });
        }
        Ok(Hunk::Update { path, move_to, chunks })
    }

    fn next_is_header_or_end(&self) -> bool {
        self.lines.get(self.at + 1).is_none_or(|next| is_header(next))
    }

    /// One chunk; the first of a file may leave out its `@@` line.
    fn chunk(&mut self, first: bool) -> Result<Chunk, ParseError> {
        let mut chunk = Chunk::default();
        let text = self.peek().unwrap_or_default();
        if text.trim_end() == "@@" {
            self.at += 1;
        } else if let Some(context) = text.strip_prefix("@@ ") {
            chunk.context = Some(context.to_owned());
            self.at += 1;
        } else if !first {
            let line = self.line_number();
            return Err(ParseError::InvalidChunkLine { line, text: text.to_owned() });
        }
        let start = self.at;
        while let Some(text) = self.peek() {
            if text.trim() == END_OF_FILE {
                chunk.end_of_file = true;
                self.at += 1;
                break;
            }
            if is_header(text) || (self.at > start && text.starts_with("@@")) {
                break;
            }
            match text.chars().next() {
                None => push_both(&mut chunk, ""),
                Some(' ') => push_both(&mut chunk, &text[1..]),
                Some('-') => chunk.old.push(text[1..].to_owned()),
                Some('+') => chunk.new.push(text[1..].to_owned()),
                Some(_) => {
                    let line = self.line_number();
                    return Err(ParseError::InvalidChunkLine { line, text: text.to_owned() });
                }
            }
            self.at += 1;
        }
        if self.at == start {
            let line = self.line_number();
            let text = self.peek().unwrap_or_default().to_owned();
            return Err(ParseError::InvalidChunkLine { line, text });
        }
        Ok(chunk)
    }
}

fn push_both(chunk: &mut Chunk, line: &str) {
    chunk.old.push(line.to_owned());
    chunk.new.push(line.to_owned());
}

fn is_header(text: &str) -> bool {
    let text = text.trim();
    [ADD, DELETE, UPDATE].iter().any(|prefix| text.starts_with(prefix))
        || (text.starts_with("*** ") && text.ends_with(" File:"))
        || (text.starts_with("*** ") && text.contains(" File: "))
}

fn path_of(raw: &str, line: usize) -> Result<String, ParseError> {
    let path = raw.trim();
    if path.is_empty() { Err(ParseError::MissingPath { line }) } else { Ok(path.to_owned()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patch(body: &str) -> String {
        format!("*** Begin Patch\n{body}*** End Patch\n")
    }

    #[test]
    fn parses_every_operation() {
        let text = patch(
            "*** Add File: a.txt\n+one\n+two\n*** Delete File: b.txt\n*** Update File: c.txt\n\
             *** Move to: d.txt\n@@ fn main\n ctx\n-old\n+new\n*** End of File\n",
        );
        let hunks = parse(&text).unwrap();
        assert_eq!(hunks.len(), 3);
        assert_eq!(hunks[0], Hunk::Add { path: "a.txt".into(), contents: "one\ntwo\n".into() });
        assert_eq!(hunks[1], Hunk::Delete { path: "b.txt".into() });
        let Hunk::Update { path, move_to, chunks } = &hunks[2] else { panic!("{hunks:?}") };
        assert_eq!((path.as_str(), move_to.as_deref()), ("c.txt", Some("d.txt")));
        assert_eq!(chunks[0].context.as_deref(), Some("fn main"));
        assert_eq!(chunks[0].old, ["ctx", "old"]);
        assert_eq!(chunks[0].new, ["ctx", "new"]);
        assert!(chunks[0].end_of_file);
    }

    #[test]
    fn first_chunk_may_omit_its_header() {
        let hunks = parse(&patch("*** Update File: f\n-a\n+b\n@@\n-c\n+d\n")).unwrap();
        let Hunk::Update { chunks, .. } = &hunks[0] else { panic!("{hunks:?}") };
        assert_eq!(chunks.len(), 2);
    }

    #[test]
    fn rejects_malformed_patches() {
        assert_eq!(parse(""), Err(ParseError::MissingBegin));
        assert_eq!(parse("*** Begin Patch\n"), Err(ParseError::MissingEnd));
        assert_eq!(parse(&patch("")), Err(ParseError::Empty));
        let bad = parse(&patch("*** Frobnicate File: foo\n"));
        assert!(matches!(bad, Err(ParseError::InvalidHeader { line: 2, .. })), "{bad:?}");
        let empty = parse(&patch("*** Update File: foo\n"));
        assert!(matches!(empty, Err(ParseError::EmptyUpdate { line: 2, .. })), "{empty:?}");
        let junk = parse(&patch("*** Update File: foo\n@@\n-a\nxyz\n"));
        assert!(matches!(junk, Err(ParseError::InvalidChunkLine { line: 5, .. })), "{junk:?}");
    }

    #[test]
    fn never_panics_on_fragments() {
        let text =
            patch("*** Update File: f\n@@ c\n-a\n+b\n*** End of File\n*** Add File: g\n+x\n");
        for end in 0..=text.len() {
            if text.is_char_boundary(end) {
                let _ = parse(&text[..end]);
            }
        }
    }
}
