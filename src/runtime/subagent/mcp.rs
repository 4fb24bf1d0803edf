//! The parent session's MCP tools in a subagent: which of them a child is
//! offered, and the parent's running hub lent to the child to call them.
//!
//! Which: those its type names (`mcp__server__tool`, or a whole server as
//! `mcp__server` / `mcp__server__*`), every one for a type without a
//! `tools` list (Claude Code's "inherit every tool"), never one its
//! `disallowedTools` names; a read-only type only those trusted as reads
//! (`McpToolDef::read_only`: the server claims `readOnlyHint` and its
//! config says `trust_read_only_hint = true`). The built-in types list no
//! MCP tool, so they get none.
//!
//! Invariants: a child never starts a server (`child_settings` gives it
//! none) and never stops, re-lists or reports one: it shares the hub of the
//! session that started it (a grandchild the same hub, through its
//! parent); the selection depends on the type and the parent's tools, not
//! the mode, so a resumed child is offered what it had; the tools reach the
//! child's loop as `Input::ToolsOffered`, as the parent's did, and are in
//! its `ToolScope`, so its calls go through the same scope, policy, hooks
//! and approvals as any of its calls. A session without MCP tools does no
//! work here beyond an empty filter.

use crate::config::agents::AgentDefinition;
use crate::mcp::McpToolDef;
use crate::protocol::entry_names;

use crate::runtime::mcp_glue::McpState;
use crate::runtime::{RuntimeError, RuntimeEvent, Session};

/// The MCP tools of `offered` (the parent's, in order) a child of type
/// `definition` is offered.
pub(in crate::runtime) fn mcp_for_type(
    offered: &[McpToolDef],
    definition: &AgentDefinition,
) -> Vec<McpToolDef> {
    offered
        .iter()
        .filter(|def| definition.may_use(&def.name) && (def.read_only || !definition.read_only))
        .cloned()
        .collect()
}

/// What the user should hear about the MCP entries of `definition`'s list
/// that give its children nothing: no such tool in this session, or only
/// tools that may change things for a read-only type.
pub(in crate::runtime) fn unoffered_mcp(
    definition: &AgentDefinition,
    offered: &[McpToolDef],
) -> Vec<String> {
    let (mut missing, mut writers) = (Vec::new(), Vec::new());
    for listed in definition.listed_mcp() {
        let named: Vec<&McpToolDef> =
            offered.iter().filter(|def| entry_names(listed, &def.name)).collect();
        if named.is_empty() {
            missing.push(listed);
        } else if definition.read_only && named.iter().all(|def| !def.read_only) {
            writers.push(listed);
        }
    }
    let mut notes = Vec::new();
    if !missing.is_empty() {
        notes.push(format!("no MCP server of this session offers {}", missing.join(", ")));
    }
    if !writers.is_empty() {
        notes.push(format!(
            "{} may change things and the type is read-only (an MCP tool counts as a read only \
             when its server marks it `readOnlyHint` and its `[mcp_servers.NAME]` entry sets \
             `trust_read_only_hint = true`)",
            writers.join(", ")
        ));
    }
    notes
}

impl Session {
    /// The MCP tools a child of type `definition` is offered now.
    pub(in crate::runtime) fn child_mcp_tools(
        &self,
        definition: &AgentDefinition,
    ) -> Vec<McpToolDef> {
        mcp_for_type(self.mcp.offered(), definition)
    }

    /// Tells the user which MCP entries of `definition`'s list the child
    /// opened now goes without.
    pub(in crate::runtime) fn warn_unoffered_mcp(&mut self, definition: &AgentDefinition) {
        let notes = unoffered_mcp(definition, self.mcp.offered());
        if notes.is_empty() {
            return;
        }
        let message = format!("agent `{}` runs without: {}", definition.name, notes.join("; "));
        self.sink.emit(RuntimeEvent::Warning { message });
    }

