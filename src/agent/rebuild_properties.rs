//! The rebuild's property tests: random sessions driven through [`step`]
//! as a driver would (approvals answered, "always" rules persisted or
//! not, plans saved, reviewed live and between runs, modes changed between
//! turns, turns given pre-approvals as a custom command's `allowed-tools`
//! gives them, models switched
//! between turns (`/model`, a command's model for its turn), subagents'
//! spend, PreToolUse hooks' asks, denials and rewrites, unsandboxed
//! re-runs offered and answered, PostToolUse hooks' verdicts) record a
//! log; rebuilding it gives the live state back (the spend each response
//! was charged at its model's prices included), and no
//! prefix, damaged or not, re-runs an answered call; a resume after any
//! prefix that finishes the open `agent` calls from their children counts
//! each child's spend once.

use proptest::prelude::*;

use super::rebuild_tests::{
    Line, Unchanged, config, rebuild, rebuild_lines, record, response_with,
};
use super::*;
use crate::policy::ApprovalMode;
use crate::protocol::{EventRecord, Item, SessionEvent, ToolCall, ToolResult, Usage};

/// One turn of a random session: a control byte (what the user decides
/// before the turn, see [`before_turn`]) and the model's responses, each a
/// list of call kinds (see [`random_call`]).
pub(super) type Turn = (u8, Vec<Vec<u8>>);

/// A random call: a read, a write, a `set_phase` (to a phase picked by
/// the counter), a `todo_write`, a `submit_plan` or a shell command (asked
/// about in ask mode, refused in plan mode).
fn random_call(kind: u8, n: usize) -> ToolCall {
    let phases = ["explore", "plan", "implement", "verify", "deliver", "orient"];
    let (name, args) = match kind % 6 {
        0 => ("read_file", serde_json::json!({})),
        1 => ("write_file", serde_json::json!({ "path": format!("f{}", n % 5) })),
        2 => ("set_phase", serde_json::json!({ "phase": phases[n % phases.len()] })),
        3 => {
            let status = ["pending", "in_progress", "completed"][n % 3];
            let todos = serde_json::json!([{ "id": "1", "text": "t", "status": status }]);
            ("todo_write", serde_json::json!({ "todos": todos }))
        }
        4 => ("submit_plan", serde_json::json!({ "plan_markdown": format!("1. step {n}") })),
        _ => ("shell", serde_json::json!({ "command": format!("touch f{}", n % 3) })),
    };
    ToolCall {
        call_id: format!("c{n}"),
        name: name.into(),
        arguments: args.to_string(),
        item_id: None,
        provider_data: None,
    }
}

/// The number of call `c<n>`.
fn number(call_id: &str) -> usize {
    call_id.trim_start_matches('c').parse().unwrap_or(0)
}

/// Whether `call` stands for an `agent` call (every fifth call): its
/// child's spend is recorded before the batch's results.
fn delegates(call: &ToolCall) -> bool {
    number(&call.call_id) % 5 == 2
}

/// What the child of an `agent` call `c<n>` spent, by `n`: the same
/// whenever its call is finished (live, or again from its log on a resume).
fn child_done(call: &ToolCall) -> SubagentDone {
    let n = number(&call.call_id) as u64;
    SubagentDone {
        call_id: call.call_id.clone(),
        session_id: format!("child{n}"),
        outcome: crate::protocol::TurnOutcome::Completed,
        usage: Usage { input_tokens: 30 + n, output_tokens: 7, ..Usage::default() },
        cost_usd: n.is_multiple_of(2).then_some(0.01),
        // Some children ran on a server reporting no usage.
        estimated: Unreported {
            tokens: (n % 3) * 50,
            cost_usd: if n.is_multiple_of(4) { 0.003 } else { 0.0 },
        },
    }
}

/// The tokens child `done` spent, its estimates included.
fn child_tokens(done: &SubagentDone) -> u64 {
    done.usage.total_tokens() + done.estimated.tokens
}

