//! What a resumed session remembers of the files it had read.
//!
//! Read-before-write stamps live in memory, so a crash forgets them and the
//! model's next edit would be refused as "not read". On resume, a file the
//! log shows was read or written successfully counts as read again, but
//! only if it has not been modified since the log's last write (the crash):
//! a file changed while keel was down must be read again.

use std::path::Path;
use std::time::SystemTime;

use crate::protocol::{Item, ToolCall};
use crate::tools::FileStates;
use crate::tools::paths::Workspace;

/// Tools whose `path` argument the model has seen the content of.
const SEEING_TOOLS: [&str; 3] = ["read_file", "write_file", "edit_file"];

/// Rebuilds read-before-write state from a resumed conversation.
pub(super) fn remembered_files(
    items: &[Item],
    root: &Path,
    cwd: &Path,
    log_path: &Path,
) -> FileStates {
    let files = FileStates::new();
    let Some(crash) = std::fs::metadata(log_path).and_then(|m| m.modified()).ok() else {
        return files;
    };
    // The tools' own rule for paths, so the same files are meant.
    let Ok(workspace) = Workspace::from_parts(root, cwd) else { return files };
    for call in successful_calls(items) {
        if !SEEING_TOOLS.contains(&call.name.as_str()) {
            continue;
        }
        let Some(canonical) = serde_json::from_str::<serde_json::Value>(&call.arguments)
            .ok()
            .and_then(|args| args.get("path").and_then(|p| p.as_str()).map(str::to_owned))
            .and_then(|path| workspace.resolve(&path).ok())
        else {
            continue;
        };
        if unchanged_since(&canonical, crash) {
            files.record_path(&canonical);
        }
    }
    files
}

fn unchanged_since(path: &Path, crash: SystemTime) -> bool {
    std::fs::metadata(path).and_then(|m| m.modified()).is_ok_and(|modified| modified <= crash)
}

/// Calls whose recorded result is not an error.
fn successful_calls(items: &[Item]) -> impl Iterator<Item = &ToolCall> {
    items.iter().filter_map(move |item| match item {
        Item::ToolCall(call) => {
            let ok = items.iter().any(|other| {
                matches!(other, Item::ToolResult(result) if result.call_id == call.call_id && !result.is_error)
            });
            ok.then_some(call)
        }
        Item::User { .. } | Item::Assistant { .. } | Item::Reasoning(_) | Item::ToolResult(_) => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToolResult;
    use crate::tools::file_state::Stamp;

    fn read(id: &str, path: &str, ok: bool) -> [Item; 2] {
        let call = ToolCall {
            call_id: id.into(),
            name: "read_file".into(),
            arguments: serde_json::json!({ "path": path }).to_string(),
            item_id: None,
            provider_data: None,
        };
        let result = if ok { ToolResult::ok(id, "x") } else { ToolResult::error(id, "no") };
        [Item::ToolCall(call), Item::ToolResult(result)]
    }

    #[test]
    fn files_read_before_the_crash_and_untouched_since_count_as_read() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept.txt");
        let failed = dir.path().join("failed.txt");
        std::fs::write(&kept, "a").unwrap();
        std::fs::write(&failed, "b").unwrap();
        let log = dir.path().join("log.jsonl");
        std::fs::write(&log, "{}\n").unwrap();
        let items: Vec<Item> =
            [read("1", "kept.txt", true), read("2", "failed.txt", false)].concat();
        let files = remembered_files(&items, dir.path(), dir.path(), &log);
        let rel = Path::new("x");
        let stamp = |path: &Path| Some(Stamp::of(&std::fs::metadata(path).unwrap()));
        assert!(files.ensure_fresh(&kept.canonicalize().unwrap(), rel, stamp(&kept)).is_ok());
        assert!(files.ensure_fresh(&failed.canonicalize().unwrap(), rel, stamp(&failed)).is_err());
    }
}
