//! A keel tool call as an ACP client shows it: its kind, a short title,
//! the files it names (locations), the files it may change, and the diff
//! of those changes, before the call runs (the permission request's
//! preview) and after (what it did).
//!
//! Invariants: every fact about a built-in tool comes from
//! `protocol::tool_facts` (its kind, its path arguments); a call keel
//! does not know (an MCP tool) is `other` with no locations. File texts
//! are read through [`Files`], which the session implements beneath its
//! workspace (`diffs::WorkspaceFiles`) and tests implement in memory, so
//! what is read is always confined to the workspace and symlinks are not
//! followed out of it. A title is cut for display only; the full call
//! (`display::approval_text`) travels as the permission request's
//! content and the call's raw input.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::{Diff, ToolCallLocation, ToolKind as AcpKind};
use serde_json::Value;

use crate::protocol::ToolCall;
use crate::protocol::tool_facts::{self, Access, Operand, ToolKind, names};

/// Titles longer than this are cut (with `…`); the full text is elsewhere.
const TITLE_CHARS: usize = 100;

/// A file's text as the session sees it, for diffs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileText {
    /// Where it is (absolute, inside the workspace).
    pub path: PathBuf,
    /// Its text; `None` when there is no such file.
    pub text: Option<String>,
}

/// Reads a file of the workspace by the path a call names; `None` when it
/// is outside the workspace, not text or too large to show.
pub trait Files {
    fn read(&self, raw: &str) -> Option<FileText>;
}

/// The call's arguments as JSON (`Null` when the model's were not).
pub fn arguments(call: &ToolCall) -> Value {
    serde_json::from_str(&call.arguments).unwrap_or(Value::Null)
}

/// What kind of tool the client is told it is.
pub fn kind(call: &ToolCall) -> AcpKind {
    let Some(info) = tool_facts::builtin(&call.name) else { return AcpKind::Other };
    if info.operand(Operand::Url).is_some() {
        return AcpKind::Fetch;
    }
    if call.name == names::GREP || call.name == names::GLOB {
        return AcpKind::Search;
    }
    if call.name == names::SUBMIT_PLAN {
        // Approving a plan leaves plan mode (ACP's "exit plan mode").
        return AcpKind::SwitchMode;
    }
    match info.kind {
        ToolKind::Read => AcpKind::Read,
        ToolKind::Write => AcpKind::Edit,
        ToolKind::Shell => AcpKind::Execute,
        ToolKind::Plan | ToolKind::Tasks | ToolKind::Phase => AcpKind::Think,
    }
}

/// A one-line title: the command for `shell`, the tool and the first
/// path it names for file tools, else the tool's name.
pub fn title(call: &ToolCall) -> String {
    let args = arguments(call);
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let full = if let Some(command) = text("command").filter(|_| call.name == names::SHELL) {
        command.to_owned()
    } else if let Some(url) = text("url") {
        format!("{} {url}", call.name)
    } else {
        match located_paths(call, &args).first() {
            Some(path) => format!("{} {path}", call.name),
            None => call.name.clone(),
        }
    };
    cut(&crate::display::escape_visibly(&full))
}

