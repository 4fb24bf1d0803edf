//! What a session's loop is assembled from: the fixed [`LoopConfig`] (tools
//! and their classes, policy, limits, window), the request prefix's
//! sections (core rules, AGENTS.md, memory index, skills index), the
//! environment snapshot announced in the history, the workflow's checks,
//! plus the skills and memory notes found on disk.
//!
//! Invariant: start, resume and the re-read after a compaction build the
//! sections through the same [`prefix_sections`], so they never drift
//! apart; disk is read here, never in the pure loop.

use std::collections::BTreeMap;
use std::path::Path;

use crate::agent::{LoopConfig, WorkflowSetup, harness_spec, shipped_rules};
use crate::config::{Settings, discover_instructions, discover_memory};
use crate::context::memory::MemoryNote;
use crate::plan::checks_named_in;
use crate::prompts::{
    PromptFacts, core_prompt, environment_block, instructions_block, memory_block, skills_block,
};
use crate::protocol::{HarnessTool, PrefixSections, ToolSpec};
use crate::skills;
use crate::tools::ToolRegistry;

use super::SessionOptions;
use super::files::git_summary;
use super::sandboxing::build_policy;

/// The loop's fixed configuration for `settings` and `options`.
pub(super) fn loop_config(
    settings: &Settings,
    options: &SessionOptions,
    tools: &ToolRegistry,
    found: &Found,
) -> LoopConfig {
    // Every tool, always (read_memory too, without notes): a note saved
    // mid-session is announced and readable, and the tool set, part of the
    // prefix, stays the same across a resume.
    let mut specs = tools.specs();
    let mut tool_classes: BTreeMap<String, _> =
        specs.iter().map(|spec| (spec.name.clone(), tools.class_of(&spec.name))).collect();
    // Answered by the loop itself; described from the session's phase rules.
    let rules = settings.phase_rules.clone().unwrap_or_else(shipped_rules);
    for tool in HarnessTool::ALL {
        tool_classes.insert(tool.name().to_owned(), tool.class());
        specs.push(harness_spec(tool, &rules));
    }
    LoopConfig {
        model: settings.model.clone(),
        prefix: prefix_sections(settings, found),
        tools: specs,
        tool_classes,
        policy: build_policy(settings, options),
        limits: settings.limits,
        pricing: settings.pricing,
        context_window: settings.context_window,
        compact_threshold: settings.compact_threshold,
    }
}

/// The instructions every request of the session starts with, from what
/// was found on disk.
pub(super) fn prefix_sections(settings: &Settings, found: &Found) -> PrefixSections {
    let index: Vec<(String, String, String)> = found
        .memory
        .iter()
        .map(|note| (note.meta.name.clone(), note.meta.kind.clone(), note.meta.description.clone()))
        .collect();
    let skills: Vec<(String, String)> = found
        .skills
        .iter()
        .map(|skill| (skill.meta.name.clone(), skill.meta.description.clone()))
        .collect();
    PrefixSections {
        core: core_prompt(settings.limits.max_steps),
        project: instructions_block(&found.agents_md),
        memory: memory_block(&index),
        skills: skills_block(&skills),
    }
}

/// The environment snapshot as of now (the git status is read here).
pub(super) fn environment(settings: &Settings, cwd: &Path, date: &str, headless: bool) -> String {
    environment_block(&PromptFacts {
        workspace_root: settings.workspace_root.display().to_string(),
        cwd: cwd.display().to_string(),
        platform: std::env::consts::OS.to_owned(),
        shell: settings.user_shell.clone(),
        git: git_summary(&settings.workspace_root),
        date: date.to_owned(),
        headless,
    })
}

/// A digest of the tool specs: a resume whose tools differ from the
/// recorded ones is a deliberate prefix break.
pub(super) fn tools_digest(tools: &[ToolSpec]) -> String {
    crate::session::content_hash(&serde_json::to_vec(tools).unwrap_or_default())
}

/// The workflow's rules and checks for the session.
pub(super) fn workflow_setup(settings: &Settings, found: &Found) -> WorkflowSetup {
    let mut named_checks: Vec<String> = Vec::new();
    for (_, text) in &found.agents_md {
        for check in checks_named_in(text) {
            if !named_checks.contains(&check) {
                named_checks.push(check);
            }
        }
    }
    WorkflowSetup {
        rules: settings.phase_rules.clone(),
        verify_commands: settings.verify_commands.clone(),
        detected_checks: settings.detected_checks.clone(),
        named_checks,
    }
}

/// What a session finds on disk besides its config: AGENTS.md files,
/// skills and memory notes, and what could not be loaded (said to the
/// user as warnings).
pub(super) struct Found {
    /// `(path, text)` of each AGENTS.md, root first.
    pub(super) agents_md: Vec<(String, String)>,
    pub(super) skills: Vec<skills::Skill>,
    pub(super) memory: Vec<MemoryNote>,
    pub(super) warnings: Vec<String>,
}

/// The AGENTS.md files for a session started in `cwd`.
pub(super) fn project_instructions(settings: &Settings, cwd: &Path) -> Vec<(String, String)> {
    discover_instructions(&settings.keel_home, &settings.workspace_root, cwd)
        .into_iter()
        .map(|file| (file.path.display().to_string(), file.text))
        .collect()
}

/// AGENTS.md, skills and memory for a session started in `cwd`.
pub(super) fn discover_context(settings: &Settings, cwd: &Path) -> Found {
    let roots = skills::skill_roots(&settings.keel_home, &settings.workspace_root, cwd);
    let discovery = skills::discover(&roots);
    let (memory, memory_problems) = discover_memory(&settings.keel_home, &settings.workspace_root);
    let skill_warnings = discovery
        .problems
        .iter()
        .map(|problem| format!("skill {} not loaded: {}", problem.path.display(), problem.error));
    let memory_warnings = memory_problems.iter().map(|problem| {
        format!("memory note {} not loaded: {}", problem.path.display(), problem.error)
    });
    let warnings = skill_warnings.chain(memory_warnings).collect();
    Found {
        agents_md: project_instructions(settings, cwd),
        skills: discovery.skills,
        memory,
        warnings,
    }
}
