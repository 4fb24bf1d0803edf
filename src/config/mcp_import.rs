//! MCP servers written for other agents, read as `[mcp_servers]` tables:
//! `.mcp.json` (Claude Code's shape, a project's or a plugin's),
//! `~/.claude.json` (Claude Code's user scope, top-level `mcpServers`, and
//! its local scope, `projects[<this workspace>].mcpServers`) and Codex's
//! `config.toml` (`$CODEX_HOME`, else `~/.codex`; only its `mcp_servers`
//! table: the rest is Codex's and ignored).
//!
//! Invariants: a file that cannot be read or parsed is one `*` entry with
//! the reason, never an error; one bad server is that server's reason,
//! never the file's (`.mcp.json` excepted: a project's file is all or
//! nothing, as before). `${VAR}` and `${VAR:-default}` expand in the JSON
//! shapes (Claude Code's syntax), from keel's environment; a project's or
//! a plugin's entry may not name a variable keel strips from its children
//! ([`JsonOwner`]), the user's own files may. Each foreign user file is
//! read once per load (session start), never per step.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::mcp::{McpOrigin, McpServerFile};
use crate::sandbox::EnvFilter;

/// Bytes of `.mcp.json` keel reads at most (a config file, not data).
const MAX_MCP_JSON_BYTES: u64 = 1024 * 1024;
/// Bytes of `~/.claude.json` read at most: it holds Claude Code's history
/// too, megabytes for a long-time user.
const MAX_CLAUDE_JSON_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes of Codex's `config.toml` read at most.
const MAX_CODEX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// Server entries as read, by name; an entry keel cannot use is its reason.
pub(super) type JsonEntries = Vec<(String, Result<McpServerFile, String>)>;

/// One server entry from a file, with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct McpEntry {
    pub name: String,
    pub origin: McpOrigin,
    /// `Err`: why the entry is skipped.
    pub file: Result<McpServerFile, String>,
}

/// Whose `.mcp.json`-shaped servers these are, which decides what they may
/// read from keel's environment.
#[derive(Debug, Clone, Copy)]
pub enum JsonOwner<'a> {
    /// A project's file: no variable `EnvFilter::strips`.
    Project(&'a EnvFilter),
    /// An installed plugin's: the same rule, said as a plugin's.
    Plugin(&'a EnvFilter),
    /// The user's own file (`~/.claude.json`): any variable.
    User,
}

impl JsonOwner<'_> {
    /// Why the entry is refused, if it reads a stripped variable `var`.
    fn refuses(&self, var: &str) -> Option<String> {
        let (filter, whose) = match self {
            JsonOwner::Project(filter) => (filter, "a project's"),
            JsonOwner::Plugin(filter) => (filter, "a plugin's"),
            JsonOwner::User => return None,
        };
        filter.strips(var).then(|| credential_reason(var, whose))
    }
}

/// Why an entry of `whose` ("a project's") that reads a credential
/// variable is skipped.
pub(super) fn credential_reason(var: &str, whose: &str) -> String {
    format!(
        "it reads ${var}, a credential variable keel keeps from every child process; {whose} \
         server may not take one from keel's environment (configure the server in your own \
         config, ~/.keel/config.toml, to give it one)"
    )
}

/// Claude Code's `.mcp.json`: `{"mcpServers": {NAME: {...}}}`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpJson {
    #[serde(default)]
    mcp_servers: BTreeMap<String, McpJsonServer>,
}

#[derive(Debug, Deserialize)]
struct McpJsonServer {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// The text of the file at `path`, at most `max` bytes (`None` if there is
/// no file).
fn read_capped(path: &Path, max: u64) -> Result<Option<String>, String> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(format!("cannot read {}: {error}", path.display())),
    };
    let mut text = String::new();
    file.take(max)
        .read_to_string(&mut text)
        .map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    Ok(Some(text))
}

