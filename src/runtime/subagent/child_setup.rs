//! What a child session is given, decided from its parent and its type: its settings (the
//! type's model, or the parent's), its approval mode (never more than the parent's), its tools
//! (within the parent's narrowed scope; whole MCP servers expanded) and its workflow.
//!
//! Invariant: a child never gets a mode, a tool or a phase its parent could not use.

use crate::agent::{ToolScope, WorkflowSetup};
use crate::config::Settings;
use crate::config::agents::{AgentDefinition, AgentModel, only_reads};
use crate::context::Pricing;
use crate::llm::ModelChoice;
use crate::plan::{PhaseRules, SUBAGENT_PHASE_RULES};
use crate::policy::ApprovalMode;
use crate::protocol::{HarnessTool, entry_names};
use crate::tools::ToolRegistry;

use crate::protocol::tool_facts::names;
use crate::runtime::assembly::{Found, named_checks, session_tools};

/// A child's settings: the parent's, with the type's model (and its
/// window and prices) and the subagent step limit.
pub(super) fn child_settings(parent: &Settings, definition: &AgentDefinition) -> Settings {
    let mut settings = parent.clone();
    let model = child_model(parent, &definition.model).unwrap_or_else(|| parent.model.clone());
    if model != parent.model {
        let pricing = Pricing::for_model(&model);
        settings.pricing = pricing;
        settings.context_window = pricing.context_window;
        // The parent's server counted for the parent's model.
        settings.token_scale = crate::context::tokens::TokenScale::IDENTITY;
    }
    settings.model = model;
    settings.limits.max_steps = parent.agents.max_steps;
    // The session's MCP servers are the parent's: a child starts none of
    // its own; it calls the parent's running ones (`subagent_mcp.rs`).
    settings.mcp = Default::default();
    settings.warnings.clear();
    settings
}

/// The model a child of type `model` runs on, `None` where its `model:`
/// names one the provider does not serve (a warning's case, see
/// [`foreign_agent_model`]: the parent's then). Claude's aliases off
/// Anthropic keep their old meaning: `haiku` is the fast model, `sonnet`
/// and `opus` the parent's.
fn child_model(parent: &Settings, model: &AgentModel) -> Option<String> {
    let fast = || parent.agents.fast_model.clone().unwrap_or_else(|| parent.model.clone());
    match model {
        AgentModel::Inherit => Some(parent.model.clone()),
        AgentModel::Fast => Some(fast()),
        AgentModel::Named(name) => match parent.provider.choose_model(name) {
            ModelChoice::Model(model) => Some(model),
            ModelChoice::Session => Some(parent.model.clone()),
            ModelChoice::Foreign => match name.as_str() {
                "haiku" => Some(fast()),
                "sonnet" | "opus" => Some(parent.model.clone()),
                _ => None,
            },
        },
    }
}

/// The warning for a type whose `model:` the provider does not serve.
pub(super) fn foreign_agent_model(
    parent: &Settings,
    definition: &AgentDefinition,
) -> Option<String> {
    let AgentModel::Named(name) = &definition.model else { return None };
    child_model(parent, &definition.model).is_none().then(|| {
        format!(
            "agent `{}` asks for model `{name}`, which the {} provider does not serve: it runs \
             on the session's model `{}`",
            definition.name,
            parent.provider.kind.cli_name(),
            parent.model
        )
    })
}

/// `definition` as a child of a loop narrowed to `scope` may use it: no
/// tool the loop itself may not call (a subagent's own tools for its
/// children), so delegating never widens
/// what the loop may do.
pub(super) fn within_scope(
    definition: &AgentDefinition,
    scope: Option<&ToolScope>,
) -> AgentDefinition {
    let mut definition = definition.clone();
    let Some(scope) = scope else { return definition };
    let tools: Vec<String> = match definition.tools.take() {
        // A whole MCP server (`mcp__server`) becomes its tools in scope; a
        // tool of a server the scope names whole stays.
        Some(tools) => tools
            .iter()
            .flat_map(|listed| {
                let named = scope.tools.iter().filter(|tool| entry_names(listed, tool)).cloned();
                let allowed = scope.allows(listed).then(|| listed.clone());
                allowed.into_iter().chain(named).collect::<Vec<_>>()
            })
            .fold(Vec::new(), |mut kept, tool| {
                if !kept.contains(&tool) {
                    kept.push(tool);
                }
                kept
            }),
        None => scope
            .tools
            .iter()
            .filter(|tool| HarnessTool::parse(tool).is_none() && definition.may_use(tool))
            .cloned()
            .collect(),
    };
    definition.read_only |= tools.iter().all(|tool| only_reads(tool));
    definition.tools = Some(tools);
    definition
}

