//! Judging tools that act outside the workspace: MCP tools
//! (`mcp__<server>__<tool>`), with keel's `tool_rule(name = "mcp__github__get_*",
//! decision = "allow" | "prompt" | "forbidden", justification = "…")`.
//!
//! Decision order for such a tool (DESIGN §4 applied to a tool keel cannot
//! look inside): rules (strictest wins; a project's allows only once it is
//! trusted) → mode (plan and explore are read-only) → the session's
//! "always" tools → the tool's class: a read (`ReadOnly`: the server
//! annotates it `readOnlyHint` *and* the user trusts that server's claims,
//! `trust_read_only_hint`, decided in `mcp::hub`) runs like a read; any
//! other asks in ask and auto mode (the sandbox does not reach it), runs in
//! yolo and is refused in plan and explore.
//!
//! Invariants: a `forbidden` or `prompt` rule holds in every mode, yolo
//! included; read-only modes never run a tool that may change things,
//! whatever the rules allow; names match as globs (`*` any run of
//! characters), whole name only. Pure, like the rest of `policy`.

use globset::{Glob, GlobMatcher};

use super::engine::{Policy, Verdict};
use super::rule_args::{ArgError, decision, justification, string};
use super::rules::{RuleDecision, RuleMatch, Source};
use super::syntax::Arg;
use super::{Allowlist, ApprovalMode, Decision};
use crate::protocol::ToolClass;

/// The prefix of every tool judged here.
pub const EXTERNAL_PREFIX: &str = "mcp__";

/// Whether `tool` is judged here (an MCP tool).
pub fn is_external(tool: &str) -> bool {
    tool.starts_with(EXTERNAL_PREFIX)
}

/// One `tool_rule`.
#[derive(Debug, Clone)]
pub struct ToolRule {
    pub pattern: String,
    matcher: GlobMatcher,
    pub decision: RuleDecision,
    pub justification: Option<String>,
    pub source: Source,
}

impl PartialEq for ToolRule {
    fn eq(&self, other: &Self) -> bool {
        self.pattern == other.pattern
            && self.decision == other.decision
            && self.justification == other.justification
            && self.source == other.source
    }
}

impl ToolRule {
    pub fn matches(&self, tool: &str) -> bool {
        self.matcher.is_match(tool)
    }

    /// The rule as a match, shaped as `keel policy check --json` reports
    /// rules (pattern and matched "prefix" are the name).
    pub fn to_match(&self, tool: &str) -> RuleMatch {
        RuleMatch {
            source: self.source.clone(),
            pattern: vec![vec![self.pattern.clone()]],
            matched_prefix: vec![tool.to_owned()],
            decision: self.decision,
            justification: self.justification.clone(),
            resolved_program: None,
        }
    }
}

/// Parses the arguments of one `tool_rule` call.
pub(super) fn tool_rule(args: Vec<Arg>, source: &Source) -> Result<ToolRule, ArgError> {
    let (mut name, mut rule_decision, mut why) = (None, RuleDecision::Allow, None);
    for arg in args {
        let at = (arg.line, arg.column);
        let located = move |message: String| ArgError { message, at: Some(at) };
        match arg.name.as_str() {
            "name" => name = Some((string(arg.value, "name").map_err(located)?, at)),
            "decision" => rule_decision = decision(arg.value).map_err(located)?,
            "justification" => why = Some(justification(arg.value).map_err(located)?),
            other => return Err(located(format!("tool_rule has no argument `{other}`"))),
        }
    }
    let (pattern, at) = name.ok_or("tool_rule needs a `name` (e.g. \"mcp__github__get_*\")")?;
    let located = move |message: String| ArgError { message, at: Some(at) };
    if !is_external(&pattern) {
        return Err(located(format!(
            "tool_rule names MCP tools (`{EXTERNAL_PREFIX}SERVER__TOOL`, `*` allowed), not \
             {pattern:?}; keel's own tools are judged by prefix_rule and path_rule"
        )));
    }
    let matcher = Glob::new(&pattern)
        .map_err(|error| located(format!("bad name pattern {pattern:?}: {error}")))?
        .compile_matcher();
    Ok(ToolRule {
        pattern,
        matcher,
        decision: rule_decision,
        justification: why,
        source: source.clone(),
    })
}

/// The line an "always" answer for `tool` appends to `local.rules`.
pub fn allow_rule_text(tool: &str) -> String {
    format!("tool_rule(name={tool:?}, decision=\"allow\")\n")
}

/// Judges a call of the external tool `tool` of access class `class`.
pub fn evaluate_tool(
    policy: &Policy,
    allowlist: &Allowlist,
    tool: &str,
    class: ToolClass,
) -> Verdict {
    let matched: Vec<RuleMatch> = policy
        .rules
        .tool_rules
        .iter()
        .filter(|rule| rule.matches(tool))
        .map(|rule| rule.to_match(tool))
        .filter(|m| {
            policy.project_trusted
                || m.source.origin != super::Origin::Project
                || m.decision != RuleDecision::Allow
        })
        .collect();
    let strictest = matched.iter().max_by_key(|m| m.decision);
    let decision = match strictest {
        Some(rule) if rule.decision == RuleDecision::Forbidden => {
            Decision::Forbidden { reason: rule_reason(tool, rule, "is forbidden") }
        }
        Some(rule) if rule.decision == RuleDecision::Prompt => {
            Decision::Prompt { reason: rule_reason(tool, rule, "requires approval") }
        }
        Some(_) | None => by_class(policy, allowlist, tool, class, strictest.is_some()),
    };
    // An MCP tool is never proven read-only by its arguments: its class (the
    // server's annotation) decides how it is scheduled.
    Verdict { decision, matched, suggested_prefix: None, read_only: false }
}

/// The decision when no rule forbids or asks: `allowed` is whether an
/// allow rule matched.
fn by_class(
    policy: &Policy,
    allowlist: &Allowlist,
    tool: &str,
    class: ToolClass,
    allowed: bool,
) -> Decision {
    match (class, policy.mode) {
        (ToolClass::Mutating, ApprovalMode::Plan | ApprovalMode::Explore) => Decision::Forbidden {
            reason: format!(
                "`{tool}` may change things and {} mode is read-only (an MCP tool counts as a \
                 read only when its server marks it `readOnlyHint` and the server's \
                 `[mcp_servers.NAME]` entry sets `trust_read_only_hint = true`)",
                policy.mode.as_str()
            ),
        },
        (ToolClass::ReadOnly, _) | (ToolClass::Mutating, ApprovalMode::Yolo) => Decision::Allow,
        (ToolClass::Mutating, ApprovalMode::Ask | ApprovalMode::Auto)
            if allowed || allowlist.allows_tool(tool) =>
        {
            Decision::Allow
        }
        (ToolClass::Mutating, ApprovalMode::Ask | ApprovalMode::Auto) => Decision::Prompt {
            reason: format!(
                "`{tool}` is an MCP tool that may change things outside the workspace, where the \
                 sandbox does not reach"
            ),
        },
    }
}

fn rule_reason(tool: &str, rule: &RuleMatch, what: &str) -> String {
    match &rule.justification {
        Some(why) => format!("`{tool}` {what}: {why}"),
        None => format!("`{tool}` {what} by policy ({})", rule.source),
    }
}

#[cfg(test)]
#[path = "tool_rules_tests.rs"]
mod tests;
