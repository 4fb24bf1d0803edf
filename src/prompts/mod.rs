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
}
