//! The front end's view of text files ([`FileAccess`]): where the file
//! tools (`read_file`, `write_file`, `edit_file`, `apply_patch`) take a
//! text file's content from and give it to when a front end offers one
//! (an ACP editor's `fs/read_text_file` and `fs/write_text_file`, so the
//! model reads the editor's unsaved buffer and the editor sees and tracks
//! keel's change). Without one (the default) the tools use the disk only.
//!
//! Invariants: a tool judges, resolves and checks a path exactly as on the
//! disk path before a [`FileAccess`] is asked (policy and approvals ran
//! before the tool; confinement beneath the workspace, symlinks refused,
//! regular files only, read-before-write freshness against the disk), and
//! only ever with the absolute path of a regular file beneath the root (or
//! of nothing yet, for a write); a file whose first bytes on disk hold a
//! NUL (binary) or an image stays on the disk path. What a `FileAccess`
//! returns is untrusted: a text past [`MAX_CLIENT_TEXT_BYTES`] is refused,
//! a window's reply longer than asked is cut, a failure or silence is a
//! [`ToolError::Client`] for the model. Freshness holds for the editor's
//! text too: once the session saw a file's whole text there (a whole
//! `read_file`, an edit's read, its own write), a change to it is
//! [`ToolError::EditorChanged`] until read again (a file the model read
//! only a window of is checked against the disk alone). A write goes to the front end
//! first and then the disk is made to hold the same bytes (written by
//! keel, beneath the root, unless the front end already saved exactly
//! them), so commands, undo checkpoints and later reads see the change
//! whether or not the editor saves; a front end that refuses the write
//! leaves the disk as it was.

use std::collections::HashMap;
use std::hash::{Hash as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::ToolError;
use super::beneath::Entry;
use super::edit_file::MAX_EDIT_BYTES;
use super::file_state::Stamp;
use super::paths::Workspace;

/// Replies larger than this are refused (the most `edit_file` edits).
pub const MAX_CLIENT_TEXT_BYTES: u64 = MAX_EDIT_BYTES;

/// Lines of a text file, as the front end is asked for them: from `line`
/// (1-based), at most `limit` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineWindow {
    pub line: u32,
    pub limit: u32,
}

impl LineWindow {
    /// The window asking for `read_file`'s lines `start..start + limit`
    /// (both 1-based, as the model gave them) and one more, which tells
    /// whether the text goes on; values past `u32` are held at its end.
    pub fn for_read(start: u64, limit: u64) -> Self {
        let clamp = |value: u64| u32::try_from(value).unwrap_or(u32::MAX);
        Self { line: clamp(start.max(1)), limit: clamp(limit.saturating_add(1)) }
    }
}

/// Text files as a front end has them. Called from the tools' blocking
/// threads; each call waits for the answer (bounded by the front end's
/// own timeout). Errors are the front end's words, for the model.
pub trait FileAccess: Send + Sync {
    /// Whether [`FileAccess::read_text`] is offered.
    fn reads(&self) -> bool;
    /// Whether [`FileAccess::write_text`] is offered.
    fn writes(&self) -> bool;
    /// The text of the file at `path`, or of its lines in `window`.
    fn read_text(&self, path: &Path, window: Option<LineWindow>) -> Result<String, String>;
    /// Replaces the text of the file at `path` (creating it if need be).
    fn write_text(&self, path: &Path, text: &str) -> Result<(), String>;
}

/// A session's [`FileAccess`], as the tools hold it, and what the
/// session last saw of each file's whole text there.
#[derive(Clone)]
pub struct ClientFiles(Arc<dyn FileAccess>, Arc<Mutex<HashMap<PathBuf, u64>>>);

impl std::fmt::Debug for ClientFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientFiles")
            .field("reads", &self.0.reads())
            .field("writes", &self.0.writes())
            .finish()
    }
}

impl ClientFiles {
    pub fn new(access: Arc<dyn FileAccess>) -> Self {
        Self(access, Arc::default())
    }

    /// Notes that the session saw (read whole, or wrote) `text` as the
    /// editor's text of `abs`.
    pub(crate) fn saw(&self, abs: &Path, text: &str) {
        if let Ok(mut seen) = self.1.lock() {
            seen.insert(abs.to_owned(), digest(text));
        }
    }

