//! What the runtime records about files around mutating calls: each path a
//! `write_file` or `edit_file` call names gets a `file_before` hash (synced,
//! before the call runs) and a `file_changed` line after it, so a resume
//! can tell whether an interrupted change landed. A mutating call that
//! names no file (`shell`) gets the same pair for the workspace root, whose
//! "hash" is a fingerprint of the tree (path, size and mtime of every file
//! not ignored by `.gitignore`), so a resume can tell whether an interrupted
//! command changed anything; whether it changed anything is otherwise the
//! undo watcher's answer (inotify events, no walk). Also the git `HEAD` for
//! `session_started` and the branch and status line of the environment
//! snapshot.
//!
//! Invariants: a step costs the same in any repository: a tree larger than
//! [`MAX_FINGERPRINT_FILES`] gets no fingerprint and is not walked again in
//! the session, and the environment summary reads no work tree status for
//! a repository tracking more than [`STATUS_MAX_TRACKED`] files (it says
//! so); `HEAD` and the index's header are read from `.git` directly
//! (bounded, regular files only); the one process, `git status` for the
//! snapshot, runs through [`super::git`] with the repository's config
//! neutralised and a timeout.

use std::path::{Path, PathBuf};

use crate::agent::FileProbe;
use crate::protocol::{Access, Operand, SessionEvent, ToolCall, ToolClass, ToolMeta};
use crate::session::content_hash;

use super::{RuntimeError, Session};

/// What was noted before a mutating call, to compare with after it.
#[derive(Debug, Default)]
pub(super) struct Touched {
    /// Files (or the root) with their hashes before the call.
    files: Vec<(String, Option<String>)>,
    /// The watcher's change count before the call.
    watch_mark: Option<u64>,
}

/// What a mutating call did to the workspace.
#[derive(Debug, Default)]
pub(super) struct Observed {
    /// Whether it changed a file (`None`: nothing could tell).
    pub changed: Option<bool>,
    /// Ignored files it changed, which checkpoints do not hold.
    pub ignored: Vec<String>,
}

impl Session {
    /// Records the hashes of the files `call` names before it runs.
    pub(super) fn before_mutation(&mut self, call: &ToolCall) -> Result<Touched, RuntimeError> {
        if self.state.class_of_call(call) != ToolClass::Mutating {
            return Ok(Touched::default());
        }
        let mut files: Vec<(String, Option<String>)> =
            named_paths(call, &self.workspace_root, &self.cwd)
                .into_iter()
                .map(|path| {
                    let before = file_fingerprint(&path);
                    (path.display().to_string(), before)
                })
                .collect();
        let names_no_file = files.is_empty();
        if names_no_file && !self.tree_too_big {
            match tree_fingerprint(&self.workspace_root) {
                Some(fingerprint) => {
                    files.push((self.workspace_root.display().to_string(), Some(fingerprint)));
                }
                // Walking it again for every command would only cost time.
                None => self.tree_too_big = true,
            }
        }
        let watch_mark = match self.checkpoints.watcher() {
            Some(watcher) if names_no_file => {
                // Ignored files changed before this call are not its doing.
                watcher.take_ignored();
                Some(watcher.mark())
            }
            Some(_) | None => None,
        };
        for (path, before) in &files {
            self.log.append(SessionEvent::FileBefore {
                call_id: call.call_id.clone(),
                path: path.clone(),
                before: before.clone(),
            })?;
        }
        Ok(Touched { files, watch_mark })
    }

    /// Records what the call did to the files it named, and says whether
    /// it changed anything (the fingerprints, else the watcher).
    pub(super) fn after_mutation(
        &mut self,
        call: &ToolCall,
        touched: Touched,
    ) -> Result<Observed, RuntimeError> {
        let mut observed = Observed::default();
        if let (Some(mark), Some(watcher)) = (touched.watch_mark, self.checkpoints.watcher()) {
            observed.changed = Some(watcher.changed_since(mark));
            observed.ignored =
                watcher.take_ignored().iter().map(|path| path.display().to_string()).collect();
        }
        let mut changed = (!touched.files.is_empty()).then_some(false);
        for (path, before) in touched.files {
            let after = probe(Path::new(&path));
            if after != before {
                changed = Some(true);
            }
            self.log.append(SessionEvent::FileChanged {
                call_id: call.call_id.clone(),
                path,
                before,
                after,
            })?;
        }
        // A fingerprint, where there is one, is what a resume compares.
        observed.changed = changed.or(observed.changed);
        Ok(observed)
    }
}

impl Observed {
    /// Adds `changed` and the ignored files (for `keel undo`'s note) to a
    /// call's result meta.
    pub(super) fn add_to(self, meta: &mut ToolMeta) {
        if let Some(changed) = self.changed {
            meta.set_changed(changed);
        }
        if !self.ignored.is_empty() {
            // Written and read by the runtime alone (`undo_notes`).
            meta.insert(super::undo::notes::NOT_CHECKPOINTED_KEY, serde_json::json!(self.ignored));
        }
    }
}

