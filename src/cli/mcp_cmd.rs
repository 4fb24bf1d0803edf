//! `keel mcp list|get|add|remove` (like `claude mcp` and `codex mcp`).
//!
//! `list` and `get` start every configured server the way a session would
//! (trusted project's servers only; each waited for at most its startup
//! timeout), print its status and tools, and stop it. JSON contract
//! (DESIGN §1): `keel mcp list --json` prints an array of servers, each
//! `{"name","status","transport","origin","error","log","protocol_version",
//! "warnings","trust_read_only_hint","tools":[{"name","tool","description","read_only",
//! "claims_read_only"}]}` (`read_only`: run as a read, the server's claim
//! trusted; `trust_read_only_hint` is null for a skipped server) (`status`: `ready`,
//! `failed`, `starting` (slower than its startup timeout), `skipped`).
//! `add` and `remove` edit `[mcp_servers.NAME]` in `$KEEL_HOME/config.toml`.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::config::mcp::McpServerFile;
use crate::config::mcp_edit::{add_server, remove_server};
use crate::config::{CliOverrides, Environment, load_mcp};
use crate::display::for_terminal;
use crate::exec::ExitStatus;
use crate::mcp::{McpHub, McpToolDef, ServerStatus};

#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    pub command: McpCommand,
}

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Start every configured server, print its status and tools, stop it.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One server's configuration, status and tools.
    Get {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Add a server to ~/.keel/config.toml: `keel mcp add NAME -- COMMAND
    /// ARGS…` (stdio) or `keel mcp add NAME --url URL` (streamable HTTP).
    Add(AddArgs),
    /// Remove a server from ~/.keel/config.toml.
    Remove { name: String },
}

