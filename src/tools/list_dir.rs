//! `list_dir`: lists a directory's entries, optionally a few levels deep.
//!
//! Invariants: walks with the `ignore` crate, so `.gitignore`/`.ignore`
//! rules hold (even outside a git repository) and `.git` is never listed;
//! hidden files are shown. Symlinks are listed, never followed. Output is
//! deterministic (sorted per directory, depth first), paths are relative to
//! the workspace, directories end in `/`, symlinks in `@`, and at most
//! [`MAX_ENTRIES`] are shown, with a note when more exist. The walk stops
//! after [`MAX_COUNTED`] entries (the note then says "more than"), so a
//! deep listing of a huge tree costs a bounded walk, not the whole tree;
//! past the entries shown, the walk only counts, in parallel and unsorted
//! (sorting every folder's entries was most of a deep listing's cost).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::blocking;
use super::paths::Workspace;
use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};

const NAME: &str = tool_facts::LIST_DIR.name;
/// Levels listed when the model gives no `depth`.
pub const DEFAULT_DEPTH: usize = 1;
/// Deeper requests are lowered to this (and the result says so).
pub const MAX_DEPTH: usize = 5;
/// Entries shown at most.
pub const MAX_ENTRIES: usize = 1000;
/// Entries counted at most: past this the walk stops.
pub const MAX_COUNTED: usize = 20_000;

const DESCRIPTION: &str = "List a directory, one path per line; directories end with `/`, \
symlinks with `@`. Gitignored files and .git are left out.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirArgs {
    pub path: Option<String>,
    /// Levels to descend (1: direct entries only). Defaults to 1.
    #[schemars(range(min = 1, max = 5))]
    pub depth: Option<usize>,
}

pub struct ListDir;

impl TypedTool for ListDir {
    const INFO: &'static ToolInfo = &tool_facts::LIST_DIR;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = ListDirArgs;

    fn call<'a>(
        &'a self,
        args: ListDirArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = ctx.clone();
            blocking(NAME, move || list(&Workspace::new(&ctx)?, &args)).await
        })
    }
}

fn list(ws: &Workspace, args: &ListDirArgs) -> Result<ToolOutput, ToolError> {
    list_counting(ws, args, MAX_COUNTED)
}

fn list_counting(
    ws: &Workspace,
    args: &ListDirArgs,
    max_counted: usize,
) -> Result<ToolOutput, ToolError> {
    let abs = ws.resolve_or_cwd(args.path.as_deref())?;
    let rel = ws.relative(&abs);
    // A real folder beneath the root, no symlink on the way.
    ws.open_dir(&abs)?;
    let asked = args.depth.map(|depth| u64::try_from(depth).unwrap_or(u64::MAX));
    let (depth, depth_note) =
        super::args::bounded("depth", asked, DEFAULT_DEPTH as u64, 1, MAX_DEPTH as u64);
    let depth = usize::try_from(depth).unwrap_or(MAX_DEPTH);
    let mut shown = Vec::new();
    let mut total = 0usize;
    let mut counted_all = true;
    let mut more_than_shown = false;
    for entry in walker(&abs, Some(depth)).build().flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if total == max_counted {
            // Counting the rest of a huge tree would cost its whole walk.
            counted_all = false;
            break;
        }
        if shown.len() == MAX_ENTRIES {
            more_than_shown = true;
            break;
        }
        total += 1;
        shown.push(describe(ws, entry.path(), entry.file_type()));
    }
    if more_than_shown {
        // The rest is only counted: in no order, on every core.
        (total, counted_all) = count_entries(&abs, depth, max_counted);
    }
    let meta = ToolMeta::details(json!({
        "path": rel.to_string_lossy(),
        "depth": depth,
        "entries": total,
        "entries_counted_all": counted_all,
        "truncated": !counted_all || total > shown.len(),
    }));
    let mut text = render(&shown, total, counted_all);
    if let Some(note) = depth_note {
        text = format!("{note}\n{text}");
    }
    Ok(ToolOutput::new(text, meta))
}

