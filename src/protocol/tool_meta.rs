//! The structured metadata of one tool result ([`ToolMeta`]): written by the
//! tools, the registry and the runtime, read by the loop's verification
//! gate, the front ends, the log and `--json`.
//!
//! Invariants: the keys other layers act on (`kind`, `exit_code`, `signal`,
//! `timed_out`, `timeout_ms`, `changed`, `duration_ms`, `reason`,
//! `unsandboxed_rerun`, `read_only`, `runaway`, `origin`) are written and read only through the typed methods
//! here, so renaming one cannot silently switch off a reader (the gate
//! decides "deliver" from them). Tool-specific details (`path`, `matches`,
//! `files`, …) are free-form and only displayed. The serialized form is an
//! object whose keys keep the order they were written in (scripts read it
//! from `--json`, and `tests/suite/tool_meta_contract.rs` pins it byte for
//! byte); an empty one is left out of log lines, and `null` reads as empty.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// What kind of result a call had, when the loop or a front end must know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResultKind {
    /// Not run: policy, a hook, the workflow or a user said no.
    Denied,
    /// A shell command that looks blocked by keel's sandbox.
    SandboxViolation,
    /// Answered by the loop itself (`set_phase`, `submit_plan`, `todo_write`).
    Harness,
    /// A tool panicked or its task failed: keel's fault, not the model's.
    Internal,
    /// Any other tool error; the name is the tool error's kind
    /// (`not_found`, `invalid_arguments`, `timeout`, …).
    ToolError(String),
}

impl ResultKind {
    fn name(&self) -> &str {
        match self {
            Self::Denied => "denied",
            Self::SandboxViolation => "sandbox_violation",
            Self::Harness => "harness",
            Self::Internal => "internal",
            Self::ToolError(name) => name,
        }
    }

    /// The kind named `name` (a tool error's kind, or a name above).
    pub fn named(name: &str) -> Self {
        match name {
            "denied" => Self::Denied,
            "sandbox_violation" => Self::SandboxViolation,
            "harness" => Self::Harness,
            "internal" => Self::Internal,
            other => Self::ToolError(other.to_owned()),
        }
    }
}

const KIND: &str = "kind";
const ERROR: &str = "error";
const REASON: &str = "reason";
const EXIT_CODE: &str = "exit_code";
const SIGNAL: &str = "signal";
const TIMED_OUT: &str = "timed_out";
const TIMEOUT_MS: &str = "timeout_ms";
const CHANGED: &str = "changed";
const DURATION_MS: &str = "duration_ms";
const UNSANDBOXED_RERUN: &str = "unsandboxed_rerun";
const READ_ONLY: &str = "read_only";
const RUNAWAY: &str = "runaway";
const NOTE: &str = "note";
const ORIGIN: &str = "origin";

/// The metadata of one tool result. See the module doc for the contract.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolMeta(Map<String, Value>);

impl ToolMeta {
    /// No metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// A call that was not run, and why (the text the model also reads).
    pub fn denied(reason: impl Into<String>) -> Self {
        Self::new().with_kind(ResultKind::Denied).with(REASON, reason.into())
    }

    /// A call answered by the loop itself.
    pub fn harness() -> Self {
        Self::new().with_kind(ResultKind::Harness)
    }

    /// A failed tool call: `error` (its older name) and `kind` are both the
    /// tool error's kind.
    pub fn tool_error(kind: &str) -> Self {
        Self::new().with(ERROR, kind)
    }

    /// A command that ran to its end: exit code (none when a signal killed
    /// it), the signal, not timed out.
    pub fn command(exit_code: Option<i64>, signal: Option<i64>) -> Self {
        Self::new().with(EXIT_CODE, exit_code).with(SIGNAL, signal).with(TIMED_OUT, false)
    }

    /// A tool's own details, given as one JSON object (anything else is
    /// no details). The contract keys are set through the methods below.
    pub fn details(details: Value) -> Self {
        match details {
            Value::Object(map) => Self(map),
            _ => Self::new(),
        }
    }

