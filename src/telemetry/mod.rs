//! OpenTelemetry export (opt-in, `[telemetry]`; `config/telemetry.rs`):
//! a trace per turn, metrics and log events, sent as OTLP over
//! HTTP/protobuf to a collector.
//!
//! Where the data comes from: the session log. A [`SessionTap`]
//! (`tap.rs`) watches every line a session's `SessionLog` writes
//! (`session::LogTap`) and turns the lines into spans, log events and
//! metric points; nothing in the driver calls telemetry. Spans:
//!
//! | span | from | to |
//! |---|---|---|
//! | `keel.turn` | `turn_started` | `turn_completed` (or `session_ended`) |
//! | `chat MODEL` (a model request) | the line before its response | `model_response` / `model_error` |
//! | `execute_tool NAME` | `tool_call_started` | `tool_call_finished` |
//! | `keel.approval` | `policy_decision` that prompts | `approval` (or the turn's end: unanswered) |
//! | `keel.compaction` | the line before it | `compaction` |
//!
//! A subagent's session is a child of the parent's `agent` call span in
//! the parent's trace: the parent's tap names that span's id when it sees
//! `subagent_started` (before the child's log exists) in a registry the
//! taps of one [`Telemetry`] share, and the child's tap finds it from its
//! `session_started`'s parent link. Metrics (cumulative since the exporter
//! started): `keel.token.usage` (`type`: input, output, cache_read,
//! cache_write; `model`), `keel.cost.usage` (USD), `keel.tool.calls`
//! (`tool`, `outcome`), `keel.tool.duration` (ms histogram),
//! `keel.approvals` (`decision`).
//!
//! Invariants:
//! - Exporting never slows or breaks a session: a tap only pushes onto a
//!   bounded queue with `try_send` (a full queue drops the item and counts
//!   it: [`Telemetry::dropped`], written to the log at the session's end);
//!   a background task drains it, batches and sends with a timeout; a
//!   failed or timed-out send is counted as dropped too. At the end the
//!   session waits at most [`SHUTDOWN_GRACE`] for what is queued, never
//!   the export timeout.
//! - Prompts, model text and tool arguments and output are not exported
//!   unless `log_prompts` / `log_tool_content` say so; sizes and names are.
//!   What is exported passes `display::mask_secret_shapes`. The headers
//!   (credentials) are sent, never logged or shown.
//! - HTTP/protobuf only: OTLP/gRPC would need tonic and its tree (a second
//!   HTTP/2 stack's worth of build time for a protocol every collector
//!   also serves over HTTP); `protocol = "grpc"` is refused with that
//!   advice. The messages are `opentelemetry-proto`'s (prost, no tonic);
//!   the SDK's pipelines are not used: the tap already has finished spans.
//!
//! Files: `model.rs` (spans, logs, metrics, ids), `tap.rs` (log lines →
//! those), `encode.rs` (→ OTLP requests), `export.rs` (the queue's task
//! and the HTTP client).

mod encode;
mod export;
mod model;
mod tap;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config::TelemetrySettings;

pub use encode::{logs_request, metrics_request, traces_request};
pub use model::{Item, LogEvent, Metrics, SpanId, SpanRecord, TraceId, Value};
pub use tap::SessionTap;

/// Items the queue holds before it drops (a few turns' worth).
pub const QUEUE_CAPACITY: usize = 4096;
/// The longest a session's end waits for queued telemetry to be sent.
pub const SHUTDOWN_GRACE: Duration = Duration::from_millis(1500);

/// Why export cannot start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("telemetry export needs an async runtime; none is running")]
    NoRuntime,
    #[error("cannot build the telemetry HTTP client: {0}")]
    Client(String),
}

/// What the taps of one exporter share.
pub(crate) struct Shared {
    pub(crate) settings: TelemetrySettings,
    queue: tokio::sync::mpsc::Sender<Item>,
    /// Spans and log events taken into the queue.
    queued: AtomicU64,
    /// Items the queue refused (full) or the collector did not take.
    dropped: AtomicU64,
    exported: AtomicU64,
    /// Open `agent` call spans by (session id, call id): where a child
    /// session's spans hang.
    agent_calls: Mutex<HashMap<(String, String), (TraceId, SpanId)>>,
    pub(crate) metrics: Mutex<Metrics>,
}

