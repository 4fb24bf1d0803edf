//! Parsing and checking the phase rules file.

use std::collections::BTreeMap;

use serde::Deserialize;

pub use crate::protocol::ToolKind;
use crate::protocol::{MCP_PREFIX, tool_facts};

/// The kind of a tool by name; unknown tools count as writes (the
/// strictest class) so a new tool is never allowed by accident. MCP tools
/// (`mcp__server__tool`) are admitted as reads in every phase (a GitHub
/// lookup must work while planning): phases order the model's work, they
/// are not a permission boundary; policy is, and it judges each MCP call by
/// its class (a tool not trusted as read-only asks, and is refused in the
/// read-only modes). What such a call did to the workspace is still seen:
/// see [`observed_kind`].
pub fn tool_kind(tool: &str) -> ToolKind {
    match tool_facts::builtin(tool) {
        Some(info) => info.kind,
        None if tool.starts_with(MCP_PREFIX) => ToolKind::Read,
        None => ToolKind::Write,
    }
}

/// The built-in tools of `kind`, as a phase's message lists them (other
/// tools, MCP ones included, count as writes). `agent` is admitted as a
/// read but not listed: delegating is no phase's work of its own; nor is
/// `ask_user` (asking is no phase's work either); nor are
/// the background-process tools, which go with `shell` (what `shell`
/// started is read, fed and stopped through them), nor `tool_search` and
/// `call_tool`, which go with the tools they stand for.
pub fn tools_of_kind(kind: ToolKind) -> impl Iterator<Item = &'static str> {
    tool_facts::BUILTIN
        .into_iter()
        .filter(move |info| info.kind == kind && info.name != tool_facts::names::AGENT)
        .filter(|info| info.name != tool_facts::names::ASK_USER)
        .filter(|info| !tool_facts::PROCESS_TOOLS.contains(&info.name))
        .filter(|info| !tool_facts::DEFERRAL_TOOLS.contains(&info.name))
        .map(|info| info.name)
}

/// The kind a finished call counts as for the verification gate: its
/// tool's kind, except that an MCP call that changed workspace files (the
/// runtime fingerprints the workspace around every MCP call not trusted as
/// read-only, `meta.changed`) counts as a write, so delivering needs a
/// check after it as after any edit.
pub fn observed_kind(tool: &str, changed: Option<bool>) -> ToolKind {
    match tool_kind(tool) {
        ToolKind::Read if tool.starts_with(MCP_PREFIX) && changed == Some(true) => ToolKind::Write,
        kind => kind,
    }
}

/// A condition that must hold to enter a phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Gate {
    /// When a plan is required (plan mode, or the rules), it is approved.
    PlanApprovedWhenRequired,
    /// If files changed, a verification passed after the last change.
    VerifiedAfterLastChange,
}

/// One phase's rules.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseRule {
    pub purpose: String,
    pub tools: Vec<ToolKind>,
    pub next: Vec<String>,
    #[serde(default)]
    pub skippable: bool,
    /// The turn's work is finished here: the next user message starts
    /// over at the rules' start (a phase without `next` is done too).
    #[serde(default)]
    pub done: bool,
    #[serde(default)]
    pub requires: Vec<Gate>,
    /// Check commands (prefixes, e.g. `cargo clippy`) that must each have
    /// passed after the last change before this phase is entered; they
    /// count as verification. Until the verification limit is reached.
    #[serde(default)]
    pub checks: Vec<String>,
}

/// The whole rules file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseRules {
    pub start: String,
    /// Every change needs an approved plan, as in plan mode (a project
    /// that wants plans first says so here).
    #[serde(default)]
    pub require_plan: bool,
    pub phases: BTreeMap<String, PhaseRule>,
}

/// Why a rules file cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    #[error("invalid phase rules: {message}")]
    Parse { message: String },
    #[error("phase rules name an unknown phase `{phase}` (in {context})")]
    UnknownPhase { phase: String, context: String },
}

impl PhaseRules {
    /// Parses and cross-checks a rules file.
    pub fn parse(text: &str) -> Result<Self, RulesError> {
        let rules: PhaseRules = toml::from_str(text)
            .map_err(|error| RulesError::Parse { message: error.to_string() })?;
        rules.check_phase(&rules.start, "start")?;
        for (name, rule) in &rules.phases {
            for next in &rule.next {
                rules.check_phase(next, &format!("phases.{name}.next"))?;
            }
        }
        Ok(rules)
    }

    fn check_phase(&self, phase: &str, context: &str) -> Result<(), RulesError> {
        if self.phases.contains_key(phase) {
            Ok(())
        } else {
            Err(RulesError::UnknownPhase { phase: phase.to_owned(), context: context.to_owned() })
        }
    }

    pub fn rule(&self, phase: &str) -> Option<&PhaseRule> {
        self.phases.get(phase)
    }