fn cut(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(TITLE_CHARS).collect();
    if line.chars().count() > TITLE_CHARS || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

/// The paths the call names in its file and listing arguments, and those
/// a patch touches, as the model wrote them.
fn located_paths(call: &ToolCall, args: &Value) -> Vec<String> {
    let Some(info) = tool_facts::builtin(&call.name) else { return Vec::new() };
    let mut paths: Vec<String> =
        info.named_paths(args).into_iter().map(|(path, _)| path.to_owned()).collect();
    paths.extend(patch_paths(info, args));
    paths
}

/// The files a patch adds, deletes, updates or moves to.
fn patch_paths(info: &tool_facts::ToolInfo, args: &Value) -> Vec<String> {
    let Some(arg) = info.operand(Operand::Patch) else { return Vec::new() };
    let Some(patch) = args.get(arg).and_then(Value::as_str) else { return Vec::new() };
    let Ok(hunks) = crate::protocol::patch::parse(patch) else { return Vec::new() };
    let mut paths = Vec::new();
    for hunk in hunks {
        match hunk {
            crate::protocol::patch::Hunk::Add { path, .. }
            | crate::protocol::patch::Hunk::Delete { path } => paths.push(path),
            crate::protocol::patch::Hunk::Update { path, move_to, .. } => {
                paths.push(path);
                paths.extend(move_to);
            }
        }
    }
    paths
}

/// Where the call acts, as absolute paths the client can open.
pub fn locations(call: &ToolCall, files: &dyn Files) -> Vec<ToolCallLocation> {
    let args = arguments(call);
    located_paths(call, &args)
        .iter()
        .filter_map(|raw| files.read(raw))
        .map(|file| ToolCallLocation::new(file.path))
        .collect()
}

/// The files the call may change (written path arguments, a patch's
/// files), as the model named them.
pub fn written_paths(call: &ToolCall) -> Vec<String> {
    let Some(info) = tool_facts::builtin(&call.name) else { return Vec::new() };
    if info.kind != ToolKind::Write {
        return Vec::new();
    }
    let args = arguments(call);
    let mut paths: Vec<String> = info
        .named_paths(&args)
        .into_iter()
        .filter(|(_, arg)| arg.access == Access::Write)
        .map(|(path, _)| path.to_owned())
        .collect();
    paths.extend(patch_paths(info, &args));
    paths
}

/// The files a call may change, read now (before it runs).
pub fn snapshot(call: &ToolCall, files: &dyn Files) -> Vec<(String, FileText)> {
    written_paths(call)
        .into_iter()
        .filter_map(|raw| files.read(&raw).map(|file| (raw, file)))
        .collect()
}

/// What the call changed: each file read before it ran against the same
/// file now (unchanged files left out).
pub fn diffs_after(before: &[(String, FileText)], files: &dyn Files) -> Vec<Diff> {
    before
        .iter()
        .filter_map(|(raw, old)| {
            let new = files.read(raw)?;
            (new.text != old.text).then(|| diff(new.path, old.text.clone(), new.text))
        })
        .collect()
}

/// The change `write_file` or `edit_file` would make, read beforehand
/// (the permission request's preview); none for other tools, or when the
/// edit would not apply.
pub fn preview(call: &ToolCall, files: &dyn Files) -> Vec<Diff> {
    let args = arguments(call);
    let text = |key: &str| args.get(key).and_then(Value::as_str);
    let Some(file) = text("path").and_then(|raw| files.read(raw)) else { return Vec::new() };
    let after = match call.name.as_str() {
        names::WRITE_FILE => text("content").map(str::to_owned),
        names::EDIT_FILE => {
            let (Some(before), Some(old), Some(new)) =
                (file.text.as_deref(), text("old_string"), text("new_string"))
            else {
                return Vec::new();
            };
            let all = args.get("replace_all").and_then(Value::as_bool) == Some(true);
            (!old.is_empty() && before.contains(old))
                .then(|| if all { before.replace(old, new) } else { before.replacen(old, new, 1) })
        }
        _ => None,
    };
    after.map(|after| vec![diff(file.path, file.text, Some(after))]).unwrap_or_default()
}

/// A diff of a file from `old` to `new` (`None`: no file, as ACP says a
/// created or deleted file).
fn diff(path: PathBuf, old: Option<String>, new: Option<String>) -> Diff {
    Diff::new(path, new.unwrap_or_default()).old_text(old)
}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Files in memory, under `/w`.
    pub(crate) struct Memory(pub HashMap<String, String>);

    impl Files for Memory {
        fn read(&self, raw: &str) -> Option<FileText> {
            if raw.starts_with("..") {
                return None;
            }
            Some(FileText { path: PathBuf::from("/w").join(raw), text: self.0.get(raw).cloned() })
        }
    }

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            call_id: "c1".into(),
            name: name.into(),
            arguments: args.to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    #[test]
    fn kinds_follow_the_tool_facts() {
        let shell = call(names::SHELL, serde_json::json!({"command": "ls"}));
        assert_eq!(kind(&shell), AcpKind::Execute);
        assert_eq!(kind(&call(names::READ_FILE, Value::Null)), AcpKind::Read);
        assert_eq!(kind(&call(names::GREP, Value::Null)), AcpKind::Search);
        assert_eq!(kind(&call(names::EDIT_FILE, Value::Null)), AcpKind::Edit);
        assert_eq!(kind(&call(names::APPLY_PATCH, Value::Null)), AcpKind::Edit);
        assert_eq!(kind(&call(names::WEB_FETCH, Value::Null)), AcpKind::Fetch);
        assert_eq!(kind(&call(names::TODO_WRITE, Value::Null)), AcpKind::Think);
        assert_eq!(kind(&call(names::SUBMIT_PLAN, Value::Null)), AcpKind::SwitchMode);
        assert_eq!(kind(&call("mcp__srv__tool", Value::Null)), AcpKind::Other);
    }

    #[test]
    fn titles_are_one_escaped_line_and_locations_are_absolute() {
        let files = Memory(HashMap::new());
        let shell = call(names::SHELL, serde_json::json!({"command": "make test\nrm -rf x"}));
        assert_eq!(title(&shell), "make test…");
        let read = call(names::READ_FILE, serde_json::json!({"path": "src/a\u{202e}.rs"}));
        assert!(!title(&read).contains('\u{202e}'), "{}", title(&read));
        let write = call(names::WRITE_FILE, serde_json::json!({"path": "a.txt", "content": "x"}));
        assert_eq!(title(&write), "write_file a.txt");
        let places = locations(&write, &files);
        assert_eq!(places, vec![ToolCallLocation::new("/w/a.txt")]);
        let outside = call(names::READ_FILE, serde_json::json!({"path": "../etc/passwd"}));
        assert!(locations(&outside, &files).is_empty(), "outside the workspace: not located");
    }

    #[test]
    fn a_patch_locates_and_snapshots_every_file_it_touches() {
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: old.txt\n\
                     @@\n-a\n+b\n*** End Patch";
        let call = call(names::APPLY_PATCH, serde_json::json!({ "patch": patch }));
        assert_eq!(written_paths(&call), vec!["new.txt".to_owned(), "old.txt".to_owned()]);
        let mut files = Memory(HashMap::from([("old.txt".to_owned(), "a\n".to_owned())]));
        let before = snapshot(&call, &files);
        files.0.insert("old.txt".into(), "b\n".into());
        files.0.insert("new.txt".into(), "hi\n".into());
        let diffs = diffs_after(&before, &files);
        assert_eq!(diffs.len(), 2);
        assert_eq!(diffs[0], Diff::new("/w/new.txt", "hi\n"), "created: no old text");
        assert_eq!(diffs[1], Diff::new("/w/old.txt", "b\n").old_text("a\n".to_owned()));
        let shell = self::call(names::SHELL, serde_json::json!({"command": "touch x"}));
        assert!(written_paths(&shell).is_empty(), "a command's writes are not known");
    }

    #[test]
    fn the_preview_is_the_whole_file_before_and_after() {
        let files = Memory(HashMap::from([("f.rs".to_owned(), "fn a() {}\nfn b() {}\n".into())]));
        let edit = call(
            names::EDIT_FILE,
            serde_json::json!({"path": "f.rs", "old_string": "fn b", "new_string": "fn c"}),
        );
        let expected = Diff::new("/w/f.rs", "fn a() {}\nfn c() {}\n")
            .old_text("fn a() {}\nfn b() {}\n".to_owned());
        assert_eq!(preview(&edit, &files), vec![expected]);
        let stale = call(
            names::EDIT_FILE,
            serde_json::json!({"path": "f.rs", "old_string": "fn z", "new_string": "fn c"}),
        );
        assert!(preview(&stale, &files).is_empty(), "an edit that would not apply shows none");
        let create = call(names::WRITE_FILE, serde_json::json!({"path": "n.txt", "content": "x"}));
        assert_eq!(preview(&create, &files), vec![Diff::new("/w/n.txt", "x")]);
    }
}
