//! Claude Code's `permissions` (`allow`, `ask`, `deny` in
//! `~/.claude/settings.json`, a project's `.claude/settings.json` and
//! `.claude/settings.local.json`), read as keel rules where keel has an
//! equivalent, and every entry it has none for named with the reason.
//!
//! The translation (Claude Code's documented permission-rule syntax):
//! - `Bash(npm run test:*)` and `Bash(npm run test *)`: a `prefix_rule` on
//!   those words; `Bash(make test)`: that command exactly, no more words.
//!   A wildcard anywhere else in the command, or an allow that would let
//!   any program run (`Bash`, `Bash(python:*)`, `Bash(sudo:*)`: the
//!   prefixes `amend::check_prefix` refuses for "allow always") is skipped.
//! - `Read(path)` / `Edit(path)` / `Write(path)` / `MultiEdit(path)` with a
//!   project-relative path or glob (`./.env`, `src/**`, `/docs/**`: `/` is
//!   the settings' project): a `path_rule` (`Read` judges reads, the others
//!   writes). Home (`~/`) and absolute (`//`) paths are skipped: keel's path
//!   rules judge the workspace; outside it is the sandbox's.
//! - `WebFetch(domain:example.org)`: a `web_rule` for that host.
//! - `mcp__server`, `mcp__server__tool`, `mcp__server__*`: a `tool_rule`.
//! - A bare read tool (`Read`, `Grep`, `Glob`, `LS`) in `allow`: keel runs
//!   reads without asking already; other bare names: skipped, said.
//!
//! `allow` → allow, `ask` → prompt, `deny` → forbidden. The caller gives
//! the origin: a project's files are [`Origin::Project`], whose allows count
//! only once the project is trusted (their ask and deny always count), as
//! with keel's own `.keel/rules`. Pure: the caller reads the file.

use crate::policy::{Origin, RuleDecision, RuleSet, amend};

/// What became of one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionEntry {
    /// `permissions.allow "Bash(make test)"`.
    pub entry: String,
    /// `None`: imported; else why not.
    pub skipped: Option<String>,
}

/// The read tools keel runs without asking in every mode.
const READ_TOOLS: [&str; 5] = ["Read", "Grep", "Glob", "LS", "NotebookRead"];
/// The tools whose argument is a path, and the access they judge.
const PATH_TOOLS: [(&str, crate::protocol::Access); 4] = [
    ("Read", crate::protocol::Access::Read),
    ("Edit", crate::protocol::Access::Write),
    ("Write", crate::protocol::Access::Write),
    ("MultiEdit", crate::protocol::Access::Write),
];

