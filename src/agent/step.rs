//! The transition function and the loop's only sequencer. See the module
//! docs of [`crate::agent`] for the invariants; this file holds [`step`],
//! `step_io.rs` its [`Input`] and [`Effect`].
//!
//! [`step`] hands each input to the handler of its phase (`decisions.rs`,
//! `call_checks.rs`, `batch_finish.rs`, `compaction.rs`, `budget.rs`, …);
//! the handler changes the state and returns a [`Next`], and [`proceed`]
//! carries it out here: working through the pending batches, sending the
//! request, ending the turn, or waiting for the driver. No handler calls
//! back into this file, so the files of `agent/` import one another
//! without a cycle (`tests/suite/layers.rs`).

use crate::policy::CallFacts;
use crate::protocol::{
    Item, ModelResponse, SessionEvent, StopReason, ToolCall, ToolClass, ToolMeta, ToolResult,
    TurnOutcome,
};

use super::announce::announce;
use super::apply::emit;
use super::approval_hooks;
use super::ask_user;
use super::batch_finish;
use super::budget;
use super::call_checks;
use super::compaction;
use super::decisions;
use super::deferred;
use super::harness_hooks;
use super::next::Next;
use super::outside_inputs;
use super::phase::LoopPhase;
use super::queued_input;
use super::record::{answer, answer_pending, denied_text, record_observed};
use super::runaway::Ran;
use super::schedule::{Batch, effective_class, policy_event, schedule};
use super::state::LoopState;
use super::step_io::{Effect, Input};

/// Every phase, for the inputs that may arrive at any point (a mode or
/// model change, a subagent's news, …). Spelled out rather than `_`, so
/// a new phase is not accepted by these arms until it is added here.
macro_rules! any_phase {
    () => {
        LoopPhase::Idle
            | LoopPhase::Infer
            | LoopPhase::AwaitApproval(_)
            | LoopPhase::Execute(_)
            | LoopPhase::Compact(_)
            | LoopPhase::AwaitLimit
            | LoopPhase::SavePlan(_)
            | LoopPhase::Check(_)
            | LoopPhase::Finish(_)
            | LoopPhase::AwaitAnswer
            | LoopPhase::HarnessHooks(_)
    };
}

/// Advances the loop by one input. Inputs that make no sense in the current
/// phase (a stale approval, a response while idle) change nothing.
pub fn step(state: &mut LoopState, input: Input) -> Vec<Effect> {
    let mut effects = Vec::new();
    let next = dispatch(state, input, &mut effects);
    proceed(state, next, &mut effects);
    effects
}

