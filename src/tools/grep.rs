//! `grep`: searches file contents for a regex, ripgrep-style, over the
//! engine in [`super::grep_search`].
//!
//! Invariants: output is sorted by path then line whatever the thread
//! timing; paths are workspace-relative; `content` mode prints ripgrep's
//! `path:line:text` for matches and `path-line-text` for context lines,
//! with `--` between separate groups; `files` mode prints paths, `count`
//! mode `path:count`; every mode is capped at `limit` entries (matching
//! lines, files or counts) with a note of how many more there were.

use std::fmt::Write as _;

use grep_regex::RegexMatcherBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::blocking;
use super::beneath::Entry;
use super::grep_search::{COLLECT_CEILING, Collect, FileResult, collect, walker};
use super::paths::Workspace;
use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};

const NAME: &str = tool_facts::GREP.name;
/// Entries shown when the model gives no `limit`.
pub const DEFAULT_LIMIT: usize = 200;
/// `limit` is clamped to this.
pub const MAX_LIMIT: usize = 2000;
/// `context` is lowered to this (and the result says so).
pub const MAX_CONTEXT: usize = 10;

const DESCRIPTION: &str = "Search file contents with a regular expression (Rust syntax, like \
ripgrep). `mode` `content` gives `path:line:text` (context lines `path-line-text`), `files` the \
matching paths, `count` `path:count`. Gitignored and binary files are skipped.";

/// What to return.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GrepMode {
    /// Matching lines (with optional context).
    #[default]
    Content,
    /// Paths of matching files.
    Files,
    /// Number of matching lines per file.
    Count,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// The regular expression, e.g. `fn\s+main`.
    pub pattern: String,
    /// File or directory to search.
    pub path: Option<String>,
    /// Only files matching this glob (`*.rs`; `!*.min.js` excludes).
    pub glob: Option<String>,
    /// Only files of this ripgrep type (`rust`, `py`).
    #[serde(rename = "type")]
    pub file_type: Option<String>,
    /// Ignore case.
    pub case_insensitive: Option<bool>,
    /// Defaults to `content`.
    #[serde(default)]
    #[schemars(schema_with = "mode_schema")]
    pub mode: Option<GrepMode>,
    /// Lines around each match in `content` mode, at most 10. Defaults to 0.
    #[schemars(range(max = 10))]
    pub context: Option<usize>,
    /// Entries to return, at most 2000. Defaults to 200.
    #[serde(alias = "max_results")]
    #[schemars(range(min = 1, max = 2000))]
    pub limit: Option<usize>,
}

/// A plain string enum: some providers reject `$ref`/`$defs` in tool schemas.
fn mode_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": ["content", "files", "count"] })
}

pub struct Grep;

impl TypedTool for Grep {
    const INFO: &'static ToolInfo = &tool_facts::GREP;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = GrepArgs;

    fn call<'a>(
        &'a self,
        args: GrepArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let ctx = ctx.clone();
            blocking(NAME, move || search(&Workspace::new(&ctx)?, &args)).await
        })
    }
}

fn search(ws: &Workspace, args: &GrepArgs) -> Result<ToolOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|source| ToolError::InvalidRegex { pattern: args.pattern.clone(), source })?;
    let base = ws.resolve_or_cwd(args.path.as_deref())?;
    let rel_base = ws.relative(&base);
    match ws.entry(&base)? {
        Entry::File { .. } | Entry::Dir => {}
        Entry::Missing => return Err(ToolError::NotFound { path: rel_base }),
        Entry::Symlink => return Err(ToolError::PathChanged { path: rel_base }),
        Entry::Special(kind) => return Err(ToolError::NotRegularFile { path: rel_base, kind }),
    }
    let walk = walker(&base, args.glob.as_deref(), args.file_type.as_deref())?;
    let mode = args.mode.unwrap_or_default();
    let collect_mode = match mode {
        GrepMode::Content => Collect::Lines { context: args.context.unwrap_or(0).min(MAX_CONTEXT) },
        GrepMode::Files => Collect::Files,
        GrepMode::Count => Collect::Count,
    };
    let (mut files, stopped_early) = collect(ws, walk, &matcher, collect_mode);
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let total_matches: usize = files.iter().map(|file| file.matches).sum();
    let rendered = match mode {
        GrepMode::Content => render_lines(ws, &files, limit),
        GrepMode::Files => render_per_file(ws, &files, limit, |_| String::new()),
        GrepMode::Count => render_per_file(ws, &files, limit, |file| format!(":{}", file.matches)),
    };
    let meta = ToolMeta::details(json!({
        "path": rel_base.to_string_lossy(),
        "mode": format!("{mode:?}").to_lowercase(),
        "matches": total_matches,
        "files": files.len(),
        "truncated": rendered.omitted > 0 || stopped_early,
    }));
    let mut text = rendered.text;
    if files.is_empty() {
        text = format!("no matches for `{}` under {}\n", args.pattern, rel_base.display());
    }
    // A bound the model went past is said, not applied silently.
    if args.context.is_some_and(|asked| asked > MAX_CONTEXT) && mode == GrepMode::Content {
        let _ = writeln!(text, "[context lowered to {MAX_CONTEXT}, the most allowed]");
    }
    if args.limit.is_some_and(|asked| asked > MAX_LIMIT) {
        let _ = writeln!(text, "[limit lowered to {MAX_LIMIT}, the most allowed]");
    }
    if args.limit == Some(0) {
        let _ = writeln!(text, "[limit raised to 1, the least allowed]");
    }
    if rendered.omitted > 0 {
        let _ = writeln!(
            text,
            "[showing {} of {} {}; {} more not shown. narrow with path, glob or type, or raise limit (at most {MAX_LIMIT})]",
            rendered.shown,
            rendered.shown + rendered.omitted,
            rendered.unit,
            rendered.omitted
        );
    }
    if stopped_early {
        let _ = writeln!(
            text,
            "[search stopped after {COLLECT_CEILING} matching lines; results are incomplete, use a more specific pattern]"
        );
    }
    Ok(ToolOutput::new(text, meta))
}

