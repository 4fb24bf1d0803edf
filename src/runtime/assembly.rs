//! What a session's loop is assembled from: the fixed [`LoopConfig`] (tools
//! and their classes, policy, limits, window), the request prefix's
//! sections (core rules, AGENTS.md, memory index, skills index; a
//! subagent's type prompt in place of the core rules), the environment
//! snapshot announced in the history, the workflow's checks, plus the
//! skills, memory notes, agent types and custom commands found on disk.
//!
//! A window of `context::window::SMALL_WINDOW` tokens or fewer (configured,
//! the table's, or learnt from the server before the session opened) gets
//! the compact profile: fewer tools, short core rules; decided from the
//! settings, so start, resume and the re-read agree.
//!
//! Invariant: start, resume and the re-read after a compaction build the
//! sections through the same [`prefix_sections`] (a subagent's, new or
//! reopened, through [`subagent_prefix`]), so they never drift apart; disk
//! is read here, never in the pure loop.

use std::collections::BTreeMap;
use std::path::Path;

use crate::agent::{ConfiguredModel, LoopConfig, WorkflowSetup, harness_spec, shipped_rules};
use crate::config::agents::{AgentCatalog, BUILT_IN_AGENTS, agent_roots, discover_agents};
use crate::config::commands::{CommandCatalog, command_roots, discover_commands};
use crate::config::markdown_file::grouped;
use crate::config::{InstructionPlaces, Settings, discover_instructions, discover_memory};
use crate::context::memory::MemoryNote;
use crate::context::window::WindowProfile;
use crate::plan::checks_named_in;
use crate::prompts::{
    PromptFacts, compact_core_prompt, core_prompt, environment_block, instructions_block,
    memory_block, skills_block, subagent_core,
};
use crate::protocol::{HarnessTool, PrefixSections, ToolClass, ToolSpec};
use crate::skills;
use crate::tools::agent::{agent_types_index, description_with_types};
use crate::tools::{AGENT_TOOL, READ_MEMORY_TOOL, ToolRegistry};

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
    // read_memory only with notes to read: without, it is dead weight in
    // every request. Notes that appear later are offered with it at the
    // re-read after a summary ([`memory_tool`]).
    let mut specs = tools.specs();
    if found.memory.is_empty() {
        specs.retain(|spec| spec.name != READ_MEMORY_TOOL);
    }
    // A small window: the few tools a change needs (`context::window`).
    let profile = WindowProfile::for_window(settings.context_window);
    specs.retain(|spec| profile.offers(&spec.name));
    describe_agent_types(&mut specs, &found.agents);
    let mut tool_classes: BTreeMap<String, _> =
        specs.iter().map(|spec| (spec.name.clone(), tools.class_of(&spec.name))).collect();
    // Answered by the loop itself; described from the session's phase rules.
    // `ask_user` only where someone answers: headless (unless a script
    // answers on stdin), it would be dead weight in every request (a call
    // all the same is answered "no one can answer" and listed in the
    // result).
    let rules = settings.phase_rules.clone().unwrap_or_else(shipped_rules);
    for tool in HarnessTool::ALL {
        tool_classes.insert(tool.name().to_owned(), tool.class());
        let answered = !options.headless || options.script_answers;
        if (tool != HarnessTool::AskUser || answered) && profile.offers(tool.name()) {
            specs.push(harness_spec(tool, &rules));
        }
    }
    LoopConfig {
        model: settings.model.clone(),
        prefix: prefix_sections(settings, found),
        tools: specs,
        tool_classes,
        agent_classes: agent_classes(&found.agents),
        tool_scope: None,
        policy: build_policy(settings, options),
        limits: settings.limits,
        pricing: settings.pricing,
        configured: ConfiguredModel {
            model: settings.model.clone(),
            pricing: settings.pricing,
            one_hour_cache: one_hour_cache(settings),
        },
        context_window: settings.context_window,
        max_output_tokens: settings.provider.profile.max_output_tokens,
        compact_threshold: settings.compact_threshold,
        token_scale: settings.token_scale,
        post_tool_hooks: false,
        pre_tool_hooks: false,
        // Set with `policy.sandboxed` once the sandbox is probed (`setup_sandbox`).
        walls: crate::prompts::Walls::default(),
        strict_tools: strict_dialect(settings),
    }
}

