//! What a loop may spend and do, and what it spent: the limits a
//! session runs under (steps, spend, runaway guards), the spend figures
//! the limits count (its own, its subagents', its estimates) and a hit
//! when the next request would cross one. Plain data: the decisions on
//! them are `budget.rs`'s, the runaway counts `runaway.rs`'s.
//!
//! Invariant: pure values, no loop state; nothing here imports another
//! file of `agent/`, so every file may use them.

use std::collections::BTreeSet;

use crate::protocol::{SessionEvent, Usage};

/// What one loop may do: steps per turn, spend per session, and the
/// runaway guards. A subagent's loop gets its own `Limits` in its
/// `LoopConfig` (its spend then counts in its own log).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Model calls allowed in one turn.
    pub max_steps: u32,
    pub spend: SpendLimits,
    pub runaway: RunawayLimits,
}

impl Limits {
    /// `max_steps` with no spend limit and the default runaway guards.
    pub fn with_max_steps(max_steps: u32) -> Self {
        Self { max_steps, spend: SpendLimits::default(), runaway: RunawayLimits::default() }
    }
}

/// What this session's subagents spent: they run their own loops (each
/// within what is left of these limits), and their spend counts here too.
///
/// Invariant: a child's spend counts once. A `subagent_finished` line
/// carries a child session's whole spend, and a resume after a crash
/// between that line and the call's result finishes the call again from
/// the child's log: the child's second report adds nothing.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Delegated {
    /// What their servers reported.
    pub usage: Usage,
    /// At each subagent's own model's prices, as far as they are known.
    pub cost_usd: f64,
    /// What their responses without reported usage were charged at keel's
    /// estimate (their own children's included): spend, never usage.
    pub estimated: Unreported,
    /// The child sessions whose spend is in the figures above.
    pub children: BTreeSet<String>,
}

impl Delegated {
    /// Whether the spend of child session `session_id` is counted.
    pub fn counts(&self, session_id: &str) -> bool {
        self.children.contains(session_id)
    }

    /// Adds the whole spend of child session `session_id`, unless it is
    /// counted already.
    pub fn add_child(&mut self, session_id: &str, spend: ChildSpend) {
        if !self.children.insert(session_id.to_owned()) {
            return;
        }
        self.usage.add(&spend.usage);
        self.cost_usd += spend.cost_usd.unwrap_or(0.0);
        self.estimated.add(spend.estimated_tokens.unwrap_or(0), spend.estimated_cost_usd);
    }
}

/// A child's whole spend as its `subagent_finished` line carries it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ChildSpend {
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    pub estimated_tokens: Option<u64>,
    pub estimated_cost_usd: Option<f64>,
}

/// What responses without reported usage were charged at keel's
/// estimate (`budget::estimate_unreported`); part of the spend, not of the usage.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Unreported {
    pub tokens: u64,
    /// At the prices of the models that served them, as far as known.
    pub cost_usd: f64,
}

impl Unreported {
    pub fn add(&mut self, tokens: u64, cost_usd: Option<f64>) {
        self.tokens += tokens;
        self.cost_usd += cost_usd.unwrap_or(0.0);
    }

    /// As a log line carries it (`estimated_tokens`, `estimated_cost_usd`):
    /// nothing where nothing was estimated or priced.
    pub fn logged(self) -> (Option<u64>, Option<f64>) {
        ((self.tokens > 0).then_some(self.tokens), (self.cost_usd > 0.0).then_some(self.cost_usd))
    }
}

/// What a session spent in all: its own requests (each at the prices of
/// the model that served it) and its subagents'.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    /// `None`: a model without prices served some of it.
    pub usd: Option<f64>,
    pub tokens: u64,
}

/// What a session may spend in all (every turn, every process).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct SpendLimits {
    /// US dollars, at the session's prices (table or `[context]`).
    pub max_cost_usd: Option<f64>,
    /// Input plus output tokens, cache reads included.
    pub max_tokens: Option<u64>,
}

impl SpendLimits {
    pub fn is_none(&self) -> bool {
        self.max_cost_usd.is_none() && self.max_tokens.is_none()
    }

    /// `self` where set, else `other`.
    pub fn or(self, other: SpendLimits) -> SpendLimits {
        SpendLimits {
            max_cost_usd: self.max_cost_usd.or(other.max_cost_usd),
            max_tokens: self.max_tokens.or(other.max_tokens),
        }
    }