impl Shared {
    /// Queues `item`, or counts it dropped when the queue is full.
    pub(crate) fn push(&self, item: Item) {
        let counted = matches!(item, Item::Span(_) | Item::Log(_));
        match self.queue.try_send(item) {
            Ok(()) if counted => {
                self.queued.fetch_add(1, Ordering::Relaxed);
            }
            Ok(()) => {}
            Err(_) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub(crate) fn count_dropped(&self, items: u64) {
        self.dropped.fetch_add(items, Ordering::Relaxed);
    }

    pub(crate) fn count_exported(&self, items: u64) {
        self.exported.fetch_add(items, Ordering::Relaxed);
    }

    pub(crate) fn name_agent_call(&self, session: &str, call: &str, ids: (TraceId, SpanId)) {
        if let Ok(mut calls) = self.agent_calls.lock() {
            calls.insert((session.to_owned(), call.to_owned()), ids);
        }
    }

    pub(crate) fn agent_call(&self, session: &str, call: &str) -> Option<(TraceId, SpanId)> {
        let calls = self.agent_calls.lock().ok()?;
        calls.get(&(session.to_owned(), call.to_owned())).copied()
    }

    pub(crate) fn forget_agent_call(&self, session: &str, call: &str) {
        if let Ok(mut calls) = self.agent_calls.lock() {
            calls.remove(&(session.to_owned(), call.to_owned()));
        }
    }

    pub(crate) fn metrics<R>(&self, change: impl FnOnce(&mut Metrics) -> R) -> Option<R> {
        self.metrics.lock().ok().map(|mut metrics| change(&mut metrics))
    }
}

/// A running exporter; clones share it (a session and its subagents).
#[derive(Clone)]
pub struct Telemetry {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telemetry")
            .field("traces_url", &self.shared.settings.traces_url)
            .field("dropped", &self.dropped())
            .finish_non_exhaustive()
    }
}

impl Telemetry {
    /// Starts the exporter's task on the current tokio runtime.
    pub fn start(settings: &TelemetrySettings) -> Result<Self, TelemetryError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|_| TelemetryError::NoRuntime)?;
        let client = export::client(settings)?;
        let (queue, items) = tokio::sync::mpsc::channel(QUEUE_CAPACITY);
        // Its start is the first line a tap sees (`tap.rs`).
        let metrics = Metrics::default();
        let shared = Arc::new(Shared {
            settings: settings.clone(),
            queue,
            queued: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            exported: AtomicU64::new(0),
            agent_calls: Mutex::new(HashMap::new()),
            metrics: Mutex::new(metrics),
        });
        runtime.spawn(export::run(Arc::clone(&shared), client, items));
        Ok(Self { shared })
    }

    /// A tap for the log of session `session_id` (attach it before the
    /// first line it should see).
    pub fn tap(&self, session_id: &str) -> Box<dyn crate::session::LogTap> {
        Box::new(SessionTap::new(Arc::clone(&self.shared), session_id))
    }

    /// Items (spans, log events, metric sets) that could not be queued or
    /// whose export failed, so far.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// Spans and log events queued but neither exported nor dropped yet
    /// (in flight, or left when the shutdown's grace ran out).
    pub fn unsent(&self) -> u64 {
        let queued = self.shared.queued.load(Ordering::Relaxed);
        let settled = self.exported().saturating_add(self.dropped());
        queued.saturating_sub(settled)
    }

    /// Items the collector accepted so far.
    pub fn exported(&self) -> u64 {
        self.shared.exported.load(Ordering::Relaxed)
    }

    /// Sends what is queued and stops the task, waiting at most
    /// [`SHUTDOWN_GRACE`] (a slow or dead collector is not waited for).
    pub async fn shutdown(&self) {
        let (done, answered) = tokio::sync::oneshot::channel();
        if self.shared.queue.try_send(Item::Shutdown(done)).is_err() {
            self.shared.count_dropped(1);
            return;
        }
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, answered).await;
    }
}

/// What was not exported, for a line in the session log (after
/// [`Telemetry::shutdown`]); `None` when everything was.
pub fn drop_note(telemetry: &Telemetry) -> Option<String> {
    let (dropped, unsent) = (telemetry.dropped(), telemetry.unsent());
    (dropped + unsent > 0).then(|| {
        format!(
            "telemetry: {dropped} item(s) dropped and {unsent} unsent at exit, {} exported \
             (the collector at {} was down, slow or refused them)",
            telemetry.exported(),
            telemetry.shared.settings.traces_url,
        )
    })
}
