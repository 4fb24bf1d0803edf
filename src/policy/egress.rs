//! Untrusted content and the calls that could carry data out of the
//! machine (issue 39). Once text from the web or from an MCP server the
//! user did not mark trusted is in the conversation ([`Taint`], kept by the
//! loop and rebuilt from the log's results), a call that could send data
//! out is judged again by [`tighten`]: with `[security] taint = "ask"`
//! (the default) an allowed one asks in every mode but yolo, with the
//! reason; `"strict"` forbids it in every mode; `"off"` changes nothing.
//!
//! What could send data out ([`outbound`]):
//! - a shell call, when commands have a network (`[sandbox] network` not
//!   `"off"`, or no enforced sandbox); with it off, a script that runs a
//!   networked program (`curl`, `wget`, `ssh`, `git push`, `pip install`,
//!   … [`NETWORKED`]), an interpreter's one-liner, or code keel cannot
//!   read (the allowlist proxy and host ports still reach out);
//! - `web_fetch` to a host none of the untrusted content came from (a
//!   query string carries data as well as a body does);
//! - an MCP tool of another server than the untrusted ones;
//! - writing to a background process, and a subagent that may run
//!   commands.
//!
//! Invariants: pure; never loosens a verdict (a forbidden call stays
//! forbidden, a prompt stays a prompt, with the reason added); the taint
//! only grows within a session (a summary may still carry the
//! instructions).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::engine::{CallFacts, Policy, Verdict};
use super::network::NetworkMode;
use super::shell::{Script, SimpleCommand, analyze_script_in};
use super::workdir::Dirs;
use super::{ApprovalMode, Decision};
use crate::protocol::tool_facts::{self, Operand, names, url_host};
use crate::protocol::{Origin, ToolClass, ToolInfo};

/// `[security] taint`: what happens to a call that could send data out
/// after untrusted content entered the conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaintMode {
    /// Such a call asks (every mode but yolo).
    #[default]
    Ask,
    /// Such a call is refused (every mode).
    Strict,
    /// Untrusted content changes nothing.
    Off,
}

impl TaintMode {
    pub const NAMES: &'static str = "\"ask\", \"strict\" or \"off\"";

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "ask" => Some(Self::Ask),
            "strict" => Some(Self::Strict),
            "off" => Some(Self::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Strict => "strict",
            Self::Off => "off",
        }
    }
}

/// What the policy knows about the ways out of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Egress {
    pub taint: TaintMode,
    /// What the model's commands reach (`[sandbox] network`).
    pub network: NetworkMode,
}

/// Where the untrusted content in the conversation came from: `web:HOST`
/// and `mcp:SERVER` sources, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taint {
    pub sources: BTreeSet<String>,
}

impl Taint {
    /// Counts a result's origin (untrusted ones only).
    pub fn observe(&mut self, origin: &Origin) {
        if let Some(source) = origin.untrusted_source() {
            self.sources.insert(source);
        }
    }

    pub fn is_tainted(&self) -> bool {
        !self.sources.is_empty()
    }

    fn has(&self, kind: &str, name: &str) -> bool {
        self.sources.contains(&format!("{kind}:{name}"))
    }

    fn listed(&self) -> String {
        self.sources.iter().cloned().collect::<Vec<_>>().join(", ")
    }
}

/// Programs that reach the network whatever their arguments.
pub const NETWORKED: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat", "socat", "telnet",
    "ftp", "lftp", "gh", "glab", "hub", "aws", "gcloud", "az", "kubectl", "http", "https", "xh",
    "dig", "nslookup", "host", "ping", "mail", "sendmail", "twine", "gsutil",
];

/// Programs that reach the network with one of these first arguments.
const NETWORKED_SUBCOMMANDS: &[(&str, &[&str])] = &[
    ("git", &["push", "fetch", "pull", "clone", "ls-remote", "remote", "submodule", "send-email"]),
    ("pip", &["install", "download", "search"]),
    ("pip3", &["install", "download", "search"]),
    ("uv", &["pip", "add", "sync", "run", "tool"]),
    ("npm", &["install", "i", "publish", "ci", "add", "update", "exec"]),
    ("npx", &[]),
    ("pnpm", &["install", "i", "add", "publish", "update", "dlx"]),
    ("yarn", &["install", "add", "publish", "upgrade", "dlx"]),
    ("cargo", &["publish", "install", "login", "fetch", "update", "search", "add"]),
    ("go", &["get", "install", "mod"]),
    ("gem", &["install", "push", "fetch"]),
    ("docker", &["push", "pull", "login", "run", "build"]),
    ("podman", &["push", "pull", "login", "run", "build"]),
];

/// Interpreters whose one-liners (`-c`, `-e`) may open a socket.
const INTERPRETERS: &[&str] =
    &["python", "python3", "node", "perl", "ruby", "php", "deno", "bun", "lua", "Rscript"];

