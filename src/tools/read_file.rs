//! `read_file`: shows a text file (or a window of it) with line numbers.
//!
//! Invariants: output is bounded by [`DEFAULT_LINE_LIMIT`] lines (or the
//! requested limit), [`MAX_LINE_CHARS`] per line and [`MAX_OUTPUT_BYTES`] in
//! total; whenever something was left out, a closing note says what and
//! gives the `offset` to continue from. Binary files and directories are
//! errors, never dumped; FIFOs, sockets and devices are refused without
//! being opened, and the file is opened beneath the root without following
//! symlinks (`super::beneath`). A PNG, JPEG, GIF or WebP file (told by its
//! bytes) comes back as an image part beside a line of text
//! (`read_file_image.rs`); a model that takes no images reads a note instead
//! (`llm::image_parts`). Besides the workspace it reads the session's kept
//! outputs (`session::KeptOutputs`: a command output cut for the model,
//! kept whole), by the absolute path the cut result named, read-only and
//! confined to that one folder. When the session has a front end's text
//! files (`file_access.rs`: an ACP editor), a text file's lines come from
//! the editor (its unsaved buffer; the window and one more line asked as
//! `line`/`limit`) after every check above ran on the disk's file; binary
//! files and images are the disk's. Memory is bounded too: at most
//! [`MAX_LINE_BYTES`] of any one line is held, however long it is.

use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::blocking;
use super::file_access::{self, ClientFiles, LineWindow};
use super::paths::Workspace;
use super::{BoxFuture, FileStates, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};

const NAME: &str = tool_facts::READ_FILE.name;
/// Lines shown when the model gives no `limit`.
pub const DEFAULT_LINE_LIMIT: u64 = 2000;
/// Longer lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 2000;
/// Total output cap, whatever the limit.
pub const MAX_OUTPUT_BYTES: usize = 256 * 1024;
/// A NUL byte within this prefix marks the file as binary.
const BINARY_SNIFF_BYTES: u64 = 8 * 1024;
/// Bytes of one line held in memory: enough for [`MAX_LINE_CHARS`]
/// characters of any width, and one more to know it was cut.
pub const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4 + 4;

const DESCRIPTION: &str = "Read a text file. Lines come back numbered (`     1\\tfirst line`; \
the number is not part of the file); page with `offset` and `limit`. An image file (PNG, JPEG, \
GIF, WebP) comes back as the image.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    pub path: String,
    /// First line, 1-based. Defaults to 1.
    #[schemars(range(min = 1))]
    pub offset: Option<u64>,
    /// Lines to return. Defaults to 2000.
    #[schemars(range(min = 1))]
    pub limit: Option<u64>,
}

pub struct ReadFile;

impl TypedTool for ReadFile {
    const INFO: &'static ToolInfo = &tool_facts::READ_FILE;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ReadFileArgs;

    fn call<'a>(
        &'a self,
        args: ReadFileArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = ctx.clone();
            blocking(NAME, move || {
                let (ws, kept) = match kept_folder(&ctx, &args.path)? {
                    Some(folder) => (folder, true),
                    None => (Workspace::new(&ctx)?, false),
                };
                // A kept output is keel's own, never the editor's.
                let client = file_access::reader(ctx.client_files.as_ref()).filter(|_| !kept);
                read(&ws, kept, &ctx.files, client, &args)
            })
            .await
        })
    }
}

/// The window of lines to show.
struct Window {
    start: u64,
    limit: u64,
}

/// What was collected from the file.
#[derive(Default)]
struct Excerpt {
    text: String,
    last_shown: u64,
    total_lines: u64,
    cut_lines: bool,
    hit_byte_cap: bool,
    /// Some shown line was not valid UTF-8 (shown with U+FFFD).
    lossy: bool,
    /// Lines came from the editor's window, which went on past it: the
    /// whole text's line count is not known.
    total_unknown: bool,
}

