//! The transition function. See the module docs of [`crate::agent`] for
//! the invariants; this file holds [`step`], `step_io.rs` its [`Input`]
//! and [`Effect`].

use crate::policy::{self, ApprovalMode, CallFacts};
use crate::protocol::{
    Item, ModelRequest, ModelResponse, SessionEvent, ToolCall, ToolClass, ToolMeta, ToolResult,
    TurnOutcome, Usage,
};

use super::announce::announce;
use super::approval_hooks;
use super::batch_finish;
use super::budget;
use super::call_checks;
use super::compaction;
use super::decisions;
use super::harness::{self, HarnessOutcome};
use super::outside_inputs;
use super::runaway::{self, Ran, RunawayVerdict};
use super::schedule::{Batch, effective_class, policy_event, schedule};
use super::state::{LoopPhase, LoopState};

pub use super::step_io::{Effect, Input};

/// Every phase, for the inputs that may arrive at any point (a mode or
/// model change, a subagent's news, …). Spelled out rather than `_`, so
/// a new phase is not accepted by these arms until it is added here.
macro_rules! any_phase {
    () => {
        LoopPhase::Idle
            | LoopPhase::Infer
            | LoopPhase::AwaitApproval
            | LoopPhase::Execute
            | LoopPhase::Compact
            | LoopPhase::AwaitLimit
            | LoopPhase::SavePlan
            | LoopPhase::Check
            | LoopPhase::Finish
    };
}