/// Rendered entries and how many did not fit.
struct Rendered {
    text: String,
    shown: usize,
    omitted: usize,
    unit: &'static str,
}

/// `path:N:text` for matches, `path-N-text` for context, `--` between
/// groups that are not adjacent; at most `limit` matching lines.
fn render_lines(ws: &Workspace, files: &[FileResult], limit: usize) -> Rendered {
    let with_context = files.iter().flat_map(|file| &file.lines).any(|line| !line.is_match);
    let mut text = String::new();
    let (mut shown, mut omitted) = (0, 0);
    let mut previous: Option<(usize, u64)> = None;
    for (index, file) in files.iter().enumerate() {
        let path = ws.display(&file.path);
        for line in &file.lines {
            if shown >= limit {
                omitted += usize::from(line.is_match);
                continue;
            }
            let adjacent = previous == Some((index, line.number.saturating_sub(1)));
            if with_context && previous.is_some() && !adjacent {
                text.push_str("--\n");
            }
            let separator = if line.is_match { ':' } else { '-' };
            let _ = writeln!(text, "{path}{separator}{}{separator}{}", line.number, line.text);
            shown += usize::from(line.is_match);
            previous = Some((index, line.number));
        }
    }
    Rendered { text, shown, omitted, unit: "matching lines" }
}

