//! `glob`: finds files whose path matches a glob pattern.
//!
//! Invariants: the pattern is matched against each file's path relative to
//! the search directory, with `*` not crossing `/` (use `**` for that);
//! gitignored files and `.git` are never returned (same walk as list_dir);
//! results are files (and symlinks), workspace-relative, newest first (by
//! modification time, ties by path, so the order is deterministic), and
//! capped at [`MAX_RESULTS`] with a count of the rest. When more than
//! [`MAX_RESULTS`] match, they are listed by path instead (and the note
//! says so): finding the newest would stat every match, which is most of
//! the cost of a glob over a huge tree, for a list the model
//! has to narrow anyway.

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::WalkState;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::blocking;
use super::list_dir::unsorted_walker;
use super::paths::Workspace;
use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};

const NAME: &str = tool_facts::GLOB.name;
/// Paths returned at most.
pub const MAX_RESULTS: usize = 1000;

const DESCRIPTION: &str = "Find files by path pattern (`**/*.rs`, `src/*.{toml,md}`), matched \
below `path`: `*` stays within one directory, `**` crosses them. Newest first (by path when more \
than 1000 match); gitignored files are skipped.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    pub pattern: String,
    /// Directory to search.
    pub path: Option<String>,
}

pub struct Glob;

impl TypedTool for Glob {
    const INFO: &'static ToolInfo = &tool_facts::GLOB;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = GlobArgs;

    fn call<'a>(
        &'a self,
        args: GlobArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = ctx.clone();
            blocking(NAME, move || find(&Workspace::new(&ctx)?, &args)).await
        })
    }
}

fn find(ws: &Workspace, args: &GlobArgs) -> Result<ToolOutput, ToolError> {
    let pattern = args.pattern.trim().trim_start_matches("./");
    let matcher = GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|source| ToolError::InvalidGlob {
            pattern: args.pattern.clone(),
            source: Box::new(source),
        })?
        .compile_matcher();
    let base = ws.resolve_or_cwd(args.path.as_deref())?;
    let rel_base = ws.relative(&base);
    ws.open_dir(&base)?;
    // Only the folder the pattern's literal start names can hold matches
    // (`src/**/*.rs`: `src`), so the walk goes down to it and no further
    // elsewhere; from the base, so ignore rules on the way still hold.
    let prefix = literal_prefix(pattern);
    let mut builder = unsorted_walker(&base, None);
    let walk_base = base.clone();
    builder.filter_entry(move |entry| {
        let Ok(rel) = entry.path().strip_prefix(&walk_base) else { return false };
        entry.file_name() != ".git" && (rel.starts_with(&prefix) || prefix.starts_with(rel))
    });
    let found = Mutex::new(Vec::new());
    // Matches seen so far: past MAX_RESULTS the order is by path, so the
    // rest need no stat.
    let seen = AtomicUsize::new(0);
    builder.build_parallel().run(|| {
        let (base, matcher, found, seen) = (&base, &matcher, &found, &seen);
        Box::new(move |entry| {
            let Ok(entry) = entry else { return WalkState::Continue };
            let is_match = entry.file_type().is_some_and(|kind| !kind.is_dir())
                && entry.path().strip_prefix(base).is_ok_and(|rel| matcher.is_match(rel));
            if is_match {
                let modified = (seen.fetch_add(1, Ordering::Relaxed) < MAX_RESULTS)
                    .then(|| entry.metadata().ok().and_then(|m| m.modified().ok()))
                    .flatten();
                if let Ok(mut found) = found.lock() {
                    found.push((modified, entry.into_path()));
                }
            }
            WalkState::Continue
        })
    });
    let found = found.into_inner().unwrap_or_default();
    let total = found.len();
    let by_time = total <= MAX_RESULTS;
    let mut found: Vec<(Option<SystemTime>, String)> = found
        .into_iter()
        .map(|(modified, path)| (modified.filter(|_| by_time), ws.display(&path)))
        .collect();
    // Newest first; files without a time last; ties by path (all of
    // them, when there are too many to sort by time).
    found.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let matches: Vec<String> = found.into_iter().take(MAX_RESULTS).map(|(_, path)| path).collect();
    let meta = ToolMeta::details(json!({
        "path": rel_base.to_string_lossy(),
        "matches": total,
        "truncated": total > matches.len(),
    }));
    let text = render(&matches, total, &args.pattern, &rel_base.to_string_lossy());
    Ok(ToolOutput::new(text, meta))
}

/// The leading folders of `pattern` that hold no glob syntax (`src/tools`
/// for `src/tools/**/*.rs`); empty when the first one does.
fn literal_prefix(pattern: &str) -> PathBuf {
    let mut parts: Vec<&str> = pattern.split('/').collect();
    parts.pop(); // the last part names files, never a folder to start in
    parts
        .into_iter()
        .take_while(|part| {
            !part.is_empty()
                && *part != "."
                && *part != ".."
                && !part.contains(['*', '?', '[', '{', '\\'])
        })
        .collect()
}