/// Advances the loop by one input. Inputs that make no sense in the current
/// phase (a stale approval, a response while idle) change nothing.
pub fn step(state: &mut LoopState, input: Input) -> Vec<Effect> {
    let mut effects = Vec::new();
    match (state.phase.clone(), input) {
        (LoopPhase::Idle, Input::UserTurn { text }) => start_turn(state, text, &mut effects),
        (LoopPhase::Infer, Input::ModelResponded(response)) => {
            on_response(state, response, &mut effects);
        }
        (LoopPhase::Infer, Input::ModelFailed { message }) => {
            effects.push(Effect::Record(SessionEvent::ModelError { message }));
            end_turn(state, TurnOutcome::Failed, &mut effects);
        }
        (LoopPhase::Infer, Input::ContextOverflow { message }) => {
            compaction::on_overflow(state, message, &mut effects);
        }
        (LoopPhase::Idle, Input::CompactRequested { focus }) => {
            compaction::on_compact_requested(state, focus, &mut effects);
        }
        (LoopPhase::Compact, Input::Summarized { text, usage }) => {
            compaction::on_summary(state, Some(text), usage, &mut effects);
        }
        (LoopPhase::Compact, Input::SummaryFailed { usage, .. }) => {
            compaction::on_summary(state, None, usage, &mut effects);
        }
        (LoopPhase::Compact, Input::CompactionApplied { observed }) => {
            state.observed = Some(observed);
            compaction::on_applied(state, &mut effects);
        }
        (any_phase!(), Input::EnvironmentRead { environment }) => {
            outside_inputs::environment_read(state, environment)
        }
        (LoopPhase::Compact, Input::Interrupted) => compaction::on_interrupted(state, &mut effects),
        (LoopPhase::AwaitApproval, Input::CallsChecked { checks }) => {
            approval_hooks::on_checked(state, checks, &mut effects);
        }
        // No answer counts before the question is asked (its hooks first).
        (LoopPhase::AwaitApproval, Input::ApprovalDecided { call_id, approved, note, scope })
            if !approval_hooks::waiting(state) =>
        {
            decisions::on_approval(state, &call_id, approved, note, scope, &mut effects);
        }
        (
            LoopPhase::AwaitApproval,
            Input::PlanReviewed { call_id, approved, note, edited_text, then_mode },
        ) if !approval_hooks::waiting(state) => {
            let review = decisions::PlanAnswer { approved, note, edited_text, then_mode };
            decisions::on_plan_reviewed(state, &call_id, review, &mut effects);
        }
        (LoopPhase::AwaitApproval, Input::ApprovalBlocked { call_id, reason })
            if !approval_hooks::waiting(state) =>
        {
            decisions::on_approval_blocked(state, &call_id, &reason, &mut effects);
        }
        (LoopPhase::AwaitApproval, Input::RulePersisted { call_id, rule, note, saved }) => {
            decisions::on_rule_persisted(state, &call_id, rule, note, saved, &mut effects);
        }
        (LoopPhase::SavePlan, Input::PlanSaved { path }) => {
            decisions::on_plan_saved(state, path, &mut effects);
        }
        (LoopPhase::SavePlan, Input::Interrupted) => {
            decisions::on_plan_save_interrupted(state, &mut effects);
            answer_pending(state, "interrupted by the user before it ran", &mut effects);
            end_turn(state, TurnOutcome::Interrupted, &mut effects);
        }
        (any_phase!(), Input::SetMode { mode }) => decisions::set_mode(state, mode, &mut effects),
        (any_phase!(), Input::SetPlanReview { review }) => {
            decisions::set_plan_review(state, review)
        }
        (any_phase!(), Input::SetModel { model, for_turn }) => {
            decisions::set_model(state, model, for_turn, &mut effects)
        }
        (LoopPhase::Idle, Input::NarrowTurn { scope }) => {
            outside_inputs::narrow_turn(state, scope, &mut effects);
        }
        (LoopPhase::Idle, Input::CallRecovered { call, result, meta }) => {
            outside_inputs::call_recovered(state, &call, result, meta, &mut effects);
        }
        (any_phase!(), Input::SubagentStarted(opened)) => {
            outside_inputs::subagent_opened(opened, &mut effects)
        }
        (any_phase!(), Input::SubagentFinished(done)) => {
            outside_inputs::subagent_done(state, done, &mut effects)
        }
        (any_phase!(), Input::HookContext { context }) => {
            outside_inputs::hook_context(state, context)
        }
        (any_phase!(), Input::ToolsOffered { replaced, offered, reason }) => {
            outside_inputs::offer_tools(state, &replaced, offered, reason, &mut effects)
        }
        (LoopPhase::Idle, Input::ReviewWaitingPlan { approved, feedback }) => {
            decisions::review_waiting_plan(state, approved, &feedback, &mut effects);
        }
        (LoopPhase::Execute, Input::BatchFinished { results }) => {
            batch_finish::on_batch_finished(state, results, &mut effects);
        }
        (LoopPhase::Check, Input::CallsChecked { checks }) => {
            call_checks::on_checked(state, checks, &mut effects);
        }
        (LoopPhase::Check, Input::CallConfirmed { call_id, approved, note }) => {
            call_checks::on_answer(state, &call_id, approved, note, &mut effects);
        }
        (LoopPhase::Check, Input::Interrupted) => {
            call_checks::on_interrupted(state, &mut effects);
            answer_pending(state, "interrupted by the user before it ran", &mut effects);
            end_turn(state, TurnOutcome::Interrupted, &mut effects);
        }
        (LoopPhase::Finish, Input::CallConfirmed { call_id, approved, note }) => {
            batch_finish::on_answer(state, &call_id, approved, note, &mut effects);
        }
        (LoopPhase::Finish, Input::RerunFinished { result, meta }) => {
            batch_finish::on_rerun(state, result, meta, &mut effects);
        }
        (LoopPhase::Finish, Input::PostToolHooksDone { verdicts }) => {
            batch_finish::on_post_hooks(state, verdicts, &mut effects);
        }
        (LoopPhase::Finish, Input::Interrupted) => {
            batch_finish::on_interrupted(state, &mut effects);
            answer_pending(state, "interrupted by the user before it ran", &mut effects);
            end_turn(state, TurnOutcome::Interrupted, &mut effects);
        }
        (LoopPhase::AwaitLimit, Input::LimitDecided { raised }) => {
            budget::on_decided(state, raised, &mut effects);
        }
        (
            LoopPhase::Infer
            | LoopPhase::AwaitApproval
            | LoopPhase::Execute
            | LoopPhase::AwaitLimit,
            Input::Interrupted,
        ) => {
            answer_pending(state, "interrupted by the user before it ran", &mut effects);
            end_turn(state, TurnOutcome::Interrupted, &mut effects);
        }
        (
            any_phase!(),
            Input::UserTurn { .. }
            | Input::ModelResponded(_)
            | Input::ModelFailed { .. }
            | Input::ContextOverflow { .. }
            | Input::CompactRequested { .. }
            | Input::Summarized { .. }
            | Input::SummaryFailed { .. }
            | Input::CompactionApplied { .. }
            | Input::ApprovalDecided { .. }
            | Input::PlanReviewed { .. }
            | Input::ApprovalBlocked { .. }
            | Input::RulePersisted { .. }
            | Input::PlanSaved { .. }
            | Input::ReviewWaitingPlan { .. }
            | Input::NarrowTurn { .. }
            | Input::CallRecovered { .. }
            | Input::BatchFinished { .. }
            | Input::CallConfirmed { .. }
            | Input::CallsChecked { .. }
            | Input::RerunFinished { .. }
            | Input::PostToolHooksDone { .. }
            | Input::LimitDecided { .. }
            | Input::Interrupted,
        ) => {}
    }
    effects
}

