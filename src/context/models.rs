//! Known models: context window and list prices, matched by name prefix.
//! Unknown models have no figures (shown as unknown, never guessed).

use crate::protocol::Usage;

/// What keel knows about one model family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Name prefix this entry applies to (longest match wins).
    pub prefix: &'static str,
    pub context_window: u64,
    /// US dollars per million tokens.
    pub input_price: f64,
    pub cached_input_price: f64,
    pub output_price: f64,
}

const fn model(
    prefix: &'static str,
    window: u64,
    input: f64,
    cached: f64,
    output: f64,
) -> ModelInfo {
    ModelInfo {
        prefix,
        context_window: window,
        input_price: input,
        cached_input_price: cached,
        output_price: output,
    }
}

/// List prices per million tokens at the providers' public pages.
const MODELS: &[ModelInfo] = &[
    model("gpt-5", 400_000, 1.25, 0.125, 10.0),
    model("gpt-5-mini", 400_000, 0.25, 0.025, 2.0),
    model("gpt-5-nano", 400_000, 0.05, 0.005, 0.4),
    model("gpt-4.1", 1_047_576, 2.0, 0.5, 8.0),
    model("gpt-4.1-mini", 1_047_576, 0.4, 0.1, 1.6),
    model("gpt-4o", 128_000, 2.5, 1.25, 10.0),
    model("gpt-4o-mini", 128_000, 0.15, 0.075, 0.6),
    model("o3", 200_000, 2.0, 0.5, 8.0),
    model("o4-mini", 200_000, 1.1, 0.275, 4.4),
    model("claude-opus-4", 200_000, 15.0, 1.5, 75.0),
    model("claude-sonnet-4", 200_000, 3.0, 0.3, 15.0),
    model("claude-haiku-4", 200_000, 1.0, 0.1, 5.0),
    model("claude-3-5-haiku", 200_000, 0.8, 0.08, 4.0),
];

/// The entry whose prefix is the longest prefix of `name`.
pub fn model_info(name: &str) -> Option<&'static ModelInfo> {
    MODELS.iter().filter(|m| name.starts_with(m.prefix)).max_by_key(|m| m.prefix.len())
}

/// A session's figures: the table's entry for its model, with whatever
/// the user's config overrides (`[context]`). Unknown parts stay unknown.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Pricing {
    pub context_window: Option<u64>,
    /// US dollars per million tokens; `None`: no cost is shown.
    pub input_price: Option<f64>,
    pub cached_input_price: Option<f64>,
    pub output_price: Option<f64>,
}

impl Pricing {
    /// The table's figures for `model` (all unknown for an unknown model).
    pub fn for_model(model: &str) -> Self {
        model_info(model).map_or_else(Self::default, |info| Self {
            context_window: Some(info.context_window),
            input_price: Some(info.input_price),
            cached_input_price: Some(info.cached_input_price),
            output_price: Some(info.output_price),
        })
    }

    /// What `usage` cost, if input and output prices are known (cached
    /// input falls back to the input price).
    pub fn cost_usd(&self, usage: &Usage) -> Option<f64> {
        let input = self.input_price?;
        let output = self.output_price?;
        let cached_price = self.cached_input_price.unwrap_or(input);
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let fresh = usage.input_tokens - cached;
        let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        Some(
            per_million(fresh, input)
                + per_million(cached, cached_price)
                + per_million(usage.output_tokens, output),
        )
    }

    /// How full the context is, in percent, for a request of `tokens`.
    pub fn context_percent(&self, tokens: u64) -> Option<f64> {
        let window = self.context_window.filter(|window| *window > 0)?;
        Some(tokens as f64 * 100.0 / window as f64)
    }
}

/// What `usage` cost on `model`, in US dollars, if the model is known.
/// `input_tokens` includes the cached ones, which are billed at the cached
/// rate.
pub fn cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    let info = model_info(model)?;
    let cached = usage.cached_input_tokens.min(usage.input_tokens);
    let fresh = usage.input_tokens - cached;
    let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
    Some(
        per_million(fresh, info.input_price)
            + per_million(cached, info.cached_input_price)
            + per_million(usage.output_tokens, info.output_price),
    )
}

/// How full the context is, in percent, given the input tokens of the
/// latest request.
pub fn context_percent(model: &str, last_input_tokens: u64) -> Option<f64> {
    let info = model_info(model)?;
    Some(last_input_tokens as f64 * 100.0 / info.context_window as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(model_info("gpt-5-mini-2025-08-07").unwrap().prefix, "gpt-5-mini");
        assert_eq!(model_info("gpt-5.1-codex").unwrap().prefix, "gpt-5");
        assert_eq!(model_info("claude-sonnet-4-5").unwrap().prefix, "claude-sonnet-4");
        assert!(model_info("qwen3:8b").is_none());
    }

    #[test]
    fn cached_input_is_billed_at_the_cached_rate() {
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 400_000,
            output_tokens: 100_000,
            reasoning_tokens: 0,
        };
        let cost = cost_usd("claude-sonnet-4-5", &usage).unwrap();
        // 600k × $3 + 400k × $0.30 + 100k × $15 per million.
        assert!((cost - (1.8 + 0.12 + 1.5)).abs() < 1e-9, "{cost}");
        assert_eq!(cost_usd("mock-model", &usage), None);
    }

    #[test]
    fn config_prices_override_the_table_and_price_unknown_models() {
        let usage = Usage { input_tokens: 2_000_000, output_tokens: 1_000_000, ..Usage::default() };
        let table = Pricing::for_model("gpt-5");
        assert_eq!(table.cost_usd(&usage), cost_usd("gpt-5", &usage));
        let local =
            Pricing { input_price: Some(0.5), output_price: Some(1.0), ..Pricing::default() };
        assert!((local.cost_usd(&usage).unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(Pricing::for_model("qwen3:8b").cost_usd(&usage), None);
        assert_eq!(local.context_percent(10), None, "no window, no percentage");
    }

    #[test]
    fn context_percent_uses_the_window() {
        let percent = context_percent("gpt-5", 100_000).unwrap();
        assert!((percent - 25.0).abs() < 1e-9);
    }
}
