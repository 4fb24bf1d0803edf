//! [`evaluate`]: one tool call → one [`Verdict`], in the order of DESIGN §4:
//! hard deny → project trust → rules → mode → session allowlist → default.
//!
//! Invariants: hard deny wins over everything, `yolo` included; a rule's
//! `forbidden` wins over every mode; protected paths, `prompt` rules and
//! code keel cannot read (`curl … | sh`, `eval "$X"`) are never
//! auto-approved (not in `auto`, not in `yolo`); a project's allow rules
//! count only when the project is trusted; every write is judged by every
//! path it names (a file tool's `path`, each `apply_patch` header, a shell
//! call's `workdir` and redirections), lexically and, when the caller
//! supplied the symlinks on the way ([`PathContext::links`]), where it
//! really leads; every refusal says what matched.

use super::paths::PathContext;
use super::rules::{Access, Origin, RuleDecision, RuleMatch, RuleSet};
use super::shell::analyze_script_in;
use super::workdir::Dirs;
use super::{Allowlist, ApprovalMode, Decision};
use crate::protocol::{Operand, ToolClass, ToolInfo, tool_facts};

pub use super::script_verdict::evaluate_script;

/// Everything a decision depends on that is fixed for a session.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub rules: RuleSet,
    pub mode: ApprovalMode,
    pub paths: PathContext,
    /// The user trusts this project (`keel trust`): its allow rules apply.
    pub project_trusted: bool,
    /// Shell commands run inside an enforced sandbox.
    pub sandboxed: bool,
    /// `[security] taint` and the commands' network (`super::egress`).
    pub egress: super::egress::Egress,
}

/// A decision with the rules behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub decision: Decision,
    /// Every rule that matched (after the trust filter), in load order.
    pub matched: Vec<RuleMatch>,
    /// For shell calls that ask: the prefix an "always" answer would allow
    /// (the first command nothing covered), when one can be allowed.
    pub suggested_prefix: Option<Vec<String>>,
    /// The call is proven to change nothing, whatever its tool's class: a
    /// shell script whose every command only reads, as plan mode judges it
    /// (`script_verdict::read_only`: on the read-only list, run as written,
    /// nothing hidden, no redirection into a file). The loop runs such
    /// calls as reads (`agent::schedule`).
    pub read_only: bool,
}

impl Policy {
    /// A policy with `rules`, nothing trusted and no sandbox.
    pub fn new(rules: RuleSet, mode: ApprovalMode, paths: PathContext) -> Self {
        let egress = super::egress::Egress::default();
        Self { rules, mode, paths, project_trusted: false, sandboxed: false, egress }
    }
}

impl Verdict {
    pub(super) fn new(decision: Decision, matched: Vec<RuleMatch>) -> Self {
        Self { decision, matched, suggested_prefix: None, read_only: false }
    }
}

/// One tool call as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    pub tool: &'a str,
    pub class: ToolClass,
    /// The raw JSON arguments.
    pub arguments: &'a str,
}

/// Judges one tool call, by its built-in tool's facts when it is one.
pub fn evaluate(policy: &Policy, allowlist: &Allowlist, call: CallFacts<'_>) -> Verdict {
    evaluate_described(policy, allowlist, call, tool_facts::builtin(call.tool))
}