fn start_turn(state: &mut LoopState, text: String, effects: &mut Vec<Effect>) {
    state.turn += 1;
    state.step = 0;
    state.turn_usage = Usage::default();
    state.pending.clear();
    state.runaway = Default::default();
    effects.push(Effect::Record(SessionEvent::TurnStarted { turn: state.turn }));
    if state.workflow.finished() {
        effects.extend(state.workflow.restart().map(Effect::Record));
    }
    // What changed since the last turn (environment, mode, phase) comes
    // before the request it applies to.
    announce(state, effects);
    effects.push(Effect::Record(SessionEvent::UserMessage { text: text.clone() }));
    state.items.push(Item::User { text });
    infer(state, effects);
}

fn infer(state: &mut LoopState, effects: &mut Vec<Effect>) {
    state.step += 1;
    state.phase = LoopPhase::Infer;
    request_model(state, effects);
}

/// Asks the model, compacting first when the history crossed the
/// threshold (then the request waits for the summary).
fn request_model(state: &mut LoopState, effects: &mut Vec<Effect>) {
    if compaction::before_request(state, effects) {
        return;
    }
    send_request(state, effects);
}

/// Sends the request for the current state, unless it would take the
/// session past a spend limit (then the front end is asked to raise it);
/// every [`Effect::CallModel`] of a turn goes through here. What changed
/// is announced first (appended to the history), so the projection counts
/// it and the request carries it.
pub(super) fn send_request(state: &mut LoopState, effects: &mut Vec<Effect>) {
    budget::record_limits(state, effects);
    announce(state, effects);
    if let Some(hit) = budget::check(state) {
        budget::stop(state, hit, effects);
        return;
    }
    effects.push(Effect::CallModel(build_request(state)));
}

/// The request for the current state: every tool, the session's fixed
/// instructions, then the whole history. Nothing in it but the history
/// changes during a session (see `agent::announce`).
pub(super) fn build_request(state: &LoopState) -> ModelRequest {
    ModelRequest {
        model: state.config.model.clone(),
        instructions: state.config.prefix.text(),
        items: state.items.clone(),
        tools: state.config.tools.clone(),
        max_output_tokens: None,
    }
}

