//! The `[limits]` table and the spend-limit flags: steps per
//! turn, spend per session, and the runaway guards, resolved into
//! [`Limits`] for the loop.
//!
//! ```toml
//! [limits]
//! max_cost_usd = 2.0      # US dollars per session, at the model's prices
//! max_tokens = 2000000    # input + output tokens per session
//! max_steps = 100         # model calls per turn (as the top-level max_steps)
//! repeated_calls = 3      # same call, same result: noted, then stuck (0: off)
//! failing_calls = 5       # failing calls of one tool in a row (0: off)
//! ```
//!
//! Invariants: a project's `[limits]` only tightens the user's (each key
//! the stricter of the two; a guard turned off is the loosest), so a cloned
//! repository can lower a budget but never raise or remove one; a cost
//! limit on a model without known prices is an error, never a silent
//! no-limit.

use std::path::Path;

use serde::Deserialize;

use crate::agent::{
    DEFAULT_FAILING_CALLS, DEFAULT_REPEATED_CALLS, Limits, RunawayLimits, SpendLimits,
};
use crate::context::Pricing;

use super::layers::ContextFile;

use super::{ConfigError, validate};

/// Model calls allowed in one turn unless configured otherwise.
pub const DEFAULT_MAX_STEPS: u32 = 100;

/// The `[limits]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    /// US dollars the whole session may spend.
    #[serde(default, deserialize_with = "validate::max_cost")]
    pub max_cost_usd: Option<f64>,
    /// Input plus output tokens the whole session may use.
    #[serde(default, deserialize_with = "validate::max_tokens")]
    pub max_tokens: Option<u64>,
    /// Model calls per turn (wins over the top-level `max_steps`).
    #[serde(default, deserialize_with = "validate::limits_max_steps")]
    pub max_steps: Option<u32>,
    /// Same call and result this many times: noted, then stuck (0: off).
    #[serde(default, deserialize_with = "validate::repeated_calls")]
    pub repeated_calls: Option<u32>,
    /// Failing calls of one tool in a row: noted, then stuck (0: off).
    #[serde(default, deserialize_with = "validate::failing_calls")]
    pub failing_calls: Option<u32>,
}

impl LimitsFile {
    /// Every key `other` sets wins (a later layer of the user's own).
    pub(super) fn overlay(&mut self, other: LimitsFile) {
        let LimitsFile { max_cost_usd, max_tokens, max_steps, repeated_calls, failing_calls } =
            other;
        self.max_cost_usd = max_cost_usd.or(self.max_cost_usd);
        self.max_tokens = max_tokens.or(self.max_tokens);
        self.max_steps = max_steps.or(self.max_steps);
        self.repeated_calls = repeated_calls.or(self.repeated_calls);
        self.failing_calls = failing_calls.or(self.failing_calls);
    }

    /// A project's table: each key the stricter of the two.
    pub(super) fn tighten(&mut self, project: LimitsFile) {
        let LimitsFile { max_cost_usd, max_tokens, max_steps, repeated_calls, failing_calls } =
            project;
        self.max_cost_usd = stricter(self.max_cost_usd, max_cost_usd);
        self.max_tokens = stricter(self.max_tokens, max_tokens);
        self.max_steps = stricter(self.max_steps, max_steps);
        // 0 turns a guard off: the loosest value, which a project never
        // sets (its 0 is ignored; a guard it sets wins over the user's 0).
        let on = |value: Option<u32>| value.filter(|value| *value > 0);
        self.repeated_calls =
            stricter(on(self.repeated_calls), on(repeated_calls)).or(self.repeated_calls);
        self.failing_calls =
            stricter(on(self.failing_calls), on(failing_calls)).or(self.failing_calls);
    }
}

