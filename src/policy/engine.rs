//! [`evaluate`]: one tool call → one [`Verdict`], in the order of DESIGN §4:
//! hard deny → project trust → rules → mode → session allowlist → default.
//!
//! Invariants: hard deny wins over everything, `yolo` included; a rule's
//! `forbidden` wins over every mode; protected paths and `prompt` rules
//! are never auto-approved (not in `auto`, not in `yolo`); a project's
//! allow rules count only when the project is trusted; a script with hidden
//! commands (substitution, `eval`, unparseable) never gets an automatic
//! allow from rules or the read-only list.

use super::paths::PathContext;
use super::rules::{Access, Origin, RuleDecision, RuleMatch, RuleSet};
use super::shell::{Script, SimpleCommand, analyze_script};
use super::{Allowlist, ApprovalMode, Decision, builtin};
use crate::protocol::ToolClass;

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
}

/// A decision with the rules behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub decision: Decision,
    /// Every rule that matched (after the trust filter), in load order.
    pub matched: Vec<RuleMatch>,
    /// For shell calls that ask: the prefix an "always" answer would allow
    /// (the first command nothing covered).
    pub suggested_prefix: Option<Vec<String>>,
}

impl Policy {
    /// A policy with `rules`, nothing trusted and no sandbox.
    pub fn new(rules: RuleSet, mode: ApprovalMode, paths: PathContext) -> Self {
        Self { rules, mode, paths, project_trusted: false, sandboxed: false }
    }
}

