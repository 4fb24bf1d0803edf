//! What happens before a session opens: which session (new, a resumed log,
//! or the picker's choice), the settings for it (a resumed session keeps
//! its logged model and provider unless flags say otherwise, as `keel exec
//! --resume` does), and whether to ask "trust this project?" first.
//!
//! Invariants: settings are loaded only once the session is chosen and
//! trust is answered, so a "yes" (recorded exactly like `keel trust`)
//! already applies to the session it precedes. Reads files; draws nothing.

use std::path::{Path, PathBuf};

use crate::config::{self, CliOverrides, ConfigError, Environment, Settings, rules};
use crate::hooks::HookSource;
use crate::session::{SessionSummary, list_sessions, sessions_dir};

/// Which session the TUI opens.
#[derive(Debug, Clone)]
pub enum Start {
    New,
    Resume(PathBuf),
    /// `keel resume` with no id: pick among these (this folder's, newest
    /// first).
    Pick(Vec<SessionSummary>),
}

/// The environment and flags, kept to load settings once the session is
/// chosen.
#[derive(Debug, Clone)]
pub struct Launch {
    pub env: Environment,
    pub overrides: CliOverrides,
}

impl Launch {
    /// Settings for a new session, or for resuming the log at `resume`.
    pub fn settings(&self, resume: Option<&Path>) -> Result<Settings, ConfigError> {
        let mut overrides = self.overrides.clone();
        if let Some((provider, model)) = resume.and_then(crate::session::logged_model) {
            overrides.provider.get_or_insert(provider);
            overrides.model.get_or_insert(model);
        }
        config::load(&self.env, &overrides)
    }

    /// Records trust in the workspace, as `keel trust` does.
    pub fn trust(&self) -> Result<PathBuf, rules::RulesFileError> {
        let root = config::find_workspace_root(&self.env.cwd);
        rules::trust_project(&self.env.keel_home, &root)
    }

    /// Sessions started in this folder with at least one prompt, newest
    /// first.
    pub fn sessions_here(&self) -> Vec<SessionSummary> {
        let (sessions, _) = list_sessions(&sessions_dir(&self.env.keel_home));
        let here = self.env.cwd.display().to_string();
        // Sessions opened and left without a prompt have nothing to resume.
        sessions
            .into_iter()
            .filter(|session| session.folder == here && session.first_prompt.is_some())
            // A subagent's session is part of its parent's.
            .filter(|session| session.parent.is_none())
            .collect()
    }
}

/// What an untrusted project brings that waits for trust; empty when the
/// project is trusted or brings nothing. A trusted project whose MCP
/// servers changed since (`config::mcp_pin`) asks again for those.
pub fn untrusted_supplies(settings: &Settings) -> Vec<String> {
    if settings.project_trusted {
        let changed =
            settings.mcp.skipped.iter().any(|server| server.reason == config::mcp::CHANGED_REASON);
        return if changed {
            vec![
                "MCP servers changed since you trusted it (.mcp.json, .keel/config.toml)"
                    .to_owned(),
            ]
        } else {
            Vec::new()
        };
    }
    let root = &settings.workspace_root;
    let mut found = Vec::new();
    let has_rules = std::fs::read_dir(rules::project_rules_dir(root)).is_ok_and(|entries| {
        entries
            .filter_map(Result::ok)
            .any(|entry| entry.path().extension().is_some_and(|ext| ext == "rules"))
    });
    if has_rules {
        found.push(".keel/rules/".to_owned());
    }
    let hooks =
        settings.hooks.iter().any(|hooks| matches!(hooks.source, HookSource::Project { .. }));
    if hooks {
        found.push("hooks".to_owned());
    }
    if root.join(".keel").join("config.toml").is_file() {
        found.push(".keel/config.toml".to_owned());
    }
    if root.join(".keel").join("phases.toml").is_file() {
        found.push(".keel/phases.toml".to_owned());
    }
    // Agent types and commands (they load only once trusted).
    for folder in [".keel/agents", ".claude/agents", ".keel/commands", ".claude/commands"] {
        if !config::markdown_file::markdown_files(&root.join(folder), 2).is_empty() {
            found.push(format!("{folder}/"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(home: &Path, project: &Path) -> Launch {
        let env = Environment {
            keel_home: home.to_owned(),
            cwd: project.to_owned(),
            vars: [("HOME".to_owned(), home.display().to_string())].into(),
        };
        let overrides = CliOverrides {
            provider: Some("openai-chat".into()),
            base_url: Some("http://127.0.0.1:9/v1".into()),
            model: Some("m".into()),
            ..CliOverrides::default()
        };
        Launch { env, overrides }
    }

    #[test]
    fn a_project_with_its_own_rules_asks_until_trusted() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let launch = launch(home.path(), project.path());
        assert!(untrusted_supplies(&launch.settings(None).unwrap()).is_empty());
        let rules_dir = rules::project_rules_dir(project.path());
        std::fs::create_dir_all(&rules_dir).unwrap();
        std::fs::write(rules_dir.join("team.rules"), "").unwrap();
        assert_eq!(untrusted_supplies(&launch.settings(None).unwrap()), [".keel/rules/"]);
        std::fs::create_dir_all(project.path().join(".claude/commands/git")).unwrap();
        std::fs::write(project.path().join(".claude/commands/git/commit.md"), "Commit.").unwrap();
        let supplies = untrusted_supplies(&launch.settings(None).unwrap());
        assert_eq!(supplies, [".keel/rules/", ".claude/commands/"]);
        launch.trust().unwrap();
        let settings = launch.settings(None).unwrap();
        assert!(settings.project_trusted, "trust is recorded like `keel trust`");
        assert!(untrusted_supplies(&settings).is_empty());
    }

    #[test]
    fn a_trusted_project_whose_mcp_servers_changed_asks_again() {
        let home = tempfile::tempdir().unwrap();
        let pinned = tempfile::tempdir().unwrap();
        let pinned_launch = launch(home.path(), pinned.path());
        pinned_launch.trust().unwrap();
        assert!(untrusted_supplies(&pinned_launch.settings(None).unwrap()).is_empty());
        std::fs::write(
            pinned.path().join(".mcp.json"),
            r#"{"mcpServers":{"planted":{"command":"sh"}}}"#,
        )
        .unwrap();
        let asked = untrusted_supplies(&pinned_launch.settings(None).unwrap());
        assert!(asked[0].contains("MCP servers changed"), "{asked:?}");
        pinned_launch.trust().unwrap();
        assert!(untrusted_supplies(&pinned_launch.settings(None).unwrap()).is_empty());
    }
}
