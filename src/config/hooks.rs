//! Hook sources: the `[hooks]` tables of `$KEEL_HOME/config.toml` (the
//! user's), the project's `.keel/config.toml` and every `-c hooks.…`
//! override, as [`super::read_layers`] found them, and, when the merged
//! `import_claude_hooks` is true (user file or `-c`; an untrusted project
//! cannot turn it on), the `hooks` of `~/.claude/settings.json` and the
//! project's `.claude/settings.json` (and `settings.local.json`).
//! Each table stays its own source so project hooks can wait for trust.
//! What a source holds that keel does not run (newer Claude Code events,
//! `prompt`/`agent` hooks) is one warning per source, never a refusal.

use std::path::Path;

use crate::hooks::{HookSource, HooksConfig};

use super::ConfigError;
use super::layers::{HookOrigin, HookTable};

/// Every hook source that has hooks, user sources first. A broken source
/// stops keel (a guard hook silently dropped would be worse), except an
/// untrusted project's: its hooks would not run anyway, so a cloned
/// repository's broken file is a warning (pushed on `warnings`), never a
/// reason keel cannot start there.
pub fn load_hooks(
    keel_home: &Path,
    workspace_root: &Path,
    tables: &[HookTable],
    import_claude: bool,
    project_trusted: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<HooksConfig>, ConfigError> {
    let mut configs = Vec::new();
    let mut keep = |loaded: Result<HooksConfig, ConfigError>, is_project: bool| match loaded {
        Ok(config) => {
            if !config.skipped.is_empty() {
                warnings.push(format!(
                    "hooks in {} skipped: {}",
                    config.source.name(),
                    config.skipped.describe()
                ));
            }
            configs.push(config);
            Ok(())
        }
        Err(error) if is_project && !project_trusted => {
            warnings.push(format!(
                "{error}; the project is not trusted, so its hooks would not run anyway"
            ));
            Ok(())
        }
        Err(error) => Err(error),
    };
    for HookTable { origin, table } in tables {
        let (name, is_project) = match origin {
            HookOrigin::UserFile(path) => (path.display().to_string(), false),
            HookOrigin::ProjectFile(path) => (path.display().to_string(), true),
            HookOrigin::Override(text) => (format!("-c {text}"), false),
        };
        let loaded = serde_json::to_value(table)
            .map_err(|error| error.to_string())
            .and_then(|json| parse_source(&name, &json, is_project, false))
            .map_err(|message| origin_error(origin, &message));
        keep(loaded, is_project)?;
    }
    if import_claude {
        let home = keel_home.parent().unwrap_or(keel_home);
        let claude_files = [
            (home.join(".claude").join("settings.json"), false),
            (workspace_root.join(".claude").join("settings.json"), true),
            (workspace_root.join(".claude").join("settings.local.json"), true),
        ];
        for (path, is_project) in claude_files {
            let loaded = read_json(&path).and_then(|json| {
                json.as_ref()
                    .and_then(|json| json.get("hooks"))
                    .map(|hooks| parse(&path, hooks, is_project, true))
                    .transpose()
            });
            match loaded {
                Ok(Some(config)) => keep(Ok(config), is_project)?,
                Ok(None) => {}
                Err(error) => keep(Err(error), is_project)?,
            }
        }
    }
    Ok(configs)
}

fn origin_error(origin: &HookOrigin, message: &dyn std::fmt::Display) -> ConfigError {
    match origin {
        HookOrigin::UserFile(path) | HookOrigin::ProjectFile(path) => {
            ConfigError::Parse { path: path.clone(), message: format!("hooks: {message}") }
        }
        HookOrigin::Override(text) => {
            ConfigError::BadOverride { text: text.clone(), message: message.to_string() }
        }
    }
}

fn parse_source(
    name: &str,
    hooks: &serde_json::Value,
    project: bool,
    claude: bool,
) -> Result<HooksConfig, String> {
    let name = name.to_owned();
    let source = if project {
        HookSource::Project { name, claude }
    } else {
        HookSource::User { name, claude }
    };
    HooksConfig::from_json(source, hooks).map_err(|error| error.to_string())
}

fn parse(
    path: &Path,
    hooks: &serde_json::Value,
    project: bool,
    claude: bool,
) -> Result<HooksConfig, ConfigError> {
    parse_source(&path.display().to_string(), hooks, project, claude)
        .map_err(|message| ConfigError::Parse { path: path.to_owned(), message })
}

fn read_json(path: &Path) -> Result<Option<serde_json::Value>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|error| ConfigError::Parse {
            path: path.to_owned(),
            message: error.to_string(),
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ConfigError::Read { path: path.to_owned(), source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{CliOverrides, Environment, read_layers};

    /// The hooks a session in `repo` would load, with `-c` overrides `set`.
    fn hooks_for(home: &Path, repo: &Path, set: &[&str]) -> Result<Vec<HooksConfig>, ConfigError> {
        let env = Environment {
            keel_home: home.to_owned(),
            cwd: repo.to_owned(),
            vars: Default::default(),
        };
        let cli = CliOverrides {
            set: set.iter().map(|s| (*s).to_owned()).collect(),
            ..CliOverrides::default()
        };
        let layers = read_layers(&env, &cli)?;
        let import = layers.merged.import_claude_hooks.unwrap_or(false);
        let trusted = layers.project_trusted;
        load_hooks(home, repo, &layers.hook_tables, import, trusted, &mut Vec::new())
    }

    #[test]
    fn toml_hooks_and_imported_claude_settings_are_separate_sources() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/.keel");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        std::fs::write(
            home.join("config.toml"),
            "import_claude_hooks = true\n[[hooks.PreToolUse]]\nmatcher = \"shell\"\n\
             [[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"true\"\n",
        )
        .unwrap();
        std::fs::write(
            repo.join(".claude/settings.json"),
            r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "exit 2"}]}]}}"#,
        )
        .unwrap();
        let configs = hooks_for(&home, &repo, &[]).unwrap();
        assert_eq!(configs.len(), 2);
        assert!(matches!(configs[0].source, HookSource::User { claude: false, .. }));
        assert!(matches!(configs[1].source, HookSource::Project { claude: true, .. }));
    }

    #[test]
    fn a_broken_settings_file_is_an_error_naming_it_a_warning_for_an_untrusted_project() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/.keel");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        std::fs::create_dir_all(dir.path().join("home/.claude")).unwrap();
        std::fs::write(dir.path().join("home/.claude/settings.json"), "{ not json").unwrap();
        std::fs::write(repo.join(".claude/settings.json"), "{ not json").unwrap();
        assert!(hooks_for(&home, &repo, &[]).is_ok(), "not imported unless asked");
        let set = ["import_claude_hooks=true"];
        let message = hooks_for(&home, &repo, &set).unwrap_err().to_string();
        assert!(message.contains("home/.claude/settings.json"), "the user's file: {message}");
        std::fs::remove_file(dir.path().join("home/.claude/settings.json")).unwrap();
        let tables = [];
        let mut warnings = Vec::new();
        let loaded = load_hooks(&home, &repo, &tables, true, false, &mut warnings);
        assert!(loaded.is_ok_and(|configs| configs.is_empty()));
        assert!(warnings[0].contains("repo/.claude/settings.json"), "{warnings:?}");
        assert!(load_hooks(&home, &repo, &tables, true, true, &mut warnings).is_err(), "trusted");
    }

    #[test]
    fn hooks_given_with_c_are_a_source_and_unknown_events_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/.keel");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&repo).unwrap();
        let set = [r#"hooks.Stop=[{hooks=[{type="command",command="true"}]}]"#];
        let configs = hooks_for(&home, &repo, &set).unwrap();
        assert_eq!(configs.len(), 1);
        assert!(
            matches!(&configs[0].source, HookSource::User { name, .. } if name.starts_with("-c "))
        );
        let message = hooks_for(&home, &repo, &["hooks.Stopp=[]"]).unwrap_err().to_string();
        assert!(message.contains("unknown hook event `Stopp`; use one of:"), "{message}");
    }

    #[test]
    fn a_settings_file_with_newer_events_loads_with_one_warning_naming_them() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/.keel");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        std::fs::write(
            repo.join(".claude/settings.json"),
            include_str!("../../tests/fixtures/claude/hooks/worktree-ghostty.json"),
        )
        .unwrap();
        let mut warnings = Vec::new();
        let configs = load_hooks(&home, &repo, &[], true, true, &mut warnings).unwrap();
        assert_eq!(configs.len(), 1);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].contains("`WorktreeCreate` (1 hook), `WorktreeRemove`"),
            "{warnings:?}"
        );
    }

    #[test]
    fn an_untrusted_project_cannot_turn_on_claude_imports() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/.keel");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(dir.path().join("home/.claude")).unwrap();
        std::fs::create_dir_all(repo.join(".keel")).unwrap();
        std::fs::write(repo.join(".keel/config.toml"), "import_claude_hooks = true\n").unwrap();
        std::fs::write(
            dir.path().join("home/.claude/settings.json"),
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
        )
        .unwrap();
        assert!(hooks_for(&home, &repo, &[]).unwrap().is_empty());
        crate::config::rules::trust_project(&home, &repo).unwrap();
        assert_eq!(hooks_for(&home, &repo, &[]).unwrap().len(), 1, "after trust it applies");
    }
}
