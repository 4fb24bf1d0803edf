//! [`ToolRegistry`]: the set of tools offered to the model and the dispatch
//! of one [`ToolCall`] to its tool.
//!
//! What the other layers know about a tool (its kind, class, Claude Code
//! names, the paths it touches) is its [`ToolInfo`] in
//! `protocol::tool_facts`; [`ToolRegistry::info`] answers it for the
//! offered tools (`None` for MCP tools).
//!
//! Adding a built-in tool:
//! 1. its facts: a name in `tool_facts::names`, a `ToolInfo` const beside
//!    the others (kind, class, Claude names, every argument that names a
//!    path with its operand and access) and a place in `BUILTIN`;
//! 2. its file `tools/<name>.rs`: the argument type, `impl TypedTool` with
//!    `const INFO = &tool_facts::<NAME>`, the run and its tests;
//! 3. one line in [`ToolRegistry::builtin`] (and `mod` in `tools/mod.rs`).
//!
//! Policy, secret protection, phase rules, hooks' and agent files' Claude
//! names then cover it; code that singles it out compares against its
//! `names` constant (`tests/suite/tool_names.rs` refuses a spelled name).
//!
//! Invariants: [`ToolRegistry::run_call`] never fails and never panics; an
//! unknown name, unparseable or ill-typed arguments, a tool error, a
//! cancelled turn or even a panicking tool all come back as an `is_error`
//! [`ToolResult`] with a message the model can act on, plus metadata.

use std::time::Instant;

use super::args::parse_json;
use super::{Tool, ToolContext, ToolError};
use super::{
    apply_patch, edit_file, glob, grep, list_dir, load_skill, process_output, process_stop,
    process_write, read_file, read_memory, shell, web_fetch, write_file,
};
use crate::protocol::{
    Origin, ResultKind, ToolCall, ToolClass, ToolInfo, ToolMeta, ToolResult, ToolSpec,
};
use crate::support::panic_guard::{self, Guarded};

/// The tools offered to the model.
pub struct ToolRegistry {
    tools: Vec<Box<dyn Tool>>,
}

impl ToolRegistry {
    /// The built-in tools.
    pub fn builtin() -> Self {
        Self {
            tools: vec![
                Box::new(read_file::ReadFile),
                Box::new(list_dir::ListDir),
                Box::new(glob::Glob),
                Box::new(grep::Grep),
                Box::new(write_file::WriteFile),
                Box::new(edit_file::EditFile),
                Box::new(apply_patch::ApplyPatch),
                Box::new(shell::Shell),
                Box::new(process_output::ProcessOutput),
                Box::new(process_write::ProcessWrite),
                Box::new(process_stop::ProcessStop),
                Box::new(load_skill::LoadSkill),
                Box::new(read_memory::ReadMemory),
                Box::new(web_fetch::WebFetch),
            ],
        }
    }

    /// The same tools plus `agent`, for a session that may start
    /// subagents (its calls are run by the runtime, not by the registry).
    pub fn with_agent(mut self) -> Self {
        self.tools.push(Box::new(super::agent::Agent));
        self
    }

    /// The same registry with only the tools `keep` accepts by name.
    pub fn retain(mut self, keep: impl Fn(&str) -> bool) -> Self {
        self.tools.retain(|tool| keep(tool.name()));
        self
    }

