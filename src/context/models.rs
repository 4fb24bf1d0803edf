//! Known models: context window and list prices, matched by name prefix.
//! Unknown models have no figures (shown as unknown, never guessed).
//!
//! Cost: `Usage::input_tokens` is the whole prompt; its cache reads are
//! billed at the cache read price and its cache writes (Anthropic) at the
//! cache write price (1.25× input for five-minute entries, 2× for one-hour
//! ones), the rest at the input price. A missing read or write price
//! falls back to the input price.

use crate::protocol::Usage;

/// What keel knows about one model family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelInfo {
    /// Name prefix this entry applies to (longest match wins).
    pub prefix: &'static str,
    pub context_window: u64,
    /// US dollars per million tokens.
    pub input_price: f64,
    /// Cache reads.
    pub cached_input_price: f64,
    pub output_price: f64,
    /// Cache writes of five-minute entries; `None` where writes are not
    /// billed apart (OpenAI, DeepSeek: automatic caching).
    pub cache_write_price: Option<f64>,
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
        cache_write_price: None,
    }
}

/// An Anthropic model: reads at 0.1× and five-minute writes at 1.25× the
/// input price.
const fn claude(prefix: &'static str, input: f64, output: f64) -> ModelInfo {
    ModelInfo {
        prefix,
        context_window: 200_000,
        input_price: input,
        cached_input_price: input * 0.1,
        output_price: output,
        cache_write_price: Some(input * 1.25),
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
    claude("claude-opus-4", 15.0, 75.0),
    claude("claude-opus-4-5", 5.0, 25.0),
    claude("claude-sonnet-4", 3.0, 15.0),
    claude("claude-3-7-sonnet", 3.0, 15.0),
    claude("claude-haiku-4", 1.0, 5.0),
    claude("claude-3-5-haiku", 0.8, 4.0),
    model("deepseek-chat", 128_000, 0.28, 0.028, 0.42),
    model("deepseek-reasoner", 128_000, 0.28, 0.028, 0.42),
];

/// The most output keel asks for when it derives the limit from the window:
/// what it has always asked of Anthropic, and no more than the smallest
/// output limit among the table's models with a large window (gpt-4o).
pub const DERIVED_OUTPUT_CAP: u32 = 16_384;

/// The output limit a request asks for (`max_tokens`,
/// `max_completion_tokens`, `max_output_tokens`): the configured one
/// (`[provider] max_output_tokens`), else, for a model the table does not
/// know, a quarter of a known window, at most [`DERIVED_OUTPUT_CAP`];
/// `None` otherwise (the protocol's default). A local server given no limit
/// may generate until its window is full (llama.cpp, llama-cpp-python,
/// Ollama), minutes of one answer; a cloud model the table knows is bounded
/// by its provider, and a derived cap would cut a reasoning model's long
/// answers (gpt-5, o3) that its provider allows.
pub fn output_limit(model: &str, configured: Option<u32>, window: Option<u64>) -> Option<u32> {
    configured.or_else(|| {
        if model_info(model).is_some() {
            return None;
        }
        let quarter = window? / 4;
        Some(u32::try_from(quarter).unwrap_or(u32::MAX).clamp(1, DERIVED_OUTPUT_CAP))
    })
}

/// Families that take images (as input), matched by name prefix after any
/// router prefix (`openai/gpt-4o`). Not a field of [`ModelInfo`]: models
/// that see images without a price here (Gemini, Llama 4) belong too.
const TAKE_IMAGES: &[&str] = &[
    "gpt-5",
    "gpt-4.1",
    "gpt-4o",
    "o3",
    "o4-mini",
    "claude-",
    "gemini",
    "llama-4",
    "pixtral",
    "qwen2.5-vl",
    "qwen-vl",
    "llava",
];

/// Whether `model` is known to take images; unknown models (most local
/// ones) are assumed not to (`[provider] images = true` says otherwise).
pub fn takes_images(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model).to_ascii_lowercase();
    TAKE_IMAGES.iter().any(|p| name.starts_with(p))
}

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
    /// Cache reads.
    pub cached_input_price: Option<f64>,
    pub output_price: Option<f64>,
    /// Cache writes.
    pub cache_write_price: Option<f64>,
}

impl Pricing {
    /// The table's figures for `model` (all unknown for an unknown model).
    pub fn for_model(model: &str) -> Self {
        model_info(model).map_or_else(Self::default, |info| Self {
            context_window: Some(info.context_window),
            input_price: Some(info.input_price),
            cached_input_price: Some(info.cached_input_price),
            output_price: Some(info.output_price),
            cache_write_price: info.cache_write_price,
        })
    }

    /// These prices with one-hour prompt-cache entries, which cost twice
    /// the input price to write (where writes are billed apart at all).
    pub fn with_one_hour_cache(self) -> Self {
        match self.cache_write_price {
            Some(_) => {
                Self { cache_write_price: self.input_price.map(|price| price * 2.0), ..self }
            }
            None => self,
        }
    }

    /// Both the input and the output price are known: a cost can be told.
    pub fn is_priced(&self) -> bool {
        self.input_price.is_some() && self.output_price.is_some()
    }