/// The servers of the `.mcp.json` at `path` (none if there is no file), as
/// [`parse_mcp_json`] reads them. An unreadable or malformed file is the `Err`.
pub(super) fn read_mcp_json(
    path: &Path,
    vars: &BTreeMap<String, String>,
    owner: JsonOwner<'_>,
) -> Result<JsonEntries, String> {
    match read_capped(path, MAX_MCP_JSON_BYTES)? {
        Some(text) => parse_mcp_json(&text, &path.display().to_string(), vars, owner),
        None => Ok(Vec::new()),
    }
}

/// The servers of a `.mcp.json` text (`label` names it in messages), as
/// `[mcp_servers]` tables with `${VAR}` and `${VAR:-default}` expanded from
/// keel's environment; a plugin's servers come through here too.
pub(super) fn parse_mcp_json(
    text: &str,
    label: &str,
    vars: &BTreeMap<String, String>,
    owner: JsonOwner<'_>,
) -> Result<JsonEntries, String> {
    let parsed: McpJson =
        serde_json::from_str(text).map_err(|error| format!("{label} is not valid: {error}"))?;
    Ok(parsed
        .mcp_servers
        .into_iter()
        .map(|(name, server)| (name, json_server_file(server, vars, owner)))
        .collect())
}

fn json_server_file(
    server: McpJsonServer,
    vars: &BTreeMap<String, String>,
    owner: JsonOwner<'_>,
) -> Result<McpServerFile, String> {
    let texts = (server.command.iter().chain(&server.args).chain(server.url.iter()))
        .chain(server.env.values())
        .chain(server.headers.values());
    if let Some(reason) = texts.flat_map(|text| var_names(text)).find_map(|var| owner.refuses(var))
    {
        return Err(reason);
    }
    // `sse` is the legacy HTTP+SSE transport (`mcp::legacy_sse`).
    if let Some(kind) =
        server.kind.as_deref().filter(|kind| !matches!(*kind, "stdio" | "http" | "sse"))
    {
        return Err(format!(
            "transport type `{kind}` is not supported (use `stdio`, `http`, the streamable HTTP \
             transport, or `sse`, the legacy one)"
        ));
    }
    let transport = (server.kind.as_deref() == Some("sse")).then(|| "sse".to_owned());
    let expand = |text: &str| expand_vars(text, vars);
    let map = |values: BTreeMap<String, String>| -> Option<BTreeMap<String, String>> {
        (!values.is_empty())
            .then(|| values.into_iter().map(|(key, value)| (key, expand(&value))).collect())
    };
    Ok(McpServerFile {
        command: server.command.as_deref().map(expand),
        args: (!server.args.is_empty()).then(|| server.args.iter().map(|a| expand(a)).collect()),
        env: map(server.env),
        url: server.url.as_deref().map(expand),
        transport,
        http_headers: map(server.headers),
        ..McpServerFile::default()
    })
}

/// `~/.claude.json`, only what keel reads: the rest (history, tips, each
/// project's settings) is skipped by serde without being kept.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeJson {
    #[serde(default)]
    mcp_servers: Option<serde_json::Value>,
    #[serde(default)]
    projects: BTreeMap<String, ClaudeProject>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ClaudeProject {
    #[serde(default)]
    mcp_servers: Option<serde_json::Value>,
}

/// The servers of `~/.claude.json` at `path`: the local scope of
/// `workspace_root` first (Claude Code's own precedence), then the user scope.
pub(super) fn claude_json_entries(
    path: &Path,
    workspace_root: &Path,
    vars: &BTreeMap<String, String>,
) -> Vec<McpEntry> {
    let user = McpOrigin::ClaudeJson(path.to_owned());
    let text = match read_capped(path, MAX_CLAUDE_JSON_BYTES + 1) {
        Ok(Some(text)) if text.len() as u64 > MAX_CLAUDE_JSON_BYTES => {
            let reason = format!(
                "{} is larger than {} MiB; its servers are not read",
                path.display(),
                MAX_CLAUDE_JSON_BYTES / (1024 * 1024)
            );
            return vec![whole_file(user, reason)];
        }
        Ok(Some(text)) => text,
        Ok(None) => return Vec::new(),
        Err(reason) => return vec![whole_file(user, reason)],
    };
    let parsed: ClaudeJson = match serde_json::from_str(&text) {
        Ok(parsed) => parsed,
        Err(error) => {
            return vec![whole_file(user, format!("{} is not valid: {error}", path.display()))];
        }
    };
    let local = (parsed.projects.into_iter())
        .find(|(project, _)| Path::new(project) == workspace_root)
        .and_then(|(_, project)| project.mcp_servers);
    let mut entries = Vec::new();
    if let Some(servers) = local {
        let origin = McpOrigin::ClaudeLocal(path.to_owned());
        entries.extend(json_value_entries(servers, origin, vars));
    }
    if let Some(servers) = parsed.mcp_servers {
        entries.extend(json_value_entries(servers, user, vars));
    }
    entries
}

