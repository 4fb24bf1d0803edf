//! Hook sources: the `[hooks]` tables of `$KEEL_HOME/config.toml` (the
//! user's) and the project's `.keel/config.toml`, and, when
//! `import_claude_hooks = true`, the `hooks` of `~/.claude/settings.json`
//! and the project's `.claude/settings.json` (and `settings.local.json`).
//! Each file stays its own source so project hooks can wait for trust.

use std::path::Path;

use crate::hooks::{HookSource, HooksConfig};

use super::ConfigError;
use super::layers::read_file;

/// Every hook source that has hooks, user sources first.
pub fn load_hooks(
    keel_home: &Path,
    workspace_root: &Path,
) -> Result<Vec<HooksConfig>, ConfigError> {
    let user_path = keel_home.join("config.toml");
    let project_path = workspace_root.join(".keel").join("config.toml");
    let user = read_file(&user_path)?.unwrap_or_default();
    let project = read_file(&project_path)?.unwrap_or_default();
    let import_claude = project.import_claude_hooks.or(user.import_claude_hooks).unwrap_or(false);
    let mut configs = Vec::new();
    for (path, file, is_project) in [(&user_path, user, false), (&project_path, project, true)] {
        if let Some(table) = file.hooks {
            let json = serde_json::to_value(&table).map_err(|error| ConfigError::Parse {
                path: path.clone(),
                message: format!("hooks: {error}"),
            })?;
            configs.push(parse(path, &json, is_project, false)?);
        }
    }
    if import_claude {
        let home = keel_home.parent().unwrap_or(keel_home);
        let claude_files = [
            (home.join(".claude").join("settings.json"), false),
            (workspace_root.join(".claude").join("settings.json"), true),
            (workspace_root.join(".claude").join("settings.local.json"), true),
        ];
        for (path, is_project) in claude_files {
            if let Some(json) = read_json(&path)? {
                if let Some(hooks) = json.get("hooks") {
                    configs.push(parse(&path, hooks, is_project, true)?);
                }
            }
        }
    }
    Ok(configs)
}

fn parse(
    path: &Path,
    hooks: &serde_json::Value,
    project: bool,
    claude: bool,
) -> Result<HooksConfig, ConfigError> {
    let name = path.display().to_string();
    let source = if project {
        HookSource::Project { name, claude }
    } else {
        HookSource::User { name, claude }
    };
    HooksConfig::from_json(source, hooks)
        .map_err(|error| ConfigError::Parse { path: path.to_owned(), message: error.to_string() })
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
        let configs = load_hooks(&home, &repo).unwrap();
        assert_eq!(configs.len(), 2);
        assert!(matches!(configs[0].source, HookSource::User { claude: false, .. }));
        assert!(matches!(configs[1].source, HookSource::Project { claude: true, .. }));
    }

    #[test]
    fn a_broken_settings_file_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/.keel");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(repo.join(".claude")).unwrap();
        std::fs::write(home.join("config.toml"), "import_claude_hooks = true\n").unwrap();
        std::fs::write(repo.join(".claude/settings.json"), "{ not json").unwrap();
        let message = load_hooks(&home, &repo).unwrap_err().to_string();
        assert!(message.contains("settings.json"), "{message}");
    }
}
