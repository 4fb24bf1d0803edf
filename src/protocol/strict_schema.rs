//! Strict tool schemas: a tool's argument schema rewritten into the subset a
//! protocol's strict tool calling accepts (`[provider] strict_tools = true`),
//! done where a request is encoded (`llm/`), so the schemas keel builds
//! (`schema_of`) and the non-strict requests stay as they are.
//!
//! Both subsets close every object (`additionalProperties: false`). OpenAI's
//! (Responses and Chat Completions) also wants every property in `required`:
//! a property that was optional becomes nullable instead (`"type":
//! ["integer", "null"]`, `null` added to an `enum`, or, for a schema with no
//! `type`, an `anyOf` with `{"type": "null"}`), and the model sends `null`
//! where it would have left the field out. Anthropic's takes optional
//! properties as they are, and its documented limits count both optional
//! and union-typed parameters across a request's strict tools (24 and 16):
//! making each optional field a required `anyOf` with null would only trade
//! one limit for the other, so on Anthropic `required` is left alone.
//! Keywords each subset refuses are dropped: on Anthropic every numeric,
//! string-length, pattern and format bound and `minItems` past 1 (the
//! descriptions state the limits, and the tools check them anyway); on
//! OpenAI string lengths and `uniqueItems`, while its numeric bounds,
//! `pattern`, `format` and item counts stay. Annotations (`default`,
//! `examples`, `title`) go on both.
//!
//! Invariants: pure. A schema that cannot be made strict without changing
//! what it accepts (a free-form object such as `call_tool`'s `arguments`,
//! `additionalProperties` other than `false`, `$ref`, `oneOf`, `allOf`,
//! `not`, conditionals, pattern properties, a property with no type) is
//! not transformed: [`strict_parameters`] answers `None` and the encoder
//! sends that tool as it is, not strict. MCP tools (`mcp__…`) always go
//! that way: their schemas are whatever a server wrote, and the `null`s
//! strict would make the model send for every optional field would reach a
//! server that never said it takes them. The parsing side reads a
//! top-level `null` as "absent" ([`nulls_as_absent`]; a call enters the loop
//! without them, [`without_nulls`]), which is enough for
//! keel's own tools: no nested object of theirs has an optional field
//! (`tools::registry`'s tests hold that).

use serde_json::{Map, Value};

use super::ToolSpec;

/// How many of a request's tools go strict on Anthropic (it caps them);
/// the others carry no `strict` field.
pub const MAX_ANTHROPIC_STRICT_TOOLS: usize = 20;

/// Whose strict subset a schema is rewritten into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrictDialect {
    /// OpenAI's Structured Outputs subset (Responses and Chat Completions).
    OpenAi,
    /// Anthropic's strict tool use subset (Messages).
    Anthropic,
}

/// Keywords that change a schema's structure: a schema holding one is not
/// made strict (dropping one would change what the schema accepts).
const STRUCTURAL_REFUSED: &[&str] = &[
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "propertyNames",
    "prefixItems",
    "contains",
    "unevaluatedProperties",
    "unevaluatedItems",
];

/// What every strict schema may keep.
const KEPT: &[&str] =
    &["type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf"];

/// Bounds OpenAI's strict subset keeps besides [`KEPT`] and `description`.
const OPENAI_BOUNDS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "format",
    "minItems",
    "maxItems",
];

/// The strict form of `spec`'s schema, or `None` when the tool goes as it
/// is (`strict: false`): an MCP tool, or a schema with no strict form.
pub fn strict_parameters(spec: &ToolSpec, dialect: StrictDialect) -> Option<Value> {
    if spec.name.starts_with(super::MCP_PREFIX) {
        return None;
    }
    strict_schema(&spec.parameters, dialect)
}

/// `schema` (an object schema) in `dialect`'s strict subset, or `None` when
/// it has none.
pub fn strict_schema(schema: &Value, dialect: StrictDialect) -> Option<Value> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    rewrite(schema, dialect)
}

fn rewrite(schema: &Value, dialect: StrictDialect) -> Option<Value> {
    let object = schema.as_object()?;
    if STRUCTURAL_REFUSED.iter().any(|key| object.contains_key(*key)) {
        return None;
    }
    let is_object = type_names(object).contains(&"object");
    if !is_object && !["type", "enum", "const", "anyOf"].iter().any(|key| object.contains_key(*key))
    {
        // No type at all: anything goes, which no strict subset can say.
        return None;
    }
    let mut out = Map::new();
    for (key, value) in object {
        let keep = KEPT.contains(&key.as_str())
            || key == "description"
            || (dialect == StrictDialect::OpenAi && OPENAI_BOUNDS.contains(&key.as_str()))
            || (dialect == StrictDialect::Anthropic
                && key == "minItems"
                && value.as_u64().is_some_and(|count| count <= 1));
        if keep {
            out.insert(key.clone(), value.clone());
        }
    }
    if let Some(items) = object.get("items") {
        out.insert("items".to_owned(), rewrite(items, dialect)?);
    }
    if let Some(Value::Array(branches)) = object.get("anyOf") {
        let branches: Option<Vec<Value>> =
            branches.iter().map(|branch| rewrite(branch, dialect)).collect();
        out.insert("anyOf".to_owned(), Value::Array(branches?));
    }
    if is_object {
        strict_object(object, &mut out, dialect)?;
    }
    Some(Value::Object(out))
}

