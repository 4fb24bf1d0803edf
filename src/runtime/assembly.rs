//! What a session's loop is assembled from: the fixed [`LoopConfig`] (tools
//! and their classes, policy, limits, window) and the head of the
//! instructions (core rules, environment, AGENTS.md, memory), plus the
//! skills and memory notes found on disk.
//!
//! Invariant: start, resume and the refresh after a compaction build the
//! instructions through the same [`base_instructions`], so they never
//! drift apart; disk is read here, never in the pure loop.

use std::collections::BTreeMap;
use std::path::Path;

use crate::agent::{LoopConfig, harness_specs};
use crate::config::{Settings, discover_instructions, discover_memory};
use crate::context::memory::MemoryNote;
use crate::prompts::{PromptFacts, instructions_block, memory_block, skills_block, system_prompt};
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
    let memory = &found.memory;
    let instructions = base_instructions(settings, &options.cwd, &options.date, memory);
    let mut specs = tools.specs();
    // No notes, no tool: its schema would only cost tokens.
    specs.retain(|spec| spec.name != "read_memory" || !memory.is_empty());
    let mut tool_classes: BTreeMap<String, _> =
        specs.iter().map(|spec| (spec.name.clone(), tools.class_of(&spec.name))).collect();
    // Answered by the loop itself; read-only as far as policy is concerned.
    for spec in harness_specs() {
        tool_classes.insert(spec.name.clone(), crate::protocol::ToolClass::ReadOnly);
        specs.push(spec);
    }
    LoopConfig {
        model: settings.model.clone(),
        instructions,
        tools: specs,
        tool_classes,
        policy: build_policy(settings, options),
        limits: settings.limits,
        pricing: settings.pricing,
        skills_index: skills_index(&found.skills),
        context_window: settings.context_window,
        compact_threshold: settings.compact_threshold,
    }
}

/// The head of the instructions, in assembly order: the core rules with
/// the environment snapshot, the project's AGENTS.md files and the memory
/// index (both read from disk now). Mode, skills and the workflow follow
/// in each request (`agent::step::build_request`).
pub(super) fn base_instructions(
    settings: &Settings,
    cwd: &Path,
    date: &str,
    memory: &[MemoryNote],
) -> String {
    let mut instructions = system_prompt(&PromptFacts {
        workspace_root: settings.workspace_root.display().to_string(),
        cwd: cwd.display().to_string(),
        platform: std::env::consts::OS.to_owned(),
        shell: std::env::var("SHELL").unwrap_or_else(|_| "bash".to_owned()),
        git: git_summary(&settings.workspace_root),
        date: date.to_owned(),
    });
    let agents_md: Vec<(String, String)> =
        discover_instructions(&settings.keel_home, &settings.workspace_root, cwd)
            .into_iter()
            .map(|file| (file.path.display().to_string(), file.text))
            .collect();
    instructions.push_str(&instructions_block(&agents_md));
    let index: Vec<(String, String, String)> = memory
        .iter()
        .map(|note| (note.meta.name.clone(), note.meta.kind.clone(), note.meta.description.clone()))
        .collect();
    instructions.push_str(&memory_block(&index));
    instructions
}

/// The skills index for the instructions.
fn skills_index(skills: &[skills::Skill]) -> String {
    let index: Vec<(String, String)> = skills
        .iter()
        .map(|skill| (skill.meta.name.clone(), skill.meta.description.clone()))
        .collect();
    skills_block(&index)
}

/// What a session finds on disk besides its config: skills and memory
/// notes, and what could not be loaded (said to the user as warnings).
pub(super) struct Found {
    pub(super) skills: Vec<skills::Skill>,
    pub(super) memory: Vec<MemoryNote>,
    pub(super) warnings: Vec<String>,
}

/// Skills and memory for a session started in `cwd`.
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
    Found { skills: discovery.skills, memory, warnings }
}