/// The strict subset the session's protocol sends tool schemas in, when
/// `[provider] strict_tools` asks for it (as `llm/`'s encoders do).
pub(super) fn strict_dialect(
    settings: &Settings,
) -> Option<crate::protocol::strict_schema::StrictDialect> {
    use crate::protocol::strict_schema::StrictDialect;
    settings.provider.profile.strict_tools.then_some(match settings.provider.kind {
        crate::llm::ProviderKind::Anthropic => StrictDialect::Anthropic,
        _ => StrictDialect::OpenAi,
    })
}

/// Whether the provider writes one-hour prompt-cache entries (priced so).
pub(super) fn one_hour_cache(settings: &Settings) -> bool {
    settings.provider.profile.cache_ttl == crate::llm::CacheTtl::OneHour
}

/// `read_memory`'s spec and class when `memory` holds notes and `offered`
/// lacks the tool (the session started without notes): what the loop is
/// offered once notes appear mid-session, a recorded tool-set change.
pub(super) fn memory_tool(
    tools: &ToolRegistry,
    offered: &[ToolSpec],
    memory: &[MemoryNote],
) -> Option<(ToolSpec, ToolClass)> {
    if memory.is_empty() || offered.iter().any(|spec| spec.name == READ_MEMORY_TOOL) {
        return None;
    }
    let spec = tools.specs().into_iter().find(|spec| spec.name == READ_MEMORY_TOOL)?;
    Some((spec, tools.class_of(READ_MEMORY_TOOL)))
}

/// The instructions every request of the session starts with, from what
/// was found on disk.
pub(super) fn prefix_sections(settings: &Settings, found: &Found) -> PrefixSections {
    let index: Vec<(String, String, String)> = found
        .memory
        .iter()
        .map(|note| (note.meta.name.clone(), note.meta.kind.clone(), note.meta.description.clone()))
        .collect();
    PrefixSections {
        core: match WindowProfile::for_window(settings.context_window) {
            WindowProfile::Full => core_prompt(settings.limits.max_steps),
            WindowProfile::Compact => compact_core_prompt(settings.limits.max_steps),
        },
        project: instructions_block(&found.agents_md),
        memory: memory_block(&index),
        skills: skills_section(&found.skills),
    }
}

/// A subagent's instructions, fixed for its whole session like a
/// session's: its type's prompt and how subagents work (in place of the
/// core rules), the project's AGENTS.md files, the skills index when it
/// may load skills, and no memory index (it starts from its task alone;
/// `found` holds no notes). Its environment is announced in its history.
pub(super) fn subagent_prefix(agent_prompt: &str, found: &Found) -> PrefixSections {
    PrefixSections {
        core: subagent_core(agent_prompt),
        project: instructions_block(&found.agents_md),
        memory: String::new(),
        skills: skills_section(&found.skills),
    }
}

/// The skills index section, empty without skills.
fn skills_section(skills: &[skills::Skill]) -> String {
    let index: Vec<(String, String)> = skills
        .iter()
        .map(|skill| (skill.meta.name.clone(), skill.meta.description.clone()))
        .collect();
    skills_block(&index)
}

/// The environment snapshot as of now (the git status is read here).
pub(super) fn environment(
    settings: &Settings,
    cwd: &Path,
    date: &str,
    headless: bool,
    script_answers: bool,
) -> String {
    environment_block(&PromptFacts {
        workspace_root: settings.workspace_root.display().to_string(),
        cwd: cwd.display().to_string(),
        platform: std::env::consts::OS.to_owned(),
        shell: settings.user_shell.clone(),
        git: git_summary(&settings.workspace_root),
        date: date.to_owned(),
        headless,
        script_answers,
    })
}