impl Verdict {
    fn new(decision: Decision, matched: Vec<RuleMatch>) -> Self {
        Self { decision, matched, suggested_prefix: None }
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

/// Judges one tool call.
pub fn evaluate(policy: &Policy, allowlist: &Allowlist, call: CallFacts<'_>) -> Verdict {
    let args: serde_json::Value = serde_json::from_str(call.arguments).unwrap_or_default();
    if call.tool == "shell" {
        // Arguments without a command never run (the tool rejects them);
        // judge by mode so the answer does not depend on the mistake.
        let Some(command) = args.get("command").and_then(|c| c.as_str()) else {
            return by_mode(policy.mode, call.tool, Access::Write);
        };
        return evaluate_script(policy, allowlist, &analyze_script(command));
    }
    let access = match call.class {
        ToolClass::ReadOnly => Access::Read,
        ToolClass::Mutating => Access::Write,
    };
    match args.get("path").and_then(|p| p.as_str()) {
        Some(path) => evaluate_path(policy, allowlist, call.tool, path, access),
        None => by_mode(policy.mode, call.tool, access),
    }
}

fn by_mode(mode: ApprovalMode, tool: &str, access: Access) -> Verdict {
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

/// A file tool's access to `path`. The tools read a relative path from the
/// workspace root, or from the working directory when only that names
/// something (`tools::paths`); policy cannot look at the disk, so it judges
/// both readings and keeps the stricter verdict.
pub fn evaluate_path(
    policy: &Policy,
    allowlist: &Allowlist,
    tool: &str,
    path: &str,
    access: Access,
) -> Verdict {
    let from_cwd = policy.paths.resolve(path);
    let from_root = policy.paths.resolve_from_root(path);
    let cwd_verdict = evaluate_resolved(policy, allowlist, tool, &from_cwd, access);
    if from_root == from_cwd {
        return cwd_verdict;
    }
    let root_verdict = evaluate_resolved(policy, allowlist, tool, &from_root, access);
    if strictness(&root_verdict.decision) > strictness(&cwd_verdict.decision) {
        root_verdict
    } else {
        cwd_verdict
    }
}

fn strictness(decision: &Decision) -> u8 {
    match decision {
        Decision::Allow => 0,
        Decision::Prompt { .. } => 1,
        Decision::Forbidden { .. } => 2,
    }
}

/// A file tool's access to the already resolved `resolved`.
fn evaluate_resolved(
    policy: &Policy,
    allowlist: &Allowlist,
    tool: &str,
    resolved: &std::path::Path,
    access: Access,
) -> Verdict {
    let inside = policy.paths.in_workspace(resolved);
    let key = inside.clone().unwrap_or_else(|| resolved.to_string_lossy().into_owned());
    let matched = trusted(policy, policy.rules.path_matches(&key, access));
    let strictest = matched.iter().map(|m| m.decision).max();
    let shown = resolved.display();
    let decision = match (strictest, access) {
        (Some(RuleDecision::Forbidden), _) => {
            Decision::Forbidden { reason: rule_reason(&matched, &format!("`{tool}` on {shown}")) }
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
        (_, Access::Write) if policy.mode.read_only() => return by_mode(policy.mode, tool, access),
        (_, Access::Write) if policy.paths.is_protected(resolved) => Decision::Prompt {
            reason: format!("{shown} is protected (.git, .keel, .ssh, shell start-up files)"),
        },
        (Some(RuleDecision::Allow), Access::Write) => Decision::Allow,
        (None, Access::Write) if allowlist.files.contains(&key) => Decision::Allow,
        (None, Access::Write) => return by_mode(policy.mode, tool, access),
    };
    Verdict::new(decision, matched)
}

/// Drops a project's allow rules unless the project is trusted.
fn trusted(policy: &Policy, matched: Vec<RuleMatch>) -> Vec<RuleMatch> {
    matched
        .into_iter()
        .filter(|m| {
            policy.project_trusted
                || m.source.origin != Origin::Project
                || m.decision != RuleDecision::Allow
        })
        .collect()
}

fn rule_reason(matched: &[RuleMatch], what: &str) -> String {
    let Some(strictest) = matched.iter().max_by_key(|m| m.decision) else { return what.to_owned() };
    let prefix = strictest.matched_prefix.join(" ");
    match (strictest.decision, &strictest.justification) {
        (RuleDecision::Forbidden, Some(why)) => format!("{what} rejected: {why}"),
        (RuleDecision::Forbidden, None) => {
            format!("{what} rejected: policy forbids commands starting with `{prefix}`")
        }
        (RuleDecision::Prompt | RuleDecision::Allow, Some(why)) => {
            format!("{what} requires approval: {why}")
        }
        (RuleDecision::Prompt | RuleDecision::Allow, None) => {
            format!("{what} requires approval by policy ({})", strictest.source)
        }
    }
}

/// Judges an analysed shell script. Path judgments are made in every
/// folder a command may run in (`workdir.rs`).
pub fn evaluate_script(policy: &Policy, allowlist: &Allowlist, script: &Script) -> Verdict {
    let ctx = &policy.paths;
    for command in &script.commands {
        for dir in command.dirs.contexts(ctx) {
            if let Some(reason) = builtin::hard_deny(&command.argv, &dir) {
                return Verdict::new(Decision::Forbidden { reason }, Vec::new());
            }
        }
    }
    for write in &script.writes {
        if let Some(reason) = builtin::hard_deny_write(&write.target) {
            return Verdict::new(Decision::Forbidden { reason }, Vec::new());
        }
    }
    if script.fork_bomb {
        let reason = "a function that calls itself (a fork bomb) never runs".to_owned();
        return Verdict::new(Decision::Forbidden { reason }, Vec::new());
    }
    let per_command: Vec<Vec<RuleMatch>> = script
        .commands
        .iter()
        .map(|c| trusted(policy, command_matches(&policy.rules, &c.argv)))
        .collect();
    let matched: Vec<RuleMatch> = per_command.iter().flatten().cloned().collect();
    let strictest = matched.iter().map(|m| m.decision).max();
    let described = describe(script);
    if strictest == Some(RuleDecision::Forbidden) {
        let reason = rule_reason(&matched, &format!("`{described}`"));
        return Verdict::new(Decision::Forbidden { reason }, matched);
    }
    let uncovered = script
        .commands
        .iter()
        .zip(&per_command)
        .find(|(command, matches)| !covered(command, matches, allowlist));
    let read_only = script.hidden.is_empty()
        && script.writes.iter().all(|w| harmless_sink(&w.target))
        && script.commands.iter().all(|c| !c.dynamic && builtin::is_read_only(&c.argv));
    let mut verdict = Verdict::new(Decision::Allow, matched);
    verdict.suggested_prefix =
        uncovered.map(|(command, _)| super::amend::suggest_prefix(&command.argv));
    if policy.mode.read_only() {
        if !read_only {
            verdict.decision = Decision::Forbidden {
                reason: format!(
                    "{} mode is read-only and `{described}` may change things",
                    policy.mode.as_str()
                ),
            };
        }
        return verdict;
    }
    if let Some(reason) = needs_human(policy, script, strictest, &described) {
        verdict.decision = Decision::Prompt { reason };
        return verdict;
    }
    let all_covered = script.hidden.is_empty()
        && uncovered.is_none()
        && script.writes.iter().all(|w| harmless_sink(&w.target));
    let blind = runs_blind(script);
    verdict.decision = match policy.mode {
        ApprovalMode::Yolo => Decision::Allow,
        _ if all_covered && blind.is_none() => Decision::Allow,
        ApprovalMode::Auto if policy.sandboxed && blind.is_none() => Decision::Allow,
        ApprovalMode::Auto | ApprovalMode::Ask | ApprovalMode::Plan | ApprovalMode::Explore => {
            let reason = match blind {
                Some(what) => {
                    format!("{what} runs in a folder keel cannot tell (a `cd` it cannot follow)")
                }
                None => ask_reason(script, uncovered.map(|(c, _)| c), policy),
            };
            Decision::Prompt { reason }
        }
    };
    verdict
}

/// A command that could change something, or a relative redirection, in a
/// folder an earlier `cd` made unknowable: what it is, for the reason.
fn runs_blind(script: &Script) -> Option<String> {
    let command = script
        .commands
        .iter()
        .find(|c| c.dirs.has_unknown() && !builtin::is_read_only(&c.argv))
        .map(|c| format!("`{}`", c.argv.join(" ")));
    command.or_else(|| {
        script
            .writes
            .iter()
            .find(|w| {
                w.dirs.has_unknown()
                    && !harmless_sink(&w.target)
                    && !w.target.starts_with('/')
                    && !w.target.starts_with('~')
            })
            .map(|w| format!("the redirection into {}", w.target))
    })
}

/// Rules for one argv; an absolute program falls back to its basename's
/// rules, but only deny/prompt rules, or allow rules for system folders.
fn command_matches(rules: &RuleSet, argv: &[String]) -> Vec<RuleMatch> {
    rules
        .matches(argv, true)
        .into_iter()
        .filter(|m| {
            m.decision != RuleDecision::Allow
                || m.resolved_program.as_deref().is_none_or(|program| {
                    ["/usr/bin/", "/bin/", "/usr/local/bin/", "/usr/sbin/", "/sbin/"].iter().any(
                        |dir| program.strip_prefix(dir).is_some_and(|rest| !rest.contains('/')),
                    )
                })
        })
        .collect()
}

fn covered(command: &SimpleCommand, matches: &[RuleMatch], allowlist: &Allowlist) -> bool {
    if command.dynamic || command.privileged || command.sensitive_env {
        return false;
    }
    let allowed_by_rule =
        !matches.is_empty() && matches.iter().all(|m| m.decision == RuleDecision::Allow);
    allowed_by_rule || builtin::is_read_only(&command.argv) || allowlist.allows(&command.argv)
}

/// Redirect targets that are not files.
fn harmless_sink(target: &str) -> bool {
    matches!(target, "/dev/null" | "/dev/stdout" | "/dev/stderr")
}

/// A reason the script must ask whatever the mode, if there is one.
fn needs_human(
    policy: &Policy,
    script: &Script,
    strictest: Option<RuleDecision>,
    described: &str,
) -> Option<String> {
    let ctx = &policy.paths;
    if strictest == Some(RuleDecision::Prompt) {
        return Some(format!("`{described}` requires approval by policy"));
    }
    let protected_in = |dirs: &super::workdir::Dirs, word: &str| {
        dirs.contexts(ctx).iter().any(|dir| dir.is_protected(&dir.resolve(word)))
    };
    if let Some(write) = script.writes.iter().find(|w| protected_in(&w.dirs, &w.target)) {
        return Some(format!("`{described}` writes {}, a protected path", write.target));
    }
    let touches_protected = script.commands.iter().find_map(|command| {
        if builtin::is_read_only(&command.argv) {
            return None;
        }
        command.argv.iter().skip(1).find(|arg| {
            let word = arg.split_once('=').map_or(arg.as_str(), |(_, value)| value);
            protected_in(&command.dirs, word)
        })
    });
    if let Some(arg) = touches_protected {
        return Some(format!("`{described}` touches {arg}, a protected path"));
    }
    if script.commands.iter().any(|c| c.privileged) {
        return Some(format!("`{described}` runs with elevated privileges"));
    }
    None
}

fn ask_reason(script: &Script, uncovered: Option<&SimpleCommand>, policy: &Policy) -> String {
    let unsandboxed =
        if policy.mode == ApprovalMode::Auto { " (no sandbox can be enforced)" } else { "" };
    if let Some(hidden) = script.hidden.first() {
        return format!(
            "the command uses {}, which keel cannot check{unsandboxed}",
            hidden.describe()
        );
    }
    if let Some(command) = uncovered {
        return format!("`{}` is not known to be safe{unsandboxed}", command.argv.join(" "));
    }
    match script.writes.first() {
        Some(write) => format!("the command writes {}{unsandboxed}", write.target),
        None => format!("the command needs approval{unsandboxed}"),
    }
}

fn describe(script: &Script) -> String {
    let parts: Vec<String> = script.commands.iter().map(|c| c.argv.join(" ")).collect();
    parts.join("; ")
}
