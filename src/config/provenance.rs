//! Where each configured value came from, for the TUI's `/config`: every
//! key the user file (`$KEEL_HOME/config.toml`), the project file
//! (`.keel/config.toml`), a `-c key=value` or a flag set, with the value
//! it has (the last layer wins, as in `layers.rs`) and what was set but
//! does not apply (an untrusted project; a key a project may never set).
//!
//! Invariants: read-only and tolerant (an unreadable or broken file is one
//! line saying so; `load` already refused or warned about it); secret
//! values never leave here: a key that names a secret (`*key`, `*token`,
//! `*secret`, `*password`), everything under an `env` or `headers` table
//! and a URL's user info are shown as `••••`. The merge rule itself stays
//! in `layers.rs`; this only labels.

use std::path::Path;

use super::{CliOverrides, Environment, find_workspace_root};

/// One configured key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigValue {
    /// Dotted (`sandbox.network`).
    pub key: String,
    /// As written (TOML), secrets hidden.
    pub value: String,
    /// Where the value in force was written.
    pub source: String,
    /// Set there but not applied, and why.
    pub ignored: Option<String>,
}

use super::trust::{PROJECT_MAY_NOT_SET, PROJECT_SANDBOX_NARROWING};

/// Every key set anywhere, in key order, the value in force first.
pub fn config_sources(env: &Environment, cli: &CliOverrides, trusted: bool) -> Vec<ConfigValue> {
    let mut found: Vec<ConfigValue> = Vec::new();
    let user = env.keel_home.join("config.toml");
    add_file(&mut found, &user, &format!("{} (user)", user.display()), |_| None);
    let root = find_workspace_root(&env.cwd);
    let project = root.join(".keel").join("config.toml");
    let label = format!("{} (project)", project.display());
    add_file(&mut found, &project, &label, |key| project_refusal(key, trusted));
    for text in &cli.set {
        let Some((key, value)) = text.split_once('=') else { continue };
        let value = toml::from_str::<toml::Table>(&format!("v = {value}"))
            .ok()
            .and_then(|mut table| table.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_owned()));
        set(&mut found, key.trim(), &value, &format!("-c {}", key.trim()), None);
    }
    let flags = [("provider", &cli.provider), ("base_url", &cli.base_url), ("model", &cli.model)];
    for (key, value) in flags {
        if let Some(value) = value {
            let flag = format!("--{}", key.replace('_', "-"));
            set(&mut found, key, &toml::Value::String(value.clone()), &flag, None);
        }
    }
    found.sort_by(|a, b| a.key.cmp(&b.key));
    found
}

fn project_refusal(key: &str, trusted: bool) -> Option<String> {
    let prices = key.starts_with("context.") && key.ends_with("_price");
    if !trusted && !prices && !key.starts_with("limits.") {
        return Some("ignored until you trust this project (`keel trust`)".to_owned());
    }
    if PROJECT_SANDBOX_NARROWING.contains(&key) {
        return None;
    }
    PROJECT_MAY_NOT_SET
        .iter()
        .any(|never| key == *never || key.starts_with(&format!("{never}.")))
        .then(|| "ignored: a project may not set it".to_owned())
}

fn add_file(
    found: &mut Vec<ConfigValue>,
    path: &Path,
    label: &str,
    refusal: impl Fn(&str) -> Option<String>,
) {
    let Ok(text) = std::fs::read_to_string(path) else { return };
    match toml::from_str::<toml::Table>(&text) {
        Ok(table) => {
            let mut leaves = Vec::new();
            flatten("", &toml::Value::Table(table), &mut leaves);
            for (key, value) in leaves {
                let ignored = refusal(&key);
                set(found, &key, &value, label, ignored);
            }
        }
        Err(_) => found.push(ConfigValue {
            key: "(file)".to_owned(),
            value: String::new(),
            source: label.to_owned(),
            ignored: Some("does not parse; none of it applies".to_owned()),
        }),
    }
}

