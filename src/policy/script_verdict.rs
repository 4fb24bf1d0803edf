//! Judging an analysed shell script ([`Script`]): hard deny in every
//! folder each command may run in, forbidden rules, read-only modes, what
//! must ask in every mode (prompt rules, code keel cannot read, protected
//! paths written, `sudo`), then the mode.
//!
//! Invariants: the order is fixed (a refusal is never downgraded by a
//! later step); symlinks the script makes (`ln -s . zz`) are added to the
//! path facts before anything is judged, so `rm -rf zz/*` is judged as the
//! workspace it reaches; in ask mode a command runs without asking only
//! when it is on the read-only list (or covered by rules or "always") and
//! nothing changed how it runs (no wrapper, environment assignment, `xargs`
//! arguments or expansion).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::content_reads::content_reads;
use super::destroy::Cwd;
use super::engine::{Policy, Verdict, rule_reason, trusted};
use super::paths::{PathContext, Protection, normalize};
use super::rules::{RuleDecision, RuleMatch, RuleSet};
use super::secrets::may_name_secret;
use super::shell::{Script, SimpleCommand};
use super::words::{dynamic_part, glob_matches, has_glob};
use super::{Allowlist, ApprovalMode, Decision, builtin};

/// Judges an analysed shell script. Path judgments are made in every
/// folder a command may run in (`workdir.rs`).
pub fn evaluate_script(policy: &Policy, allowlist: &Allowlist, script: &Script) -> Verdict {
    evaluate_script_at(policy, allowlist, script, &policy.paths)
}

/// [`evaluate_script`] for a script started in `paths.cwd` (a `workdir`).
pub fn evaluate_script_at(
    policy: &Policy,
    allowlist: &Allowlist,
    script: &Script,
    paths: &PathContext,
) -> Verdict {
    let ctx = with_script_links(paths, script);
    let ctx = ctx.as_ref();
    if let Some(reason) = hard_denied(ctx, script) {
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
    let mut verdict = Verdict::new(Decision::Allow, matched);
    verdict.suggested_prefix =
        uncovered.and_then(|(command, _)| super::amend::suggest_prefix(&command.argv));
    let place_read = secret_place_read(ctx, script);
    verdict.read_only = read_only(script) && place_read.is_none();
    if policy.mode.read_only() {
        if !verdict.read_only {
            let what = if may_read_secret(script) || place_read.is_some() {
                "may read a secret file"
            } else {
                "may change things"
            };
            verdict.decision = Decision::Forbidden {
                reason: format!(
                    "{} mode is read-only and `{described}` {what}",
                    policy.mode.as_str()
                ),
            };
        }
        return verdict;
    }
    if let Some(reason) = needs_human(ctx, script, strictest, &described) {
        verdict.decision = Decision::Prompt { reason };
        return verdict;
    }
    let all_covered = script.hidden.is_empty()
        && uncovered.is_none()
        && script.writes.iter().all(|w| harmless_sink(&w.target))
        && reads_no_secret(script)
        && place_read.is_none();
    let blind = runs_blind(script);
    let unknown_write = script.writes.iter().find(|w| w.dynamic && !harmless_sink(&w.target));
    verdict.decision = match policy.mode {
        ApprovalMode::Yolo => Decision::Allow,
        _ if all_covered && blind.is_none() => Decision::Allow,
        // The jail leaves the home readable: a read of a credential store
        // asks in auto mode too.
        ApprovalMode::Auto
            if policy.sandboxed
                && blind.is_none()
                && unknown_write.is_none()
                && place_read.is_none() =>
        {
            Decision::Allow
        }
        ApprovalMode::Auto | ApprovalMode::Ask | ApprovalMode::Plan | ApprovalMode::Explore => {
            let reason = match (blind, unknown_write) {
                (Some(what), _) => {
                    format!("{what} runs in a folder keel cannot tell (a `cd` it cannot follow)")
                }
                (None, Some(write)) => format!(
                    "the command writes to `{}`, a path keel cannot know before it runs",
                    write.target
                ),
                (None, None) => match place_read {
                    Some(read) if uncovered.is_none() => read,
                    _ => ask_reason(script, uncovered.map(|(c, _)| c), policy),
                },
            };
            Decision::Prompt { reason }
        }
    };
    verdict
}

/// The policy's paths plus the symlinks the script itself makes.
fn with_script_links<'a>(paths: &'a PathContext, script: &Script) -> Cow<'a, PathContext> {
    if script.links.is_empty() {
        return Cow::Borrowed(paths);
    }
    let mut ctx = paths.clone();
    for link in &script.links {
        for dir in link.dirs.contexts(paths) {
            let at = dir.resolve(&link.link);
            let target = if dynamic_part(&link.target).is_some() {
                // Unknowable: a component no real path has, which the
                // deletion check refuses to pass through.
                at.parent().unwrap_or(Path::new("/")).join("$unknown")
            } else if link.target.starts_with('/') || link.target.starts_with('~') {
                dir.resolve(&link.target)
            } else {
                normalize(&at.parent().unwrap_or(Path::new("/")).join(&link.target))
            };
            ctx.links.insert(at, target);
        }
    }
    Cow::Owned(ctx)
}

