//! `keel doctor`'s setup section: what keel picked up of the user's own
//! setup (keel's, Claude Code's and Codex's files), from where, and what it
//! left out and why: instruction files, rules and permissions, MCP servers,
//! hooks.
//!
//! Invariants: it reports what the loaded [`Settings`] hold and what
//! discovery reads, so a line here is what a session would do, never a
//! second reading with its own rules; nothing here starts a server or runs
//! a hook.

use serde::Serialize;

use crate::config::{InstructionFile, Settings};
use crate::hooks::HookSource;

/// One file or entry picked up, or left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct SetupLine {
    /// `Claude Code user memory`, `Codex rules`, `Claude Code permissions`,
    /// `MCP server github`, `Claude Code hooks`.
    pub what: String,
    /// A path, or where an entry was written (`user config`).
    pub from: String,
    /// For a line left out: why (and what to do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// The section: picked up, then left out.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct SetupReport {
    pub read: Vec<SetupLine>,
    pub skipped: Vec<SetupLine>,
}

impl SetupReport {
    /// The report for a session with `settings`, whose instruction files
    /// are `instructions`.
    pub fn of(settings: &Settings, instructions: &[InstructionFile]) -> Self {
        let mut report = SetupReport::default();
        for file in instructions {
            report.read(file.source.label(), file.path.display().to_string(), None);
            for why in &file.skipped {
                report.skip("instruction import", file.path.display().to_string(), why.clone());
            }
        }
        for import in &settings.rule_imports {
            let from = import.path.display().to_string();
            // A file read whole or in part; one keel could not use at all
            // is only left out.
            if import.imported > 0 || import.skipped.is_empty() {
                let count = format!("{} taken", import.imported);
                report.read(import.kind, from.clone(), Some(count));
            }
            for why in &import.skipped {
                report.skip(import.kind, from.clone(), why.clone());
            }
        }
        for server in &settings.mcp.servers {
            report.read(&format!("MCP server {}", server.name), server.origin.describe(), None);
        }
        for server in &settings.mcp.skipped {
            let what = format!("MCP server {}", server.name);
            report.skip(&what, server.origin.describe(), server.reason.clone());
        }
        report.hooks(settings);
        report
    }

    fn read(&mut self, what: &str, from: String, note: Option<String>) {
        self.read.push(SetupLine { what: what.to_owned(), from, why: note });
    }

    fn skip(&mut self, what: &str, from: String, why: String) {
        self.skipped.push(SetupLine { what: what.to_owned(), from, why: Some(why) });
    }

    /// Hook files in force, and Claude Code settings files whose hooks are
    /// not run (keel runs Claude's only with `import_claude_hooks = true`,
    /// a project's only once trusted).
    fn hooks(&mut self, settings: &Settings) {
        for config in &settings.hooks {
            let (HookSource::User { name, claude } | HookSource::Project { name, claude }) =
                &config.source;
            let what = if *claude { "Claude Code hooks" } else { "hooks" };
            let events = format!("{} events", config.events.len());
            self.read(what, name.clone(), Some(events));
        }
        let claude = settings.workspace_root.join(".claude");
        let files = [
            (settings.home.join(".claude").join("settings.json"), false),
            (claude.join("settings.json"), true),
            (claude.join("settings.local.json"), true),
        ];
        for (path, project) in files {
            let name = path.display().to_string();
            let has_hooks = std::fs::read_to_string(&path)
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .is_some_and(|json| json.get("hooks").is_some());
            let in_force = settings.hooks.iter().any(|config| config.source.name() == name);
            if !has_hooks || in_force {
                continue;
            }
            let why = if project && !settings.project_trusted {
                "a project's hooks run only once you trust it (`keel trust`) and set \
                 `import_claude_hooks = true`"
            } else {
                "Claude Code's hooks run only with `import_claude_hooks = true` in \
                 ~/.keel/config.toml (they run commands: keel asks you to opt in)"
            };
            self.skip("Claude Code hooks", name, why.to_owned());
        }
    }

    /// The section as lines for a person.
    pub fn human(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.read.is_empty() && self.skipped.is_empty() {
            lines.push("setup: no instructions, rules, MCP servers or hooks found".to_owned());
        }
        for line in &self.read {
            let note = line.why.as_deref().map_or_else(String::new, |note| format!(" ({note})"));
            lines.push(format!("setup: {} from {}{note}", line.what, line.from));
        }
        for line in &self.skipped {
            let why = line.why.as_deref().unwrap_or_default();
            lines.push(format!("setup: left out: {} from {}: {why}", line.what, line.from));
        }
        lines
    }
}
