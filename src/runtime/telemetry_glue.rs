//! Connects a session to the OpenTelemetry exporter (`telemetry/`): a
//! top-level session (new or resumed) starts one when `[telemetry]` is
//! enabled and taps its log with it; a subagent's log is tapped by its
//! parent's, so the child's spans land in the parent's trace. Nothing else
//! in the runtime knows about telemetry: spans come from the log lines.
//!
//! Invariant: an exporter that cannot start is a warning, never a failed
//! session.

use crate::config::Settings;
use crate::session::SessionLog;
use crate::telemetry::Telemetry;

use super::events::{EventSink, RuntimeEvent};

/// The session's exporter, when `[telemetry]` is on and it could start.
pub(super) fn start(settings: &Settings, sink: &mut dyn EventSink) -> Option<Telemetry> {
    let wanted = settings.telemetry.as_ref()?;
    match Telemetry::start(wanted) {
        Ok(telemetry) => Some(telemetry),
        Err(error) => {
            sink.emit(RuntimeEvent::Warning {
                message: format!("telemetry is off for this session: {error}"),
            });
            None
        }
    }
}

/// Lets `telemetry` watch `log` (of session `id`) from its next line on.
pub(super) fn tap(telemetry: Option<&Telemetry>, log: &mut SessionLog, id: &str) {
    if let Some(telemetry) = telemetry {
        log.set_tap(telemetry.tap(id));
    }
}