/// A digest of the tool specs as the request offers them (the deferred
/// built-ins split off as the loop's opening does, so a config's tools
/// and an opened loop's digest alike): a resume whose tools differ from
/// the recorded ones is a deliberate prefix break.
pub(super) fn tools_digest(tools: &[ToolSpec]) -> String {
    let (offered, _) = crate::agent::split_builtins(tools.to_vec());
    crate::session::content_hash(&serde_json::to_vec(&offered).unwrap_or_default())
}

/// The workflow's rules and checks for the session.
pub(super) fn workflow_setup(settings: &Settings, found: &Found) -> WorkflowSetup {
    WorkflowSetup {
        rules: settings.phase_rules.clone(),
        verify_commands: settings.verify_commands.clone(),
        detected_checks: settings.detected_checks.clone(),
        named_checks: named_checks(&found.agents_md),
    }
}

/// The checks the AGENTS.md files name, each once, in order.
pub(super) fn named_checks(agents_md: &[(String, String)]) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for (_, text) in agents_md {
        for check in checks_named_in(text) {
            if !named.contains(&check) {
                named.push(check);
            }
        }
    }
    named
}

/// The tools a session at `depth` (0: the user's) offers: the built-in
/// ones (of the edit tools, those `[tools] edit` picks for the model), and
/// `agent` while subagents may nest that deep and a type exists.
pub(super) fn session_tools(settings: &Settings, found: &Found, depth: u32) -> ToolRegistry {
    let tools = ToolRegistry::builtin().retain(|name| settings.edit_tools.offers(name));
    if depth < settings.agents.max_depth && !found.agents.agents.is_empty() {
        tools.with_agent()
    } else {
        tools
    }
}

/// Most agent types `agent.agent`'s enum names; past it the field stays a
/// string and the description lists the types.
pub(super) const AGENT_TYPES_ENUM_MAX: usize = 24;

/// The `agent` tool's description with the agent types appended (fixed
/// for the session: it is part of the cached request prefix). When they
/// do not all fit, the compact index lists the built-in types first and
/// the schema names none (an enum of every type would cost what the
/// index saves); a type not listed is found with `search:WORDS`. The
/// schema's enum also stops at [`AGENT_TYPES_ENUM_MAX`] types: past that
/// a list of names in the schema repeats the description's at a cost
/// every request pays.
pub(super) fn describe_agent_types(specs: &mut [ToolSpec], agents: &AgentCatalog) {
    let Some(spec) = specs.iter_mut().find(|spec| spec.name == AGENT_TOOL) else { return };
    let mut types: Vec<(String, String, bool)> = agents
        .agents
        .iter()
        .map(|agent| (agent.name.clone(), agent.description.clone(), agent.read_only))
        .collect();
    let complete = agent_types_index(&types).complete();
    if !complete {
        let built_in = |name: &str| BUILT_IN_AGENTS.iter().any(|(known, _)| *known == name);
        types.sort_by_key(|(name, _, _)| !built_in(name));
    }
    spec.description = description_with_types(&types);
    let Some(agent) = spec.parameters.pointer_mut("/properties/agent") else { return };
    if complete && types.len() <= AGENT_TYPES_ENUM_MAX {
        // The types are known: the schema names them, so no call can name another.
        let names: Vec<&str> = types.iter().map(|(name, _, _)| name.as_str()).collect();
        agent["enum"] = serde_json::json!(names);
    }
}

/// Each agent type's class: read-only types run side by side.
pub(super) fn agent_classes(agents: &AgentCatalog) -> BTreeMap<String, ToolClass> {
    let class = |read_only: bool| if read_only { ToolClass::ReadOnly } else { ToolClass::Mutating };
    agents.agents.iter().map(|agent| (agent.name.clone(), class(agent.read_only))).collect()
}

