//! `write_file`: creates or overwrites a whole file.
//!
//! Invariants: the target is confined to the workspace before anything is
//! created; missing parent directories are created; a directory is never
//! replaced; an existing file is overwritten only if this session read it
//! and it has not changed since (else a conflict error asking to re-read);
//! the write is atomic with permissions kept ([`super::atomic`]). The
//! result says whether the file was created or overwritten, how many bytes
//! were written and, for an overwrite, shows the diff. The file is
//! replaced beneath the root without following symlinks
//! (`super::beneath`): a folder swapped meanwhile fails the call.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::blocking;
use super::beneath::Entry;
use super::diff::unified_diff;
use super::edit_file::{MAX_EDIT_BYTES, read_all};
use super::file_access::{self, ClientFiles};
use super::paths::Workspace;
use super::{BoxFuture, FileStates, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};

const NAME: &str = tool_facts::WRITE_FILE.name;

const DESCRIPTION: &str = "Create or overwrite a file (parent folders are created); to change \
part of a file, edit it instead.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    pub path: String,
    /// Its whole new content.
    pub content: String,
}

pub struct WriteFile;

impl TypedTool for WriteFile {
    const INFO: &'static ToolInfo = &tool_facts::WRITE_FILE;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = WriteFileArgs;

    fn call<'a>(
        &'a self,
        args: WriteFileArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = ctx.clone();
            blocking(NAME, move || {
                write(&Workspace::new(&ctx)?, &ctx.files, ctx.client_files.as_ref(), &args)
            })
            .await
        })
    }
}

fn write(
    ws: &Workspace,
    files: &FileStates,
    client: Option<&ClientFiles>,
    args: &WriteFileArgs,
) -> Result<ToolOutput, ToolError> {
    let abs = ws.resolve(&args.path)?;
    let rel = ws.relative(&abs);
    let (current, mode, len) = match ws.entry(&abs)? {
        Entry::Missing => (None, None, 0),
        Entry::File { stamp, mode, len } => (Some(stamp), Some(mode), len),
        Entry::Dir => return Err(ToolError::IsADirectory { path: rel }),
        Entry::Symlink => return Err(ToolError::PathChanged { path: rel }),
        Entry::Special(kind) => return Err(ToolError::NotRegularFile { path: rel, kind }),
    };
    files.ensure_fresh(&abs, &rel, current)?;
    let existed = current.is_some();
    // The old text, for the diff (a huge file gets none): the editor's, when it has one.
    let before = (existed && len <= MAX_EDIT_BYTES)
        .then(|| read_all(ws, &abs).ok())
        .flatten()
        .map(|disk| file_access::text_to_edit(ws, client, &abs, disk))
        .transpose()?;
    let stamp = file_access::replace_text(ws, client, &abs, &args.content, mode)?;
    files.record(&abs, stamp);
    let bytes = args.content.len();
    let verb = if existed { "overwrote" } else { "created" };
    let mut text = format!("{verb} {} ({bytes} bytes)", rel.display());
    let mut truncated = false;
    if let Some(before) = before.as_deref().and_then(|b| std::str::from_utf8(b).ok()) {
        let (diff, cut) = unified_diff(&rel, before, &args.content);
        text.push('\n');
        text.push_str(&diff);
        truncated = cut;
    }
    let meta = ToolMeta::details(json!({
        "path": rel.to_string_lossy(),
        "bytes": bytes,
        "created": !existed,
        "truncated": truncated,
    }));
    Ok(ToolOutput::new(text, meta))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::read_file::ReadFile;
    use crate::tools::testutil::TestWorkspace;

    async fn write(ws: &TestWorkspace, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        ws.run(&WriteFile, args).await
    }

    #[tokio::test]
    async fn creates_a_nested_file() {
        let ws = TestWorkspace::new();
        let out = write(&ws, json!({ "path": "a/b/c.txt", "content": "hello\n" })).await.unwrap();
        assert_eq!(out.text, "created a/b/c.txt (6 bytes)");
        assert_eq!(out.meta["created"], true);
        assert_eq!(ws.read("a/b/c.txt"), "hello\n");
    }

    #[tokio::test]
    async fn overwrites_an_existing_file() {
        let ws = TestWorkspace::new();
        ws.write("x.txt", "old content\n");
        ws.run(&ReadFile, json!({ "path": "x.txt" })).await.unwrap();
        let out = write(&ws, json!({ "path": "x.txt", "content": "new\n" })).await.unwrap();
        assert!(out.text.starts_with("overwrote x.txt (4 bytes)\n--- a/x.txt"), "{}", out.text);
        assert!(out.text.contains("-old content\n+new\n"), "{}", out.text);
        assert_eq!(out.meta["created"], false);
        assert_eq!(ws.read("x.txt"), "new\n");
    }

    #[tokio::test]
    async fn refuses_to_overwrite_an_unread_or_changed_file() {
        let ws = TestWorkspace::new();
        ws.write("x.txt", "mine");
        let unread = write(&ws, json!({ "path": "x.txt", "content": "new" })).await;
        let message = unread.as_ref().err().map(ToString::to_string).unwrap_or_default();
        assert!(matches!(unread, Err(ToolError::Conflict { .. })), "{unread:?}");
        assert!(message.contains("read it with read_file first"), "{message}");
        ws.run(&ReadFile, json!({ "path": "x.txt" })).await.unwrap();
        ws.write("x.txt", "the user changed this");
        let stale = write(&ws, json!({ "path": "x.txt", "content": "new" })).await;
        let message = stale.as_ref().err().map(ToString::to_string).unwrap_or_default();
        assert!(message.contains("changed on disk since it was last read"), "{message}");
        assert_eq!(stale.err().map(|e| e.kind()), Some("conflict"));
        assert_eq!(ws.read("x.txt"), "the user changed this");
    }

    #[tokio::test]
    async fn own_writes_do_not_count_as_changes_and_permissions_stay() {
        use std::os::unix::fs::PermissionsExt;
        let ws = TestWorkspace::new();
        ws.write("run.sh", "#!/bin/sh\n");
        std::fs::set_permissions(ws.path("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        ws.run(&ReadFile, json!({ "path": "run.sh" })).await.unwrap();
        write(&ws, json!({ "path": "run.sh", "content": "#!/bin/sh\necho 1\n" })).await.unwrap();
        write(&ws, json!({ "path": "run.sh", "content": "#!/bin/sh\necho 2\n" })).await.unwrap();
        let mode = std::fs::metadata(ws.path("run.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755);
    }

    #[tokio::test]
    async fn refuses_directories_and_escapes() {
        let ws = TestWorkspace::new();
        ws.write("dir/inner", "");
        let dir = write(&ws, json!({ "path": "dir", "content": "x" })).await;
        assert!(matches!(dir, Err(ToolError::IsADirectory { .. })), "{dir:?}");
        let escape = write(&ws, json!({ "path": "../escaped.txt", "content": "x" })).await;
        assert!(matches!(escape, Err(ToolError::OutsideWorkspace { .. })), "{escape:?}");
        assert!(!ws.dir.path().parent().unwrap().join("escaped.txt").exists());
    }

    #[tokio::test]
    async fn refuses_writing_through_a_symlink_out_of_the_workspace() {
        let ws = TestWorkspace::new();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), ws.path("out")).unwrap();
        let escape = write(&ws, json!({ "path": "out/new.txt", "content": "x" })).await;
        assert!(matches!(escape, Err(ToolError::OutsideWorkspace { .. })), "{escape:?}");
        assert!(!elsewhere.path().join("new.txt").exists());
    }
}
