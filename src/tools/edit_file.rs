//! `edit_file`: replaces an exact string in a file and shows the diff.
//!
//! Invariants: the match is exact except for line endings: in a CRLF file,
//! `\n` in `old_string` and `new_string` is taken as `\r\n`, so CRLF is
//! preserved; the file is written only when `old_string` occurs once, or at
//! least once with `replace_all`; an empty or unchanged `old_string` is
//! refused; the file must have been read in this session and be unchanged
//! since (else a conflict error); the write is atomic with permissions
//! kept. When nothing matches, the error points at the most similar line
//! when that is cheap to find. The shown diff is capped at
//! [`super::diff::MAX_DIFF_BYTES`]. Reads and the write happen beneath the
//! root without following symlinks (`super::beneath`); regular files only,
//! up to [`MAX_EDIT_BYTES`].

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use std::io::Read;
use std::path::Path;

use super::args::blocking;
use super::diff::unified_diff;
use super::file_access::{self, ClientFiles};
use super::file_state::Stamp;
use super::paths::Workspace;
use super::{BoxFuture, FileStates, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};

const NAME: &str = tool_facts::EDIT_FILE.name;
/// Files longer than this get no "closest line" hint (it is quadratic-ish).
const HINT_MAX_LINES: usize = 10_000;

const DESCRIPTION: &str = "Replace a string in a file. `old_string` must match exactly, \
whitespace included (without read_file's line numbers), and be unique unless `replace_all`: \
include surrounding lines.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileArgs {
    pub path: String,
    /// Exact text to replace.
    pub old_string: String,
    pub new_string: String,
    /// Replace every occurrence.
    pub replace_all: Option<bool>,
}

pub struct EditFile;

impl TypedTool for EditFile {
    const INFO: &'static ToolInfo = &tool_facts::EDIT_FILE;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = EditFileArgs;

    fn call<'a>(
        &'a self,
        args: EditFileArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = ctx.clone();
            blocking(NAME, move || {
                edit(&Workspace::new(&ctx)?, &ctx.files, ctx.client_files.as_ref(), &args)
            })
            .await
        })
    }
}

fn edit(
    ws: &Workspace,
    files: &FileStates,
    client: Option<&ClientFiles>,
    args: &EditFileArgs,
) -> Result<ToolOutput, ToolError> {
    if args.old_string.is_empty() {
        return Err(ToolError::EmptyOldString);
    }
    if args.old_string == args.new_string {
        return Err(ToolError::NoChange);
    }
    let abs = ws.resolve(&args.path)?;
    let rel = ws.relative(&abs);
    let (bytes, stamp, mode) = read_for_edit(ws, &abs)?;
    files.ensure_fresh(&abs, &rel, Some(stamp))?;
    // The editor's text when it has one: the edit applies to what the user sees.
    let bytes = file_access::text_to_edit(ws, client, &abs, bytes)?;
    let original =
        String::from_utf8(bytes).map_err(|_| ToolError::NotUtf8 { path: rel.clone() })?;
    let (old, new) = if original.contains("\r\n") {
        (to_crlf(&args.old_string), to_crlf(&args.new_string))
    } else {
        (args.old_string.clone(), args.new_string.clone())
    };
    let count = original.matches(old.as_str()).count();
    let replace_all = args.replace_all.unwrap_or(false);
    match count {
        0 => {
            return Err(ToolError::EditNotFound { hint: hint(&original, &old), path: rel });
        }
        1 => {}
        _ if replace_all => {}
        _ => return Err(ToolError::EditAmbiguous { path: rel, count }),
    }
    let updated =
        if replace_all { original.replace(&old, &new) } else { original.replacen(&old, &new, 1) };
    let stamp = file_access::replace_text(ws, client, &abs, &updated, Some(mode))?;
    files.record(&abs, stamp);
    let (diff, diff_truncated) = unified_diff(&rel, &original, &updated);
    let plural = if count == 1 { "" } else { "s" };
    let meta = ToolMeta::details(json!({
        "path": rel.to_string_lossy(),
        "replacements": count,
        "truncated": diff_truncated,
    }));
    Ok(ToolOutput {
        text: format!("edited {} ({count} replacement{plural})\n{diff}", rel.display()),
        meta,
        images: Vec::new(),
    })
}

