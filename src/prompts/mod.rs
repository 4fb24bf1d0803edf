//! Renders the prompt texts shipped in `prompts/` with session facts.
//!
//! Pure: the caller supplies every fact (paths, platform, date); the
//! templates are compiled in so a binary never depends on its source tree.

/// The system prompt template.
const SYSTEM_TEMPLATE: &str = include_str!("../../prompts/system.md");

/// Facts the system prompt mentions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptFacts {
    pub workspace_root: String,
    pub cwd: String,
    pub platform: String,
    pub date: String,
}

/// The system prompt for a session.
pub fn system_prompt(facts: &PromptFacts) -> String {
    SYSTEM_TEMPLATE
        .replace("{workspace_root}", &facts.workspace_root)
        .replace("{cwd}", &facts.cwd)
        .replace("{platform}", &facts.platform)
        .replace("{date}", &facts.date)
}

/// The project's instruction files as one block, root first, each under
/// a heading naming its path (so the model knows which folder it governs).
pub fn instructions_block(files: &[(String, String)]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n# Project instructions\n\nThese files come from the user's machine and repository \
         (AGENTS.md). Follow them; a file deeper in the tree takes precedence for its folder.\n",
    );
    for (path, text) in files {
        out.push_str(&format!("\n## {path}\n\n{}\n", text.trim_end()));
    }
    out
}

/// Longest description shown per skill in the index.
const SKILL_DESCRIPTION_CHARS: usize = 300;
/// Upper bound of the whole skills index.
const SKILLS_INDEX_BYTES: usize = 8 * 1024;

/// The skills index: names and (trimmed) descriptions only; bodies come in
/// through `load_skill` when a skill is used.
pub fn skills_block(skills: &[(String, String)]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\n# Skills\n\nBefore doing a task a skill covers, load it with `load_skill` and follow it.\n\n",
    );
    for (name, description) in skills {
        let one_line = description.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut shown: String = one_line.chars().take(SKILL_DESCRIPTION_CHARS).collect();
        if shown.len() < one_line.len() {
            shown.push('…');
        }
        let line = format!("- {name}: {shown}\n");
        if out.len() + line.len() > SKILLS_INDEX_BYTES {
            out.push_str("- … (more skills; not listed for space)\n");
            break;
        }
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        let prompt = system_prompt(&PromptFacts {
            workspace_root: "/repo".into(),
            cwd: "/repo/src".into(),
            platform: "linux".into(),
            date: "2026-11-29".into(),
        });
        assert!(prompt.contains("/repo/src") && prompt.contains("2026-11-29"));
        assert!(!prompt.contains('{'), "unfilled placeholder in:\n{prompt}");
    }

    #[test]
    fn instructions_keep_root_first_order_under_path_headings() {
        let block = instructions_block(&[
            ("/repo/AGENTS.md".into(), "root rules\n".into()),
            ("/repo/a/AGENTS.md".into(), "inner rules".into()),
        ]);
        let root = block.find("## /repo/AGENTS.md").unwrap();
        let inner = block.find("## /repo/a/AGENTS.md").unwrap();
        assert!(root < inner && block.contains("inner rules"));
        assert_eq!(instructions_block(&[]), "");
    }

    #[test]
    fn skills_index_trims_descriptions_and_stays_bounded() {
        let long = "word ".repeat(200);
        let skills: Vec<(String, String)> =
            (0..100).map(|i| (format!("skill-{i}"), long.clone())).collect();
        let block = skills_block(&skills);
        assert!(block.len() <= SKILLS_INDEX_BYTES + 64, "{}", block.len());
        assert!(block.contains("- skill-0: word word"));
        assert!(block.contains("more skills"));
        assert_eq!(skills_block(&[]), "");
    }
}
