//! What the runtime records about files around mutating calls: each path a
//! `write_file` or `edit_file` call names gets a `file_before` hash (synced,
//! before the call runs) and a `file_changed` line after it, so a resume
//! can tell whether an interrupted change landed. Also the git `HEAD` for
//! `session_started`.
//!
//! Invariants: hashes are taken only for paths named in a call's arguments
//! (shell commands touch unknown paths; the undo checkpoint covers those);
//! nothing here spawns processes (`HEAD` is read from `.git` directly).

use std::path::{Path, PathBuf};

use crate::agent::FileProbe;
use crate::protocol::{SessionEvent, ToolCall, ToolClass};
use crate::session::file_hash;

use super::{RuntimeError, Session};

/// Files a call is about to change, with their hashes before it ran.
pub(super) type Touched = Vec<(String, Option<String>)>;

impl Session {
    /// Records the hashes of the files `call` names before it runs.
    pub(super) fn before_mutation(&mut self, call: &ToolCall) -> Result<Touched, RuntimeError> {
        if self.tools.class_of(&call.name) != ToolClass::Mutating {
            return Ok(Vec::new());
        }
        let mut touched = Vec::new();
        for path in named_paths(call, &self.cwd) {
            let path = path.display().to_string();
            let before = file_hash(Path::new(&path));
            self.log.append(SessionEvent::FileBefore {
                call_id: call.call_id.clone(),
                path: path.clone(),
                before: before.clone(),
            })?;
            touched.push((path, before));
        }
        Ok(touched)
    }

    /// Records what the call did to the files it named.
    pub(super) fn after_mutation(
        &mut self,
        call: &ToolCall,
        touched: Touched,
    ) -> Result<(), RuntimeError> {
        for (path, before) in touched {
            let after = file_hash(Path::new(&path));
            self.log.append(SessionEvent::FileChanged {
                call_id: call.call_id.clone(),
                path,
                before,
                after,
            })?;
        }
        Ok(())
    }
}

/// The `path` argument of the file-writing tools, made absolute.
fn named_paths(call: &ToolCall, cwd: &Path) -> Vec<PathBuf> {
    if !matches!(call.name.as_str(), "write_file" | "edit_file") {
        return Vec::new();
    }
    let Ok(args) = serde_json::from_str::<serde_json::Value>(&call.arguments) else {
        return Vec::new();
    };
    match args.get("path").and_then(serde_json::Value::as_str) {
        Some(raw) => vec![cwd.join(raw)],
        None => Vec::new(),
    }
}

/// Hashes files as they are on disk now.
pub(super) struct DiskProbe;

impl FileProbe for DiskProbe {
    fn hash(&self, path: &str) -> Option<String> {
        file_hash(Path::new(path))
    }
}

/// The commit `HEAD` points at in `root`'s git repository, if any.
pub(super) fn git_head(root: &Path) -> Option<String> {
    let git = root.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned());
    };
    if let Ok(commit) = std::fs::read_to_string(git.join(reference)) {
        return Some(commit.trim().to_owned());
    }
    let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
    packed.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference).then(|| commit.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_file_tools_name_paths() {
        let call = |name: &str| ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: r#"{"path":"a.txt","command":"x"}"#.into(),
            item_id: None,
        };
        assert_eq!(named_paths(&call("write_file"), Path::new("/w")), [PathBuf::from("/w/a.txt")]);
        assert!(named_paths(&call("shell"), Path::new("/w")).is_empty());
    }

    #[test]
    fn head_of_a_fresh_repo_is_unknown_and_of_a_detached_one_is_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert_eq!(git_head(dir.path()), None);
        std::fs::write(dir.path().join(".git/HEAD"), "abc123\n").unwrap();
        assert_eq!(git_head(dir.path()).as_deref(), Some("abc123"));
    }
}
