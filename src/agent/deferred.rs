//! Deferred tools (issues 42 and 32): tools a request should not carry
//! are offered through two small tools instead, `tool_search` (find tools
//! by words; the result shows each match's input schema) and `call_tool`
//! (call one by name), and their definitions stay out of the request
//! prefix. Two kinds are deferred: the rarely used built-ins of
//! `tool_facts::DEFERRED_BUILTINS` (always, [`split_builtins`] when the
//! loop opens), and the MCP tools when their definitions pass
//! `[tools] defer_mcp`.
//!
//! Why this shape: revealing a tool by adding it to the request's tool
//! list rewrites the prefix, and the provider's cache of everything after
//! it is lost. Here a revealed schema arrives as a tool result, appended
//! to the history like any other, so the prefix never changes.
//!
//! Invariants:
//! - a call is judged, run, logged and hooked by its real name: `step`
//!   turns `call_tool {tool, arguments}` into the call of `tool` ([`unwrap`])
//!   before policy sees it; the history keeps the model's own call, so the
//!   next request sends back what the model wrote;
//! - `call_tool` reaches only deferred tools: one of a tool in the request,
//!   or of a tool not offered, is answered with an error naming
//!   `tool_search`, never run;
//! - pure: the search is over the specs the loop was offered.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::protocol::tool_facts::{DEFERRED_BUILTINS, names};
use crate::protocol::{MCP_PREFIX, ToolCall, ToolResult, ToolSpec};

/// When the MCP tools are deferred (`[tools] defer_mcp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DeferMcp {
    /// When their definitions pass [`AUTO_DEFER_BYTES`].
    #[default]
    Auto,
    Always,
    Never,
}

impl DeferMcp {
    /// The values as written in the config file.
    pub const NAMES: [&'static str; 3] = ["auto", "always", "never"];

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "auto" => Some(Self::Auto),
            "always" => Some(Self::Always),
            "never" => Some(Self::Never),
            _ => None,
        }
    }

    /// Whether `offered` is deferred under this setting.
    pub fn defers(self, offered: &[ToolSpec]) -> bool {
        match self {
            Self::Never => false,
            Self::Always => !offered.is_empty(),
            Self::Auto => definition_bytes(offered) > AUTO_DEFER_BYTES,
        }
    }
}

/// Definitions past this many bytes (about 2 500 tokens: a server or two
/// of ordinary size stay in the prefix) are deferred under `auto`.
pub const AUTO_DEFER_BYTES: usize = 10 * 1024;

/// Matches `tool_search` shows at most (each with its schema).
const MAX_MATCHES: usize = 8;

