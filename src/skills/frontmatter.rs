//! Parses and validates a `SKILL.md`'s YAML front matter.

use yaml_rust2::Yaml;

use super::SkillError;

/// Longest `name` the Agent Skills format allows.
const MAX_NAME: usize = 64;
/// Longest `description` accepted. The format suggests 1024; real skills
/// (anthropics/skills `claude-api`) run past it, so we accept up to this
/// and let the prompt budget trim what the model sees.
const MAX_DESCRIPTION: usize = 4096;

/// What the context needs of a skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillMeta {
    pub name: String,
    pub description: String,
}

pub(super) use crate::context::frontmatter::split;

/// Parses `text` (a SKILL.md in a folder named `folder`) into its metadata.
pub fn parse_skill_md(text: &str, folder: &str) -> Result<SkillMeta, SkillError> {
    let (yaml, _) = split(text).ok_or(SkillError::NoFrontMatter)?;
    let docs = crate::context::frontmatter::load_yaml(yaml)
        .map_err(|error| SkillError::Yaml { message: error.to_string() })?;
    let doc = docs.first().ok_or(SkillError::Missing { field: "name" })?;
    let field = |key: &'static str| match &doc[key] {
        Yaml::String(value) => Ok(value.trim().to_owned()),
        _ => Err(SkillError::Missing { field: key }),
    };
    let name = field("name")?;
    let description = field("description")?;
    let valid_name = !name.is_empty()
        && name.len() <= MAX_NAME
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid_name {
        return Err(SkillError::BadName { name });
    }
    if name != folder {
        return Err(SkillError::NameMismatch { name, folder: folder.to_owned() });
    }
    if description.is_empty() {
        return Err(SkillError::Missing { field: "description" });
    }
    let length = description.chars().count();
    if length > MAX_DESCRIPTION {
        return Err(SkillError::DescriptionTooLong { length, limit: MAX_DESCRIPTION });
    }
    Ok(SkillMeta { name, description })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_and_block_scalar_description() {
        let text =
            "---\nname: demo\ndescription: |-\n  line one\n  line two\nlicense: x\n---\n# Body\n";
        let meta = parse_skill_md(text, "demo").unwrap();
        assert_eq!(meta.description, "line one\nline two");
    }

    #[test]
    fn folder_must_match_name() {
        let text = "---\nname: demo\ndescription: d\n---\n";
        assert!(matches!(parse_skill_md(text, "other"), Err(SkillError::NameMismatch { .. })));
    }

    #[test]
    fn rejects_missing_front_matter_and_fields() {
        assert_eq!(parse_skill_md("# no front matter", "x"), Err(SkillError::NoFrontMatter));
        assert_eq!(
            parse_skill_md("---\nname: x\n---\n", "x"),
            Err(SkillError::Missing { field: "description" })
        );
        assert!(matches!(
            parse_skill_md("---\nname: Bad Name\ndescription: d\n---\n", "Bad Name"),
            Err(SkillError::BadName { .. })
        ));
    }

    #[test]
    fn malformed_yaml_is_an_error_not_a_panic() {
        let text = "---\nname: [unclosed\ndescription: d\n---\n";
        assert!(matches!(parse_skill_md(text, "x"), Err(SkillError::Yaml { .. })));
    }

    #[test]
    fn built_in_skills_are_valid() {
        for (folder, text) in super::super::BUILT_IN {
            parse_skill_md(text, folder).unwrap();
        }
    }
}
