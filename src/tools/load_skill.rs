//! `load_skill`: brings a skill's instructions into the conversation. Only
//! names and descriptions are in the prompt (progressive disclosure); the
//! model calls this before following a skill. Any skill loads by its
//! name, listed in the index or not; `search:WORDS` answers with the
//! skills matching WORDS (bounded: `prompts::catalog`), which is how the
//! model reaches the skills a compact index leaves out.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::prompts::catalog::{self, Entry};
use crate::protocol::{ToolInfo, ToolMeta, ToolOutput, tool_facts};
use crate::skills::{SkillSource, read_body};

const NAME: &str = tool_facts::LOAD_SKILL.name;
const DESCRIPTION: &str = "Load a listed skill's instructions, by name. Files it mentions are \
relative to its folder.";

#[derive(Debug, Deserialize, JsonSchema)]
pub struct LoadSkillArgs {
    /// The skill's name, as listed.
    pub name: String,
}

pub struct LoadSkill;

impl TypedTool for LoadSkill {
    const INFO: &'static ToolInfo = &tool_facts::LOAD_SKILL;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Args = LoadSkillArgs;

    fn call<'a>(
        &'a self,
        args: LoadSkillArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let entries: Vec<Entry<'_>> = ctx
                .skills
                .iter()
                .map(|s| Entry { name: &s.meta.name, description: &s.meta.description, note: "" })
                .collect();
            if let Some(query) = catalog::search_query(&args.name) {
                return Ok(ToolOutput {
                    text: catalog::search(query, &entries, "skills"),
                    meta: ToolMeta::details(json!({ "search": query })),
                    images: Vec::new(),
                });
            }
            let Some(skill) = ctx.skills.iter().find(|s| s.meta.name == args.name) else {
                return Err(ToolError::InvalidArguments {
                    tool: NAME.to_owned(),
                    message: format!(
                        "no skill named `{}`; {}",
                        args.name,
                        catalog::search(&args.name, &entries, "skills")
                    ),
                });
            };
            let body = read_body(skill).map_err(|error| ToolError::InvalidArguments {
                tool: NAME.to_owned(),
                message: error.to_string(),
            })?;
            let folder = match &skill.source {
                SkillSource::BuiltIn => "built in".to_owned(),
                SkillSource::File(path) => {
                    path.parent().map(|p| p.display().to_string()).unwrap_or_default()
                }
            };
            let text = format!("# Skill: {} ({folder})\n\n{}", skill.meta.name, body.trim());
            Ok(ToolOutput {
                text,
                meta: ToolMeta::details(json!({ "skill": skill.meta.name, "folder": folder })),
                images: Vec::new(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::skills::discover;
    use crate::tools::Tool;

    fn ctx() -> ToolContext {
        let found = discover(&[]);
        ToolContext::new("/w".into(), "/w".into(), CancellationToken::new())
            .with_skills(Arc::new(found.skills))
    }

    #[tokio::test]
    async fn loads_a_built_in_skill_body() {
        let out = LoadSkill.run(json!({"name": "review"}), &ctx()).await.unwrap();
        assert!(out.text.starts_with("# Skill: review (built in)"), "{}", out.text);
        assert!(out.text.contains("git diff"));
        assert!(!out.text.contains("description:"), "front matter is not repeated");
    }

    #[tokio::test]
    async fn unknown_skill_lists_the_known_ones() {
        let error = LoadSkill.run(json!({"name": "nope"}), &ctx()).await.unwrap_err().to_string();
        assert!(error.contains("no skills match `nope` (2 in all)"), "{error}");
        let error =
            LoadSkill.run(json!({"name": "git-commit"}), &ctx()).await.unwrap_err().to_string();
        assert!(error.contains("- commit:"), "the nearest names: {error}");
    }

    #[tokio::test]
    async fn search_lists_matching_skills() {
        let out = LoadSkill.run(json!({"name": "search:commit"}), &ctx()).await.unwrap();
        assert!(out.text.starts_with("skills matching `commit`"), "{}", out.text);
        assert!(out.text.contains("- commit:"), "{}", out.text);
    }
}
