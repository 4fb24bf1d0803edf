//! Backoff arithmetic and the `Retry-After` headers.
//!
//! Invariants: pure functions; the random jitter is passed in (the caller
//! draws it), so every delay is reproducible in tests. A server's
//! `Retry-After` wins over our own schedule but is capped, so a hostile or
//! confused server cannot park a turn for hours. The clock is passed in
//! too: an HTTP-date `Retry-After` is read against the caller's `now`.

use std::time::{Duration, SystemTime};

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

/// `retry-after-ms` (OpenAI, milliseconds) or `retry-after` in either of
/// RFC 9110's forms: seconds, or an HTTP date (read against `now`; a date
/// already past means "retry now"). The cap is [`backoff_delay`]'s.
pub(crate) fn parse_retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let number = |name: &str| -> Option<f64> {
        let value = text(name)?.parse::<f64>().ok()?;
        (value.is_finite() && value >= 0.0).then_some(value)
    };
    if let Some(ms) = number("retry-after-ms") {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    if let Some(secs) = number("retry-after") {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let date = httpdate::parse_http_date(text("retry-after")?).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
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
        let now = SystemTime::UNIX_EPOCH;
        let mut headers = HeaderMap::new();
        assert_eq!(parse_retry_after(&headers, now), None);
        headers.insert("retry-after", "2".parse().unwrap());
        assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_millis(250)));
        headers.insert("retry-after-ms", "-1".parse().unwrap());
        headers.insert("retry-after", "soon".parse().unwrap());
        assert_eq!(parse_retry_after(&headers, now), None);
    }

    #[test]
    fn an_http_date_retry_after_counts_from_now() {
        let date = "Wed, 21 Oct 2015 07:28:00 GMT";
        let at = httpdate::parse_http_date(date).unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", date.parse().unwrap());
        let twenty_before = at - Duration::from_secs(20);
        assert_eq!(parse_retry_after(&headers, twenty_before), Some(Duration::from_secs(20)));
        let later = at + Duration::from_secs(5);
        assert_eq!(parse_retry_after(&headers, later), Some(Duration::ZERO), "a past date: now");
        let year_before = at - Duration::from_secs(365 * 86_400);
        let hint = parse_retry_after(&headers, year_before);
        assert_eq!(
            backoff_delay(&POLICY, 0, hint, 1.0),
            MAX_RETRY_AFTER,
            "capped as the seconds form"
        );
    }
}
