//! What reaches the loop from outside its own effects' answers: a custom
//! command's pre-approvals for the turn about to start, a child session opened
//! for an `agent` call and what its task came to, an `agent` call finished
//! from its child's log on a resume, the tools MCP servers offer now, and
//! what the driver read for the next request (context hooks added, the
//! instructions after a summary, the environment before a turn), and a
//! rewind the runtime prepared (`rewind.rs`: recorded as `rewound`).
//!
//! Invariants: pure, like `step`. A state change a rebuild must reproduce
//! is recorded (pre-approvals as `turn_scope`, a child's spend as
//! `subagent_finished`, a recovered result as `tool_call_finished`); what
//! the driver read is recorded when it is announced with the next request
//! (`context_updated`); the tools offered are the session's configuration,
//! found again on a resume, and a change of them is recorded
//! (`tools_changed`) for the reader of the log.

use crate::protocol::{SessionEvent, ToolCall, ToolClass, ToolMeta, ToolResult, ToolSpec};

use super::apply::emit;
use super::deferred;
use super::record::record_result;
use super::state::{LoopState, TurnApprovals};
use super::step_io::{Effect, Rewind, SubagentDone, SubagentOpened};

/// The turn about to start may run what `approvals` lists without asking
/// (recorded, so a resumed turn keeps them); the turn's end clears them.
pub(super) fn preapprove_turn(
    state: &mut LoopState,
    approvals: TurnApprovals,
    effects: &mut Vec<Effect>,
) {
    let TurnApprovals { owner, allowlist } = approvals;
    let event = SessionEvent::TurnScope {
        owner,
        tools: Vec::new(),
        prefixes: allowlist.prefixes.into_iter().collect(),
        commands: allowlist.commands.into_iter().collect(),
        mcp_tools: allowlist.tools.into_iter().collect(),
    };
    emit(state, event, effects);
}

/// Recorded before the child runs, so a crash mid-child can be resumed
/// from the child's own log.
pub(super) fn subagent_opened(opened: SubagentOpened, effects: &mut Vec<Effect>) {
    let SubagentOpened { call_id, session_id, log_path, agent, description } = opened;
    effects.push(Effect::Record(SessionEvent::SubagentStarted {
        call_id,
        session_id,
        log_path,
        agent,
        description,
    }));
}

/// A child's spend (its estimates included) counts against this
/// session's limits from the next request on; recorded before the call's
/// result. A child already counted (its line was written before a crash,
/// and the resume finished its call again) is neither counted nor
/// recorded again.
pub(super) fn subagent_done(state: &mut LoopState, done: SubagentDone, effects: &mut Vec<Effect>) {
    let SubagentDone { call_id, session_id, outcome, usage, cost_usd, estimated } = done;
    if state.delegated.counts(&session_id) {
        return;
    }
    let (estimated_tokens, estimated_cost_usd) = estimated.logged();
    let event = SessionEvent::SubagentFinished {
        call_id,
        session_id,
        outcome,
        usage,
        cost_usd,
        estimated_tokens,
        estimated_cost_usd,
    };
    emit(state, event, effects);
}

/// An open call's result recovered on a resume (an `agent` call finished
/// from its child's log): seen by the workflow and recorded as a batch's
/// result would be, before the rest of the turn is reconciled.
pub(super) fn call_recovered(
    state: &mut LoopState,
    call: &ToolCall,
    result: ToolResult,
    meta: ToolMeta,
    effects: &mut Vec<Effect>,
) {
    state.workflow.observe(call, &result, &meta);
    record_result(state, result, meta, effects);
}

/// Context hooks added (SessionStart, SubagentStart): announced in the
/// history with the next request, the prefix staying as recorded.
pub(super) fn hook_context(state: &mut LoopState, context: Vec<String>) {
    state.hook_context.extend(context);
}

/// The environment block as the driver read it (git status, date):
/// announced with the next request when it differs from what the model
/// was told.
pub(super) fn environment_read(state: &mut LoopState, environment: String) {
    state.environment = environment;
}

