//! Tool specs as offered to the model, and the calls and results that flow
//! between the model and the tool runtime.

use serde::{Deserialize, Serialize};

use super::ToolMeta;
use super::strict_schema::{MAX_ANTHROPIC_STRICT_TOOLS, StrictDialect};
use super::tool_facts::{self, ToolInfo};

/// Whether running a tool can change anything outside keel.
///
/// Read-only calls of one response run concurrently; mutating calls run one
/// at a time in call order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolClass {
    ReadOnly,
    Mutating,
}

/// A tool as the model sees it: a name, a description and a JSON schema for
/// its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema (an object schema) for the arguments.
    pub parameters: serde_json::Value,
}

impl ToolSpec {
    /// The spec's size as the model is sent it, near enough: name,
    /// description and the schema's JSON; with `strict` the strict form's
    /// JSON when the tool has one (what `llm/` encodes).
    pub fn bytes(&self, strict: Option<StrictDialect>) -> u64 {
        let sent =
            strict.and_then(|dialect| super::strict_schema::strict_parameters(self, dialect));
        self.bytes_with(sent.as_ref().unwrap_or(&self.parameters))
    }

    fn bytes_with(&self, schema: &serde_json::Value) -> u64 {
        (self.name.len() + self.description.len() + schema.to_string().len()) as u64
    }
}

/// Each of `tools` with the argument schema a request sends for it under
/// `strict` (`LoopConfig::strict_tools`): its strict form when it has one,
/// on Anthropic only for the first [`MAX_ANTHROPIC_STRICT_TOOLS`] of them
/// (as `llm/` encodes), else its own. What sizes and token estimates of
/// the tools measure.
pub fn sent_schemas<'a>(
    tools: impl IntoIterator<Item = &'a ToolSpec>,
    strict: Option<StrictDialect>,
) -> Vec<(&'a ToolSpec, std::borrow::Cow<'a, serde_json::Value>)> {
    let mut strict_sent = 0;
    tools
        .into_iter()
        .map(|spec| {
            let capped = strict == Some(StrictDialect::Anthropic)
                && strict_sent >= MAX_ANTHROPIC_STRICT_TOOLS;
            let sent = strict
                .filter(|_| !capped)
                .and_then(|dialect| super::strict_schema::strict_parameters(spec, dialect));
            strict_sent += usize::from(sent.is_some());
            (
                spec,
                sent.map_or(std::borrow::Cow::Borrowed(&spec.parameters), std::borrow::Cow::Owned),
            )
        })
        .collect()
}

/// Each spec's [`ToolSpec::bytes`] by tool name (the `tool_bytes` of the
/// `prompt_prefix` and `tools_changed` log lines), as sent under `strict`
/// ([`sent_schemas`]).
pub fn spec_bytes<'a>(
    tools: impl IntoIterator<Item = &'a ToolSpec>,
    strict: Option<StrictDialect>,
) -> std::collections::BTreeMap<String, u64> {
    sent_schemas(tools, strict)
        .into_iter()
        .map(|(spec, schema)| (spec.name.clone(), spec.bytes_with(&schema)))
        .collect()
}

/// The tools the loop answers itself (`agent`), never the tool runtime.
/// Their names are parsed once here; nothing else compares them as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HarnessTool {
    /// Moves the workflow to another phase.
    SetPhase,
    /// Submits the plan for review.
    SubmitPlan,
    /// Replaces the task list.
    TodoWrite,
    /// Asks the user a question, with optional choices.
    AskUser,
}

impl HarnessTool {
    pub const ALL: [Self; 4] = [Self::SetPhase, Self::SubmitPlan, Self::TodoWrite, Self::AskUser];