/// No other property allowed; on OpenAI every property required, the
/// optional ones nullable.
fn strict_object(
    object: &Map<String, Value>,
    out: &mut Map<String, Value>,
    dialect: StrictDialect,
) -> Option<()> {
    match object.get("additionalProperties") {
        None | Some(Value::Bool(false)) => {}
        // A map of free keys (or a schema for them): no strict form.
        Some(_) => return None,
    }
    // An object with no properties is a free-form one (`{"type": "object"}`).
    let Some(Value::Object(properties)) = object.get("properties") else { return None };
    if dialect == StrictDialect::Anthropic {
        // Optional stays optional (see the module doc); only closed.
        let mut strict_properties = Map::new();
        for (name, property) in properties {
            strict_properties.insert(name.clone(), rewrite(property, dialect)?);
        }
        out.insert("properties".to_owned(), Value::Object(strict_properties));
        out.insert("additionalProperties".to_owned(), Value::Bool(false));
        return Some(());
    }
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut strict_properties = Map::new();
    for (name, property) in properties {
        let mut property = rewrite(property, dialect)?;
        if !required.contains(&name.as_str()) {
            property = nullable(property);
        }
        strict_properties.insert(name.clone(), property);
    }
    let names: Vec<Value> = properties.keys().map(|name| Value::from(name.as_str())).collect();
    out.insert("properties".to_owned(), Value::Object(strict_properties));
    out.insert("required".to_owned(), Value::Array(names));
    out.insert("additionalProperties".to_owned(), Value::Bool(false));
    Some(())
}

/// `property` with `null` admitted: in its `type` (and `enum`) when it has
/// one, as OpenAI's documentation shows; else as one more `anyOf` branch.
fn nullable(mut property: Value) -> Value {
    let Some(object) = property.as_object_mut() else { return property };
    let null = Value::from("null");
    let enum_alone = object.contains_key("enum") && !object.contains_key("anyOf");
    if let Some(Value::Array(values)) = object.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match object.get_mut("type") {
        Some(Value::String(kind)) if kind != "null" => {
            let kind = Value::from(kind.as_str());
            object.insert("type".to_owned(), Value::Array(vec![kind, null]));
        }
        Some(Value::Array(kinds)) if !kinds.contains(&null) => kinds.push(null),
        Some(_) => {}
        // An `enum` alone took its null above.
        None if enum_alone => {}
        // An `anyOf` takes a null branch; a `const` becomes the value or null.
        None => return or_null_branch(object),
    }
    property
}

/// An `anyOf` with a null branch added, else [`or_null`].
fn or_null_branch(object: &mut Map<String, Value>) -> Value {
    let null = serde_json::json!({"type": "null"});
    if let Some(Value::Array(branches)) = object.get_mut("anyOf") {
        if !branches.contains(&null) {
            branches.push(null);
        }
        return Value::Object(std::mem::take(object));
    }
    or_null(object)
}

/// `{"description": …, "anyOf": [the schema, {"type": "null"}]}`.
fn or_null(object: &mut Map<String, Value>) -> Value {
    let null = serde_json::json!({"type": "null"});
    if let Some(Value::Array(branches)) = object.get("anyOf")
        && branches.contains(&null)
    {
        return Value::Object(std::mem::take(object));
    }
    let mut wrapped = Map::new();
    if let Some(description) = object.remove("description") {
        wrapped.insert("description".to_owned(), description);
    }
    let inner = Value::Object(std::mem::take(object));
    wrapped.insert("anyOf".to_owned(), Value::Array(vec![inner, null]));
    Value::Object(wrapped)
}