    /// A registry of exactly these tools (tests).
    #[cfg(test)]
    pub fn with_tools(tools: Vec<Box<dyn Tool>>) -> Self {
        Self { tools }
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: tool.parameters(),
            })
            .collect()
    }

    /// The tool called `name`, if there is one.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.iter().find(|tool| tool.name() == name).map(|tool| tool.as_ref())
    }

    /// The facts of the built-in tool called `name`, if it is offered.
    pub fn info(&self, name: &str) -> Option<&'static ToolInfo> {
        self.get(name).and_then(|tool| tool.info())
    }

    /// The names of all tools, in the order they are offered.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|tool| tool.name()).collect()
    }

    /// Adds tools after the ones offered so far (MCP servers' tools, once
    /// they started).
    pub fn extend(&mut self, tools: Vec<Box<dyn Tool>>) {
        self.tools.extend(tools);
    }

    /// Drops the tools whose names `drop` picks (a server's old tools
    /// before its new list is added).
    pub fn remove_where(&mut self, drop: impl Fn(&str) -> bool) {
        self.tools.retain(|tool| !drop(tool.name()));
    }

    /// The access class of a tool; unknown tools count as read-only since
    /// they never run (they only produce an error result).
    pub fn class_of(&self, name: &str) -> ToolClass {
        self.get(name).map_or(ToolClass::ReadOnly, |tool| tool.class())
    }

    /// Runs one call: parses its arguments, dispatches, and turns every
    /// failure into an error result. Returns the result and its metadata,
    /// which always is an object with `duration_ms` and, on error, `kind`
    /// (also under `error`, its older name).
    pub async fn run_call(&self, call: &ToolCall, ctx: &ToolContext) -> (ToolResult, ToolMeta) {
        let started = Instant::now();
        let mut ctx = ctx.clone();
        ctx.call_id.clone_from(&call.call_id);
        let (outcome, origin) = self.execute(call, &ctx).await;
        let (result, mut meta) = match outcome {
            Ok(output) => {
                let result = ToolResult {
                    images: output.images,
                    ..ToolResult::ok(&call.call_id, output.text)
                };
                (result, output.meta)
            }
            Err(error) => {
                let meta = error.meta().with_kind(ResultKind::named(error.kind()));
                (ToolResult::error(&call.call_id, error.to_string()), meta)
            }
        };
        let elapsed = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        meta.set_duration_ms(elapsed);
        // Where the text came from (the history fences untrusted text).
        if let Some(origin) = meta.origin().or(origin) {
            meta.set_origin(&origin);
        }
        (result, meta)
    }

    /// Runs the call, and says where its text comes from (`None`: it
    /// never reached a tool).
    async fn execute(
        &self,
        call: &ToolCall,
        ctx: &ToolContext,
    ) -> (Result<crate::protocol::ToolOutput, ToolError>, Option<Origin>) {
        let offered = ctx.offered.as_deref();
        let not_offered = offered.is_some_and(|names| !names.contains(&call.name));
        let Some(tool) = self.get(&call.name).filter(|_| !not_offered) else {
            let unknown = ToolError::UnknownTool {
                name: call.name.clone(),
                available: offered
                    .cloned()
                    .unwrap_or_else(|| self.names().into_iter().map(str::to_owned).collect()),
            };
            return (Err(unknown), None);
        };
        let args = match parse_json(tool.name(), &call.arguments) {
            Ok(args) => args,
            Err(error) => return (Err(error), None),
        };
        let origin = tool.origin(&args);
        if ctx.cancel.is_cancelled() {
            return (Err(ToolError::Cancelled), None);
        }
        // A bug in one tool must not take down the turn: report it instead.
        let run = async move {
            panic_guard::inject_for_test(tool.name());
            tool.run(args, ctx).await
        };
        let outcome = Guarded::new(run).await.unwrap_or_else(|panic| {
            Err(ToolError::Internal { tool: tool.name().to_owned(), message: panic.to_string() })
        });
        (outcome, Some(origin))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;
    use crate::tools::testutil::TestWorkspace;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            call_id: "call-1".to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
            item_id: None,
            provider_data: None,
        }
    }

    async fn run(name: &str, arguments: &str) -> (ToolResult, ToolMeta) {
        let ws = TestWorkspace::new();
        ws.write("hello.txt", "hi\n");
        ToolRegistry::builtin().run_call(&call(name, arguments), &ws.ctx).await
    }

    #[test]
    fn the_workflow_classes_every_tool_as_its_access_says() {
        use crate::plan::{ToolKind, tool_kind};
        let registry = ToolRegistry::builtin();
        for spec in registry.specs() {
            let kind = tool_kind(&spec.name);
            match registry.class_of(&spec.name) {
                ToolClass::ReadOnly => assert_eq!(kind, ToolKind::Read, "{}", spec.name),
                ToolClass::Mutating => {
                    assert!(matches!(kind, ToolKind::Write | ToolKind::Shell), "{}", spec.name);
                }
            }
        }
    }

    #[test]
    fn every_built_in_tool_has_its_entry_in_the_table_of_tool_facts() {
        let registry = ToolRegistry::builtin().with_agent();
        for name in registry.names() {
            let info = registry.info(name).unwrap_or_else(|| panic!("{name} has no facts"));
            assert_eq!(Some(info), crate::protocol::tool_facts::builtin(name), "{name}");
            assert_eq!(info.class, registry.class_of(name), "{name}");
        }
    }

    #[test]
    fn specs_are_object_schemas_for_all_tools() {
        let specs = ToolRegistry::builtin().specs();
        let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "glob",
                "grep",
                "write_file",
                "edit_file",
                "apply_patch",
                "shell",
                "process_output",
                "process_write",
                "process_stop",
                "load_skill",
                "read_memory",
                "web_fetch"
            ]
        );
        // The loop's own tools are offered beside them, held to the same shape.
        for spec in specs.iter().chain(&crate::agent::harness_specs(&crate::agent::shipped_rules()))
        {
            let schema = &spec.parameters;
            assert_eq!(schema["type"], "object", "{}", spec.name);
            assert!(schema["properties"].is_object(), "{}", spec.name);
            // Left out when empty (JSON Schema's default), never anything else.
            let required = schema.get("required");
            assert!(required.is_none_or(|r| r.as_array().is_some_and(|r| !r.is_empty())));
            assert!(!spec.description.is_empty());
            let text = schema.to_string();
            for banned in ["$ref", "$schema", "\"title\"", "\"null\"", "\"format\""] {
                assert!(!text.contains(banned), "{} schema has {banned}: {text}", spec.name);
            }
            for required in schema["required"].as_array().into_iter().flatten() {
                let field = required.as_str().unwrap_or_default();
                assert!(schema["properties"][field].is_object(), "{}: {field}", spec.name);
            }
        }
    }

    /// Whether an object nested in `schema` (not the arguments object
    /// itself) has a property that is not required.
    fn nested_optional(schema: &serde_json::Value, top: bool) -> bool {
        let properties = schema["properties"].as_object();
        let required = schema["required"].as_array().cloned().unwrap_or_default();
        let here = !top
            && properties
                .is_some_and(|map| map.keys().any(|key| !required.contains(&key.as_str().into())));
        here || properties.into_iter().flatten().any(|(_, p)| nested_optional(p, false))
            || schema.get("items").is_some_and(|items| nested_optional(items, false))
    }

    // `[provider] strict_tools`: every tool keel defines has a strict form
    // on both dialects (`call_tool`, whose `arguments` are free, has none:
    // `strict_schema`'s tests), and dropping the top-level nulls (`args::parse_args`) is all the
    // parsing side needs: no nested object has an optional field.
    #[test]
    fn every_built_in_schema_has_a_strict_form() {
        use crate::protocol::strict_schema::{StrictDialect, strict_parameters};
        let harness = crate::agent::harness_specs(&crate::agent::shipped_rules());
        let specs = ToolRegistry::builtin().with_agent().specs();
        for spec in specs.iter().chain(&harness) {
            assert!(!nested_optional(&spec.parameters, true), "{}", spec.name);
            for dialect in [StrictDialect::OpenAi, StrictDialect::Anthropic] {
                assert!(strict_parameters(spec, dialect).is_some(), "{} {dialect:?}", spec.name);
            }
        }
    }

    #[test]
    fn classes_split_readers_from_writers() {
        let registry = ToolRegistry::builtin();
        for name in ["read_file", "list_dir", "glob", "grep", "no_such_tool"] {
            assert_eq!(registry.class_of(name), ToolClass::ReadOnly, "{name}");
        }
        for name in ["write_file", "edit_file", "apply_patch", "shell"] {
            assert_eq!(registry.class_of(name), ToolClass::Mutating, "{name}");
        }
        assert!(registry.get("grep").is_some() && registry.get("nope").is_none());
    }

    #[tokio::test]
    async fn known_tool_runs() {
        let (result, meta) = run("read_file", r#"{"path":"hello.txt"}"#).await;
        assert!(!result.is_error, "{}", result.output);
        assert_eq!(result.call_id, "call-1");
        assert!(result.output.contains("hi"));
        assert_eq!(meta["path"], "hello.txt");
        assert!(meta["duration_ms"].is_u64(), "{meta:?}");
    }

    #[tokio::test]
    async fn unknown_tool_lists_the_available_ones() {
        let (result, meta) = run("frobnicate", "{}").await;
        assert!(result.is_error);
        assert!(result.output.contains("unknown tool `frobnicate`"), "{}", result.output);
        assert!(result.output.contains("read_file, list_dir, glob"), "{}", result.output);
        assert_eq!(meta["error"], "unknown_tool");
    }

    #[tokio::test]
    async fn invalid_json_is_an_error_result() {
        let (result, meta) = run("read_file", r#"{"path": "hello.txt""#).await;
        assert!(result.is_error);
        assert!(result.output.contains("not valid JSON"), "{}", result.output);
        assert_eq!(meta["error"], "invalid_arguments");
        assert_eq!(meta["kind"], "invalid_arguments");
        assert!(meta["duration_ms"].is_u64(), "{meta:?}");
    }

    #[tokio::test]
    async fn empty_arguments_mean_no_arguments() {
        let (result, _) = run("list_dir", "").await;
        assert!(!result.is_error, "{}", result.output);
        assert!(result.output.contains("hello.txt"));
        let (result, _) = run("read_file", "").await;
        assert!(result.is_error);
        assert!(result.output.contains("missing field `path`"), "{}", result.output);
    }

    #[tokio::test]
    async fn wrong_typed_argument_names_the_field() {
        let (result, _) = run("read_file", r#"{"path":"hello.txt","offset":"ten"}"#).await;
        assert!(result.is_error);
        assert!(result.output.contains("field `offset`"), "{}", result.output);
        let (result, _) = run("shell", r#"{"command":["ls"]}"#).await;
        assert!(result.is_error);
        assert!(result.output.contains("field `command`"), "{}", result.output);
    }

    #[tokio::test]
    async fn unknown_fields_are_ignored() {
        let (result, _) = run("read_file", r#"{"path":"hello.txt","explanation":"x"}"#).await;
        assert!(!result.is_error, "{}", result.output);
    }

    struct Panicky;

    impl Tool for Panicky {
        fn name(&self) -> &str {
            "panicky"
        }
        fn description(&self) -> &str {
            "always panics"
        }
        fn parameters(&self) -> Value {
            serde_json::json!({ "type": "object", "properties": {}, "required": [] })
        }
        fn class(&self) -> ToolClass {
            ToolClass::ReadOnly
        }
        fn run<'a>(
            &'a self,
            _: Value,
            _: &'a ToolContext,
        ) -> crate::tools::BoxFuture<'a, Result<crate::protocol::ToolOutput, ToolError>> {
            Box::pin(async { panic!("tool bug") })
        }
    }

    #[tokio::test]
    async fn a_panicking_tool_becomes_an_error_result() {
        let ws = TestWorkspace::new();
        let registry = ToolRegistry { tools: vec![Box::new(Panicky)] };
        let (result, meta) = registry.run_call(&call("panicky", "{}"), &ws.ctx).await;
        assert!(result.is_error);
        assert!(result.output.contains("tool bug"), "{}", result.output);
        assert_eq!(meta["error"], "internal");
    }

    #[tokio::test]
    async fn cancelled_turn_runs_nothing() {
        let ws = TestWorkspace::new();
        ws.ctx.cancel.cancel();
        let call = call("write_file", r#"{"path":"x.txt","content":"x"}"#);
        let (result, meta) = ToolRegistry::builtin().run_call(&call, &ws.ctx).await;
        assert!(result.is_error);
        assert_eq!(meta["error"], "cancelled");
        assert!(!ws.path("x.txt").exists());
    }
}