/// Hands `input` to the handler of the current phase; what it says comes
/// next.
fn dispatch(state: &mut LoopState, input: Input, effects: &mut Vec<Effect>) -> Next {
    match (&state.phase, input) {
        (LoopPhase::Idle, Input::UserTurn { text, images }) => {
            start_turn(state, text, images, None, effects)
        }
        (LoopPhase::Idle, Input::UserShell { text }) => {
            super::user_shell::user_ran(state, text, effects);
            Next::Wait
        }
        (any_phase!(), Input::QueueInput { text, mode, images }) => {
            queued_input::queue(state, text, mode, images, effects);
            Next::Wait
        }
        (LoopPhase::Idle, Input::StartQueued { id, text }) => {
            let Some(images) = queued_input::images_of(state, id) else {
                return Next::Wait;
            };
            start_turn(state, text, images, Some(id), effects)
        }
        (LoopPhase::Infer, Input::ModelResponded(response)) => {
            on_response(state, response, effects)
        }
        (LoopPhase::Infer, Input::ModelFailed { message }) => {
            effects.push(Effect::Record(SessionEvent::ModelError { message }));
            Next::EndTurn(TurnOutcome::Failed)
        }
        (LoopPhase::Infer, Input::ContextOverflow { message }) => {
            compaction::on_overflow(state, message, effects)
        }
        (LoopPhase::Idle, Input::CompactRequested { focus }) => {
            compaction::on_compact_requested(state, focus, effects);
            Next::Wait
        }
        (LoopPhase::Compact(_), Input::Summarized { text, usage }) => {
            compaction::on_summary(state, Some(text), usage, effects);
            Next::Wait
        }
        (LoopPhase::Compact(_), Input::SummaryFailed { usage, .. }) => {
            compaction::on_summary(state, None, usage, effects);
            Next::Wait
        }
        (LoopPhase::Compact(_), Input::CompactionApplied { observed }) => {
            state.observe_sections(observed);
            compaction::on_applied(state)
        }
        (any_phase!(), Input::EnvironmentRead { environment }) => {
            outside_inputs::environment_read(state, environment);
            Next::Wait
        }
        (LoopPhase::Compact(_), Input::Interrupted) => compaction::on_interrupted(state),
        (LoopPhase::AwaitApproval(_), Input::CallsChecked { checks }) => {
            approval_hooks::on_checked(state, checks, effects)
        }
        // No answer counts before the question is asked (its hooks first).
        (
            LoopPhase::AwaitApproval(_),
            Input::ApprovalDecided { call_id, approved, note, scope },
        ) if !approval_hooks::waiting(state) => {
            decisions::on_approval(state, &call_id, approved, note, scope, effects)
        }
        (
            LoopPhase::AwaitApproval(_),
            Input::PlanReviewed { call_id, approved, note, edited_text, then_mode },
        ) if !approval_hooks::waiting(state) => {
            let review = decisions::PlanAnswer { approved, note, edited_text, then_mode };
            decisions::on_plan_reviewed(state, &call_id, review, effects)
        }
        (LoopPhase::AwaitApproval(_), Input::ApprovalBlocked { call_id, reason })
            if !approval_hooks::waiting(state) =>
        {
            decisions::on_approval_blocked(state, &call_id, &reason, effects)
        }
        (LoopPhase::AwaitApproval(_), Input::RulePersisted { call_id, rule, note, saved }) => {
            decisions::on_rule_persisted(state, &call_id, rule, note, saved, effects)
        }
        (LoopPhase::SavePlan(_), Input::PlanSaved { path }) => {
            decisions::on_plan_saved(state, path)
        }
        (LoopPhase::SavePlan(_), Input::Interrupted) => {
            decisions::on_plan_save_interrupted(state, effects);
            Next::interrupted()
        }
        (any_phase!(), Input::SetMode { mode }) => {
            decisions::set_mode(state, mode, effects);
            Next::Wait
        }
        (any_phase!(), Input::SetPlanReview { review }) => {
            decisions::set_plan_review(state, review);
            Next::Wait
        }
        (any_phase!(), Input::SetModel { model, for_turn }) => {
            decisions::set_model(state, model, for_turn, effects);
            Next::Wait
        }
        (any_phase!(), Input::ForgetAlways { scope, file }) => {
            decisions::forget_always(state, scope, file, effects);
            Next::Wait
        }
        (LoopPhase::Idle, Input::Rewind(rewind)) => {
            outside_inputs::rewind(state, rewind, effects);
            Next::Wait
        }
        (LoopPhase::Idle, Input::PreapproveTurn { approvals }) => {
            outside_inputs::preapprove_turn(state, approvals, effects);
            Next::Wait
        }
        (LoopPhase::Idle, Input::CallRecovered { call, result, meta }) => {
            outside_inputs::call_recovered(state, &call, result, meta, effects);
            Next::Wait
        }
        (any_phase!(), Input::SubagentStarted(opened)) => {
            outside_inputs::subagent_opened(opened, effects);
            Next::Wait
        }
        (any_phase!(), Input::SubagentFinished(done)) => {
            outside_inputs::subagent_done(state, done, effects);
            Next::Wait
        }
        (any_phase!(), Input::HookContext { context }) => {
            outside_inputs::hook_context(state, context);
            Next::Wait
        }
        (any_phase!(), Input::ToolsOffered { replaced, offered, reason, defer }) => {
            outside_inputs::offer_tools(state, &replaced, offered, reason, defer, effects);
            Next::Wait
        }
        (LoopPhase::Idle, Input::ReviewWaitingPlan { approved, feedback }) => {
            decisions::review_waiting_plan(state, approved, &feedback, effects);
            Next::Wait
        }
        (LoopPhase::Execute(_), Input::BatchFinished { results }) => {
            batch_finish::on_batch_finished(state, results, effects)
        }
        (LoopPhase::Check(_), Input::CallsChecked { checks }) => {
            call_checks::on_checked(state, checks, effects)
        }
        (LoopPhase::Check(_), Input::CallConfirmed { call_id, approved, note }) => {
            call_checks::on_answer(state, &call_id, approved, note, effects)
        }
        (LoopPhase::Check(_), Input::Interrupted) => {
            call_checks::on_interrupted(state, effects);
            Next::interrupted()
        }
        (LoopPhase::Finish(_), Input::CallConfirmed { call_id, approved, note }) => {
            batch_finish::on_answer(state, &call_id, approved, note, effects)
        }
        (LoopPhase::Finish(_), Input::RerunFinished { result, meta }) => {
            batch_finish::on_rerun(state, result, meta, effects)
        }
        (LoopPhase::Finish(_), Input::PostToolHooksDone { verdicts }) => {
            batch_finish::on_post_hooks(state, verdicts, effects)
        }
        (LoopPhase::Finish(_), Input::Interrupted) => {
            batch_finish::on_interrupted(state, effects);
            Next::interrupted()
        }
        (LoopPhase::AwaitAnswer, Input::UserAnswered { call_id, answer }) => {
            ask_user::on_answer(state, &call_id, answer, effects)
        }
        (LoopPhase::HarnessHooks(_), Input::CallsChecked { checks }) => {
            harness_hooks::on_checked(state, checks, effects)
        }
        (LoopPhase::HarnessHooks(_), Input::CallConfirmed { call_id, approved, note }) => {
            harness_hooks::on_answer(state, &call_id, approved, note, effects)
        }
        (LoopPhase::HarnessHooks(_), Input::PostToolHooksDone { verdicts }) => {
            harness_hooks::on_post_hooks(state, verdicts, effects)
        }
        (LoopPhase::HarnessHooks(_), Input::Interrupted) => {
            harness_hooks::on_interrupted(state, effects);
            Next::interrupted()
        }
        (LoopPhase::AwaitLimit, Input::LimitDecided { raised }) => {
            budget::on_decided(state, raised, effects)
        }
        (
            LoopPhase::Infer
            | LoopPhase::AwaitApproval(_)
            | LoopPhase::Execute(_)
            | LoopPhase::AwaitLimit
            | LoopPhase::AwaitAnswer,
            Input::Interrupted,
        ) => Next::interrupted(),
        (
            any_phase!(),
            Input::UserTurn { .. }
            | Input::UserShell { .. }
            | Input::StartQueued { .. }
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
            | Input::PreapproveTurn { .. }
            | Input::Rewind(_)
            | Input::CallRecovered { .. }
            | Input::BatchFinished { .. }
            | Input::CallConfirmed { .. }
            | Input::CallsChecked { .. }
            | Input::RerunFinished { .. }
            | Input::PostToolHooksDone { .. }
            | Input::LimitDecided { .. }
            | Input::UserAnswered { .. }
            | Input::Interrupted,
        ) => Next::Wait,
    }
}