fn type_names(object: &Map<String, Value>) -> Vec<&str> {
    match object.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// Drops the top-level fields of a call's arguments that are `null`: under
/// strict tool calling the model sends `null` for every optional field it
/// means to leave out, and a `null` never means anything else to keel's
/// tools (a `#[serde(default)]` flag would otherwise refuse it).
pub fn nulls_as_absent(arguments: &mut Value) {
    if let Value::Object(fields) = arguments {
        fields.retain(|_, value| !value.is_null());
    }
}

/// A call's raw `arguments` with their top-level `null` fields dropped
/// ([`nulls_as_absent`]), or `None` when there is none to drop (or they are
/// not a JSON object): the model's text is rewritten only when it changes.
/// Where a call enters the loop (`agent::LoopState::real_call`), so the
/// policy, the approval text, the hooks' `tool_input` and the log all see
/// the call as it runs, without the strict form's `null` noise.
pub fn without_nulls(arguments: &str) -> Option<String> {
    let mut value: Value = serde_json::from_str(arguments).ok()?;
    let had = value.as_object()?.len();
    nulls_as_absent(&mut value);
    (value.as_object()?.len() != had).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn grep_like() -> Value {
        json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "The regex."},
                "mode": {"type": "string", "enum": ["content", "files"], "description": "Mode."},
                "context": {"type": "integer", "maximum": 10, "description": "At most 10."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
                "case_insensitive": {"type": "boolean"},
                "todos": {"type": "array", "minItems": 2, "items": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "maxLength": 9}},
                    "required": ["text"],
                }},
            },
            "required": ["pattern"],
        })
    }

    #[test]
    fn every_property_is_required_and_the_optional_ones_take_null() {
        let strict = strict_schema(&grep_like(), StrictDialect::OpenAi).unwrap();
        assert_eq!(strict["additionalProperties"], false);
        assert_eq!(
            strict["required"],
            json!(["pattern", "mode", "context", "limit", "case_insensitive", "todos"])
        );
        assert_eq!(strict["properties"]["pattern"]["type"], "string", "required: not nullable");
        assert_eq!(strict["properties"]["context"]["type"], json!(["integer", "null"]));
        assert_eq!(strict["properties"]["case_insensitive"]["type"], json!(["boolean", "null"]));
        assert_eq!(strict["properties"]["mode"]["enum"], json!(["content", "files", null]));
        assert_eq!(strict["properties"]["mode"]["description"], "Mode.");
        let task = &strict["properties"]["todos"]["items"];
        assert_eq!(task["additionalProperties"], false, "nested objects too: {strict}");
        assert_eq!(task["required"], json!(["text"]));
    }

    #[test]
    fn each_dialect_keeps_the_bounds_its_subset_takes() {
        let openai = strict_schema(&grep_like(), StrictDialect::OpenAi).unwrap();
        assert_eq!(openai["properties"]["context"]["maximum"], 10);
        assert_eq!(openai["properties"]["limit"]["minimum"], 1);
        assert_eq!(openai["properties"]["todos"]["minItems"], 2);
        assert!(
            openai["properties"]["todos"]["items"]["properties"]["text"].get("maxLength").is_none()
        );
        let anthropic = strict_schema(&grep_like(), StrictDialect::Anthropic).unwrap();
        let text = anthropic.to_string();
        for refused in ["maximum", "minimum", "minItems", "maxLength"] {
            assert!(!text.contains(refused), "{refused} in {text}");
        }
        assert_eq!(
            anthropic["properties"]["context"],
            json!({"type": "integer", "description": "At most 10."}),
            "optional stays optional on Anthropic"
        );
        assert_eq!(anthropic["required"], json!(["pattern"]));
        assert_eq!(anthropic["additionalProperties"], false);
        assert_eq!(anthropic["properties"]["todos"]["items"]["additionalProperties"], false);
    }

    #[test]
    fn a_schema_with_no_strict_form_is_left_alone() {
        let free_form = json!({"type": "object", "properties": {
            "tool": {"type": "string"},
            "arguments": {"type": "object", "description": "Its arguments."},
        }, "required": ["tool"]});
        assert_eq!(strict_schema(&free_form, StrictDialect::OpenAi), None);
        let untyped = json!({"type": "object", "properties": {"value": {"description": "any"}}});
        assert_eq!(strict_schema(&untyped, StrictDialect::Anthropic), None);
        let open_map = json!({"type": "object", "properties": {}, "additionalProperties": true});
        assert_eq!(strict_schema(&open_map, StrictDialect::OpenAi), None);
        let referenced = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}});
        assert_eq!(strict_schema(&referenced, StrictDialect::OpenAi), None);
        let one_of =
            json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}});
        assert_eq!(strict_schema(&one_of, StrictDialect::OpenAi), None);
    }

    #[test]
    fn an_mcp_tool_goes_as_it_is() {
        let spec = |name: &str| ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        };
        assert!(strict_parameters(&spec("grep"), StrictDialect::OpenAi).is_some());
        assert_eq!(strict_parameters(&spec("mcp__docs__search"), StrictDialect::OpenAi), None);
    }

    #[test]
    fn untyped_optionals_become_an_any_of_with_null() {
        let schema = json!({"type": "object", "properties": {
            "choice": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "fixed": {"const": "x", "description": "Only x."},
        }});
        let strict = strict_schema(&schema, StrictDialect::OpenAi).unwrap();
        assert_eq!(strict["properties"]["choice"]["anyOf"][2], json!({"type": "null"}));
        assert_eq!(
            strict["properties"]["fixed"],
            json!({"description": "Only x.", "anyOf": [{"const": "x"}, {"type": "null"}]})
        );
    }

    #[test]
    fn a_null_argument_reads_as_absent() {
        let mut arguments = json!({"pattern": "x", "context": null, "mode": null});
        nulls_as_absent(&mut arguments);
        assert_eq!(arguments, json!({"pattern": "x"}));
    }
}
