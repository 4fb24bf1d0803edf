//! Values checked while a config file or a `-c` override is parsed, so a
//! bad one is an error pointing at it (TOML's line and caret), naming what
//! is allowed, instead of being clamped or ignored later (`max_steps = 0`
//! once silently became 1, an empty `model` was accepted, an unknown hook
//! event was taken as one).
//!
//! Each function is a serde `deserialize_with` for an `Option` field of
//! [`super::ConfigFile`] or its tables.

use serde::Deserialize;
use serde::de::{Deserializer, Error};

use crate::hooks::HookEvent;
use crate::llm::ProviderKind;
use crate::policy::network::NetworkMode;
use crate::sandbox::landlock::SandboxMode;

/// Provider names a config may use.
const PROVIDERS: &str = "openai, openai-chat, anthropic";

pub(super) fn provider<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    provider_name(&String::deserialize(d)?).map(Some)
}

/// A protocol name keel speaks, for `provider = "…"` and `[provider] name`.
pub(super) fn provider_name<E: Error>(name: &str) -> Result<String, E> {
    match ProviderKind::from_cli_name(name) {
        Some(_) => Ok(name.to_owned()),
        None => Err(E::custom(format!("unknown provider `{name}`; use one of: {PROVIDERS}"))),
    }
}

pub(super) fn model<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(D::Error::custom(
            "model must be a model name such as gpt-5.1 or claude-sonnet-4-5, not empty",
        ));
    }
    Ok(Some(name))
}

pub(super) fn fast_model<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(D::Error::custom("agents.fast_model must be a model name, not empty"));
    }
    Ok(Some(name))
}

pub(super) fn max_depth<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let depth = u32::deserialize(d)?;
    if depth > MAX_AGENT_DEPTH {
        return Err(D::Error::custom(format!(
            "agents.max_depth must be from 0 to {MAX_AGENT_DEPTH} (1: the session delegates, \
             its subagents do not)"
        )));
    }
    Ok(Some(depth))
}

/// Deepest nesting of subagents a config may ask for.
const MAX_AGENT_DEPTH: u32 = 4;

pub(super) fn agent_steps<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    at_least_one(u32::deserialize(d)?, "agents.max_steps", "model calls per subagent task")
}

pub(super) fn agent_tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one(u64::deserialize(d)?, "agents.max_tokens", "tokens per subagent task")
}

pub(super) fn base_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let url = String::deserialize(d)?;
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(Some(url))
    } else {
        Err(D::Error::custom(format!(
            "base_url `{url}` must start with http:// or https:// (e.g. http://127.0.0.1:11434/v1)"
        )))
    }
}

pub(super) fn env_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(Some(name))
    } else {
        Err(D::Error::custom(format!(
            "api_key_env `{name}` must be an environment variable name such as MY_API_KEY"
        )))
    }
}

pub(super) fn max_steps<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    at_least_one(u32::deserialize(d)?, "max_steps", "model calls per turn")
}

pub(super) fn idle_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one(u64::deserialize(d)?, "idle_timeout_secs", "seconds")
}

pub(super) fn request_timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one(u64::deserialize(d)?, "request_timeout_secs", "seconds")
}

pub(super) fn max_parallel<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    at_least_one(u32::deserialize(d)?, "shell.max_parallel", "calls at once")
        .map(|n| n.and_then(|n| usize::try_from(n).ok()))
}

pub(super) fn window<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one(u64::deserialize(d)?, "context.window", "tokens")
}

pub(super) fn undo_max_file_mb<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one(u64::deserialize(d)?, "undo.max_file_mb", "MB")
}

pub(super) fn undo_max_total_mb<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one(u64::deserialize(d)?, "undo.max_total_mb", "MB")
}

fn at_least_one<T, E>(value: T, key: &str, unit: &str) -> Result<Option<T>, E>
where
    T: PartialOrd + From<u8> + std::fmt::Display,
    E: Error,
{
    if value >= T::from(1) {
        Ok(Some(value))
    } else {
        Err(E::custom(format!("{key} must be 1 or more ({unit}); got {value}")))
    }
}

pub(super) fn threshold<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = f64::deserialize(d)?;
    if (0.1..=1.0).contains(&value) {
        Ok(Some(value))
    } else {
        Err(D::Error::custom(format!(
            "context.compact_threshold must be a fraction of the window from 0.1 to 1.0 \
             (default 0.85); got {value}"
        )))
    }
}

pub(super) fn input_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    price(f64::deserialize(d)?, "context.input_price")
}

pub(super) fn cached_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    price(f64::deserialize(d)?, "context.cached_input_price")
}

pub(super) fn cache_write_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    price(f64::deserialize(d)?, "context.cache_write_price")
}

pub(super) fn output_price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    price(f64::deserialize(d)?, "context.output_price")
}

fn price<E: Error>(value: f64, key: &str) -> Result<Option<f64>, E> {
    if value.is_finite() && value >= 0.0 {
        Ok(Some(value))
    } else {
        Err(E::custom(format!(
            "{key} must be US dollars per million tokens, 0 or more; got {value}"
        )))
    }
}

pub(super) fn max_cost<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let value = f64::deserialize(d)?;
    if value.is_finite() && value > 0.0 {
        Ok(Some(value))
    } else {
        Err(D::Error::custom(format!(
            "limits.max_cost_usd must be US dollars, more than 0; got {value}"
        )))
    }
}

pub(super) fn max_output_tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    at_least_one(u32::deserialize(d)?, "provider.max_output_tokens", "tokens per answer")
}

pub(super) fn max_tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    at_least_one(u64::deserialize(d)?, "limits.max_tokens", "tokens per session")
}

