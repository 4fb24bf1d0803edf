//! Test fixtures for the tools: a temporary workspace with a context, and a
//! helper that runs one tool on JSON arguments.

use std::path::PathBuf;

use tokio_util::sync::CancellationToken;

use super::{Tool, ToolContext, ToolError};
use crate::protocol::ToolOutput;

/// A temporary directory used as workspace root and cwd.
pub(crate) struct TestWorkspace {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) ctx: ToolContext,
}

impl TestWorkspace {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(
            dir.path().to_owned(),
            dir.path().to_owned(),
            CancellationToken::new(),
        );
        Self { dir, ctx }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn canonical_root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// Writes `content` to `rel`, creating parent directories.
    pub(crate) fn write(&self, rel: &str, content: impl AsRef<[u8]>) {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, content).unwrap();
    }

    pub(crate) fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    /// Runs `tool` with `args` in this workspace.
    pub(crate) async fn run(
        &self,
        tool: &dyn Tool,
        args: serde_json::Value,
    ) -> Result<ToolOutput, ToolError> {
        tool.run(args, &self.ctx).await
    }
}