fn on_response(state: &mut LoopState, response: ModelResponse, effects: &mut Vec<Effect>) {
    if response.usage.input_tokens > 0 {
        // The request carried exactly the items held now.
        state.reported_context = Some((response.usage.input_tokens, state.items.len()));
    }
    state.turn_usage.add(&response.usage);
    state.session_usage.add(&response.usage);
    let estimated = budget::charge_unreported(state, &response, effects);
    let cost_usd = budget::charge(state, &response.usage);
    state.largest_output_tokens = state.largest_output_tokens.max(response.usage.output_tokens);
    let calls: Vec<ToolCall> = response.tool_calls().cloned().collect();
    state.items.extend(response.items.iter().cloned());
    effects.push(Effect::Record(SessionEvent::ModelResponse {
        step: state.step,
        response,
        cost_usd,
        estimated_tokens: estimated.map(|(tokens, _)| tokens),
        estimated_cost_usd: estimated.and_then(|(_, cost)| cost),
    }));
    if calls.is_empty() {
        end_turn(state, TurnOutcome::Completed, effects);
        return;
    }
    let max_steps = state.config.limits.max_steps;
    if state.step >= max_steps {
        let reason = format!("not run: the step limit of {max_steps} was reached");
        for call in &calls {
            answer(state, ToolResult::error(&call.call_id, &reason), effects);
        }
        end_turn(state, TurnOutcome::MaxSteps, effects);
        return;
    }
    state.pending = batches(state, calls, effects).into();
    advance(state, effects);
}

/// Judges `calls` (in model order) by policy, recording each decision with
/// its matched rules (so the log has it before the call runs, is asked
/// about or is refused), and groups them into batches; harness calls are
/// not judged and become batches of their own, answered when their turn
/// comes so they see the effects of the calls before them.
pub(super) fn batches(
    state: &LoopState,
    calls: Vec<ToolCall>,
    effects: &mut Vec<Effect>,
) -> Vec<Batch> {
    let mut batches = Vec::new();
    let mut judged = Vec::new();
    for call in calls {
        if let Some(reason) = state.scope_refusal(&call.name) {
            effects.push(Effect::Record(SessionEvent::PolicyDecision {
                call_id: call.call_id.clone(),
                decision: "forbidden".to_owned(),
                matched_rules: Vec::new(),
                reason: Some(reason.clone()),
            }));
            batches.extend(schedule(std::mem::take(&mut judged)));
            batches.push(Batch::Deny { call, reason });
            continue;
        }
        if call.harness_tool().is_some() {
            batches.extend(schedule(std::mem::take(&mut judged)));
            batches.push(Batch::Harness { call });
            continue;
        }
        let tool_class = state.class_of_call(&call);
        let facts = CallFacts { tool: &call.name, class: tool_class, arguments: &call.arguments };
        let verdict = policy::evaluate(&state.config.policy, &state.allowlist, facts);
        effects.push(Effect::Record(policy_event(&call.call_id, &verdict)));
        let class = effective_class(tool_class, &verdict, state.config.policy.sandboxed);
        judged.push((call, class, verdict.decision));
    }
    batches.extend(schedule(judged));
    batches
}

/// Refuses the calls the workflow does not admit now (recording any
/// implicit phase move of the ones it does); returns the admitted ones,
/// and whether a refusal repeated after its runaway note (the turn stops).
/// `judged_reads`: the calls are a concurrent batch, so each is a read by
/// its effective class (a shell call among them counts as a read).
fn admit(
    state: &mut LoopState,
    calls: Vec<ToolCall>,
    judged_reads: bool,
    effects: &mut Vec<Effect>,
) -> (Vec<ToolCall>, bool) {
    let mut admitted = Vec::with_capacity(calls.len());
    let mut stuck = false;
    for call in calls {
        match state.workflow.admit(&call, judged_reads) {
            Ok(events) => {
                effects.extend(events.into_iter().map(Effect::Record));
                admitted.push(call);
            }
            Err(reason) => {
                let meta = ToolMeta::denied(reason.clone())
                    .with("phase", state.workflow.flow.phase.clone());
                let result = ToolResult::error(&call.call_id, denied_text(&reason));
                stuck |= record_observed(state, &call, result, meta, Ran::Denied, effects);
            }
        }
    }
    (admitted, stuck)
}

