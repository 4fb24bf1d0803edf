//! The exporter's task: drains the bounded queue, batches, and POSTs
//! OTLP/HTTP protobuf (`application/x-protobuf`) to the collector's
//! traces, logs and metrics URLs, each request bounded by the configured
//! timeout.
//!
//! Invariants: the session never waits on this task except for the
//! bounded grace of `Telemetry::shutdown`; an item that could not be sent
//! (the collector down, slow, refusing) is counted in `dropped`, never
//! retried into a growing backlog; the headers are credentials and appear
//! in no error or log line.

use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

use crate::config::TelemetrySettings;

use super::model::{Item, LogEvent, SpanRecord, unix_nanos};
use super::{Shared, TelemetryError, encode};

/// A batch is sent when it holds this many items…
const BATCH_ITEMS: usize = 512;
/// …or this long after its first item arrived.
const BATCH_DELAY: Duration = Duration::from_secs(2);

/// The HTTP client with the headers and timeout of `settings`.
pub(super) fn client(settings: &TelemetrySettings) -> Result<reqwest::Client, TelemetryError> {
    let mut headers = HeaderMap::new();
    for (name, value) in &settings.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| TelemetryError::Client(format!("`{name}` is not an HTTP header name")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            TelemetryError::Client(format!("the value of header `{name}` is not valid in HTTP"))
        })?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/x-protobuf"));
    reqwest::Client::builder()
        .default_headers(headers)
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .build()
        .map_err(|error| TelemetryError::Client(error.to_string()))
}

/// What is waiting to be sent.
#[derive(Default)]
struct Batch {
    spans: Vec<SpanRecord>,
    logs: Vec<LogEvent>,
}

impl Batch {
    fn len(&self) -> usize {
        self.spans.len() + self.logs.len()
    }
}

/// Runs until a `Shutdown` item or until every sender is gone.
pub(super) async fn run(
    shared: Arc<Shared>,
    client: reqwest::Client,
    mut items: tokio::sync::mpsc::Receiver<Item>,
) {
    let mut batch = Batch::default();
    let mut sent_generation = 0;
    loop {
        let next = if batch.len() == 0 {
            items.recv().await
        } else {
            match tokio::time::timeout(BATCH_DELAY, items.recv()).await {
                Ok(next) => next,
                Err(_) => Some(Item::Flush),
            }
        };
        let Some(item) = next else {
            flush(&shared, &client, &mut batch, &mut sent_generation).await;
            return;
        };
        match item {
            Item::Span(span) => batch.spans.push(span),
            Item::Log(event) => batch.logs.push(event),
            Item::Flush => flush(&shared, &client, &mut batch, &mut sent_generation).await,
            Item::Shutdown(done) => {
                // What was queued before the shutdown goes too.
                while let Ok(item) = items.try_recv() {
                    match item {
                        Item::Span(span) => batch.spans.push(span),
                        Item::Log(event) => batch.logs.push(event),
                        Item::Flush | Item::Shutdown(_) => {}
                    }
                }
                flush(&shared, &client, &mut batch, &mut sent_generation).await;
                let _ = done.send(());
                return;
            }
        }
        if batch.len() >= BATCH_ITEMS {
            flush(&shared, &client, &mut batch, &mut sent_generation).await;
        }
    }
}

async fn flush(
    shared: &Shared,
    client: &reqwest::Client,
    batch: &mut Batch,
    sent_generation: &mut u64,
) {
    let settings = &shared.settings;
    let spans = std::mem::take(&mut batch.spans);
    let logs = std::mem::take(&mut batch.logs);
    if !spans.is_empty() {
        let body = encode::traces_request(&settings.service_name, &spans).encode_to_vec();
        count(shared, spans.len(), post(client, &settings.traces_url, body).await);
    }
    if !logs.is_empty() {
        let body = encode::logs_request(&settings.service_name, &logs).encode_to_vec();
        count(shared, logs.len(), post(client, &settings.logs_url, body).await);
    }
    let snapshot = shared
        .metrics(|metrics| (metrics.generation != *sent_generation).then(|| metrics.clone()))
        .flatten();
    if let Some(metrics) = snapshot {
        *sent_generation = metrics.generation;
        let now = unix_nanos(std::time::SystemTime::now()).max(metrics.start);
        let body = encode::metrics_request(&settings.service_name, &metrics, now).encode_to_vec();
        count(shared, 1, post(client, &settings.metrics_url, body).await);
    }
}

fn count(shared: &Shared, items: usize, sent: bool) {
    let items = items as u64;
    if sent {
        shared.count_exported(items);
    } else {
        shared.count_dropped(items);
    }
}

/// POSTs `body`; true when the collector accepted it (2xx).
async fn post(client: &reqwest::Client, url: &str, body: Vec<u8>) -> bool {
    match client.post(url).body(body).send().await {
        Ok(response) if response.status().is_success() => true,
        Ok(response) => {
            tracing::debug!(url, status = %response.status(), "telemetry export refused");
            false
        }
        Err(error) => {
            tracing::debug!(url, error = %error.without_url(), "telemetry export failed");
            false
        }
    }
}