/// The session's kept-outputs folder (or that of a session it was forked
/// from) as the root to read from, when `raw` is an absolute path inside
/// it (`session::KeptOutputs`): the one place outside the workspace
/// `read_file` reads, confined the same way (`..` and symlinks that leave
/// it are refused). Another session's folder, or anything else of
/// KEEL_HOME, is outside the workspace like any path.
fn kept_folder(ctx: &ToolContext, raw: &str) -> Result<Option<Workspace>, ToolError> {
    let Some(kept) = &ctx.kept else { return Ok(None) };
    let Some(dir) = kept.readable().find(|dir| Path::new(raw).starts_with(dir)) else {
        return Ok(None);
    };
    Workspace::from_parts(dir, dir).map(Some)
}

fn read(
    ws: &Workspace,
    kept: bool,
    files: &FileStates,
    client: Option<&ClientFiles>,
    args: &ReadFileArgs,
) -> Result<ToolOutput, ToolError> {
    let abs = ws.resolve(&args.path)?;
    // A kept output is named by its whole path, as the result that kept it did.
    let rel = if kept { abs.clone() } else { ws.relative(&abs) };
    let (start, offset_note) = super::args::bounded("offset", args.offset, 1, 1, u64::MAX);
    let (limit, limit_note) =
        super::args::bounded("limit", args.limit, DEFAULT_LINE_LIMIT, 1, u64::MAX);
    let window = Window { start, limit };
    // Stamped before reading: a change while reading then shows as a change.
    let (file, stamp) = ws.open_regular(&abs)?;
    let (file, image) = super::read_file_image::sniff(file, &rel)?;
    if let Some(media_type) = image {
        let output = super::read_file_image::read(file, media_type, &rel)?;
        files.record(&abs, stamp);
        return Ok(output);
    }
    let excerpt = match client {
        Some(client) => from_client(file, client, ws, &abs, &window, &rel)?,
        None => collect(file, &window, &rel, 1)?,
    };
    files.record(&abs, stamp);
    if window.start > excerpt.total_lines && window.start > 1 {
        let total_lines = match client {
            // The window was empty: the editor's whole text says how long it is.
            Some(client) => {
                let text = client.read(ws, &abs, None)?;
                count_lines(&mut Cursor::new(text)).map_err(|source| ToolError::io(&rel, source))?
            }
            None => excerpt.total_lines,
        };
        return Err(ToolError::OffsetPastEnd { path: rel, offset: window.start, total_lines });
    }
    let truncated = excerpt.last_shown < excerpt.total_lines || excerpt.cut_lines;
    let meta = ToolMeta::details(json!({
        "path": rel.to_string_lossy(),
        "start_line": window.start,
        "end_line": excerpt.last_shown,
        "total_lines": (!excerpt.total_unknown).then_some(excerpt.total_lines),
        "truncated": truncated,
    }));
    let mut text = render(excerpt, &window);
    for note in [offset_note, limit_note].into_iter().flatten() {
        text.push_str(&format!("{note}\n"));
    }
    Ok(ToolOutput::new(text, meta))
}

