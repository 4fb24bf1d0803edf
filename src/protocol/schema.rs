//! Tool argument schemas generated from the argument types: every tool the
//! model is offered, built-in or answered by the loop itself, describes its
//! arguments with the schema of the type its arguments are parsed into, so
//! the two cannot drift apart.
//!
//! Invariants: schemas are plain object schemas (`type`, `properties`,
//! `required` when a field is; no `$schema`, `title` or `$ref`) that both
//! OpenAI and Anthropic accept; optional fields are never required and are
//! typed without `null`, since leaving them out is how the model omits
//! them (the strict form for `[provider] strict_tools`, nullable and all
//! required, is derived at encoding time: `strict_schema`). Nothing a
//! schema says by default is spelled out (an empty
//! `required`, a flag's `default: false`): every request carries the bytes.
//! A field's doc comment is its description on the wire, so a field whose
//! name says all there is (`path` of a file tool, `command`) has none.

use schemars::JsonSchema;
use serde_json::{Map, Value};

use super::ToolSpec;

/// The argument schema of `T`, ready for a [`ToolSpec`].
pub fn schema_of<T: JsonSchema>() -> Value {
    // Nested types inlined: some providers refuse `$ref`/`$defs`.
    let generator = schemars::generate::SchemaSettings::default()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        // The tool's description already says what the arguments are for.
        for key in ["$schema", "title", "description"] {
            object.remove(key);
        }
        object.entry("properties").or_insert_with(|| Value::Object(Map::new()));
        // JSON Schema's default: nothing required (Codex sends tools without it too).
        if object.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
            object.remove("required");
        }
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            properties.values_mut().for_each(simplify_property);
        }
    }
    schema
}

impl ToolSpec {
    /// The spec of a tool whose arguments parse into `Args`.
    pub fn typed<Args: JsonSchema>(name: &str, description: &str) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            parameters: schema_of::<Args>(),
        }
    }
}

/// `"type": ["integer", "null"]` → `"type": "integer"`: some providers
/// reject type arrays, and an optional field is omitted rather than null.
/// Also drops schemars' integer formats (`uint64`), which are not standard
/// JSON Schema formats and which some providers refuse, and the
/// `minimum: 0` it derives from an unsigned type (a count is not negative;
/// a bound set on purpose, `range(min = 1)`, stays).
/// Also drops an array's item-type description (a type's doc comment,
/// inlined): the field's own description already says what its items are,
/// and every request carries the bytes; and a flag's `default: false`
/// (`#[serde(default)]`): a flag left out is off.
fn simplify_property(property: &mut Value) {
    if let Some(object) = property.as_object_mut() {
        object.remove("format");
        if object.get("minimum") == Some(&Value::from(0)) {
            object.shift_remove("minimum");
        }
        if object.get("type") == Some(&Value::from("boolean"))
            && object.get("default") == Some(&Value::Bool(false))
        {
            object.shift_remove("default");
        }
        if let Some(Value::Object(items)) = object.get_mut("items") {
            items.shift_remove("description");
        }
    }
    let Some(Value::Array(types)) = property.get_mut("type") else { return };
    types.retain(|kind| kind != "null");
    if let [single] = types.as_slice() {
        let single = single.clone();
        property["type"] = single;
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Example {
        /// A required path.
        path: String,
        /// An optional count.
        count: Option<u32>,
    }

    #[test]
    fn schema_is_a_plain_object_schema() {
        let schema = schema_of::<Example>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], serde_json::json!(["path"]));
        assert_eq!(schema["properties"]["count"]["type"], "integer");
        assert_eq!(schema["properties"]["path"]["description"], "A required path.");
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct AllOptional {
        /// A flag.
        #[serde(default)]
        flag: bool,
        /// A depth.
        depth: Option<usize>,
        /// At least one.
        #[schemars(range(min = 1))]
        lines: Option<u32>,
    }

    #[test]
    fn what_a_schema_says_by_default_is_left_out() {
        let schema = schema_of::<AllOptional>();
        assert!(schema.get("required").is_none(), "{schema}");
        assert_eq!(
            schema["properties"]["flag"],
            serde_json::json!({"type": "boolean", "description": "A flag."})
        );
        let depth = serde_json::json!({"type": "integer", "description": "A depth."});
        assert_eq!(schema["properties"]["depth"], depth, "no minimum 0 from usize");
        assert_eq!(schema["properties"]["lines"]["minimum"], 1, "a bound on purpose stays");
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        items: Vec<Example>,
    }

    #[test]
    fn nested_types_are_inlined_without_refs() {
        let schema = schema_of::<Nested>();
        assert!(!schema.to_string().contains("$ref"), "{schema}");
        assert!(schema.get("$defs").is_none(), "{schema}");
        assert_eq!(schema["properties"]["items"]["items"]["required"], serde_json::json!(["path"]));
    }
}