/// The first hard-deny reason anywhere in the script.
fn hard_denied(ctx: &PathContext, script: &Script) -> Option<String> {
    for command in &script.commands {
        for dir in command.dirs.contexts(ctx) {
            if let Some(reason) = builtin::hard_deny_command(command, &dir, Cwd::Known) {
                return Some(reason);
            }
        }
        if command.dirs.has_unknown() {
            if let Some(reason) = builtin::hard_deny_command(command, ctx, Cwd::Unknown) {
                return Some(reason);
            }
        }
    }
    // A relative target is judged in each folder the redirection may be in
    // (`cd /dev && cat x > sda`).
    let mut writes = script.writes.iter().flat_map(|w| {
        let mut folders = w.dirs.contexts(ctx);
        folders.push(ctx.clone());
        folders.into_iter().map(move |dir| (w, dir))
    });
    if let Some(reason) = writes.find_map(|(w, dir)| builtin::hard_deny_write(&w.target, &dir)) {
        return Some(reason);
    }
    script
        .fork_bomb
        .then(|| "refused in every mode: a function that calls itself (a fork bomb)".to_owned())
}

/// Whether every command only reads (plan and explore allow nothing else;
/// the loop runs such a script as a read, [`Verdict::read_only`]).
fn read_only(script: &Script) -> bool {
    script.hidden.is_empty()
        && script.blind.is_empty()
        && script.writes.iter().all(|w| harmless_sink(&w.target))
        && reads_no_secret(script)
        && script.commands.iter().all(|c| !c.dynamic && plain_read_only(c))
}

/// On the read-only list and run as written.
fn plain_read_only(command: &SimpleCommand) -> bool {
    !command.env_assigned
        && !command.sensitive_env
        && command.wrapper.is_none()
        && !command.stdin_args
        && builtin::is_read_only(&command.argv)
}

/// A `<` source or a reader's argument that may name a secret file.
fn may_read_secret(script: &Script) -> bool {
    !reads_no_secret(script)
        || script.commands.iter().any(|c| c.argv.iter().skip(1).any(|a| may_name_secret(a)))
}

fn reads_no_secret(script: &Script) -> bool {
    script.reads.iter().all(|r| !may_name_secret(&r.target))
}

/// The first command or `<` source that may read the contents of a secret
/// place (`secret_places`) from any folder it may run in, for the reason:
/// a reader's path inside one, a walker's folder holding one, a reader's
/// relative path after a `cd` keel cannot follow; globs count
/// (`SecretPlaces::reached_by`).
fn secret_place_read(ctx: &PathContext, script: &Script) -> Option<String> {
    let reaches = |dir: &PathContext, word: &str, walks: bool| {
        dir.locations(word).into_iter().find_map(|path| {
            let place = ctx.secrets.reached_by(&path, walks)?;
            Some(format!("{} ({})", place.path.display(), place.what))
        })
    };
    for command in &script.commands {
        let Some(reads) = content_reads(&command.argv) else { continue };
        let relative = |word: &&str| !word.starts_with('/') && !word.starts_with('~');
        if command.dirs.has_unknown() && reads.paths.iter().any(relative) {
            return Some(format!(
                "`{}` reads files in a folder keel cannot tell (a `cd` it cannot follow), which \
                 may hold secrets",
                command.describe()
            ));
        }
        for dir in command.dirs.contexts(ctx) {
            if let Some(place) = reads.paths.iter().find_map(|w| reaches(&dir, w, reads.recursive))
            {
                return Some(format!("`{}` may read {place}", command.describe()));
            }
        }
    }
    script.reads.iter().find_map(|read| {
        let place =
            read.dirs.contexts(ctx).iter().find_map(|dir| reaches(dir, &read.target, false));
        place.map(|place| format!("the command reads {}, inside {place}", read.target))
    })
}