fn flatten(prefix: &str, value: &toml::Value, out: &mut Vec<(String, toml::Value)>) {
    match value {
        toml::Value::Table(table) if !table.is_empty() => {
            for (key, value) in table {
                let key = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
                flatten(&key, value, out);
            }
        }
        other => out.push((prefix.to_owned(), other.clone())),
    }
}

/// Records `key` set by `source`: a value that applies replaces the one
/// in force; an ignored one is listed beside it.
fn set(
    found: &mut Vec<ConfigValue>,
    key: &str,
    value: &toml::Value,
    source: &str,
    ignored: Option<String>,
) {
    let shown = shown_value(key, value);
    let entry =
        ConfigValue { key: key.to_owned(), value: shown, source: source.to_owned(), ignored };
    if entry.ignored.is_none() {
        found.retain(|old| old.key != key || old.ignored.is_some());
    }
    found.push(entry);
}

/// The value as TOML, or `••••` for a secret.
fn shown_value(key: &str, value: &toml::Value) -> String {
    let last = key.rsplit('.').next().unwrap_or(key).to_ascii_lowercase();
    let secret_name =
        ["key", "token", "secret", "password"].iter().any(|word| last.ends_with(word))
            || key.split('.').any(|part| part == "env" || part == "headers");
    if secret_name {
        return "••••".to_owned();
    }
    let text = value.to_string();
    match (text.find("://"), text.find('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}••••{}", &text[..scheme + 3], &text[at..])
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_in(dir: &Path) -> Environment {
        let home = dir.join("home");
        let repo = dir.join("repo");
        std::fs::create_dir_all(repo.join(".keel")).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Environment { keel_home: home, cwd: repo, vars: Default::default() }
    }

    #[test]
    fn each_value_says_where_it_came_from_and_secrets_stay_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_in(dir.path());
        let user = "model = \"m-user\"\nbase_url = \"https://u:pw@llm.example.invalid/v1\"\n\
                    [mcp_servers.docs]\ncommand = \"docs\"\nenv = { TOKEN = \"t-123\" }\n\
                    [tui]\nnotify = \"bell\"\n";
        std::fs::write(env.keel_home.join("config.toml"), user).unwrap();
        let project = "model = \"m-project\"\n[sandbox]\nnetwork = \"on\"\nmode = \"off\"\n";
        std::fs::write(env.cwd.join(".keel/config.toml"), project).unwrap();
        let cli = CliOverrides { set: vec!["tui.notify=\"osc9\"".into()], ..Default::default() };
        let found = config_sources(&env, &cli, true);
        let line = |key: &str| found.iter().filter(|v| v.key == key).cloned().collect::<Vec<_>>();
        let model = line("model");
        assert_eq!(model.len(), 1, "{found:#?}");
        assert_eq!(model[0].value, "\"m-project\"");
        assert!(model[0].source.ends_with("(project)"));
        assert_eq!(line("tui.notify")[0].source, "-c tui.notify");
        assert_eq!(line("mcp_servers.docs.env.TOKEN")[0].value, "••••");
        assert_eq!(line("base_url")[0].value, "\"https://••••@llm.example.invalid/v1\"");
        assert_eq!(line("sandbox.network")[0].ignored, None, "it only narrows");
        let loosened = line("sandbox.mode");
        assert_eq!(loosened[0].ignored.as_deref(), Some("ignored: a project may not set it"));
        let untrusted = config_sources(&env, &CliOverrides::default(), false);
        let model: Vec<_> = untrusted.iter().filter(|v| v.key == "model").collect();
        assert_eq!(model.len(), 2);
        assert!(model.iter().any(|v| v.ignored.is_none() && v.value == "\"m-user\""));
        assert!(!format!("{found:?}{untrusted:?}").contains("t-123"));
        assert!(!format!("{found:?}").contains(":pw@"));
    }
}
