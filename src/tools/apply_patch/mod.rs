//! `apply_patch`: applies a patch in Codex's format (see [`parse`]) to the
//! workspace; also the engine behind `keel apply-patch`.
//!
//! Invariants: the whole patch is parsed before anything is touched, so a
//! malformed patch changes nothing; operations then run in patch order and
//! are not rolled back when a later one fails (Codex's behaviour, which its
//! conformance scenario 015 pins), and the error lists what was already
//! applied. Every path, move targets included, is confined to the workspace
//! like any other tool path and used beneath the root without following
//! symlinks (`super::beneath`). Each write is atomic ([`super::atomic`]) and
//! recorded in the session's [`FileStates`], so a later `edit_file` does not
//! see the model's own change as an outside one.
//!
//! As safe as `edit_file`: an Update, a Delete, a Move onto an existing file
//! and an Add over an existing file each need the file read in this session
//! and unchanged since ([`FileStates::ensure_fresh`], the same refusal text
//! as `edit_file`); context lines alone are not the check, since the model
//! may have guessed them. As informative: the result carries the unified
//! diff of each file changed in place ([`super::diff`], each cut at its
//! bound, all of them together at [`MAX_PATCH_DIFF_BYTES`]); a new file or a
//! deletion is named only (the model wrote the one, the other is gone).

mod seek;

#[cfg(test)]
mod conformance_tests;
#[cfg(test)]
mod guard_tests;
#[cfg(test)]
mod property_tests;

use std::fmt::Write as _;
use std::path::Path;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::blocking;
use super::beneath::Entry;
use super::diff::unified_diff;
use super::edit_file::{MAX_EDIT_BYTES, read_for_edit};
use super::file_access::{self, ClientFiles};
use super::paths::Workspace;
use super::{BoxFuture, FileStates, ToolContext, ToolError, TypedTool};
pub use crate::protocol::patch::ParseError;
use crate::protocol::patch::{self as parse, Hunk};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};
pub use seek::SeekError;

const NAME: &str = tool_facts::APPLY_PATCH.name;

const DESCRIPTION: &str = "Apply a patch:\n\
*** Begin Patch\n\
*** Add File: path/new.txt\n\
+every line of the new file, each prefixed with +\n\
*** Delete File: path/old.txt\n\
*** Update File: path/file.rs\n\
*** Move to: path/renamed.rs   (optional)\n\
@@ fn enclosing_function   (optional line to find first, or a bare @@)\n\
 an unchanged context line (prefixed with a space)\n\
-a removed line\n\
+an added line\n\
*** End of File   (optional: the chunk ends the file)\n\
*** End Patch\n\
Give about 3 lines of context around each change, copied exactly. Operations apply in order; if \
one fails, earlier ones stay applied.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApplyPatchArgs {
    /// The whole patch, `*** Begin Patch` to `*** End Patch`.
    pub patch: String,
}

pub struct ApplyPatch;

impl TypedTool for ApplyPatch {
    const INFO: &'static ToolInfo = &tool_facts::APPLY_PATCH;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ApplyPatchArgs;

    fn call<'a>(
        &'a self,
        args: ApplyPatchArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = ctx.clone();
            blocking(NAME, move || {
                let ws = Workspace::new(&ctx)?;
                let client = ctx.client_files.as_ref();
                let report = apply_patch_with(&ws, &ctx.files, client, &args.patch)?;
                Ok(report.into_output())
            })
            .await
        })
    }
}

/// What one operation did, in Codex's `A`/`M`/`D` terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Modified,
    Deleted,
}

impl ChangeKind {
    fn letter(self) -> char {
        match self {
            Self::Added => 'A',
            Self::Modified => 'M',
            Self::Deleted => 'D',
        }
    }
}

/// All the diffs in one result together stay under this many bytes; the
/// files past it are named with a note to read them.
pub const MAX_PATCH_DIFF_BYTES: usize = 32 * 1024;

