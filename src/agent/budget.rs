//! Spend limits: what a loop may spend, the projection of the
//! next model request, and the decision taken before every request.
//!
//! The check runs in `step.rs` before each [`Effect::CallModel`]: a
//! request whose projection would take the session past a limit is not
//! sent. The loop records `budget_exceeded` and asks the front end
//! ([`Effect::AskRaiseLimit`]) whether to raise the limit; `exec` cannot
//! ask, so its turn ends `budget_exceeded`; the TUI asks the user, and a
//! raise is recorded (`limits_set`, reason `raised`) before the request
//! goes out. The limits in force are recorded whenever they differ from
//! the last logged ones, so a resume restores them; the spend is the sum
//! of the logged responses' usage, so a resume cannot reset it.
//!
//! The projection of a request ([`project`]), documented for users in
//! README's "Limits" section:
//! - input: the provider's input tokens for the previous request plus the
//!   items added since, at [`BYTES_PER_TOKEN`] bytes per token (the whole
//!   request so estimated when there is no previous figure: the first
//!   request, or the first after a compaction);
//! - of that input, the previous request's tokens are expected to be read
//!   from the provider's cache once the provider has reported a cache read
//!   in this session (priced at the cache read price); the rest is priced
//!   as a cache write (Anthropic: 1.25× input; others: the input price);
//! - output: the largest output of this session's responses so far
//!   ([`FIRST_OUTPUT_ESTIMATE`] before the first), at most
//!   [`MAX_OUTPUT_ESTIMATE`] or the request's own output limit.
//!
//! The spend is charged per response, at the prices of the model that
//! served it (recorded on its `model_response` line and charged by
//! `LoopState::apply`), so a model switch neither re-prices what was
//! spent nor under-counts it; the projection is priced at the model the
//! next request goes to.
//!
//! Invariants: pure; with no spend limit set nothing is estimated (the
//! check is two `Option` tests); a cost limit on a model without prices
//! stops the request (never a silent no-limit; the config refuses it at
//! start, and a switch to such a model is refused: [`unpriced_switch`]).

use crate::context::Pricing;
use crate::context::tokens::{items_upper_bound, upper_bound};
use crate::protocol::{ModelResponse, SessionEvent, TurnOutcome, Usage};

use super::apply::emit;
use super::limits::{BudgetHit, LimitKind, SpendLimits, Spent, Unreported};
use super::next::Next;
use super::phase::LoopPhase;
use super::state::LoopState;
use super::step_io::Effect;

/// Bytes per token assumed for text the provider has not counted yet.
/// Tokenizers of current models average 3.5–4.5 bytes per token on code
/// and English; 3 errs on the side of stopping a little early.
pub const BYTES_PER_TOKEN: u64 = 3;
/// Output tokens expected of the first request of a session.
pub const FIRST_OUTPUT_ESTIMATE: u64 = 1_024;
/// The most output tokens a projection expects.
pub const MAX_OUTPUT_ESTIMATE: u64 = 8_192;

impl LoopState {
    /// What the session spent, its subagents included.
    pub fn spent(&self) -> Spent {
        Spent {
            usd: self.session_cost_usd.map(|own| {
                own + self.unreported.cost_usd
                    + self.delegated.cost_usd
                    + self.delegated.estimated.cost_usd
            }),
            tokens: self.session_usage.total_tokens()
                + self.unreported.tokens
                + self.delegated.usage.total_tokens()
                + self.delegated.estimated.tokens,
        }
    }

    /// What the session's spend counts at keel's estimate (responses
    /// whose server reported no usage), its subagents' included: a child
    /// passes it up with its usage, so it counts in its parent's limits.
    pub fn estimated(&self) -> Unreported {
        let mut estimated = self.unreported;
        estimated.add(self.delegated.estimated.tokens, Some(self.delegated.estimated.cost_usd));
        estimated
    }
}

/// Estimates a response whose server reported no usage, to charge it
/// (the request as [`project`] sees it, the response's own items at
/// [`BYTES_PER_TOKEN`]), so a spend limit holds against a server that
/// never reports usage (some Ollama and llama.cpp versions, proxies).
/// Returns the tokens and the cost to charge (apart from the session's
/// usage and cost, which stay what the server reported; its
/// `model_response` line carries them and `LoopState::apply` charges
/// them); `None` when the response has usage, which is charged as
/// reported. The first such response of a
/// session with a spend limit warns that the limit counts estimates.
pub(super) fn estimate_unreported(
    state: &LoopState,
    response: &ModelResponse,
    effects: &mut Vec<Effect>,
) -> Option<(u64, Option<f64>)> {
    if response.usage != Usage::default() {
        return None;
    }
    if state.unreported.tokens == 0 && !state.config.limits.spend.is_none() {
        effects.push(Effect::Warn(
            "the server reports no token usage: the spend limit counts keel's estimate \
             (3 bytes a token) of each request and response"
                .to_owned(),
        ));
    }
    let projected = project(state);
    let estimate = Usage {
        input_tokens: projected.previous_input + projected.added_input,
        output_tokens: items_upper_bound(&response.items).div_ceil(BYTES_PER_TOKEN),
        ..Usage::default()
    };
    let tokens = estimate.total_tokens();
    let cost_usd = state.config.pricing.cost_usd(&estimate);
    Some((tokens, cost_usd))
}