/// What a session finds on disk besides its config: AGENTS.md files,
/// skills, memory notes, agent types and custom commands, and what could
/// not be loaded (said to the user as warnings).
pub(super) struct Found {
    /// `(path, text)` of each AGENTS.md, root first.
    pub(super) agents_md: Vec<(String, String)>,
    pub(super) skills: Vec<skills::Skill>,
    pub(super) memory: Vec<MemoryNote>,
    pub(super) agents: AgentCatalog,
    pub(super) commands: CommandCatalog,
    /// What a start shows: one line per kind once a kind is long.
    pub(super) warnings: Vec<String>,
    /// Every line (`keel debug prompt` prints them).
    pub(super) details: Vec<String>,
}

/// Where `settings` say instruction files live.
fn instruction_places(settings: &Settings) -> InstructionPlaces<'_> {
    InstructionPlaces {
        keel_home: &settings.keel_home,
        home: &settings.home,
        codex_home: &settings.codex_home,
        workspace_root: &settings.workspace_root,
        trusted: settings.project_trusted,
        import: settings.import_setup,
    }
}

/// The AGENTS.md files for a session started in `cwd`.
pub(super) fn project_instructions(settings: &Settings, cwd: &Path) -> Vec<(String, String)> {
    discover_instructions(&instruction_places(settings), cwd)
        .into_iter()
        .map(|file| (file.path.display().to_string(), file.text))
        .collect()
}

/// AGENTS.md, skills, memory, agent types and commands for a session
/// started in `cwd`.
pub(super) fn discover_context(settings: &Settings, cwd: &Path) -> Found {
    // Plugins' skills and types are `plugin:name` (Claude Code's names), so
    // they never replace the user's or the project's own, nor each other.
    let mut roots: Vec<(std::path::PathBuf, Option<String>)> = settings
        .plugins
        .skill_roots()
        .into_iter()
        .map(|(root, plugin)| (root, Some(plugin)))
        .collect();
    roots.extend(
        skills::skill_roots(&settings.home, &settings.keel_home, &settings.workspace_root, cwd)
            .into_iter()
            .map(|root| (root, None)),
    );
    let discovery = skills::discover_namespaced(&roots);
    let (memory, memory_problems) = discover_memory(&settings.keel_home, &settings.workspace_root);
    let skill_warnings: Vec<String> = discovery
        .problems
        .iter()
        .map(|problem| format!("skill {} not loaded: {}", problem.path.display(), problem.error))
        .collect();
    let memory_warnings: Vec<String> = memory_problems
        .iter()
        .map(|problem| {
            format!("memory note {} not loaded: {}", problem.path.display(), problem.error)
        })
        .collect();
    let home = &settings.home;
    let trusted = settings.project_trusted;
    let agent_folders = agent_roots(home, &settings.keel_home, &settings.workspace_root);
    let mut agents = discover_agents(&agent_folders, trusted);
    crate::config::plugin_parts::add_agents(&settings.plugins, &mut agents);
    let mut commands = discover_commands(
        &command_roots(home, &settings.keel_home, &settings.workspace_root),
        trusted,
    );
    crate::config::plugin_parts::add_commands(&settings.plugins, &mut commands);
    let instructions = discover_instructions(&instruction_places(settings), cwd);
    let import_warnings: Vec<String> =
        instructions.iter().flat_map(|file| file.skipped.iter().cloned()).collect();
    let notes = index_notes(&discovery.skills, &agents);
    let details = skill_warnings
        .iter()
        .chain(&memory_warnings)
        .chain(&import_warnings)
        .cloned()
        .chain(agents.warnings())
        .chain(commands.warnings())
        .chain(notes.iter().cloned())
        .collect();
    let warnings = grouped("skill folders not loaded", skill_warnings)
        .into_iter()
        .chain(memory_warnings)
        .chain(import_warnings)
        .chain(agents.warning_summary())
        .chain(commands.warnings())
        .chain(notes)
        .collect();
    Found {
        agents_md: instructions
            .into_iter()
            .map(|file| (file.path.display().to_string(), file.text))
            .collect(),
        skills: discovery.skills,
        memory,
        agents,
        commands,
        warnings,
        details,
    }
}