/// What the driver's tools answer for `call`: "ok" (the same text for
/// the same call, so the runaway guard sees repeats), except a shell
/// command numbered a multiple of 3, which the sandbox blocked.
fn ran(call: &ToolCall) -> (ToolResult, crate::protocol::ToolMeta) {
    if call.name == "shell" && number(&call.call_id).is_multiple_of(3) {
        let meta = crate::protocol::ToolMeta::command(Some(1), None)
            .with_kind(crate::protocol::ResultKind::SandboxViolation);
        return (ToolResult::error(&call.call_id, "Permission denied"), meta);
    }
    (ToolResult::ok(&call.call_id, "ok"), crate::protocol::ToolMeta::new())
}

/// What PreToolUse hooks say about call `c<n>`, by `n` (before a batch
/// and before an approval question): every seventh asks, the one after
/// is denied, every eleventh's input is rewritten (policy judges it
/// again); keel's native hooks say nothing; a call judged before its
/// approval runs no hook.
fn pre_tool_hooks(call: &ToolCall, hooks: &CheckHooks) -> Option<PreToolVerdict> {
    let n = number(&call.call_id);
    match hooks {
        CheckHooks::Natives => return Some(PreToolVerdict::default()),
        CheckHooks::Judged => return None,
        CheckHooks::PreToolUse | CheckHooks::BeforeApproval { .. } | CheckHooks::Harness => {}
    }
    let permission = match n % 7 {
        3 => Some(HookPermission::Ask),
        4 => Some(HookPermission::Deny),
        _ => None,
    };
    let updated_input = (n % 11 == 6).then(|| serde_json::json!({ "command": "ls" }));
    Some(PreToolVerdict { permission, reason: format!("hook on {n}"), updated_input })
}

/// The user's answer on call `c<n>`, by `n`: for a plan, approved with the
/// file edited and "then auto", rejected, approved as is, or declined by a
/// hook; for another call, approved "always", approved once, declined, or
/// declined by a hook.
fn answer(call: &ToolCall, plan_review: Option<String>) -> Input {
    let n = number(&call.call_id);
    let call_id = call.call_id.clone();
    if n % 4 == 3 {
        return Input::ApprovalBlocked { call_id, reason: "a hook said no".into() };
    }
    if plan_review.is_some() {
        let approved = n % 4 != 1;
        let edited_text = n.is_multiple_of(4).then(|| format!("1. edited {n}"));
        let then_mode = n.is_multiple_of(4).then_some(ApprovalMode::Auto);
        let note = (!approved).then(|| "smaller".to_owned());
        return Input::PlanReviewed { call_id, approved, note, edited_text, then_mode };
    }
    let (approved, scope) = match n % 4 {
        0 => (true, crate::policy::ApprovalScope::AlwaysPrefix(vec!["touch".into()])),
        1 => (true, crate::policy::ApprovalScope::Once),
        _ => (false, crate::policy::ApprovalScope::Once),
    };
    Input::ApprovalDecided { call_id, approved, note: None, scope }
}