/// Whether switching to `model` must be refused: a cost limit is set and
/// keel knows no prices for it, so the limit could not be kept (the rule
/// the config applies at start).
pub fn unpriced_switch(state: &LoopState, model: &str) -> bool {
    state.config.limits.spend.max_cost_usd.is_some() && !state.config.pricing_for(model).is_priced()
}

/// What the previous request tells about the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Projection {
    /// The provider's input tokens for the previous request (0: none).
    pub previous_input: u64,
    /// Estimated tokens of everything the next request adds to it (the
    /// whole request when there is no previous figure).
    pub added_input: u64,
    /// The provider has reported cache reads in this session.
    pub cache_seen: bool,
    pub output: u64,
}

impl Projection {
    /// The usage the request is expected to report: the previous prefix
    /// read from the cache (once the provider caches), the rest written.
    pub fn usage(&self) -> Usage {
        let input = self.previous_input + self.added_input;
        let read = if self.cache_seen { self.previous_input } else { 0 };
        Usage {
            input_tokens: input,
            cached_input_tokens: read,
            cache_write_tokens: input - read,
            output_tokens: self.output,
            reasoning_tokens: 0,
        }
    }
}

/// The projection of the request the loop would send now (see the module
/// docs).
pub fn project(state: &LoopState) -> Projection {
    let (previous_input, added_input) = match state.reported_context {
        Some((tokens, counted)) if counted <= state.items.len() => {
            (tokens, items_upper_bound(&state.items[counted..]).div_ceil(BYTES_PER_TOKEN))
        }
        Some(_) | None => {
            (0, upper_bound(&state.request(), state.config.strict_tools).div_ceil(BYTES_PER_TOKEN))
        }
    };
    let output = match state.largest_output_tokens {
        0 => FIRST_OUTPUT_ESTIMATE,
        seen => seen.min(MAX_OUTPUT_ESTIMATE),
    };
    Projection {
        previous_input,
        added_input,
        cache_seen: state.session_usage.cached_input_tokens > 0,
        output,
    }
}

/// The limit the next request would cross, if any. Free when no spend
/// limit is set.
pub fn check(state: &LoopState) -> Option<BudgetHit> {
    let limits = state.config.limits.spend;
    if limits.is_none() {
        return None;
    }
    hit(&state.config.pricing, limits, state.spent(), &project(state).usage())
}

/// Whether `next`, at `pricing` (the prices of the model it goes to), on
/// top of `spent` crosses `limits` (a cost limit with no prices known
/// counts as crossed).
pub fn hit(
    pricing: &Pricing,
    limits: SpendLimits,
    spent: Spent,
    next: &Usage,
) -> Option<BudgetHit> {
    let spent_usd = spent.usd;
    let next_usd = pricing.cost_usd(next);
    let spent_tokens = spent.tokens;
    let next_tokens = next.total_tokens();
    let over_cost = limits.max_cost_usd.is_some_and(|max| match (spent_usd, next_usd) {
        (Some(spent), Some(next)) => spent + next > max,
        (None, _) | (_, None) => true,
    });
    let over_tokens =
        limits.max_tokens.is_some_and(|max| spent_tokens.saturating_add(next_tokens) > max);
    let limit = match (over_cost, over_tokens) {
        (true, _) => LimitKind::Cost,
        (false, true) => LimitKind::Tokens,
        (false, false) => return None,
    };
    Some(BudgetHit { limit, limits, spent_usd, spent_tokens, next_usd, next_tokens })
}

/// Records the limits in force when they differ from the last logged
/// ones (`start` for the first, `changed` after that).
pub(super) fn record_limits(state: &mut LoopState, effects: &mut Vec<Effect>) {
    let limits = state.config.limits.spend;
    if limits == state.logged_limits {
        return;
    }
    let reason = if state.logged_limits.is_none() { "start" } else { "changed" };
    log_limits(state, limits, reason, effects);
}

fn log_limits(state: &mut LoopState, limits: SpendLimits, reason: &str, effects: &mut Vec<Effect>) {
    let event = SessionEvent::LimitsSet {
        max_cost_usd: limits.max_cost_usd,
        max_tokens: limits.max_tokens,
        reason: reason.to_owned(),
    };
    emit(state, event, effects);
}

/// The request is not sent: recorded, and the front end is asked whether
/// to raise the limit (answered with `Input::LimitDecided`).
pub(super) fn stop(state: &mut LoopState, hit: BudgetHit, effects: &mut Vec<Effect>) {
    effects.push(Effect::Record(hit.event()));
    state.phase = LoopPhase::AwaitLimit;
    effects.push(Effect::AskRaiseLimit(hit));
}

/// The answer to [`Effect::AskRaiseLimit`]: raised limits are recorded
/// and the request is checked again; no answer ends the turn.
pub(super) fn on_decided(
    state: &mut LoopState,
    raised: Option<SpendLimits>,
    effects: &mut Vec<Effect>,
) -> Next {
    match raised {
        Some(limits) => {
            log_limits(state, limits, "raised", effects);
            state.phase = LoopPhase::Infer;
            Next::Request
        }
        None => Next::EndTurn(TurnOutcome::BudgetExceeded),
    }
}
