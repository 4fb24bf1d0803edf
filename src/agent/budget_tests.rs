//! Spend limits and runaway detection through [`step`], with no I/O: the
//! projection per provider's prices, the request that is not sent, the
//! answer to the raise question, and a model going in circles.

use super::test_support::step_checked as step;
use super::test_support::{call, call_with, config};
use super::*;
use crate::context::Pricing;
use crate::policy::ApprovalMode;
use crate::protocol::{
    Item, ModelResponse, SessionEvent, StopReason, ToolResult, TurnOutcome, Usage,
};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The next request after one of 100k input tokens, adding 10k: the
/// previous prefix read from the cache, the new part written, 2k out.
fn projection(cache_seen: bool) -> Usage {
    Projection { previous_input: 100_000, added_input: 10_000, cache_seen, output: 2_000 }.usage()
}

#[test]
fn openai_projection_prices_the_previous_prefix_as_a_cache_read() {
    let pricing = Pricing::for_model("gpt-5");
    let usage = projection(true);
    assert_eq!((usage.input_tokens, usage.cached_input_tokens), (110_000, 100_000));
    // 100k read × $0.125 + 10k at the input price $1.25 (writes are not
    // billed apart) + 2k × $10, per million.
    let cost = pricing.cost_usd(&usage).unwrap();
    assert!(close(cost, 0.0125 + 0.0125 + 0.02), "{cost}");
    // Before the provider reported any cache read, all input is fresh.
    let cost = pricing.cost_usd(&projection(false)).unwrap();
    assert!(close(cost, 0.1375 + 0.02), "{cost}");
}

#[test]
fn anthropic_projection_prices_the_new_part_as_a_cache_write() {
    let pricing = Pricing::for_model("claude-sonnet-4-5");
    let usage = projection(true);
    assert_eq!(usage.cache_write_tokens, 10_000);
    // 100k read × $0.30 + 10k written × $3.75 (1.25 × $3) + 2k × $15.
    let cost = pricing.cost_usd(&usage).unwrap();
    assert!(close(cost, 0.03 + 0.0375 + 0.03), "{cost}");
    // Nothing cached yet: the whole prompt is written at 1.25×.
    let cost = pricing.cost_usd(&projection(false)).unwrap();
    assert!(close(cost, 110_000.0 * 3.75e-6 + 0.03), "{cost}");
}

#[test]
fn a_context_override_prices_an_unknown_model() {
    // `[context] input_price = 2, cached_input_price = 0.5, output_price = 8`.
    let pricing = Pricing {
        input_price: Some(2.0),
        cached_input_price: Some(0.5),
        output_price: Some(8.0),
        ..Pricing::default()
    };
    let cost = pricing.cost_usd(&projection(true)).unwrap();
    assert!(close(cost, 0.05 + 0.02 + 0.016), "{cost}");
    // With a write price of its own, the new part costs that.
    let pricing = Pricing { cache_write_price: Some(4.0), ..pricing };
    let cost = pricing.cost_usd(&projection(true)).unwrap();
    assert!(close(cost, 0.05 + 0.04 + 0.016), "{cost}");
    assert_eq!(Pricing::for_model("qwen3:8b").cost_usd(&projection(true)), None);
}

fn limited(spend: SpendLimits) -> LoopState {
    let mut config = config(ApprovalMode::Auto, 50);
    config.limits.spend = spend;
    // $1 per million tokens in and out, cache reads at a tenth.
    config.pricing = Pricing {
        input_price: Some(1.0),
        cached_input_price: Some(0.1),
        output_price: Some(1.0),
        ..Pricing::default()
    };
    config.configured.pricing = config.pricing;
    LoopState::open(config, Opening::default())
}

fn respond(items: Vec<Item>, input: u64, output: u64) -> Input {
    Input::ModelResponded(ModelResponse {
        items,
        usage: Usage { input_tokens: input, output_tokens: output, ..Usage::default() },
        stop_reason: StopReason::ToolUse,
        response_id: None,
    })
}