fn render(shown: &[String], total: usize, pattern: &str, base: &str) -> String {
    if shown.is_empty() {
        return format!("no files match `{pattern}` under {base}");
    }
    let mut text = shown.join("\n");
    text.push('\n');
    if total > shown.len() {
        text.push_str(&format!(
            "[showing the first {} of {total} matches by path (too many to sort by time); {} \
             more not shown. use a narrower pattern or path]\n",
            shown.len(),
            total - shown.len()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    fn fixture() -> TestWorkspace {
        let ws = TestWorkspace::new();
        ws.write("Cargo.toml", "");
        ws.write("src/main.rs", "");
        ws.write("src/tools/mod.rs", "");
        ws.write("src/tools/notes.md", "");
        ws.write(".gitignore", "target/\n*.log\n");
        ws.write("target/debug/build.rs", "");
        ws.write("debug.log", "");
        for file in ["Cargo.toml", "src/main.rs", "src/tools/mod.rs", "src/tools/notes.md"] {
            touch(&ws, file, 1_000);
        }
        ws
    }

    /// Sets `rel`'s modification time to `secs` after the epoch.
    fn touch(ws: &TestWorkspace, rel: &str, secs: u64) {
        let file = std::fs::File::options().write(true).open(ws.path(rel)).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(secs)).unwrap();
    }

    #[tokio::test]
    async fn newest_files_come_first() {
        let ws = fixture();
        touch(&ws, "src/tools/mod.rs", 3_000);
        touch(&ws, "src/main.rs", 2_000);
        ws.write("src/new.rs", "");
        touch(&ws, "src/new.rs", 4_000);
        let out = glob(&ws, json!({ "pattern": "**/*.rs" })).await.unwrap();
        assert_eq!(out.text, "src/new.rs\nsrc/tools/mod.rs\nsrc/main.rs\n");
    }

    async fn glob(ws: &TestWorkspace, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        ws.run(&Glob, args).await
    }

    #[tokio::test]
    async fn double_star_matches_at_any_depth_and_skips_ignored() {
        let ws = fixture();
        let out = glob(&ws, json!({ "pattern": "**/*.rs" })).await.unwrap();
        assert_eq!(out.text, "src/main.rs\nsrc/tools/mod.rs\n");
        assert_eq!(out.meta["matches"], 2);
    }

    #[tokio::test]
    async fn single_star_stays_in_one_directory() {
        let ws = fixture();
        let out = glob(&ws, json!({ "pattern": "*.toml" })).await.unwrap();
        assert_eq!(out.text, "Cargo.toml\n");
        let none = glob(&ws, json!({ "pattern": "*.rs" })).await.unwrap();
        assert!(none.text.starts_with("no files match"), "{}", none.text);
    }

    #[tokio::test]
    async fn path_sets_the_base_and_output_stays_workspace_relative() {
        let ws = fixture();
        let out = glob(&ws, json!({ "pattern": "*/*.{rs,md}", "path": "src" })).await.unwrap();
        assert_eq!(out.text, "src/tools/mod.rs\nsrc/tools/notes.md\n");
    }

    #[tokio::test]
    async fn results_are_capped() {
        let ws = TestWorkspace::new();
        for n in 0..MAX_RESULTS + 3 {
            ws.write(&format!("d/f{n:05}.txt"), "");
        }
        // The newest would come first if they were sorted by time.
        touch(&ws, "d/f01002.txt", 4_000_000_000);
        let out = glob(&ws, json!({ "pattern": "**/*.txt" })).await.unwrap();
        assert_eq!(out.text.lines().count(), MAX_RESULTS + 1);
        assert!(out.text.starts_with("d/f00000.txt\nd/f00001.txt\n"), "{}", out.text);
        assert!(!out.text.contains("d/f01002.txt"), "by path, the last is left out");
        assert!(
            out.text.contains(
                "showing the first 1000 of 1003 matches by path (too many to sort \
                 by time); 3 more"
            ),
            "{}",
            out.text
        );
    }

    #[test]
    fn the_literal_start_of_a_pattern_names_where_to_walk() {
        assert_eq!(literal_prefix("src/tools/**/*.rs"), PathBuf::from("src/tools"));
        assert_eq!(literal_prefix("src/main.rs"), PathBuf::from("src"));
        assert_eq!(literal_prefix("**/*.rs"), PathBuf::new());
        assert_eq!(literal_prefix("*.toml"), PathBuf::new());
        assert_eq!(literal_prefix("s[rc]/x/*.rs"), PathBuf::new());
        assert_eq!(literal_prefix("../x/*.rs"), PathBuf::new());
    }

    #[tokio::test]
    async fn a_literal_start_inside_an_ignored_folder_stays_ignored() {
        let ws = fixture();
        let out = glob(&ws, json!({ "pattern": "target/debug/*.rs" })).await.unwrap();
        assert!(out.text.starts_with("no files match"), "{}", out.text);
        let out = glob(&ws, json!({ "pattern": "src/tools/*.rs" })).await.unwrap();
        assert_eq!(out.text, "src/tools/mod.rs\n");
    }

    #[tokio::test]
    async fn a_literal_start_that_is_a_symlink_is_not_followed() {
        let ws = fixture();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("secret.rs"), "").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), ws.path("src/out")).unwrap();
        let out = glob(&ws, json!({ "pattern": "src/out/*.rs" })).await.unwrap();
        assert!(out.text.starts_with("no files match"), "{}", out.text);
    }

    #[tokio::test]
    async fn invalid_pattern_and_escapes_are_errors() {
        let ws = fixture();
        let bad = glob(&ws, json!({ "pattern": "src/[abc" })).await;
        assert!(matches!(bad, Err(ToolError::InvalidGlob { .. })), "{bad:?}");
        let outside = glob(&ws, json!({ "pattern": "*", "path": "../.." })).await;
        assert!(matches!(outside, Err(ToolError::OutsideWorkspace { .. })), "{outside:?}");
    }
}