/// What the user is told when an index does not list everything: how
/// many it lists, and that the model finds the others by search.
fn index_notes(skills: &[skills::Skill], agents: &AgentCatalog) -> Vec<String> {
    let mut notes = Vec::new();
    let skills: Vec<(String, String)> =
        skills.iter().map(|s| (s.meta.name.clone(), s.meta.description.clone())).collect();
    let index = crate::prompts::skills_index(&skills);
    if !index.complete() {
        notes.push(format!(
            "the skills index lists {} of {} skills (the prompt's budget); the model finds the \
             others with `load_skill` `search:WORDS`; /skills lists them all",
            index.listed, index.total
        ));
    }
    let types: Vec<(String, String, bool)> = agents
        .agents
        .iter()
        .map(|agent| (agent.name.clone(), agent.description.clone(), agent.read_only))
        .collect();
    let index = agent_types_index(&types);
    if !index.complete() {
        notes.push(format!(
            "the `agent` tool lists {} of {} agent types (the prompt's budget); the model finds \
             the others with `agent` `search:WORDS`",
            index.listed, index.total
        ));
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::agents::{AgentDefinition, AgentModel, AgentSource};
    use crate::context::memory::MemoryMeta;

    fn catalog(count: usize) -> AgentCatalog {
        let agents = (0..count)
            .map(|n| AgentDefinition {
                name: format!("t{n:02}"),
                description: "D.".into(),
                tools: None,
                disallowed: Vec::new(),
                model: AgentModel::Inherit,
                read_only: false,
                prompt: String::new(),
                source: AgentSource::BuiltIn,
                unknown_tools: Vec::new(),
            })
            .collect();
        AgentCatalog { agents, ..AgentCatalog::default() }
    }

    // Issue 32: `agent.agent` names the session's types, up to a cap.
    #[test]
    fn the_agent_field_is_an_enum_of_the_types_up_to_the_cap() {
        let spec_for = |count| {
            let mut specs = ToolRegistry::builtin().with_agent().specs();
            describe_agent_types(&mut specs, &catalog(count));
            specs.into_iter().find(|spec| spec.name == AGENT_TOOL).unwrap()
        };
        let few = spec_for(3);
        assert_eq!(
            few.parameters["properties"]["agent"]["enum"],
            serde_json::json!(["t00", "t01", "t02"])
        );
        let at_cap = spec_for(AGENT_TYPES_ENUM_MAX);
        let names = at_cap.parameters["properties"]["agent"]["enum"].as_array().unwrap().len();
        assert_eq!(names, AGENT_TYPES_ENUM_MAX);
        let many = spec_for(AGENT_TYPES_ENUM_MAX + 1);
        let agent = &many.parameters["properties"]["agent"];
        assert!(agent.get("enum").is_none(), "past the cap: a string ({agent})");
        assert_eq!(agent["type"], "string");
        assert!(many.description.contains("- t24: D."), "the description lists them all");
    }

    #[test]
    fn read_memory_is_offered_late_only_when_notes_appear_and_it_is_missing() {
        let tools = ToolRegistry::builtin();
        let note = MemoryNote {
            meta: MemoryMeta { name: "n".into(), kind: String::new(), description: "d".into() },
            path: "/m/n.md".into(),
        };
        let without: Vec<ToolSpec> =
            tools.specs().into_iter().filter(|spec| spec.name != READ_MEMORY_TOOL).collect();
        assert_eq!(memory_tool(&tools, &without, &[]), None, "no notes: nothing to read");
        let (spec, class) = memory_tool(&tools, &without, std::slice::from_ref(&note)).unwrap();
        assert_eq!((spec.name.as_str(), class), (READ_MEMORY_TOOL, ToolClass::ReadOnly));
        assert_eq!(memory_tool(&tools, &tools.specs(), &[note]), None, "offered already");
    }
}