/// The window's lines as the editor has them (its unsaved buffer), for a
/// file whose bytes on disk are text: a binary file on disk is refused as
/// on the disk path, without asking the editor. The editor is asked for
/// one line past the window, to tell whether its text goes on.
fn from_client(
    mut file: File,
    client: &ClientFiles,
    ws: &Workspace,
    abs: &Path,
    window: &Window,
    rel: &Path,
) -> Result<Excerpt, ToolError> {
    let mut head = Vec::new();
    (&mut file)
        .take(BINARY_SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(|source| ToolError::io(rel, source))?;
    if file_access::looks_binary(&head) {
        return Err(ToolError::BinaryFile { path: rel.to_owned() });
    }
    let asked = LineWindow::for_read(window.start, window.limit);
    if u64::from(asked.line) != window.start {
        // A start past what ACP can name: the whole text, windowed here.
        let text = client.read(ws, abs, None)?;
        return collect(Cursor::new(&text), window, rel, 1);
    }
    let text = client.read(ws, abs, Some(asked))?;
    // The reply holds the lines from `asked.line` on; more than asked is
    // not read past the window.
    let first = window.start;
    let mut excerpt = collect(Cursor::new(&text), window, rel, first)?;
    excerpt.total_unknown = excerpt.total_lines >= first.saturating_add(window.limit);
    let whole = first == 1
        && !excerpt.total_unknown
        && !excerpt.cut_lines
        && !excerpt.hit_byte_cap
        && excerpt.last_shown == excerpt.total_lines;
    if whole {
        // The model saw the editor's whole text: a later change there is a conflict.
        client.saw(abs, &text);
    }
    Ok(excerpt)
}

/// The window's lines of `file`, whose first line is line `first`.
fn collect(
    mut file: impl Read,
    window: &Window,
    rel: &Path,
    first: u64,
) -> Result<Excerpt, ToolError> {
    let mut head = Vec::new();
    (&mut file)
        .take(BINARY_SNIFF_BYTES)
        .read_to_end(&mut head)
        .map_err(|source| ToolError::io(rel, source))?;
    if head.contains(&0) {
        return Err(ToolError::BinaryFile { path: rel.to_owned() });
    }
    let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(head).chain(file));
    let mut excerpt = Excerpt { total_lines: first.saturating_sub(1), ..Excerpt::default() };
    let mut line = Vec::new();
    loop {
        line.clear();
        let (read, cut) = read_line_capped(&mut reader, &mut line, MAX_LINE_BYTES)
            .map_err(|source| ToolError::io(rel, source))?;
        if read == 0 {
            break;
        }
        if cut {
            // What is kept still holds more than MAX_LINE_CHARS characters,
            // so `push_line` cuts it and says so.
            trim_partial_char(&mut line);
        }
        excerpt.total_lines += 1;
        let number = excerpt.total_lines;
        let wanted = number >= window.start && number - window.start < window.limit;
        if wanted && !excerpt.hit_byte_cap {
            push_line(&mut excerpt, number, &line);
        }
        if excerpt.hit_byte_cap
            || (number >= window.start && number - window.start + 1 >= window.limit)
        {
            // Past the window: only the line count is left to find.
            excerpt.total_lines +=
                count_lines(&mut reader).map_err(|source| ToolError::io(rel, source))?;
            break;
        }
    }
    Ok(excerpt)
}

/// Reads one line (through `\n`) into `line`, keeping at most `cap`
/// bytes of it and skipping the rest. Returns the bytes consumed (0 at the
/// end) and whether the line was cut.
fn read_line_capped(
    reader: &mut impl BufRead,
    line: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<(usize, bool)> {
    let (mut consumed, mut cut) = (0, false);
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok((consumed, cut));
        }
        let end = buffer.iter().position(|&byte| byte == b'\n');
        let chunk = &buffer[..end.map_or(buffer.len(), |at| at + 1)];
        let room = cap.saturating_sub(line.len());
        if chunk.len() > room {
            line.extend_from_slice(&chunk[..room]);
            cut = true;
        } else {
            line.extend_from_slice(chunk);
        }
        let used = chunk.len();
        reader.consume(used);
        consumed += used;
        if end.is_some() {
            return Ok((consumed, cut));
        }
    }
}

/// Drops an incomplete UTF-8 sequence a byte cap left at the end.
fn trim_partial_char(line: &mut Vec<u8>) {
    if let Err(error) = std::str::from_utf8(line)
        && error.error_len().is_none()
    {
        line.truncate(error.valid_up_to());
    }
}

/// Lines left in `reader` (a last line without `\n` counts), counted in
/// bulk: a 50 MB file past the window costs a scan, not a million reads.
fn count_lines(reader: &mut impl BufRead) -> std::io::Result<u64> {
    let (mut lines, mut last) = (0u64, b'\n');
    loop {
        let chunk = reader.fill_buf()?;
        let Some(&end) = chunk.last() else { break };
        lines += chunk.iter().filter(|&&byte| byte == b'\n').count() as u64;
        last = end;
        let used = chunk.len();
        reader.consume(used);
    }
    Ok(lines + u64::from(last != b'\n'))
}

fn push_line(excerpt: &mut Excerpt, number: u64, raw: &[u8]) {
    let text = String::from_utf8_lossy(raw);
    excerpt.lossy |= matches!(text, std::borrow::Cow::Owned(_));
    let text = text.trim_end_matches('\n').trim_end_matches('\r');
    let shown = match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => {
            excerpt.cut_lines = true;
            format!("{number:>6}\t{} [... line cut]\n", &text[..cut])
        }
        None => format!("{number:>6}\t{text}\n"),
    };
    if excerpt.text.len() + shown.len() > MAX_OUTPUT_BYTES {
        excerpt.hit_byte_cap = true;
        return;
    }
    excerpt.text.push_str(&shown);
    excerpt.last_shown = number;
}