#[derive(Debug, Args)]
pub struct AddArgs {
    pub name: String,
    /// A streamable HTTP server's endpoint (instead of a command).
    #[arg(long, conflicts_with = "command")]
    pub url: Option<String>,
    /// The variable holding the bearer token sent to --url.
    #[arg(long, requires = "url", value_name = "VAR")]
    pub bearer_token_env_var: Option<String>,
    /// A header sent to --url, `Name: value` (repeatable).
    #[arg(long = "header", requires = "url", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// A variable set for a stdio server, KEY=VALUE (repeatable).
    #[arg(long = "env", short = 'e', value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Where a stdio server starts (default: the workspace root).
    #[arg(long)]
    pub cwd: Option<String>,
    #[arg(long, value_name = "SECONDS")]
    pub startup_timeout_sec: Option<f64>,
    #[arg(long, value_name = "SECONDS")]
    pub tool_timeout_sec: Option<f64>,
    /// Run the tools the server marks `readOnlyHint` as reads (no approval,
    /// allowed in plan and explore): only for a server you trust.
    #[arg(long)]
    pub trust_read_only_hint: bool,
    /// The stdio server's command and arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

pub(super) async fn run(overrides: CliOverrides, args: McpArgs) -> anyhow::Result<ExitStatus> {
    let env = Environment::from_process()?;
    match args.command {
        McpCommand::List { json } => list(&env, &overrides, None, json).await,
        McpCommand::Get { name, json } => list(&env, &overrides, Some(name), json).await,
        McpCommand::Add(add) => {
            let path = env.keel_home.join("config.toml");
            let name = add.name.clone();
            add_server(&path, &name, &server_file(add)?)?;
            writeln!(std::io::stdout().lock(), "added MCP server `{name}` to {}", path.display())?;
            Ok(ExitStatus::Done)
        }
        McpCommand::Remove { name } => {
            let path = env.keel_home.join("config.toml");
            remove_server(&path, &name)?;
            writeln!(
                std::io::stdout().lock(),
                "removed MCP server `{name}` from {}",
                path.display()
            )?;
            Ok(ExitStatus::Done)
        }
    }
}

fn server_file(add: AddArgs) -> anyhow::Result<McpServerFile> {
    let env: BTreeMap<String, String> = add
        .env
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .map(|(key, value)| (key.to_owned(), value.to_owned()))
                .with_context(|| format!("--env {pair}: expected KEY=VALUE"))
        })
        .collect::<anyhow::Result<_>>()?;
    let headers: BTreeMap<String, String> = add
        .headers
        .iter()
        .map(|pair| {
            pair.split_once(':')
                .map(|(key, value)| (key.trim().to_owned(), value.trim().to_owned()))
                .with_context(|| format!("--header {pair}: expected `Name: value`"))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut command = add.command.into_iter();
    let program = command.next();
    if program.is_none() && add.url.is_none() {
        anyhow::bail!("give the server's command after `--`, or --url for an HTTP server");
    }
    let args: Vec<String> = command.collect();
    Ok(McpServerFile {
        command: program,
        args: (!args.is_empty()).then_some(args),
        env: (!env.is_empty()).then_some(env),
        cwd: add.cwd,
        url: add.url,
        bearer_token_env_var: add.bearer_token_env_var,
        http_headers: (!headers.is_empty()).then_some(headers),
        startup_timeout_sec: add.startup_timeout_sec,
        tool_timeout_sec: add.tool_timeout_sec,
        trust_read_only_hint: add.trust_read_only_hint.then_some(true),
        ..McpServerFile::default()
    })
}

async fn list(
    env: &Environment,
    overrides: &CliOverrides,
    only: Option<String>,
    json: bool,
) -> anyhow::Result<ExitStatus> {
    let mut settings = load_mcp(env, overrides)?;
    if let Some(name) = &only {
        settings.servers.retain(|server| &server.name == name);
        settings.skipped.retain(|server| &server.name == name);
        if settings.servers.is_empty() && settings.skipped.is_empty() {
            anyhow::bail!(
                "no MCP server named `{name}` is configured (`keel mcp list` lists them)"
            );
        }
    }
    let workspace_root = crate::config::find_workspace_root(&env.cwd);
    let log_dir = crate::runtime::mcp_log_dir(&env.keel_home, "cli");
    // No session's `[shell]` here: the built-in filter.
    let env_filter = crate::sandbox::EnvFilter::default();
    let hub = McpHub::start(&settings, &workspace_root, &env_filter, &log_dir);
    hub.wait_started().await;
    let defs = hub.tool_defs();
    let statuses = hub.statuses();
    let trusted: BTreeMap<String, bool> = (settings.servers.iter())
        .map(|server| (server.name.clone(), server.trust_read_only_hint))
        .collect();
    hub.shutdown().await;
    let mut out = std::io::stdout().lock();
    if json {
        let servers: Vec<Value> =
            statuses.iter().map(|status| status_json(status, &defs, &trusted)).collect();
        let value = match only {
            Some(_) => servers.into_iter().next().unwrap_or(Value::Null),
            None => Value::Array(servers),
        };
        writeln!(out, "{value}")?;
        return Ok(ExitStatus::Done);
    }
    if statuses.is_empty() {
        writeln!(
            out,
            "no MCP servers configured: `keel mcp add NAME -- COMMAND ARGS…`, a trusted \
             project's .mcp.json, ~/.claude.json or ~/.codex/config.toml"
        )?;
    }
    for status in &statuses {
        write_status(&mut out, status, &defs, trusted.get(&status.server).copied())?;
    }
    Ok(ExitStatus::Done)
}

fn status_json(
    status: &ServerStatus,
    defs: &[McpToolDef],
    trusted: &BTreeMap<String, bool>,
) -> Value {
    let tools: Vec<Value> = defs
        .iter()
        .filter(|def| def.server == status.server)
        .map(|def| {
            json!({"name": def.name, "tool": def.remote, "description": def.description,
                "read_only": def.read_only, "claims_read_only": def.claims_read_only})
        })
        .collect();
    json!({"name": status.server, "status": status.status, "transport": status.transport,
        "origin": status.origin, "error": status.error, "log": status.log,
        "protocol_version": status.protocol_version, "warnings": status.warnings,
        "trust_read_only_hint": trusted.get(&status.server), "tools": tools})
}

fn write_status(
    out: &mut impl Write,
    status: &ServerStatus,
    defs: &[McpToolDef],
    trust_read_only_hint: Option<bool>,
) -> std::io::Result<()> {
    write!(
        out,
        "{}  {}  {}  ({})",
        status.server,
        status.status.as_str(),
        status.transport,
        status.origin
    )?;
    // A server's words (its errors, its tools' descriptions) are
    // untrusted text on the user's terminal.
    // One line per failure: what failed, and where the server's stderr is.
    if let Some(error) = &status.error {
        write!(out, "\n  {}", for_terminal(error))?;
        if let Some(log) = &status.log {
            write!(out, " (stderr log: {})", log.display())?;
        }
    }
    for warning in &status.warnings {
        write!(out, "\n  warning: {}", for_terminal(warning))?;
    }
    writeln!(out)?;
    let tools: Vec<&McpToolDef> = defs.iter().filter(|def| def.server == status.server).collect();
    match trust_read_only_hint {
        Some(true) => {
            writeln!(out, "  trust_read_only_hint = true: its read-only claims are trusted")?
        }
        Some(false) if tools.iter().any(|def| def.claims_read_only) => writeln!(
            out,
            "  trust_read_only_hint = false: its tools' read-only claims are not trusted (they \
             ask, and plan/explore refuse them; set it in [mcp_servers.{}] to run them as reads)",
            status.server
        )?,
        Some(false) | None => {}
    }
    for def in tools {
        let access = match (def.read_only, def.claims_read_only) {
            (true, _) => "read-only",
            (false, true) => "may change things; claims read-only",
            (false, false) => "may change things",
        };
        let about = for_terminal(&def.description);
        let about = about.lines().next().unwrap_or_default();
        writeln!(out, "  {}  ({access})  {about}", def.name)?;
    }
    Ok(())
}