/// The files a file-writing tool's descriptor says it writes (its `File`
/// and `Files` arguments of write access), resolved by the tools' own rule
/// (root first, symlinks resolved); nothing for a path the tool will refuse.
fn named_paths(call: &ToolCall, root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let Some(info) = crate::protocol::tool_facts::builtin(&call.name) else {
        return Vec::new();
    };
    let Ok(args) = serde_json::from_str::<serde_json::Value>(&call.arguments) else {
        return Vec::new();
    };
    let Ok(workspace) = crate::tools::paths::Workspace::from_parts(root, cwd) else {
        return Vec::new();
    };
    let written = info.named_paths(&args).into_iter().filter(|(_, arg)| {
        arg.access == Access::Write && matches!(arg.operand, Operand::File | Operand::Files)
    });
    written.filter_map(|(raw, _)| workspace.resolve(raw).ok()).collect()
}

/// Hashes files as they are on disk now.
pub(super) struct DiskProbe;

impl FileProbe for DiskProbe {
    fn hash(&self, path: &str) -> Option<String> {
        probe(Path::new(path))
    }
}

/// Trees with more files than this get no fingerprint (walking them
/// around every command would make a step cost more in a bigger tree).
pub(super) const MAX_FINGERPRINT_FILES: usize = 2_000;

/// A file's content hash, or a directory's tree fingerprint.
fn probe(path: &Path) -> Option<String> {
    if path.is_dir() { tree_fingerprint(path) } else { file_fingerprint(path) }
}

/// Files larger than this are fingerprinted by size and mtime, not read.
const MAX_HASHED_BYTES: u64 = 64 * 1024 * 1024;

/// What a path holds now, without ever blocking or reading without
/// bound: a regular file's content hash (size and mtime past
/// [`MAX_HASHED_BYTES`]); for a FIFO, socket or device only its kind, since
/// opening one can block or never end (the model names the path, so a
/// `write_file` on a FIFO must not hang the session before the tool
/// refuses it); `None` when nothing is there.
fn file_fingerprint(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let metadata = std::fs::symlink_metadata(path).ok()?;
    let kind = metadata.file_type();
    if kind.is_symlink() {
        let target = std::fs::read_link(path).ok()?;
        return Some(
            content_hash(target.as_os_str().as_encoded_bytes()).replacen("fnv1a64", "link", 1),
        );
    }
    if kind.is_fifo() || kind.is_socket() || kind.is_char_device() || kind.is_block_device() {
        return Some(format!("special:{:o}", metadata.mode() & 0o170_000));
    }
    if !kind.is_file() {
        return None;
    }
    if metadata.len() > MAX_HASHED_BYTES {
        return Some(format!(
            "large:{}:{}.{}",
            metadata.len(),
            metadata.mtime(),
            metadata.mtime_nsec()
        ));
    }
    // Non-blocking and not through a symlink, should it have been swapped.
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = std::fs::File::from(rustix::fs::open(path, flags, Mode::empty()).ok()?);
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_HASHED_BYTES).read_to_end(&mut bytes).ok()?;
    Some(content_hash(&bytes))
}

/// Hash of (relative path, size, mtime) of every file under `root` that
/// `.gitignore` does not exclude, in name order; `None` for huge trees.
fn tree_fingerprint(root: &Path) -> Option<String> {
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut listing = Vec::new();
    let mut files = 0usize;
    for entry in walk.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        files += 1;
        if files > MAX_FINGERPRINT_FILES {
            return None;
        }
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        listing
            .extend_from_slice(format!("{}\0{}\0{mtime}\n", rel.display(), meta.len()).as_bytes());
    }
    Some(content_hash(&listing).replacen("fnv1a64", "tree", 1))
}

/// How long the environment summary's `git status` may take.
const STATUS_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);
/// Repositories tracking more files than this get no work tree status at
/// start: `git status` stats every tracked file and reads every folder.
pub(super) const STATUS_MAX_TRACKED: u32 = 5_000;

