//! MCP server configuration in the shapes users already have:
//! `[mcp_servers.NAME]` tables (Codex's shape) in `$KEEL_HOME/config.toml`,
//! `-c`, and a trusted project's `.keel/config.toml`; a project's
//! `.mcp.json` (Claude Code's shape, `${VAR}` expansion included); installed
//! plugins' servers; and the user's own Claude Code and Codex servers
//! (`~/.claude.json`, Codex's `config.toml`: `mcp_import` reads those files).
//! Order, first entry of a name wins: keel's user config, plugins, the
//! trusted project's, then Claude's, then Codex's.
//!
//! Invariants: a project's servers (either file) are started only once the
//! project is trusted (`keel trust`), and only the definitions the user
//! trusted (`mcp_pin`); otherwise they are listed as skipped with the
//! reason, never started. A server whose entry cannot
//! work (no command and no url, both, a bad name, a missing bearer-token
//! variable) is skipped with a reason the user can act on; one bad entry
//! never stops the others or the session. Secrets (bearer tokens, env and
//! header values) never show in `Debug` output. A project's entry (either
//! file) may not read a variable keel strips from its children
//! (`EnvFilter::strips`: credential-looking names, the provider's key
//! variable, the user's `[shell] env_strip`; `env_keep` lets one through):
//! no `${VAR}` of one in `.mcp.json`, no `bearer_token_env_var` or
//! `env_http_headers` naming one; such an entry is skipped with the reason.
//! Only the user's own config gives a server a credential.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::Environment;
use super::mcp_import::{
    JsonOwner, claude_json_entries, codex_config_entries, credential_reason, read_mcp_json,
};
pub use super::mcp_import::{McpEntry, expand_vars};
pub use super::mcp_pin::{CHANGED_REASON, McpTrust};
use crate::sandbox::EnvFilter;

/// How long the first request waits for a server to start, by default.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one tool call may run, by default.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Why an untrusted project's server is not started.
pub const UNTRUSTED_REASON: &str =
    "the project is not trusted: run `keel trust` to start its servers";
/// The longest a server name may be: `mcp__NAME__TOOL` must stay well
/// within the providers' 64-character tool names.
pub const MAX_SERVER_NAME: usize = 24;

/// One `[mcp_servers.NAME]` table as written (Codex's keys).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerFile {
    /// A stdio server: the program to start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// Variables set for the server (kept even when named like secrets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    /// Where the server starts (default: the workspace root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A streamable HTTP server: its endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How `url` speaks MCP: `http` (streamable HTTP, the default) or
    /// `sse` (the legacy HTTP+SSE transport of MCP 2024-11-05).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<String>,
    /// The variable holding the bearer token sent to `url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env_var: Option<String>,
    /// Headers sent with every request to `url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_headers: Option<BTreeMap<String, String>>,
    /// Headers whose values come from environment variables (name → variable).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env_http_headers: Option<BTreeMap<String, String>>,
    /// `false` keeps the entry but never starts it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_timeout_sec: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_timeout_sec: Option<f64>,
    /// Only these tools are offered (default: all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled_tools: Option<Vec<String>>,
    /// `true` takes the server's `readOnlyHint` annotations at their word
    /// (such tools run like reads); by default every tool of the server
    /// counts as one that may change things.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_read_only_hint: Option<bool>,
    /// `true` takes the server's answers as trusted content: not fenced as
    /// data, no taint (issue 39). Only the user's config may say so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_content: Option<bool>,
}

impl McpServerFile {
    /// Every key `other` sets wins (so `-c mcp_servers.x.enabled=false`
    /// changes one key of the user's entry).
    pub fn overlay(&mut self, other: McpServerFile) {
        let McpServerFile {
            command,
            args,
            env,
            cwd,
            url,
            transport,
            bearer_token_env_var,
            http_headers,
            env_http_headers,
            enabled,
            startup_timeout_sec,
            tool_timeout_sec,
            enabled_tools,
            disabled_tools,
            trust_read_only_hint,
            trust_content,
        } = other;
        self.command = command.or(self.command.take());
        self.args = args.or(self.args.take());
        self.env = env.or(self.env.take());
        self.cwd = cwd.or(self.cwd.take());
        self.url = url.or(self.url.take());
        self.transport = transport.or(self.transport.take());
        self.bearer_token_env_var = bearer_token_env_var.or(self.bearer_token_env_var.take());
        self.http_headers = http_headers.or(self.http_headers.take());
        self.env_http_headers = env_http_headers.or(self.env_http_headers.take());
        self.enabled = enabled.or(self.enabled);
        self.startup_timeout_sec = startup_timeout_sec.or(self.startup_timeout_sec);
        self.tool_timeout_sec = tool_timeout_sec.or(self.tool_timeout_sec);
        self.enabled_tools = enabled_tools.or(self.enabled_tools.take());
        self.disabled_tools = disabled_tools.or(self.disabled_tools.take());
        self.trust_read_only_hint = trust_read_only_hint.or(self.trust_read_only_hint);
        self.trust_content = trust_content.or(self.trust_content);
    }
}

