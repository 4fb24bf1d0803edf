//! Installed plugins' hooks, MCP servers and commands joined to keel's own
//! loaders (`plugins.rs` says where each part is). Each part joins as the
//! user's own (user trust) and never loosens anything: a hook is a user
//! hook in Claude's shape, a server goes through the `.mcp.json` reader
//! (credential variables refused as for a project's file), is listed as
//! the plugin's (`McpOrigin::Plugin`) and never replaces a server the user
//! configured, a command never replaces the
//! user's command of the same name (the plugin's is `/plugin:name`), and
//! its agent types are `plugin:type` (its skills `plugin:skill`, named in
//! `skills::discover_namespaced`), as Claude Code names them.
//!
//! Invariants: a part that cannot be read is one line in the warnings,
//! never an error; `${CLAUDE_PLUGIN_ROOT}` was expanded by `plugins.rs`
//! before anything here parses the part.

use super::Environment;
use super::agents::{AgentCatalog, AgentSource, definition};
use super::commands::{CommandCatalog, load};
use super::markdown_file::{DefinitionProblem, MarkdownFile, markdown_files};
use super::mcp::{McpEntry, McpOrigin, McpSources};
use super::mcp_import::{JsonOwner, parse_mcp_json};
use super::plugins::Plugins;
use crate::hooks::{HookSource, HooksConfig};
use crate::sandbox::EnvFilter;

/// Appends each plugin's hooks (a user source named `plugin NAME`).
pub(super) fn add_hooks(
    plugins: &Plugins,
    hooks: &mut Vec<HooksConfig>,
    warnings: &mut Vec<String>,
) {
    for plugin in &plugins.plugins {
        let name = format!("plugin {}", plugin.name());
        let json = match plugin.hooks() {
            Ok(Some(json)) => json,
            Ok(None) => continue,
            Err(error) => {
                warnings.push(format!("hooks of {name} not loaded: {error}"));
                continue;
            }
        };
        match HooksConfig::from_json(HookSource::User { name: name.clone(), claude: true }, &json) {
            Ok(config) => {
                if !config.skipped.is_empty() {
                    warnings
                        .push(format!("hooks in {name} skipped: {}", config.skipped.describe()));
                }
                hooks.push(config);
            }
            Err(error) => warnings.push(format!("hooks of {name} not loaded: {error}")),
        }
    }
}

/// Adds each plugin's MCP servers after the user's (a name the user already
/// configured keeps the user's entry; a refused entry is listed as skipped);
/// returns what will not start, for the start-up warnings.
pub(super) fn add_servers(
    env: &Environment,
    plugins: &Plugins,
    sources: &mut McpSources,
    strip: &EnvFilter,
) -> Vec<String> {
    let mut notes = Vec::new();
    for plugin in &plugins.plugins {
        let label = format!("plugin {}", plugin.name());
        let text = match plugin.mcp_json() {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(error) => {
                notes.push(format!("MCP servers of {label} not loaded: {error}"));
                continue;
            }
        };
        let entries = match parse_mcp_json(&text, &label, &env.vars, JsonOwner::Plugin(strip)) {
            Ok(entries) => entries,
            Err(reason) => {
                notes.push(format!("MCP servers of {label} not loaded: {reason}"));
                continue;
            }
        };
        for (server, file) in entries {
            match &file {
                Ok(_) if sources.user.contains_key(&server) => notes.push(format!(
                    "MCP server `{server}` of {label} not started: your config has a server of \
                     that name"
                )),
                Ok(_) => {}
                Err(reason) => {
                    notes.push(format!("MCP server `{server}` of {label} not started: {reason}"))
                }
            }
            let origin = McpOrigin::Plugin(plugin.name().to_owned());
            sources.plugins.push(McpEntry { name: server, origin, file });
        }
    }
    notes
}

/// Adds each plugin's commands, namespaced `plugin:name` (and `plugin:sub:name`
/// for subfolders); the bare `/name` finds the user's own command first.
pub fn add_commands(plugins: &Plugins, catalog: &mut CommandCatalog) {
    for (root, plugin) in plugins.command_roots() {
        for path in markdown_files(&root, 2) {
            match load(&root, &path, false) {
                Ok(mut command) => {
                    let namespace = match command.namespace.take() {
                        Some(sub) => format!("{plugin}:{sub}"),
                        None => plugin.clone(),
                    };
                    command.namespace = Some(namespace);
                    let taken = catalog.commands.iter().any(|known| {
                        known.name == command.name && known.namespace == command.namespace
                    });
                    if !taken {
                        catalog.commands.push(command);
                    }
                }
                Err(error) => catalog.problems.push(DefinitionProblem { path, error }),
            }
        }
    }
    // Stable: a user's command stays ahead of a plugin's of the same name.
    catalog.commands.sort_by(|a, b| a.name.cmp(&b.name));
}

/// Adds each plugin's agent types as `plugin:type` (Claude Code's name for
/// them): a plugin's `review` neither replaces the built-in read-only
/// `review` nor the user's own type, and two plugins' types both stay.
pub fn add_agents(plugins: &Plugins, catalog: &mut AgentCatalog) {
    for (root, plugin) in plugins.agent_roots() {
        for path in markdown_files(&root, 1) {
            let loaded = MarkdownFile::read(&path)
                .and_then(|file| definition(&file, AgentSource::File(path.clone())));
            match loaded {
                Ok(mut agent) => {
                    agent.name = format!("{plugin}:{}", agent.name);
                    if !catalog.agents.iter().any(|known| known.name == agent.name) {
                        catalog.agents.push(agent);
                    }
                }
                Err(error) => catalog.problems.push(DefinitionProblem { path, error }),
            }
        }
    }
    catalog.agents.sort_by(|a, b| a.name.cmp(&b.name));
}
