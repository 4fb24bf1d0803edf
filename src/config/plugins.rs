//! Claude Code plugins installed with `keel plugin add`: a folder holding
//! `.claude-plugin/plugin.json` (name, version, description, and optional
//! component paths) that bundles commands, agents, skills, hooks and MCP
//! servers. This file reads a manifest and the installed plugins
//! (`$KEEL_HOME/plugins/<name>/`, recorded in `$KEEL_HOME/plugins/installed.json`)
//! and says where each component is; `plugin_install.rs` adds and removes them.
//!
//! Components, as Claude Code resolves them: the default folders
//! (`commands/`, `agents/`, `skills/`, `hooks/hooks.json`, `.mcp.json`) plus
//! the paths the manifest names (`"commands": "./more"` or a list; `hooks`
//! and `mcpServers` a file or an inline object). Commands are namespaced
//! by the plugin's name (`/plugin-name:command`; the bare name works when no
//! other command has it). `${CLAUDE_PLUGIN_ROOT}` in hook commands and MCP
//! server commands, args and env becomes the installed folder, in those
//! files only, and the plugin's hooks and stdio servers get the variable
//! in their environment (hook scripts read it there).
//!
//! Invariants: an installed plugin is the user's own (user trust, as
//! `~/.keel/commands`), and it never loosens policy: its hooks are user
//! hooks, its MCP servers pass the same credential-variable check as a
//! project's `.mcp.json`; a component path may not leave the plugin's
//! folder (absolute, `..`, or a symlink out); a broken plugin is a problem
//! line (grouped into one warning), never an error that stops keel.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The manifest's place inside a plugin's folder.
pub const MANIFEST: &str = ".claude-plugin/plugin.json";
/// The record of installed plugins, under `$KEEL_HOME/plugins/`.
pub const RECORD: &str = "installed.json";
/// The variable Claude Code gives a plugin's hooks and servers.
pub const ROOT_VARIABLE: &str = "CLAUDE_PLUGIN_ROOT";
/// Bytes of a manifest, hooks file or `.mcp.json` read at most.
const MAX_JSON_BYTES: u64 = 1024 * 1024;

/// Why a plugin folder or the record cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("{} has no {MANIFEST}: not a Claude Code plugin", folder.display())]
    NoManifest { folder: PathBuf },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{} is not valid: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
    #[error(
        "plugin name `{name}` is not valid: use lowercase letters, digits and `-` (kebab-case, \
         as Claude Code requires)"
    )]
    BadName { name: String },
    #[error("`{path}` in {MANIFEST} leaves the plugin's folder: component paths must be inside it")]
    PathEscapes { path: String },
    #[error("{} is a symlink to {}, outside the plugin's folder", link.display(), target.display())]
    SymlinkEscapes { link: PathBuf, target: PathBuf },
    #[error(
        "a plugin named `{name}` is already installed (from {source_label}): `keel plugin remove {name}` first"
    )]
    Clash { name: String, source_label: String },
    #[error("no plugin named `{name}` is installed (`keel plugin list` shows them)")]
    NotInstalled { name: String },
    #[error("cannot fetch {url}: {message}")]
    Clone { url: String, message: String },
}

/// What `.claude-plugin/plugin.json` says, the paths checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// Extra command and agent folders and skill folders (relative, inside).
    pub commands: Vec<String>,
    pub agents: Vec<String>,
    pub skills: Vec<String>,
    pub hooks: Option<ComponentSource>,
    pub mcp_servers: Option<ComponentSource>,
}

/// A `hooks` or `mcpServers` field: a file in the plugin, or written inline.
#[derive(Debug, Clone, PartialEq)]
pub enum ComponentSource {
    File(String),
    Inline(serde_json::Value),
}

/// One line of the record: what was installed, from where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledPlugin {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// The folder or URL given to `keel plugin add`.
    pub source: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct Record {
    #[serde(default)]
    pub plugins: Vec<InstalledPlugin>,
}

/// A plugin ready to load: its record line, manifest and installed folder.
#[derive(Debug, Clone, PartialEq)]
pub struct Plugin {
    pub installed: InstalledPlugin,
    pub manifest: Manifest,
    pub root: PathBuf,
}

/// The installed plugins a session loads, and those that could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plugins {
    pub plugins: Vec<Plugin>,
    /// One line per broken plugin (grouped into one warning at start).
    pub problems: Vec<String>,
}

/// The folder plugins are installed in.
pub fn plugins_dir(keel_home: &Path) -> PathBuf {
    keel_home.join("plugins")
}

