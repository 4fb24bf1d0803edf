//! What a resumed session remembers of the files it had read.
//!
//! Read-before-write stamps live in memory, so a crash forgets them and the
//! model's next edit would be refused as "not read". On resume, a file the
//! log shows was read or written successfully counts as read again, but
//! only if it has not been modified since the log's last write (the crash):
//! a file changed while keel was down must be read again.
//!
//! Linear in the history (looking each call's result up by a scan made
//! a 50 MB log take seconds): the successful results are a set,
//! and each distinct path is resolved and checked once.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::SystemTime;

use crate::protocol::tool_facts::names;
use crate::protocol::{Item, ToolCall};
use crate::tools::FileStates;
use crate::tools::paths::Workspace;

/// Tools whose `path` argument the model has seen the content of.
const SEEING_TOOLS: [&str; 3] = [names::READ_FILE, names::WRITE_FILE, names::EDIT_FILE];

/// Rebuilds read-before-write state from a resumed conversation.
pub(in crate::runtime) fn remembered_files(
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
    let mut seen: HashSet<String> = HashSet::new();
    for call in successful_calls(items) {
        if !SEEING_TOOLS.contains(&call.name.as_str()) {
            continue;
        }
        let Some(path) = path_argument(&call.arguments) else { continue };
        if !seen.insert(path.clone()) {
            continue;
        }
        let Ok(canonical) = workspace.resolve(&path) else { continue };
        if unchanged_since(&canonical, crash) {
            files.record_path(&canonical);
        }
    }
    files
}

/// The `path` argument of a call, without building a JSON tree of the
/// rest (a `write_file` call carries the whole file).
fn path_argument(arguments: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct PathOnly {
        path: String,
    }
    serde_json::from_str::<PathOnly>(arguments).ok().map(|args| args.path)
}

fn unchanged_since(path: &Path, crash: SystemTime) -> bool {
    std::fs::metadata(path).and_then(|m| m.modified()).is_ok_and(|modified| modified <= crash)
}

/// Calls whose recorded result is not an error. A result answers the
/// latest call before it with its id: servers may repeat ids across
/// responses, so a failed read must not count for an earlier call's path.
fn successful_calls(items: &[Item]) -> Vec<&ToolCall> {
    let mut waiting: HashMap<&str, &ToolCall> = HashMap::new();
    let mut succeeded = Vec::new();
    for item in items {
        match item {
            Item::ToolCall(call) => {
                waiting.insert(call.call_id.as_str(), call);
            }
            Item::ToolResult(result) => {
                let call = waiting.remove(result.call_id.as_str());
                if let Some(call) = call.filter(|_| !result.is_error) {
                    succeeded.push(call);
                }
            }
            Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::Context { .. } => {}
        }
    }
    succeeded
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

    /// Reads `kept.txt` (succeeded) with call id `first` and `failed.txt`
    /// (failed) with `second`, then a crash; whether each counts as read
    /// on resume.
    fn counted_as_read(first: &str, second: &str) -> (bool, bool) {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept.txt");
        let failed = dir.path().join("failed.txt");
        std::fs::write(&kept, "a").unwrap();
        std::fs::write(&failed, "b").unwrap();
        let log = dir.path().join("log.jsonl");
        std::fs::write(&log, "{}\n").unwrap();
        let items: Vec<Item> =
            [read(first, "kept.txt", true), read(second, "failed.txt", false)].concat();
        let files = remembered_files(&items, dir.path(), dir.path(), &log);
        let counted = |path: &Path| {
            let stamp = Some(Stamp::of(&std::fs::metadata(path).unwrap()));
            files.ensure_fresh(&path.canonicalize().unwrap(), Path::new("x"), stamp).is_ok()
        };
        (counted(&kept), counted(&failed))
    }

    #[test]
    fn files_read_before_the_crash_and_untouched_since_count_as_read() {
        assert_eq!(counted_as_read("1", "2"), (true, false));
    }

    /// A server that names every response's first call `call_0`: the
    /// failed read of `failed.txt` is not counted by the earlier call's
    /// success.
    #[test]
    fn a_result_answers_the_latest_call_with_its_id() {
        assert_eq!(counted_as_read("call_0", "call_0"), (true, false));
    }
}