/// The tools named in `replaced` give way to `offered` (an MCP server's
/// tools, once it is ready or when its list changes; a subagent's share of
/// its parent's); with a `reason`, the change is recorded. A loop narrowed
/// to a scope (a subagent's) is never offered a tool outside it. With
/// `defer`, the offered tools are kept out of the request and reached
/// through `tool_search`/`call_tool` (`agent::deferred`).
pub(super) fn offer_tools(
    state: &mut LoopState,
    replaced: &[String],
    mut offered: Vec<(ToolSpec, ToolClass)>,
    reason: Option<String>,
    defer: bool,
    effects: &mut Vec<Effect>,
) {
    let mut kept_out: Vec<ToolSpec> = (state.deferred_tools().iter())
        .filter(|spec| !replaced.contains(&spec.name))
        .cloned()
        .collect();
    let config = &mut state.config;
    if let Some(scope) = &config.tool_scope {
        offered.retain(|(spec, _)| scope.allows(&spec.name));
    }
    config
        .tools
        .retain(|spec| !replaced.contains(&spec.name) && !deferred::is_deferral_tool(&spec.name));
    config.tool_classes.retain(|name, _| !replaced.contains(name));
    let names: Vec<String> = offered.iter().map(|(spec, _)| spec.name.clone()).collect();
    let tool_bytes = match reason {
        Some(_) => {
            crate::protocol::spec_bytes(offered.iter().map(|(spec, _)| spec), config.strict_tools)
        }
        None => Default::default(),
    };
    for (spec, class) in offered {
        config.tool_classes.insert(spec.name.clone(), class);
        if defer {
            kept_out.push(spec);
        } else {
            config.tools.push(spec);
        }
    }
    // The two tools in their place come last, where the MCP tools would.
    if !kept_out.is_empty() {
        config.tools.extend(deferred::specs(&kept_out));
    }
    state.set_deferred_tools(kept_out);
    if let Some(reason) = reason {
        let added = names.iter().filter(|name| !replaced.contains(name)).cloned().collect();
        let removed = replaced.iter().filter(|name| !names.contains(name)).cloned().collect();
        effects.push(Effect::Record(SessionEvent::ToolsChanged {
            reason,
            added,
            removed,
            tool_bytes,
        }));
    }
}

/// Records the rewind and takes its conversation (only while idle, which
/// `step` checks). Pre-approvals for a command turn that never ran end.
pub(super) fn rewind(state: &mut LoopState, rewind: Rewind, effects: &mut Vec<Effect>) {
    let Rewind { to_prompt, to_seq, scope, items, checkpoint_before, restored, kept, undoes } =
        rewind;
    let items = items.filter(|_| scope.includes_conversation());
    let event = SessionEvent::Rewound {
        to_prompt,
        to_seq,
        scope,
        items,
        checkpoint_before,
        restored,
        kept,
        undoes,
    };
    emit(state, event, effects);
}

#[cfg(test)]
mod tests {
    use super::super::state::Opening;
    use super::super::step::step;
    use super::super::step_io::Input;
    use super::super::test_support::config;
    use super::*;
    use crate::policy::ApprovalMode;

    fn spec(name: &str) -> (ToolSpec, ToolClass) {
        let spec = ToolSpec {
            name: name.into(),
            description: String::new(),
            parameters: serde_json::json!({}),
        };
        (spec, ToolClass::ReadOnly)
    }

    #[test]
    fn offered_tools_replace_the_old_ones_and_a_change_is_recorded() {
        let mut state = LoopState::open(config(ApprovalMode::Ask, 5), Opening::default());
        let builtin = state.config.tools.len();
        let first = Input::ToolsOffered {
            replaced: Vec::new(),
            offered: vec![spec("mcp__a__x"), spec("mcp__a__y")],
            reason: None,
            defer: false,
        };
        assert!(step(&mut state, first).is_empty(), "a server ready at the start: no line");
        assert_eq!(state.config.tools.len(), builtin + 2);
        let changed = Input::ToolsOffered {
            replaced: vec!["mcp__a__x".into(), "mcp__a__y".into()],
            offered: vec![spec("mcp__a__y"), spec("mcp__a__z")],
            reason: Some("an MCP server's tool list changed".into()),
            defer: false,
        };
        let effects = step(&mut state, changed);
        assert_eq!(
            effects,
            [Effect::Record(SessionEvent::ToolsChanged {
                reason: "an MCP server's tool list changed".into(),
                added: vec!["mcp__a__z".into()],
                removed: vec!["mcp__a__x".into()],
                tool_bytes: crate::protocol::spec_bytes(
                    [&spec("mcp__a__y").0, &spec("mcp__a__z").0],
                    None
                ),
            })]
        );
        let names: Vec<&str> = state.config.tools.iter().map(|s| s.name.as_str()).collect();
        assert!(!names.contains(&"mcp__a__x") && names.contains(&"mcp__a__z"), "{names:?}");
        assert_eq!(state.config.tools.len(), builtin + 2);
        assert!(!state.config.tool_classes.contains_key("mcp__a__x"));
        assert_eq!(state.config.tool_classes.get("mcp__a__z"), Some(&ToolClass::ReadOnly));
    }

    #[test]
    fn a_scoped_loop_is_offered_only_the_tools_in_its_scope() {
        let mut state = LoopState::open(config(ApprovalMode::Ask, 5), Opening::default());
        state.config.tool_scope = Some(super::super::state::ToolScope {
            owner: "the read-only t agent".into(),
            tools: ["read_file", "mcp__a__read"].into_iter().map(String::from).collect(),
        });
        let builtin = state.config.tools.len();
        let offer = Input::ToolsOffered {
            replaced: Vec::new(),
            offered: vec![spec("mcp__a__read"), spec("mcp__a__write")],
            reason: None,
            defer: false,
        };
        assert!(step(&mut state, offer).is_empty());
        let names: Vec<&str> = state.config.tools[builtin..].iter().map(|s| &*s.name).collect();
        assert_eq!(names, ["mcp__a__read"]);
        assert!(!state.config.tool_classes.contains_key("mcp__a__write"));
        assert!(state.scope_refusal("mcp__a__write").is_some(), "and a call to it is refused");
    }
}