/// Kebab-case, as Claude Code requires of a plugin's name.
pub fn valid_plugin_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Reads and checks the manifest of the plugin in `folder`.
pub fn read_manifest(folder: &Path) -> Result<Manifest, PluginError> {
    let path = folder.join(MANIFEST);
    let value = match read_json(&path)? {
        Some(value) => value,
        None => return Err(PluginError::NoManifest { folder: folder.to_owned() }),
    };
    let invalid = |message: String| PluginError::Invalid { path: path.clone(), message };
    let text = |key: &str| value.get(key).and_then(serde_json::Value::as_str).map(str::to_owned);
    let name = text("name").ok_or_else(|| invalid("it has no `name`".to_owned()))?;
    if !valid_plugin_name(&name) {
        return Err(PluginError::BadName { name });
    }
    let paths = |key: &str| -> Result<Vec<String>, PluginError> {
        let list = match value.get(key) {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::String(one)) => vec![one.clone()],
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| invalid(format!("`{key}` must be a path or a list of paths")))?,
            Some(_) => return Err(invalid(format!("`{key}` must be a path or a list of paths"))),
        };
        list.iter().try_for_each(|path| inside(path))?;
        Ok(list)
    };
    let component = |key: &str| -> Result<Option<ComponentSource>, PluginError> {
        match value.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::String(file)) => {
                inside(file)?;
                Ok(Some(ComponentSource::File(file.clone())))
            }
            Some(object @ serde_json::Value::Object(_)) => {
                Ok(Some(ComponentSource::Inline(object.clone())))
            }
            Some(_) => Err(invalid(format!("`{key}` must be a file path or an object"))),
        }
    };
    Ok(Manifest {
        version: text("version"),
        description: text("description"),
        commands: paths("commands")?,
        agents: paths("agents")?,
        skills: paths("skills")?,
        hooks: component("hooks")?,
        mcp_servers: component("mcpServers")?,
        name,
    })
}

/// Refuses a component path that is absolute or climbs out of the folder.
fn inside(path: &str) -> Result<(), PluginError> {
    let climbs = Path::new(path).components().any(|part| {
        matches!(part, Component::ParentDir | Component::RootDir | Component::Prefix(_))
    });
    if climbs || path.contains('\\') {
        return Err(PluginError::PathEscapes { path: path.to_owned() });
    }
    Ok(())
}

/// The installed plugins of `$KEEL_HOME`; an unreadable record or plugin is a problem line.
pub fn load_installed(keel_home: &Path) -> Plugins {
    let mut loaded = Plugins::default();
    let record = match read_record(keel_home) {
        Ok(record) => record,
        Err(error) => {
            loaded.problems.push(error.to_string());
            return loaded;
        }
    };
    for installed in record.plugins {
        let root = plugins_dir(keel_home).join(&installed.name);
        match read_manifest(&root) {
            Ok(manifest) if manifest.name == installed.name => {
                loaded.plugins.push(Plugin { installed, manifest, root })
            }
            Ok(manifest) => loaded.problems.push(format!(
                "plugin {} not loaded: its manifest now names it `{}`",
                installed.name, manifest.name
            )),
            Err(error) => {
                loaded.problems.push(format!("plugin {} not loaded: {error}", installed.name))
            }
        }
    }
    loaded
}

pub(super) fn read_record(keel_home: &Path) -> Result<Record, PluginError> {
    let path = plugins_dir(keel_home).join(RECORD);
    match read_json(&path)? {
        None => Ok(Record::default()),
        Some(value) => serde_json::from_value(value)
            .map_err(|error| PluginError::Invalid { path, message: error.to_string() }),
    }
}

/// The JSON file at `path`, `None` if there is none.
fn read_json(path: &Path) -> Result<Option<serde_json::Value>, PluginError> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(PluginError::Read { path: path.to_owned(), source }),
    };
    let mut text = String::new();
    file.take(MAX_JSON_BYTES)
        .read_to_string(&mut text)
        .map_err(|source| PluginError::Read { path: path.to_owned(), source })?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|error| PluginError::Invalid { path: path.to_owned(), message: error.to_string() })
}

impl Plugin {
    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The default folder `default` and the manifest's extra ones, those that
    /// stay inside the installed folder once symlinks are resolved.
    fn folders(&self, default: &str, extra: &[String]) -> Vec<PathBuf> {
        let mut folders = vec![self.root.join(default)];
        folders.extend(extra.iter().map(|path| self.root.join(path)));
        folders.dedup();
        folders.into_iter().filter(|folder| self.contains(folder)).collect()
    }

    /// Whether `path` (if it exists) resolves inside the installed folder.
    fn contains(&self, path: &Path) -> bool {
        match (path.canonicalize(), self.root.canonicalize()) {
            (Ok(path), Ok(root)) => path.starts_with(root),
            (Err(_), _) => true,
            (Ok(_), Err(_)) => false,
        }
    }

    /// `${CLAUDE_PLUGIN_ROOT}` in every string of `value` becomes the folder.
    fn expand_root(&self, value: &mut serde_json::Value) {
        let root = self.root.display().to_string();
        match value {
            serde_json::Value::String(text) => {
                *text = text
                    .replace(&format!("${{{ROOT_VARIABLE}}}"), &root)
                    .replace(&format!("${ROOT_VARIABLE}"), &root);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.expand_root(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.expand_root(v)),
            serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
            }
        }
    }

