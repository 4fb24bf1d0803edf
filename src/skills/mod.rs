//! Agent Skills: discovery of `SKILL.md` folders and validation of their
//! front matter. Only names and descriptions are kept eagerly; a skill's
//! body is read when the skill is used (progressive disclosure).
//!
//! Roots, lowest precedence first: the built-in `skills/` (compiled in),
//! Claude Code's `~/.claude/skills/`, `~/.keel/skills/`, then
//! `.claude/skills/`, `.keel/skills/` and `.agents/skills/` in each folder
//! from the project root down to the working directory. A later
//! root's skill replaces an earlier one of the same name. An invalid skill
//! is reported with its path and never stops the others from loading.
//!
//! A skill's folder and `SKILL.md` are opened beneath its root without
//! following a symlink, at discovery and again when `load_skill` reads the
//! body (`support::beneath`): a link swapped in between leads nowhere.

mod discover;
mod frontmatter;

use std::path::{Path, PathBuf};

pub use discover::{Discovery, SkillProblem, discover, discover_namespaced, skill_roots};
pub use frontmatter::{SkillMeta, parse_skill_md};

/// Where a skill came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillSource {
    /// Compiled into keel.
    BuiltIn,
    /// A `SKILL.md` on disk.
    File(PathBuf),
}

/// A discovered skill: its front matter and where its body lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub meta: SkillMeta,
    pub source: SkillSource,
}

/// Why a `SKILL.md` was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SkillError {
    #[error("no front matter: the file must start with a `---` line and close it with another")]
    NoFrontMatter,
    #[error("front matter is not valid YAML: {message}")]
    Yaml { message: String },
    #[error("front matter has no `{field}`")]
    Missing { field: &'static str },
    #[error("`name` must be 1-64 characters of a-z, 0-9 and `-`, got `{name}`")]
    BadName { name: String },
    #[error("`name` is `{name}` but the folder is `{folder}`; they must match")]
    NameMismatch { name: String, folder: String },
    #[error("`description` is {length} characters; the limit is {limit}")]
    DescriptionTooLong { length: usize, limit: usize },
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
}

/// Built-in skills: (folder name, SKILL.md text).
pub const BUILT_IN: [(&str, &str); 2] = [
    ("review", include_str!("../../skills/review/SKILL.md")),
    ("commit", include_str!("../../skills/commit/SKILL.md")),
];

/// The text of `<root>/<name>/SKILL.md`, opened beneath its skill root
/// without following a symlink (the folder or the file may have been
/// swapped for a link to `/proc/self/environ` since discovery).
fn read_skill_file(path: &Path) -> Result<String, SkillError> {
    let root = crate::support::beneath::root_above(path, 2);
    crate::support::bounded_read::read_bounded_beneath(root, path)
        .map_err(|error| SkillError::Read { path: path.to_owned(), message: error.to_string() })
}

/// The body (everything after the front matter) of a skill.
pub fn read_body(skill: &Skill) -> Result<String, SkillError> {
    let text = match &skill.source {
        SkillSource::BuiltIn => BUILT_IN
            .iter()
            .find(|(name, _)| *name == skill.meta.name)
            .map(|(_, text)| (*text).to_owned())
            .unwrap_or_default(),
        SkillSource::File(path) => read_skill_file(path)?,
    };
    Ok(frontmatter::split(&text).map(|(_, body)| body.to_owned()).unwrap_or(text))
}
