//! The published schema of the session log (`schemas/session-event.schema.json`):
//! one [`EventRecord`] per line, generated with schemars from the types the
//! writer serializes, so the file cannot say other than what keel writes.
//!
//! Compatibility: `v` ([`LOG_FORMAT_VERSION`]) is on every line; new
//! fields (optional, `#[serde(default)]`) and event types keep it, a field
//! that goes away or is renamed raises it (`schemas/fields.lock` fails the
//! build otherwise; `schemas/CHANGELOG.md` says what changed). The test
//! suite validates every log it reads against the committed file
//! (`tests/suite/contract.rs`).

use serde_json::{Value, json};

use super::{EventRecord, LOG_FORMAT_VERSION};

/// `schemas/session-event.schema.json`.
pub fn session_event_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<EventRecord>().to_value();
    schema["title"] = json!("keel session log line");
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.insert("v".into(), json!({"type": "integer", "const": LOG_FORMAT_VERSION}));
    }
    schema
}