/// Judges one tool call of the tool `info` describes (`None`: not a
/// built-in tool). Every path its descriptor names is judged, with the
/// access the descriptor gives it; the strictest verdict wins.
pub fn evaluate_described(
    policy: &Policy,
    allowlist: &Allowlist,
    call: CallFacts<'_>,
    info: Option<&ToolInfo>,
) -> Verdict {
    let args: serde_json::Value = serde_json::from_str(call.arguments).unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(|value| value.as_str());
    let class_access = match call.class {
        ToolClass::ReadOnly => Access::Read,
        ToolClass::Mutating => Access::Write,
    };
    let Some(info) = info else {
        if super::tool_rules::is_external(call.tool) {
            return super::tool_rules::evaluate_tool(policy, allowlist, call.tool, call.class);
        }
        return match text("path") {
            Some(path) => evaluate_path(policy, allowlist, call.tool, path, class_access),
            None => by_mode(policy.mode, call.tool, class_access),
        };
    };
    if let Some(script) = info.operand(Operand::Script) {
        // Arguments without a command never run (the tool rejects them);
        // judge by mode so the answer does not depend on the mistake.
        let Some(command) = text(script) else {
            return by_mode(policy.mode, call.tool, Access::Write);
        };
        let workdir = info.operand(Operand::Workdir).and_then(text);
        return evaluate_shell(policy, allowlist, command, workdir);
    }
    if let Some(url) = info.operand(Operand::Url) {
        return super::web_rules::evaluate_url(policy, text(url));
    }
    if let Some(patch) = info.operand(Operand::Patch) {
        return match text(patch) {
            Some(patch) => super::patch::evaluate_patch(policy, allowlist, patch),
            None => by_mode(policy.mode, call.tool, Access::Write),
        };
    }
    let paths = info.named_paths(&args);
    let mut strictest: Option<(Verdict, u8)> = None;
    for (path, arg) in &paths {
        let judged =
            evaluate_path_ranked(policy, allowlist, call.tool, path, arg.access, Target::Path);
        if strictest.as_ref().is_none_or(|(_, rank)| judged.1 > *rank) {
            strictest = Some(judged);
        }
    }
    strictest.map_or_else(|| by_mode(policy.mode, call.tool, class_access), |(verdict, _)| verdict)
}

/// A shell call: the script, started in `workdir` (relative to the cwd).
fn evaluate_shell(
    policy: &Policy,
    allowlist: &Allowlist,
    command: &str,
    workdir: Option<&str>,
) -> Verdict {
    let Some(workdir) = workdir.filter(|w| !w.is_empty() && *w != ".") else {
        return evaluate_script(policy, allowlist, &analyze_script_in(command, &Dirs::default()));
    };
    let start = policy.paths.resolve_physical(workdir);
    if policy.paths.in_workspace(&start).is_none() {
        let reason = format!(
            "the shell's workdir {} is outside the workspace {}",
            start.display(),
            policy.paths.workspace_root.display()
        );
        return Verdict::new(Decision::Forbidden { reason }, Vec::new());
    }
    let moved = PathContext { cwd: start, ..policy.paths.clone() };
    let script = analyze_script_in(command, &Dirs::default());
    super::script_verdict::evaluate_script_at(policy, allowlist, &script, &moved)
}

pub(super) fn by_mode(mode: ApprovalMode, tool: &str, access: Access) -> Verdict {
    let decision = match (access, mode) {
        (Access::Read, _) | (Access::Write, ApprovalMode::Auto | ApprovalMode::Yolo) => {
            Decision::Allow
        }
        (Access::Write, ApprovalMode::Plan | ApprovalMode::Explore) => Decision::Forbidden {
            reason: format!("`{tool}` can change things and {} mode is read-only", mode.as_str()),
        },
        (Access::Write, ApprovalMode::Ask) => {
            Decision::Prompt { reason: format!("`{tool}` can change files or run commands") }
        }
    };
    Verdict::new(decision, Vec::new())
}

/// A file tool's access to `path`: judged in every reading the tools may
/// use (from the workspace root first, else from the cwd: `tools::paths`;
/// policy cannot look at the disk, so it judges both) and, when a known
/// symlink makes one differ, where it leads; the strictest verdict wins.
pub fn evaluate_path(
    policy: &Policy,
    allowlist: &Allowlist,
    tool: &str,
    path: &str,
    access: Access,
) -> Verdict {
    evaluate_path_ranked(policy, allowlist, tool, path, access, Target::Path).0
}

/// What a path names for a write: the file it leads to, or the directory
/// entry itself (a delete removes a symlink, not its target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Path,
    Entry,
}

/// [`evaluate_path`] with how strict its verdict is: 0 allow, 1 a prompt
/// only this mode asks, 2 a prompt every mode asks (a rule, a protected
/// path), 3 forbidden. Among equally strict verdicts the first is kept, so
/// a prompt that holds in every mode (and its reason) beats one by mode.
pub(super) fn evaluate_path_ranked(
    policy: &Policy,
    allowlist: &Allowlist,
    tool: &str,
    path: &str,
    access: Access,
    target: Target,
) -> (Verdict, u8) {
    let mut strictest: Option<(Verdict, u8)> = None;
    let lexical = [policy.paths.resolve_from_root(path), policy.paths.resolve(path)];
    let locations = match target {
        Target::Path => policy.paths.file_locations(path),
        Target::Entry => policy.paths.entry_locations(path),
    };
    for location in &locations {
        let via = (!lexical.contains(location))
            .then(|| format!("{path} (a symlink to {})", location.display()));
        let judged = judge_location(policy, allowlist, tool, location, via.as_deref(), access);
        if strictest.as_ref().is_none_or(|(_, rank)| judged.1 > *rank) {
            strictest = Some(judged);
        }
    }
    // `locations` is never empty; judge by mode if it ever were.
    strictest.unwrap_or_else(|| (by_mode(policy.mode, tool, access), 1))
}

