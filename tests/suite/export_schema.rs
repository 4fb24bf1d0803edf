//! `keel export --format json` and its documented schema
//! (`docs/export.schema.json`): the file is what `keel::export::
//! json_schema()` generates (regenerate with `KEEL_BLESS=1 cargo test
//! --test all export_schema`), and a real session's export validates
//! against it (a small validator of the keywords schemars writes:
//! `$ref`, `allOf`, `type`, `required`, `properties`, `items`, `oneOf`/`anyOf`,
//! `const`, `enum`).

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, scripted_model};
use super::wire::{Step, Wire, call};

fn schema_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/export.schema.json")
}

#[test]
fn the_schema_file_is_the_generated_one() {
    let generated = serde_json::to_string_pretty(&keel::export::json_schema()).unwrap() + "\n";
    if std::env::var_os("KEEL_BLESS").is_some() {
        std::fs::write(schema_path(), &generated).unwrap();
    }
    let file = std::fs::read_to_string(schema_path()).unwrap_or_default();
    assert!(
        file == generated,
        "docs/export.schema.json is stale: KEEL_BLESS=1 cargo test --test all export_schema"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_sessions_export_validates_against_the_schema() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    let steps = [
        Step::Calls {
            text: Some("Reading.".into()),
            calls: vec![call("read_file", json!({"path": "notes.txt"}))],
        },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}),
            )],
        },
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let out = sandbox.run(&Model::chat(&server), &["exec", "--json", "--full-auto", "edit it"]);
    assert!(
        out.status.code().is_some_and(|code| code == 0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = json_lines(&out.stdout).last().unwrap()["session_id"].as_str().unwrap().to_owned();
    let exported = sandbox.keel().args(["export", &id, "--format", "json"]).output().unwrap();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let value: Value = serde_json::from_slice(&exported.stdout).unwrap();
    let schema = keel::export::json_schema();
    let errors = validate(&schema, &schema, &value, "$");
    assert!(errors.is_empty(), "{errors:#?}\n{value:#}");
    let entries = &value["turns"][0]["entries"];
    // Notes (the workflow's phase moves) come between; the rest in order.
    let shown: Vec<&Value> =
        entries.as_array().unwrap().iter().filter(|e| e["kind"] != "note").collect();
    let kinds: Vec<&str> = shown.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["answer", "tool_call", "tool_call", "answer"], "{value:#}");
    let log = std::fs::read_to_string(sandbox.only_log_path()).unwrap();
    assert_eq!(shown[2]["files_changed"], json!(["notes.txt"]), "{log}");
    assert!(shown[2]["result"]["output"].as_str().unwrap().contains("+beta"));
    // The validator is not a yes-machine.
    let mut broken = value.clone();
    broken["turns"][0]["entries"][1].as_object_mut().unwrap().remove("name");
    broken["usage"]["input_tokens"] = json!("many");
    assert_eq!(validate(&schema, &schema, &broken, "$").len(), 2, "{broken:#}");
}

/// Where `value` breaks `schema` (resolving `$ref` in `root`).
fn validate(root: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.trim_start_matches("#/$defs/");
        errors.extend(validate(root, &root["$defs"][name], value, at));
    }
    for each in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        errors.extend(validate(root, each, value, at));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array) {
            let passing =
                options.iter().filter(|o| validate(root, o, value, at).is_empty()).count();
            let ok = if key == "oneOf" { passing == 1 } else { passing >= 1 };
            if !ok {
                errors.push(format!("{at}: {passing} of {key} match"));
                return errors;
            }
        }
    }
    if let Some(want) = schema.get("const") {
        if want != value {
            errors.push(format!("{at}: not {want}"));
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        if !options.contains(value) {
            errors.push(format!("{at}: not one of {options:?}"));
        }
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        if !types.iter().any(|kind| is_type(kind, value)) {
            errors.push(format!("{at}: not {types:?}"));
            return errors;
        }
    }
    if let (Some(object), Some(properties)) = (value.as_object(), schema.get("properties")) {
        for name in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
            let name = name.as_str().unwrap_or_default();
            if !object.contains_key(name) {
                errors.push(format!("{at}.{name}: missing"));
            }
        }
        for (name, inner) in object {
            if let Some(property) = properties.get(name) {
                errors.extend(validate(root, property, inner, &format!("{at}.{name}")));
            }
        }
    }
    if let (Some(items), Some(each)) = (value.as_array(), schema.get("items")) {
        for (n, item) in items.iter().enumerate() {
            errors.extend(validate(root, each, item, &format!("{at}[{n}]")));
        }
    }
    errors
}

fn is_type(kind: &str, value: &Value) -> bool {
    match kind {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "integer" => value.is_u64() || value.is_i64(),
        "number" => value.is_number(),
        _ => true,
    }
}