/// Files larger than this are not read whole (edit, patch, diff).
pub const MAX_EDIT_BYTES: u64 = 32 * 1024 * 1024;

/// The whole file at `abs` (a regular file up to [`MAX_EDIT_BYTES`]), its
/// stamp as opened, and its permission bits.
pub(crate) fn read_for_edit(
    ws: &Workspace,
    abs: &Path,
) -> Result<(Vec<u8>, Stamp, u32), ToolError> {
    let rel = ws.relative(abs);
    let (file, stamp) = ws.open_regular(abs)?;
    if stamp.bytes() > MAX_EDIT_BYTES {
        return Err(ToolError::FileTooLarge {
            path: rel,
            bytes: stamp.bytes(),
            limit: MAX_EDIT_BYTES,
        });
    }
    let mode = rustix::fs::fstat(&file).map_err(|e| ToolError::io(&rel, e.into()))?.st_mode;
    let mut bytes = Vec::new();
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ToolError::io(&rel, source))?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(ToolError::FileTooLarge {
            path: rel,
            bytes: bytes.len() as u64,
            limit: MAX_EDIT_BYTES,
        });
    }
    Ok((bytes, stamp, mode & 0o7777))
}

/// [`read_for_edit`]'s bytes only.
pub(crate) fn read_all(ws: &Workspace, abs: &Path) -> Result<Vec<u8>, ToolError> {
    read_for_edit(ws, abs).map(|(bytes, _, _)| bytes)
}

