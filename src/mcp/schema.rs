//! A server's JSON schema made acceptable to every provider keel speaks.
//!
//! The providers' documented limits on function parameters: the schema
//! must be an object schema (`"type": "object"`, Anthropic's
//! `input_schema` and OpenAI's `parameters` alike); Anthropic rejects
//! `oneOf`/`anyOf`/`allOf` at the top level; OpenAI rejects boolean
//! sub-schemas (`"items": true`; `additionalProperties: false` is fine) and
//! a `required` name that is not a property. Meta keywords (`$schema`, `$id`, `$comment`) only cost tokens.
//! One sanitised schema satisfies all three wire protocols, so the request
//! builders need no MCP knowledge and the tool list is the same whatever
//! the provider (a prefix that never moves).
//!
//! Invariants: the result is always an object schema with a `properties`
//! object; nested schemas keep their meaning where the providers allow it
//! (`$ref`/`$defs`, `enum`, `format`, descriptions), and only what a
//! provider would reject is changed. Descriptions longer than
//! [`MAX_DESCRIPTION`] are cut, so one server cannot flood the prompt.

use serde_json::{Map, Value, json};

/// Characters of a tool description (or a property's) kept.
pub const MAX_DESCRIPTION: usize = 2048;

const META_KEYS: [&str; 3] = ["$schema", "$id", "$comment"];
const COMBINATORS: [&str; 3] = ["oneOf", "anyOf", "allOf"];

/// The sanitised form of a tool's `inputSchema`.
pub fn sanitize_input_schema(schema: &Map<String, Value>) -> Value {
    let mut top = schema.clone();
    for key in META_KEYS {
        top.remove(key);
    }
    if top.get("type").and_then(Value::as_str) != Some("object") {
        // Not an object schema (a top-level combinator, a bare type):
        // keep what properties there are and let the server check the rest.
        top.insert("type".to_owned(), json!("object"));
    }
    for key in COMBINATORS {
        top.remove(key);
    }
    if !top.get("properties").is_some_and(Value::is_object) {
        top.insert("properties".to_owned(), json!({}));
    }
    let property_names: Vec<String> = top
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default();
    match top.get("required").and_then(Value::as_array) {
        Some(required) => {
            let kept: Vec<Value> = required
                .iter()
                .filter(|name| {
                    name.as_str().is_some_and(|name| property_names.iter().any(|p| p == name))
                })
                .cloned()
                .collect();
            top.insert("required".to_owned(), Value::Array(kept));
        }
        None => {
            top.remove("required");
        }
    }
    let mut value = Value::Object(top);
    clean_nested(&mut value, true);
    value
}

/// A description cut to [`MAX_DESCRIPTION`] characters.
pub fn clip_description(text: &str) -> String {
    if text.chars().count() <= MAX_DESCRIPTION {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX_DESCRIPTION).collect();
    format!("{cut}…")
}

/// Walks every sub-schema: boolean schemas become `{}` (true) or
/// `{"not": {}}` (false), meta keys go, long descriptions are cut.
fn clean_nested(value: &mut Value, top: bool) {
    let Value::Object(object) = value else { return };
    if !top {
        for key in META_KEYS {
            object.remove(key);
        }
    }
    if let Some(Value::String(text)) = object.get_mut("description") {
        *text = clip_description(text);
    }
    for (key, child) in object.iter_mut() {
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                if let Value::Object(map) = child {
                    for schema in map.values_mut() {
                        schema_position(schema);
                    }
                }
            }
            // `additionalProperties: false` is how a closed object is
            // said, and every provider reads it; only a sub-schema is walked.
            "additionalProperties" if child.is_boolean() => {}
            "items"
            | "additionalProperties"
            | "not"
            | "contains"
            | "propertyNames"
            | "additionalItems"
            | "if"
            | "then"
            | "else" => schema_position(child),
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(list) = child {
                    list.iter_mut().for_each(schema_position);
                }
            }
            _ => {}
        }
    }
}

/// A value in a position that holds a schema.
fn schema_position(value: &mut Value) {
    match value {
        Value::Bool(true) => *value = json!({}),
        Value::Bool(false) => *value = json!({ "not": {} }),
        Value::Object(_) => clean_nested(value, false),
        Value::Null | Value::Number(_) | Value::String(_) | Value::Array(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sanitize(value: Value) -> Value {
        sanitize_input_schema(value.as_object().expect("an object"))
    }

    #[test]
    fn an_ordinary_schema_passes_unchanged_but_for_meta_keys() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {"message": {"type": "string", "description": "Message to echo"}},
            "required": ["message"],
            "additionalProperties": false
        });
        let out = sanitize(schema.clone());
        let mut expected = schema;
        expected.as_object_mut().unwrap().remove("$schema");
        assert_eq!(out, expected);
    }

    #[test]
    fn what_a_provider_rejects_is_made_acceptable() {
        let out = sanitize(json!({
            "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
            "properties": {
                "a": {"type": "array", "items": true, "$comment": "x"},
                "b": {"type": "object", "additionalProperties": false,
                      "properties": {"c": {"description": "d".repeat(5000)}}}
            },
            "required": ["a", "ghost"]
        }));
        assert_eq!(out["type"], "object");
        assert!(out.get("anyOf").is_none());
        assert_eq!(out["required"], json!(["a"]));
        assert_eq!(out["properties"]["a"]["items"], json!({}));
        assert!(out["properties"]["a"].get("$comment").is_none());
        assert_eq!(out["properties"]["b"]["additionalProperties"], json!(false));
        let description = out["properties"]["b"]["properties"]["c"]["description"].as_str();
        assert_eq!(description.unwrap().chars().count(), MAX_DESCRIPTION + 1);
    }

    #[test]
    fn a_schema_without_properties_gets_an_empty_object() {
        let out = sanitize(json!({"type": "string"}));
        assert_eq!(out, json!({"type": "object", "properties": {}}));
    }
}