    /// The stricter of the two for each limit (an unset one does not
    /// loosen a set one).
    pub fn tightest(self, other: SpendLimits) -> SpendLimits {
        fn min<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
            match (a, b) {
                (Some(a), Some(b)) => Some(if b < a { b } else { a }),
                (a, b) => a.or(b),
            }
        }
        SpendLimits {
            max_cost_usd: min(self.max_cost_usd, other.max_cost_usd),
            max_tokens: min(self.max_tokens, other.max_tokens),
        }
    }

    /// An equal share of these limits for each of `shares` subagents
    /// running side by side, so together they stay within them.
    pub fn shared(self, shares: usize) -> SpendLimits {
        let shares = shares.max(1);
        SpendLimits {
            max_cost_usd: self.max_cost_usd.map(|max| max / shares as f64),
            max_tokens: self.max_tokens.map(|max| max / shares as u64),
        }
    }

    /// The limits of a resumed session: what the user passed as flags for
    /// this process; else the logged ones, tightened by the config (a
    /// config file cannot loosen what the session was started with).
    pub fn for_resume(flags: SpendLimits, logged: SpendLimits, config: SpendLimits) -> Self {
        flags.or(logged.tightest(config))
    }
}

/// When a turn counts as stuck in a loop (`agent::runaway`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunawayLimits {
    /// The same call (name and arguments) with the same result this many
    /// times in a turn is pointed out to the model; once more ends the
    /// turn. `None`: off.
    pub repeated_calls: Option<u32>,
    /// This many failing calls of one tool in a row are pointed out; one
    /// more failure ends the turn. `None`: off.
    pub failing_calls: Option<u32>,
}

/// Default of `limits.repeated_calls`.
pub const DEFAULT_REPEATED_CALLS: u32 = 3;

/// Default of `limits.failing_calls`.
pub const DEFAULT_FAILING_CALLS: u32 = 5;

impl Default for RunawayLimits {
    fn default() -> Self {
        Self {
            repeated_calls: Some(DEFAULT_REPEATED_CALLS),
            failing_calls: Some(DEFAULT_FAILING_CALLS),
        }
    }
}

/// Which limit a request would cross.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitKind {
    Cost,
    Tokens,
}

impl LimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cost => "cost",
            Self::Tokens => "tokens",
        }
    }
}

/// A request that was not sent, with the figures a front end shows when
/// it asks to raise the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BudgetHit {
    pub limit: LimitKind,
    pub limits: SpendLimits,
    /// The session's spend (`None`: the model has no prices).
    pub spent_usd: Option<f64>,
    pub spent_tokens: u64,
    /// The projection of the request that was not sent.
    pub next_usd: Option<f64>,
    pub next_tokens: u64,
}

impl BudgetHit {
    /// The limits raised so that the request fits, each crossed limit at
    /// least doubled (the TUI's "raise" answer).
    pub fn raised(&self) -> SpendLimits {
        let cost = self.limits.max_cost_usd.map(|max| {
            let needed = self.spent_usd.unwrap_or(0.0) + self.next_usd.unwrap_or(0.0);
            if needed > max { (max * 2.0).max(needed) } else { max }
        });
        let tokens = self.limits.max_tokens.map(|max| {
            let needed = self.spent_tokens.saturating_add(self.next_tokens);
            if needed > max { max.saturating_mul(2).max(needed) } else { max }
        });
        SpendLimits { max_cost_usd: cost, max_tokens: tokens }
    }

    /// Its `budget_exceeded` line.
    pub(super) fn event(&self) -> SessionEvent {
        SessionEvent::BudgetExceeded {
            limit: self.limit.as_str().to_owned(),
            max_cost_usd: self.limits.max_cost_usd,
            max_tokens: self.limits.max_tokens,
            spent_usd: self.spent_usd,
            spent_tokens: self.spent_tokens,
            next_usd: self.next_usd,
            next_tokens: self.next_tokens,
        }
    }
}

/// US dollars as a person reads them: cents from a dollar up, up to four
/// decimals below it (`$1.50`, `$0.18`, `$0.0038`), so a small budget
/// never shows as `$0.00`.
pub fn usd(value: f64) -> String {
    if value >= 1.0 {
        return format!("${value:.2}");
    }
    let text = format!("{value:.4}");
    let trimmed = text.trim_end_matches('0');
    let decimals = trimmed.split_once('.').map_or(0, |(_, decimals)| decimals.len());
    match decimals {
        0..2 => format!("${value:.2}"),
        _ => format!("${trimmed}"),
    }
}

/// The session's spend against its limits, for front ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpendStatus {
    pub limits: SpendLimits,
    pub spent_usd: Option<f64>,
    pub spent_tokens: u64,
}

impl SpendStatus {
    pub fn new(limits: SpendLimits, spent: Spent) -> Self {
        Self { limits, spent_usd: spent.usd, spent_tokens: spent.tokens }
    }

    /// The largest share of a limit spent (0.0–1.0 and beyond), if any
    /// limit is set.
    pub fn used_share(&self) -> Option<f64> {
        let cost = self
            .limits
            .max_cost_usd
            .filter(|max| *max > 0.0)
            .map(|max| self.spent_usd.unwrap_or(0.0) / max);
        let tokens = self
            .limits
            .max_tokens
            .filter(|max| *max > 0)
            .map(|max| self.spent_tokens as f64 / max as f64);
        match (cost, tokens) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}