fn stricter<T: PartialOrd>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b < a { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// `base` (keel's table with the user's `[context]` and `-c` prices) with
/// a project's `[context]` prices: each may raise a price, never lower
/// it; one keel has no other figure for is taken only while no cost limit
/// is set (shown, not counted). A cloned repository can so never make a
/// budget cheaper, nor price a model for a limit.
pub(super) fn with_project_prices(
    base: Pricing,
    project: Option<ContextFile>,
    cost_limited: bool,
) -> Pricing {
    let Some(project) = project else { return base };
    let raise = |mine: Option<f64>, theirs: Option<f64>| match (mine, theirs) {
        (Some(mine), Some(theirs)) => Some(mine.max(theirs)),
        (None, theirs) if !cost_limited => theirs,
        (mine, _) => mine,
    };
    Pricing {
        input_price: raise(base.input_price, project.input_price),
        cached_input_price: raise(base.cached_input_price, project.cached_input_price),
        output_price: raise(base.output_price, project.output_price),
        cache_write_price: raise(base.cache_write_price, project.cache_write_price),
        ..base
    }
}

/// The loop's limits from `[limits]` (its values checked as parsed, in
/// `validate`), the top-level `max_steps` and the flags (`--max-cost`,
/// `--max-tokens`, which win; checked here).
pub(super) fn resolve_limits(
    file: Option<LimitsFile>,
    top_max_steps: Option<u32>,
    flags: SpendLimits,
    pricing: &Pricing,
    model: &str,
    config_path: &Path,
) -> Result<Limits, ConfigError> {
    let file = file.unwrap_or_default();
    let invalid = |key: &'static str, value: String, message: &str| ConfigError::InvalidValue {
        key,
        value,
        message: message.to_owned(),
    };
    if let Some(cost) = flags.max_cost_usd.filter(|cost| !(cost.is_finite() && *cost > 0.0)) {
        return Err(invalid("--max-cost", cost.to_string(), "use US dollars, more than 0"));
    }
    if flags.max_tokens == Some(0) {
        return Err(invalid("--max-tokens", "0".into(), "use a number of tokens, 1 or more"));
    }
    let guard = |value: Option<u32>, default: u32| match value {
        None => Some(default),
        Some(0) => None,
        Some(count) => Some(count),
    };
    let spend =
        flags.or(SpendLimits { max_cost_usd: file.max_cost_usd, max_tokens: file.max_tokens });
    if spend.max_cost_usd.is_some()
        && (pricing.input_price.is_none() || pricing.output_price.is_none())
    {
        return Err(ConfigError::UnpricedCostLimit {
            model: model.to_owned(),
            config_path: config_path.to_owned(),
        });
    }
    Ok(Limits {
        max_steps: file.max_steps.or(top_max_steps).unwrap_or(DEFAULT_MAX_STEPS).max(1),
        spend,
        runaway: RunawayLimits {
            repeated_calls: guard(file.repeated_calls, DEFAULT_REPEATED_CALLS),
            failing_calls: guard(file.failing_calls, DEFAULT_FAILING_CALLS),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn priced() -> Pricing {
        Pricing::for_model("gpt-5")
    }

    fn resolve(file: LimitsFile, flags: SpendLimits, pricing: &Pricing) -> Result<Limits, String> {
        resolve_limits(Some(file), None, flags, pricing, "qwen3:8b", Path::new("/h/config.toml"))
            .map_err(|error| error.to_string())
    }

    #[test]
    fn flags_win_over_the_table_and_guards_default_on() {
        let file =
            LimitsFile { max_cost_usd: Some(5.0), max_tokens: Some(9), ..LimitsFile::default() };
        let flags = SpendLimits { max_cost_usd: Some(1.0), max_tokens: None };
        let limits = resolve(file, flags, &priced()).unwrap();
        assert_eq!(limits.spend, SpendLimits { max_cost_usd: Some(1.0), max_tokens: Some(9) });
        assert_eq!(limits.runaway, RunawayLimits::default());
        assert_eq!(limits.max_steps, DEFAULT_MAX_STEPS);
    }

    #[test]
    fn limits_max_steps_wins_over_the_top_level_key() {
        let file = LimitsFile { max_steps: Some(7), ..LimitsFile::default() };
        let path = Path::new("/h");
        let limits =
            resolve_limits(Some(file), Some(3), SpendLimits::default(), &priced(), "m", path);
        assert_eq!(limits.unwrap().max_steps, 7);
        let limits = resolve_limits(None, Some(3), SpendLimits::default(), &priced(), "m", path);
        assert_eq!(limits.unwrap().max_steps, 3, "the existing key keeps working");
    }

    #[test]
    fn zero_turns_a_guard_off_and_bad_flags_are_named() {
        let file = LimitsFile { repeated_calls: Some(0), ..LimitsFile::default() };
        let limits = resolve(file, SpendLimits::default(), &priced()).unwrap();
        assert_eq!(limits.runaway.repeated_calls, None);
        assert_eq!(limits.runaway.failing_calls, Some(DEFAULT_FAILING_CALLS));
        for (flags, needle) in [
            (SpendLimits { max_cost_usd: Some(0.0), max_tokens: None }, "--max-cost"),
            (SpendLimits { max_cost_usd: Some(f64::NAN), max_tokens: None }, "--max-cost"),
            (SpendLimits { max_cost_usd: None, max_tokens: Some(0) }, "--max-tokens"),
        ] {
            let error = resolve(LimitsFile::default(), flags, &priced()).unwrap_err();
            assert!(error.contains(needle), "{needle}: {error}");
        }
    }

    #[test]
    fn bad_table_values_are_parse_errors_with_a_caret() {
        for (text, needle) in [
            ("max_cost_usd = -1.0", "limits.max_cost_usd must be US dollars, more than 0"),
            ("max_tokens = 0", "limits.max_tokens must be 1 or more"),
            ("max_steps = 0", "limits.max_steps must be 1 or more"),
            ("failing_calls = 1", "limits.failing_calls must be 2 or more, or 0"),
            ("repeated_calls = 1", "limits.repeated_calls must be 2 or more, or 0"),
            ("max_cost = 1.0", "unknown field `max_cost`"),
        ] {
            let error = toml::from_str::<LimitsFile>(text).unwrap_err().to_string();
            assert!(error.contains(needle), "{text}: {error}");
            assert!(error.contains('^'), "{text}: no caret in {error}");
        }
        let ok = toml::from_str::<LimitsFile>("repeated_calls = 0\nmax_cost_usd = 2.5").unwrap();
        assert_eq!((ok.repeated_calls, ok.max_cost_usd), (Some(0), Some(2.5)));
    }

    #[test]
    fn a_cost_limit_without_prices_names_the_settings_to_fill_in() {
        let flags = SpendLimits { max_cost_usd: Some(1.0), max_tokens: None };
        let error = resolve(LimitsFile::default(), flags, &Pricing::default()).unwrap_err();
        assert!(error.contains("qwen3:8b"), "{error}");
        assert!(error.contains("input_price") && error.contains("output_price"), "{error}");
        assert!(error.contains("[context]") && error.contains("/h/config.toml"), "{error}");
        let tokens = SpendLimits { max_cost_usd: None, max_tokens: Some(10) };
        assert!(
            resolve(LimitsFile::default(), tokens, &Pricing::default()).is_ok(),
            "tokens need no prices"
        );
        let local =
            Pricing { input_price: Some(0.5), output_price: Some(1.0), ..Pricing::default() };
        assert!(resolve(LimitsFile::default(), flags, &local).is_ok(), "[context] prices suffice");
    }

    #[test]
    fn a_project_can_raise_prices_but_never_lower_or_supply_them_under_a_cost_limit() {
        let free = ContextFile {
            input_price: Some(0.0),
            output_price: Some(0.0),
            cached_input_price: Some(50.0),
            ..ContextFile::default()
        };
        let gpt5 = Pricing::for_model("gpt-5");
        let priced = with_project_prices(gpt5, Some(free), true);
        assert_eq!((priced.input_price, priced.output_price), (Some(1.25), Some(10.0)));
        assert_eq!(priced.cached_input_price, Some(50.0), "raising is harmless");
        let unknown = Pricing::default();
        let limited = with_project_prices(unknown, Some(free), true);
        assert_eq!(limited.input_price, None, "no price from a repository for a limit");
        let shown = with_project_prices(unknown, Some(free), false);
        assert_eq!(shown.input_price, Some(0.0), "without a limit it is only shown");
    }

    #[test]
    fn a_project_only_tightens() {
        let mut user = LimitsFile {
            max_cost_usd: Some(1.0),
            max_tokens: None,
            max_steps: Some(50),
            repeated_calls: Some(3),
            failing_calls: None,
        };
        user.tighten(LimitsFile {
            max_cost_usd: Some(100.0),
            max_tokens: Some(1000),
            max_steps: Some(20),
            repeated_calls: Some(0),
            failing_calls: Some(0),
        });
        assert_eq!(user.max_cost_usd, Some(1.0), "a project cannot raise a budget");
        assert_eq!(user.max_tokens, Some(1000), "but may set one");
        assert_eq!(user.max_steps, Some(20));
        assert_eq!(user.repeated_calls, Some(3), "nor turn a guard off");
        assert_eq!(user.failing_calls, None, "the default guard stays on");
    }
}
