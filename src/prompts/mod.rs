//! Renders the prompt texts shipped in `prompts/` with session facts.
//!
//! A request is the tools, then the instructions, then the history. The
//! instructions are fixed for a session: the core rules
//! ([`core_prompt`]), the AGENTS.md files ([`instructions_block`]), the
//! memory index ([`memory_block`]) and the skills index
//! ([`skills_block`]). What can change while a session runs (the
//! environment, the approval mode, the workflow phase, sections read again
//! after a compaction) reaches the model as a context message appended to
//! the history ([`context_message`]). The request snapshots in
//! `tests/suite/context_requests.rs` show the result.
//!
//! Every block starts with a blank line before its heading (so blocks join
//! with exactly one) and ends without a newline. Pure: the caller supplies
//! every fact; the templates are compiled in so a binary never depends on
//! its source tree.
//!
//! Templates (compiled in with `include_str!`): `system.md` (core rules: finishing the job, whose
//! instructions count, working, changing files, checking, failures, safety, the final answer;
//! `{max_steps}` filled in), `environment.md`, `modes.md` (one section per mode), `phases.md`,
//! `plan.md`, `memory.md`, `compact.md` (the summary prompt), `subagent.md` (a child's rules in
//! place of the core rules).

pub mod catalog;
mod walls;

pub use walls::{NetworkWalls, Walls, WriteWalls, walls_text};

use crate::protocol::{ContextKind, ContextPart};

/// Core identity, safety and loop rules, and style.
const SYSTEM: &str = include_str!("../../prompts/system.md");
/// The core rules for a small window (`context::window::WindowProfile::Compact`).
const SYSTEM_COMPACT: &str = include_str!("../../prompts/system_compact.md");
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
/// What every subagent is told after its type's own prompt.
const SUBAGENT: &str = include_str!("../../prompts/subagent.md");

/// The tag around a context message; `system.md` tells the model what it
/// means.
const CONTEXT_TAG: &str = "keel_context";

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
    /// Nobody is there to answer or approve (`keel exec`).
    pub headless: bool,
    /// Headless, but a script answers `ask_user` questions on stdin
    /// (`keel exec --answer-from-stdin`); approvals still nobody gives.
    pub script_answers: bool,
}

/// keel's core rules, with the turn's step limit filled in.
pub fn core_prompt(max_steps: u32) -> String {
    SYSTEM.trim_end().replace("{max_steps}", &max_steps.to_string())
}

/// [`core_prompt`] for a small window: the few rules a small model needs,
/// in a tenth of the tokens.
pub fn compact_core_prompt(max_steps: u32) -> String {
    SYSTEM_COMPACT.trim_end().replace("{max_steps}", &max_steps.to_string())
}

/// A subagent's rules, in place of [`core_prompt`]: its type's own prompt,
/// then how a subagent works (its environment is announced in its history
/// like a session's).
pub fn subagent_core(agent_prompt: &str) -> String {
    format!("{}{}", agent_prompt.trim_end(), SUBAGENT.trim_end())
}

/// The environment snapshot (announced in the history, not part of the
/// fixed instructions: the git status and the date change).
pub fn environment_block(facts: &PromptFacts) -> String {
    let front_end = if facts.headless && facts.script_answers {
        "Front end: headless (`keel exec --answer-from-stdin`): nobody can approve a call during \
         this run; a script answers your `ask_user` questions"
    } else if facts.headless {
        "Front end: headless (`keel exec`): nobody can answer or approve a call during this run"
    } else {
        "Front end: interactive terminal: the user reads along and can answer"
    };
    // One path said once when the session starts at the root.
    let location = if facts.cwd == facts.workspace_root {
        format!("Workspace root and working directory: {}", facts.workspace_root)
    } else {
        format!("Workspace root: {}\n- Working directory: {}", facts.workspace_root, facts.cwd)
    };
    // Commands run in bash whatever the login shell; that one is named only
    // when it differs (what the user types their own commands in).
    let login = facts.shell.rsplit('/').next().unwrap_or_default();
    let shell = if login.is_empty() || login == "bash" {
        "bash (commands run with `bash -c`)".to_owned()
    } else {
        format!("bash (commands run with `bash -c`; the user's login shell is {})", facts.shell)
    };
    ENVIRONMENT_TEMPLATE
        .replace("{location}", &location)
        .replace("{platform}", &facts.platform)
        .replace("{shell}", &shell)
        .replace("{git}", &facts.git)
        .replace("{date}", &facts.date)
        .replace("{front_end}", front_end)
        .trim()
        .to_owned()
}