/// A child's mode: never more than its parent's; read-only for a
/// read-only type, and for any child of a read-only (plan, explore)
/// parent, without plan mode's plan workflow.
pub(super) fn child_mode(parent: ApprovalMode, read_only_type: bool) -> ApprovalMode {
    if read_only_type || parent.read_only() { ApprovalMode::Explore } else { parent }
}

/// A child's tools: the session tools at its depth, narrowed to its type's
/// list (no memory notes: it starts from its task alone).
pub(super) fn child_tools(
    settings: &Settings,
    definition: &AgentDefinition,
    found: &Found,
    depth: u32,
) -> ToolRegistry {
    session_tools(settings, found, depth)
        .retain(|name| name != names::READ_MEMORY && definition.may_use(name))
}

/// The one-phase workflow of a subagent, with the project's checks (so a
/// `verify` child's checks count as verification).
pub(super) fn child_workflow(settings: &Settings, found: &Found) -> WorkflowSetup {
    WorkflowSetup {
        rules: PhaseRules::parse(SUBAGENT_PHASE_RULES).ok(),
        verify_commands: settings.verify_commands.clone(),
        detected_checks: settings.detected_checks.clone(),
        named_checks: named_checks(&found.agents_md),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_never_exceeds_its_parents_mode() {
        use ApprovalMode::{Ask, Auto, Explore, Plan, Yolo};
        for (parent, read_only, child) in [
            (Ask, false, Ask),
            (Auto, false, Auto),
            (Yolo, false, Yolo),
            (Ask, true, Explore),
            (Yolo, true, Explore),
            (Plan, false, Explore),
            (Explore, false, Explore),
        ] {
            assert_eq!(child_mode(parent, read_only), child, "{parent:?} {read_only}");
        }
    }

    fn definition(text: &str) -> AgentDefinition {
        let file = crate::config::markdown_file::MarkdownFile::parse(text).unwrap();
        crate::config::agents::definition(&file, crate::config::agents::AgentSource::BuiltIn)
            .unwrap()
    }

    fn scope(tools: &[&str]) -> ToolScope {
        ToolScope {
            owner: "the /look command".into(),
            tools: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    #[test]
    fn a_child_gets_no_tool_its_narrowed_parent_may_not_call() {
        let verify = definition("---\nname: v\ndescription: d\ntools: Read, Bash\n---\n");
        assert!(!verify.read_only);
        let narrowed = within_scope(&verify, Some(&scope(&["read_file", "agent", "todo_write"])));
        assert_eq!(narrowed.tools.as_deref().unwrap(), ["read_file"]);
        assert!(narrowed.read_only, "left with reads only, it runs read-only");
        assert!(!narrowed.may_use("shell"));
        // A type without a list gets the scope's tools, less its own
        // disallowed ones and the workflow's.
        let general = definition("---\nname: g\ndescription: d\ndisallowedTools: Edit\n---\n");
        let narrowed =
            within_scope(&general, Some(&scope(&["edit_file", "shell", "agent", "set_phase"])));
        assert_eq!(narrowed.tools.as_deref().unwrap(), ["agent", "shell"]);
        assert!(!narrowed.read_only);
        assert_eq!(within_scope(&general, None), general, "no scope: the type as defined");
    }

    #[test]
    fn a_whole_mcp_server_in_a_types_list_becomes_its_tools_in_scope() {
        let looker = definition("---\nname: l\ndescription: d\ntools: Read, mcp__docs\n---\n");
        let scope = scope(&["read_file", "mcp__docs__search", "mcp__docs__publish", "mcp__gh__x"]);
        let narrowed = within_scope(&looker, Some(&scope));
        assert_eq!(
            narrowed.tools.as_deref().unwrap(),
            ["read_file", "mcp__docs__publish", "mcp__docs__search"]
        );
        assert!(!narrowed.read_only, "an MCP tool is not known to only read");
        // Under a scope naming `mcp__docs` whole, a type listing one of
        // its tools keeps it, and nothing of another server.
        let searcher =
            definition("---\nname: s\ndescription: d\ntools: mcp__docs__search, mcp__gh__x\n---\n");
        let narrowed = within_scope(&searcher, Some(&self::scope(&["mcp__docs", "todo_write"])));
        assert_eq!(narrowed.tools.as_deref().unwrap(), ["mcp__docs__search"]);
    }

    #[test]
    fn every_tool_keel_has_is_known_to_agent_definitions() {
        let names: Vec<String> =
            crate::tools::ToolRegistry::builtin().specs().into_iter().map(|s| s.name).collect();
        let definable: Vec<_> = crate::config::agents::definable_tools().map(|i| i.name).collect();
        assert_eq!(names.len(), definable.len());
        for name in names {
            assert!(definable.contains(&name.as_str()), "{name}");
        }
    }

    #[test]
    fn the_subagent_workflow_parses() {
        let settings_free = PhaseRules::parse(SUBAGENT_PHASE_RULES).unwrap();
        assert_eq!(settings_free.start, "task");
    }
}
