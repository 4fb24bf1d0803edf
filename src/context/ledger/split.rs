//! The attribution rule: how one request's reported usage and cost are
//! split across the parts it carried.
//!
//! 1. Each part has a weight: its estimated tokens (`context::tokens`
//!    for the texts the log holds; a tool spec's logged bytes / 4).
//! 2. The provider's reported `input_tokens` are apportioned over the
//!    weights in request order (cumulative rounding), so the parts' input
//!    tokens sum to the reported input exactly; a request with no weights
//!    puts its input on the prefix.
//! 3. Request order is tools → instructions → history, the order prompt
//!    caches read: the first `cached_input_tokens` of that order are the
//!    cache reads, the next `cache_write_tokens` the cache writes, the rest
//!    fresh input (the prefix is cached first).
//! 4. Each part is priced at the model's table prices (reads and writes
//!    at their own prices, as `Pricing::cost_usd`); output tokens are the
//!    `output` part. When the log's `cost_usd` differs from the table's
//!    (prices from `[context]`), every part is scaled by their ratio; when
//!    the table does not know the model, the logged cost is split by
//!    tokens. Either way the parts sum to the logged cost.
//!
//! Invariants: pure; token sums are exact; cost sums equal the target up
//! to floating-point rounding.

use serde::Serialize;

use crate::context::Pricing;
use crate::protocol::Usage;

use super::Source;

/// Tokens and cost attributed to one part (or summed over many).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Share {
    /// Input tokens, cache reads and writes included.
    pub input_tokens: u64,
    pub cached_input_tokens: u64,
    pub cache_write_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

impl Share {
    pub fn add(&mut self, other: &Share) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.cost_usd += other.cost_usd;
    }

    /// A whole usage at one cost (a compaction, a subagent).
    pub fn whole(usage: &Usage, cost_usd: f64) -> Share {
        Share {
            input_tokens: usage.input_tokens,
            cached_input_tokens: usage.cached_input_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            output_tokens: usage.output_tokens,
            cost_usd,
        }
    }

    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// How a request's cost was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priced {
    /// The logged cost, at keel's table prices for the model.
    Table,
    /// The logged cost differs from the table's (prices from the config):
    /// the table's split, scaled to the logged cost.
    Scaled,
    /// The table does not know the model: the logged cost split by tokens.
    ByTokens,
    /// No cost is known for the request.
    Unknown,
}

/// Splits `usage` (and `logged_cost`) over `segments` (parts in request
/// order with their weights; a source may appear more than once) as the
/// module doc says. Returns the parts with their shares, in first-seen
/// order, the output part last, and how the cost was found.
pub fn split(
    segments: &[(Source, u64)],
    usage: &Usage,
    pricing: &Pricing,
    logged_cost: Option<f64>,
) -> (Vec<(Source, Share)>, Priced) {
    let mut parts: Vec<(Source, Share)> = Vec::new();
    let input = usage.input_tokens;
    let mut read_left = usage.cached_input_tokens.min(input);
    let mut write_left = usage.cache_write_tokens.min(input - read_left);
    for (source, tokens) in apportion(segments, input) {
        let read = tokens.min(read_left);
        read_left -= read;
        let written = (tokens - read).min(write_left);
        write_left -= written;
        let share = Share {
            input_tokens: tokens,
            cached_input_tokens: read,
            cache_write_tokens: written,
            ..Share::default()
        };
        add_part(&mut parts, source, &share);
    }
    let output = Share { output_tokens: usage.output_tokens, ..Share::default() };
    add_part(&mut parts, Source::Output, &output);
    let priced = price(&mut parts, pricing, logged_cost);
    (parts, priced)
}

fn add_part(parts: &mut Vec<(Source, Share)>, source: Source, share: &Share) {
    match parts.iter_mut().find(|(known, _)| *known == source) {
        Some((_, total)) => total.add(share),
        None => parts.push((source, *share)),
    }
}

/// `total` tokens over the weights, in order, summing to `total` exactly:
/// part i gets ⌊total·Wᵢ/W⌋ − ⌊total·Wᵢ₋₁/W⌋ (Wᵢ the running weight).
fn apportion(segments: &[(Source, u64)], total: u64) -> Vec<(Source, u64)> {
    let weight: u128 = segments.iter().map(|(_, weight)| u128::from(*weight)).sum();
    if weight == 0 {
        return vec![(Source::Prefix, total)];
    }
    let mut running = 0u128;
    let mut given = 0u64;
    segments
        .iter()
        .map(|(source, part)| {
            running += u128::from(*part);
            let upto = u64::try_from(u128::from(total) * running / weight).unwrap_or(total);
            let tokens = upto - given;
            given = upto;
            (source.clone(), tokens)
        })
        .collect()
}

