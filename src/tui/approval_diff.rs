//! The diff an approval shows for `edit_file` and `write_file`: the real
//! change to the file on disk, with context and line numbers, as the
//! applied diff will look (not just the call's old and new strings).
//!
//! Impure (reads the file), so the driver calls it when a request
//! arrives; `update` stays pure. Paths are resolved as the tools resolve
//! them (confined to the workspace, symlinks followed); anything that
//! cannot be read, is too large, or would not apply returns `None`, and
//! the overlay falls back to the arguments' preview.

use std::path::Path;

use similar::TextDiff;

use crate::protocol::ToolCall;
use crate::protocol::tool_facts::names;
use crate::tools::paths::Workspace;

/// Files larger than this are not read for a preview.
const MAX_PREVIEW_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Lines of context around each change (as in the applied diff).
const CONTEXT_LINES: usize = 3;

/// The unified diff `call` would make, when it can be known beforehand.
pub fn approval_diff(root: &Path, cwd: &Path, call: &ToolCall) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    let text = |key: &str| args.get(key).and_then(|v| v.as_str());
    let raw_path = text("path")?;
    let workspace = Workspace::from_parts(root, cwd).ok()?;
    let path = workspace.resolve(raw_path).ok()?;
    let before = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() && meta.len() <= MAX_PREVIEW_FILE_BYTES => {
            std::fs::read_to_string(&path).ok()?
        }
        Ok(_) => return None,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(_) => return None,
    };
    let after = match call.name.as_str() {
        names::EDIT_FILE => {
            let (old, new) = (text("old_string")?, text("new_string")?);
            if old.is_empty() || !before.contains(old) {
                return None;
            }
            if args.get("replace_all").and_then(serde_json::Value::as_bool) == Some(true) {
                before.replace(old, new)
            } else {
                before.replacen(old, new, 1)
            }
        }
        names::WRITE_FILE => text("content")?.to_owned(),
        _ => return None,
    };
    let rel = workspace.relative(&path);
    let rel = rel.to_string_lossy();
    let diff = TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&format!("a/{rel}"), &format!("b/{rel}"))
        .to_string();
    Some(diff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: args.to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    #[test]
    fn an_edit_shows_context_and_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let text = "import os\n\ndef add(a, b):\n    return a - b\n\nprint(add(1, 2))\n";
        std::fs::write(dir.path().join("calc.py"), text).unwrap();
        let edit = call(
            "edit_file",
            serde_json::json!({"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
        );
        let diff = approval_diff(dir.path(), dir.path(), &edit).unwrap();
        assert!(diff.contains("@@ -1,6 +1,6 @@"), "{diff}");
        assert!(diff.contains(" def add(a, b):\n-    return a - b\n+    return a + b\n"), "{diff}");
    }

    #[test]
    fn paths_outside_the_workspace_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let edit =
            call("write_file", serde_json::json!({"path": "../../etc/passwd", "content": "x"}));
        assert_eq!(approval_diff(dir.path(), dir.path(), &edit), None);
    }

    #[test]
    fn a_new_file_is_all_additions() {
        let dir = tempfile::tempdir().unwrap();
        let write = call("write_file", serde_json::json!({"path": "new.txt", "content": "a\nb\n"}));
        let diff = approval_diff(dir.path(), dir.path(), &write).unwrap();
        assert!(diff.contains("+a\n+b\n"), "{diff}");
    }
}