    /// Whether `phase` allows tools of `kind` (moving phases always is).
    pub fn allows(&self, phase: &str, kind: ToolKind) -> bool {
        kind == ToolKind::Phase || self.rule(phase).is_some_and(|rule| rule.tools.contains(&kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::DEFAULT_PHASE_RULES;

    #[test]
    fn the_shipped_rules_parse() {
        let rules = PhaseRules::parse(DEFAULT_PHASE_RULES).unwrap();
        assert_eq!(rules.start, "orient");
        assert!(rules.allows("implement", ToolKind::Write));
        assert!(!rules.allows("plan", ToolKind::Write));
        assert!(!rules.allows("plan", ToolKind::Shell));
        assert!(rules.allows("deliver", ToolKind::Phase));
    }

    #[test]
    fn the_subagent_rules_are_one_phase_that_allows_the_type_its_tools() {
        let rules = PhaseRules::parse(crate::plan::SUBAGENT_PHASE_RULES).unwrap();
        assert_eq!(rules.start, "task");
        for kind in [ToolKind::Read, ToolKind::Write, ToolKind::Shell] {
            assert!(rules.allows("task", kind), "{kind:?}");
        }
        assert!(rules.rule("task").unwrap().next.is_empty());
    }

    #[test]
    fn unknown_phases_and_keys_are_rejected() {
        let bad_next = "start = \"a\"\n[phases.a]\npurpose = \"p\"\ntools = []\nnext = [\"b\"]\n";
        assert!(matches!(PhaseRules::parse(bad_next), Err(RulesError::UnknownPhase { .. })));
        let typo =
            "start = \"a\"\n[phases.a]\npurpose = \"p\"\ntools = []\nnext = []\nskipable = true\n";
        assert!(matches!(PhaseRules::parse(typo), Err(RulesError::Parse { .. })));
    }

    #[test]
    fn a_phase_may_name_its_checks() {
        let text = "start = \"a\"\n[phases.a]\npurpose = \"p\"\ntools = []\nnext = []\n\
                    checks = [\"cargo clippy\"]\n";
        let rules = PhaseRules::parse(text).unwrap();
        assert_eq!(rules.rule("a").unwrap().checks, ["cargo clippy"]);
        let shipped = PhaseRules::parse(DEFAULT_PHASE_RULES).unwrap();
        assert!(shipped.phases.values().all(|rule| rule.checks.is_empty()));
    }

    #[test]
    fn a_project_may_require_a_plan() {
        assert!(!PhaseRules::parse(DEFAULT_PHASE_RULES).unwrap().require_plan);
        let text = "start = \"a\"\nrequire_plan = true\n[phases.a]\npurpose = \"p\"\ntools = []\nnext = []\n";
        assert!(PhaseRules::parse(text).unwrap().require_plan);
    }

    #[test]
    fn every_named_tool_maps_back_to_its_kind() {
        let kinds = [
            ToolKind::Read,
            ToolKind::Write,
            ToolKind::Shell,
            ToolKind::Plan,
            ToolKind::Tasks,
            ToolKind::Phase,
        ];
        for kind in kinds {
            for name in tools_of_kind(kind) {
                assert_eq!(tool_kind(name), kind, "{name}");
            }
        }
    }

    /// Reading a background process's output and stopping it change no
    /// file, feeding its stdin can run anything; the phase messages do not
    /// list them (they go with `shell`), so those messages stay as they were.
    #[test]
    fn background_process_tools_have_their_kinds_and_are_not_listed() {
        assert_eq!(tool_kind("process_output"), ToolKind::Read);
        assert_eq!(tool_kind("process_stop"), ToolKind::Read);
        assert_eq!(tool_kind("process_write"), ToolKind::Write);
        let read: Vec<_> = tools_of_kind(ToolKind::Read).collect();
        let listed =
            ["read_file", "list_dir", "glob", "grep", "load_skill", "read_memory", "web_fetch"];
        assert_eq!(read, listed);
        let write: Vec<_> = tools_of_kind(ToolKind::Write).collect();
        assert_eq!(write, ["edit_file", "write_file", "apply_patch"]);
    }

    #[test]
    fn unknown_tools_count_as_writes() {
        assert_eq!(tool_kind("read_file"), ToolKind::Read);
        assert_eq!(tool_kind("frobnicate"), ToolKind::Write);
    }

    #[test]
    fn an_mcp_call_that_changed_the_workspace_counts_as_a_write_for_the_gate() {
        assert_eq!(observed_kind("mcp__fs__write", Some(true)), ToolKind::Write);
        assert_eq!(observed_kind("mcp__fs__write", Some(false)), ToolKind::Read);
        assert_eq!(observed_kind("mcp__fs__write", None), ToolKind::Read);
        assert_eq!(observed_kind("read_file", Some(true)), ToolKind::Read);
        assert_eq!(observed_kind("shell", Some(true)), ToolKind::Shell);
    }

    #[test]
    fn mcp_tools_are_open_in_every_phase_policy_judges_them() {
        let rules = PhaseRules::parse(DEFAULT_PHASE_RULES).unwrap();
        assert_eq!(tool_kind("mcp__github__get_issue"), ToolKind::Read);
        for phase in ["orient", "explore", "plan", "implement", "verify"] {
            assert!(rules.allows(phase, tool_kind("mcp__github__get_issue")), "{phase}");
        }
    }
}