    /// The JSON of a `hooks`/`mcpServers` component (`default` file when the
    /// manifest names none), or `None` when the plugin has none.
    fn component(
        &self,
        named: Option<&ComponentSource>,
        default: &str,
    ) -> Result<Option<serde_json::Value>, PluginError> {
        match named {
            Some(ComponentSource::Inline(value)) => Ok(Some(value.clone())),
            Some(ComponentSource::File(file)) => self.file(file),
            None => self.file(default),
        }
    }

    fn file(&self, file: &str) -> Result<Option<serde_json::Value>, PluginError> {
        let path = self.root.join(file);
        if !self.contains(&path) {
            return Err(PluginError::PathEscapes { path: file.to_owned() });
        }
        read_json(&path)
    }

    /// The `hooks` object (Claude's shape), `${CLAUDE_PLUGIN_ROOT}` expanded.
    pub fn hooks(&self) -> Result<Option<serde_json::Value>, PluginError> {
        let Some(mut value) = self.component(self.manifest.hooks.as_ref(), "hooks/hooks.json")?
        else {
            return Ok(None);
        };
        // hooks.json wraps the events in `hooks` (beside a `description`).
        if let Some(inner) = value.get_mut("hooks").map(serde_json::Value::take) {
            value = inner;
        }
        self.expand_root(&mut value);
        self.export_root(&mut value);
        Ok(Some(value))
    }

    /// Each hook command starts by exporting `CLAUDE_PLUGIN_ROOT`, as Claude
    /// Code sets it: published hook scripts read it from their environment.
    fn export_root(&self, hooks: &mut serde_json::Value) {
        let quoted = self.root.display().to_string().replace('\'', "'\\''");
        let export = format!("export {ROOT_VARIABLE}='{quoted}'\n");
        let groups = hooks.as_object_mut().into_iter().flat_map(|events| events.values_mut());
        let groups = groups.filter_map(serde_json::Value::as_array_mut).flatten();
        let entries = groups.filter_map(|group| group.get_mut("hooks")?.as_array_mut()).flatten();
        for command in entries.filter_map(|entry| entry.get_mut("command")) {
            if let serde_json::Value::String(text) = command {
                text.insert_str(0, &export);
            }
        }
    }

    /// A `.mcp.json` text (`{"mcpServers": …}`), `${CLAUDE_PLUGIN_ROOT}` expanded.
    pub fn mcp_json(&self) -> Result<Option<String>, PluginError> {
        let Some(mut value) = self.component(self.manifest.mcp_servers.as_ref(), ".mcp.json")?
        else {
            return Ok(None);
        };
        if let Some(inner) = value.get_mut("mcpServers").map(serde_json::Value::take) {
            value = inner;
        }
        self.expand_root(&mut value);
        // A stdio server is given the variable too (its own code may read it).
        let root = serde_json::Value::String(self.root.display().to_string());
        let servers = value.as_object_mut().into_iter().flat_map(|servers| servers.values_mut());
        for server in servers.filter_map(serde_json::Value::as_object_mut) {
            if server.contains_key("command") {
                let env = server.entry("env").or_insert_with(|| serde_json::json!({}));
                if let Some(env) = env.as_object_mut() {
                    env.entry(ROOT_VARIABLE).or_insert_with(|| root.clone());
                }
            }
        }
        Ok(Some(serde_json::json!({ "mcpServers": value }).to_string()))
    }
}

impl Plugins {
    /// Command folders with the namespace their commands take.
    pub fn command_roots(&self) -> Vec<(PathBuf, String)> {
        self.plugins
            .iter()
            .flat_map(|plugin| {
                let folders = plugin.folders("commands", &plugin.manifest.commands);
                folders.into_iter().map(|folder| (folder, plugin.name().to_owned()))
            })
            .collect()
    }

    /// Agent folders (the user's own: no trust needed), each with its
    /// plugin's name (its types are `plugin:type`).
    pub fn agent_roots(&self) -> Vec<(PathBuf, String)> {
        self.named_folders(|plugin| plugin.folders("agents", &plugin.manifest.agents))
    }

    /// Skill folders (each holding `NAME/SKILL.md`), each with its plugin's
    /// name (its skills are `plugin:skill`).
    pub fn skill_roots(&self) -> Vec<(PathBuf, String)> {
        self.named_folders(|plugin| plugin.folders("skills", &plugin.manifest.skills))
    }

    fn named_folders(&self, folders: impl Fn(&Plugin) -> Vec<PathBuf>) -> Vec<(PathBuf, String)> {
        self.plugins
            .iter()
            .flat_map(|plugin| {
                let name = plugin.name().to_owned();
                folders(plugin).into_iter().map(move |folder| (folder, name.clone()))
            })
            .collect()
    }

    /// Each plugin's name, version and what it brings, for `keel doctor`.
    pub fn summary(&self) -> BTreeMap<String, String> {
        self.plugins
            .iter()
            .map(|plugin| {
                let version = plugin.installed.version.as_deref().unwrap_or("no version");
                let line = format!(
                    "{version}, from {}, in {}",
                    plugin.installed.source,
                    plugin.root.display()
                );
                (plugin.name().to_owned(), line)
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "plugins_tests.rs"]
mod tests;
