//! `keel tool NAME 'JSON'`: one tool outside the loop, its result
//! envelope as JSON on stdout.

use std::sync::Arc;

use anyhow::Context;
use tokio_util::sync::CancellationToken;

use super::ToolArgs;
use crate::config::find_workspace_root;
use crate::exec::{self, ExitStatus};
use crate::protocol::ToolCall;
use crate::tools::{FileStates, ToolContext, ToolRegistry};

pub(super) async fn run(args: ToolArgs) -> anyhow::Result<ExitStatus> {
    let cwd = std::env::current_dir().context("cannot determine the working directory")?;
    // One-shot: no session has read anything, so read-before-write is off.
    let ctx = ToolContext::new(find_workspace_root(&cwd), cwd, CancellationToken::new())
        .with_files(Arc::new(FileStates::unchecked()));
    let registry = ToolRegistry::builtin();
    let call = ToolCall {
        call_id: "cli".to_owned(),
        name: args.name,
        arguments: args.arguments,
        item_id: None,
    };
    let (result, meta) = registry.run_call(&call, &ctx).await;
    let envelope = serde_json::json!({
        "ok": !result.is_error,
        "output": if result.is_error { serde_json::Value::Null } else { result.output.clone().into() },
        "meta": meta,
        "error": if result.is_error { serde_json::Value::from(result.output) } else { serde_json::Value::Null },
    });
    exec::write_json_line(&envelope);
    Ok(if result.is_error { ExitStatus::Failed } else { ExitStatus::Done })
}
