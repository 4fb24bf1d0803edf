//! `read_memory`: reads one memory note's body. Only the notes' names and
//! descriptions are in the context; the model reads a note when its
//! description bears on the task. User notes live outside the workspace,
//! which is why this is a tool of its own and not `read_file`.
//!
//! Invariant: only the notes discovered at session start can be read (the
//! name selects one; no path comes from the model).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::context::memory::memory_body;
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};

/// The tool's name, offered only when there are notes to read.
pub const NAME: &str = tool_facts::READ_MEMORY.name;
const DESCRIPTION: &str = "Read a memory note listed under Memory, by name.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadMemoryArgs {
    /// The note's name, as listed.
    pub name: String,
}

pub struct ReadMemory;

impl TypedTool for ReadMemory {
    const INFO: &'static ToolInfo = &tool_facts::READ_MEMORY;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ReadMemoryArgs;

    fn call<'a>(
        &'a self,
        args: ReadMemoryArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let Some(note) = ctx.memory.iter().find(|note| note.meta.name == args.name) else {
                let known: Vec<&str> = ctx.memory.iter().map(|n| n.meta.name.as_str()).collect();
                return Err(ToolError::InvalidArguments {
                    tool: NAME.to_owned(),
                    message: format!(
                        "no memory note named `{}`; known: {}",
                        args.name,
                        known.join(", ")
                    ),
                });
            };
            // Beneath the folder above `memory`, no symlink followed: the
            // note may have been swapped for a link since discovery.
            let root = crate::support::beneath::root_above(&note.path, 2);
            let text = crate::support::bounded_read::read_bounded_beneath(root, &note.path)
                .map_err(|error| ToolError::InvalidArguments {
                    tool: NAME.to_owned(),
                    message: format!("cannot read {}: {error}", note.path.display()),
                })?;
            let body = memory_body(&text).trim();
            let text = format!("# Memory: {} ({})\n\n{body}", note.meta.name, note.path.display());
            Ok(ToolOutput::new(text, ToolMeta::details(json!({ "memory": note.meta.name }))))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::context::memory::{MemoryMeta, MemoryNote};
    use crate::tools::Tool;

    #[tokio::test]
    async fn reads_a_listed_note_and_refuses_unknown_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tips.md");
        std::fs::write(&path, "---\ndescription: build tips\n---\nUse `cargo nextest`.\n").unwrap();
        let note = MemoryNote {
            meta: MemoryMeta { name: "tips".into(), kind: String::new(), description: "d".into() },
            path,
        };
        let ctx = ToolContext::new(dir.path().into(), dir.path().into(), CancellationToken::new())
            .with_memory(Arc::new(vec![note]));
        let out = ReadMemory.run(json!({"name": "tips"}), &ctx).await.unwrap();
        assert!(out.text.contains("Use `cargo nextest`.") && !out.text.contains("description:"));
        let error = ReadMemory.run(json!({"name": "nope"}), &ctx).await.unwrap_err();
        assert!(error.to_string().contains("known: tips"), "{error}");
    }

    #[tokio::test]
    async fn a_note_swapped_for_a_symlink_after_discovery_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("memory");
        std::fs::create_dir(&folder).unwrap();
        let secret = dir.path().join("environ");
        std::fs::write(&secret, "OPENAI_API_KEY=sk-live\n").unwrap();
        let path = folder.join("tips.md");
        std::os::unix::fs::symlink(&secret, &path).unwrap();
        let note = MemoryNote {
            meta: MemoryMeta { name: "tips".into(), kind: String::new(), description: "d".into() },
            path,
        };
        let ctx = ToolContext::new(dir.path().into(), dir.path().into(), CancellationToken::new())
            .with_memory(Arc::new(vec![note]));
        let error = ReadMemory.run(json!({"name": "tips"}), &ctx).await.unwrap_err().to_string();
        assert!(error.contains("symlink") && !error.contains("sk-live"), "{error}");
    }
}
