//! `grep`: searches file contents for a regex, ripgrep-style.
//!
//! Invariants: walks with the `ignore` parallel walker (gitignore honoured
//! even outside git, `.git` pruned, hidden files searched); binary files
//! (a NUL byte) are skipped whole; output lines are `path:line:text` with
//! workspace-relative paths, sorted by path then line whatever the thread
//! timing, capped at `max_results` with a note. Collection stops at
//! [`COLLECT_CEILING`] matches so a too-broad pattern cannot eat memory.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::{WalkBuilder, WalkState};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args::{blocking, parse_args, schema_of};
use super::paths::Workspace;
use super::{BoxFuture, Tool, ToolContext, ToolError};
use crate::protocol::{ToolClass, ToolOutput};

const NAME: &str = "grep";
/// Matches shown when the model gives no `max_results`.
pub const DEFAULT_MAX_RESULTS: usize = 200;
/// `max_results` is clamped to this.
pub const MAX_RESULTS_LIMIT: usize = 2000;
/// Matched lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 500;
/// The search stops once this many matches were collected.
pub const COLLECT_CEILING: usize = 20_000;

const DESCRIPTION: &str = "Search file contents with a regular expression (Rust regex syntax, \
like ripgrep). Returns matching lines as `path:line:text`, paths relative to the workspace \
root, sorted. Searches `path` (a directory or file, default: the working directory); `glob` \
limits which files are searched (e.g. `*.rs`, `src/**/*.ts`, `!*.min.js`). Gitignored and \
binary files are skipped. Shows 200 matches unless `max_results` (at most 2000) says otherwise.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// Regular expression to search for, e.g. `fn\s+main` or `TODO|FIXME`.
    pub pattern: String,
    /// File or directory to search, relative to the working directory. Defaults to ".".
    pub path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` (prefix with `!` to exclude).
    pub glob: Option<String>,
    /// Match regardless of case. Defaults to false.
    pub case_insensitive: Option<bool>,
    /// Maximum number of matching lines to return (at most 2000). Defaults to 200.
    pub max_results: Option<usize>,
}

pub struct Grep;

impl Tool for Grep {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        DESCRIPTION
    }

    fn parameters(&self) -> serde_json::Value {
        schema_of::<GrepArgs>()
    }

    fn class(&self) -> ToolClass {
        ToolClass::ReadOnly
    }

    fn run<'a>(
        &'a self,
        args: serde_json::Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: GrepArgs = parse_args(NAME, args)?;
            let ctx = ctx.clone();
            blocking(NAME, move || search(&Workspace::new(&ctx)?, &args)).await
        })
    }
}

/// One matching line.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Hit {
    path: PathBuf,
    line: u64,
    text: String,
}

fn search(ws: &Workspace, args: &GrepArgs) -> Result<ToolOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|source| ToolError::InvalidRegex { pattern: args.pattern.clone(), source })?;
    let base = ws.resolve(args.path.as_deref().unwrap_or("."))?;
    let rel_base = ws.relative(&base);
    std::fs::metadata(&base).map_err(|source| ToolError::io(&rel_base, source))?;
    let walker = walker(&base, args.glob.as_deref())?;
    let mut hits = collect(walker, &matcher);
    let stopped_early = hits.len() >= COLLECT_CEILING;
    hits.sort_unstable();
    let total = hits.len();
    let files = count_files(&hits);
    let limit = args.max_results.unwrap_or(DEFAULT_MAX_RESULTS).clamp(1, MAX_RESULTS_LIMIT);
    hits.truncate(limit);
    let meta = json!({
        "path": rel_base.to_string_lossy(),
        "matches": total,
        "files": files,
        "truncated": total > hits.len() || stopped_early,
    });
    let mut text = render(ws, &hits, total, files);
    if hits.is_empty() {
        text = format!("no matches for `{}` under {}", args.pattern, rel_base.display());
    }
    if stopped_early {
        text.push_str(&format!(
            "[search stopped after {COLLECT_CEILING} matches; results may be incomplete, use a more specific pattern]\n"
        ));
    }
    Ok(ToolOutput { text, meta })
}

fn walker(base: &Path, glob: Option<&str>) -> Result<WalkBuilder, ToolError> {
    let mut builder = WalkBuilder::new(base);
    builder.hidden(false).require_git(false).filter_entry(|entry| entry.file_name() != ".git");
    if let Some(glob) = glob {
        let invalid = |source: ignore::Error| ToolError::InvalidGlob {
            pattern: glob.to_owned(),
            source: Box::new(source),
        };
        let mut overrides = OverrideBuilder::new(base);
        overrides.add(glob).map_err(invalid)?;
        builder.overrides(overrides.build().map_err(invalid)?);
    }
    Ok(builder)
}

/// Searches every file the walk yields, in parallel.
fn collect(walker: WalkBuilder, matcher: &RegexMatcher) -> Vec<Hit> {
    let found = Mutex::new(Vec::new());
    walker.build_parallel().run(|| {
        let found = &found;
        // One matcher per thread avoids contention on the regex's cache pool.
        let matcher = matcher.clone();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .build();
        Box::new(move |entry| {
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                return WalkState::Continue;
            }
            let mut sink = FileSink::default();
            // An unreadable file is skipped, as ripgrep does.
            let searched = searcher.search_path(&matcher, entry.path(), &mut sink);
            if searched.is_err() || sink.binary || sink.lines.is_empty() {
                return WalkState::Continue;
            }
            let Ok(mut found) = found.lock() else { return WalkState::Quit };
            let path = entry.into_path();
            found.extend(sink.lines.into_iter().map(|(line, text)| Hit {
                path: path.clone(),
                line,
                text,
            }));
            if found.len() >= COLLECT_CEILING { WalkState::Quit } else { WalkState::Continue }
        })
    });
    found.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Collects one file's matching lines; notes binary files so they can be
/// dropped whole.
#[derive(Default)]
struct FileSink {
    lines: Vec<(u64, String)>,
    binary: bool,
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = found.line_number().unwrap_or(0);
        for (offset, line) in (0u64..).zip(found.lines()) {
            let text = String::from_utf8_lossy(line);
            let text = text.trim_end_matches('\n').trim_end_matches('\r');
            let text = match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => format!("{} [... line cut]", &text[..cut]),
                None => text.to_owned(),
            };
            self.lines.push((first + offset, text));
        }
        Ok(self.lines.len() < COLLECT_CEILING)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}

fn count_files(hits: &[Hit]) -> usize {
    hits.windows(2).filter(|pair| pair[0].path != pair[1].path).count()
        + usize::from(!hits.is_empty())
}

fn render(ws: &Workspace, shown: &[Hit], total: usize, files: usize) -> String {
    let mut text = String::new();
    for hit in shown {
        text.push_str(&format!("{}:{}:{}\n", ws.display(&hit.path), hit.line, hit.text));
    }
    if total > shown.len() {
        text.push_str(&format!(
            "[showing {} of {total} matches in {files} files; narrow with path or glob, or raise max_results (at most {MAX_RESULTS_LIMIT})]\n",
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
        assert!(out.text.contains("showing 3 of 10 matches in 5 files"), "{}", out.text);
        assert_eq!(out.meta["truncated"], true);
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