/// `[mcp_servers]` as written, by server name.
pub type McpServerTables = BTreeMap<String, McpServerFile>;

/// Overlays `other`'s servers on `mine`, key by key per server.
pub fn overlay_servers(mine: &mut Option<McpServerTables>, other: Option<McpServerTables>) {
    let Some(other) = other else { return };
    let mine = mine.get_or_insert_with(BTreeMap::new);
    for (name, file) in other {
        mine.entry(name).or_default().overlay(file);
    }
}

/// Where a server's entry was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum McpOrigin {
    /// `$KEEL_HOME/config.toml` or `-c`.
    User,
    /// The project's `.keel/config.toml`.
    ProjectConfig(PathBuf),
    /// The project's `.mcp.json`.
    McpJson(PathBuf),
    /// An installed plugin (by name): the user's, as they installed it.
    Plugin(String),
    /// `~/.claude.json`'s top-level `mcpServers` (Claude Code's user scope).
    ClaudeJson(PathBuf),
    /// `~/.claude.json`'s entry for this workspace (Claude Code's local
    /// scope, `claude mcp add --scope local`): still the user's own file.
    ClaudeLocal(PathBuf),
    /// Codex's `config.toml` (`$CODEX_HOME`, else `~/.codex`).
    CodexConfig(PathBuf),
}

impl McpOrigin {
    /// Whether the entry is the project's (waits for trust) rather than the user's.
    pub fn is_project(&self) -> bool {
        match self {
            McpOrigin::User
            | McpOrigin::Plugin(_)
            | McpOrigin::ClaudeJson(_)
            | McpOrigin::ClaudeLocal(_)
            | McpOrigin::CodexConfig(_) => false,
            McpOrigin::ProjectConfig(_) | McpOrigin::McpJson(_) => true,
        }
    }

    /// Where the entry lives, for messages.
    pub fn describe(&self) -> String {
        match self {
            McpOrigin::User => "user config".to_owned(),
            McpOrigin::Plugin(name) => format!("plugin {name}"),
            McpOrigin::ClaudeLocal(path) => format!("{}, local scope", path.display()),
            McpOrigin::ProjectConfig(path)
            | McpOrigin::McpJson(path)
            | McpOrigin::ClaudeJson(path)
            | McpOrigin::CodexConfig(path) => path.display().to_string(),
        }
    }
}

/// A value that must not show in logs or `Debug` output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(*****)")
    }
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq)]
pub enum McpTransport {
    /// A child process speaking JSON-RPC lines on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set for the child on top of the filtered environment.
        env: Vec<(String, Secret)>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint, or (`legacy_sse`) a legacy HTTP+SSE
    /// one (`mcp::legacy_sse`; keel also falls back to it on a 405).
    Http {
        url: String,
        bearer_token: Option<Secret>,
        headers: Vec<(String, Secret)>,
        legacy_sse: bool,
    },
}

/// One server keel will start, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerConfig {
    pub name: String,
    pub origin: McpOrigin,
    pub transport: McpTransport,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// `None`: every tool the server lists.
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    /// The user opted in to the server's `readOnlyHint` annotations
    /// (`trust_read_only_hint = true`); the MCP spec has clients treat
    /// annotations as untrusted unless the server is trusted.
    pub trust_read_only_hint: bool,
    /// The user marked the server's answers trusted (`trust_content =
    /// true` in the user's config; a project's entry cannot).
    pub trust_content: bool,
}