fn definition_bytes(specs: &[ToolSpec]) -> usize {
    specs
        .iter()
        .map(|spec| spec.name.len() + spec.description.len() + spec.parameters.to_string().len())
        .sum()
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct SearchArgs {
    /// Words, a tool's name, or an MCP server's name to list its tools.
    query: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct CallArgs {
    /// Its name, as tool_search shows it.
    tool: String,
    /// Its arguments, per its input schema.
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

/// The two tools offered in place of `deferred` (in this order). Their
/// text names the deferred built-ins, and the MCP servers with how many
/// tools each has, so the model knows what is there to search; it changes
/// only when the tool list does.
pub fn specs(deferred: &[ToolSpec]) -> [ToolSpec; 2] {
    let mut offered = Vec::new();
    let builtins: Vec<String> = DEFERRED_BUILTINS
        .iter()
        .filter(|(name, _)| deferred.iter().any(|spec| spec.name == *name))
        .map(|(name, what)| format!("{name} ({what})"))
        .collect();
    if !builtins.is_empty() {
        offered.push(builtins.join(", "));
    }
    let servers: Vec<String> =
        servers(deferred).iter().map(|(server, count)| format!("{server} ({count})")).collect();
    if !servers.is_empty() {
        offered.push(format!("the tools of MCP servers {}", servers.join(", ")));
    }
    let search = format!(
        "Find more tools: {}. Shows each match's input schema; call it with call_tool.",
        offered.join("; ")
    );
    let mut call =
        ToolSpec::typed::<CallArgs>(names::CALL_TOOL, "Call a tool tool_search finds, by name.");
    // An object, as the tool's schema says (a JSON string is taken too).
    if let Some(arguments) = call.parameters["properties"]["arguments"].as_object_mut() {
        arguments.remove("default");
        arguments.insert("type".to_owned(), serde_json::json!("object"));
    }
    [ToolSpec::typed::<SearchArgs>(names::TOOL_SEARCH, &search), call]
}

/// The loop's tools with the deferred built-ins taken out: what the
/// request offers (the deferred ones replaced by [`specs`], last) and
/// what waits behind `call_tool`. Tools with no deferred built-in among
/// them (a subagent's without `shell`) are returned as they are.
pub fn split_builtins(tools: Vec<ToolSpec>) -> (Vec<ToolSpec>, Vec<ToolSpec>) {
    let (deferred, mut offered): (Vec<ToolSpec>, Vec<ToolSpec>) = tools
        .into_iter()
        .partition(|spec| DEFERRED_BUILTINS.iter().any(|(name, _)| spec.name == *name));
    if !deferred.is_empty() {
        offered.retain(|spec| !is_deferral_tool(&spec.name));
        offered.extend(specs(&deferred));
    }
    (offered, deferred)
}

/// Each MCP server's name and tool count, in the order the tools came
/// (deferred built-ins have no server).
fn servers(specs: &[ToolSpec]) -> Vec<(&str, usize)> {
    let mut servers: Vec<(&str, usize)> = Vec::new();
    for spec in specs {
        let Some(server) = server_of(&spec.name) else { continue };
        match servers.iter_mut().find(|(name, _)| *name == server) {
            Some((_, count)) => *count += 1,
            None => servers.push((server, 1)),
        }
    }
    servers
}

fn server_of(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(MCP_PREFIX)?;
    Some(rest.split_once("__").map_or(rest, |(server, _)| server))
}

/// `call` as the call it stands for: a `call_tool` of a deferred tool
/// becomes that tool's call (same id, its own arguments); anything else
/// is returned unchanged.
pub fn unwrap(call: &ToolCall, deferred: &[ToolSpec]) -> ToolCall {
    if call.name != names::CALL_TOOL {
        return call.clone();
    }
    let Ok(args) = serde_json::from_str::<CallArgs>(&call.arguments) else {
        return call.clone();
    };
    if !deferred.iter().any(|spec| spec.name == args.tool) {
        return call.clone();
    }
    let arguments = match args.arguments {
        Some(serde_json::Value::String(text)) => text,
        Some(value) => value.to_string(),
        None => "{}".to_owned(),
    };
    ToolCall { name: args.tool, arguments, ..call.clone() }
}

/// Whether `name` is one of the two tools this module answers.
pub fn is_deferral_tool(name: &str) -> bool {
    crate::protocol::tool_facts::DEFERRAL_TOOLS.contains(&name)
}

/// The answer to `tool_search`, or to a `call_tool` [`unwrap`] left as it
/// was (its tool is not offered, or its arguments do not parse).
pub fn answer(call: &ToolCall, deferred: &[ToolSpec]) -> ToolResult {
    let id = call.call_id.as_str();
    if call.name == names::CALL_TOOL {
        let text = match serde_json::from_str::<CallArgs>(&call.arguments) {
            Err(error) => format!("invalid call_tool arguments: {error}"),
            Ok(args) => format!(
                "`{}` is not a tool behind call_tool: tool_search finds those; call the tools \
                 in your tool list directly",
                args.tool
            ),
        };
        return ToolResult::error(id, text);
    }
    match serde_json::from_str::<SearchArgs>(&call.arguments) {
        Err(error) => ToolResult::error(id, format!("invalid tool_search arguments: {error}")),
        Ok(args) => ToolResult::ok(id, search(&args.query, deferred)),
    }
}

/// The tools best matching `query`: a server's name lists its tools;
/// otherwise each tool scores by the query's words found in its name
/// (twice) and description.
fn search(query: &str, deferred: &[ToolSpec]) -> String {
    let words: Vec<String> =
        query.split_whitespace().map(str::to_lowercase).filter(|w| !w.is_empty()).collect();
    let mut scored: Vec<(usize, &ToolSpec)> = deferred
        .iter()
        .filter_map(|spec| {
            let name = spec.name.to_lowercase();
            let description = spec.description.to_lowercase();
            let server = server_of(&name).unwrap_or(&name);
            let score: usize = words
                .iter()
                .map(|word| {
                    usize::from(server == word) * 3
                        + usize::from(name.contains(word.as_str())) * 2
                        + usize::from(description.contains(word.as_str()))
                })
                .sum();
            (score > 0).then_some((score, spec))
        })
        .collect();
    // Best first; equal scores keep the servers' order.
    scored.sort_by_key(|(score, _)| std::cmp::Reverse(*score));
    if scored.is_empty() {
        let mut listed: Vec<String> = DEFERRED_BUILTINS
            .iter()
            .filter(|(name, _)| deferred.iter().any(|spec| spec.name == *name))
            .map(|(name, _)| (*name).to_owned())
            .collect();
        listed.extend(
            servers(deferred)
                .iter()
                .map(|(server, count)| format!("MCP server {server} ({count} tools)")),
        );
        return format!(
            "No tool matches `{query}`. There are: {}. Search other words, a tool's name, or a \
             server's name to list its tools.",
            listed.join(", ")
        );
    }
    let total = scored.len();
    let mut text = String::new();
    for (_, spec) in scored.iter().take(MAX_MATCHES) {
        text.push_str(&format!(
            "{}\n{}\ninput schema: {}\n\n",
            spec.name,
            spec.description.trim(),
            spec.parameters
        ));
    }
    if total > MAX_MATCHES {
        text.push_str(&format!(
            "{} more match; narrow the words to see them.\n",
            total - MAX_MATCHES
        ));
    }
    text.push_str("Call one with call_tool {\"tool\": NAME, \"arguments\": {…}}.");
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        }
    }

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            call_id: "c1".into(),
            name: name.into(),
            arguments: arguments.to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    fn offered() -> Vec<ToolSpec> {
        vec![
            tool("mcp__github__create_issue", "Open an issue in a repository"),
            tool("mcp__github__list_pulls", "List pull requests"),
            tool("mcp__time__now", "The current time in a time zone"),
        ]
    }

    #[test]
    fn auto_defers_only_past_the_threshold() {
        assert!(!DeferMcp::Auto.defers(&offered()));
        let many: Vec<ToolSpec> =
            (0..200).map(|i| tool(&format!("mcp__s__t{i}"), "a tool that does things")).collect();
        assert!(DeferMcp::Auto.defers(&many));
        assert!(!DeferMcp::Never.defers(&many));
        assert!(DeferMcp::Always.defers(&offered()));
        assert!(!DeferMcp::Always.defers(&[]));
    }

    #[test]
    fn a_call_tool_of_a_deferred_tool_becomes_that_tool_s_call() {
        let wrapped =
            call("call_tool", json!({"tool": "mcp__time__now", "arguments": {"tz": "UTC"}}));
        let real = unwrap(&wrapped, &offered());
        assert_eq!(real.name, "mcp__time__now");
        assert_eq!(real.call_id, "c1");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&real.arguments).unwrap(),
            json!({"tz": "UTC"})
        );
        // Arguments given as a JSON string are passed as that string.
        let texted =
            call("call_tool", json!({"tool": "mcp__time__now", "arguments": "{\"tz\":1}"}));
        assert_eq!(unwrap(&texted, &offered()).arguments, "{\"tz\":1}");
    }

    #[test]
    fn a_call_tool_of_anything_else_stays_and_is_answered_with_an_error() {
        for arguments in
            [json!({"tool": "shell", "arguments": {"command": "rm -rf ~"}}), json!({"x": 1})]
        {
            let wrapped = call("call_tool", arguments);
            let kept = unwrap(&wrapped, &offered());
            assert_eq!(kept, wrapped, "a tool in the request is never reached through call_tool");
            let result = answer(&kept, &offered());
            assert!(result.is_error, "{result:?}");
        }
    }

    #[test]
    fn search_finds_by_words_and_by_server_and_shows_the_schema() {
        let found = answer(&call("tool_search", json!({"query": "issue"})), &offered());
        assert!(found.output.starts_with("mcp__github__create_issue\n"), "{}", found.output);
        assert!(found.output.contains("input schema: {"), "{}", found.output);
        assert!(!found.output.contains("mcp__time__now"), "{}", found.output);
        let listed = answer(&call("tool_search", json!({"query": "github"})), &offered());
        assert!(listed.output.contains("list_pulls") && listed.output.contains("create_issue"));
        let none = answer(&call("tool_search", json!({"query": "weather"})), &offered());
        assert!(
            none.output.contains("MCP server github (2 tools), MCP server time (1 tools)"),
            "{}",
            none.output
        );
    }

    #[test]
    fn the_offered_specs_name_the_servers_and_stay_small() {
        let many: Vec<ToolSpec> =
            (0..200).map(|i| tool(&format!("mcp__s{}__t{i}", i % 4), "a tool")).collect();
        let specs = specs(&many);
        assert!(specs[0].description.contains("s0 (50), s1 (50), s2 (50), s3 (50)"));
        let bytes = serde_json::to_string(&specs).unwrap().len();
        assert!(bytes < 1200, "{bytes}");
    }

    fn builtins() -> Vec<ToolSpec> {
        let mut tools = vec![tool("read_file", "Read a text file"), tool("shell", "Run a command")];
        tools.extend(
            DEFERRED_BUILTINS.iter().map(|(name, what)| tool(name, &format!("{what}, at length"))),
        );
        tools
    }

    #[test]
    fn the_rarely_used_built_ins_wait_behind_the_pair_and_are_named_in_its_text() {
        let (offered, deferred) = split_builtins(builtins());
        let names: Vec<&str> = offered.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, ["read_file", "shell", "tool_search", "call_tool"]);
        assert_eq!(deferred.len(), DEFERRED_BUILTINS.len());
        let search = &offered[2].description;
        for (name, what) in DEFERRED_BUILTINS {
            assert!(search.contains(&format!("{name} ({what})")), "{search}");
        }
        assert!(!search.contains("MCP"), "no server, none named: {search}");
        // Without any of them (a read-only subagent's tools), nothing changes.
        let plain = vec![tool("read_file", "Read a text file")];
        assert_eq!(split_builtins(plain.clone()), (plain, Vec::new()));
    }

    #[test]
    fn a_deferred_built_in_is_found_by_words_or_name_and_called_by_its_name() {
        let (_, deferred) = split_builtins(builtins());
        let found = answer(&call("tool_search", json!({"query": "web page"})), &deferred);
        assert!(found.output.starts_with("web_fetch\n"), "{}", found.output);
        let named = answer(&call("tool_search", json!({"query": "process_stop"})), &deferred);
        assert!(named.output.starts_with("process_stop\n"), "{}", named.output);
        let wrapped = call("call_tool", json!({"tool": "web_fetch", "arguments": {"url": "x"}}));
        let real = unwrap(&wrapped, &deferred);
        assert_eq!((real.name.as_str(), real.arguments.as_str()), ("web_fetch", "{\"url\":\"x\"}"));
        // A built-in in the request is not behind call_tool.
        let shell = call("call_tool", json!({"tool": "shell", "arguments": {"command": "ls"}}));
        assert_eq!(unwrap(&shell, &deferred), shell);
    }
}