    /// Its entry in the table of tool facts.
    pub const fn info(self) -> &'static ToolInfo {
        match self {
            Self::SetPhase => &tool_facts::SET_PHASE,
            Self::SubmitPlan => &tool_facts::SUBMIT_PLAN,
            Self::TodoWrite => &tool_facts::TODO_WRITE,
            Self::AskUser => &tool_facts::ASK_USER,
        }
    }

    /// The name the model calls it by.
    pub const fn name(self) -> &'static str {
        self.info().name
    }

    /// Read-only as far as policy and batching are concerned: they change
    /// only the loop's own state (phase, plan, tasks), which `step` records.
    pub const fn class(self) -> ToolClass {
        self.info().class
    }

    /// The harness tool called `name`, if it is one.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|tool| tool.name() == name)
    }
}

/// A tool call requested by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCall {
    /// The id the result must refer to (`call_id` / `tool_use.id`).
    pub call_id: String,
    pub name: String,
    /// The raw argument string exactly as the model produced it; it may be
    /// invalid JSON, which becomes a tool error, never a crash.
    pub arguments: String,
    /// Provider item id when distinct from `call_id` (Responses `fc_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Opaque fields the server attached to this call and wants back
    /// verbatim on the next request (Gemini's `extra_content` with its
    /// `thought_signature`, LiteLLM's `provider_specific_fields`). Kept in
    /// the log, so a resumed session sends them back too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_data: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ToolCall {
    /// A call with no provider item id and no provider data.
    pub fn new(
        call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            item_id: None,
            provider_data: None,
        }
    }

    /// The harness tool this call names, if any.
    pub fn harness_tool(&self) -> Option<HarnessTool> {
        HarnessTool::parse(&self.name)
    }
}

/// The result of one tool call as returned to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolResult {
    pub call_id: String,
    /// Text the model reads.
    pub output: String,
    /// True when the call failed (bad arguments, denied, tool error).
    #[serde(default)]
    pub is_error: bool,
    /// Images the tool returned (a picture `read_file` read, an MCP
    /// server's image content); references only in the log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::image::ImagePart>,
}

/// What a tool produced: the text for the model plus structured metadata
/// for front ends and the log (exit codes, paths, truncation).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ToolOutput {
    pub text: String,
    #[serde(default, skip_serializing_if = "ToolMeta::is_empty")]
    pub meta: ToolMeta,
    /// Images for the model beside the text (`ToolResult::images`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::image::ImagePart>,
}

impl ToolOutput {
    /// Text and metadata, no image.
    pub fn new(text: impl Into<String>, meta: ToolMeta) -> Self {
        Self { text: text.into(), meta, images: Vec::new() }
    }
}

impl ToolResult {
    pub fn ok(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Self { call_id: call_id.into(), output: output.into(), is_error: false, images: Vec::new() }
    }

    pub fn error(call_id: impl Into<String>, output: impl Into<String>) -> Self {
        Self { call_id: call_id.into(), output: output.into(), is_error: true, images: Vec::new() }
    }
}

/// The prefix of every MCP tool's name (`mcp__server__tool`).
pub const MCP_PREFIX: &str = "mcp__";

/// The server part of an MCP tool's name (`mcp__server__tool` → `server`);
/// `None` for any other tool.
pub fn mcp_server_of(tool: &str) -> Option<&str> {
    let rest = tool.strip_prefix(MCP_PREFIX)?;
    let (server, name) = rest.split_once("__")?;
    (!server.is_empty() && !name.is_empty()).then_some(server)
}

/// Whether the entry `listed` of a tool list (an agent type's `tools`, a
/// scope, a command's pre-approved MCP tools) names `tool`: the same name, or, as
/// in Claude Code's permission rules, a whole MCP server (`mcp__server`,
/// `mcp__server__*`) naming each of its tools.
pub fn entry_names(listed: &str, tool: &str) -> bool {
    if listed == tool {
        return true;
    }
    let Some(server) = listed.strip_prefix(MCP_PREFIX) else { return false };
    let server = server.strip_suffix("__*").unwrap_or(server);
    !server.is_empty()
        && !server.contains("__")
        && tool
            .strip_prefix(MCP_PREFIX)
            .and_then(|rest| rest.strip_prefix(server))
            .is_some_and(|rest| rest.len() > 2 && rest.starts_with("__"))
}
