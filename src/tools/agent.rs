//! `agent`: hands a task to a subagent, a child session with a fresh
//! context, its own system prompt and a narrowed set of tools, whose final
//! answer is the call's result. This file holds what the model sees (the
//! name, the description and the arguments' schema) and the arguments'
//! type; running the child is the runtime's (`runtime/subagent/mod.rs`), since
//! it needs the session's model client, log, approver and front end.
//!
//! Invariants: the registry's own `run` never starts a child (`keel tool
//! agent` and a replay have no session to run one in): it says so as a
//! tool error. The list of types in the description is built once per
//! session ([`description_with_types`]) so the request prefix stays stable;
//! past [`AGENT_TYPES_BYTES`] it is a compact index (`prompts::catalog`) and
//! the other types are found with `agent: "search:WORDS"` (answered by
//! `runtime/subagent/mod.rs`), so a collection of hundreds of types costs a
//! bounded prefix.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{BoxFuture, ToolContext, ToolError, TypedTool};
use crate::prompts::catalog::{self, Entry, Index};
use crate::protocol::{ToolInfo, ToolOutput, tool_facts};

pub const AGENT_TOOL: &str = tool_facts::AGENT.name;

const DESCRIPTION: &str = "Delegate a self-contained task to a subagent: it starts fresh (none \
of this conversation) with fewer tools; its final answer, with what it read and changed, is the \
result. For work with many reads or long output you need not keep; read-only types run side by \
side. Not for a few calls or a file you know. The user never sees its answer: relay what \
matters; do not redo its work.";

/// The `agent` tool's arguments.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AgentArgs {
    /// The agent type (one of those listed).
    pub agent: String,
    /// A few words for the user on what it does.
    pub description: String,
    /// All it knows: what to do, what you know, what to report.
    pub prompt: String,
}

impl AgentArgs {
    /// The arguments of an `agent` call, or a message for the model.
    pub fn parse(arguments: &str) -> Result<Self, ToolError> {
        let value = super::args::parse_json(AGENT_TOOL, arguments)?;
        super::args::parse_args::<Self>(AGENT_TOOL, value)
    }
}

/// Most bytes the type list may take in its full form.
pub const AGENT_TYPES_BYTES: usize = 6 * 1024;

/// The index of the types (name, description, read-only), in order.
pub fn agent_types_index(types: &[(String, String, bool)]) -> Index {
    let entries: Vec<Entry<'_>> = types
        .iter()
        .map(|(name, description, read_only)| Entry {
            name,
            description,
            note: if *read_only { " (read-only)" } else { "" },
        })
        .collect();
    let how = format!(
        "call `agent` with agent `{}WORDS` (description and prompt may be empty)",
        catalog::SEARCH_PREFIX
    );
    catalog::index(&entries, AGENT_TYPES_BYTES, "agent types", &how)
}

/// The tool's description followed by the types it can start: what the
/// model reads, fixed for the session.
pub fn description_with_types(types: &[(String, String, bool)]) -> String {
    let mut text = DESCRIPTION.to_owned();
    text.push_str("\n\nAgent types:\n");
    text.push_str(agent_types_index(types).text.trim_end());
    text
}

pub struct Agent;

impl TypedTool for Agent {
    const INFO: &'static ToolInfo = &tool_facts::AGENT;
    const DESCRIPTION: &'static str = DESCRIPTION;
    // The loop classes each call by its type (`LoopConfig::agent_classes`).
    type Args = AgentArgs;

    fn call<'a>(
        &'a self,
        _args: AgentArgs,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async {
            Err(ToolError::InvalidArguments {
                tool: AGENT_TOOL.to_owned(),
                message: "subagents run only inside a session (keel or keel exec)".to_owned(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_and_name_a_missing_field() {
        let args = AgentArgs::parse(r#"{"agent":"explore","description":"d","prompt":"p"}"#);
        assert_eq!(args.unwrap().agent, "explore");
        let error = AgentArgs::parse(r#"{"agent":"explore","prompt":"p"}"#).unwrap_err();
        assert!(error.to_string().contains("description"), "{error}");
    }

    #[test]
    fn the_description_lists_each_type_once() {
        let text = description_with_types(&[
            ("explore".into(), "Looks around.".into(), true),
            ("verify".into(), "Runs checks.".into(), false),
        ]);
        assert!(text.ends_with("- explore (read-only): Looks around.\n- verify: Runs checks."));
    }
}
