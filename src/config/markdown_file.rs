//! Markdown files with YAML front matter written by users for other tools
//! too (Claude Code's agents and commands, Codex's prompts): reading one
//! with a size bound, and the front matter's fields as Claude Code writes
//! them (a string, or a list given as YAML or as `A, B, C`).
//!
//! Claude Code reads front matter leniently: `argument-hint: [pr] [priority]`
//! is not valid YAML, and `argument-hint: [msg]` is a YAML list, yet both
//! are meant as text. So every top-level `key: value` line is also kept as
//! written, and a field that is not a YAML scalar (or front matter that is
//! not YAML at all) is read from that text.
//!
//! Invariants: never panics on input; a file past [`MAX_DEFINITION_BYTES`]
//! or not UTF-8 is an error naming the file, never a partial read; a file
//! without front matter is all body.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use yaml_rust2::Yaml;

use crate::context::frontmatter::{load_yaml, split};

pub use crate::support::bounded_read::MAX_DEFINITION_BYTES;
use crate::support::bounded_read::{self, BoundedReadError};

/// Why a definition file was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DefinitionError {
    #[error("cannot read it: {message}")]
    Read { message: String },
    #[error("it is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("it is not UTF-8 text")]
    NotText,
    #[error("its front matter has no `{field}`")]
    Missing { field: &'static str },
    #[error("`name` must be 1-64 characters of a-z, 0-9, `-` and `_`, got `{name}`")]
    BadName { name: String },
    #[error("`model` must be a model name (no spaces or control characters), got {model:?}")]
    BadModel { model: String },
    #[error("`{name}` is a built-in command of keel's and cannot be replaced")]
    Reserved { name: String },
}

/// The text of a definition file (an agent, a command, a skill, a memory
/// note): at most [`MAX_DEFINITION_BYTES`], UTF-8, never a partial read.
pub fn read_bounded(path: &Path) -> Result<String, DefinitionError> {
    bounded_read::read_bounded(path).map_err(|error| match error {
        BoundedReadError::Read { message } => DefinitionError::Read { message },
        BoundedReadError::TooLarge { limit } => DefinitionError::TooLarge { limit },
        BoundedReadError::NotText => DefinitionError::NotText,
    })
}

/// One definition file that was not loaded, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefinitionProblem {
    pub path: PathBuf,
    pub error: DefinitionError,
}

/// A parsed file: its front matter (an empty mapping when there is none)
/// and its body.
#[derive(Debug, Clone)]
pub struct MarkdownFile {
    front: Yaml,
    /// Each top-level `key: value` line's value as written.
    lines: BTreeMap<String, String>,
    pub body: String,
}

impl MarkdownFile {
    /// Reads and parses `path`.
    pub fn read(path: &Path) -> Result<Self, DefinitionError> {
        Self::parse(&read_bounded(path)?)
    }

    /// Parses the text of a definition.
    pub fn parse(text: &str) -> Result<Self, DefinitionError> {
        let empty = Yaml::Hash(Default::default());
        let Some((yaml, body)) = split(text) else {
            return Ok(Self { front: empty, lines: BTreeMap::new(), body: text.to_owned() });
        };
        let front = load_yaml(yaml).ok().and_then(|docs| docs.into_iter().next()).unwrap_or(empty);
        Ok(Self { front, lines: top_level_lines(yaml), body: body.to_owned() })
    }

    /// A field's text, trimmed: a YAML scalar (numbers and booleans as
    /// written), else the line as written; `None` when absent or empty.
    pub fn text(&self, key: &str) -> Option<String> {
        let text = match &self.front[key] {
            Yaml::String(value) | Yaml::Real(value) => value.clone(),
            Yaml::Integer(value) => value.to_string(),
            Yaml::Boolean(value) => value.to_string(),
            Yaml::Array(_) | Yaml::Hash(_) | Yaml::Alias(_) | Yaml::Null | Yaml::BadValue => {
                self.lines.get(key)?.clone()
            }
        };
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    }

    /// The `model` field: a model name, printed to the terminal and sent
    /// to the provider, so no whitespace or control characters.
    pub fn model(&self) -> Result<Option<String>, DefinitionError> {
        match self.text("model") {
            Some(model) if model.chars().any(|c| c.is_whitespace() || c.is_control()) => {
                Err(DefinitionError::BadModel { model })
            }
            model => Ok(model),
        }
    }

