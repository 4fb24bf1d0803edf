//! Rules files and project trust on disk: the only reader of `*.rules`
//! files and of `$KEEL_HOME/trusted_projects.toml`, and the only writer of
//! `.keel/rules/local.rules` ("allow always" answers, appended; a line
//! removed again with `/permissions remove N`, [`remove_local_always`]).
//!
//! Load order (later rules are reported later; the strictest still wins):
//! keel's built-in `rules/default.rules`, `$KEEL_HOME/rules/*.rules`, the
//! user's Codex rules and Claude Code permissions (`imported_rules`),
//! `--rules FILE` arguments, then the project's `.keel/rules/*.rules`
//! (each folder in file-name order), then the project's Codex rules and
//! Claude Code permissions. Project files are [`Origin::Project`]:
//! their allow rules count only once the project is trusted, their prompt
//! and forbidden rules always count. `local.rules` lives in the project
//! folder, so it is a project file too: "always" answers take effect in
//! later sessions once the project is trusted (in the session where they
//! were given they apply at once through the session allowlist).

use std::path::{Path, PathBuf};

use super::imported_rules::{RuleImport, Scope, add_imported_rules};
use super::mcp_pin::{self, McpTrust};
use crate::policy::{self, Origin, RuleSet, RulesError, amend};

/// Problems with rules files or the trust record.
#[derive(Debug, thiserror::Error)]
pub enum RulesFileError {
    #[error("cannot read rules file {path}: {source}", path = path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Invalid(#[from] RulesError),
    #[error("cannot write {path}: {source}", path = path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Amend(#[from] amend::AmendError),
    #[error("invalid trust record {path}: {message}", path = path.display())]
    Trust { path: PathBuf, message: String },
    /// A project's file: it counts trusted or not (before trust its
    /// forbid rules guard the user), so keel does not start past it, and
    /// says whose it is.
    #[error(
        "{source}\n(a rules file of this repository, read whether or not it is trusted: fix or remove {path}, or run keel outside this repository)",
        path = path.display()
    )]
    InProject { path: PathBuf, source: Box<RulesFileError> },
}

/// The rules folder of the project at `workspace_root`.
pub fn project_rules_dir(workspace_root: &Path) -> PathBuf {
    workspace_root.join(".keel").join("rules")
}

/// The file "allow always" answers go to.
pub fn local_rules_path(workspace_root: &Path) -> PathBuf {
    project_rules_dir(workspace_root).join("local.rules")
}

