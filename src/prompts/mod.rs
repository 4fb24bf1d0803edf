//! Renders the prompt texts shipped in `prompts/` with session facts.
//!
//! Assembly order of a request's instructions (tested by the request
//! snapshots in `tests/suite/context_requests.rs`): core rules →
//! environment → AGENTS.md files → memory index → mode and permissions →
//! skills index → workflow phase guidance (`phases.md`, `plan.md`) →
//! tasks. Tool schemas travel in
//! the request's own field; the history follows the instructions.
//!
//! Pure: the caller supplies every fact (paths, platform, date); the
//! templates are compiled in so a binary never depends on its source tree.

/// Core identity, safety and loop rules, and style.
const SYSTEM: &str = include_str!("../../prompts/system.md");
/// The environment snapshot template.
const ENVIRONMENT_TEMPLATE: &str = include_str!("../../prompts/environment.md");
/// One `## mode` section per approval mode.
const MODES: &str = include_str!("../../prompts/modes.md");
/// One `## phase` section of guidance per workflow phase.
const PHASES: &str = include_str!("../../prompts/phases.md");
/// The sections a plan must have (shown in the plan phase).
const PLAN_TEMPLATE: &str = include_str!("../../prompts/plan.md");
/// The memory index's heading and rules.
const MEMORY_HEADER: &str = include_str!("../../prompts/memory.md");

/// Facts the environment snapshot mentions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptFacts {
    pub workspace_root: String,
    pub cwd: String,
    pub platform: String,
    /// The user's shell (`$SHELL`), or `bash`.
    pub shell: String,
    /// Branch and short status, or why there is none.
    pub git: String,
    pub date: String,
}

/// The system prompt for a session: the core rules, then the environment.
pub fn system_prompt(facts: &PromptFacts) -> String {
    let environment = ENVIRONMENT_TEMPLATE
        .replace("{workspace_root}", &facts.workspace_root)
        .replace("{cwd}", &facts.cwd)
        .replace("{platform}", &facts.platform)
        .replace("{shell}", &facts.shell)
        .replace("{git}", &facts.git)
        .replace("{date}", &facts.date);
    format!("{}{}", SYSTEM.trim_end(), environment.trim_end())
}

/// The `## name` section of `text`, trimmed.
fn section<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    text.split("## ").find_map(|section| {
        let (heading, body) = section.split_once('\n')?;
        (heading.trim() == name).then(|| body.trim())
    })
}

/// How to work in `phase` (from `prompts/phases.md`; the plan phase adds
/// the plan template). Empty for a phase a project's rules added.
pub fn phase_guidance(phase: &str) -> String {
    let Some(text) = section(PHASES, phase) else { return String::new() };
    if phase == "plan" { format!("{text}\n\n{}", PLAN_TEMPLATE.trim()) } else { text.to_owned() }
}

/// What the mode allows, and whether commands are sandboxed.
pub fn mode_block(mode: &str, sandboxed: bool) -> String {
    let explanation = section(MODES, mode).unwrap_or_default();
    let sandbox = if sandboxed {
        "Commands run in a sandbox: writes outside the workspace (and its temp folders) fail, \
         and so does network access unless the user enabled it. A failure that looks like a \
         permission error may be the sandbox: say so instead of working around it."
    } else {
        "Commands are not sandboxed here: be as careful as the user would be."
    };
    format!("\n\n# Mode and permissions\n\nMode: {mode}. {explanation}\n\n{sandbox}")
}

/// Longest description shown per memory note.
const MEMORY_DESCRIPTION_CHARS: usize = 200;
/// Upper bound of the memory index.
const MEMORY_INDEX_BYTES: usize = 4 * 1024;

/// The memory index: `(name, type, description)` per note, bounded.
pub fn memory_block(notes: &[(String, String, String)]) -> String {
    if notes.is_empty() {
        return String::new();
    }
    let mut out = format!("\n\n{}", MEMORY_HEADER.trim());
    out.push_str("\n\n");
    for (name, kind, description) in notes {
        let one_line = description.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut shown: String = one_line.chars().take(MEMORY_DESCRIPTION_CHARS).collect();
        if shown.len() < one_line.len() {
            shown.push('…');
        }
        let kind = if kind.is_empty() { String::new() } else { format!(" ({kind})") };
        let line = format!("- {name}{kind}: {shown}\n");
        if out.len() + line.len() > MEMORY_INDEX_BYTES {
            out.push_str("- … (more notes; not listed for space)\n");
            break;
        }
        out.push_str(&line);
    }
    out.trim_end().to_owned()
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
            shell: "/bin/zsh".into(),
            git: "branch main, 2 uncommitted changes".into(),
            date: "2026-11-29".into(),
        });
        assert!(prompt.contains("/repo/src") && prompt.contains("2026-11-29"));
        assert!(prompt.contains("/bin/zsh") && prompt.contains("branch main"));
        assert!(prompt.find("Safety:") < prompt.find("# Environment"), "core first");
        assert!(!prompt.contains('{'), "unfilled placeholder in:\n{prompt}");
    }

    #[test]
    fn every_shipped_phase_has_guidance_and_plan_shows_the_template() {
        for phase in ["orient", "explore", "plan", "implement", "verify", "deliver"] {
            assert!(phase_guidance(phase).len() > 80, "{phase}");
        }
        assert!(phase_guidance("plan").contains("Risks and rollback"));
        assert!(!phase_guidance("implement").contains("Risks and rollback"));
        assert_eq!(phase_guidance("custom"), "");
    }

    #[test]
    fn every_mode_has_an_explanation() {
        for mode in ["ask", "auto", "plan", "explore", "yolo"] {
            let block = mode_block(mode, true);
            let explanation = block.split(&format!("Mode: {mode}.")).nth(1).unwrap_or("");
            assert!(explanation.trim().len() > 40, "{mode}: {block}");
            assert!(block.contains("sandbox"));
        }
        assert!(mode_block("ask", false).contains("not sandboxed"));
    }

    #[test]
    fn memory_index_lists_notes_and_stays_bounded() {
        let notes: Vec<(String, String, String)> = (0..200)
            .map(|i| (format!("note-{i}"), "project".into(), "detail ".repeat(50)))
            .collect();
        let block = memory_block(&notes);
        assert!(block.starts_with("\n\n# Memory"));
        assert!(block.contains("- note-0 (project): detail detail"));
        assert!(block.len() <= MEMORY_INDEX_BYTES + 64);
        assert_eq!(memory_block(&[]), "");
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