/// Works through pending batches until one needs the driver, or none are
/// left and the model is asked again.
pub(super) fn advance(state: &mut LoopState, effects: &mut Vec<Effect>) {
    loop {
        let front = state.pending.front().cloned();
        if !matches!(front, Some(Batch::Run { .. })) {
            // The hooks' verdict kept from before a question stands only
            // for the approved call's own batch, which is next after it:
            // here the call was declined, blocked or a plan reviewed.
            state.prejudged = None;
        }
        match front {
            None => return infer(state, effects),
            Some(Batch::Deny { call, reason }) => {
                state.pending.pop_front();
                // The policy's (or the user's) reason, for the log and
                // front ends; the model reads it in the result text.
                let meta = ToolMeta::denied(reason.clone());
                let result = ToolResult::error(&call.call_id, denied_text(&reason));
                if record_observed(state, &call, result, meta, Ran::Denied, effects) {
                    return stop_stuck(state, effects);
                }
            }
            Some(Batch::Ask { call, reason }) => {
                let (admitted, stuck) = admit(state, vec![call.clone()], false, effects);
                if admitted.is_empty() {
                    state.pending.pop_front();
                }
                if stuck {
                    return stop_stuck(state, effects);
                }
                if admitted.is_empty() {
                    continue;
                }
                return approval_hooks::ask(state, call, reason, None, effects);
            }
            Some(Batch::Harness { call }) => {
                if run_harness(state, call, effects) {
                    return;
                }
            }
            Some(Batch::Run { calls, concurrent }) => {
                state.pending.pop_front();
                let (calls, stuck) = admit(state, calls, concurrent, effects);
                if stuck {
                    // The admitted calls are answered "not run" with the rest.
                    state.pending.push_front(Batch::Run { calls, concurrent });
                    return stop_stuck(state, effects);
                }
                if calls.is_empty() {
                    continue;
                }
                state.pending.push_front(Batch::Run { calls: calls.clone(), concurrent });
                state.phase = LoopPhase::Execute;
                for call in &calls {
                    // A concurrent batch holds only calls judged reads (an
                    // `agent` call there is a read-only type's).
                    let class =
                        if concurrent { ToolClass::ReadOnly } else { state.class_of_call(call) };
                    effects.push(Effect::Record(SessionEvent::ToolCallStarted {
                        call: call.clone(),
                        class,
                    }));
                }
                return call_checks::start(state, calls, concurrent, effects);
            }
        }
    }
}

/// Answers the harness call at the front of `pending`. Returns whether the
/// loop now waits (a plan to save, a plan review) or the turn ended (stop
/// after the plan).
fn run_harness(state: &mut LoopState, call: ToolCall, effects: &mut Vec<Effect>) -> bool {
    let outcome = harness::answer(&mut state.workflow, &call);
    match decisions::save_plan_first(state, &call, outcome, effects) {
        Some(outcome) => finish_harness(state, call, outcome, effects),
        None => true,
    }
}

/// Records what a harness call led to (its plan saved, if it submitted
/// one); see [`run_harness`] for the return value.
pub(super) fn finish_harness(
    state: &mut LoopState,
    call: ToolCall,
    outcome: HarnessOutcome,
    effects: &mut Vec<Effect>,
) -> bool {
    match outcome {
        HarnessOutcome::Answered { events, result } => {
            state.pending.pop_front();
            effects.extend(events.into_iter().map(Effect::Record));
            leave_plan_mode(state, effects);
            record_result(state, result, ToolMeta::harness(), effects);
            false
        }
        HarnessOutcome::Review { events, reason } => {
            effects.extend(events.into_iter().map(Effect::Record));
            let path = state.workflow.flow.plan.as_ref().map(|plan| plan.path.clone());
            let plan_review = Some(path.unwrap_or_default());
            approval_hooks::ask(state, call, reason, plan_review, effects);
            true
        }
        HarnessOutcome::Stop { events, result } => {
            state.pending.pop_front();
            effects.extend(events.into_iter().map(Effect::Record));
            record_result(state, result, ToolMeta::harness(), effects);
            answer_pending(state, "not run: the turn stopped for the plan review", effects);
            end_turn(state, TurnOutcome::Completed, effects);
            true
        }
    }
}

