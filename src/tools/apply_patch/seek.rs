//! Applying the chunks of one `*** Update File:` to a file's text: finding
//! each chunk's old lines (exactly, then ignoring trailing whitespace, then
//! ignoring surrounding whitespace, then with Unicode punctuation folded to
//! ASCII, as Codex's `seek_sequence` does) and splicing in the new.
//!
//! Invariants: pure; never panics on any chunks and any text; chunks are
//! located in order, each after the previous one, except a pure addition (no
//! old lines), which Codex appends at the end of the file wherever it stands
//! in the patch; the replacements are therefore applied sorted by position
//! (Codex's `compute_replacements` sorts them too); the result always ends
//! with a newline (Codex's behaviour); the line ending of the file (LF or
//! CRLF) is kept for every line.

use super::parse::Chunk;

/// Why a chunk did not fit the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeekError {
    #[error("context line `{context}` was not found")]
    ContextNotFound { context: String },
    #[error(
        "these lines were not found (re-read the file and copy them exactly):\n{}",
        lines.join("\n")
    )]
    LinesNotFound { lines: Vec<String> },
}

/// The file's text after applying `chunks`.
pub fn apply_chunks(original: &str, chunks: &[Chunk]) -> Result<String, SeekError> {
    let crlf = original.contains("\r\n");
    let mut lines: Vec<&str> =
        original.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    if lines.last().is_some_and(|last| last.is_empty()) {
        lines.pop();
    }
    let mut replacements: Vec<Replacement> = Vec::new();
    let mut at = 0;
    for chunk in chunks {
        if let Some(context) = &chunk.context {
            let found = seek(&lines, std::slice::from_ref(context), at, false)
                .ok_or_else(|| SeekError::ContextNotFound { context: context.clone() })?;
            at = found + 1;
        }
        if chunk.old.is_empty() {
            replacements.push((lines.len(), 0, &chunk.new));
            continue;
        }
        let (start, old, new) = locate(&lines, chunk, at)
            .ok_or_else(|| SeekError::LinesNotFound { lines: chunk.old.clone() })?;
        replacements.push((start, old, new));
        at = start + old;
    }
    let ending = if crlf { "\r\n" } else { "\n" };
    let mut text = splice_sorted(&lines, replacements).join(ending);
    text.push_str(ending);
    Ok(text)
}

/// `lines` with each `(start, old, new)` replacement applied, in one pass.
/// A pure addition is recorded at the end of the file even when a later
/// chunk replaces lines before it, so the replacements are sorted first
/// (stably: two additions at the end keep their patch order); located
/// chunks never overlap, each starting after the previous one ends.
fn splice_sorted<'a>(lines: &[&'a str], mut replacements: Vec<Replacement<'a>>) -> Vec<&'a str> {
    replacements.sort_by_key(|(start, _, _)| *start);
    let mut result = Vec::with_capacity(lines.len());
    let mut cursor = 0;
    for (start, old, new) in replacements {
        let start = start.clamp(cursor, lines.len());
        result.extend_from_slice(&lines[cursor..start]);
        result.extend(new.iter().map(String::as_str));
        cursor = (start + old).min(lines.len());
    }
    result.extend_from_slice(&lines[cursor..]);
    result
}

/// Where a chunk's old lines start, how many there are, and what replaces them.
type Replacement<'a> = (usize, usize, &'a [String]);

/// Where the chunk's old lines are, how many there are, and what replaces
/// them; a trailing blank old line (an artefact of how models end chunks) is
/// dropped if the whole does not match.
fn locate<'c>(lines: &[&str], chunk: &'c Chunk, at: usize) -> Option<(usize, usize, &'c [String])> {
    if let Some(start) = seek(lines, &chunk.old, at, chunk.end_of_file) {
        return Some((start, chunk.old.len(), &chunk.new));
    }
    if chunk.old.last().is_some_and(String::is_empty) {
        let old = &chunk.old[..chunk.old.len() - 1];
        let new = match chunk.new.last() {
            Some(last) if last.is_empty() => &chunk.new[..chunk.new.len() - 1],
            _ => &chunk.new[..],
        };
        let start = seek(lines, old, at, chunk.end_of_file)?;
        return Some((start, old.len(), new));
    }
    None
}