/// The operations a patch carried out, in order (a move is `M` of its
/// destination, as Codex prints it), and the diffs of the files changed in
/// place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatchReport {
    pub changes: Vec<(ChangeKind, String)>,
    /// Unified diffs, one after another, within [`MAX_PATCH_DIFF_BYTES`].
    pub diffs: String,
    /// Whether a diff was cut or left out.
    pub diffs_cut: bool,
}

impl PatchReport {
    /// `A path` / `M path` / `D path`, one per line.
    pub fn lines(&self) -> String {
        self.changes.iter().fold(String::new(), |mut text, (kind, path)| {
            let _ = writeln!(text, "{} {path}", kind.letter());
            text
        })
    }

    /// Adds the diff of `rel` from `before` to `after`, within the budget.
    fn add_diff(&mut self, rel: &Path, before: &str, after: &str) {
        let (diff, cut) = unified_diff(rel, before, after);
        if self.diffs.len() + diff.len() > MAX_PATCH_DIFF_BYTES {
            let _ = writeln!(
                self.diffs,
                "[diff of {} not shown (this result's diffs are long); read the file to see it]",
                rel.display()
            );
            self.diffs_cut = true;
            return;
        }
        self.diffs.push_str(&diff);
        self.diffs_cut |= cut;
    }

    fn into_output(self) -> ToolOutput {
        let mut text = format!("Success. Updated the following files:\n{}", self.lines());
        text.push_str(&self.diffs);
        let files: Vec<_> = self
            .changes
            .iter()
            .map(|(kind, path)| json!({ "change": kind.letter().to_string(), "path": path }))
            .collect();
        let meta = ToolMeta::details(json!({ "files": files, "truncated": self.diffs_cut }));
        ToolOutput::new(text, meta)
    }
}

/// Why a patch did not apply completely.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("invalid patch: {0}; nothing was changed")]
    Parse(#[from] ParseError),
    #[error("operation {number} of the patch failed: {source}{}", applied_note(applied))]
    Operation {
        /// 1-based position of the failed operation in the patch.
        number: usize,
        #[source]
        source: Box<ToolError>,
        /// What earlier operations changed (they are not rolled back).
        applied: PatchReport,
    },
}

fn applied_note(applied: &PatchReport) -> String {
    if applied.changes.is_empty() {
        "; nothing was changed".to_owned()
    } else {
        format!(
            "\nthese earlier operations were applied and stay applied:\n{}",
            applied.lines().trim_end()
        )
    }
}

/// Parses `text` and applies it in the workspace `ws`.
pub fn apply_patch_text(
    ws: &Workspace,
    files: &FileStates,
    text: &str,
) -> Result<PatchReport, PatchError> {
    apply_patch_with(ws, files, None, text)
}

/// [`apply_patch_text`], with text files read and written through the
/// front end's `client` when there is one (`file_access.rs`); deletions
/// and a move's removal of its source are keel's on disk.
fn apply_patch_with(
    ws: &Workspace,
    files: &FileStates,
    client: Option<&ClientFiles>,
    text: &str,
) -> Result<PatchReport, PatchError> {
    let hunks = parse::parse(text)?;
    let mut report = PatchReport::default();
    let io = Io { ws, files, client };
    for (index, hunk) in hunks.iter().enumerate() {
        match apply_hunk(&io, hunk, &mut report) {
            Ok(change) => report.changes.push(change),
            Err(source) => {
                return Err(PatchError::Operation {
                    number: index + 1,
                    source: Box::new(source),
                    applied: report,
                });
            }
        }
    }
    Ok(report)
}

/// Where a patch reads and writes.
struct Io<'a> {
    ws: &'a Workspace,
    files: &'a FileStates,
    client: Option<&'a ClientFiles>,
}