    /// What `usage` cost, if input and output prices are known (cache
    /// reads and writes fall back to the input price).
    pub fn cost_usd(&self, usage: &Usage) -> Option<f64> {
        let input = self.input_price?;
        let output = self.output_price?;
        let read_price = self.cached_input_price.unwrap_or(input);
        let write_price = self.cache_write_price.unwrap_or(input);
        let read = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage.cache_write_tokens.min(usage.input_tokens - read);
        let fresh = usage.input_tokens - read - written;
        let per_million = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        Some(
            per_million(fresh, input)
                + per_million(read, read_price)
                + per_million(written, write_price)
                + per_million(usage.output_tokens, output),
        )
    }

    /// How full the context is, in percent, for a request of `tokens`.
    pub fn context_percent(&self, tokens: u64) -> Option<f64> {
        let window = self.context_window.filter(|window| *window > 0)?;
        Some(tokens as f64 * 100.0 / window as f64)
    }
}

/// What `usage` cost on `model`, in US dollars, if the model is known
/// (the table's prices; see [`Pricing::cost_usd`]).
pub fn cost_usd(model: &str, usage: &Usage) -> Option<f64> {
    model_info(model)?;
    Pricing::for_model(model).cost_usd(usage)
}

/// How full the context is, in percent, given the input tokens of the
/// latest request.
pub fn context_percent(model: &str, last_input_tokens: u64) -> Option<f64> {
    let info = model_info(model)?;
    Some(last_input_tokens as f64 * 100.0 / info.context_window as f64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn which_models_take_images() {
        for model in ["gpt-4o-mini", "claude-sonnet-4-5", "openai/gpt-5", "o4-mini"] {
            assert!(super::takes_images(model), "{model}");
        }
        for model in ["deepseek-chat", "qwen3-coder", "llama3.1:8b", ""] {
            assert!(!super::takes_images(model), "{model}");
        }
    }

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
            ..Usage::default()
        };
        let cost = cost_usd("claude-sonnet-4-5", &usage).unwrap();
        // 600k × $3 + 400k × $0.30 + 100k × $15 per million.
        assert!((cost - (1.8 + 0.12 + 1.5)).abs() < 1e-9, "{cost}");
        assert_eq!(cost_usd("mock-model", &usage), None);
    }

    /// One formula per provider, with the figures its usage reports.
    #[test]
    fn cache_reads_and_writes_use_their_prices_per_provider() {
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Anthropic: input 10k of which 6k read and 3k written (1k fresh).
        let anthropic = Usage {
            input_tokens: 10_000,
            cached_input_tokens: 6_000,
            cache_write_tokens: 3_000,
            output_tokens: 1_000,
            ..Usage::default()
        };
        let cost = cost_usd("claude-sonnet-4-5", &anthropic).unwrap();
        // 1k × $3 + 6k × $0.30 + 3k × $3.75 + 1k × $15, per million.
        assert!(close(cost, 0.003 + 0.0018 + 0.01125 + 0.015), "{cost}");
        // OpenAI Responses / Chat: reads only, writes free.
        let openai = Usage {
            input_tokens: 10_000,
            cached_input_tokens: 8_000,
            output_tokens: 1_000,
            ..Usage::default()
        };
        let cost = cost_usd("gpt-5", &openai).unwrap();
        assert!(close(cost, 2_000.0 * 1.25e-6 + 8_000.0 * 0.125e-6 + 1_000.0 * 10e-6), "{cost}");
        // DeepSeek: `prompt_cache_hit_tokens` at its hit price.
        let cost = cost_usd("deepseek-chat", &openai).unwrap();
        assert!(close(cost, 2_000.0 * 0.28e-6 + 8_000.0 * 0.028e-6 + 1_000.0 * 0.42e-6), "{cost}");
        // Over-reported reads and writes never make the fresh part negative.
        let odd = Usage {
            input_tokens: 10,
            cached_input_tokens: 8,
            cache_write_tokens: 8,
            ..Usage::default()
        };
        assert!(cost_usd("claude-haiku-4-5", &odd).unwrap() > 0.0);
        assert_eq!(model_info("claude-opus-4-5-20251101").unwrap().input_price, 5.0);
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

    #[test]
    fn the_output_limit_is_configured_or_a_quarter_of_the_window() {
        let local = "qwen2.5-coder";
        assert_eq!(output_limit(local, Some(700), Some(2_048)), Some(700), "configured wins");
        assert_eq!(output_limit(local, None, Some(2_048)), Some(512));
        assert_eq!(output_limit(local, None, Some(8_192)), Some(2_048));
        assert_eq!(output_limit(local, None, Some(200_000)), Some(DERIVED_OUTPUT_CAP));
        assert_eq!(output_limit(local, None, Some(3)), Some(1));
        assert_eq!(output_limit(local, None, None), None, "unknown window: the protocol's default");
    }

    #[test]
    fn a_known_cloud_model_gets_no_derived_output_limit() {
        assert_eq!(output_limit("gpt-5", None, Some(400_000)), None, "its provider bounds it");
        assert_eq!(output_limit("o3", None, Some(200_000)), None);
        assert_eq!(output_limit("gpt-5", Some(64_000), Some(400_000)), Some(64_000));
    }
}