/// Why `call` could send data out of the machine (`None`: it cannot).
pub fn outbound(policy: &Policy, taint: &Taint, call: CallFacts<'_>) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(call.arguments).unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(serde_json::Value::as_str);
    if let Some(server) = mcp_server(call.tool) {
        return (!taint.has("mcp", server)).then(|| {
            format!("`{}` is a tool of MCP server `{server}`, which could pass data on", call.tool)
        });
    }
    let info: &ToolInfo = tool_facts::builtin(call.tool)?;
    if let Some(url) = info.operand(Operand::Url) {
        let host = text(url).and_then(url_host).unwrap_or_default();
        return (!taint.has("web", &host)).then(|| {
            format!(
                "`{}` to {host} sends a request (its URL can carry data) to a new host",
                info.name
            )
        });
    }
    if let Some(script) = info.operand(Operand::Script) {
        return shell_outbound(policy, text(script).unwrap_or_default());
    }
    match info.name {
        names::PROCESS_WRITE => {
            Some("writing to a running process can make it send anything anywhere".to_owned())
        }
        names::AGENT if call.class == ToolClass::Mutating => {
            Some("a subagent of this type may run commands that reach the network".to_owned())
        }
        _ => None,
    }
}

/// The MCP server of an MCP tool's name (`mcp__SERVER__TOOL`).
fn mcp_server(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix(super::tool_rules::EXTERNAL_PREFIX)?;
    rest.split_once("__").map(|(server, _)| server)
}

fn shell_outbound(policy: &Policy, command: &str) -> Option<String> {
    let network = if policy.sandboxed { policy.egress.network } else { NetworkMode::On };
    match network {
        NetworkMode::On | NetworkMode::Allowlist if !policy.sandboxed => {
            return Some("commands run without an enforced sandbox, on the host's network".into());
        }
        NetworkMode::On | NetworkMode::Allowlist => {
            return Some(format!(
                "[sandbox] network = \"{}\": any command may reach the network",
                network.as_str()
            ));
        }
        NetworkMode::Off => {}
    }
    let script = analyze_script_in(command, &Dirs::default());
    if let Some(found) = script.commands.iter().find(|command| networked(command)) {
        return Some(format!("`{}` can reach the network", found.describe()));
    }
    hidden_code(&script).map(|why| format!("keel cannot see everything it runs ({why})"))
}

fn networked(command: &SimpleCommand) -> bool {
    let Some(program) = command.argv.first() else { return false };
    let program = program.rsplit('/').next().unwrap_or(program);
    let first = command.argv.iter().skip(1).find(|word| !word.starts_with('-'));
    if NETWORKED.contains(&program) {
        return true;
    }
    if let Some((_, subcommands)) = NETWORKED_SUBCOMMANDS.iter().find(|(name, _)| *name == program)
    {
        return subcommands.is_empty()
            || first.is_some_and(|word| subcommands.contains(&word.as_str()));
    }
    let interpreter = INTERPRETERS
        .iter()
        .any(|name| program == *name || program.strip_prefix(name).is_some_and(is_version));
    interpreter && command.argv.iter().skip(1).any(|word| matches!(word.as_str(), "-c" | "-e"))
}

fn is_version(rest: &str) -> bool {
    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

fn hidden_code(script: &Script) -> Option<String> {
    if let Some(blind) = script.blind.first() {
        return Some(blind.clone());
    }
    let tcp = script.writes.iter().chain(&script.reads).any(|r| r.target.starts_with("/dev/tcp/"));
    if tcp {
        return Some("a /dev/tcp redirection".to_owned());
    }
    script.hidden.first().map(|hidden| hidden.describe().to_owned())
}

/// `verdict` on `call`, judged again for the untrusted content in the
/// conversation (see the module doc).
pub fn tighten(policy: &Policy, taint: &Taint, call: CallFacts<'_>, verdict: Verdict) -> Verdict {
    if policy.egress.taint == TaintMode::Off || !taint.is_tainted() {
        return verdict;
    }
    let Some(why) = outbound(policy, taint, call) else { return verdict };
    let setting = policy.egress.taint.as_str();
    let reason = format!(
        "untrusted content from {} is in the conversation and this call could send data out of \
         the machine: {why} ([security] taint = \"{setting}\")",
        taint.listed()
    );
    let decision = match (verdict.decision, policy.egress.taint, policy.mode) {
        (Decision::Forbidden { reason }, _, _) => Decision::Forbidden { reason },
        (_, TaintMode::Strict, _) => Decision::Forbidden { reason },
        (Decision::Allow, _, ApprovalMode::Yolo) => Decision::Allow,
        (Decision::Allow, _, _) => Decision::Prompt { reason },
        (Decision::Prompt { reason: asked }, _, _) => {
            Decision::Prompt { reason: format!("{asked}; also, {reason}") }
        }
    };
    Verdict { decision, suggested_prefix: None, ..verdict }
}

#[cfg(test)]
#[path = "egress_tests.rs"]
mod tests;
