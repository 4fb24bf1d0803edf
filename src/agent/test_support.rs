//! Fixtures shared by the loop's tests: one loop configuration (read-only
//! `read_file`/`grep`, mutating `write_file`/`shell`, no tools offered,
//! no window) and the path context it uses.

use std::collections::BTreeMap;

use crate::policy::{ApprovalMode, PathContext, Policy, RuleSet};
use crate::protocol::{PrefixSections, ToolCall, ToolClass};

use super::LoopConfig;

pub(super) fn paths() -> PathContext {
    PathContext::new("/home/u", "/home/u/ws", "/home/u/ws")
}

pub(super) fn config(approval: ApprovalMode, max_steps: u32) -> LoopConfig {
    let tool_classes = BTreeMap::from([
        ("read_file".to_owned(), ToolClass::ReadOnly),
        ("grep".to_owned(), ToolClass::ReadOnly),
        ("write_file".to_owned(), ToolClass::Mutating),
        ("shell".to_owned(), ToolClass::Mutating),
    ]);
    LoopConfig {
        model: "m".into(),
        prefix: PrefixSections { core: "be helpful".into(), ..PrefixSections::default() },
        tools: Vec::new(),
        tool_classes,
        policy: Policy::new(RuleSet::default(), approval, paths()),
        limits: super::Limits::with_max_steps(max_steps),
        pricing: crate::context::Pricing::default(),
        configured: crate::agent::ConfiguredModel {
            model: "m".into(),
            pricing: crate::context::Pricing::default(),
            one_hour_cache: false,
        },
        context_window: None,
        max_output_tokens: None,
        compact_threshold: 0.85,
        token_scale: crate::context::tokens::TokenScale::IDENTITY,
        post_tool_hooks: false,
        pre_tool_hooks: false,
        agent_classes: BTreeMap::new(),
        tool_scope: None,
        walls: crate::prompts::Walls::default(),
        strict_tools: None,
    }
}

/// A call with `arguments` (a JSON string).
pub(super) fn call_with(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        call_id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
        item_id: None,
        provider_data: None,
    }
}

/// A call with no arguments.
pub(super) fn call(id: &str, name: &str) -> ToolCall {
    call_with(id, name, "{}")
}

/// [`super::step`], answering every plan save it asks for (saved as
/// `.keel/plans/r<revision>.md`); the effects of both, in order.
pub(super) fn step_saving_plans(
    state: &mut super::LoopState,
    input: super::Input,
) -> Vec<super::Effect> {
    let mut effects = step_checked(state, input);
    while let Some(super::Effect::SavePlan { revision, .. }) = effects.last() {
        let path = Some(format!(".keel/plans/r{revision}.md"));
        let more = step_checked(state, super::Input::PlanSaved { path });
        effects.extend(more);
    }
    effects
}

/// [`super::step`], answering the look before a batch runs
/// (`Effect::CheckCalls`) as a driver with no hook and no symlink does;
/// the effects of both, in order (the batch's `RunBatch` last).
pub(super) fn step_checked(
    state: &mut super::LoopState,
    input: super::Input,
) -> Vec<super::Effect> {
    let mut effects = super::step(state, input);
    effects.extend(answer_checks(state, &effects));
    effects
}

/// The effects of answering a `CheckCalls` at the end of `effects`
/// (none when there is none).
pub(super) fn answer_checks(
    state: &mut super::LoopState,
    effects: &[super::Effect],
) -> Vec<super::Effect> {
    let Some(super::Effect::CheckCalls { calls, .. }) = effects.last() else { return Vec::new() };
    let checks = calls
        .iter()
        .map(|call| super::CallCheck { call_id: call.call_id.clone(), ..Default::default() })
        .collect();
    super::step(state, super::Input::CallsChecked { checks })
}

/// The `approval` lines among `effects` (call id, approved), each asked
/// once (per-call questions offer no "always").
pub(super) fn approvals(effects: &[super::Effect]) -> Vec<(String, bool)> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            super::Effect::Record(crate::protocol::SessionEvent::Approval {
                call_id,
                approved,
                scope,
                ..
            }) => {
                assert_eq!(*scope, crate::protocol::ApprovalScope::Once);
                Some((call_id.clone(), *approved))
            }
            _ => None,
        })
        .collect()
}