/// `text` with every line break as CRLF (existing CRLFs kept as they are).
fn to_crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// Where the model probably meant: the line most similar to the first
/// non-blank line of `old`, plus a note when line endings differ.
fn hint(original: &str, old: &str) -> Option<String> {
    let needle = old.lines().map(str::trim).find(|line| !line.is_empty())?;
    let lines: Vec<&str> = original.lines().map(str::trim).collect();
    if lines.len() > HINT_MAX_LINES {
        return None;
    }
    let closest = similar::get_close_matches(needle, &lines, 1, 0.6).into_iter().next()?;
    let number = lines.iter().position(|line| *line == closest)? + 1;
    let full = original.lines().nth(number - 1)?;
    Some(format!("the most similar line is line {number}: `{full}`"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::read_file::ReadFile;
    use crate::tools::testutil::TestWorkspace;

    /// Reads the file first (as the model must), then edits it.
    async fn edit(ws: &TestWorkspace, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        let _ = ws.run(&ReadFile, json!({ "path": args["path"] })).await;
        ws.run(&EditFile, args).await
    }

    fn args(old: &str, new: &str) -> serde_json::Value {
        json!({ "path": "f.rs", "old_string": old, "new_string": new })
    }

    const SOURCE: &str = "fn main() {\n    let x = 1;\n    println!(\"{x}\");\n}\n";

    #[tokio::test]
    async fn replaces_a_unique_match_and_shows_a_diff() {
        let ws = TestWorkspace::new();
        ws.write("f.rs", SOURCE);
        let out = edit(&ws, args("let x = 1;", "let x = 2;")).await.unwrap();
        assert_eq!(ws.read("f.rs"), SOURCE.replace("x = 1", "x = 2"));
        assert!(out.text.starts_with("edited f.rs (1 replacement)\n"), "{}", out.text);
        assert!(out.text.contains("--- a/f.rs\n+++ b/f.rs\n"), "{}", out.text);
        assert!(out.text.contains("-    let x = 1;\n+    let x = 2;\n"), "{}", out.text);
        assert_eq!(out.meta["replacements"], 1);
    }

    #[tokio::test]
    async fn ambiguous_match_needs_replace_all() {
        let ws = TestWorkspace::new();
        ws.write("f.rs", "a\nb\na\n");
        let error = edit(&ws, args("a", "c")).await;
        assert!(matches!(error, Err(ToolError::EditAmbiguous { count: 2, .. })), "{error:?}");
        assert_eq!(ws.read("f.rs"), "a\nb\na\n");
        let mut all = args("a", "c");
        all["replace_all"] = json!(true);
        let out = edit(&ws, all).await.unwrap();
        assert_eq!(ws.read("f.rs"), "c\nb\nc\n");
        assert!(out.text.starts_with("edited f.rs (2 replacements)"));
    }

    #[tokio::test]
    async fn missing_match_points_at_the_closest_line() {
        let ws = TestWorkspace::new();
        ws.write("f.rs", SOURCE);
        let error = edit(&ws, args("let y = 1;", "let y = 2;")).await.err();
        let message = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("not found in f.rs"), "{message}");
        assert!(message.contains("line 2: `    let x = 1;`"), "{message}");
        assert_eq!(ws.read("f.rs"), SOURCE);
    }

    #[tokio::test]
    async fn crlf_files_keep_crlf() {
        let ws = TestWorkspace::new();
        ws.write("f.rs", "a\r\nb\r\nc\r\n");
        edit(&ws, args("a\nb\n", "x\ny\nz\n")).await.unwrap();
        assert_eq!(ws.read("f.rs"), "x\r\ny\r\nz\r\nc\r\n");
    }

    #[tokio::test]
    async fn stale_or_unread_file_is_a_conflict() {
        let ws = TestWorkspace::new();
        ws.write("f.rs", SOURCE);
        let unread = ws.run(&EditFile, args("let x = 1;", "let x = 2;")).await;
        assert!(matches!(unread, Err(ToolError::Conflict { .. })), "{unread:?}");
        ws.run(&ReadFile, json!({ "path": "f.rs" })).await.unwrap();
        ws.write("f.rs", SOURCE.replace("main", "start"));
        let stale = ws.run(&EditFile, args("let x = 1;", "let x = 2;")).await;
        let message = stale.as_ref().err().map(ToString::to_string).unwrap_or_default();
        assert!(message.contains("re-read it with read_file"), "{message}");
        assert_eq!(ws.read("f.rs"), SOURCE.replace("main", "start"));
        ws.run(&ReadFile, json!({ "path": "f.rs" })).await.unwrap();
        ws.run(&EditFile, args("let x = 1;", "let x = 2;")).await.unwrap();
        // The tool's own write does not make the file stale.
        ws.run(&EditFile, args("let x = 2;", "let x = 3;")).await.unwrap();
        assert!(ws.read("f.rs").contains("let x = 3;"));
    }

    #[tokio::test]
    async fn empty_and_identical_strings_are_refused() {
        let ws = TestWorkspace::new();
        ws.write("f.rs", SOURCE);
        let empty = edit(&ws, args("", "x")).await;
        assert!(matches!(empty, Err(ToolError::EmptyOldString)), "{empty:?}");
        let same = edit(&ws, args("main", "main")).await;
        assert!(matches!(same, Err(ToolError::NoChange)), "{same:?}");
    }

    #[tokio::test]
    async fn missing_file_and_escape_are_errors() {
        let ws = TestWorkspace::new();
        let missing = edit(&ws, args("a", "b")).await;
        assert!(matches!(missing, Err(ToolError::NotFound { .. })), "{missing:?}");
        let mut outside = args("a", "b");
        outside["path"] = json!("/etc/hostname");
        let outside = edit(&ws, outside).await;
        assert!(matches!(outside, Err(ToolError::OutsideWorkspace { .. })), "{outside:?}");
    }
}