    /// The editor's whole text of `abs`, to change: refused when the
    /// session saw it whole before and it differs now (edits in the
    /// editor the model has not seen), as a change on disk is.
    pub(crate) fn read_to_change(&self, ws: &Workspace, abs: &Path) -> Result<String, ToolError> {
        let text = self.read(ws, abs, None)?;
        let seen = self.1.lock().ok().and_then(|seen| seen.get(abs).copied());
        if seen.is_some_and(|seen| seen != digest(&text)) {
            return Err(ToolError::EditorChanged { path: ws.relative(abs) });
        }
        Ok(text)
    }

    /// The front end's text of `abs` (or of `window`'s lines), bounded.
    pub(crate) fn read(
        &self,
        ws: &Workspace,
        abs: &Path,
        window: Option<LineWindow>,
    ) -> Result<String, ToolError> {
        let rel = ws.relative(abs);
        let text = self.0.read_text(abs, window).map_err(|message| ToolError::Client {
            path: rel.clone(),
            action: "read",
            message,
        })?;
        if text.len() as u64 > MAX_CLIENT_TEXT_BYTES {
            return Err(ToolError::Client {
                path: rel,
                action: "read",
                message: format!(
                    "its text is {} bytes, more than the {MAX_CLIENT_TEXT_BYTES} keel takes",
                    text.len()
                ),
            });
        }
        Ok(text)
    }
}

/// The session's front end, when it reads text files for the tools.
pub(crate) fn reader(client: Option<&ClientFiles>) -> Option<&ClientFiles> {
    client.filter(|client| client.0.reads())
}

/// The text to edit of the file at `abs`, whose bytes on disk are
/// `disk`: the front end's text when it reads files and the disk's bytes
/// are text (no NUL in the first 8 KiB), else `disk` itself.
pub(crate) fn text_to_edit(
    ws: &Workspace,
    client: Option<&ClientFiles>,
    abs: &Path,
    disk: Vec<u8>,
) -> Result<Vec<u8>, ToolError> {
    match reader(client) {
        Some(client) if !looks_binary(&disk) => Ok(client.read_to_change(ws, abs)?.into_bytes()),
        Some(_) | None => Ok(disk),
    }
}

/// A digest of `text`, to tell a later text from it (within one process).
fn digest(text: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// A NUL byte in the first 8 KiB: binary, as `read_file` tells it.
pub(crate) fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8 * 1024).any(|&byte| byte == 0)
}

/// Replaces the file at `abs` with `text`: through the front end when it
/// writes files, then on disk unless the front end saved exactly these
/// bytes there; on disk alone otherwise. Returns the disk file's stamp.
pub(crate) fn replace_text(
    ws: &Workspace,
    client: Option<&ClientFiles>,
    abs: &Path,
    text: &str,
    mode: Option<u32>,
) -> Result<Stamp, ToolError> {
    let Some(client) = client.filter(|client| client.0.writes()) else {
        return ws.replace_file(abs, text.as_bytes(), mode);
    };
    let rel = ws.relative(abs);
    client.0.write_text(abs, text).map_err(|message| ToolError::Client {
        path: rel,
        action: "write",
        message,
    })?;
    client.saw(abs, text);
    if let Entry::File { stamp, len, .. } = ws.entry(abs)?
        && len == text.len() as u64
        && super::edit_file::read_for_edit(ws, abs)
            .is_ok_and(|(bytes, now, _)| now == stamp && bytes == text.as_bytes())
    {
        return Ok(stamp);
    }
    ws.replace_file(abs, text.as_bytes(), mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_window_asks_from_the_line_for_one_line_more() {
        assert_eq!(LineWindow::for_read(1, 2000), LineWindow { line: 1, limit: 2001 });
        assert_eq!(LineWindow::for_read(3, 2), LineWindow { line: 3, limit: 3 });
        assert_eq!(LineWindow::for_read(0, 1), LineWindow { line: 1, limit: 2 });
        let far = LineWindow::for_read(u64::MAX, u64::MAX);
        assert_eq!(far, LineWindow { line: u32::MAX, limit: u32::MAX });
        let big = LineWindow::for_read(5_000_000_000, 4_294_967_295);
        assert_eq!(big, LineWindow { line: u32::MAX, limit: u32::MAX });
    }

    #[test]
    fn binary_is_told_by_a_nul_in_the_first_8_kib() {
        assert!(looks_binary(b"abc\0def"));
        assert!(!looks_binary(b"plain text\n"));
        let mut late = vec![b'a'; 8 * 1024];
        late.push(0);
        assert!(!looks_binary(&late));
    }
}