    /// Lends this session's hub to `child` and offers it `defs` (its
    /// type's share of this session's MCP tools) through its `step`.
    pub(in crate::runtime) fn lend_mcp(
        &self,
        child: &mut Session,
        defs: Vec<McpToolDef>,
    ) -> Result<(), RuntimeError> {
        child.mcp = McpState::shared(self.mcp.hub.clone());
        if defs.is_empty() {
            return Ok(());
        }
        child.offer_mcp_tools(defs, None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::agents::{AgentSource, definition};
    use crate::config::markdown_file::MarkdownFile;

    fn def(name: &str, read_only: bool) -> McpToolDef {
        let (server, remote) = name.trim_start_matches("mcp__").split_once("__").unwrap();
        McpToolDef {
            name: name.into(),
            server: server.into(),
            remote: remote.into(),
            description: String::new(),
            parameters: json!({"type": "object"}),
            read_only,
            claims_read_only: read_only,
            trusted_content: false,
            resources: false,
        }
    }

    /// The parent's tools: one trusted read and one writer on each server.
    fn parents() -> Vec<McpToolDef> {
        vec![
            def("mcp__docs__search", true),
            def("mcp__docs__publish", false),
            def("mcp__gh__get_issue", true),
            def("mcp__gh__create_issue", false),
        ]
    }

    fn agent(front_matter: &str) -> AgentDefinition {
        let text = format!("---\nname: t\ndescription: d\n{front_matter}---\nBody.\n");
        definition(&MarkdownFile::parse(&text).unwrap(), AgentSource::BuiltIn).unwrap()
    }

    fn offered(front_matter: &str) -> Vec<String> {
        mcp_for_type(&parents(), &agent(front_matter)).into_iter().map(|def| def.name).collect()
    }

    macro_rules! offers {
        ($($name:ident: $front_matter:expr => [$($tool:expr),*];)*) => {$(
            #[test]
            fn $name() {
                let expected: Vec<&str> = vec![$($tool),*];
                assert_eq!(offered($front_matter), expected, "{}", $front_matter);
            }
        )*};
    }

    offers! {
        an_exact_name_gets_that_tool_even_a_writer:
            "tools: Read, mcp__gh__create_issue\n" => ["mcp__gh__create_issue"];
        a_server_name_gets_all_its_tools:
            "tools: Read, mcp__docs\n" => ["mcp__docs__search", "mcp__docs__publish"];
        a_server_wildcard_gets_all_its_tools:
            "tools: [Read, \"mcp__gh__*\"]\n" => ["mcp__gh__get_issue", "mcp__gh__create_issue"];
        a_server_name_is_not_a_prefix_of_another_server:
            "tools: mcp__d, mcp__doc\n" => [];
        no_list_inherits_every_tool:
            "" => ["mcp__docs__search", "mcp__docs__publish", "mcp__gh__get_issue",
                   "mcp__gh__create_issue"];
        disallowed_tools_are_withheld:
            "disallowedTools: mcp__gh, mcp__docs__publish\n" => ["mcp__docs__search"];
        keel_tools_only_get_no_mcp_tool:
            "tools: Read, Grep, Bash\n" => [];
        a_read_only_type_gets_only_trusted_reads:
            "tools: Read, mcp__docs, mcp__gh__create_issue\npermissionMode: plan\n"
                => ["mcp__docs__search"];
        a_read_only_type_without_a_list_gets_only_trusted_reads:
            "disallowedTools: Write, Edit, Bash\n" => ["mcp__docs__search", "mcp__gh__get_issue"];
    }

    #[test]
    fn a_type_listing_an_mcp_tool_is_not_read_only_unless_it_says_plan() {
        assert!(!agent("tools: Read, mcp__docs__search\n").read_only);
        assert!(agent("tools: Read, mcp__docs__search\npermissionMode: plan\n").read_only);
        assert!(agent("tools: Read, Grep\n").read_only);
    }

    #[test]
    fn the_built_in_types_get_no_mcp_tool() {
        let catalog = crate::config::agents::discover_agents(&[], false);
        for agent in &catalog.agents {
            assert!(mcp_for_type(&parents(), agent).is_empty(), "{}", agent.name);
        }
    }

    #[test]
    fn entries_that_give_nothing_are_said() {
        let notes = unoffered_mcp(&agent("tools: mcp__gone__x, mcp__docs\n"), &parents());
        assert_eq!(notes, ["no MCP server of this session offers mcp__gone__x"]);
        let read_only = agent("tools: mcp__gh__create_issue, mcp__docs\npermissionMode: plan\n");
        let notes = unoffered_mcp(&read_only, &parents());
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].starts_with("mcp__gh__create_issue may change things"), "{notes:?}");
        assert!(unoffered_mcp(&agent(""), &[]).is_empty(), "no list: nothing named");
    }
}