    /// A list field: a YAML sequence, or one string of comma-separated
    /// items (how Claude Code's `tools` and `allowed-tools` are usually
    /// written). `None` when absent.
    pub fn list(&self, key: &str) -> Option<Vec<String>> {
        let items: Vec<String> = match &self.front[key] {
            Yaml::Array(values) => values
                .iter()
                .filter_map(|value| match value {
                    Yaml::String(text) => Some(text.clone()),
                    Yaml::Integer(_)
                    | Yaml::Real(_)
                    | Yaml::Boolean(_)
                    | Yaml::Array(_)
                    | Yaml::Hash(_)
                    | Yaml::Alias(_)
                    | Yaml::Null
                    | Yaml::BadValue => None,
                })
                .collect(),
            Yaml::String(text) => split_list(text),
            Yaml::Integer(_)
            | Yaml::Real(_)
            | Yaml::Boolean(_)
            | Yaml::Hash(_)
            | Yaml::Alias(_)
            | Yaml::Null
            | Yaml::BadValue => split_list(self.lines.get(key)?),
        };
        Some(
            items
                .into_iter()
                .map(|item| item.trim().to_owned())
                .filter(|i| !i.is_empty())
                .collect(),
        )
    }
}

/// Every `key: value` line without indentation, value unquoted.
fn top_level_lines(yaml: &str) -> BTreeMap<String, String> {
    yaml.lines()
        .filter(|line| !line.starts_with([' ', '\t', '#', '-']))
        .filter_map(|line| line.split_once(':'))
        .map(|(key, value)| {
            let value = value.trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            (key.trim().to_owned(), unquoted.to_owned())
        })
        .collect()
}

/// `Read, Grep, Bash(git diff:*)` → its items; commas inside parentheses
/// belong to the item.
fn split_list(text: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c == ',' && depth == 0 {
            items.push(std::mem::take(&mut current));
        } else {
            current.push(c);
        }
    }
    items.push(current);
    items
}

/// Whether `name` is a valid agent or command name.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// The `*.md` files in `dir` (sorted), descending `depth` more folders;
/// a missing folder has none.
pub fn markdown_files(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            if depth > 0 {
                files.extend(markdown_files(&path, depth - 1));
            }
        } else if path.extension().is_some_and(|ext| ext == "md") && path.is_file() {
            files.push(path);
        }
    }
    files
}

/// Start-up warnings of one kind as the user sees them first: up to three
/// lines as they are, more as one line counting them and naming the first
/// (`keel debug prompt` prints every line).
pub fn grouped(what: &str, lines: Vec<String>) -> Vec<String> {
    if lines.len() <= 3 {
        return lines;
    }
    vec![format!(
        "{} {what}; the first: {}; `keel debug prompt` lists every one",
        lines.len(),
        lines[0]
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_come_as_yaml_sequences_or_comma_strings() {
        let file = MarkdownFile::parse(
            "---\ntools: Read, Grep, Bash(git diff:*, git log:*)\nother: [a, b]\n---\nbody",
        )
        .unwrap();
        assert_eq!(file.list("tools").unwrap(), ["Read", "Grep", "Bash(git diff:*, git log:*)"]);
        assert_eq!(file.list("other").unwrap(), ["a", "b"]);
        assert_eq!(file.list("missing"), None);
        assert_eq!(file.body, "body");
    }

    #[test]
    fn no_front_matter_is_all_body() {
        let file = MarkdownFile::parse("Just a prompt with $ARGUMENTS\n").unwrap();
        assert_eq!(file.text("description"), None);
        assert_eq!(file.body, "Just a prompt with $ARGUMENTS\n");
    }

    #[test]
    fn claude_style_hints_read_as_written_even_when_not_yaml() {
        let file = MarkdownFile::parse("---\nargument-hint: [msg]\n---\n").unwrap();
        assert_eq!(file.text("argument-hint").as_deref(), Some("[msg]"));
        let text = "---\nargument-hint: [pr-number] [priority]\ndescription: \"Review\"\n\
                    allowed-tools: Bash(gh pr view:*), Read\n---\nbody";
        let file = MarkdownFile::parse(text).unwrap();
        assert_eq!(file.text("argument-hint").as_deref(), Some("[pr-number] [priority]"));
        assert_eq!(file.text("description").as_deref(), Some("Review"));
        assert_eq!(file.list("allowed-tools").unwrap(), ["Bash(gh pr view:*)", "Read"]);
    }

    #[test]
    fn a_file_past_the_bound_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.md");
        std::fs::write(&path, "x".repeat(MAX_DEFINITION_BYTES as usize + 1)).unwrap();
        assert!(matches!(MarkdownFile::read(&path), Err(DefinitionError::TooLarge { .. })));
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert_eq!(MarkdownFile::read(&path).unwrap_err(), DefinitionError::NotText);
    }

    #[test]
    fn names_are_lowercase_words() {
        assert!(valid_name("code-reviewer") && valid_name("fix_2"));
        assert!(!valid_name("") && !valid_name("Bad Name") && !valid_name("../x"));
    }
}