/// The only sequencer: carries out what the handlers say comes next until
/// the loop waits for the driver or the turn has ended.
pub(super) fn proceed(state: &mut LoopState, mut next: Next, effects: &mut Vec<Effect>) {
    loop {
        next = match next {
            Next::Wait => return,
            Next::Advance => advance(state, effects),
            Next::Request => send_request(state, effects),
            Next::EndTurn(outcome) => return end_turn(state, outcome, effects),
            Next::Stop { reason, outcome } => {
                answer_pending(state, reason, effects);
                return end_turn(state, outcome, effects);
            }
            Next::BatchFinished(results) => {
                batch_finish::on_batch_finished(state, results, effects)
            }
            Next::ApprovalBlocked { call_id, reason } => {
                decisions::on_approval_blocked(state, &call_id, &reason, effects)
            }
            Next::FinishHarness(finished) => {
                let (call, outcome) = *finished;
                harness_hooks::finish(state, call, outcome, effects)
            }
        };
    }
}

/// Starts a turn with `text`; `queued`: the queued input it delivers.
fn start_turn(
    state: &mut LoopState,
    text: String,
    images: Vec<crate::protocol::ImagePart>,
    queued: Option<u64>,
    effects: &mut Vec<Effect>,
) -> Next {
    state.pending.clear();
    emit(state, SessionEvent::TurnStarted { turn: state.turn + 1 }, effects);
    if state.workflow.finished() {
        effects.extend(state.workflow.restart().map(Effect::Record));
    }
    // What changed since the last turn (environment, mode, phase) comes
    // before the request it applies to.
    announce(state, effects);
    emit(state, SessionEvent::UserMessage { text, images, queued }, effects);
    infer(state, effects)
}

/// A new step: the model is asked, compacting first when the history
/// crossed the threshold (then the request waits for the summary).
fn infer(state: &mut LoopState, effects: &mut Vec<Effect>) -> Next {
    state.step += 1;
    state.phase = LoopPhase::Infer;
    if compaction::before_request(state, effects) {
        return Next::Wait;
    }
    Next::Request
}

/// Sends the request for the current state, unless it would take the
/// session past a spend limit (then the front end is asked to raise it);
/// every [`Effect::CallModel`] of a turn goes through here. What changed
/// is announced first (appended to the history), so the projection counts
/// it and the request carries it.
fn send_request(state: &mut LoopState, effects: &mut Vec<Effect>) -> Next {
    budget::record_limits(state, effects);
    announce(state, effects);
    if let Some(hit) = budget::check(state) {
        budget::stop(state, hit, effects);
        return Next::Wait;
    }
    effects.push(Effect::CallModel(state.request()));
    Next::Wait
}

