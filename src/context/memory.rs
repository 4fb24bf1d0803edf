//! Memory notes: markdown files with front matter (`name`, `description`,
//! `type`) kept in `~/.keel/memory/` and the project's `.keel/memory/`.
//! Only their index goes into the context; `read_memory` reads a body.
//!
//! Invariants: pure (discovery lives in `config::memory`); a note without a
//! usable description is an error naming what is missing, never a panic;
//! a missing `name` falls back to the file's stem.

use yaml_rust2::Yaml;

use super::frontmatter::{load_yaml, split};

/// Longest description accepted.
const MAX_DESCRIPTION: usize = 1024;

/// What the index needs of a note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryMeta {
    pub name: String,
    /// `user`, `project`, `feedback`, `reference`, … (free text, optional).
    pub kind: String,
    pub description: String,
}

/// A note found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryNote {
    pub meta: MemoryMeta,
    pub path: std::path::PathBuf,
}

/// Why a note was not loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error("no front matter (`---` YAML block with name and description) at the top")]
    NoFrontMatter,
    #[error("front matter is not valid YAML: {message}")]
    Yaml { message: String },
    #[error("`description` is missing or empty")]
    NoDescription,
    #[error("`description` has {length} characters; keep it under {MAX_DESCRIPTION}")]
    LongDescription { length: usize },
}

/// Parses a note; `stem` (the file name without `.md`) names it when the
/// front matter does not.
pub fn parse_memory(text: &str, stem: &str) -> Result<MemoryMeta, MemoryError> {
    let (yaml, _) = split(text).ok_or(MemoryError::NoFrontMatter)?;
    let docs = load_yaml(yaml).map_err(|error| MemoryError::Yaml { message: error.to_string() })?;
    let field = |key: &str| {
        docs.first()
            .and_then(|doc| match &doc[key] {
                Yaml::String(value) => Some(value.trim().to_owned()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let description = field("description");
    if description.is_empty() {
        return Err(MemoryError::NoDescription);
    }
    let length = description.chars().count();
    if length > MAX_DESCRIPTION {
        return Err(MemoryError::LongDescription { length });
    }
    let name = Some(field("name")).filter(|name| !name.is_empty()).unwrap_or(stem.to_owned());
    Ok(MemoryMeta { name, kind: field("type"), description })
}

/// The body of a note (everything after the front matter).
pub fn memory_body(text: &str) -> &str {
    split(text).map_or(text, |(_, body)| body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_parses_with_its_type_and_a_default_name() {
        let note = "---\nname: build-tips\ndescription: How to build fast\ntype: project\n---\nUse mold.\n";
        let meta = parse_memory(note, "file").unwrap();
        assert_eq!(
            meta,
            MemoryMeta {
                name: "build-tips".into(),
                kind: "project".into(),
                description: "How to build fast".into()
            }
        );
        assert_eq!(memory_body(note), "Use mold.\n");
        let unnamed = parse_memory("---\ndescription: d\n---\n", "stem").unwrap();
        assert_eq!((unnamed.name.as_str(), unnamed.kind.as_str()), ("stem", ""));
    }

    #[test]
    fn broken_notes_say_what_is_wrong() {
        assert_eq!(parse_memory("just text", "a"), Err(MemoryError::NoFrontMatter));
        assert_eq!(parse_memory("---\nname: a\n---\n", "a"), Err(MemoryError::NoDescription));
        assert!(matches!(parse_memory("---\n: [\n---\n", "a"), Err(MemoryError::Yaml { .. })));
    }
}