    /// The same metadata with a tool-specific detail (`path`, `matches`, …).
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.insert(key, value);
        self
    }

    /// Sets a tool-specific detail; an existing key keeps its place.
    pub fn insert(&mut self, key: &str, value: impl Into<Value>) {
        self.0.insert(key.to_owned(), value.into());
    }

    /// A detail by key (for display and tests; the contract keys have
    /// their own methods).
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn kind(&self) -> Option<ResultKind> {
        self.0.get(KIND).and_then(Value::as_str).map(ResultKind::named)
    }

    pub fn with_kind(mut self, kind: ResultKind) -> Self {
        self.set_kind(kind);
        self
    }

    pub fn set_kind(&mut self, kind: ResultKind) {
        self.insert(KIND, kind.name());
    }

    /// Whether the call was not run.
    pub fn is_denied(&self) -> bool {
        self.kind() == Some(ResultKind::Denied)
    }

    /// The command's exit code, when one ran and exited.
    pub fn exit_code(&self) -> Option<i64> {
        self.0.get(EXIT_CODE).and_then(Value::as_i64)
    }

    /// The signal that killed the command, if one did.
    pub fn signal(&self) -> Option<i64> {
        self.0.get(SIGNAL).and_then(Value::as_i64)
    }

    pub fn timed_out(&self) -> bool {
        self.0.get(TIMED_OUT).and_then(Value::as_bool) == Some(true)
    }

    /// The limit a timed-out command ran into.
    pub fn timeout_ms(&self) -> Option<u64> {
        self.0.get(TIMEOUT_MS).and_then(Value::as_u64)
    }

    /// Marks a call killed at its time limit.
    pub fn set_timed_out(&mut self, timeout_ms: u64) {
        self.insert(TIMED_OUT, true);
        self.insert(TIMEOUT_MS, timeout_ms);
    }

    /// Whether the call changed the workspace (set by the runtime from the
    /// files it hashes around a mutating call; unknown when absent).
    pub fn changed(&self) -> Option<bool> {
        self.0.get(CHANGED).and_then(Value::as_bool)
    }

    pub fn set_changed(&mut self, changed: bool) {
        self.insert(CHANGED, changed);
    }

    pub fn set_duration_ms(&mut self, duration_ms: u64) {
        self.insert(DURATION_MS, duration_ms);
    }

    /// Whether the command ran as a read (in the jail with nothing writable).
    pub fn read_only(&self) -> bool {
        self.0.get(READ_ONLY).and_then(Value::as_bool) == Some(true)
    }

    /// Marks a command that ran as a read.
    pub fn set_read_only(&mut self) {
        self.insert(READ_ONLY, true);
    }

    /// Records why the runaway guard annotated this result (`kind`, `count`,
    /// `action`) and the `note` it appended to the output.
    pub fn set_runaway(&mut self, kind: &str, count: u32, action: &str, note: &str) {
        let runaway = serde_json::json!({
            "kind": kind, "count": count, "action": action, NOTE: note,
        });
        self.insert(RUNAWAY, runaway);
    }

    /// The note the runaway guard appended to the output, if it did.
    pub fn runaway_note(&self) -> Option<&str> {
        self.0.get(RUNAWAY).and_then(|runaway| runaway.get(NOTE)).and_then(Value::as_str)
    }

    /// Marks the result of a command run again outside the sandbox.
    pub fn set_unsandboxed_rerun(&mut self) {
        self.insert(UNSANDBOXED_RERUN, true);
    }

    /// Where the result's text came from (`None`: keel wrote it).
    pub fn origin(&self) -> Option<super::Origin> {
        self.0.get(ORIGIN).and_then(|value| serde_json::from_value(value.clone()).ok())
    }

    /// Records where the result's text came from.
    pub fn set_origin(&mut self, origin: &super::Origin) {
        if let Ok(value) = serde_json::to_value(origin) {
            self.insert(ORIGIN, value);
        }
    }

    /// The object as JSON, for envelopes that embed it.
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
}

impl From<Map<String, Value>> for ToolMeta {
    fn from(map: Map<String, Value>) -> Self {
        Self(map)
    }
}

impl std::ops::Index<&str> for ToolMeta {
    type Output = Value;

    /// A detail by key; `null` when absent (as `serde_json::Value` does).
    fn index(&self, key: &str) -> &Value {
        self.0.get(key).unwrap_or(&Value::Null)
    }
}

impl Serialize for ToolMeta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolMeta {
    /// An object, or `null` (older lines), which reads as empty.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Self(Option::<Map<String, Value>>::deserialize(deserializer)?.unwrap_or_default()))
    }
}

/// The published schema (`schemas/`): an object of details, whose keys
/// depend on the tool (README "Tool result metadata").
impl schemars::JsonSchema for ToolMeta {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ToolMeta".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "object",
            "description": "The result's details; their keys depend on the tool."})
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_keep_their_written_order_and_null_reads_as_empty() {
        let mut meta = ToolMeta::command(Some(3), None).with("workdir", ".");
        meta.set_duration_ms(7);
        meta.set_changed(false);
        meta.set_kind(ResultKind::SandboxViolation);
        meta.set_duration_ms(9);
        assert_eq!(
            serde_json::to_string(&meta).unwrap(),
            r#"{"exit_code":3,"signal":null,"timed_out":false,"workdir":".","duration_ms":9,"changed":false,"kind":"sandbox_violation"}"#
        );
        let back: ToolMeta = serde_json::from_value(json!(null)).unwrap();
        assert!(back.is_empty());
        let back: ToolMeta = serde_json::from_str(&serde_json::to_string(&meta).unwrap()).unwrap();
        assert_eq!(back, meta);
    }

    #[test]
    fn the_contract_keys_read_back_typed() {
        let meta: ToolMeta = serde_json::from_value(json!({
            "kind": "not_found", "exit_code": 2, "changed": true, "timed_out": true,
            "timeout_ms": 300, "signal": 9
        }))
        .unwrap();
        assert_eq!(meta.kind(), Some(ResultKind::ToolError("not_found".into())));
        assert_eq!(
            (meta.exit_code(), meta.signal(), meta.changed()),
            (Some(2), Some(9), Some(true))
        );
        assert!(meta.timed_out() && meta.timeout_ms() == Some(300));
        assert!(ToolMeta::denied("no").is_denied());
        for kind in [ResultKind::Denied, ResultKind::SandboxViolation, ResultKind::Harness] {
            assert_eq!(ToolMeta::new().with_kind(kind.clone()).kind(), Some(kind));
        }
        assert_eq!(
            ToolMeta::new().with_kind(ResultKind::Internal).kind(),
            Some(ResultKind::Internal)
        );
    }
}