/// The text of a context message: every part under its heading, inside
/// the tag the core rules explain. Sections read again (AGENTS.md, memory,
/// skills) say that they replace the earlier ones.
pub fn context_message(parts: &[ContextPart]) -> String {
    let mut out = format!("<{CONTEXT_TAG}>");
    for part in parts {
        let text = part.text.trim();
        let shown = match part.kind {
            ContextKind::Environment | ContextKind::Mode | ContextKind::Workflow => text.to_owned(),
            ContextKind::ProjectInstructions => replaced("project instructions (AGENTS.md)", text),
            ContextKind::Memory => replaced("memory index", text),
            ContextKind::Skills => replaced("skills index", text),
            ContextKind::Hook => format!("# Session context (hook)\n\n{text}"),
            ContextKind::Processes => format!("# Background processes\n\n{text}"),
        };
        out.push_str(&format!("\n{shown}\n"));
    }
    out.push_str(&format!("</{CONTEXT_TAG}>"));
    out
}

/// A section read again that differs from the one in the instructions.
fn replaced(what: &str, text: &str) -> String {
    if text.is_empty() {
        format!("The {what} no longer exists: what the instructions said about it is void.")
    } else {
        format!("The {what} changed since the session started; this replaces it:\n\n{text}")
    }
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

/// What the mode allows, and the walls of the sandbox commands run in
/// (`None`: not sandboxed); announced in the history, since the mode can
/// change during a session. The protected paths a mode names come from
/// the policy's own list.
pub fn mode_block(mode: &str, walls: Option<&Walls>) -> String {
    let explanation = section(MODES, mode)
        .unwrap_or_default()
        .replace("{protected}", &crate::policy::protected_paths_in_words());
    format!("# Mode and permissions\n\nMode: {mode}. {explanation}\n\n{}", walls_text(walls))
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
        "\n\n# Project instructions\n\nThe user's instruction files for this project \
         (AGENTS.md), root first: follow them unless the user says otherwise; a file deeper in \
         the tree wins for its folder.",
    );
    for (path, text) in files {
        out.push_str(&format!("\n\n## {path}\n\n{}", text.trim()));
    }
    out
}

/// Upper bound of the whole skills index in its full form; past it the
/// index is compact ([`catalog::index`]) and the rest found by search.
const SKILLS_INDEX_BYTES: usize = 8 * 1024;

const SKILLS_HEADER: &str = "\n\n# Skills\n\nBefore doing a task a skill covers, load it with `load_skill` and follow it.\n\n";

/// The skills index's lines: every skill when they fit, else as many as
/// the compact budget holds and how to find the rest.
pub fn skills_index(skills: &[(String, String)]) -> catalog::Index {
    let entries: Vec<catalog::Entry<'_>> = skills
        .iter()
        .map(|(name, description)| catalog::Entry { name, description, note: "" })
        .collect();
    let how = format!("call `load_skill` with name `{}WORDS`", catalog::SEARCH_PREFIX);
    catalog::index(&entries, SKILLS_INDEX_BYTES - SKILLS_HEADER.len(), "skills", &how)
}