/// One translated entry.
enum Translation {
    /// Rules text for [`RuleSet::load_labelled`].
    Text(String),
    /// A command matched exactly.
    Exact(Vec<String>),
    /// keel already does what the entry asks.
    AlreadySo(&'static str),
}

/// Adds the rules `permissions` (the settings file's `permissions` value)
/// translates to, labelled with `file`; returns what became of each entry.
pub fn add_permission_rules(
    rules: &mut RuleSet,
    file: &str,
    permissions: &serde_json::Value,
    origin: Origin,
) -> Vec<PermissionEntry> {
    let mut report = Vec::new();
    for (list, decision) in [
        ("allow", RuleDecision::Allow),
        ("ask", RuleDecision::Prompt),
        ("deny", RuleDecision::Forbidden),
    ] {
        let Some(entries) = permissions.get(list) else { continue };
        let Some(entries) = entries.as_array() else {
            report.push(PermissionEntry {
                entry: format!("permissions.{list}"),
                skipped: Some("not a list of rules".to_owned()),
            });
            continue;
        };
        for entry in entries {
            let shown = format!("permissions.{list} {entry}");
            let skipped = match entry.as_str() {
                Some(text) => add_entry(rules, file, &shown, text, decision, origin).err(),
                None => Some("not a string".to_owned()),
            };
            report.push(PermissionEntry { entry: shown, skipped });
        }
    }
    report
}

fn add_entry(
    rules: &mut RuleSet,
    file: &str,
    shown: &str,
    text: &str,
    decision: RuleDecision,
    origin: Origin,
) -> Result<(), String> {
    let label = format!("{file} {shown}");
    match translate(text.trim(), decision)? {
        Translation::Text(rule) => rules
            .load_labelled(&label, &rule, origin)
            .map_err(|error| format!("keel could not use it: {error}")),
        Translation::Exact(argv) => {
            rules.add_exact_command(argv, decision, &label, origin);
            Ok(())
        }
        Translation::AlreadySo(why) => Err(why.to_owned()),
    }
}

fn translate(text: &str, decision: RuleDecision) -> Result<Translation, String> {
    let (tool, argument) = match text.split_once('(') {
        Some((tool, rest)) => {
            let argument = rest.strip_suffix(')').ok_or("no closing `)`")?;
            (tool.trim(), Some(argument.trim()))
        }
        None => (text, None),
    };
    let decision_text = decision.as_str();
    if tool.starts_with(crate::policy::tool_rules::EXTERNAL_PREFIX) && argument.is_none() {
        let pattern = mcp_pattern(tool);
        return Ok(Translation::Text(format!(
            "tool_rule(name = {}, decision = \"{decision_text}\")",
            quoted(&pattern)
        )));
    }
    match (tool, argument) {
        ("Bash", Some(command)) if !command.is_empty() && command != "*" => bash(command, decision),
        ("Bash", _) => Err("it covers every command; keel asks per command (`--mode auto` or \
             `yolo` run more without asking)"
            .to_owned()),
        ("WebFetch", Some(domain)) => {
            let host = domain.strip_prefix("domain:").ok_or(
                "keel judges web_fetch by host: only `WebFetch(domain:HOST)` has an equivalent",
            )?;
            Ok(Translation::Text(format!(
                "web_rule(host = {}, decision = \"{decision_text}\")",
                quoted(host.trim())
            )))
        }
        (name, Some(path)) if PATH_TOOLS.iter().any(|(tool, _)| *tool == name) => {
            path_rule(name, path, decision_text)
        }
        (name, None) if READ_TOOLS.contains(&name) && decision == RuleDecision::Allow => {
            Ok(Translation::AlreadySo("keel runs reads without asking already"))
        }
        (name, _) => Err(format!("keel has no rule for Claude Code's `{name}` tool")),
    }
}

/// `Bash(…)`: a prefix (`:*` or ` *` at the end) or an exact command.
fn bash(command: &str, decision: RuleDecision) -> Result<Translation, String> {
    let (argv, exact) = bash_pattern(command, decision == RuleDecision::Allow)?;
    if exact {
        return Ok(Translation::Exact(argv));
    }
    let pattern: Vec<String> = argv.iter().map(|word| quoted(word)).collect();
    Ok(Translation::Text(format!(
        "prefix_rule(pattern = [{}], decision = \"{}\")",
        pattern.join(", "),
        decision.as_str()
    )))
}

/// The words of a `Bash(…)` argument and whether they are the whole
/// command (`Bash(make test)`) rather than a prefix (`Bash(git add:*)`,
/// `Bash(git add *)`). An `allow` that would let any program run
/// (`python:*`, `sudo:*`: `amend::check_prefix`) is refused, as is a
/// wildcard anywhere but at the end.
pub fn bash_pattern(command: &str, allow: bool) -> Result<(Vec<String>, bool), String> {
    let command = command.trim();
    let (words, prefix) = match command.strip_suffix(":*").or_else(|| command.strip_suffix(" *")) {
        Some(words) => (words, true),
        None => (command, false),
    };
    if words.contains('*') {
        return Err("a wildcard inside a command has no keel equivalent (keel matches words \
                    from the start)"
            .to_owned());
    }
    let argv = shlex::split(words).filter(|argv| !argv.is_empty()).ok_or("not a command")?;
    if allow {
        amend::check_prefix(&argv)
            .map_err(|error| format!("{error}; keel does not allow it without asking"))?;
    }
    Ok((argv, !prefix))
}

/// The tool pattern an MCP name stands for: a whole server
/// (`mcp__server`) is every tool of it (`mcp__server__*`).
pub fn mcp_pattern(tool: &str) -> String {
    if tool.matches("__").count() == 1 { format!("{tool}__*") } else { tool.to_owned() }
}

fn path_rule(tool: &str, path: &str, decision: &str) -> Result<Translation, String> {
    if path.starts_with("~/") || path.starts_with("//") {
        return Err(
            "keel's path rules judge the workspace; outside it the sandbox decides".to_owned()
        );
    }
    let relative = path.trim_start_matches("./").trim_start_matches('/');
    if relative.is_empty() || relative.split('/').any(|part| part == "..") {
        return Err("not a path inside the project".to_owned());
    }
    // Claude's patterns are gitignore-style: a name alone matches anywhere.
    let glob = if relative.contains('/') { relative.to_owned() } else { format!("**/{relative}") };
    let access = PATH_TOOLS.iter().find(|(name, _)| *name == tool).map_or(
        "write",
        |(_, access)| match access {
            crate::protocol::Access::Read => "read",
            crate::protocol::Access::Write => "write",
        },
    );
    Ok(Translation::Text(format!(
        "path_rule(glob = {}, access = \"{access}\", decision = \"{decision}\")",
        quoted(&glob)
    )))
}

/// What a command's `allowed-tools` lets its turn do without asking, as
/// Claude Code reads the list: tools the model may use without a
/// question while the command runs, not the only tools it may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preapprovals {
    /// `Bash(git add:*)`, `Bash(git add *)`: commands starting with these words.
    pub prefixes: Vec<Vec<String>>,
    /// `Bash(git status)`: exactly these commands.
    pub commands: Vec<Vec<String>>,
    /// `mcp__docs` (as `mcp__docs__*`), `mcp__docs__search`.
    pub tools: Vec<String>,
    /// Entries that pre-approve nothing, each with why (`Bash`, `Edit`).
    pub ignored: Vec<String>,
}

