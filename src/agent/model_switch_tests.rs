//! A model switch through [`step`] and the spend: each response
//! is charged at the prices of the model that served it, the projection at
//! the model the next request goes to, a switch back restores the
//! configured (`[context]`) prices, a model without prices is refused under
//! a cost limit, and a custom command's model lasts its turn only (also
//! after a rebuild).

use super::test_support::{call_with, config};
use super::*;
use crate::context::Pricing;
use crate::policy::ApprovalMode;
use crate::protocol::{EventRecord, Item, ModelResponse, SessionEvent, StopReason, Usage};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The configured model `local` with `[context]` prices of $1/M in and out.
fn session(max_cost_usd: Option<f64>) -> LoopState {
    let mut config = config(ApprovalMode::Auto, 50);
    let prices = Pricing {
        input_price: Some(1.0),
        output_price: Some(1.0),
        context_window: Some(1_000_000),
        ..Pricing::default()
    };
    config.model = "local".into();
    config.pricing = prices;
    config.configured =
        ConfiguredModel { model: "local".into(), pricing: prices, one_hour_cache: false };
    config.context_window = prices.context_window;
    config.limits.spend.max_cost_usd = max_cost_usd;
    LoopState::open(config, Opening::default())
}

fn usage() -> Usage {
    Usage { input_tokens: 100_000, output_tokens: 1_000, ..Usage::default() }
}