impl McpServerConfig {
    /// Whether the server's tool `tool` is offered.
    pub fn offers(&self, tool: &str) -> bool {
        self.enabled_tools.as_ref().is_none_or(|only| only.iter().any(|name| name == tool))
            && !self.disabled_tools.iter().any(|name| name == tool)
    }
}

/// A configured server keel does not start, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SkippedServer {
    pub name: String,
    pub origin: McpOrigin,
    pub reason: String,
    /// Skipped only because the project is not trusted (a clone's many
    /// servers are then said in one line, `McpHub::statuses`).
    #[serde(skip)]
    pub untrusted: bool,
}

/// Every configured server: those to start and those skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpSettings {
    pub servers: Vec<McpServerConfig>,
    pub skipped: Vec<SkippedServer>,
    /// Servers whose configured name is not a tool-name part (`@scope/x`,
    /// spaces, over [`MAX_SERVER_NAME`]): (as configured, as used).
    pub renamed: Vec<(String, String)>,
}

impl McpSettings {
    /// One line per renamed server, for the start-up warnings.
    pub fn rename_notes(&self) -> Vec<String> {
        self.renamed
            .iter()
            .map(|(configured, used)| {
                format!(
                    "MCP server `{configured}` is `{used}` in tool names (mcp__{used}__TOOL) and \
                     rules"
                )
            })
            .collect()
    }
}

/// The name a configured server goes by in tool names: the configured
/// name when it already is one ([`check_name`]), else its letters, digits,
/// `-` and single `_` (any other run of characters is one `_`), cut to
/// [`MAX_SERVER_NAME`] with a stable hash of the whole name when longer.
pub fn tool_name_part(name: &str) -> String {
    if check_name(name).is_ok() {
        return name.to_owned();
    }
    let mut part = String::new();
    for c in name.chars() {
        let keep = c.is_ascii_alphanumeric() || c == '-';
        if keep {
            part.push(c);
        } else if !part.ends_with('_') {
            part.push('_');
        }
    }
    let part = part.trim_matches(|c| c == '_' || c == '-');
    let part = if part.is_empty() { "server" } else { part };
    if part.len() <= MAX_SERVER_NAME {
        return part.to_owned();
    }
    // FNV-1a: stable across runs, so rules and logs keep meaning the server.
    let hash = name
        .bytes()
        .fold(0x811c_9dc5_u32, |hash, byte| (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193));
    let suffix = format!("_{hash:08x}");
    let kept: String = part.chars().take(MAX_SERVER_NAME - suffix.len()).collect();
    format!("{}{suffix}", kept.trim_end_matches('_'))
}

/// What the config layers hold for MCP, before trust and `.mcp.json`, and
/// where the user's files of other agents are.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpSources {
    /// The user file and `-c`, merged.
    pub user: McpServerTables,
    /// The installed plugins' servers (`plugin_parts::add_servers`).
    pub plugins: Vec<McpEntry>,
    /// The project's `.keel/config.toml` tables (used once trusted).
    pub project: McpServerTables,
    pub project_config_path: PathBuf,
    /// `~/.claude.json` (`None`: no `$HOME`).
    pub claude_json: Option<PathBuf>,
    /// Codex's `config.toml` (`None`: neither `$CODEX_HOME` nor `$HOME`).
    pub codex_config: Option<PathBuf>,
}

