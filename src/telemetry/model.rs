//! What the tap hands the exporter: finished spans, log events and metric
//! points, in keel's own small types (the exporter encodes them as OTLP;
//! `encode.rs`). Ids are random and never zero, as OTLP requires.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// A trace's id (16 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId(pub [u8; 16]);

/// A span's id (8 bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpanId(pub [u8; 8]);

impl TraceId {
    pub fn random() -> Self {
        Self(fastrand::u128(1..).to_be_bytes())
    }
}

impl SpanId {
    pub fn random() -> Self {
        Self(fastrand::u64(1..).to_be_bytes())
    }
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl From<&str> for Value {
    fn from(text: &str) -> Self {
        Self::Str(text.to_owned())
    }
}

impl From<String> for Value {
    fn from(text: String) -> Self {
        Self::Str(text)
    }
}

impl From<u64> for Value {
    fn from(number: u64) -> Self {
        Self::Int(i64::try_from(number).unwrap_or(i64::MAX))
    }
}

impl From<u32> for Value {
    fn from(number: u32) -> Self {
        Self::Int(i64::from(number))
    }
}

impl From<f64> for Value {
    fn from(number: f64) -> Self {
        Self::Float(number)
    }
}

impl From<bool> for Value {
    fn from(flag: bool) -> Self {
        Self::Bool(flag)
    }
}

/// Attributes in the order they were added.
pub type Attrs = Vec<(&'static str, Value)>;

/// A finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanRecord {
    pub trace: TraceId,
    pub span: SpanId,
    pub parent: Option<SpanId>,
    pub name: String,
    /// Unix time in nanoseconds.
    pub start: u64,
    pub end: u64,
    pub attrs: Attrs,
    /// Set when what the span covers failed: the status message.
    pub error: Option<String>,
}

/// One log event (a session-log line, with only what may leave).
#[derive(Debug, Clone, PartialEq)]
pub struct LogEvent {
    pub time: u64,
    /// `keel.<type>` (the log line's type).
    pub name: String,
    /// The span it happened in, when a turn was open.
    pub context: Option<(TraceId, SpanId)>,
    pub attrs: Attrs,
    /// The prompt or content text, only when the user opted in.
    pub body: Option<String>,
    pub error: bool,
}

/// What the tap sends the exporter's queue.
#[derive(Debug)]
pub enum Item {
    Span(SpanRecord),
    Log(LogEvent),
    /// Send what is batched now (a turn ended).
    Flush,
    /// Send what is batched, answer, and stop.
    Shutdown(tokio::sync::oneshot::Sender<()>),
}

/// A metric series: its name and its attributes (`key=value`, sorted).
pub type SeriesKey = (&'static str, Vec<(&'static str, String)>);

/// Cumulative metrics since the exporter started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    pub start: u64,
    /// Sums (tokens, cost, calls, approvals).
    pub sums: BTreeMap<SeriesKey, f64>,
    /// Histograms (tool latency in milliseconds).
    pub histograms: BTreeMap<SeriesKey, Histogram>,
    /// Bumped by every change, so an unchanged set is not sent again.
    pub generation: u64,
}

/// The bucket bounds of latency histograms, in milliseconds.
pub const LATENCY_BOUNDS_MS: [f64; 10] =
    [5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 5000.0, 30000.0];

/// One histogram series.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Histogram {
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    /// One more than the bounds (the last: above every bound).
    pub buckets: Vec<u64>,
}

impl Metrics {
    pub fn add(&mut self, name: &'static str, attrs: Vec<(&'static str, String)>, value: f64) {
        if value == 0.0 {
            return;
        }
        *self.sums.entry((name, attrs)).or_insert(0.0) += value;
        self.generation += 1;
    }

    pub fn record(&mut self, name: &'static str, attrs: Vec<(&'static str, String)>, ms: f64) {
        let entry = self.histograms.entry((name, attrs)).or_insert_with(|| Histogram {
            min: f64::MAX,
            buckets: vec![0; LATENCY_BOUNDS_MS.len() + 1],
            ..Histogram::default()
        });
        entry.count += 1;
        entry.sum += ms;
        entry.min = entry.min.min(ms);
        entry.max = entry.max.max(ms);
        let bucket = LATENCY_BOUNDS_MS.iter().position(|bound| ms <= *bound);
        if let Some(slot) = entry.buckets.get_mut(bucket.unwrap_or(LATENCY_BOUNDS_MS.len())) {
            *slot += 1;
        }
        self.generation += 1;
    }
}

/// `at` in Unix nanoseconds (0 before 1970).
pub fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_bucket_by_bound_and_sums_skip_zero() {
        let mut metrics = Metrics::default();
        metrics.record("lat", Vec::new(), 7.0);
        metrics.record("lat", Vec::new(), 40_000.0);
        let histogram = &metrics.histograms[&("lat", Vec::new())];
        assert_eq!(histogram.count, 2);
        assert_eq!(histogram.buckets[1], 1);
        assert_eq!(histogram.buckets[LATENCY_BOUNDS_MS.len()], 1);
        metrics.add("tokens", Vec::new(), 0.0);
        assert!(metrics.sums.is_empty());
        assert_ne!(TraceId::random().0, [0; 16]);
    }
}