fn on_response(state: &mut LoopState, response: ModelResponse, effects: &mut Vec<Effect>) -> Next {
    let estimated = budget::estimate_unreported(state, &response, effects);
    let cost_usd = state.config.pricing.cost_usd(&response.usage);
    // Judged, run and logged by their real names; the history keeps the
    // model's own `call_tool` (see `deferred`).
    let calls: Vec<ToolCall> = response.tool_calls().map(|call| state.real_call(call)).collect();
    let cut = response.stop_reason == StopReason::MaxTokens;
    let event = SessionEvent::ModelResponse {
        step: state.step,
        response,
        cost_usd,
        estimated_tokens: estimated.map(|(tokens, _)| tokens),
        estimated_cost_usd: estimated.and_then(|(_, cost)| cost),
    };
    emit(state, event, effects);
    if calls.is_empty() {
        // An answer cut at the output limit is not a finished one.
        let outcome = if cut { TurnOutcome::Cut } else { TurnOutcome::Completed };
        return Next::EndTurn(outcome);
    }
    let max_steps = state.config.limits.max_steps;
    if state.step >= max_steps {
        let reason = format!("not run: the step limit of {max_steps} was reached");
        for call in &calls {
            answer(state, ToolResult::error(&call.call_id, &reason), effects);
        }
        return Next::EndTurn(TurnOutcome::MaxSteps);
    }
    state.pending = batches(state, calls, effects).into();
    Next::Advance
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
        // Answered by the loop over what it was offered; what `call_tool`
        // stands for was unwrapped already and is judged below.
        if deferred::is_deferral_tool(&call.name) {
            batches.extend(schedule(std::mem::take(&mut judged)));
            batches.push(Batch::Harness { call });
            continue;
        }
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
        let verdict = state.judge_call(&state.config.policy, facts);
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
fn advance(state: &mut LoopState, effects: &mut Vec<Effect>) -> Next {
    loop {
        let front = state.pending.front().cloned();
        if !matches!(front, Some(Batch::Run { .. })) {
            // The hooks' verdict kept from before a question stands only
            // for the approved call's own batch, which is next after it:
            // here the call was declined, blocked or a plan reviewed.
            state.drop_prejudged();
        }
        match front {
            None => {
                // The response's calls all have results: what the user
                // typed to steer the turn goes before the next request.
                queued_input::deliver_steers(state, effects);
                return infer(state, effects);
            }
            Some(Batch::Deny { call, reason }) => {
                state.pending.pop_front();
                // The policy's (or the user's) reason, for the log and
                // front ends; the model reads it in the result text.
                let meta = ToolMeta::denied(reason.clone());
                let result = ToolResult::error(&call.call_id, denied_text(&reason));
                if record_observed(state, &call, result, meta, Ran::Denied, effects) {
                    return Next::stuck();
                }
            }
            Some(Batch::Ask { call, reason }) => {
                let (admitted, stuck) = admit(state, vec![call.clone()], false, effects);
                if admitted.is_empty() {
                    state.pending.pop_front();
                }
                if stuck {
                    return Next::stuck();
                }
                if admitted.is_empty() {
                    continue;
                }
                approval_hooks::ask(state, call, reason, None, effects);
                return Next::Wait;
            }
            Some(Batch::Harness { call }) => match harness_hooks::start(state, call, effects) {
                Next::Advance => {}
                next => return next,
            },
            Some(Batch::Run { calls, concurrent }) => {
                state.pending.pop_front();
                let (calls, stuck) = admit(state, calls, concurrent, effects);
                if stuck {
                    // The admitted calls are answered "not run" with the rest.
                    state.pending.push_front(Batch::Run { calls, concurrent });
                    return Next::stuck();
                }
                if calls.is_empty() {
                    continue;
                }
                state.pending.push_front(Batch::Run { calls: calls.clone(), concurrent });
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
                call_checks::start(state, calls, concurrent, effects);
                return Next::Wait;
            }
        }
    }
}

fn end_turn(state: &mut LoopState, outcome: TurnOutcome, effects: &mut Vec<Effect>) {
    // What any wait held (a question, a kept verdict) ends with the turn.
    state.phase = LoopPhase::Idle;
    let usage = state.turn_usage;
    // A custom command's model gives way to the one before it.
    let restored = state.turn_model.clone().filter(|model| *model != state.config.model);
    emit(state, SessionEvent::TurnCompleted { turn: state.turn, outcome, usage }, effects);
    if let Some(model) = restored {
        emit(state, SessionEvent::ModelChanged { model, after_turn: None }, effects);
    }
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
