//! The policy a user already wrote for Codex or Claude Code, read as keel
//! rules: Codex's `.rules` files (`$CODEX_HOME/rules/*.rules`, a project's
//! `.codex/rules/*.rules`, the same language keel's own rules are written
//! in) and Claude Code's `permissions` (`~/.claude/settings.json`, a
//! project's `.claude/settings.json` and `.claude/settings.local.json`,
//! translated by `claude_permissions`).
//!
//! Invariants: the user's files are [`Origin::User`], a project's are
//! [`Origin::Project`] (their allows count once the project is trusted,
//! their asks and denies always, as with `.keel/rules`). Another agent's
//! file that keel cannot read is skipped whole and said, never fatal
//! (keel's own rules files stop it instead: the user wrote those for keel).
//! Each file read or skipped is reported ([`RuleImport`]) for `keel doctor`;
//! the session's warnings get one line per kind of problem, not one per
//! entry.

use std::path::{Path, PathBuf};

use super::claude_permissions::add_permission_rules;
use crate::policy::{Origin, RuleSet};

/// One file of another agent's setup and what keel took from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleImport {
    pub path: PathBuf,
    /// `Codex rules`, `Claude Code permissions`.
    pub kind: &'static str,
    pub origin: Origin,
    /// Rules (Codex) or entries (Claude) taken.
    pub imported: usize,
    /// What was left out, each with its reason (a whole file that could not
    /// be read is one line).
    pub skipped: Vec<String>,
}

/// Which of the files to read: the user's own, or the project's.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    User { codex_home: &'a Path, home: &'a Path },
    Project { workspace_root: &'a Path },
}

/// Adds the rules of every Codex rules file and Claude Code settings file
/// of `scope` to `rules`; returns one report per file found.
pub fn add_imported_rules(rules: &mut RuleSet, scope: Scope<'_>) -> Vec<RuleImport> {
    let (rule_dir, settings, origin) = match scope {
        Scope::User { codex_home, home } => (
            codex_home.join("rules"),
            vec![home.join(".claude").join("settings.json")],
            Origin::User,
        ),
        Scope::Project { workspace_root } => {
            let claude = workspace_root.join(".claude");
            (
                workspace_root.join(".codex").join("rules"),
                vec![claude.join("settings.json"), claude.join("settings.local.json")],
                Origin::Project,
            )
        }
    };
    let mut imports: Vec<RuleImport> =
        rules_files(&rule_dir).into_iter().map(|path| codex_file(rules, path, origin)).collect();
    imports.extend(settings.into_iter().filter_map(|path| claude_file(rules, path, origin)));
    imports
}

/// The session's warnings about `imports`: one line per kind with any
/// problem, pointing at `keel doctor` for the entries.
pub fn import_warnings(imports: &[RuleImport]) -> Vec<String> {
    let mut lines = Vec::new();
    for kind in ["Codex rules", "Claude Code permissions"] {
        let skipped: usize = imports
            .iter()
            .filter(|import| import.kind == kind)
            .map(|import| import.skipped.len())
            .sum();
        if skipped > 0 {
            lines.push(format!(
                "{skipped} of your {kind} entries have no keel equivalent and were left out \
                 (`keel doctor` lists them with the reasons)"
            ));
        }
    }
    lines
}

fn codex_file(rules: &mut RuleSet, path: PathBuf, origin: Origin) -> RuleImport {
    let mut import =
        RuleImport { path, kind: "Codex rules", origin, imported: 0, skipped: Vec::new() };
    let before = count(rules);
    let loaded = std::fs::read_to_string(&import.path)
        .map_err(|error| format!("cannot read it: {error}"))
        .and_then(|text| {
            rules
                .load(&import.path.display().to_string(), &text, origin)
                .map_err(|error| format!("not read: {error}"))
        });
    match loaded {
        Ok(()) => import.imported = count(rules) - before,
        Err(reason) => import.skipped.push(reason),
    }
    import
}

fn claude_file(rules: &mut RuleSet, path: PathBuf, origin: Origin) -> Option<RuleImport> {
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            let skipped = vec![format!("cannot read it: {error}")];
            return Some(RuleImport { path, kind: CLAUDE, origin, imported: 0, skipped });
        }
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(json) => json,
        Err(error) => {
            let skipped = vec![format!("not JSON: {error}")];
            return Some(RuleImport { path, kind: CLAUDE, origin, imported: 0, skipped });
        }
    };
    let permissions = json.get("permissions")?;
    let report = add_permission_rules(rules, &path.display().to_string(), permissions, origin);
    let imported = report.iter().filter(|entry| entry.skipped.is_none()).count();
    let skipped = report
        .into_iter()
        .filter_map(|entry| entry.skipped.map(|why| format!("{}: {why}", entry.entry)))
        .collect();
    Some(RuleImport { path, kind: CLAUDE, origin, imported, skipped })
}

const CLAUDE: &str = "Claude Code permissions";

fn count(rules: &RuleSet) -> usize {
    rules.prefix_rules.len()
        + rules.path_rules.len()
        + rules.tool_rules.len()
        + rules.web_rules.len()
        + rules.host_executables.len()
}

/// `*.rules` files in `dir`, sorted; none when it cannot be listed.
fn rules_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rules") && path.is_file())
        .collect();
    files.sort();
    files
}
