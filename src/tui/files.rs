//! `@path` completion: the workspace's files, listed only once the user
//! first types an `@`, in the background, and handed over in chunks as
//! they are found (so completion works before a large tree is listed):
//! first what git's index tracks (no walk), then the rest from a walk that
//! respects `.gitignore` (hidden files skipped); and a fuzzy ranking of
//! them for what follows the `@`.
//!
//! Invariants: the listing is capped at [`MAX_FILES`] so a huge tree costs
//! bounded memory and time; nothing is listed unless asked; the index is
//! read with keel's neutralised git ([`crate::runtime::git`]); ranking is
//! pure.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

/// Most files listed for completion.
pub const MAX_FILES: usize = 20_000;
/// Most completions shown.
pub const MAX_MATCHES: usize = 8;
/// Files handed over at a time.
const CHUNK: usize = 2_000;
/// How long reading the index may take.
const LS_FILES_TIMEOUT: Duration = Duration::from_secs(10);

/// Lists the files under `root` (relative paths, at most [`MAX_FILES`]),
/// calling `found` with each chunk; stops early when it returns false
/// (nobody listens any more).
pub fn list_files(root: &Path, found: impl FnMut(Vec<String>) -> bool) {
    let mut lister = Lister { seen: HashSet::new(), chunk: Vec::new(), found, listening: true };
    let walk = ignore::WalkBuilder::new(root)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|entry| {
            let rel = entry.path().strip_prefix(root).ok()?;
            Some(rel.to_string_lossy().into_owned())
        });
    // The walk is lazy: it starts only if the index did not fill the list.
    for file in tracked_files(root).into_iter().chain(walk) {
        if !lister.add(file) {
            break;
        }
    }
    lister.flush();
}

/// Files found so far, handed over a chunk at a time.
struct Lister<F> {
    seen: HashSet<String>,
    chunk: Vec<String>,
    found: F,
    listening: bool,
}

impl<F: FnMut(Vec<String>) -> bool> Lister<F> {
    /// Adds a file; false once nothing more should be listed.
    fn add(&mut self, file: String) -> bool {
        if self.seen.insert(file.clone()) {
            self.chunk.push(file);
        }
        if self.chunk.len() >= CHUNK {
            self.flush();
        }
        self.listening && self.seen.len() < MAX_FILES
    }

    fn flush(&mut self) {
        if self.listening && !self.chunk.is_empty() {
            self.listening = (self.found)(std::mem::take(&mut self.chunk));
        }
    }
}

/// What git's index tracks (empty outside a repository, or on any error).
fn tracked_files(root: &Path) -> Vec<String> {
    use crate::runtime::git::{RepoGit, checked};
    let Some(Ok(repo)) = RepoGit::new(root) else { return Vec::new() };
    let args = ["ls-files", "-z", "--cached"];
    let spec = repo.command(&args, LS_FILES_TIMEOUT).with_output_limit(64 * 1024 * 1024);
    let Ok(output) = crate::sandbox::run_blocking(&spec) else { return Vec::new() };
    let Ok(listed) = checked(&args, LS_FILES_TIMEOUT, output) else { return Vec::new() };
    // Hidden paths are left out, as the walk leaves them out.
    let visible = |path: &&str| !path.split('/').any(|part| part.starts_with('.'));
    listed.split('\0').filter(|p| !p.is_empty()).filter(visible).map(str::to_owned).collect()
}

/// The best matches of `query` among `files`, best first.
pub fn rank<'f>(query: &str, files: &'f [String]) -> Vec<&'f str> {
    let query = query.to_lowercase();
    let mut scored: Vec<(i64, &str)> =
        files.iter().filter_map(|file| Some((score(&query, file)?, file.as_str()))).collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.len().cmp(&b.1.len())).then(a.1.cmp(b.1)));
    scored.into_iter().take(MAX_MATCHES).map(|(_, file)| file).collect()
}

/// Subsequence match score: contiguous runs and matches in the file name
/// count more; `None` when `query` is not a subsequence of `path`.
fn score(query: &str, path: &str) -> Option<i64> {
    let lower = path.to_lowercase();
    let name_start = lower.rfind('/').map_or(0, |at| at + 1);
    let mut score = 0i64;
    let mut from = 0;
    let mut previous: Option<usize> = None;
    for c in query.chars() {
        let at = from + lower[from..].find(c)?;
        score += 1;
        if previous.is_some_and(|p| p + 1 == at) {
            score += 5;
        }
        if at >= name_start {
            score += 2;
        }
        previous = Some(at + c.len_utf8() - 1);
        from = at + c.len_utf8();
    }
    if lower[name_start..].starts_with(query) {
        score += 20;
    }
    Some(score)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<String> {
        ["src/main.rs", "src/tui/mod.rs", "src/tui/markdown.rs", "README.md", "docs/manual.md"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    }

    #[test]
    fn file_names_beat_scattered_matches() {
        let files = files();
        assert_eq!(rank("markd", &files).first(), Some(&"src/tui/markdown.rs"));
        assert_eq!(rank("main", &files).first(), Some(&"src/main.rs"));
    }

    #[test]
    fn non_matches_are_left_out() {
        assert!(rank("zzz", &files()).is_empty());
        assert_eq!(rank("", &files()).len(), 5);
    }

    fn listed(root: &Path) -> Vec<Vec<String>> {
        let mut chunks = Vec::new();
        list_files(root, |chunk| {
            chunks.push(chunk);
            true
        });
        chunks
    }

    fn git(dir: &Path, args: &[&str]) {
        let status = std::process::Command::new("git").args(args).current_dir(dir).status();
        assert!(status.unwrap().success());
    }

    #[test]
    fn listing_respects_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/out.o"), "").unwrap();
        std::fs::write(dir.path().join("lib.rs"), "").unwrap();
        assert_eq!(listed(dir.path()), [["lib.rs"]]);
    }

    #[test]
    fn tracked_files_come_first_then_the_others_once_each_in_chunks() {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        for n in 0..CHUNK + 10 {
            std::fs::write(dir.path().join(format!("t{n:05}")), "").unwrap();
        }
        git(dir.path(), &["add", "-A"]);
        std::fs::write(dir.path().join("untracked.rs"), "").unwrap();
        let chunks = listed(dir.path());
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].len(), CHUNK);
        assert!(chunks[0].iter().all(|file| file.starts_with('t')), "the index first");
        let all: Vec<&String> = chunks.iter().flatten().collect();
        assert_eq!(all.len(), CHUNK + 11, "each file once");
        assert_eq!(all.last().map(|s| s.as_str()), Some("untracked.rs"));
    }

    #[test]
    fn a_listener_that_stops_stops_the_listing() {
        let dir = tempfile::tempdir().unwrap();
        for n in 0..CHUNK * 2 {
            std::fs::write(dir.path().join(format!("f{n:05}")), "").unwrap();
        }
        let mut calls = 0;
        list_files(dir.path(), |_| {
            calls += 1;
            false
        });
        assert_eq!(calls, 1);
    }
}
