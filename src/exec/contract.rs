//! The published schema of `keel exec --json` (`schemas/exec-event.schema.json`):
//! one type per line, generated with schemars, so integrators validate
//! instead of re-parsing after a change (issue 40).
//!
//! The printer (`json.rs`, `json_items.rs`) builds its lines as JSON
//! values; these types describe them and are the schema's only source.
//! They cannot drift apart unnoticed: every variant denies fields it does
//! not name, every field is required (the printer writes `null` rather
//! than leaving a key out; only `parent` is optional), and the test suite
//! validates every `--json` line it produces against the committed file
//! (`tests/suite/contract.rs`, through `tests/suite/support.rs`). A field
//! the printer writes and this file does not name, or names and the
//! printer leaves out, fails there.
//!
//! Compatibility: `schema_version` ([`SCHEMA_VERSION`]) is on every line;
//! new fields and line types keep it, a field that goes away or changes
//! meaning raises it (`schemas/fields.lock` fails the build otherwise;
//! `schemas/CHANGELOG.md` says what changed).

use schemars::JsonSchema;
use serde_json::{Value, json};

use super::json::SCHEMA_VERSION;
use crate::protocol::{ApprovalMode, TurnOutcome};
use crate::tasks::TaskStatus;

/// One line of `keel exec --json`. Every line also has `schema_version`;
/// a subagent's lines have `parent`, the `call_id` of the `agent` call
/// they work for.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
// Never built: the type is the schema's source, sizes do not matter.
#[allow(dead_code, clippy::large_enum_variant)]
pub enum ExecLine {
    /// The session opened (a subagent's comes first among its lines).
    SessionStarted {
        session_id: String,
        log_path: String,
        provider: String,
        model: String,
        workspace_root: String,
        sandbox: SandboxWord,
        approval_mode: ApprovalMode,
        keel_version: String,
    },
    /// A user turn begins.
    TurnStarted {
        turn: u32,
    },
    /// Text came in on `--input-stream` while a turn ran: it waits for
    /// delivery (`mode`: `queue`, a turn of its own, or `steer`, the
    /// running turn after its tool batch).
    InputQueued {
        id: u64,
        text: String,
        mode: crate::protocol::Delivery,
    },
    /// A queued input reached the model (once).
    InputDelivered {
        id: u64,
    },
    /// An item begins: text or reasoning starts streaming, or a call starts.
    ItemStarted {
        item: StartedItem,
    },
    /// An item ends; exactly one per `item_started`, with its `id`.
    ItemCompleted {
        item: CompletedItem,
    },
    /// A call needed an approval this run could not ask for.
    ApprovalDeclined {
        call_id: String,
        name: String,
        arguments: String,
        reason: String,
        allow_with: String,
    },
    /// An MCP server's status: each configured server once before the
    /// first request, then each change.
    McpServerStatus {
        server: String,
        status: String,
        tools: Vec<String>,
        error: Option<String>,
        log: Option<String>,
    },
    /// A running MCP tool's progress.
    ToolProgress {
        call_id: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// The model writes a summary (`trigger`: `auto`, `manual`).
    Compacting {
        trigger: String,
    },
    /// The history was compacted (`reason`: `threshold`, `overflow`, `manual`; estimates).
    Compacted {
        reason: String,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// Slow work under way or done.
    Progress {
        message: String,
    },
    /// A failed model request is sent again after `delay_ms`.
    Retrying {
        attempt: u32,
        max_attempts: u32,
        reason: String,
        delay_ms: u64,
    },
    Warning {
        message: String,
    },
    Error {
        message: String,
    },
    /// A turn ended.
    TurnCompleted {
        turn: u32,
        outcome: TurnOutcome,
        usage: ExecUsage,
    },
    /// Last, exactly once: how the run ended.
    Result {
        status: super::ExecStatus,
        final_text: Option<String>,
        usage: ExecUsage,
        session_id: Option<String>,
        log_path: Option<String>,
        cost_usd: Option<f64>,
        context_percent: Option<f64>,
        plan_path: Option<String>,
        tasks: Vec<ExecTask>,
        error: Option<String>,
        declined: Vec<Declined>,
        verification: Option<String>,
        /// The model's `ask_user` questions no one answered.
        unanswered_questions: Vec<String>,
        /// `--output-schema`: the final answer as the JSON that validated.
        structured_output: Option<Value>,
        limits: Option<ExecLimits>,
    },
}

/// `sandbox` of `session_started`.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum SandboxWord {
    On,
    Off,
    Unavailable,
}

/// An item as it starts.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code)]
pub enum StartedItem {
    AgentMessage { id: String },
    Reasoning { id: String },
    ToolCall { id: String, call_id: String, name: String, arguments: String },
}

/// An item as it completes.
#[derive(JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code)]
pub enum CompletedItem {
    AgentMessage {
        id: String,
        text: String,
        status: ItemStatus,
    },
    Reasoning {
        id: String,
        text: String,
        status: ItemStatus,
    },
    /// `meta` depends on the tool (README "`keel exec --json`").
    ToolCall {
        id: String,
        call_id: String,
        name: String,
        arguments: String,
        output: String,
        is_error: bool,
        meta: crate::protocol::ToolMeta,
    },
}

/// How a message or reasoning item ended.
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
pub enum ItemStatus {
    Completed,
    Interrupted,
    Failed,
}

/// Token counts (subagents included in `result`).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ExecUsage {
    input_tokens: u64,
    output_tokens: u64,
    cached_input_tokens: u64,
    cache_write_tokens: u64,
    cache_hit_rate: Option<f64>,
    reasoning_tokens: u64,
    total_tokens: u64,
}

/// One task of the session's list.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ExecTask {
    id: String,
    text: String,
    status: TaskStatus,
}

/// A call declined for want of an approval, with what allows it.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct Declined {
    call_id: String,
    name: String,
    arguments: String,
    reason: String,
    allow_with: String,
}

/// The session's spend limits (null when unset) and spend.
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct ExecLimits {
    max_cost_usd: Option<f64>,
    max_tokens: Option<u64>,
    spent_usd: Option<f64>,
    spent_tokens: u64,
}

/// `schemas/exec-event.schema.json`: [`ExecLine`] with the envelope every
/// line has (`schema_version`, and `parent` on a subagent's lines) and
/// every field required.
pub fn exec_event_schema() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<ExecLine>().to_value();
    schema["title"] = json!("keel exec --json line");
    for variant in schema["oneOf"].as_array_mut().into_iter().flatten() {
        if let Some(properties) = variant["properties"].as_object_mut() {
            properties.insert(
                "schema_version".into(),
                json!({"type": "integer", "const": SCHEMA_VERSION}),
            );
            properties.insert(
                "parent".into(),
                json!({"type": "string",
                    "description": "On a subagent's lines: the `call_id` of its `agent` call."}),
            );
        }
    }
    require_every_field(&mut schema, &["parent"]);
    schema
}

/// Every object schema below `schema` requires all its properties but
/// `optional`, in their order.
fn require_every_field(schema: &mut Value, optional: &[&str]) {
    match schema {
        Value::Object(object) => {
            if let Some(Value::Object(properties)) = object.get("properties") {
                let names: Vec<Value> = properties
                    .keys()
                    .filter(|name| !optional.contains(&name.as_str()))
                    .map(|name| json!(name))
                    .collect();
                object.insert("required".into(), Value::Array(names));
            }
            object.values_mut().for_each(|sub| require_every_field(sub, optional));
        }
        Value::Array(items) => items.iter_mut().for_each(|sub| require_every_field(sub, optional)),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}