/// Carries out `effects` as a driver would until the loop needs a model
/// response: calls checked by [`pre_tool_hooks`], questions about them
/// answered by number, batches answered by [`ran`], re-runs offered
/// answered and run, PostToolUse hooks
/// heard on even-numbered calls, a spend limit raised every
/// other time it is hit, approvals answered by [`answer`], every other
/// "always" rule written, plans saved except every third revision.
pub(super) fn drive(state: &mut LoopState, mut effects: Vec<Effect>, log: &mut Vec<EventRecord>) {
    let mut asked = 0;
    let mut persisted = 0;
    loop {
        record(&effects, log);
        effects = match effects.last().cloned() {
            Some(Effect::RunBatch { calls, .. }) => {
                // The user types during some batches: a steer (delivered
                // after the batch) or an input queued for the next turn.
                for call in &calls {
                    let mode = match number(&call.call_id) % 6 {
                        1 => crate::protocol::Delivery::Steer,
                        4 => crate::protocol::Delivery::Queue,
                        _ => continue,
                    };
                    let text = format!("typed {}", call.call_id);
                    let input = Input::QueueInput { text, mode, images: Vec::new() };
                    record(&step(state, input), log);
                }
                // Every fifth call stands for an `agent` call: its child's
                // spend is recorded before the batch's results.
                for call in calls.iter().filter(|c| delegates(c)) {
                    record(&step(state, Input::SubagentFinished(child_done(call))), log);
                }
                let results = calls.iter().map(ran).collect();
                step(state, Input::BatchFinished { results })
            }
            Some(Effect::CheckCalls { calls, hooks, .. }) => {
                let checks = calls
                    .iter()
                    .map(|call| CallCheck {
                        call_id: call.call_id.clone(),
                        hooks: pre_tool_hooks(call, &hooks),
                        links: crate::policy::PathLinks::default(),
                    })
                    .collect();
                step(state, Input::CallsChecked { checks })
            }
            Some(Effect::ConfirmCall { call, .. }) => {
                let approved = number(&call.call_id).is_multiple_of(2);
                let note = (!approved).then(|| "no".to_owned());
                step(state, Input::CallConfirmed { call_id: call.call_id, approved, note })
            }
            Some(Effect::RerunUnsandboxed { call, .. }) => {
                let mut meta = crate::protocol::ToolMeta::command(Some(0), None);
                meta.set_unsandboxed_rerun();
                let result = ToolResult::ok(&call.call_id, "ran outside");
                step(state, Input::RerunFinished { result, meta })
            }
            Some(Effect::RunPostToolHooks { ran }) => {
                let verdicts = ran
                    .iter()
                    .filter(|(call, _, _)| number(&call.call_id).is_multiple_of(2))
                    .map(|(call, _, _)| PostToolVerdict {
                        call_id: call.call_id.clone(),
                        blocked: number(&call.call_id).is_multiple_of(4).then(|| "lint".to_owned()),
                        context: vec![format!("context {}", call.call_id)],
                    })
                    .collect();
                step(state, Input::PostToolHooksDone { verdicts })
            }
            Some(Effect::AskRaiseLimit(hit)) => {
                asked += 1;
                let raised = (asked % 2 == 1).then(|| hit.raised());
                step(state, Input::LimitDecided { raised })
            }
            Some(Effect::AskApproval { call, plan_review, .. }) => {
                step(state, answer(&call, plan_review))
            }
            Some(Effect::PersistRule { call_id, rule, note }) => {
                persisted += 1;
                let saved = persisted % 2 == 1;
                step(state, Input::RulePersisted { call_id, rule, note, saved })
            }
            Some(Effect::SavePlan { revision, .. }) => {
                let path = (revision % 3 != 0).then(|| format!(".keel/plans/r{revision}.md"));
                step(state, Input::PlanSaved { path })
            }
            _ => return,
        };
    }
}

/// The review style a session's first control byte sets (per process,
/// as `exec --plan-only`/`--approve-plan` do), if any.
pub(super) fn review_of(turns: &[Turn]) -> Option<PlanReview> {
    let control = turns.first().map_or(0, |(control, _)| *control);
    match (control / 18) % 4 {
        1 => Some(PlanReview::Ask),
        2 => Some(PlanReview::Approve),
        3 => Some(PlanReview::StopAfterSubmit),
        _ => None,
    }
}

