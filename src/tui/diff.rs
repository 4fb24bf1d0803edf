//! Unified diffs (as `edit_file` puts in its output) to coloured lines with
//! old and new line numbers, and a preview diff for an approval from a
//! call's arguments (`edit_file`'s old/new strings, `write_file`'s content).
//!
//! Parsing is tolerant: lines outside a hunk are kept as plain text, and a
//! malformed `@@` header restarts numbering at 1 rather than failing.

use ratatui::text::{Line, Span};

use super::theme::Theme;
use crate::protocol::tool_facts::names;

/// What one line of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiffKind {
    /// `--- a/…` / `+++ b/…`.
    FileHeader,
    /// `@@ -a,b +c,d @@`.
    Hunk,
    Context,
    Added,
    Removed,
    /// Anything else (notes such as "[diff cut …]").
    Other,
}

/// One parsed diff line with its numbers in the old and new file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffLine {
    pub kind: DiffKind,
    pub old: Option<u32>,
    pub new: Option<u32>,
    pub text: String,
}

/// True when `text` holds a unified diff hunk.
pub fn contains_diff(text: &str) -> bool {
    text.lines().any(|line| line.starts_with("@@ "))
}

/// Parses the unified diff in `text` (leading prose lines are skipped).
pub fn parse(text: &str) -> Vec<DiffLine> {
    let mut out = Vec::new();
    let (mut old, mut new) = (1u32, 1u32);
    let mut in_diff = false;
    for line in text.lines() {
        let (kind, body) = if line.starts_with("--- ") || line.starts_with("+++ ") {
            in_diff = true;
            (DiffKind::FileHeader, line)
        } else if line.starts_with("@@") {
            in_diff = true;
            (old, new) = hunk_start(line).unwrap_or((1, 1));
            (DiffKind::Hunk, line)
        } else if !in_diff {
            continue;
        } else if let Some(rest) = line.strip_prefix('+') {
            (DiffKind::Added, rest)
        } else if let Some(rest) = line.strip_prefix('-') {
            (DiffKind::Removed, rest)
        } else if let Some(rest) = line.strip_prefix(' ') {
            (DiffKind::Context, rest)
        } else {
            (DiffKind::Other, line)
        };
        let (o, n) = match kind {
            DiffKind::Context => (Some(old), Some(new)),
            DiffKind::Added => (None, Some(new)),
            DiffKind::Removed => (Some(old), None),
            DiffKind::FileHeader | DiffKind::Hunk | DiffKind::Other => (None, None),
        };
        old += u32::from(o.is_some());
        new += u32::from(n.is_some());
        out.push(DiffLine { kind, old: o, new: n, text: body.to_owned() });
    }
    out
}

/// `@@ -12,3 +14,4 @@` → (12, 14).
fn hunk_start(header: &str) -> Option<(u32, u32)> {
    let mut parts = header.split_whitespace().skip(1);
    let old = parts.next()?.strip_prefix('-')?;
    let new = parts.next()?.strip_prefix('+')?;
    let first = |range: &str| range.split(',').next()?.parse::<u32>().ok();
    Some((first(old)?, first(new)?))
}

/// A diff for approving an `edit_file` or `write_file` call, from its
/// arguments; `None` for other tools or unreadable arguments.
pub fn preview(tool: &str, arguments: &str) -> Option<Vec<DiffLine>> {
    let args: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let text = |key: &str| args.get(key).and_then(|v| v.as_str());
    let path = text("path")?;
    let (old, new) = match tool {
        names::EDIT_FILE => (text("old_string")?, text("new_string")?),
        names::WRITE_FILE => ("", text("content")?),
        _ => return None,
    };
    let mut out = vec![DiffLine {
        kind: DiffKind::FileHeader,
        old: None,
        new: None,
        text: format!("+++ {path}"),
    }];
    let line = |kind, text: &str| DiffLine { kind, old: None, new: None, text: text.to_owned() };
    out.extend(old.lines().map(|l| line(DiffKind::Removed, l)));
    out.extend(new.lines().map(|l| line(DiffKind::Added, l)));
    Some(out)
}

/// Renders diff lines: `old new │ ±text`, coloured by kind.
pub fn render(lines: &[DiffLine], theme: Theme) -> Vec<Line<'static>> {
    let digits = lines
        .iter()
        .flat_map(|l| [l.old, l.new])
        .flatten()
        .max()
        .map_or(1, |n| n.to_string().len());
    let number = |n: Option<u32>| n.map_or_else(|| " ".repeat(digits), |n| format!("{n:>digits$}"));
    lines
        .iter()
        .map(|line| {
            let (sign, style) = match line.kind {
                DiffKind::Added => ("+", theme.added()),
                DiffKind::Removed => ("-", theme.removed()),
                DiffKind::Context => (" ", theme.plain()),
                DiffKind::Hunk => return Line::styled(line.text.clone(), theme.hunk()),
                DiffKind::FileHeader => return Line::styled(line.text.clone(), theme.bold()),
                DiffKind::Other => return Line::styled(line.text.clone(), theme.dim()),
            };
            Line::from(vec![
                Span::styled(format!("{} {} │", number(line.old), number(line.new)), theme.dim()),
                Span::styled(format!("{sign}{}", line.text), style),
            ])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EDIT: &str = "edited src/a.rs (1 replacement)\n--- a/src/a.rs\n+++ b/src/a.rs\n\
@@ -10,3 +10,3 @@\n fn a() {\n-    old();\n+    new();\n }\n";

    #[test]
    fn numbers_follow_the_hunk_header() {
        let lines = parse(EDIT);
        let numbered: Vec<_> = lines.iter().map(|l| (l.kind, l.old, l.new)).collect();
        assert_eq!(
            numbered,
            [
                (DiffKind::FileHeader, None, None),
                (DiffKind::FileHeader, None, None),
                (DiffKind::Hunk, None, None),
                (DiffKind::Context, Some(10), Some(10)),
                (DiffKind::Removed, Some(11), None),
                (DiffKind::Added, None, Some(11)),
                (DiffKind::Context, Some(12), Some(12)),
            ]
        );
    }

    #[test]
    fn detects_diffs_in_tool_output() {
        assert!(contains_diff(EDIT));
        assert!(!contains_diff("wrote a.txt (3 bytes)"));
    }

    #[test]
    fn malformed_headers_do_not_fail() {
        let lines = parse("@@ nonsense\n+x\n");
        assert_eq!(lines[1].new, Some(1));
    }

    #[test]
    fn previews_edit_arguments() {
        let args = r#"{"path":"a.rs","old_string":"x\ny","new_string":"z"}"#;
        let kinds: Vec<_> = preview("edit_file", args).unwrap().iter().map(|l| l.kind).collect();
        assert_eq!(
            kinds,
            [DiffKind::FileHeader, DiffKind::Removed, DiffKind::Removed, DiffKind::Added]
        );
        assert!(preview("shell", r#"{"command":"ls"}"#).is_none());
    }
}
