//! The published contract (`schemas/`, issue 40): the schema files are
//! what the types generate (`UPDATE_SCHEMAS=1` rewrites them), no field of
//! the contract goes away while its version stands (`schemas/fields.lock`),
//! and the validation every suite test gets through `support.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;

/// A published schema: its file under `schemas/`, its version, its source.
struct Published {
    name: &'static str,
    version: u32,
    generate: fn() -> Value,
}

fn published() -> [Published; 2] {
    [
        Published {
            name: "exec-event",
            version: keel::exec::SCHEMA_VERSION,
            generate: keel::exec::contract::exec_event_schema,
        },
        Published {
            name: "session-event",
            version: keel::protocol::LOG_FORMAT_VERSION,
            generate: keel::protocol::contract::session_event_schema,
        },
    ]
}

fn schemas_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schemas")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_SCHEMAS").is_some_and(|v| v == "1")
}

fn rendered(schema: &Value) -> String {
    serde_json::to_string_pretty(schema).unwrap() + "\n"
}

fn committed(name: &str) -> Value {
    let path = schemas_dir().join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_schema_files_are_what_the_types_generate() {
    for schema in published() {
        let path = schemas_dir().join(format!("{}.schema.json", schema.name));
        let fresh = rendered(&(schema.generate)());
        if updating() {
            std::fs::write(&path, &fresh).unwrap();
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            on_disk == fresh,
            "{} is not what the types generate: run `UPDATE_SCHEMAS=1 cargo test --test all \
             contract` and review the diff (a removed or renamed field needs its schema_version \
             raised and a CHANGELOG entry)",
            path.display()
        );
    }
}

// ---- the field lock ----

/// Every field a schema names, as `type.path` (`result.usage.input_tokens`,
/// `model_response.response.items[].text`), and every value a field is
/// limited to (`result.status=completed`): what a removal is judged on.
fn field_paths(schema: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut common = BTreeMap::new();
    collect_properties(schema, schema, &mut common, 0);
    let variants = alternatives(schema, schema);
    for variant in &variants {
        let mut fields = common.clone();
        collect_properties(schema, variant, &mut fields, 0);
        let kind = fields
            .get("type")
            .and_then(|t| t.get("const").or_else(|| t.get("enum").and_then(|e| e.get(0))))
            .and_then(Value::as_str)
            .unwrap_or("*")
            .to_owned();
        for (name, sub) in &fields {
            if name != "type" {
                walk(schema, sub, &format!("{kind}.{name}"), &mut out, 0);
            }
        }
    }
    out
}

/// The shapes a schema is one of (through `$ref`, `oneOf`, `anyOf`).
fn alternatives<'a>(root: &'a Value, schema: &'a Value) -> Vec<&'a Value> {
    let schema = resolve(root, schema);
    match schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array) {
        Some(choices) => choices.iter().flat_map(|c| alternatives(root, c)).collect(),
        None => vec![schema],
    }
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix('#')) {
        Some(pointer) => root.pointer(pointer).unwrap_or(schema),
        None => schema,
    }
}

/// The properties of `schema` and of what it is all of.
fn collect_properties<'a>(
    root: &'a Value,
    schema: &'a Value,
    out: &mut BTreeMap<String, &'a Value>,
    depth: usize,
) {
    let schema = resolve(root, schema);
    if depth > 8 {
        return;
    }
    for (name, sub) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        out.insert(name.clone(), sub);
    }
    for sub in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        collect_properties(root, sub, out, depth + 1);
    }
}

fn walk(root: &Value, schema: &Value, path: &str, out: &mut BTreeSet<String>, depth: usize) {
    out.insert(path.to_owned());
    if depth > 12 {
        return;
    }
    let schema = resolve(root, schema);
    if let Some(items) = schema.get("items") {
        walk(root, items, &format!("{path}[]"), out, depth + 1);
    }
    for shape in alternatives(root, schema) {
        // A value a field may take is part of the contract too.
        let values = shape.get("enum").and_then(Value::as_array).into_iter().flatten();
        for value in values.chain(shape.get("const")).filter_map(Value::as_str) {
            out.insert(format!("{path}={value}"));
        }
        let mut fields = BTreeMap::new();
        collect_properties(root, shape, &mut fields, 0);
        for (name, sub) in fields {
            walk(root, sub, &format!("{path}.{name}"), out, depth + 1);
        }
        if let Some(items) = shape.get("items").filter(|_| !std::ptr::eq(shape, schema)) {
            walk(root, items, &format!("{path}[]"), out, depth + 1);
        }
    }
}

/// `schemas/fields.lock`: per schema, the version and every field it had.
#[derive(Debug, Default, Clone, PartialEq)]
struct Lock {
    sections: BTreeMap<String, (u32, BTreeSet<String>)>,
}

impl Lock {
    fn parse(text: &str) -> Self {
        let mut lock = Lock::default();
        let mut current = None;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')) {
            if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                let (name, version) = header.split_once(" version ").unwrap();
                lock.sections.insert(name.to_owned(), (version.parse().unwrap(), BTreeSet::new()));
                current = Some(name.to_owned());
            } else if let Some(name) = &current {
                lock.sections.get_mut(name).unwrap().1.insert(line.to_owned());
            }
        }
        lock
    }

    fn render(&self) -> String {
        let mut text = String::from(
            "# Every field of the published contract (schemas/*.schema.json), per schema and\n\
             # version. A field may be added (UPDATE_SCHEMAS=1 records it); one that is\n\
             # removed or renamed fails tests/suite/contract.rs until the schema's version\n\
             # rises (exec: exec::SCHEMA_VERSION, log: protocol::LOG_FORMAT_VERSION).\n",
        );
        for (name, (version, fields)) in &self.sections {
            text.push_str(&format!("\n[{name} version {version}]\n"));
            fields.iter().for_each(|field| text.push_str(&format!("{field}\n")));
        }
        text
    }
}