/// Branch and short status for the environment snapshot: `branch main,
/// 3 uncommitted changes (M src/lib.rs, ?? notes.md, …)`, or why not.
/// `git status` runs with the repository's config neutralised
/// ([`super::git`]): a cloned repository cannot run code through it. A
/// large repository gets its branch and size only, from `HEAD` and the
/// index's header: starting costs the same in any repository.
pub(super) fn git_summary(root: &Path) -> String {
    /// Changed paths named before the rest are only counted.
    const NAMED: usize = 8;
    let Some(head) = git_dir(root).and_then(|dir| read_small(&dir.join("HEAD"))) else {
        return "not a git repository".to_owned();
    };
    let head = head.trim();
    let branch = match head.strip_prefix("ref: refs/heads/") {
        Some(branch) => format!("branch {branch}"),
        None => format!("detached at {}", head.get(..12).unwrap_or(head)),
    };
    let tracked =
        super::undo::shadow_seed::ProjectGit::find(root).and_then(|git| git.tracked_files());
    if let Some(tracked) = tracked.filter(|&tracked| tracked > STATUS_MAX_TRACKED) {
        return format!(
            "{branch}, {tracked} tracked files (large repository: the work tree's status was \
             not read at start; run `git status` when it matters)"
        );
    }
    let args = ["status", "--porcelain=v1", "--no-renames", "--ignore-submodules=all"];
    let status = match super::git::RepoGit::new(root) {
        Some(Ok(repo)) => repo.run(&args, STATUS_TIMEOUT),
        Some(Err(error)) => Err(error),
        None => return branch,
    };
    let output = match status {
        Ok(output) => output,
        Err(super::git::GitError::TimedOut { .. }) => {
            return format!("{branch}, status not read in time (run `git status`)");
        }
        Err(error) => {
            tracing::warn!(%error, "git status for the environment summary");
            return format!("{branch}, status not read ({error})");
        }
    };
    let changes: Vec<&str> = output.lines().filter(|line| !line.trim().is_empty()).collect();
    if changes.is_empty() {
        return format!("{branch}, clean");
    }
    let mut named: Vec<String> =
        changes.iter().take(NAMED).map(|line| line.trim().to_owned()).collect();
    if changes.len() > NAMED {
        named.push("…".to_owned());
    }
    let noun = if changes.len() == 1 { "change" } else { "changes" };
    format!("{branch}, {} uncommitted {noun} ({})", changes.len(), named.join(", "))
}

/// The commit `HEAD` points at in `root`'s git repository, if any. Read
/// from the files (no process), bounded, regular files only.
pub(super) fn git_head(root: &Path) -> Option<String> {
    let git = git_dir(root)?;
    let head = read_small(&git.join("HEAD"))?;
    let head = head.trim();
    let Some(reference) = head.strip_prefix("ref: ") else {
        return Some(head.to_owned());
    };
    if reference.split('/').any(|part| part == ".." || part.is_empty()) {
        return None;
    }
    if let Some(commit) = read_small(&git.join(reference)) {
        return Some(commit.trim().to_owned());
    }
    let packed = read_bounded(&git.join("packed-refs"), MAX_PACKED_REFS_BYTES)?;
    packed.lines().find_map(|line| {
        let (commit, name) = line.split_once(' ')?;
        (name == reference).then(|| commit.to_owned())
    })
}

/// `root/.git` when it is a folder, or the folder a `.git` file's
/// `gitdir:` line names (a submodule or linked worktree).
pub(super) fn git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let metadata = std::fs::metadata(&dot_git).ok()?;
    if metadata.is_dir() {
        return Some(dot_git);
    }
    let text = read_small(&dot_git)?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    Some(root.join(target))
}

/// Bytes read from small git files (`HEAD`, refs, a `.git` file).
const MAX_SMALL_FILE_BYTES: u64 = 4096;
/// Bytes read from `packed-refs`.
const MAX_PACKED_REFS_BYTES: u64 = 16 * 1024 * 1024;

fn read_small(path: &Path) -> Option<String> {
    read_bounded(path, MAX_SMALL_FILE_BYTES)
}

/// A regular file's first `limit` bytes as text: a FIFO or device named
/// `HEAD` cannot block or flood the start.
fn read_bounded(path: &Path, limit: u64) -> Option<String> {
    use std::io::Read;
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    std::fs::File::open(path).ok()?.take(limit).read_to_string(&mut text).ok()?;
    Some(text)
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
            provider_data: None,
        };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let sub = root.join("sub");
        assert_eq!(named_paths(&call("write_file"), &root, &sub), [root.join("a.txt")]);
        assert!(named_paths(&call("shell"), &root, &sub).is_empty());
    }

    #[test]
    fn special_files_are_named_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Reading it would block this test forever.
        assert_eq!(file_fingerprint(&fifo).as_deref(), Some("special:10000"));
        std::fs::write(dir.path().join("f"), "a").unwrap();
        assert_eq!(file_fingerprint(&dir.path().join("f")), Some(content_hash(b"a")));
        assert_eq!(file_fingerprint(&dir.path().join("missing")), None);
    }

    #[test]
    fn tree_fingerprint_sees_new_files_and_ignores_ignored_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        let before = tree_fingerprint(dir.path()).unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/x"), "x").unwrap();
        assert_eq!(tree_fingerprint(dir.path()).unwrap(), before);
        std::fs::write(dir.path().join("c.txt"), "done").unwrap();
        assert_ne!(tree_fingerprint(dir.path()).unwrap(), before);
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