fn read(id: &str) -> Vec<Item> {
    vec![Item::ToolCall(call_with(id, "read_file", &format!(r#"{{"path":"{id}"}}"#)))]
}

fn finished(id: &str) -> Input {
    Input::BatchFinished {
        results: vec![(
            ToolResult::ok(id, format!("text of {id}")),
            crate::protocol::ToolMeta::new(),
        )],
    }
}

fn calls_model(effects: &[Effect]) -> bool {
    effects.iter().any(|e| matches!(e, Effect::CallModel(_)))
}

#[test]
fn the_request_that_would_cross_the_cost_limit_is_not_sent() {
    // Each response reports 400k in and 100k out: $0.50. The projection of
    // the next: 400k + the new items in, 8k out (bounded): about $0.41.
    let mut state = limited(SpendLimits { max_cost_usd: Some(1.2), max_tokens: None });
    let effects = step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    assert!(calls_model(&effects), "the first request fits: {effects:?}");
    let limits_at = effects.iter().position(|e| {
        matches!(e, Effect::Record(SessionEvent::LimitsSet { max_cost_usd: Some(_), reason, .. }) if reason == "start")
    });
    let request_at = effects.iter().position(|e| matches!(e, Effect::CallModel(_)));
    assert!(
        limits_at.is_some() && limits_at < request_at,
        "the limits are logged before the first request: {effects:?}"
    );
    step(&mut state, respond(read("a"), 400_000, 100_000));
    let effects = step(&mut state, finished("a"));
    assert!(calls_model(&effects), "$0.50 + ~$0.41 ≤ $1.20: {effects:?}");
    step(&mut state, respond(read("b"), 400_000, 100_000));
    let effects = step(&mut state, finished("b"));
    assert!(!calls_model(&effects), "$1.00 + ~$0.41 > $1.20: not sent");
    let Some(Effect::Record(SessionEvent::BudgetExceeded { limit, spent_usd, next_usd, .. })) =
        effects.iter().rev().nth(1)
    else {
        panic!("{effects:?}");
    };
    assert_eq!(limit, "cost");
    assert!(close(spent_usd.unwrap(), 1.0));
    // 400k in + the new items at $1/M, and 8k out (the bounded estimate).
    assert!(next_usd.unwrap() > 0.408, "the new items count too: {next_usd:?}");
    let Some(Effect::AskRaiseLimit(hit)) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(hit.limit, LimitKind::Cost);
    assert_eq!(state.phase, LoopPhase::AwaitLimit);

    let effects = step(&mut state, Input::LimitDecided { raised: None });
    let Some(Effect::TurnEnded { outcome, .. }) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(*outcome, TurnOutcome::BudgetExceeded);
    // A new turn cannot reset the spend: it stops before its request.
    let effects = step(&mut state, Input::UserTurn { text: "more".into(), images: Vec::new() });
    assert!(!calls_model(&effects));
    assert!(matches!(effects.last(), Some(Effect::AskRaiseLimit(_))));
}

#[test]
fn a_raised_limit_is_logged_and_the_request_goes_out() {
    let mut state = limited(SpendLimits { max_cost_usd: None, max_tokens: Some(700_000) });
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    step(&mut state, respond(read("a"), 400_000, 100_000));
    let effects = step(&mut state, finished("a"));
    let Some(Effect::AskRaiseLimit(hit)) = effects.last() else { panic!("{effects:?}") };
    assert_eq!(hit.limit, LimitKind::Tokens);
    assert_eq!(hit.spent_tokens, 500_000);
    let raised = hit.raised();
    assert_eq!(raised.max_tokens, Some(1_400_000), "doubled, which fits");
    let effects = step(&mut state, Input::LimitDecided { raised: Some(raised) });
    assert!(
        matches!(&effects[0], Effect::Record(SessionEvent::LimitsSet { max_tokens: Some(1_400_000), reason, .. }) if reason == "raised"),
        "{effects:?}"
    );
    assert!(matches!(effects.last(), Some(Effect::CallModel(_))));
    assert_eq!(state.config.limits.spend, raised);
}

#[test]
fn without_limits_nothing_is_logged_or_estimated() {
    let mut state = LoopState::open(config(ApprovalMode::Auto, 50), Opening::default());
    let effects = step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    assert!(!effects.iter().any(|e| matches!(e, Effect::Record(SessionEvent::LimitsSet { .. }))));
    step(&mut state, respond(read("a"), u64::MAX / 4, u64::MAX / 4));
    assert!(calls_model(&step(&mut state, finished("a"))));
}

#[test]
fn a_cost_limit_without_prices_stops_rather_than_runs_unlimited() {
    let mut config = config(ApprovalMode::Auto, 50);
    config.limits.spend.max_cost_usd = Some(100.0);
    let mut state = LoopState::open(config, Opening::default());
    let effects = step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    assert!(!calls_model(&effects));
    assert!(matches!(effects.last(), Some(Effect::AskRaiseLimit(hit)) if hit.next_usd.is_none()));
}

#[test]
fn the_projection_counts_new_items_and_the_largest_output() {
    let mut state = limited(SpendLimits::default());
    let first = budget::project(&state);
    assert_eq!(first.previous_input, 0, "no figure yet: the whole request is estimated");
    assert_eq!(first.output, FIRST_OUTPUT_ESTIMATE);
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    step(&mut state, respond(read("a"), 1_000, 30_000));
    state.items.push(Item::ToolResult(ToolResult::ok("a", "x".repeat(3_000))));
    let next = budget::project(&state);
    assert_eq!(next.previous_input, 1_000);
    assert!((1_000..1_100).contains(&next.added_input), "{next:?}");
    assert_eq!(next.output, MAX_OUTPUT_ESTIMATE, "bounded");
    assert!(!next.cache_seen);
}

#[test]
fn a_model_repeating_one_call_is_told_once_then_stopped() {
    let mut state = LoopState::open(config(ApprovalMode::Auto, 50), Opening::default());
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let same =
        |n: u32| vec![Item::ToolCall(call_with(&format!("c{n}"), "read_file", r#"{"path":"a"}"#))];
    let result = |n: u32| Input::BatchFinished {
        results: vec![(
            ToolResult::ok(format!("c{n}"), "same text"),
            crate::protocol::ToolMeta::new(),
        )],
    };
    let mut outputs = Vec::new();
    let mut last = Vec::new();
    for n in 0..4 {
        step(&mut state, respond(same(n), 10, 2));
        last = step(&mut state, result(n));
        for effect in &last {
            if let Effect::Record(SessionEvent::ToolCallFinished { result, meta }) = effect {
                outputs.push((result.output.clone(), meta.clone()));
            }
        }
    }
    assert_eq!(outputs[1].0, "same text");
    assert!(outputs[2].0.starts_with("same text\n\n[keel] This exact call"), "{}", outputs[2].0);
    assert_eq!(outputs[2].1["runaway"]["action"], "noted");
    assert_eq!(outputs[3].1["runaway"]["action"], "stopped");
    let Some(Effect::TurnEnded { outcome, .. }) = last.last() else { panic!("{last:?}") };
    assert_eq!(*outcome, TurnOutcome::Stuck);
    // The next turn starts with a clean slate.
    step(&mut state, Input::UserTurn { text: "again".into(), images: Vec::new() });
    step(&mut state, respond(same(9), 10, 2));
    assert!(matches!(step(&mut state, result(9)).last(), Some(Effect::CallModel(_))));
}

#[test]
fn the_stop_answers_the_rest_of_the_response_unrun() {
    let mut state = LoopState::open(config(ApprovalMode::Auto, 50), Opening::default());
    state.config.limits.runaway.failing_calls = Some(2);
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    let mut last = Vec::new();
    for n in 0..3 {
        let id = format!("s{n}");
        let mut calls =
            vec![Item::ToolCall(call_with(&id, "read_file", &format!(r#"{{"path":"f{n}"}}"#)))];
        if n == 2 {
            calls.push(Item::ToolCall(call("w", "write_file")));
        }
        step(&mut state, respond(calls, 10, 2));
        let failed = ToolResult::error(&id, format!("no such file: f{n}"));
        last = step(
            &mut state,
            Input::BatchFinished { results: vec![(failed, crate::protocol::ToolMeta::new())] },
        );
    }
    let unrun = last.iter().find_map(|e| match e {
        Effect::Record(SessionEvent::ToolCallFinished { result, .. }) if result.call_id == "w" => {
            Some(result.output.clone())
        }
        _ => None,
    });
    assert!(unrun.is_some_and(|text| text.contains("keel stopped the turn")), "{last:?}");
    assert!(!last.iter().any(|e| matches!(e, Effect::RunBatch { .. })));
    let Some(Effect::TurnEnded { outcome, .. }) = last.last() else { panic!("{last:?}") };
    assert_eq!(*outcome, TurnOutcome::Stuck);
}

#[test]
fn dollars_read_as_cents_or_up_to_four_decimals() {
    for (value, shown) in [
        (2.5, "$2.50"),
        (1.0, "$1.00"),
        (0.18, "$0.18"),
        (0.004, "$0.004"),
        (0.0038, "$0.0038"),
        (0.0, "$0.00"),
        (123.456, "$123.46"),
    ] {
        assert_eq!(usd(value), shown, "{value}");
    }
}

#[test]
fn what_subagents_spent_counts_against_the_limits() {
    // The session itself spent $0.50; a subagent (its own loop) $0.60.
    let mut state = limited(SpendLimits { max_cost_usd: Some(1.2), max_tokens: None });
    step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    step(&mut state, respond(read("a"), 400_000, 100_000));
    state.delegated = Delegated {
        usage: Usage { input_tokens: 500_000, output_tokens: 100_000, ..Usage::default() },
        cost_usd: 0.6,
        ..Delegated::default()
    };
    let effects = step(&mut state, finished("a"));
    assert!(!calls_model(&effects), "$0.50 + $0.60 + ~$0.41 > $1.20: not sent");
    let Some(Effect::AskRaiseLimit(hit)) = effects.last() else { panic!("{effects:?}") };
    assert!(close(hit.spent_usd.unwrap(), 1.1), "{hit:?}");
    assert_eq!(hit.spent_tokens, 1_100_000);
}

#[test]
fn children_side_by_side_get_equal_shares_that_stay_within_the_limits() {
    let left = SpendLimits { max_cost_usd: Some(0.9), max_tokens: Some(1_000) };
    let share = left.shared(3);
    assert!(close(share.max_cost_usd.unwrap(), 0.3));
    assert_eq!(share.max_tokens, Some(333), "rounded down: 3 × 333 ≤ 1 000");
    assert_eq!(left.shared(1), left);
    assert_eq!(left.shared(0), left, "no sibling count is one child");
    assert_eq!(SpendLimits::default().shared(4), SpendLimits::default(), "no limit, no share");
}