/// Judges `fresh` (a schema's version and fields now) against its locked
/// section: the section to write, or why the change breaks the contract.
fn judge(
    name: &str,
    locked: Option<&(u32, BTreeSet<String>)>,
    fresh: (u32, BTreeSet<String>),
) -> Result<(u32, BTreeSet<String>), String> {
    let Some((old_version, old_fields)) = locked else { return Ok(fresh) };
    let (version, fields) = fresh;
    if version < *old_version {
        return Err(format!("{name}: version {version} is below the locked {old_version}"));
    }
    if version > *old_version {
        return Ok((version, fields));
    }
    let gone: Vec<&String> = old_fields.difference(&fields).collect();
    if !gone.is_empty() {
        return Err(format!(
            "{name}: fields removed or renamed without raising its version {version}: {gone:?}"
        ));
    }
    Ok((version, fields))
}

fn lock_path() -> PathBuf {
    schemas_dir().join("fields.lock")
}

#[test]
fn no_field_of_the_contract_goes_away_while_its_version_stands() {
    let text = std::fs::read_to_string(lock_path()).unwrap_or_default();
    let locked = Lock::parse(&text);
    let mut next = Lock::default();
    let mut errors = Vec::new();
    for schema in published() {
        let fresh = (schema.version, field_paths(&(schema.generate)()));
        match judge(schema.name, locked.sections.get(schema.name), fresh) {
            Ok(section) => {
                next.sections.insert(schema.name.to_owned(), section);
            }
            Err(error) => errors.push(error),
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    if updating() {
        std::fs::write(lock_path(), next.render()).unwrap();
    } else {
        assert!(
            next == locked,
            "schemas/fields.lock does not hold the fields the types have now: run \
             `UPDATE_SCHEMAS=1 cargo test --test all contract`"
        );
    }
}

#[test]
fn adding_a_field_passes_removing_one_needs_a_version_bump() {
    let fields = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<BTreeSet<_>>();
    let locked = (1, fields(&["result.status", "result.usage"]));
    let added = (1, fields(&["result.status", "result.usage", "result.new"]));
    assert_eq!(judge("x", Some(&locked), added.clone()), Ok(added));
    let renamed = (1, fields(&["result.state", "result.usage"]));
    let error = judge("x", Some(&locked), renamed).unwrap_err();
    assert!(error.contains("result.status"), "{error}");
    let bumped = (2, fields(&["result.state", "result.usage"]));
    assert_eq!(judge("x", Some(&locked), bumped.clone()), Ok(bumped));
    assert!(judge("x", Some(&locked), (0, fields(&[]))).is_err());
}

#[test]
fn the_changelog_has_an_entry_for_each_schemas_version() {
    let changelog = std::fs::read_to_string(schemas_dir().join("CHANGELOG.md")).unwrap();
    for schema in published() {
        let heading = format!("## {} {}", schema.name, schema.version);
        assert!(changelog.contains(&heading), "schemas/CHANGELOG.md has no `{heading}`");
    }
}

#[test]
fn the_field_lock_sees_nested_fields_of_every_line_type() {
    let exec = field_paths(&committed("exec-event"));
    for field in [
        "result.status",
        "result.usage.input_tokens",
        "item_completed.item.output",
        "result.tasks[].status",
        "session_started.schema_version",
        "result.status=stuck",
        "item_completed.item.type=tool_call",
    ] {
        assert!(exec.contains(field), "{field} not in {exec:?}");
    }
    let log = field_paths(&committed("session-event"));
    for field in [
        "model_response.response.items[].text",
        "turn_completed.usage.input_tokens",
        "session_started.seq",
    ] {
        assert!(log.contains(field), "{field} not in {log:?}");
    }
}

// ---- validation, for support.rs ----

fn schema_of(name: &'static str) -> &'static Value {
    static EXEC: OnceLock<Value> = OnceLock::new();
    static LOG: OnceLock<Value> = OnceLock::new();
    let cell = if name == "exec-event" { &EXEC } else { &LOG };
    cell.get_or_init(|| committed(name))
}

/// Panics unless `line` follows the committed schema `name`.
fn validate(name: &'static str, line: &Value) {
    let violations = keel::protocol::json_check::check(schema_of(name), line);
    assert!(
        violations.is_empty(),
        "a line breaks schemas/{name}.schema.json:\n{line}\n{}",
        keel::protocol::json_check::describe(&violations)
    );
}

/// Panics unless `line` is a valid `keel exec --json` line.
pub fn validate_exec_line(line: &Value) {
    validate("exec-event", line);
}

/// Panics unless `line` is a valid session-log line.
pub fn validate_log_line(line: &Value) {
    validate("session-event", line);
}

#[test]
fn a_line_with_a_field_the_contract_does_not_name_fails_validation() {
    let schema = committed("exec-event");
    let good = serde_json::json!({"type": "turn_started", "turn": 1, "schema_version": 1});
    assert!(keel::protocol::json_check::check(&schema, &good).is_empty());
    let extra = serde_json::json!({"type": "turn_started", "turn": 1, "schema_version": 1,
        "surprise": true});
    assert!(!keel::protocol::json_check::check(&schema, &extra).is_empty());
    let missing = serde_json::json!({"type": "turn_started", "schema_version": 1});
    assert!(!keel::protocol::json_check::check(&schema, &missing).is_empty());
}