fn judge_location(
    policy: &Policy,
    allowlist: &Allowlist,
    tool: &str,
    resolved: &std::path::Path,
    via: Option<&str>,
    access: Access,
) -> (Verdict, u8) {
    let inside = policy.paths.in_workspace(resolved);
    let key = inside.clone().unwrap_or_else(|| resolved.to_string_lossy().into_owned());
    let matched = trusted(policy, policy.rules.path_matches(&key, access));
    let strictest = matched.iter().map(|m| m.decision).max();
    let shown = via.map_or_else(|| resolved.display().to_string(), str::to_owned);
    let protected = access == Access::Write && inside.is_some() && !policy.mode.read_only();
    let by_mode = |verdict: Verdict| {
        let rank = match verdict.decision {
            Decision::Allow => 0,
            Decision::Prompt { .. } => 1,
            Decision::Forbidden { .. } => 3,
        };
        (verdict, rank)
    };
    let decision = match (strictest, access) {
        (Some(RuleDecision::Forbidden), _) => {
            Decision::Forbidden { reason: rule_reason(&matched, &format!("`{tool}` on {shown}")) }
        }
        (_, Access::Write) if protected && policy.paths.is_protected(resolved) => {
            let what = policy.paths.protection(resolved).map(|p| p.describe()).unwrap_or_default();
            Decision::Prompt {
                reason: format!(
                    "`{tool}` writes {shown}, a protected path ({what}); it needs approval in \
                     every mode"
                ),
            }
        }
        (Some(RuleDecision::Prompt), _) => {
            Decision::Prompt { reason: rule_reason(&matched, &format!("`{tool}` on {shown}")) }
        }
        (Some(RuleDecision::Allow) | None, Access::Read) => Decision::Allow,
        (_, Access::Write) if inside.is_none() => Decision::Forbidden {
            reason: format!(
                "{shown} is outside the workspace {}",
                policy.paths.workspace_root.display()
            ),
        },
        (_, Access::Write) if policy.mode.read_only() => {
            return by_mode(super::engine::by_mode(policy.mode, tool, access));
        }
        (Some(RuleDecision::Allow), Access::Write) => Decision::Allow,
        (None, Access::Write) if allowlist.files.contains(&key) => Decision::Allow,
        (None, Access::Write) => return by_mode(super::engine::by_mode(policy.mode, tool, access)),
    };
    let rank = match decision {
        Decision::Allow => 0,
        Decision::Prompt { .. } => 2,
        Decision::Forbidden { .. } => 3,
    };
    (Verdict::new(decision, matched), rank)
}

/// Drops a project's allow rules unless the project is trusted.
pub(super) fn trusted(policy: &Policy, matched: Vec<RuleMatch>) -> Vec<RuleMatch> {
    matched
        .into_iter()
        .filter(|m| {
            policy.project_trusted
                || m.source.origin != Origin::Project
                || m.decision != RuleDecision::Allow
        })
        .collect()
}

pub(super) fn rule_reason(matched: &[RuleMatch], what: &str) -> String {
    let Some(strictest) = matched.iter().max_by_key(|m| m.decision) else { return what.to_owned() };
    let prefix = strictest.matched_prefix.join(" ");
    let source = &strictest.source;
    match (strictest.decision, &strictest.justification) {
        (RuleDecision::Forbidden, Some(why)) => format!("{what} rejected: {why} ({source})"),
        (RuleDecision::Forbidden, None) => {
            format!("{what} rejected: policy forbids commands starting with `{prefix}` ({source})")
        }
        (RuleDecision::Prompt | RuleDecision::Allow, Some(why)) => {
            format!("{what} requires approval: {why} ({source})")
        }
        (RuleDecision::Prompt | RuleDecision::Allow, None) => {
            format!("{what} requires approval by policy ({source})")
        }
    }
}