/// A command that could change something, or a relative redirection, in a
/// folder an earlier `cd` made unknowable: what it is, for the reason.
fn runs_blind(script: &Script) -> Option<String> {
    let command = script
        .commands
        .iter()
        .find(|c| c.dirs.has_unknown() && !plain_read_only(c))
        .map(|c| format!("`{}`", c.describe()));
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
    let changed = command.dynamic
        || command.privileged
        || command.sensitive_env
        || command.env_assigned
        || command.wrapper.is_some()
        || command.stdin_args;
    if changed {
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
    ctx: &PathContext,
    script: &Script,
    strictest: Option<RuleDecision>,
    described: &str,
) -> Option<String> {
    if strictest == Some(RuleDecision::Prompt) {
        return Some(format!("`{described}` requires approval by policy"));
    }
    if let Some(why) = script.blind.first() {
        return Some(format!(
            "{why}: keel cannot see what `{described}` runs, so it needs approval in every mode"
        ));
    }
    let protected_in = |dirs: &super::workdir::Dirs, word: &str| {
        dirs.contexts(ctx).iter().find_map(|dir| word_protection(dir, word))
    };
    if let Some((write, (path, protection))) =
        script.writes.iter().find_map(|w| protected_in(&w.dirs, &w.target).map(|p| (w, p)))
    {
        return Some(protected_reason(described, &write.target, &path, protection, "writes"));
    }
    for command in &script.commands {
        if plain_read_only(command) {
            continue;
        }
        let git_args = command.argv.get(1..).filter(|_| command.argv[0].ends_with("git"));
        if git_args.is_some_and(super::git::writes_config) {
            return Some(format!(
                "`{}` writes git's configuration, a protected path: it runs code on every later \
                 git command (fsmonitor, hooks, aliases, pagers); it needs approval in every mode",
                command.describe()
            ));
        }
        for dir in command.dirs.contexts(ctx) {
            if let Some(protection) = dir.protection(&dir.cwd) {
                return Some(format!(
                    "`{}` runs inside {}, a protected folder ({}); it needs approval in every mode",
                    command.describe(),
                    dir.cwd.display(),
                    protection.describe()
                ));
            }
        }
        let touched = command.argv.iter().skip(1).find_map(|arg| {
            let word = arg.split_once('=').map_or(arg.as_str(), |(_, value)| value);
            protected_in(&command.dirs, word).map(|found| (arg, found))
        });
        if let Some((arg, (path, protection))) = touched {
            return Some(protected_reason(described, arg, &path, protection, "touches"));
        }
    }
    if script.commands.iter().any(|c| c.privileged) {
        return Some(format!("`{described}` runs with elevated privileges"));
    }
    None
}

fn protected_reason(
    described: &str,
    word: &str,
    path: &Path,
    protection: Protection,
    verb: &str,
) -> String {
    format!(
        "`{described}` {verb} {word} ({}), a protected path: {}; it needs approval in every mode",
        path.display(),
        protection.describe()
    )
}

/// Where `word` is protected in folder `dir`: its path (either spelling),
/// or for a glob the protected entry one of its components can match
/// (`.gi?/hooks/x` → `.git/hooks/x`, `.[!.]*` → `.git`).
fn word_protection(dir: &PathContext, word: &str) -> Option<(PathBuf, Protection)> {
    if !has_glob(word) {
        return dir.word_protection(word);
    }
    let pattern = normalize(&dir.joined(word));
    if let Some(protection) = dir.protection(&pattern) {
        return Some((pattern, protection));
    }
    const PROBES: [&str; 12] = [
        ".git", ".keel", ".claude", ".vscode", ".idea", ".husky", ".github", ".envrc", ".env",
        ".bashrc", ".profile", ".zshrc",
    ];
    let names: Vec<String> = pattern
        .components()
        .skip(1)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    for (at, name) in names.iter().enumerate().filter(|(_, name)| has_glob(name)) {
        for probe in PROBES.iter().filter(|probe| glob_matches(name, probe)) {
            let mut candidate = PathBuf::from("/");
            candidate.extend(&names[..at]);
            candidate.push(probe);
            candidate.extend(&names[at + 1..]);
            if *probe == ".github" {
                candidate.push("workflows");
            }
            if let Some(protection) = dir.protection(&candidate) {
                return Some((candidate, protection));
            }
        }
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
        if let Some(secret) = command.argv.iter().skip(1).find(|a| may_name_secret(a)) {
            return format!(
                "`{}` may read {secret}, a secret file (keys, tokens, environment)",
                command.describe()
            );
        }
        let how = if let Some(wrapper) = &command.wrapper {
            format!(" (it runs under `{wrapper}`)")
        } else if command.stdin_args {
            " (`xargs` adds arguments from stdin)".to_owned()
        } else if command.env_assigned || command.sensitive_env {
            " (an environment variable is set for it)".to_owned()
        } else {
            String::new()
        };
        return format!("`{}` is not known to be safe{how}{unsandboxed}", command.describe());
    }
    if let Some(read) = script.reads.iter().find(|r| may_name_secret(&r.target)) {
        return format!("the command reads {}, which may be a secret file", read.target);
    }
    match script.writes.first() {
        Some(write) => format!("the command writes {}{unsandboxed}", write.target),
        None => format!("the command needs approval{unsandboxed}"),
    }
}

fn describe(script: &Script) -> String {
    let parts: Vec<String> = script.commands.iter().map(SimpleCommand::describe).collect();
    parts.join("; ")
}