fn render(excerpt: Excerpt, window: &Window) -> String {
    if excerpt.total_lines == 0 {
        return "(empty file)".to_owned();
    }
    let mut text = excerpt.text;
    if excerpt.last_shown < excerpt.total_lines {
        let why = if excerpt.hit_byte_cap { " (output size cap reached)" } else { "" };
        let of = if excerpt.total_unknown {
            " (the file goes on)".to_owned()
        } else {
            format!(" of {}", excerpt.total_lines)
        };
        text.push_str(&format!(
            "\n[showing lines {}-{}{of}{why}; call read_file with offset={} to read more]\n",
            window.start,
            excerpt.last_shown,
            excerpt.last_shown + 1,
        ));
    }
    if excerpt.lossy {
        text.push_str("[the file is not valid UTF-8; invalid bytes are shown as \u{FFFD}]\n");
    }
    if excerpt.cut_lines {
        text.push_str(&format!("[lines longer than {MAX_LINE_CHARS} characters were cut]\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    async fn read(ws: &TestWorkspace, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        ws.run(&ReadFile, args).await
    }

    fn numbered(count: usize) -> String {
        (1..=count).map(|n| format!("line {n}\n")).collect()
    }

    #[tokio::test]
    async fn numbers_every_line() {
        let ws = TestWorkspace::new();
        ws.write("a.txt", "first\nsecond\r\nthird");
        let out = read(&ws, json!({ "path": "a.txt" })).await.unwrap();
        assert_eq!(out.text, "     1\tfirst\n     2\tsecond\n     3\tthird\n");
        assert_eq!(out.meta["total_lines"], 3);
        assert_eq!(out.meta["truncated"], false);
    }

    #[tokio::test]
    async fn offset_and_limit_select_a_window_and_say_how_to_continue() {
        let ws = TestWorkspace::new();
        ws.write("a.txt", numbered(10));
        let out = read(&ws, json!({ "path": "a.txt", "offset": 3, "limit": 2 })).await.unwrap();
        assert!(out.text.starts_with("     3\tline 3\n     4\tline 4\n"), "{}", out.text);
        assert!(out.text.contains("showing lines 3-4 of 10"), "{}", out.text);
        assert!(out.text.contains("offset=5"), "{}", out.text);
        assert_eq!(out.meta["truncated"], true);
    }

    // Issue 32: a bound past the schema's is said, not applied in silence.
    #[tokio::test]
    async fn an_offset_or_limit_of_zero_is_said() {
        let ws = TestWorkspace::new();
        ws.write("a.txt", numbered(3));
        let out = read(&ws, json!({ "path": "a.txt", "offset": 0, "limit": 0 })).await.unwrap();
        assert!(out.text.starts_with("     1\tline 1\n"), "{}", out.text);
        assert!(out.text.contains("[offset raised to 1, the least allowed]\n"), "{}", out.text);
        assert!(out.text.contains("[limit raised to 1, the least allowed]\n"), "{}", out.text);
    }

    #[tokio::test]
    async fn default_limit_caps_long_files() {
        let ws = TestWorkspace::new();
        ws.write("big.txt", numbered(2500));
        let out = read(&ws, json!({ "path": "big.txt" })).await.unwrap();
        assert!(out.text.contains("  2000\tline 2000\n"));
        assert!(!out.text.contains("line 2001\n"));
        assert!(out.text.contains("offset=2001"));
        assert_eq!(out.meta["total_lines"], 2500);
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let ws = TestWorkspace::new();
        ws.write("wide.txt", format!("{}\nshort\n", "é".repeat(MAX_LINE_CHARS + 10)));
        let out = read(&ws, json!({ "path": "wide.txt" })).await.unwrap();
        assert!(out.text.contains("[... line cut]"));
        assert!(out.text.contains("     2\tshort"));
        assert!(out.text.contains("were cut"));
    }

    #[tokio::test]
    async fn total_output_is_capped_by_bytes() {
        let ws = TestWorkspace::new();
        let line = "x".repeat(1000);
        ws.write("heavy.txt", format!("{line}\n").repeat(1000));
        let out = read(&ws, json!({ "path": "heavy.txt" })).await.unwrap();
        assert!(out.text.len() <= MAX_OUTPUT_BYTES + 200);
        assert!(
            out.text.contains("output size cap reached"),
            "{}",
            &out.text[out.text.len() - 200..]
        );
    }

    #[tokio::test]
    async fn empty_file_says_so() {
        let ws = TestWorkspace::new();
        ws.write("empty.txt", "");
        let out = read(&ws, json!({ "path": "empty.txt" })).await.unwrap();
        assert_eq!(out.text, "(empty file)");
    }

    #[tokio::test]
    async fn errors_for_missing_binary_directory_and_past_end() {
        let ws = TestWorkspace::new();
        ws.write("bin.dat", b"abc\0def");
        ws.write("dir/x.txt", "x\n");
        ws.write("short.txt", "one\n");
        let missing = read(&ws, json!({ "path": "nope.txt" })).await;
        assert!(matches!(missing, Err(ToolError::NotFound { .. })), "{missing:?}");
        let binary = read(&ws, json!({ "path": "bin.dat" })).await;
        assert!(matches!(binary, Err(ToolError::BinaryFile { .. })), "{binary:?}");
        let dir = read(&ws, json!({ "path": "dir" })).await.err().map(|e| e.to_string());
        assert!(dir.unwrap_or_default().contains("use list_dir"));
        let past = read(&ws, json!({ "path": "short.txt", "offset": 5 })).await;
        assert!(matches!(past, Err(ToolError::OffsetPastEnd { total_lines: 1, .. })), "{past:?}");
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let ws = TestWorkspace::new();
        let out = read(&ws, json!({ "path": "/etc/passwd" })).await;
        assert!(matches!(out, Err(ToolError::OutsideWorkspace { .. })), "{out:?}");
    }

    #[tokio::test]
    async fn invalid_utf8_is_shown_lossily_with_a_notice() {
        let ws = TestWorkspace::new();
        ws.write("latin1.txt", b"caf\xe9\n");
        let out = read(&ws, json!({ "path": "latin1.txt" })).await.unwrap();
        assert!(out.text.starts_with("     1\tcaf\u{FFFD}\n"), "{}", out.text);
        assert!(out.text.contains("not valid UTF-8"), "{}", out.text);
    }

    #[test]
    fn one_line_holds_at_most_the_cap_in_memory_however_long() {
        let endless = std::io::repeat(b'a').take(100 * 1024 * 1024).chain(&b"\nnext\n"[..]);
        let mut reader = BufReader::new(endless);
        let mut line = Vec::new();
        let (read, cut) = read_line_capped(&mut reader, &mut line, MAX_LINE_BYTES).unwrap();
        assert_eq!((read, cut), (100 * 1024 * 1024 + 1, true));
        assert_eq!(line.len(), MAX_LINE_BYTES);
        assert!(line.capacity() < 4 * MAX_LINE_BYTES, "grew to {}", line.capacity());
        line.clear();
        assert_eq!(read_line_capped(&mut reader, &mut line, MAX_LINE_BYTES).unwrap(), (5, false));
        assert_eq!(line, b"next\n");
    }

    #[test]
    fn a_cut_inside_a_character_drops_the_partial_bytes() {
        let mut line = "é".repeat(3).into_bytes();
        line.pop();
        trim_partial_char(&mut line);
        assert_eq!(line, "éé".as_bytes());
    }

    #[tokio::test]
    async fn line_count_past_the_window_is_exact() {
        let ws = TestWorkspace::new();
        ws.write("five.txt", "1\n2\n3\n4\nlast without newline");
        let out = read(&ws, json!({ "path": "five.txt", "offset": 3, "limit": 1 })).await.unwrap();
        assert!(out.text.starts_with("     3\t3\n"), "{}", out.text);
        assert_eq!(out.meta["total_lines"], 5);
        assert!(out.text.contains("showing lines 3-3 of 5"), "{}", out.text);
        let all = read(&ws, json!({ "path": "five.txt", "offset": 5 })).await.unwrap();
        assert_eq!(all.text, "     5\tlast without newline\n");
    }
}