/// What the user decides before a turn, by its control byte: a mode (or
/// none), then approving or rejecting a plan left waiting for review (or
/// neither), then whether the turn pre-approves `touch f1…` and exactly
/// `touch f0` (some of its shell calls then run without asking), as a
/// custom command's `allowed-tools` does.
fn before_turn(state: &mut LoopState, control: u8, log: &mut Vec<EventRecord>) {
    let modes = ["ask", "auto", "plan", "explore", "yolo"];
    if let Some(mode) = modes.get(usize::from(control % 6)).and_then(|m| ApprovalMode::parse(m)) {
        let effects = step(state, Input::SetMode { mode });
        record(&effects, log);
    }
    let verdict = match (control / 6) % 3 {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    };
    if let Some(approved) = verdict {
        let effects =
            step(state, Input::ReviewWaitingPlan { approved, feedback: "smaller".into() });
        record(&effects, log);
    }
    // The highest control bytes only, so the bytes below keep meaning what
    // the regression cases below were recorded with.
    if control >= 216 {
        let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        let mut allowlist = crate::policy::Allowlist::default();
        allowlist.prefixes.insert(words(&["touch", "f1"]));
        allowlist.commands.insert(words(&["touch", "f0"]));
        allowlist.tools.insert("mcp__docs__*".to_owned());
        let approvals = TurnApprovals { owner: "the /fix command".into(), allowlist };
        record(&step(state, Input::PreapproveTurn { approvals }), log);
    }
}

/// The configured model `m` with `[context]` prices of its own.
pub(super) fn priced() -> LoopConfig {
    let mut config = config(ApprovalMode::Auto);
    let prices = crate::context::Pricing {
        input_price: Some(1.0),
        cached_input_price: Some(0.1),
        output_price: Some(2.0),
        ..Default::default()
    };
    config.pricing = prices;
    config.configured.pricing = prices;
    config
}

pub(super) fn rebuild_priced(records: &[EventRecord]) -> Rebuilt {
    let mut rebuilder = Rebuilder::new(priced());
    for record in records {
        rebuilder.apply(record.clone());
    }
    rebuilder.finish()
}

/// The model switch before turn `t`, by `models[t]`: `/model` to another
/// priced model, a custom command's model for the turn, back to the
/// configured model, or none.
fn switch_model(state: &mut LoopState, choice: Option<&u8>, log: &mut Vec<EventRecord>) {
    let (model, for_turn) = match choice.map(|c| c % 4) {
        Some(1) => ("gpt-5-nano", false),
        Some(2) => ("claude-opus-4", true),
        Some(3) => ("m", false),
        _ => return,
    };
    record(&step(state, Input::SetModel { model: model.into(), for_turn }), log);
}

/// A random session (see [`Turn`]); an empty response ends a turn. Usage
/// varies per response; `max_tokens` limits the session's spend; `models`
/// switches models before turns ([`switch_model`]).
fn run(turns: &[Turn], max_tokens: Option<u64>) -> (LoopState, Vec<EventRecord>) {
    run_switching(turns, max_tokens, &[])
}

fn run_switching(
    turns: &[Turn],
    max_tokens: Option<u64>,
    models: &[u8],
) -> (LoopState, Vec<EventRecord>) {
    run_noting(turns, max_tokens, models, &mut Vec::new())
}