/// One `mcpServers` object, server by server (a bad one is its reason).
fn json_value_entries(
    servers: serde_json::Value,
    origin: McpOrigin,
    vars: &BTreeMap<String, String>,
) -> Vec<McpEntry> {
    let serde_json::Value::Object(servers) = servers else {
        return vec![whole_file(origin, "`mcpServers` is not an object".to_owned())];
    };
    let sorted: BTreeMap<String, serde_json::Value> = servers.into_iter().collect();
    sorted
        .into_iter()
        .map(|(name, value)| {
            let file = serde_json::from_value::<McpJsonServer>(value)
                .map_err(|error| format!("its entry is not valid: {error}"))
                .and_then(|server| json_server_file(server, vars, JsonOwner::User));
            McpEntry { name, origin: origin.clone(), file }
        })
        .collect()
}

/// The `[mcp_servers]` of Codex's `config.toml` at `path`; every other key
/// of the file is Codex's and ignored.
pub(super) fn codex_config_entries(path: &Path) -> Vec<McpEntry> {
    let origin = McpOrigin::CodexConfig(path.to_owned());
    let text = match read_capped(path, MAX_CODEX_CONFIG_BYTES) {
        Ok(Some(text)) => text,
        Ok(None) => return Vec::new(),
        Err(reason) => return vec![whole_file(origin, reason)],
    };
    let mut table: toml::Table = match toml::from_str(&text) {
        Ok(table) => table,
        Err(error) => {
            let line = error
                .span()
                .and_then(|span| text.get(..span.start))
                .map(|before| before.lines().count().max(1));
            let at = line.map(|line| format!(" (line {line})")).unwrap_or_default();
            let reason =
                format!("{} is not valid TOML{at}: {}", path.display(), error.message().trim());
            return vec![whole_file(origin, reason)];
        }
    };
    let servers = match table.remove("mcp_servers") {
        None => return Vec::new(),
        Some(toml::Value::Table(servers)) => servers,
        Some(_) => return vec![whole_file(origin, "`mcp_servers` is not a table".to_owned())],
    };
    let sorted: BTreeMap<String, toml::Value> = servers.into_iter().collect();
    sorted
        .into_iter()
        .map(|(name, value)| {
            let file = value.try_into::<McpServerFile>().map_err(|error| {
                format!("its table is not one keel reads: {}", error.message().trim())
            });
            McpEntry { name, origin: origin.clone(), file }
        })
        .collect()
}

/// The one entry said for a file that cannot be read at all.
fn whole_file(origin: McpOrigin, reason: String) -> McpEntry {
    McpEntry { name: "*".to_owned(), origin, file: Err(reason) }
}

/// The names `${NAME}` / `${NAME:-default}` in `text`.
fn var_names(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let body = &after[..end];
        names.push(body.split_once(":-").map_or(body, |(name, _)| name));
        rest = &after[end + 1..];
    }
    names
}

/// Expands `${VAR}` and `${VAR:-default}` (Claude Code's `.mcp.json`
/// syntax); an unset variable without a default becomes empty.
pub fn expand_vars(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let body = &after[..end];
        let (name, default) = match body.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (body, None),
        };
        match (vars.get(name).filter(|value| !value.is_empty()), default) {
            (Some(value), _) => out.push_str(value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => {}
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
#[path = "mcp_import_tests.rs"]
mod tests;
