//! The engine behind `grep`: a parallel `ignore` walk with one
//! `grep-searcher` per thread, collecting per-file results.
//!
//! Invariants: gitignore is honoured even outside git, `.git` is pruned and
//! hidden files are searched; binary files (a NUL byte) are dropped whole;
//! unreadable files are skipped as ripgrep does, and so is anything that is
//! not a regular file really inside the workspace when opened (a FIFO, a
//! device, a folder swapped for a symlink mid-walk: `super::beneath`);
//! symlinks are not followed; collection stops after
//! [`COLLECT_CEILING`] matching lines so a too-broad pattern cannot eat
//! memory; in [`Collect::Files`] mode each file stops at its first match.
//! Results are unordered: the caller sorts them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};

use super::ToolError;
use super::beneath::open_searchable;
use super::paths::Workspace;
use crate::protocol::tool_facts::names;

/// The search stops once this many matching lines were collected.
pub const COLLECT_CEILING: usize = 20_000;
/// Lines are cut to this many characters.
pub const MAX_LINE_CHARS: usize = 500;

/// What to keep of each file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collect {
    /// Matching lines with `context` lines around them.
    Lines { context: usize },
    /// Only whether the file matches (stops at the first match).
    Files,
    /// The number of matching lines.
    Count,
}

/// One shown line of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub number: u64,
    pub text: String,
    /// A match (`path:N:text`) rather than context (`path-N-text`).
    pub is_match: bool,
}

/// What one file yielded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileResult {
    pub path: PathBuf,
    /// Matching lines in the file (in `Files` mode: 1).
    pub matches: usize,
    /// Shown lines (empty unless [`Collect::Lines`]).
    pub lines: Vec<Line>,
}

/// Which files to search under `base`: a glob override and ripgrep file
/// types (`rust`, `py`, …).
pub fn walker(
    base: &Path,
    glob: Option<&str>,
    file_type: Option<&str>,
) -> Result<WalkBuilder, ToolError> {
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
    if let Some(name) = file_type {
        let mut types = TypesBuilder::new();
        types.add_defaults();
        let known = types.definitions().iter().any(|def| def.name() == name);
        if !known {
            return Err(ToolError::InvalidArguments {
                tool: names::GREP.to_owned(),
                message: format!(
                    "unknown file type `{name}`; use a ripgrep type name such as rust, py, js, \
                     ts, go, java, c, cpp, md, toml, json, yaml, or use glob instead"
                ),
            });
        }
        types.select(name);
        let built = types.build().map_err(|error| ToolError::InvalidArguments {
            tool: names::GREP.to_owned(),
            message: error.to_string(),
        })?;
        builder.types(built);
    }
    Ok(builder)
}

/// Searches every file the walk yields, in parallel. Returns the per-file
/// results (unordered) and whether the ceiling stopped the search.
pub fn collect(
    ws: &Workspace,
    walker: WalkBuilder,
    matcher: &RegexMatcher,
    mode: Collect,
) -> (Vec<FileResult>, bool) {
    let found = Mutex::new(Vec::new());
    let total = AtomicUsize::new(0);
    walker.build_parallel().run(|| {
        let (found, total) = (&found, &total);
        // One matcher per thread avoids contention on the regex's cache pool.
        let matcher = matcher.clone();
        let context = match mode {
            Collect::Lines { context } => context,
            Collect::Files | Collect::Count => 0,
        };
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\x00'))
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .build();
        Box::new(move |entry| {
            let Ok(entry) = entry else { return WalkState::Continue };
            if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                return WalkState::Continue;
            }
            // Opened without following a final symlink, regular files
            // only, and really inside the workspace once open.
            let Some(file) = open_searchable(ws, entry.path()) else {
                return WalkState::Continue;
            };
            let mut sink = FileSink { mode, ..FileSink::default() };
            let searched = searcher.search_file(&matcher, &file, &mut sink);
            if searched.is_err() || sink.binary || sink.matches == 0 {
                return WalkState::Continue;
            }
            let so_far = total.fetch_add(sink.matches, Ordering::Relaxed) + sink.matches;
            let Ok(mut found) = found.lock() else { return WalkState::Quit };
            found.push(FileResult {
                path: entry.into_path(),
                matches: sink.matches,
                lines: sink.lines,
            });
            if so_far >= COLLECT_CEILING { WalkState::Quit } else { WalkState::Continue }
        })
    });
    let stopped = total.load(Ordering::Relaxed) >= COLLECT_CEILING;
    (found.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()), stopped)
}

/// Collects one file's results; notes binary files so they can be dropped.
#[derive(Default)]
struct FileSink {
    mode: Collect,
    lines: Vec<Line>,
    matches: usize,
    binary: bool,
}

impl Default for Collect {
    fn default() -> Self {
        Self::Lines { context: 0 }
    }
}

impl FileSink {
    fn keeps_lines(&self) -> bool {
        matches!(self.mode, Collect::Lines { .. })
    }

    fn push(&mut self, number: u64, raw: &[u8], is_match: bool) {
        let text = String::from_utf8_lossy(raw);
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        let text = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{} [... line cut]", &text[..cut]),
            None => text.to_owned(),
        };
        self.lines.push(Line { number, text, is_match });
    }
}

impl Sink for FileSink {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = found.line_number().unwrap_or(0);
        for (offset, line) in (0u64..).zip(found.lines()) {
            self.matches += 1;
            if self.keeps_lines() {
                self.push(first + offset, line, true);
            }
        }
        Ok(self.mode != Collect::Files && self.matches < COLLECT_CEILING)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.keeps_lines() {
            self.push(context.line_number().unwrap_or(0), context.bytes(), false);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, Self::Error> {
        self.binary = true;
        Ok(false)
    }
}
