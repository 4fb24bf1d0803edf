//! Backoff arithmetic and the `Retry-After` headers.
//!
//! Invariants: pure functions; the random jitter is passed in (the caller
//! draws it), so every delay is reproducible in tests. A server's
//! `Retry-After` wins over our own schedule but is capped, so a hostile or
//! confused server cannot park a turn for hours.

use std::time::Duration;

use reqwest::header::HeaderMap;

use super::RetryPolicy;

/// The longest `Retry-After` we honour; longer requests are shortened.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// The delay before retry number `retry_index` (0 for the first retry).
///
/// Without a server hint: exponential from `initial_backoff`, capped at
/// `max_backoff`, with "equal jitter" (half fixed, half scaled by `jitter`
/// in `0.0..=1.0`) so parallel clients spread out but never retry at once.
pub(crate) fn backoff_delay(
    policy: &RetryPolicy,
    retry_index: u32,
    retry_after: Option<Duration>,
    jitter: f64,
) -> Duration {
    if let Some(after) = retry_after {
        return after.min(MAX_RETRY_AFTER);
    }
    let factor = 2u32.saturating_pow(retry_index);
    let capped = policy.initial_backoff.saturating_mul(factor).min(policy.max_backoff);
    let half = capped / 2;
    let jitter = if jitter.is_finite() { jitter.clamp(0.0, 1.0) } else { 0.0 };
    half + half.mul_f64(jitter)
}

/// `retry-after-ms` (OpenAI, milliseconds) or `retry-after` (seconds). The
/// HTTP-date form of `retry-after` is not honoured (our own backoff applies).
pub(crate) fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let value = headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    number("retry-after").and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICY: RetryPolicy = RetryPolicy {
        max_retries: 5,
        initial_backoff: Duration::from_millis(100),
        max_backoff: Duration::from_millis(1000),
    };

    #[test]
    fn grows_exponentially_up_to_the_cap_with_bounded_jitter() {
        assert_eq!(backoff_delay(&POLICY, 0, None, 0.0), Duration::from_millis(50));
        assert_eq!(backoff_delay(&POLICY, 0, None, 1.0), Duration::from_millis(100));
        assert_eq!(backoff_delay(&POLICY, 2, None, 1.0), Duration::from_millis(400));
        assert_eq!(backoff_delay(&POLICY, 10, None, 1.0), Duration::from_millis(1000));
        assert_eq!(backoff_delay(&POLICY, u32::MAX, None, 0.5), Duration::from_millis(750));
        assert_eq!(backoff_delay(&POLICY, 0, None, f64::NAN), Duration::from_millis(50));
    }

    #[test]
    fn server_hint_wins_but_is_capped() {
        let hint = Some(Duration::from_secs(3));
        assert_eq!(backoff_delay(&POLICY, 0, hint, 1.0), Duration::from_secs(3));
        let huge = Some(Duration::from_secs(86_400));
        assert_eq!(backoff_delay(&POLICY, 0, huge, 1.0), MAX_RETRY_AFTER);
    }

    #[test]
    fn reads_both_retry_after_headers() {
        let mut headers = HeaderMap::new();
        assert_eq!(parse_retry_after(&headers), None);
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(parse_retry_after(&headers), Some(Duration::from_millis(250)));
        headers.insert("retry-after-ms", "-1".parse().unwrap());
        headers.insert("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(parse_retry_after(&headers), None);
    }
}
