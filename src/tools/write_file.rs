//! `write_file`: creates or overwrites a whole file.
//!
//! Invariants: the target is confined to the workspace before anything is
//! created; missing parent directories are created; a directory is never
//! replaced. The result says whether the file was created or overwritten
//! and how many bytes were written.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, parse_args, schema_of};
use super::paths::Workspace;
use super::{BoxFuture, Tool, ToolContext, ToolError};
use crate::protocol::{ToolClass, ToolOutput};

const NAME: &str = "write_file";

const DESCRIPTION: &str = "Create a file, or overwrite an existing one, with the given content. \
Missing parent directories are created. Prefer edit_file for changing part of an existing file; \
read a file before overwriting it.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// Path of the file, relative to the working directory.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

pub struct WriteFile;

impl Tool for WriteFile {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn parameters(&self) -> serde_json::Value {
        schema_of::<WriteFileArgs>()
    }

    fn class(&self) -> ToolClass {
        ToolClass::Mutating
    }

    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: WriteFileArgs = parse_args(NAME, args)?;
            let ctx = ctx.clone();
            blocking(NAME, move || write(&Workspace::new(&ctx)?, &args)).await
        })
    }
}

fn write(ws: &Workspace, args: &WriteFileArgs) -> Result<ToolOutput, ToolError> {
    let abs = ws.resolve(&args.path)?;
    let rel = ws.relative(&abs);
    let existed = match std::fs::metadata(&abs) {
        Ok(metadata) if metadata.is_dir() => return Err(ToolError::IsADirectory { path: rel }),
        Ok(_) => true,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
        Err(error) => return Err(ToolError::io(&rel, error)),
    };
    if let Some(parent) = abs.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|source| ToolError::Io { path: ws.relative(parent), source })?;
    }
    std::fs::write(&abs, &args.content)
        .map_err(|source| ToolError::Io { path: rel.clone(), source })?;
    let bytes = args.content.len();
    let verb = if existed { "overwrote" } else { "created" };
    let meta = json!({
        "path": rel.to_string_lossy(),
        "bytes": bytes,
        "created": !existed,
    });
    Ok(ToolOutput { text: format!("{verb} {} ({bytes} bytes)", rel.display()), meta })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
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
        ws.write("x.txt", "old content");
        let out = write(&ws, json!({ "path": "x.txt", "content": "new" })).await.unwrap();
        assert_eq!(out.text, "overwrote x.txt (3 bytes)");
        assert_eq!(out.meta["created"], false);
        assert_eq!(ws.read("x.txt"), "new");
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