/// Prices the shares in place (see the module doc, point 4).
fn price(parts: &mut [(Source, Share)], pricing: &Pricing, logged: Option<f64>) -> Priced {
    let table = table_costs(parts, pricing);
    match (table, logged) {
        (Some(costs), logged) => {
            let sum: f64 = costs.iter().sum();
            let target = logged.unwrap_or(sum);
            let scaled = sum > 0.0 && (target - sum).abs() > 1e-12 * sum.max(1.0);
            let factor = if scaled { target / sum } else { 1.0 };
            for ((_, share), cost) in parts.iter_mut().zip(costs) {
                share.cost_usd = cost * factor;
            }
            if scaled { Priced::Scaled } else { Priced::Table }
        }
        (None, Some(cost)) => {
            let tokens: u64 = parts.iter().map(|(_, share)| share.tokens()).sum();
            for (_, share) in parts.iter_mut() {
                share.cost_usd = match tokens {
                    0 => 0.0,
                    all => cost * share.tokens() as f64 / all as f64,
                };
            }
            // A zero-token request's cost goes to the output part.
            if tokens == 0 {
                if let Some((_, share)) = parts.last_mut() {
                    share.cost_usd = cost;
                }
            }
            Priced::ByTokens
        }
        (None, None) => Priced::Unknown,
    }
}

/// Each part's cost at `pricing`, when input and output prices are known.
fn table_costs(parts: &[(Source, Share)], pricing: &Pricing) -> Option<Vec<f64>> {
    let input = pricing.input_price?;
    let output = pricing.output_price?;
    let read = pricing.cached_input_price.unwrap_or(input);
    let write = pricing.cache_write_price.unwrap_or(input);
    let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    Some(
        parts
            .iter()
            .map(|(_, share)| {
                let fresh =
                    share.input_tokens - share.cached_input_tokens - share.cache_write_tokens;
                per_million(fresh, input)
                    + per_million(share.cached_input_tokens, read)
                    + per_million(share.cache_write_tokens, write)
                    + per_million(share.output_tokens, output)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcp(server: &str) -> Source {
        Source::Mcp { server: server.into() }
    }

    #[test]
    fn input_tokens_sum_exactly_and_cache_reads_come_first() {
        let segments = [(Source::Prefix, 3), (Source::History, 3), (mcp("docs"), 3)];
        let usage = Usage {
            input_tokens: 1_000,
            cached_input_tokens: 400,
            cache_write_tokens: 300,
            output_tokens: 50,
            ..Usage::default()
        };
        let (parts, priced) =
            split(&segments, &usage, &Pricing::for_model("claude-sonnet-4"), None);
        assert_eq!(priced, Priced::Table);
        let input: u64 = parts.iter().map(|(_, share)| share.input_tokens).sum();
        assert_eq!(input, 1_000);
        assert_eq!(parts[0].1.input_tokens, 333);
        assert_eq!(parts[0].1.cached_input_tokens, 333, "the prefix is read first");
        assert_eq!(parts[1].1.cached_input_tokens, 67);
        assert_eq!(parts[1].1.cache_write_tokens, 266);
        assert_eq!(parts[2].1.cache_write_tokens, 34);
        assert_eq!(parts[3], (Source::Output, Share { output_tokens: 50, ..parts[3].1 }));
        let cost: f64 = parts.iter().map(|(_, share)| share.cost_usd).sum();
        let table = Pricing::for_model("claude-sonnet-4").cost_usd(&usage).unwrap();
        assert!((cost - table).abs() < 1e-12, "{cost} vs {table}");
    }

    #[test]
    fn a_logged_cost_is_kept_whatever_the_prices() {
        let segments = [(Source::Prefix, 10), (Source::History, 30)];
        let usage = Usage { input_tokens: 400, output_tokens: 100, ..Usage::default() };
        let (parts, priced) = split(&segments, &usage, &Pricing::for_model("gpt-5"), Some(0.5));
        assert_eq!(priced, Priced::Scaled);
        let cost: f64 = parts.iter().map(|(_, share)| share.cost_usd).sum();
        assert!((cost - 0.5).abs() < 1e-12);
        let (parts, priced) = split(&segments, &usage, &Pricing::default(), Some(0.5));
        assert_eq!(priced, Priced::ByTokens);
        assert!((parts[1].1.cost_usd - 0.5 * 300.0 / 500.0).abs() < 1e-12);
        let (_, priced) = split(&segments, &usage, &Pricing::default(), None);
        assert_eq!(priced, Priced::Unknown);
    }

    #[test]
    fn no_weights_put_the_input_on_the_prefix() {
        let usage = Usage { input_tokens: 7, ..Usage::default() };
        let (parts, _) = split(&[], &usage, &Pricing::default(), None);
        assert_eq!(parts[0].0, Source::Prefix);
        assert_eq!(parts[0].1.input_tokens, 7);
    }
}