/// The skills index: names and (trimmed) descriptions only; bodies come in
/// through `load_skill` when a skill is used.
pub fn skills_block(skills: &[(String, String)]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out = String::from(SKILLS_HEADER);
    out.push_str(&skills_index(skills).text);
    out.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(headless: bool) -> PromptFacts {
        PromptFacts {
            workspace_root: "/repo".into(),
            cwd: "/repo/src".into(),
            platform: "linux".into(),
            shell: "/bin/zsh".into(),
            git: "branch main, 2 uncommitted changes".into(),
            date: "2026-11-29".into(),
            headless,
            script_answers: false,
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        let environment = environment_block(&facts(true));
        assert!(environment.contains("/repo/src") && environment.contains("2026-11-29"));
        assert!(environment.contains("branch main"));
        assert!(
            environment.contains(
                "- Shell: bash (commands run with `bash -c`; the user's login shell is /bin/zsh)"
            ),
            "commands run in bash, not the login shell: {environment}"
        );
        let bash = environment_block(&PromptFacts { shell: "/bin/bash".into(), ..facts(true) });
        assert!(bash.contains("- Shell: bash (commands run with `bash -c`)\n"), "{bash}");
        assert!(environment.contains("headless") && environment.starts_with("# Environment"));
        assert!(environment_block(&facts(false)).contains("interactive"));
        let scripted = environment_block(&PromptFacts { script_answers: true, ..facts(true) });
        assert!(scripted.contains("a script answers your `ask_user` questions"), "{scripted}");
        let core = core_prompt(42);
        for text in [&environment, &core] {
            assert!(!text.contains("{max_steps}") && !text.contains("{cwd}"), "{text}");
        }
        assert!(core.contains("at most 42"), "the step limit is stated");
    }

    #[test]
    fn the_root_is_named_once_when_work_starts_there() {
        let below = environment_block(&facts(true));
        assert!(below.contains("- Workspace root: /repo\n- Working directory: /repo/src\n"));
        let at_root = PromptFacts { cwd: "/repo".into(), ..facts(true) };
        let environment = environment_block(&at_root);
        assert!(environment.contains("- Workspace root and working directory: /repo\n"));
        assert_eq!(environment.matches("/repo").count(), 1, "{environment}");
    }

    #[test]
    fn blocks_join_with_exactly_one_blank_line_before_each_heading() {
        let joined = [
            core_prompt(100),
            instructions_block(&[("/r/AGENTS.md".into(), "rules\n\n".into())]),
            memory_block(&[("n".into(), "user".into(), "d".into())]),
            skills_block(&[("review".into(), "reviews".into())]),
        ]
        .concat();
        for line in ["# Project instructions", "## /r/AGENTS.md", "# Memory", "# Skills"] {
            let at = joined.find(line).unwrap_or_else(|| panic!("{line} missing"));
            assert!(joined[..at].ends_with("\n\n"), "{line}: no blank line before it");
            assert!(!joined[..at].ends_with("\n\n\n"), "{line}: two blank lines before it");
        }
        assert!(!joined.ends_with('\n'));
    }

    #[test]
    fn a_context_message_wraps_its_parts_and_says_what_replaces_what() {
        let parts = [
            ContextPart { kind: ContextKind::Mode, text: mode_block("auto", None) },
            ContextPart { kind: ContextKind::ProjectInstructions, text: String::new() },
            ContextPart { kind: ContextKind::Memory, text: "\n\n# Memory\n\n- a".into() },
        ];
        let text = context_message(&parts);
        assert!(text.starts_with("<keel_context>\n# Mode and permissions"), "{text}");
        assert!(text.ends_with("\n</keel_context>"), "{text}");
        assert!(text.contains("project instructions (AGENTS.md) no longer exists"), "{text}");
        assert!(text.contains("this replaces it:\n\n# Memory"), "{text}");
        let core = core_prompt(100);
        assert!(core.contains("`<keel_context>`"), "the core rules explain the tag");
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
            let block = mode_block(mode, Some(&Walls::default()));
            let explanation = block.split(&format!("Mode: {mode}.")).nth(1).unwrap_or("");
            assert!(explanation.trim().len() > 40, "{mode}: {block}");
            assert!(block.contains("sandbox") && !block.contains('{'), "{block}");
        }
        assert!(mode_block("ask", None).contains("not sandboxed"));
    }

    // Issue 32.9: auto mode names every protected path the policy asks
    // about (from its own list), not four of them.
    #[test]
    fn auto_and_yolo_name_every_protected_path() {
        for mode in ["auto", "yolo"] {
            let block = mode_block(mode, Some(&Walls::default()));
            for path in [
                ".git/",
                ".keel/",
                ".claude/",
                ".vscode/",
                ".husky/",
                ".ssh/",
                ".github/workflows/",
                ".envrc",
                ".env",
            ] {
                assert!(block.contains(&format!("`{path}`")), "{mode}: {path}: {block}");
            }
        }
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
        assert!(block.contains("more skills (100 in all) not listed here"), "{block}");
        assert!(block.contains("`load_skill` with name `search:WORDS`"), "{block}");
        assert_eq!(skills_block(&[]), "");
    }
}