/// [`run_switching`], noting the conversation just before each prompt
/// (before its `turn_started` line): what a rewind to it must give back.
pub(super) fn run_noting(
    turns: &[Turn],
    max_tokens: Option<u64>,
    models: &[u8],
    before_prompts: &mut Vec<Vec<Item>>,
) -> (LoopState, Vec<EventRecord>) {
    let mut config = priced();
    config.limits.spend.max_tokens = max_tokens;
    // PostToolUse hooks listen in sessions with an even number of turns.
    config.post_tool_hooks = turns.len().is_multiple_of(2);
    // PreToolUse hooks hear harness calls too in every third session.
    config.pre_tool_hooks = turns.len() % 3 == 1;
    let mut state = LoopState::open(config, Opening::default());
    if let Some(review) = review_of(turns) {
        step(&mut state, Input::SetPlanReview { review });
    }
    let mut log = Vec::new();
    let mut n = 0;
    for (t, (control, responses)) in turns.iter().enumerate() {
        before_turn(&mut state, *control, &mut log);
        switch_model(&mut state, models.get(t), &mut log);
        before_prompts.push(state.items.clone());
        let effects =
            step(&mut state, Input::UserTurn { text: format!("turn {t}"), images: Vec::new() });
        drive(&mut state, effects, &mut log);
        for calls in responses.iter().chain(std::iter::once(&Vec::new())) {
            if state.phase.is_idle() {
                break;
            }
            let items: Vec<Item> = if calls.is_empty() {
                vec![Item::Assistant { text: "done".into() }]
            } else {
                calls
                    .iter()
                    .map(|kind| {
                        n += 1;
                        Item::ToolCall(random_call(*kind, n))
                    })
                    .collect()
            };
            let usage = Usage {
                input_tokens: 40 + 17 * n as u64,
                cached_input_tokens: 11 * n as u64,
                output_tokens: 3 + calls.len() as u64 * 29,
                ..Usage::default()
            };
            let effects = step(&mut state, response_with(items, usage));
            drive(&mut state, effects, &mut log);
        }
    }
    (state, log)
}

pub(super) fn sessions() -> impl Strategy<Value = Vec<Turn>> {
    let turn = (any::<u8>(), prop::collection::vec(prop::collection::vec(any::<u8>(), 1..4), 0..4));
    prop::collection::vec(turn, 1..4)
}