/// Where the rules files of a session are.
#[derive(Debug, Clone, Copy)]
pub struct RulePlaces<'a> {
    pub keel_home: &'a Path,
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`): its `rules/`.
    pub codex_home: &'a Path,
    /// The user's home: Claude Code's `~/.claude/settings.json`.
    pub home: &'a Path,
    pub workspace_root: &'a Path,
    /// `--rules FILE` arguments.
    pub extra: &'a [PathBuf],
    /// Read Codex's rules and Claude Code's permissions too
    /// (`import_setup`).
    pub import: bool,
}

/// Every rule keel reads, and what it took from other agents' files.
#[derive(Debug, Clone, Default)]
pub struct LoadedRules {
    pub rules: RuleSet,
    pub imports: Vec<RuleImport>,
}

/// Loads every rules file keel reads, in order: keel's own user files,
/// then the user's Codex rules and Claude Code permissions
/// (`imported_rules`), `--rules`, the project's `.keel/rules`, then the
/// project's Codex rules and Claude Code permissions.
pub fn load_rules(places: &RulePlaces<'_>) -> Result<LoadedRules, RulesFileError> {
    let mut rules = policy::default_rules()?;
    for path in rules_in(&places.keel_home.join("rules"))? {
        load_file(&mut rules, &path, Origin::User)?;
    }
    let mut imports = Vec::new();
    if places.import {
        let user = Scope::User { codex_home: places.codex_home, home: places.home };
        imports = add_imported_rules(&mut rules, user);
    }
    for path in places.extra {
        load_file(&mut rules, path, Origin::User)?;
    }
    for path in rules_in(&project_rules_dir(places.workspace_root))? {
        load_file(&mut rules, &path, Origin::Project).map_err(|source| {
            RulesFileError::InProject { path: path.clone(), source: Box::new(source) }
        })?;
    }
    if places.import {
        let project = Scope::Project { workspace_root: places.workspace_root };
        imports.extend(add_imported_rules(&mut rules, project));
    }
    Ok(LoadedRules { rules, imports })
}

/// Adds one file's rules.
pub fn load_file(rules: &mut RuleSet, path: &Path, origin: Origin) -> Result<(), RulesFileError> {
    let text = std::fs::read_to_string(path)
        .map_err(|source| RulesFileError::Read { path: path.to_owned(), source })?;
    rules.load(&path.display().to_string(), &text, origin)?;
    Ok(())
}

/// `*.rules` files in `dir`, sorted; none if it does not exist.
fn rules_in(dir: &Path) -> Result<Vec<PathBuf>, RulesFileError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(RulesFileError::Read { path: dir.to_owned(), source }),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rules") && path.is_file())
        .collect();
    files.sort();
    Ok(files)
}

/// Appends an allow rule for `prefix` to the project's `local.rules`
/// (creating folders), unless it is there already. Refuses prefixes
/// [`amend::check_prefix`] finds too broad.
pub fn append_local_rule(
    workspace_root: &Path,
    prefix: &[String],
) -> Result<PathBuf, RulesFileError> {
    amend::check_prefix(prefix)?;
    let path = local_rules_path(workspace_root);
    append_rule_to(workspace_root, &path, prefix)?;
    Ok(path)
}

/// Appends (deduplicated) an allow rule for `prefix` to `path`, written
/// beneath `root` without following a symlink ([`write_local`]).
fn append_rule_to(root: &Path, path: &Path, prefix: &[String]) -> Result<(), RulesFileError> {
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(RulesFileError::Read { path: path.to_owned(), source }),
    };
    let text = amend::append_rule(existing.as_deref(), prefix)?;
    if existing.as_deref() == Some(text.as_str()) {
        return Ok(());
    }
    write_local(root, path, &text)
}

/// Writes a project's rules file beneath the workspace root, no symlink
/// followed: a repository's `.keel/rules -> ~/.keel/rules` would turn a
/// project "always" into a global allow rule.
fn write_local(root: &Path, path: &Path, text: &str) -> Result<(), RulesFileError> {
    crate::support::beneath::write_beneath(root, path, text.as_bytes(), 0o644).map_err(|error| {
        RulesFileError::Write { path: path.to_owned(), source: std::io::Error::other(error) }
    })
}

/// Appends `tool_rule(name="TOOL", decision="allow")` for an MCP tool to
/// the project's `local.rules` (an "always" answer), unless it is there.
pub fn append_local_tool_rule(
    workspace_root: &Path,
    tool: &str,
) -> Result<PathBuf, RulesFileError> {
    let path = local_rules_path(workspace_root);
    let line = crate::policy::tool_rules::allow_rule_text(tool);
    let mut text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(source) => return Err(RulesFileError::Read { path, source }),
    };
    if text.lines().any(|existing| existing.trim() == line.trim()) {
        return Ok(path);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&line);
    write_local(workspace_root, &path, &text)?;
    Ok(path)
}

/// The "always" answers kept in the project's `local.rules`: each line
/// keel wrote for one (`amend::rule_line`, `tool_rules::allow_rule_text`)
/// with its 1-based number; hand-written rules there are not listed (they
/// are the user's own, shown with the rules in force). No file: none.
pub fn local_always_rules(
    workspace_root: &Path,
) -> Result<Vec<(usize, policy::ApprovalScope)>, RulesFileError> {
    let path = local_rules_path(workspace_root);
    let Some(text) = read_local(workspace_root, &path)? else { return Ok(Vec::new()) };
    let mut rules = RuleSet::default();
    rules.load(&path.display().to_string(), &text, Origin::Project)?;
    let lines: Vec<&str> = text.lines().collect();
    let written = |line: usize, canonical: &str| {
        lines.get(line.wrapping_sub(1)).is_some_and(|text| text.trim() == canonical.trim())
    };
    let mut found = Vec::new();
    for rule in &rules.prefix_rules {
        let prefix: Option<Vec<String>> = rule
            .pattern
            .iter()
            .map(|alts| match alts.as_slice() {
                [word] => Some(word.clone()),
                _ => None,
            })
            .collect();
        if let Some(prefix) =
            prefix.filter(|prefix| written(rule.source.line, &amend::rule_line(prefix)))
        {
            found.push((rule.source.line, policy::ApprovalScope::AlwaysPrefix(prefix)));
        }
    }
    for rule in &rules.tool_rules {
        let canonical = crate::policy::tool_rules::allow_rule_text(&rule.pattern);
        if written(rule.source.line, &canonical) {
            found.push((rule.source.line, policy::ApprovalScope::AlwaysTool(rule.pattern.clone())));
        }
    }
    found.sort_by_key(|(line, _)| *line);
    found.dedup_by(|a, b| a.1 == b.1);
    Ok(found)
}

/// Deletes the line(s) an "always" answer for `scope` wrote from the
/// project's `local.rules` (the file rewritten atomically beneath the
/// workspace, every other line kept byte for byte); the first line number
/// removed, `None` when no such line was there.
pub fn remove_local_always(
    workspace_root: &Path,
    scope: &policy::ApprovalScope,
) -> Result<Option<usize>, RulesFileError> {
    let canonical = match scope {
        policy::ApprovalScope::AlwaysPrefix(prefix) => amend::rule_line(prefix),
        policy::ApprovalScope::AlwaysTool(tool) => crate::policy::tool_rules::allow_rule_text(tool),
        policy::ApprovalScope::Once | policy::ApprovalScope::SessionFile(_) => return Ok(None),
    };
    let path = local_rules_path(workspace_root);
    let Some(text) = read_local(workspace_root, &path)? else { return Ok(None) };
    let mut first = None;
    let mut kept = String::with_capacity(text.len());
    for (n, line) in text.split_inclusive('\n').enumerate() {
        if line.trim() == canonical.trim() {
            first.get_or_insert(n + 1);
        } else {
            kept.push_str(line);
        }
    }
    if first.is_some() {
        crate::support::beneath::replace_beneath(workspace_root, &path, kept.as_bytes(), 0o644)
            .map_err(|error| RulesFileError::Write {
                path: path.clone(),
                source: std::io::Error::other(error),
            })?;
    }
    Ok(first)
}

/// The text of a project's rules file, read beneath the workspace (no
/// symlink followed); `None` when it does not exist.
fn read_local(workspace_root: &Path, path: &Path) -> Result<Option<String>, RulesFileError> {
    use std::io::Read;
    let mut file = match crate::support::beneath::open_beneath(workspace_root, path) {
        Ok(file) => file,
        Err(error) if error.is_not_found() => return Ok(None),
        Err(error) => {
            let source = std::io::Error::other(error);
            return Err(RulesFileError::Read { path: path.to_owned(), source });
        }
    };
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|source| RulesFileError::Read { path: path.to_owned(), source })?;
    Ok(Some(text))
}

/// Where trusted projects are recorded.
pub fn trust_file(keel_home: &Path) -> PathBuf {
    keel_home.join("trusted_projects.toml")
}

#[derive(Debug, Default, serde::Deserialize, serde::Serialize)]
struct TrustRecord {
    #[serde(default)]
    projects: Vec<String>,
    /// Each trusted project's MCP server digest (`mcp_pin::digest`) when
    /// it was trusted; a project trusted before pins counts as "no servers".
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    mcp_pins: std::collections::BTreeMap<String, String>,
}

fn read_trust(keel_home: &Path) -> Result<TrustRecord, RulesFileError> {
    let path = trust_file(keel_home);
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text)
            .map_err(|error| RulesFileError::Trust { path, message: error.to_string() }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(TrustRecord::default()),
        Err(source) => Err(RulesFileError::Read { path, source }),
    }
}

/// Whether the user trusts the project at `workspace_root`.
pub fn is_trusted(keel_home: &Path, workspace_root: &Path) -> Result<bool, RulesFileError> {
    let root = workspace_root.display().to_string();
    Ok(read_trust(keel_home)?.projects.contains(&root))
}

/// Whether the project at `workspace_root` may start its MCP servers: not
/// trusted, trusted with the definitions the user trusted, or trusted but
/// changed since (`mcp_pin`).
pub fn mcp_trust(keel_home: &Path, workspace_root: &Path) -> Result<McpTrust, RulesFileError> {
    let record = read_trust(keel_home)?;
    let root = workspace_root.display().to_string();
    if !record.projects.contains(&root) {
        return Ok(McpTrust::Untrusted);
    }
    let current = mcp_pin::digest(workspace_root);
    let pinned = record.mcp_pins.get(&root).cloned().unwrap_or_else(mcp_pin::no_servers_digest);
    Ok(if pinned == current { McpTrust::Trusted } else { McpTrust::Changed })
}

/// Records that the user trusts the project at `workspace_root`, with
/// its MCP server definitions as they are now (`mcp_pin`).
pub fn trust_project(keel_home: &Path, workspace_root: &Path) -> Result<PathBuf, RulesFileError> {
    let mut record = read_trust(keel_home)?;
    let root = workspace_root.display().to_string();
    let path = trust_file(keel_home);
    let pin = mcp_pin::digest(workspace_root);
    let pinned = record.mcp_pins.get(&root) == Some(&pin);
    if !record.projects.contains(&root) || !pinned {
        if !record.projects.contains(&root) {
            record.projects.push(root.clone());
            record.projects.sort();
        }
        record.mcp_pins.insert(root, pin);
        let text = toml::to_string(&record).map_err(|error| RulesFileError::Trust {
            path: path.clone(),
            message: error.to_string(),
        })?;
        let write_error = |source| RulesFileError::Write { path: path.clone(), source };
        std::fs::create_dir_all(keel_home).map_err(write_error)?;
        std::fs::write(&path, text).map_err(write_error)?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removing_an_always_line_keeps_every_other_byte() {
        let ws = tempfile::tempdir().unwrap();
        let words = |text: &str| text.split(' ').map(str::to_owned).collect::<Vec<_>>();
        let path = local_rules_path(ws.path());
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mine = "# mine\r\nprefix_rule(pattern = [\"make\"],\n  decision = \"allow\")\n";
        std::fs::write(&path, mine).unwrap();
        append_local_rule(ws.path(), &words("npm run lint")).unwrap();
        append_local_tool_rule(ws.path(), "mcp__docs__search").unwrap();
        let listed = local_always_rules(ws.path()).unwrap();
        assert_eq!(
            listed,
            [
                (4, policy::ApprovalScope::AlwaysPrefix(words("npm run lint"))),
                (5, policy::ApprovalScope::AlwaysTool("mcp__docs__search".into())),
            ],
            "the hand-written rule is not an \"always\" answer"
        );
        let scope = policy::ApprovalScope::AlwaysPrefix(words("npm run lint"));
        assert_eq!(remove_local_always(ws.path(), &scope).unwrap(), Some(4));
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            format!("{mine}tool_rule(name=\"mcp__docs__search\", decision=\"allow\")\n")
        );
        assert_eq!(remove_local_always(ws.path(), &scope).unwrap(), None, "gone already");
    }

    #[test]
    fn trust_round_trips() {
        let home = tempfile::tempdir().unwrap();
        let ws = Path::new("/some/project");
        assert!(!is_trusted(home.path(), ws).unwrap());
        trust_project(home.path(), ws).unwrap();
        trust_project(home.path(), ws).unwrap();
        assert!(is_trusted(home.path(), ws).unwrap());
        assert!(!is_trusted(home.path(), Path::new("/other")).unwrap());
    }

    #[test]
    fn a_trusted_projects_changed_mcp_servers_wait_for_trust_again() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let ws = project.path();
        assert_eq!(mcp_trust(home.path(), ws).unwrap(), McpTrust::Untrusted);
        trust_project(home.path(), ws).unwrap();
        assert_eq!(mcp_trust(home.path(), ws).unwrap(), McpTrust::Trusted);
        std::fs::write(ws.join(".mcp.json"), r#"{"mcpServers":{"p":{"command":"sh"}}}"#).unwrap();
        assert_eq!(mcp_trust(home.path(), ws).unwrap(), McpTrust::Changed);
        assert!(is_trusted(home.path(), ws).unwrap(), "the rest of the trust stands");
        trust_project(home.path(), ws).unwrap();
        assert_eq!(mcp_trust(home.path(), ws).unwrap(), McpTrust::Trusted);
    }

    #[test]
    fn an_always_answer_is_not_written_through_a_rules_symlink() {
        let project = tempfile::tempdir().unwrap();
        let home_rules = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join(".keel")).unwrap();
        std::os::unix::fs::symlink(home_rules.path(), project_rules_dir(project.path())).unwrap();
        let error =
            append_local_rule(project.path(), &["cargo".into(), "test".into()]).unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        let error = append_local_tool_rule(project.path(), "mcp__s__t").unwrap_err();
        assert!(error.to_string().contains("symlink"), "{error}");
        assert!(std::fs::read_dir(home_rules.path()).unwrap().next().is_none());
    }

    #[test]
    fn bad_rules_file_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let rules_dir = project_rules_dir(dir.path());
        std::fs::create_dir_all(&rules_dir).unwrap();
        std::fs::write(rules_dir.join("a.rules"), "\nprefix_rule(pattern=[])\n").unwrap();
        let places = RulePlaces {
            keel_home: dir.path(),
            codex_home: dir.path(),
            home: dir.path(),
            workspace_root: dir.path(),
            extra: &[],
            import: true,
        };
        let error = load_rules(&places).unwrap_err().to_string();
        assert!(error.contains("a.rules:2:"), "{error}");
        // A cloned repository's file stops keel: the way out is said.
        assert!(error.contains("a rules file of this repository"), "{error}");
        assert!(error.contains(&format!("fix or remove {}", rules_dir.join("a.rules").display())));
    }
}