/// The first index at or after `from` where `pattern` occurs, trying exact,
/// then trailing-whitespace-insensitive, then whitespace-insensitive, then
/// punctuation-folded matching (the first pass that fits anywhere wins). With `at_end`, the match is tried at the end of the file first.
fn seek(lines: &[&str], pattern: &[String], from: usize, at_end: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(from);
    }
    if pattern.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - pattern.len();
    let matchers: [fn(&str, &str) -> bool; 4] = [
        |a, b| a == b,
        |a, b| a.trim_end() == b.trim_end(),
        |a, b| a.trim() == b.trim(),
        |a, b| a.trim().chars().map(fold_punctuation).eq(b.trim().chars().map(fold_punctuation)),
    ];
    for same in matchers {
        let fits = |start: usize| pattern.iter().zip(&lines[start..]).all(|(p, l)| same(l, p));
        if at_end && last_start >= from && fits(last_start) {
            return Some(last_start);
        }
        if let Some(start) = (from..=last_start).find(|&start| fits(start)) {
            return Some(start);
        }
    }
    None
}

/// The ASCII character a typographic one stands for: models write `-`,
/// `'`, `"` and plain spaces where files hold dashes, curly quotes and
/// non-breaking spaces (and the other way round). Codex's list.
fn fold_punctuation(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(context: Option<&str>, old: &[&str], new: &[&str]) -> Chunk {
        Chunk {
            context: context.map(str::to_owned),
            old: old.iter().map(|s| (*s).to_owned()).collect(),
            new: new.iter().map(|s| (*s).to_owned()).collect(),
            end_of_file: false,
        }
    }

    #[test]
    fn replaces_in_order_and_ends_with_a_newline() {
        let out =
            apply_chunks("a\nb\nc\nb", &[chunk(None, &["b"], &["B"]), chunk(None, &["b"], &["X"])]);
        assert_eq!(out.as_deref(), Ok("a\nB\nc\nX\n"));
    }

    #[test]
    fn context_line_moves_the_search_start() {
        let out = apply_chunks("fn a\nx\nfn b\nx\n", &[chunk(Some("fn b"), &["x"], &["y"])]);
        assert_eq!(out.as_deref(), Ok("fn a\nx\nfn b\ny\n"));
    }

    #[test]
    fn whitespace_differences_are_tolerated_last() {
        let out = apply_chunks("  a  \nb\n", &[chunk(None, &["a"], &["c"])]);
        assert_eq!(out.as_deref(), Ok("c\nb\n"));
    }

    #[test]
    fn crlf_files_stay_crlf() {
        let out = apply_chunks("a\r\nb\r\n", &[chunk(None, &["a"], &["c", "d"])]);
        assert_eq!(out.as_deref(), Ok("c\r\nd\r\nb\r\n"));
    }

    #[test]
    fn end_of_file_prefers_the_last_match() {
        let mut eof = chunk(None, &["x"], &["y"]);
        eof.end_of_file = true;
        assert_eq!(apply_chunks("x\nm\nx\n", &[eof]).as_deref(), Ok("x\nm\ny\n"));
    }

    #[test]
    fn typographic_punctuation_matches_its_ascii_spelling_last() {
        let file = "a \u{2014} b\nsay \u{201C}hi\u{201D} and \u{2018}yo\u{2019}\nx\u{00A0}=\u{2009}1\n2 \u{2212} 1\n";
        let chunks = [
            chunk(None, &["a - b"], &["A"]),
            chunk(None, &["say \"hi\" and 'yo'"], &["S"]),
            chunk(None, &["x = 1", "2 - 1"], &["X"]),
        ];
        assert_eq!(apply_chunks(file, &chunks).as_deref(), Ok("A\nS\nX\n"));
        // The other way round: the patch is typographic, the file plain.
        let out = apply_chunks("a - b\n", &[chunk(None, &["a \u{2013} b"], &["c"])]);
        assert_eq!(out.as_deref(), Ok("c\n"));
        // An exact match later in the file wins over a folded one earlier.
        let out = apply_chunks("a \u{2014} b\na - b\n", &[chunk(None, &["a - b"], &["c"])]);
        assert_eq!(out.as_deref(), Ok("a \u{2014} b\nc\n"));
        // Context lines fold too; other characters never do.
        let out =
            apply_chunks("fn \u{201C}q\u{201D}\nx\n", &[chunk(Some("fn \"q\""), &["x"], &["y"])]);
        assert_eq!(out.as_deref(), Ok("fn \u{201C}q\u{201D}\ny\n"));
        let out = apply_chunks("caf\u{e9}\n", &[chunk(None, &["cafe"], &["y"])]);
        assert!(out.is_err(), "{out:?}");
    }

    #[test]
    fn missing_lines_are_an_error() {
        let out = apply_chunks("a\n", &[chunk(None, &["zzz"], &["y"])]);
        assert!(matches!(out, Err(SeekError::LinesNotFound { .. })), "{out:?}");
        let out = apply_chunks("a\n", &[chunk(Some("nope"), &["a"], &["y"])]);
        assert!(matches!(out, Err(SeekError::ContextNotFound { .. })), "{out:?}");
    }
}