fn respond(calls: bool) -> Input {
    let items = if calls {
        vec![Item::ToolCall(call_with("c", "read_file", r#"{"path":"a"}"#))]
    } else {
        vec![Item::Assistant { text: "done".into() }]
    };
    let stop_reason = if calls { StopReason::ToolUse } else { StopReason::EndTurn };
    Input::ModelResponded(ModelResponse { items, usage: usage(), stop_reason, response_id: None })
}

fn records(effects: &[Effect]) -> Vec<SessionEvent> {
    effects
        .iter()
        .filter_map(|effect| match effect {
            Effect::Record(event) => Some(event.clone()),
            _ => None,
        })
        .collect()
}

fn switch(state: &mut LoopState, model: &str, for_turn: bool) -> Vec<Effect> {
    step(state, Input::SetModel { model: model.into(), for_turn })
}

/// One turn of one answer; the records of the whole turn.
fn answered_turn(state: &mut LoopState) -> Vec<SessionEvent> {
    let mut lines =
        records(&step(state, Input::UserTurn { text: "go".into(), images: Vec::new() }));
    lines.extend(records(&step(state, respond(false))));
    lines
}

#[test]
fn each_response_is_charged_at_the_prices_of_the_model_that_served_it() {
    let mut state = session(None);
    answered_turn(&mut state);
    let local = 0.101; // 101k tokens at $1/M
    assert!(close(state.session_cost_usd.unwrap(), local));
    switch(&mut state, "claude-opus-4", false);
    assert_eq!(state.config.pricing, Pricing::for_model("claude-opus-4"));
    let lines = answered_turn(&mut state);
    let opus = 100_000.0 * 15.0 / 1e6 + 1_000.0 * 75.0 / 1e6;
    assert!(close(state.session_cost_usd.unwrap(), local + opus), "{:?}", state.session_cost_usd);
    let logged = lines.iter().find_map(|line| match line {
        SessionEvent::ModelResponse { cost_usd, .. } => *cost_usd,
        _ => None,
    });
    assert!(logged.is_some_and(|cost| close(cost, opus)), "the line carries its cost: {lines:?}");
    // Back on the configured model: its `[context]` prices, not the table's
    // (which has none for `local`); what was spent is not re-priced.
    switch(&mut state, "local", false);
    assert_eq!(state.config.pricing, state.config.configured.pricing);
    assert_eq!(state.config.context_window, Some(1_000_000));
    answered_turn(&mut state);
    assert!(close(state.session_cost_usd.unwrap(), local + opus + local));
}

#[test]
fn the_projection_is_priced_at_the_model_the_request_goes_to() {
    // $0.30 left: a request of ~100k tokens is $0.10 on `local`, $1.50+ on
    // claude-opus-4.
    let mut state = session(Some(0.3));
    answered_turn(&mut state);
    switch(&mut state, "claude-opus-4", false);
    let effects = step(&mut state, Input::UserTurn { text: "go".into(), images: Vec::new() });
    assert!(!effects.iter().any(|e| matches!(e, Effect::CallModel(_))), "not sent: {effects:?}");
    let Some(Effect::AskRaiseLimit(hit)) = effects.last() else { panic!("{effects:?}") };
    assert!(close(hit.spent_usd.unwrap(), 0.101), "spent at local's prices: {hit:?}");
    assert!(hit.next_usd.unwrap() > 0.2, "projected at opus's prices: {hit:?}");
}

#[test]
fn a_model_without_prices_is_refused_under_a_cost_limit() {
    let mut state = session(Some(1.0));
    assert!(unpriced_switch(&state, "qwen3:8b"));
    assert!(switch(&mut state, "qwen3:8b", false).is_empty());
    assert_eq!(state.config.model, "local", "nothing changed");
    assert!(!unpriced_switch(&state, "gpt-5-nano"), "priced: allowed");
    let mut free = session(None);
    assert!(!unpriced_switch(&free, "qwen3:8b"), "no cost limit: allowed");
    assert_eq!(records(&switch(&mut free, "qwen3:8b", false)).len(), 1);
    answered_turn(&mut free);
    assert_eq!(free.session_cost_usd, None, "a response without prices: the cost is unknown");
}

#[test]
fn a_command_model_lasts_its_turn() {
    let mut state = session(None);
    let lines = records(&switch(&mut state, "claude-opus-4", true));
    assert!(matches!(
        &lines[..],
        [SessionEvent::ModelChanged { model, after_turn: Some(back) }]
            if model == "claude-opus-4" && back == "local"
    ));
    let lines = answered_turn(&mut state);
    let completed = lines.iter().position(|l| matches!(l, SessionEvent::TurnCompleted { .. }));
    let back = lines.iter().position(
        |l| matches!(l, SessionEvent::ModelChanged { model, after_turn: None } if model == "local"),
    );
    assert!(completed.is_some() && back > completed, "back after the turn: {lines:?}");
    assert_eq!((state.config.model.as_str(), state.turn_model.as_ref()), ("local", None));
    assert_eq!(state.config.pricing, state.config.configured.pricing);
}

fn rebuilt(live: &[SessionEvent]) -> LoopState {
    let mut rebuilder = Rebuilder::new(session(None).config);
    for (seq, event) in live.iter().enumerate() {
        let ts = String::new();
        rebuilder.apply(EventRecord { v: 1, seq: seq as u64, ts, event: event.clone() });
    }
    rebuilder.finish().state
}

#[test]
fn a_rebuild_keeps_the_spend_and_goes_back_after_a_command_turn() {
    let mut state = session(None);
    let mut log = answered_turn(&mut state);
    log.extend(records(&switch(&mut state, "claude-opus-4", true)));
    log.extend(records(&step(
        &mut state,
        Input::UserTurn { text: "go".into(), images: Vec::new() },
    )));
    log.extend(records(&step(&mut state, respond(true))));
    // The process dies mid-command: the rebuilt loop is on the command's
    // model, with the same spend, and goes back when the turn ends.
    let resumed = rebuilt(&log);
    assert_eq!(resumed.config.model, "claude-opus-4");
    assert_eq!(resumed.config.pricing, Pricing::for_model("claude-opus-4"));
    assert_eq!(resumed.session_cost_usd, state.session_cost_usd);
    assert_eq!(resumed.turn_model.as_deref(), Some("local"));
    // Its logged end: the turn completed, then the switch back.
    let mut ended = log.clone();
    ended.push(SessionEvent::TurnCompleted {
        turn: state.turn,
        outcome: crate::protocol::TurnOutcome::Interrupted,
        usage: state.turn_usage,
    });
    let after = rebuilt(&ended);
    assert_eq!(after.config.model, "local", "back on the configured model");
    assert_eq!(after.config.pricing, after.config.configured.pricing);
    // The live loop, ending the turn, does the same.
    let effects = step(&mut state, Input::Interrupted);
    assert!(records(&effects).iter().any(
        |l| matches!(l, SessionEvent::ModelChanged { model, after_turn: None } if model == "local")
    ));
}

#[test]
fn an_older_log_without_costs_is_charged_at_the_prices_in_force() {
    let mut state = session(None);
    let mut log = answered_turn(&mut state);
    for line in &mut log {
        if let SessionEvent::ModelResponse { cost_usd, .. } = line {
            *cost_usd = None;
        }
    }
    assert!(close(rebuilt(&log).session_cost_usd.unwrap(), 0.101));
}

#[test]
fn a_switched_to_model_keeps_the_providers_one_hour_cache_prices() {
    let mut state = session(None);
    state.config.configured.one_hour_cache = true;
    switch(&mut state, "claude-opus-4", false);
    assert_eq!(state.config.pricing.cache_write_price, Some(30.0), "twice the input price");
    switch(&mut state, "gpt-5-nano", false);
    assert_eq!(state.config.pricing, Pricing::for_model("gpt-5-nano"), "no write price to change");
}

#[test]
fn the_cost_is_unknown_only_once_a_model_without_prices_served_something() {
    let mut config = config(ApprovalMode::Auto, 50);
    config.model = "qwen3:8b".into();
    config.configured.model = "qwen3:8b".into();
    let mut state = LoopState::open(config, Opening::default());
    assert_eq!(state.session_cost_usd, None, "a model without prices: unknown from the start");
    switch(&mut state, "gpt-5-nano", false);
    assert_eq!(state.session_cost_usd, Some(0.0), "nothing was spent: known again");
    answered_turn(&mut state);
    switch(&mut state, "qwen3:8b", false);
    assert!(state.session_cost_usd.is_some_and(|cost| cost > 0.0), "what was spent stays known");
    answered_turn(&mut state);
    assert_eq!(state.session_cost_usd, None);
}
