//! The unified diff shown in `edit_file` and `write_file` results.
//!
//! Invariants: the text is what `similar` renders for the whole files
//! (same hunks, same line numbers; where repeated lines make the alignment
//! ambiguous, an equally valid one), but only the changed window plus
//! [`DIFF_CONTEXT`] lines around it is diffed, so a one-line edit of a 50 MB
//! file costs a prefix/suffix scan, not a diff of a million lines; the
//! result is cut at [`MAX_DIFF_BYTES`] on a char boundary with a note.

use std::path::Path;
use std::time::Duration;

use similar::TextDiff;

/// The unified diff in a result is cut after this many bytes.
pub const MAX_DIFF_BYTES: usize = 16 * 1024;
/// Lines of context around each change.
pub const DIFF_CONTEXT: usize = 3;
/// Diffing is worst-case quadratic (think `replace_all` on every line of a
/// big file); past this deadline `similar` settles for a coarser diff.
const DIFF_TIMEOUT: Duration = Duration::from_millis(200);
/// Bytes compared at a time while looking for the common prefix/suffix.
const SCAN_BLOCK: usize = 4096;

/// A unified diff of `before` → `after` labelled with `rel`, and whether it
/// was cut.
pub fn unified_diff(rel: &Path, before: &str, after: &str) -> (String, bool) {
    let (skipped, before_window, after_window) = window(before, after);
    let rel = rel.to_string_lossy();
    let text = TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before_window, after_window)
        .unified_diff()
        .context_radius(DIFF_CONTEXT)
        .header(&format!("a/{rel}"), &format!("b/{rel}"))
        .to_string();
    let mut text = shift_hunk_headers(&text, skipped);
    if text.len() <= MAX_DIFF_BYTES {
        return (text, false);
    }
    let cut = (0..=MAX_DIFF_BYTES).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
    text.truncate(cut);
    text.push_str("\n[diff cut; read the file to see the rest of the change]\n");
    (text, true)
}

/// The parts of `before` and `after` that differ, widened to whole lines
/// plus [`DIFF_CONTEXT`] lines each side, and how many lines precede them.
fn window<'a>(before: &'a str, after: &'a str) -> (usize, &'a str, &'a str) {
    let (a, b) = (before.as_bytes(), after.as_bytes());
    let prefix = common_prefix(a, b);
    let suffix = common_suffix(&a[prefix..], &b[prefix..]);
    // Start of the line holding the first difference, then back DIFF_CONTEXT lines.
    let mut start = a[..prefix].iter().rposition(|&c| c == b'\n').map_or(0, |at| at + 1);
    for _ in 0..DIFF_CONTEXT {
        if start == 0 {
            break;
        }
        start = a[..start - 1].iter().rposition(|&c| c == b'\n').map_or(0, |at| at + 1);
    }
    // End of the line holding the last difference, then on DIFF_CONTEXT lines.
    let tail_a = a.len() - suffix;
    let mut end_in_suffix =
        a[tail_a..].iter().position(|&c| c == b'\n').map_or(suffix, |at| at + 1);
    for _ in 0..DIFF_CONTEXT {
        let rest = &a[tail_a + end_in_suffix..];
        end_in_suffix += rest.iter().position(|&c| c == b'\n').map_or(rest.len(), |at| at + 1);
    }
    let end_in_suffix = end_in_suffix.min(suffix);
    let skipped = a[..start].iter().filter(|&&c| c == b'\n').count();
    let before_window = &before[start..a.len() - suffix + end_in_suffix];
    let after_window = &after[start..b.len() - suffix + end_in_suffix];
    (skipped, before_window, after_window)
}

fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut at = 0;
    let limit = a.len().min(b.len());
    while at + SCAN_BLOCK <= limit && a[at..at + SCAN_BLOCK] == b[at..at + SCAN_BLOCK] {
        at += SCAN_BLOCK;
    }
    at + a[at..limit].iter().zip(&b[at..limit]).take_while(|(x, y)| x == y).count()
}

fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let mut len = 0;
    let limit = a.len().min(b.len());
    while len + SCAN_BLOCK <= limit
        && a[a.len() - len - SCAN_BLOCK..a.len() - len]
            == b[b.len() - len - SCAN_BLOCK..b.len() - len]
    {
        len += SCAN_BLOCK;
    }
    len + a[..a.len() - len]
        .iter()
        .rev()
        .zip(b[..b.len() - len].iter().rev())
        .take(limit - len)
        .take_while(|(x, y)| x == y)
        .count()
}

/// Adds `offset` to both start lines of every `@@ -a,b +c,d @@` header.
fn shift_hunk_headers(text: &str, offset: usize) -> String {
    if offset == 0 {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        match line.strip_prefix("@@ ").and_then(|rest| rest.split_once(" @@")) {
            Some((ranges, tail)) => {
                let shifted: Vec<String> =
                    ranges.split(' ').map(|range| shift_range(range, offset)).collect();
                out.push_str(&format!("@@ {} @@{tail}", shifted.join(" ")));
            }
            None => out.push_str(line),
        }
    }
    out
}

/// `-12,3` → `-(12+offset),3`; anything unexpected is kept as it is.
fn shift_range(range: &str, offset: usize) -> String {
    let (sign, rest) = range.split_at(range.len().min(1));
    let (start, count) = rest.split_once(',').map_or((rest, None), |(s, c)| (s, Some(c)));
    match start.parse::<usize>() {
        Ok(start) => {
            let count = count.map(|c| format!(",{c}")).unwrap_or_default();
            format!("{sign}{}{count}", start + offset)
        }
        Err(_) => range.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What `similar` renders for the whole files, cut the same way.
    fn full_diff(before: &str, after: &str) -> String {
        TextDiff::configure()
            .diff_lines(before, after)
            .unified_diff()
            .context_radius(DIFF_CONTEXT)
            .header("a/f", "b/f")
            .to_string()
    }

    #[test]
    fn one_line_edit_in_a_long_file_matches_the_full_diff() {
        let before: String = (0..5000).map(|n| format!("line {n}\n")).collect();
        let after = before.replace("line 4000\n", "changed\n");
        let (text, cut) = unified_diff(Path::new("f"), &before, &after);
        assert!(!cut);
        assert_eq!(text, full_diff(&before, &after));
        assert!(text.contains("@@ -3998,7 +3998,7 @@"), "{text}");
    }

    #[test]
    fn long_diffs_are_cut() {
        let before = "x\n".repeat(20_000);
        let after = "y\n".repeat(20_000);
        let (text, truncated) = unified_diff(Path::new("f"), &before, &after);
        assert!(truncated);
        assert!(text.len() < MAX_DIFF_BYTES + 100);
    }

    proptest! {
        /// The windowed diff equals the whole-file diff for any edit of a
        /// file of distinct lines (where the alignment is unambiguous).
        #[test]
        fn windowed_equals_full(
            count in 0usize..40,
            at in 0usize..40,
            cut in 0usize..5,
            inserted in 0usize..4,
            newline in any::<bool>(),
        ) {
            let lines: Vec<String> = (0..count).map(|n| format!("line {n}")).collect();
            let insert: Vec<String> = (0..inserted).map(|n| format!("new {n}")).collect();
            let mut before = lines.join("\n");
            if newline { before.push('\n'); }
            let mut edited = lines.clone();
            let at = at.min(edited.len());
            let end = (at + cut).min(edited.len());
            edited.splice(at..end, insert);
            let mut after = edited.join("\n");
            if newline { after.push('\n'); }
            let (text, _) = unified_diff(Path::new("f"), &before, &after);
            prop_assert_eq!(text, full_diff(&before, &after));
        }
    }
}