impl Preapprovals {
    /// Whether the list pre-approves anything.
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty() && self.commands.is_empty() && self.tools.is_empty()
    }
}

/// `allowed-tools` read as Claude Code reads it. The same translation as
/// the settings' `allow` list ([`bash_pattern`]: no bare `Bash`, no prefix
/// that runs any program); a read tool (`Read`, `Grep`) runs without asking
/// already and is not said; any other built-in (`Edit`, `Write`,
/// `WebFetch`) pre-approves nothing: keel asks about it as the mode says.
pub fn preapprovals(items: &[String]) -> Preapprovals {
    let mut found = Preapprovals::default();
    for item in items {
        let text = item.trim();
        let (tool, argument) = match text.split_once('(') {
            Some((tool, rest)) => match rest.trim_end().strip_suffix(')') {
                Some(argument) => (tool.trim(), Some(argument.trim())),
                None => {
                    found.ignored.push(format!("`{text}`: no closing `)`"));
                    continue;
                }
            },
            None => (text, None),
        };
        if tool.starts_with(crate::policy::tool_rules::EXTERNAL_PREFIX) && argument.is_none() {
            push_new(&mut found.tools, mcp_pattern(tool));
            continue;
        }
        match (tool, argument) {
            ("Bash", Some(command)) if !command.is_empty() && command != "*" => {
                for command in bash_commands(command) {
                    match bash_pattern(command, true) {
                        Ok((argv, true)) => push_new(&mut found.commands, argv),
                        Ok((argv, false)) => push_new(&mut found.prefixes, argv),
                        Err(why) => found.ignored.push(format!("`Bash({command})`: {why}")),
                    }
                }
            }
            ("Bash", _) => found.ignored.push(format!("`{text}`: it covers every command")),
            (name, _) if runs_anyway(name) => {}
            (name, _) => found.ignored.push(format!("`{name}`")),
        }
    }
    found
}

/// The patterns of one `Bash(…)`: published commands write several in one
/// (`Bash(git diff:*, git log:*)`); split only when every part is a prefix,
/// so a comma inside a command (`Bash(echo a,b)`) stays.
fn bash_commands(argument: &str) -> Vec<&str> {
    let parts: Vec<&str> = argument.split(',').map(str::trim).collect();
    if parts.len() > 1 && parts.iter().all(|part| part.ends_with(":*")) {
        parts
    } else {
        vec![argument]
    }
}

/// A read tool keel runs without asking in every mode (the web is judged
/// per host, so `WebFetch` is not one).
fn runs_anyway(name: &str) -> bool {
    use crate::protocol::{ToolClass, tool_facts};
    let info = tool_facts::builtin(name).or_else(|| tool_facts::by_claude_name(name));
    info.is_some_and(|info| info.class == ToolClass::ReadOnly && !info.name.starts_with("web_"))
}

fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// A string literal of the rules language (JSON's escapes are its own).
fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_owned()).to_string()
}

#[cfg(test)]
#[path = "claude_permissions_tests.rs"]
mod tests;