/// One line per file: its path plus `suffix(file)`.
fn render_per_file(
    ws: &Workspace,
    files: &[FileResult],
    limit: usize,
    suffix: impl Fn(&FileResult) -> String,
) -> Rendered {
    let mut text = String::new();
    for file in files.iter().take(limit) {
        let _ = writeln!(text, "{}{}", ws.display(&file.path), suffix(file));
    }
    let shown = files.len().min(limit);
    Rendered { text, shown, omitted: files.len() - shown, unit: "files" }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    fn fixture() -> TestWorkspace {
        let ws = TestWorkspace::new();
        ws.write("src/main.rs", "fn main() {\n    helper();\n}\n");
        ws.write("src/lib.rs", "pub fn helper() {}\n// TODO: more\n");
        ws.write("README.md", "Call helper() to help.\n");
        ws.write(".gitignore", "target/\n");
        ws.write("target/gen.rs", "fn helper() {}\n");
        ws.write("blob.bin", b"helper\0\x01\x02");
        ws
    }

    async fn grep(ws: &TestWorkspace, args: serde_json::Value) -> Result<ToolOutput, ToolError> {
        ws.run(&Grep, args).await
    }

    #[tokio::test]
    async fn finds_lines_sorted_and_skips_ignored_and_binary() {
        let ws = fixture();
        let out = grep(&ws, json!({ "pattern": "helper" })).await.unwrap();
        assert_eq!(
            out.text,
            "README.md:1:Call helper() to help.\nsrc/lib.rs:1:pub fn helper() {}\nsrc/main.rs:2:    helper();\n"
        );
        assert_eq!(out.meta["matches"], 3);
        assert_eq!(out.meta["files"], 3);
    }

    #[tokio::test]
    async fn glob_and_path_narrow_the_search() {
        let ws = fixture();
        let out = grep(&ws, json!({ "pattern": "helper", "glob": "*.rs" })).await.unwrap();
        assert_eq!(out.text.lines().count(), 2, "{}", out.text);
        let out = grep(&ws, json!({ "pattern": "helper", "path": "src/main.rs" })).await.unwrap();
        assert_eq!(out.text, "src/main.rs:2:    helper();\n");
        let out = grep(&ws, json!({ "pattern": "helper", "glob": "!*.md" })).await.unwrap();
        assert!(!out.text.contains("README"), "{}", out.text);
    }

    #[tokio::test]
    async fn case_insensitive_matches_any_case() {
        let ws = fixture();
        let out = grep(&ws, json!({ "pattern": "todo" })).await.unwrap();
        assert!(out.text.starts_with("no matches for `todo`"), "{}", out.text);
        assert_eq!(out.meta["files"], 0);
        let out = grep(&ws, json!({ "pattern": "todo", "case_insensitive": true })).await.unwrap();
        assert_eq!(out.text, "src/lib.rs:2:// TODO: more\n");
    }

    #[tokio::test]
    async fn results_are_capped_with_a_note() {
        let ws = TestWorkspace::new();
        for n in 0..5 {
            ws.write(&format!("f{n}.txt"), "hit\nhit\n");
        }
        let out = grep(&ws, json!({ "pattern": "hit", "max_results": 3 })).await.unwrap();
        assert!(out.text.starts_with("f0.txt:1:hit\nf0.txt:2:hit\nf1.txt:1:hit\n"), "{}", out.text);
        assert!(out.text.contains("showing 3 of 10 matching lines; 7 more"), "{}", out.text);
        assert_eq!(out.meta["truncated"], true);
    }

    #[tokio::test]
    async fn files_and_count_modes() {
        let ws = fixture();
        let out = grep(&ws, json!({ "pattern": "helper", "mode": "files" })).await.unwrap();
        assert_eq!(out.text, "README.md\nsrc/lib.rs\nsrc/main.rs\n");
        ws.write("src/many.rs", "helper\nhelper\nhelper\n");
        let out = grep(&ws, json!({ "pattern": "helper", "mode": "count", "type": "rust" }))
            .await
            .unwrap();
        assert_eq!(out.text, "src/lib.rs:1\nsrc/main.rs:1\nsrc/many.rs:3\n");
        assert_eq!(out.meta["matches"], 5);
        let out =
            grep(&ws, json!({ "pattern": "helper", "mode": "files", "limit": 1 })).await.unwrap();
        assert!(out.text.starts_with("README.md\n[showing 1 of 4 files; 3 more"), "{}", out.text);
    }

    #[tokio::test]
    async fn a_bound_past_the_maximum_is_said_in_the_result() {
        let ws = TestWorkspace::new();
        ws.write("a.txt", "hit\n");
        let out =
            grep(&ws, json!({ "pattern": "hit", "context": 50, "limit": 9000 })).await.unwrap();
        assert!(out.text.contains("[context lowered to 10, the most allowed]"), "{}", out.text);
        assert!(out.text.contains("[limit lowered to 2000, the most allowed]"), "{}", out.text);
        let specs = crate::tools::ToolRegistry::builtin().specs();
        let schema = &specs.iter().find(|spec| spec.name == NAME).unwrap().parameters;
        assert_eq!(schema["properties"]["context"]["maximum"], 10, "{schema}");
        assert_eq!(schema["properties"]["limit"]["maximum"], 2000, "{schema}");
    }

    #[tokio::test]
    async fn context_lines_use_ripgrep_separators() {
        let ws = TestWorkspace::new();
        ws.write("a.txt", "1\n2\nhit\n4\n5\n6\n7\nhit\n9\n");
        ws.write("b.txt", "hit\nx\n");
        let out = grep(&ws, json!({ "pattern": "hit", "context": 1 })).await.unwrap();
        assert_eq!(
            out.text,
            "a.txt-2-2\na.txt:3:hit\na.txt-4-4\n--\na.txt-7-7\na.txt:8:hit\na.txt-9-9\n--\n\
             b.txt:1:hit\nb.txt-2-x\n"
        );
    }

    #[tokio::test]
    async fn type_filters_and_unknown_types_are_explained() {
        let ws = fixture();
        let out = grep(&ws, json!({ "pattern": "helper", "type": "md" })).await.unwrap();
        assert_eq!(out.text, "README.md:1:Call helper() to help.\n");
        let error = grep(&ws, json!({ "pattern": "x", "type": "klingon" })).await.err();
        let message = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("unknown file type `klingon`"), "{message}");
    }

    #[tokio::test]
    async fn invalid_regex_names_the_problem() {
        let ws = fixture();
        let error = grep(&ws, json!({ "pattern": "fn (" })).await.err();
        assert!(matches!(error, Some(ToolError::InvalidRegex { .. })), "{error:?}");
        let message = error.map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("invalid regex `fn (`"), "{message}");
        assert!(message.contains("unclosed group"), "{message}");
    }

    #[tokio::test]
    async fn missing_path_and_escapes_are_errors() {
        let ws = fixture();
        let missing = grep(&ws, json!({ "pattern": "x", "path": "nope" })).await;
        assert!(matches!(missing, Err(ToolError::NotFound { .. })), "{missing:?}");
        let outside = grep(&ws, json!({ "pattern": "root", "path": "/etc" })).await;
        assert!(matches!(outside, Err(ToolError::OutsideWorkspace { .. })), "{outside:?}");
    }
}
