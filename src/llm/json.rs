//! The small JSON accessors the stream reducers share: an SSE event's
//! data parsed (a parse failure names the event), its kind, and values at
//! a path of object keys. Pure; absent paths are `None` (or 0), never a
//! panic.

use serde_json::Value;

use super::error::LlmError;
use super::sse::SseEvent;

/// Parses an event's data as JSON, naming the event when it is not.
pub(crate) fn parse_data(event: &SseEvent) -> Result<Value, LlmError> {
    serde_json::from_str(&event.data).map_err(|err| {
        let mut preview: String = event.data.chars().take(80).collect();
        if preview.len() < event.data.len() {
            preview.push('…');
        }
        LlmError::malformed(&event.event, format!("data is not JSON ({err}): {preview}"))
    })
}

/// The event's kind: the data's `type` field (so a proxy that drops `event:`
/// lines does no harm), else the SSE event name.
pub(crate) fn event_type<'a>(event: &'a SseEvent, data: &'a Value) -> &'a str {
    str_at(data, &["type"]).unwrap_or(&event.event)
}

/// The string at a path of object keys.
pub(crate) fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path)?.as_str()
}

/// The unsigned integer at a path of object keys, 0 when absent.
pub(crate) fn u64_at(value: &Value, path: &[&str]) -> u64 {
    at(value, path).and_then(Value::as_u64).unwrap_or(0)
}

pub(crate) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |value, key| value.get(key))
}