/// Resolves every configured server: the user's, the plugins', then a
/// trusted project's whose definitions are those the user trusted
/// (`.keel/config.toml`, then `.mcp.json`), then the user's Claude Code and
/// Codex ones (`mcp_import`); a name already taken keeps its first entry.
pub fn resolve_mcp(
    env: &Environment,
    sources: McpSources,
    workspace_root: &Path,
    trust: McpTrust,
    strip: &EnvFilter,
) -> McpSettings {
    let mut settings = McpSettings::default();
    for (name, file) in sources.user {
        settings.add(env, name, McpOrigin::User, file, workspace_root);
    }
    for entry in sources.plugins {
        settings.add_entry(env, entry, workspace_root);
    }
    let config_origin = McpOrigin::ProjectConfig(sources.project_config_path.clone());
    let mut project: Vec<(String, McpOrigin, Result<McpServerFile, String>)> = sources
        .project
        .into_iter()
        .map(|(name, file)| {
            let named = file
                .bearer_token_env_var
                .iter()
                .chain(file.env_http_headers.iter().flatten().map(|(_, var)| var));
            let file = match named.into_iter().find(|var| strip.strips(var)) {
                Some(var) => Err(credential_reason(var, "a project's")),
                None => Ok(file),
            };
            (name, config_origin.clone(), file)
        })
        .collect();
    let json_path = workspace_root.join(".mcp.json");
    let json_origin = McpOrigin::McpJson(json_path.clone());
    match read_mcp_json(&json_path, &env.vars, JsonOwner::Project(strip)) {
        Ok(servers) => project
            .extend(servers.into_iter().map(|(name, file)| (name, json_origin.clone(), file))),
        Err(reason) => settings.skip("*".to_owned(), json_origin, reason),
    }
    for (name, origin, file) in project {
        let waiting = match trust {
            McpTrust::Trusted => None,
            McpTrust::Untrusted => Some(UNTRUSTED_REASON),
            McpTrust::Changed => Some(CHANGED_REASON),
        };
        if let Some(reason) = waiting {
            let untrusted = trust == McpTrust::Untrusted;
            let reason = reason.to_owned();
            settings.skipped.push(SkippedServer { name, origin, reason, untrusted });
            continue;
        }
        match file {
            Ok(file) => settings.add(env, name, origin, file, workspace_root),
            Err(reason) => settings.skip(name, origin, reason),
        }
    }
    // The user's own files: no credential check (that is for a project's).
    let claude = sources.claude_json.iter();
    let foreign = (claude.flat_map(|path| claude_json_entries(path, workspace_root, &env.vars)))
        .chain(sources.codex_config.iter().flat_map(|path| codex_config_entries(path)));
    for entry in foreign {
        settings.add_entry(env, entry, workspace_root);
    }
    settings
}

impl McpSettings {
    /// Whether an earlier entry holds `name`. An untrusted project's entry
    /// does not: it is not in play, and a clone naming its servers like the
    /// user's (`github`) must not switch off the user's own Claude or Codex ones.
    fn taken(&self, name: &str) -> bool {
        self.servers.iter().any(|server| server.name == name)
            || self.skipped.iter().any(|server| server.name == name && !server.untrusted)
    }

    fn skip(&mut self, name: String, origin: McpOrigin, reason: String) {
        self.skipped.push(SkippedServer { name, origin, reason, untrusted: false });
    }

    /// Adds an entry read from a file, or skips it with its reason.
    fn add_entry(&mut self, env: &Environment, entry: McpEntry, root: &Path) {
        match entry.file {
            Ok(file) => self.add(env, entry.name, entry.origin, file, root),
            Err(reason) => self.skip(entry.name, entry.origin, reason),
        }
    }

    fn add(
        &mut self,
        env: &Environment,
        name: String,
        origin: McpOrigin,
        file: McpServerFile,
        root: &Path,
    ) {
        if let Some((configured, _)) = self.renamed.iter().find(|(_, used)| *used == name) {
            let reason = format!(
                "`{name}` is already the tool-name form of server `{configured}`; rename one of \
                 them"
            );
            self.skip(name, origin, reason);
            return;
        }
        if self.taken(&name) {
            let reason = format!("`{name}` is already configured; the first entry is used");
            self.skip(name, origin, reason);
            return;
        }
        let used = tool_name_part(&name);
        if used != name {
            if self.taken(&used) {
                let reason = format!(
                    "`{name}` would be `{used}` in tool names, which another server already is; \
                     rename one of them"
                );
                self.skip(name, origin, reason);
                return;
            }
            self.add(env, used.clone(), origin, file, root);
            self.renamed.push((name, used));
            return;
        }
        if file.enabled == Some(false) {
            self.skip(name, origin, "disabled (`enabled = false`)".to_owned());
            return;
        }
        match resolve_server(env, &name, origin.clone(), file, root) {
            Ok(server) => self.servers.push(server),
            Err(reason) => self.skip(name, origin, reason),
        }
    }
}