/// Entries below `root` down to `depth`, counted up to `max_counted`
/// (then `false`: there are more), by the parallel walk in no order.
fn count_entries(root: &Path, depth: usize, max_counted: usize) -> (usize, bool) {
    let seen = AtomicUsize::new(0);
    unsorted_walker(root, Some(depth)).build_parallel().run(|| {
        let seen = &seen;
        Box::new(move |entry| {
            if !entry.is_ok_and(|entry| entry.depth() > 0) {
                return WalkState::Continue;
            }
            if seen.fetch_add(1, Ordering::Relaxed) >= max_counted {
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    let seen = seen.into_inner();
    (seen.min(max_counted), seen <= max_counted)
}

/// The walk shared with glob: gitignore always honoured, hidden files
/// shown, `.git` pruned, siblings sorted by name.
pub(crate) fn walker(root: &Path, depth: Option<usize>) -> WalkBuilder {
    let mut builder = unsorted_walker(root, depth);
    builder.sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// [`walker`] in no particular order, so it can run in parallel (glob
/// sorts what it found itself). A caller's own `filter_entry` replaces
/// the `.git` one, so it must prune `.git` too.
pub(crate) fn unsorted_walker(root: &Path, depth: Option<usize>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .max_depth(depth)
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git");
    builder
}

fn describe(ws: &Workspace, path: &Path, file_type: Option<std::fs::FileType>) -> String {
    let mut text = ws.display(path);
    match file_type {
        Some(kind) if kind.is_dir() => text.push('/'),
        Some(kind) if kind.is_symlink() => text.push('@'),
        Some(_) | None => {}
    }
    text
}

fn render(shown: &[String], total: usize, counted_all: bool) -> String {
    if shown.is_empty() {
        return "(empty directory)".to_owned();
    }
    let mut text = shown.join("\n");
    text.push('\n');
    let of = if counted_all { format!("{total}") } else { format!("more than {total}") };
    if !counted_all || total > shown.len() {
        text.push_str(&format!(
            "[showing {} of {of} entries; list a subdirectory or use a smaller depth]\n",
            shown.len()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    async fn list(ws: &TestWorkspace, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        ws.run(&ListDir, args).await
    }

    fn fixture() -> TestWorkspace {
        let ws = TestWorkspace::new();
        ws.write("b.txt", "");
        ws.write("a.txt", "");
        ws.write("src/lib.rs", "");
        ws.write("src/deep/mod.rs", "");
        ws.write(".git/HEAD", "ref");
        ws.write(".gitignore", "target/\n");
        ws.write("target/debug/out", "");
        ws
    }

    #[tokio::test]
    async fn lists_direct_entries_sorted_with_dirs_marked() {
        let ws = fixture();
        let out = list(&ws, json!({})).await.unwrap();
        assert_eq!(out.text, ".gitignore\na.txt\nb.txt\nsrc/\n");
        assert_eq!(out.meta["entries"], 4);
    }

    #[tokio::test]
    async fn depth_descends_and_paths_are_workspace_relative() {
        let ws = fixture();
        let out = list(&ws, json!({ "path": "src", "depth": 3 })).await.unwrap();
        assert_eq!(out.text, "src/deep/\nsrc/deep/mod.rs\nsrc/lib.rs\n");
    }

    // Issue 32: a bound past the schema's is said, not applied in silence.
    #[tokio::test]
    async fn a_depth_past_the_bounds_is_said() {
        let ws = fixture();
        let out = list(&ws, json!({ "path": "src", "depth": 50 })).await.unwrap();
        assert_eq!(
            out.text,
            "[depth lowered to 5, the most allowed]\nsrc/deep/\nsrc/deep/mod.rs\nsrc/lib.rs\n"
        );
        let out = list(&ws, json!({ "path": "src", "depth": 0 })).await.unwrap();
        assert!(out.text.starts_with("[depth raised to 1, the least allowed]\n"), "{}", out.text);
    }

    #[tokio::test]
    async fn symlinks_are_marked_not_followed() {
        let ws = fixture();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join("secret"), "").unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), ws.path("src/outside")).unwrap();
        let out = list(&ws, json!({ "path": "src", "depth": 5 })).await.unwrap();
        assert!(out.text.contains("src/outside@\n"), "{}", out.text);
        assert!(!out.text.contains("secret"));
    }

    #[tokio::test]
    async fn many_entries_are_capped_with_a_note() {
        let ws = TestWorkspace::new();
        for n in 0..MAX_ENTRIES + 5 {
            ws.write(&format!("f{n:05}"), "");
        }
        let out = list(&ws, json!({})).await.unwrap();
        assert_eq!(out.text.lines().count(), MAX_ENTRIES + 1);
        assert!(out.text.contains(&format!("showing {MAX_ENTRIES} of {}", MAX_ENTRIES + 5)));
        assert_eq!(out.meta["truncated"], true);
    }

    #[test]
    fn a_huge_tree_is_walked_only_up_to_the_counting_bound() {
        let ws = TestWorkspace::new();
        for n in 0..30 {
            ws.write(&format!("d{}/f{n:02}", n / 10), "");
        }
        let workspace = Workspace::new(&ws.ctx).unwrap();
        let args = ListDirArgs { path: None, depth: Some(2) };
        let out = list_counting(&workspace, &args, 12).unwrap();
        assert!(
            out.text.ends_with(
                "[showing 12 of more than 12 entries; list a subdirectory or use a smaller depth]\n"
            ),
            "{}",
            out.text
        );
        assert_eq!(
            (out.meta["entries"].clone(), out.meta["truncated"].clone()),
            (json!(12), json!(true))
        );
        let out = list_counting(&workspace, &args, 100).unwrap();
        assert_eq!(out.meta["entries"], 33, "3 folders and 30 files");
        assert_eq!(out.meta["entries_counted_all"], true);
    }

    #[test]
    fn past_the_entries_shown_the_count_still_stops_at_its_bound() {
        let ws = TestWorkspace::new();
        for n in 0..MAX_ENTRIES + 30 {
            ws.write(&format!("d{}/f{n:05}", n / 100), "");
        }
        let workspace = Workspace::new(&ws.ctx).unwrap();
        let args = ListDirArgs { path: None, depth: Some(2) };
        let out = list_counting(&workspace, &args, MAX_ENTRIES + 10).unwrap();
        assert!(out.text.ends_with("[showing 1000 of more than 1010 entries; list a subdirectory or use a smaller depth]\n"), "{}", out.text);
        assert_eq!(out.meta["entries_counted_all"], false);
        let out = list_counting(&workspace, &args, MAX_COUNTED).unwrap();
        assert_eq!(out.meta["entries"], MAX_ENTRIES + 30 + 11, "11 folders and the files");
        assert!(out.text.starts_with("d0/\nd0/f00000\n"), "sorted, depth first");
    }

    #[tokio::test]
    async fn errors_for_files_missing_and_outside() {
        let ws = fixture();
        let file = list(&ws, json!({ "path": "a.txt" })).await;
        assert!(matches!(file, Err(ToolError::NotADirectory { .. })), "{file:?}");
        let missing = list(&ws, json!({ "path": "nope" })).await;
        assert!(matches!(missing, Err(ToolError::NotFound { .. })), "{missing:?}");
        let outside = list(&ws, json!({ "path": ".." })).await;
        assert!(matches!(outside, Err(ToolError::OutsideWorkspace { .. })), "{outside:?}");
    }

    #[tokio::test]
    async fn empty_directory_says_so() {
        let ws = TestWorkspace::new();
        std::fs::create_dir(ws.path("empty")).unwrap();
        let out = list(&ws, json!({ "path": "empty" })).await.unwrap();
        assert_eq!(out.text, "(empty directory)");
    }
}