proptest! {
    #[test]
    fn rebuilding_reproduces_the_live_state(
        turns in sessions(),
        max_tokens in prop::option::of(200u64..3_000),
        models in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        let (live, log) = run_switching(&turns, max_tokens, &models);
        // Rebuilt with no limits configured: the log carries them.
        let mut rebuilt = rebuild_priced(&log);
        // The review style is per process: a resume sets it again.
        if let Some(review) = review_of(&turns) {
            step(&mut rebuilt.state, Input::SetPlanReview { review });
        }
        prop_assert_eq!(&rebuilt.state.items, &live.items);
        prop_assert_eq!(rebuilt.state.turn, live.turn);
        prop_assert_eq!(rebuilt.state.session_usage, live.session_usage);
        prop_assert_eq!(rebuilt.state.largest_output_tokens, live.largest_output_tokens);
        prop_assert_eq!(rebuilt.state.config.limits.spend, live.config.limits.spend);
        prop_assert_eq!(rebuilt.state.logged_limits, live.logged_limits);
        prop_assert_eq!(&rebuilt.state.runaway, &live.runaway);
        prop_assert_eq!(&rebuilt.state.workflow, &live.workflow);
        prop_assert_eq!(rebuilt.state.config.policy.mode, live.config.policy.mode);
        prop_assert_eq!(&rebuilt.state.allowlist, &live.allowlist);
        prop_assert_eq!(&rebuilt.state.turn_approvals, &live.turn_approvals);
        prop_assert_eq!(&rebuilt.state.delegated, &live.delegated);
        prop_assert_eq!(rebuilt.state.spent(), live.spent());
        prop_assert_eq!(rebuilt.state.session_cost_usd, live.session_cost_usd);
        prop_assert_eq!(&rebuilt.state.config.model, &live.config.model);
        prop_assert_eq!(rebuilt.state.config.pricing, live.config.pricing);
        prop_assert_eq!(rebuilt.state.config.context_window, live.config.context_window);
        prop_assert_eq!(&rebuilt.state.turn_model, &live.turn_model);
        prop_assert_eq!(&rebuilt.state.queued, &live.queued);
        prop_assert_eq!(rebuilt.state.queued_ids, live.queued_ids);
        prop_assert!(rebuilt.open_turn.is_none());
    }

    /// Every prefix rebuilds the spend so far: a resume keeps counting
    /// from what the log holds, and the runaway counts of an open turn.
    #[test]
    fn every_prefix_rebuilds_the_spend_so_far(
        turns in sessions(),
        max_tokens in prop::option::of(200u64..3_000),
        models in prop::collection::vec(any::<u8>(), 0..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let (_, log) = run_switching(&turns, max_tokens, &models);
        let cut = cut.index(log.len()) + 1;
        let rebuilt = rebuild_priced(&log[..cut]);
        let mut spent = Usage::default();
        let mut cost = 0.0;
        // The spend's tokens, children's estimates included, as the lines say.
        let mut tokens = 0;
        for record in &log[..cut] {
            match &record.event {
                SessionEvent::ModelResponse { response, cost_usd, estimated_tokens, .. } => {
                    spent.add(&response.usage);
                    tokens += response.usage.total_tokens() + estimated_tokens.unwrap_or(0);
                    // Every model here is priced: each line carries its cost.
                    prop_assert!(cost_usd.is_some());
                    cost += cost_usd.unwrap_or(0.0);
                }
                SessionEvent::SubagentFinished { usage, estimated_tokens, .. } => {
                    tokens += usage.total_tokens() + estimated_tokens.unwrap_or(0);
                }
                _ => {}
            }
        }
        prop_assert_eq!(rebuilt.state.session_usage, spent);
        prop_assert_eq!(rebuilt.state.session_cost_usd, Some(cost));
        prop_assert_eq!(rebuilt.state.spent().tokens, tokens);
    }

    /// A crash after any line, then a resume that finishes the open turn's
    /// started `agent` calls from their children's logs (as
    /// `subagent_resume.rs` does: the child's whole spend, then the call's
    /// result): every child's spend counts exactly once, also when its
    /// `subagent_finished` line was written before the crash.
    #[test]
    fn a_resume_after_any_prefix_counts_each_childs_spend_once(
        turns in sessions(),
        cut in any::<prop::sample::Index>(),
    ) {
        let (_, log) = run(&turns, None);
        let cut = cut.index(log.len()) + 1;
        let (state, counted) = resumed_after(&log[..cut]);
        let expected: u64 = counted.values().map(child_tokens).sum();
        let delegated = &state.delegated;
        prop_assert_eq!(delegated.usage.total_tokens() + delegated.estimated.tokens, expected);
        let children: Vec<&String> = counted.keys().collect();
        prop_assert_eq!(delegated.children.iter().collect::<Vec<_>>(), children);
    }

    #[test]
    fn no_prefix_reruns_an_answered_call(turns in sessions(), cut in any::<prop::sample::Index>()) {
        let (_, log) = run(&turns, None);
        let cut = cut.index(log.len()) + 1;
        let rebuilt = rebuild(&log[..cut]);
        let Some(open) = rebuilt.open_turn else { return Ok(()) };
        let answered: Vec<String> = log[..cut]
            .iter()
            .filter_map(|r| match &r.event {
                SessionEvent::ToolCallFinished { result, .. } => Some(result.call_id.clone()),
                _ => None,
            })
            .collect();
        let mut state = rebuilt.state;
        for effect in reconcile(&mut state, &open, &Unchanged) {
            if let Effect::RunBatch { calls, .. } | Effect::CheckCalls { calls, .. } = &effect {
                for c in calls {
                    prop_assert!(!answered.contains(&c.call_id));
                }
            }
            if let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = effect {
                prop_assert!(!answered.contains(&result.call_id));
            }
        }
    }

    /// Fuzz target for the session log's meaning (issue 14): any prefix
    /// of a session, with lines made unreadable and a response moved
    /// after its results, rebuilds without panicking; no call whose
    /// result is readable is run or answered again, no call that may
    /// have started (or that damage hides) is run, and a finished
    /// history has one result per call.
    #[test]
    fn fuzz_damaged_logs_never_rerun_a_recorded_call(
        turns in sessions(),
        cut in any::<prop::sample::Index>(),
        damaged in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        torn in any::<bool>(),
        moved in any::<Option<prop::sample::Index>>(),
    ) {
        let (_, log) = run(&turns, None);
        let cut = cut.index(log.len()) + 1;
        let mut records: Vec<EventRecord> = log[..cut].to_vec();
        if let Some(moved) = moved {
            let at = moved.index(records.len());
            if matches!(records[at].event, SessionEvent::ModelResponse { .. }) {
                let response = records.remove(at);
                records.push(response);
            }
            // Written in this order: the seqs rise (a lower one is skipped).
            for (seq, record) in records.iter_mut().enumerate() {
                record.seq = seq as u64;
            }
        }
        let damaged: Vec<usize> = damaged.iter().map(|i| i.index(records.len())).collect();
        let last = records.len() - 1;
        let lines: Vec<Line> = records
            .iter()
            .enumerate()
            .map(|(i, r)| if damaged.contains(&i) {
                Line::Unreadable(torn && i == last)
            } else {
                Line::Record(r.clone())
            })
            .collect();
        let readable = |pred: &dyn Fn(&SessionEvent) -> Option<String>| -> Vec<String> {
            lines.iter().filter_map(|l| match l {
                Line::Record(r) => pred(&r.event),
                Line::Unreadable(_) => None,
            }).collect()
        };
        let answered = readable(&|e| match e {
            SessionEvent::ToolCallFinished { result, .. } => Some(result.call_id.clone()),
            _ => None,
        });
        let started = readable(&|e| match e {
            SessionEvent::ToolCallStarted { call, .. } => Some(call.call_id.clone()),
            _ => None,
        });
        let rebuilt = rebuild_lines(&lines);
        let Some(open) = rebuilt.open_turn.clone() else {
            // Idle: every call has exactly one result after it.
            let mut pending: Vec<&str> = Vec::new();
            for item in &rebuilt.state.items {
                match item {
                    Item::ToolCall(c) => pending.push(&c.call_id),
                    Item::ToolResult(r) => {
                        let at = pending.iter().position(|id| *id == r.call_id);
                        prop_assert!(at.is_some(), "a result before its call: {}", r.call_id);
                        if let Some(at) = at { pending.remove(at); }
                    }
                    Item::User { .. }
                    | Item::Assistant { .. }
                    | Item::Reasoning(_)
                    | Item::Context { .. } => {}
                }
            }
            prop_assert!(pending.is_empty(), "calls without a result: {pending:?}");
            return Ok(());
        };
        let mut state = rebuilt.state.clone();
        for effect in reconcile(&mut state, &open, &Unchanged) {
            if let Effect::RunBatch { calls, .. } | Effect::CheckCalls { calls, .. } = &effect {
                for c in calls {
                    prop_assert!(!answered.contains(&c.call_id), "re-ran {}", c.call_id);
                    prop_assert!(!started.contains(&c.call_id), "ran a started {}", c.call_id);
                    let unknown = open.calls.iter().any(|o| o.call.call_id == c.call_id
                        && matches!(o.progress, CallProgress::Unknown { .. }));
                    prop_assert!(!unknown, "ran an unknown {}", c.call_id);
                }
            }
            if let Effect::Record(SessionEvent::ToolCallFinished { result, .. }) = effect {
                prop_assert!(!answered.contains(&result.call_id), "answered {} twice", result.call_id);
            }
        }
    }
}

/// Found by the property: within one turn an approved plan, a move to
/// deliver, then a command moving back to implement; the rebuild used to
/// restart the workflow on that move (deliver is "done") and lose the plan.
#[test]
fn a_move_out_of_deliver_within_a_turn_keeps_the_plan_when_rebuilt() {
    let turns: Vec<Turn> = vec![(108, vec![vec![82, 0], vec![35, 188], vec![29]])];
    let (live, log) = run(&turns, None);
    let mut rebuilt = rebuild(&log);
    step(&mut rebuilt.state, Input::SetPlanReview { review: PlanReview::Approve });
    assert!(live.workflow.flow.plan_approved());
    assert_eq!(rebuilt.state.workflow, live.workflow);
}

/// The re-run path is exercised: in ask mode, a shell command the sandbox
/// blocked is offered a re-run; the answers (declined for `c9`, approved
/// for `c12`, both allowed by the "always" answer on `c4`) are `approval` lines and the re-run's result is the call's,
/// and the log rebuilds the live history.
#[test]
fn rerun_offers_are_recorded_and_rebuilt() {
    let shells = vec![5, 5, 5, 5];
    let turns: Vec<Turn> = vec![(0, vec![shells.clone(), shells.clone(), shells])];
    let (live, log) = run(&turns, None);
    let approval = |id: &str| {
        log.iter()
            .filter_map(|r| match &r.event {
                SessionEvent::Approval { call_id, approved, .. } if call_id == id => {
                    Some(*approved)
                }
                _ => None,
            })
            .collect::<Vec<bool>>()
    };
    // Allowed by the "always" answer on `c4`, then offered the re-run.
    assert_eq!(approval("c9"), [false]);
    assert_eq!(approval("c12"), [true]);
    let result = |id: &str| {
        live.items.iter().find_map(|item| match item {
            Item::ToolResult(r) if r.call_id == id => Some(r.output.clone()),
            _ => None,
        })
    };
    assert_eq!(result("c9").as_deref(), Some("Permission denied"));
    assert_eq!(result("c12").as_deref(), Some("ran outside"));
    assert_eq!(rebuild(&log).state.items, live.items);
}

/// `log` rebuilt and resumed as the runtime resumes it: each started
/// `agent` call of the open turn finished again from its child (its spend,
/// then its result). Returns the state and every child the log and the
/// resume finished, by session id.
fn resumed_after(
    log: &[EventRecord],
) -> (LoopState, std::collections::BTreeMap<String, SubagentDone>) {
    let rebuilt = rebuild(log);
    let mut counted = std::collections::BTreeMap::new();
    for record in log {
        if let SessionEvent::SubagentFinished { call_id, session_id, .. } = &record.event {
            let call = ToolCall { call_id: call_id.clone(), ..random_call(0, 0) };
            counted.insert(session_id.clone(), child_done(&call));
        }
    }
    let mut state = rebuilt.state;
    let open = rebuilt.open_turn.iter().flat_map(|open| &open.calls);
    for open_call in open.filter(|o| o.progress != CallProgress::NotStarted) {
        if !delegates(&open_call.call) {
            continue;
        }
        let done = child_done(&open_call.call);
        counted.insert(done.session_id.clone(), done.clone());
        step(&mut state, Input::SubagentFinished(done));
        let (result, meta) = ran(&open_call.call);
        step(&mut state, Input::CallRecovered { call: open_call.call.clone(), result, meta });
    }
    (state, counted)
}

/// The crash point of issue 35: the child's `subagent_finished` line is
/// on disk, the `agent` call's result is not. Before, the resume counted
/// the child's spend a second time (1 760 tokens for 1 320 in the field).
#[test]
fn a_crash_between_a_childs_finished_line_and_its_calls_result_counts_the_child_once() {
    // One turn whose one response is `c1` (a read) and `c2` (an `agent` call).
    let turns: Vec<Turn> = vec![(1, vec![vec![0, 0]])];
    let (live, log) = run(&turns, None);
    let finished = log
        .iter()
        .position(|r| matches!(r.event, SessionEvent::SubagentFinished { .. }))
        .expect("the agent call's child finished");
    assert!(matches!(log[finished + 1].event, SessionEvent::ToolCallFinished { .. }));
    let (state, counted) = resumed_after(&log[..=finished]);
    assert_eq!(counted.len(), 1);
    assert_eq!(state.delegated, live.delegated, "the child counts once");
    let before = rebuild(&log[..=finished]).state.spent();
    assert_eq!(state.spent(), before, "the resume adds nothing to what the log counted");
}
