//! `@path` completion: the workspace's files (respecting `.gitignore`,
//! hidden files skipped) listed once at start-up, and a fuzzy ranking of
//! them for what follows the `@`.
//!
//! Invariant: the listing is capped at [`MAX_FILES`] so a huge tree costs
//! bounded memory and time; ranking is pure.

use std::path::Path;

/// Most files listed for completion.
pub const MAX_FILES: usize = 20_000;
/// Most completions shown.
pub const MAX_MATCHES: usize = 8;

/// Files under `root`, relative, sorted, at most [`MAX_FILES`].
pub fn list_files(root: &Path) -> Vec<String> {
    let mut files: Vec<String> = ignore::WalkBuilder::new(root)
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(|entry| {
            let rel = entry.path().strip_prefix(root).ok()?;
            Some(rel.to_string_lossy().into_owned())
        })
        .take(MAX_FILES)
        .collect();
    files.sort();
    files
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

    #[test]
    fn listing_respects_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/out.o"), "").unwrap();
        std::fs::write(dir.path().join("lib.rs"), "").unwrap();
        assert_eq!(list_files(dir.path()), ["lib.rs"]);
    }
}