pub(super) fn limits_max_steps<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    at_least_one(u32::deserialize(d)?, "limits.max_steps", "model calls per turn")
}

pub(super) fn repeated_calls<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    guard(u32::deserialize(d)?, "limits.repeated_calls")
}

pub(super) fn failing_calls<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    guard(u32::deserialize(d)?, "limits.failing_calls")
}

/// A runaway guard's count: 0 turns it off, 1 would stop at once.
fn guard<E: Error>(value: u32, key: &str) -> Result<Option<u32>, E> {
    if value == 1 {
        return Err(E::custom(format!("{key} must be 2 or more, or 0 to turn the guard off")));
    }
    Ok(Some(value))
}

pub(super) fn sandbox_mode<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let mode = String::deserialize(d)?;
    match SandboxMode::parse(&mode) {
        Some(_) => Ok(Some(mode)),
        None => Err(D::Error::custom(format!(
            "unknown sandbox.mode `{mode}`; use one of: read-only, workspace-write, full-access"
        ))),
    }
}

/// `network = "off" | "allowlist" | "on"`, or the old `true`/`false`.
pub(super) fn network<'de, D: Deserializer<'de>>(d: D) -> Result<Option<NetworkMode>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Written {
        Flag(bool),
        Name(String),
    }
    let message = |shown: &str| {
        format!("sandbox.network is {shown}; it must be one of {}", NetworkMode::NAMES)
    };
    match Written::deserialize(d).map_err(|_| D::Error::custom(message("not text")))? {
        Written::Flag(true) => Ok(Some(NetworkMode::On)),
        Written::Flag(false) => Ok(Some(NetworkMode::Off)),
        Written::Name(name) => NetworkMode::parse(&name)
            .map(Some)
            .ok_or_else(|| D::Error::custom(message(&format!("\"{name}\"")))),
    }
}

pub(super) fn allowed_domains<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<String>>, D::Error> {
    let names = Vec::<String>::deserialize(d)?;
    crate::policy::network::parse_patterns(&names).map_err(|error| {
        D::Error::custom(format!(
            "sandbox.allowed_domains: {error}; write host names such as \"pkgs.example.org\" \
             or \"*.example.com\""
        ))
    })?;
    Ok(Some(names))
}

pub(super) fn host_ports<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u16>>, D::Error> {
    let ports = Vec::<u16>::deserialize(d)?;
    if ports.contains(&0) {
        return Err(D::Error::custom("sandbox.host_ports must hold port numbers from 1 to 65535"));
    }
    Ok(Some(ports))
}

pub(super) fn hosts<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<std::collections::BTreeMap<String, std::net::IpAddr>>, D::Error> {
    let table = std::collections::BTreeMap::<String, String>::deserialize(d)?;
    let mut hosts = std::collections::BTreeMap::new();
    for (name, address) in table {
        let parsed = address.parse().map_err(|_| {
            D::Error::custom(format!(
                "sandbox.hosts: `{name}` maps to `{address}`, which is not an IP address"
            ))
        })?;
        if crate::policy::network::DomainPattern::parse(&name).is_err() || name.starts_with("*.") {
            return Err(D::Error::custom(format!("sandbox.hosts: `{name}` is not a host name")));
        }
        hosts.insert(name.to_ascii_lowercase(), parsed);
    }
    Ok(Some(hosts))
}

pub(super) fn commands<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let commands = Vec::<String>::deserialize(d)?;
    if commands.iter().any(|command| command.trim().is_empty()) {
        return Err(D::Error::custom("verify.commands must not hold an empty command"));
    }
    Ok(Some(commands))
}

/// A `[hooks]` table: every key must be a hook event keel knows.
pub(super) fn hooks<'de, D: Deserializer<'de>>(d: D) -> Result<Option<toml::Table>, D::Error> {
    let table = toml::Table::deserialize(d)?;
    if let Some(unknown) = table.keys().find(|name| HookEvent::from_name(name).is_none()) {
        let valid: Vec<&str> = HookEvent::ALL.iter().map(|event| event.name()).collect();
        return Err(D::Error::custom(format!(
            "unknown hook event `{unknown}`; use one of: {}",
            valid.join(", ")
        )));
    }
    Ok(Some(table))
}

pub(super) fn defer_mcp<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<crate::agent::DeferMcp>, D::Error> {
    let value = String::deserialize(d)?;
    crate::agent::DeferMcp::parse(&value).map(Some).ok_or_else(|| {
        let names: Vec<String> =
            crate::agent::DeferMcp::NAMES.iter().map(|name| format!("\"{name}\"")).collect();
        D::Error::custom(format!(
            "tools.defer_mcp is \"{value}\"; it must be one of {} (when MCP tools are kept \
             out of the request behind tool_search)",
            names.join(", ")
        ))
    })
}

pub(super) fn taint<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<crate::policy::egress::TaintMode>, D::Error> {
    use crate::policy::egress::TaintMode;
    let value = String::deserialize(d)?;
    TaintMode::parse(&value).map(Some).ok_or_else(|| {
        D::Error::custom(format!(
            "security.taint is \"{value}\"; it must be one of {} (what untrusted content \
             changes)",
            TaintMode::NAMES
        ))
    })
}

pub(super) fn edit_tools<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<super::EditTools>, D::Error> {
    let value = String::deserialize(d)?;
    super::EditTools::parse(&value).map(Some).ok_or_else(|| {
        let names: Vec<String> =
            super::EditTools::NAMES.iter().map(|name| format!("\"{name}\"")).collect();
        D::Error::custom(format!(
            "tools.edit is \"{value}\"; it must be one of {} (the file-editing tool offered)",
            names.join(", ")
        ))
    })
}