fn apply_hunk(
    io: &Io<'_>,
    hunk: &Hunk,
    report: &mut PatchReport,
) -> Result<(ChangeKind, String), ToolError> {
    let (ws, files) = (io.ws, io.files);
    let abs = match hunk {
        // The entry itself: deleting a symlink removes the link (even a dangling one).
        Hunk::Delete { path } => ws.resolve_entry(path)?,
        Hunk::Add { path, .. } | Hunk::Update { path, .. } => ws.resolve(path)?,
    };
    let rel = ws.relative(&abs);
    match hunk {
        Hunk::Add { contents, .. } => {
            // Over an existing file, an Add is an overwrite: read first, as for write_file.
            let before = existing_text(io, &abs)?;
            write(io, &abs, contents, None)?;
            if let Some(before) = before {
                report.add_diff(&rel, &before, contents);
            }
            Ok((ChangeKind::Added, ws.display(&abs)))
        }
        Hunk::Delete { .. } => {
            if let Entry::File { stamp, .. } = ws.entry(&abs)? {
                files.ensure_fresh(&abs, &rel, Some(stamp))?;
            }
            ws.remove_entry(&abs)?;
            files.forget(&abs);
            Ok((ChangeKind::Deleted, ws.display(&abs)))
        }
        Hunk::Update { move_to, chunks, .. } => {
            let (bytes, stamp, mode) = read_for_edit(ws, &abs)?;
            files.ensure_fresh(&abs, &rel, Some(stamp))?;
            let bytes = file_access::text_to_edit(ws, io.client, &abs, bytes)?;
            let original =
                String::from_utf8(bytes).map_err(|_| ToolError::NotUtf8 { path: rel.clone() })?;
            let updated = seek::apply_chunks(&original, chunks)
                .map_err(|source| ToolError::PatchContext { path: rel.clone(), source })?;
            let Some(target) = move_to else {
                write(io, &abs, &updated, Some(mode))?;
                report.add_diff(&rel, &original, &updated);
                return Ok((ChangeKind::Modified, ws.display(&abs)));
            };
            let dest = ws.resolve(target)?;
            if dest != abs {
                // A move onto an existing file replaces it: that one must be read too.
                existing_text(io, &dest)?;
            }
            write(io, &dest, &updated, Some(mode))?;
            if dest != abs {
                ws.remove_entry(&abs)?;
                files.forget(&abs);
            }
            report.add_diff(&ws.relative(&dest), &original, &updated);
            Ok((ChangeKind::Modified, ws.display(&dest)))
        }
    }
}

/// `Ok(None)` when nothing is at `abs`; the text of the file there when the
/// session read it and it is unchanged (`None` too when it is too large or
/// not text to diff); the `edit_file` conflict when it was not read or
/// changed since.
fn existing_text(io: &Io<'_>, abs: &Path) -> Result<Option<String>, ToolError> {
    let ws = io.ws;
    let Entry::File { stamp, len, .. } = ws.entry(abs)? else { return Ok(None) };
    io.files.ensure_fresh(abs, &ws.relative(abs), Some(stamp))?;
    if len > MAX_EDIT_BYTES {
        return Ok(None);
    }
    let Ok((disk, _, _)) = read_for_edit(ws, abs) else { return Ok(None) };
    let text = file_access::text_to_edit(ws, io.client, abs, disk)?;
    Ok(String::from_utf8(text).ok())
}

/// Replaces the file at `abs` (keeping an existing file's permissions
/// unless `mode` is given) and records the model's own write.
fn write(io: &Io<'_>, abs: &Path, text: &str, mode: Option<u32>) -> Result<(), ToolError> {
    let mode = match (mode, io.ws.entry(abs)?) {
        (Some(mode), _) | (None, Entry::File { mode, .. }) => Some(mode),
        (None, Entry::Missing | Entry::Dir | Entry::Symlink | Entry::Special(_)) => None,
    };
    let stamp = file_access::replace_text(io.ws, io.client, abs, text, mode)?;
    io.files.record(abs, stamp);
    Ok(())
}