/// Checks one entry and resolves its variables.
fn resolve_server(
    env: &Environment,
    name: &str,
    origin: McpOrigin,
    file: McpServerFile,
    root: &Path,
) -> Result<McpServerConfig, String> {
    check_name(name)?;
    let origin_is_user = origin == McpOrigin::User;
    let transport = match (file.command, file.url) {
        (Some(_), Some(_)) => return Err("set either `command` or `url`, not both".to_owned()),
        (None, None) => {
            return Err("set `command` (a stdio server) or `url` (an HTTP server)".to_owned());
        }
        (Some(command), None) => {
            if file.bearer_token_env_var.is_some()
                || file.transport.is_some()
                || file.http_headers.is_some()
                || file.env_http_headers.is_some()
            {
                return Err(
                    "`transport`, `bearer_token_env_var` and the header keys need `url`".to_owned()
                );
            }
            McpTransport::Stdio {
                command,
                args: file.args.unwrap_or_default(),
                env: secrets(file.env.unwrap_or_default()),
                cwd: file.cwd.map(|dir| root.join(dir)),
            }
        }
        (None, Some(url)) => {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                // Not shown: it may carry a token (`?token=…`).
                return Err("`url` must start with http:// or https://".to_owned());
            }
            if file.args.is_some() || file.env.is_some() || file.cwd.is_some() {
                return Err("`args`, `env` and `cwd` are for stdio servers (`command`)".to_owned());
            }
            let bearer_token = match file.bearer_token_env_var {
                Some(var) => Some(Secret(
                    env.var(&var)
                        .ok_or_else(|| format!("${var} (bearer_token_env_var) is not set"))?
                        .to_owned(),
                )),
                None => None,
            };
            let mut headers = secrets(file.http_headers.unwrap_or_default());
            for (header, var) in file.env_http_headers.unwrap_or_default() {
                let value =
                    env.var(&var).ok_or_else(|| format!("${var} (header {header}) is not set"))?;
                headers.push((header, Secret(value.to_owned())));
            }
            let legacy_sse = match file.transport.as_deref() {
                None | Some("http" | "streamable_http") => false,
                Some("sse") => true,
                Some(other) => {
                    return Err(format!(
                        "`transport = \"{other}\"` is not one keel knows (`http`, the default, \
                         or `sse`, the legacy HTTP+SSE transport)"
                    ));
                }
            };
            McpTransport::Http { url, bearer_token, headers, legacy_sse }
        }
    };
    Ok(McpServerConfig {
        name: name.to_owned(),
        origin,
        transport,
        startup_timeout: seconds(file.startup_timeout_sec, "startup_timeout_sec")?
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT),
        tool_timeout: seconds(file.tool_timeout_sec, "tool_timeout_sec")?
            .unwrap_or(DEFAULT_TOOL_TIMEOUT),
        enabled_tools: file.enabled_tools,
        disabled_tools: file.disabled_tools.unwrap_or_default(),
        trust_read_only_hint: file.trust_read_only_hint.unwrap_or(false),
        trust_content: file.trust_content.unwrap_or(false) && origin_is_user,
    })
}

fn secrets(map: BTreeMap<String, String>) -> Vec<(String, Secret)> {
    map.into_iter().map(|(key, value)| (key, Secret(value))).collect()
}

fn seconds(value: Option<f64>, key: &str) -> Result<Option<Duration>, String> {
    match value {
        None => Ok(None),
        Some(secs) if secs.is_finite() && secs > 0.0 && secs <= 86_400.0 => {
            Ok(Some(Duration::from_secs_f64(secs)))
        }
        Some(secs) => Err(format!("{key} = {secs}: use seconds, more than 0 and at most 86400")),
    }
}

/// Server names become part of tool names (`mcp__NAME__TOOL`): letters,
/// digits, `_` and `-`, short, and no `__` (the separator).
pub fn check_name(name: &str) -> Result<(), String> {
    let valid_chars = name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if name.is_empty() || !valid_chars {
        return Err(format!(
            "server name `{name}` may use only letters, digits, `_` and `-` (it becomes part of \
             the tool names mcp__{name}__TOOL)"
        ));
    }
    if name.contains("__") {
        return Err(format!("server name `{name}` may not contain `__` (the tool-name separator)"));
    }
    if name.len() > MAX_SERVER_NAME {
        return Err(format!(
            "server name `{name}` is longer than {MAX_SERVER_NAME} characters (tool names are \
             limited to 64)"
        ));
    }
    Ok(())
}

#[cfg(test)]
#[path = "mcp_tests.rs"]
mod tests;