/// Plan mode is read-only by policy; once its plan is approved the
/// implementation runs in ask mode (the user can switch to auto).
pub(super) fn leave_plan_mode(state: &mut LoopState, effects: &mut Vec<Effect>) {
    if state.config.policy.mode == ApprovalMode::Plan && state.workflow.flow.plan_approved() {
        state.config.policy.mode = ApprovalMode::Ask;
        effects.push(Effect::Record(SessionEvent::ModeChanged { mode: ApprovalMode::Ask }));
    }
}

/// Records `result` of `call` after runaway detection (a note appended
/// when the model is repeating itself); returns whether the turn must
/// stop (`agent::runaway`).
pub(super) fn record_observed(
    state: &mut LoopState,
    call: &ToolCall,
    result: ToolResult,
    meta: ToolMeta,
    ran: Ran,
    effects: &mut Vec<Effect>,
) -> bool {
    let limits = state.config.limits.runaway;
    let verdict = state.runaway.observe(&limits, state.step, call, &result, ran);
    let stop = matches!(verdict, RunawayVerdict::Stop { .. });
    let (result, meta) = runaway::annotate(result, meta, &verdict);
    record_result(state, result, meta, effects);
    stop
}

/// The model kept repeating itself after its note: whatever is still
/// pending is not run, and the turn ends `stuck`.
pub(super) fn stop_stuck(state: &mut LoopState, effects: &mut Vec<Effect>) {
    answer_pending(
        state,
        "not run: keel stopped the turn (the model was going in circles)",
        effects,
    );
    end_turn(state, TurnOutcome::Stuck, effects);
}

/// Gives every call still pending an error result, so the history stays a
/// valid conversation (every call answered).
pub(super) fn answer_pending(state: &mut LoopState, reason: &str, effects: &mut Vec<Effect>) {
    let pending: Vec<Batch> = state.pending.drain(..).collect();
    for batch in pending {
        let calls = match batch {
            Batch::Run { calls, .. } => calls,
            Batch::Ask { call, .. } | Batch::Deny { call, .. } | Batch::Harness { call } => {
                vec![call]
            }
        };
        for call in calls {
            answer(state, ToolResult::error(&call.call_id, reason), effects);
        }
    }
}

fn answer(state: &mut LoopState, result: ToolResult, effects: &mut Vec<Effect>) {
    record_result(state, result, ToolMeta::new(), effects);
}

pub(super) fn record_result(
    state: &mut LoopState,
    result: ToolResult,
    meta: ToolMeta,
    effects: &mut Vec<Effect>,
) {
    state.items.push(Item::ToolResult(result.clone()));
    effects.push(Effect::Record(SessionEvent::ToolCallFinished { result, meta }));
}

pub(super) fn denied_text(reason: &str) -> String {
    format!("not run: {reason}")
}

pub(super) fn end_turn(state: &mut LoopState, outcome: TurnOutcome, effects: &mut Vec<Effect>) {
    state.phase = LoopPhase::Idle;
    state.turn_scope = None;
    state.asking = None;
    state.prejudged = None;
    let usage = state.turn_usage;
    effects.push(Effect::Record(SessionEvent::TurnCompleted { turn: state.turn, outcome, usage }));
    decisions::restore_turn_model(state, effects);
    let final_text = last_turn_text(state);
    effects.push(Effect::TurnEnded { outcome, final_text, usage });
}

/// The last assistant text since the turn's user message.
fn last_turn_text(state: &LoopState) -> Option<String> {
    state
        .items
        .iter()
        .rev()
        .take_while(|item| !matches!(item, Item::User { .. }))
        .find_map(Item::assistant_text)
        .map(str::to_owned)
}
