use serde_json::json;

use super::*;

fn errors(schema: Value, value: Value) -> Vec<String> {
    check(&schema, &value).iter().map(ToString::to_string).collect()
}

#[test]
fn an_answer_of_the_right_shape_passes() {
    let schema = json!({"type": "object", "required": ["name", "tags"],
        "properties": {"name": {"type": "string", "minLength": 1},
            "tags": {"type": "array", "items": {"type": "string"}},
            "count": {"type": "integer", "minimum": 0}},
        "additionalProperties": false});
    let value = json!({"name": "keel", "tags": ["a"], "count": 3});
    assert_eq!(errors(schema, value), Vec::<String>::new());
}

#[test]
fn each_failure_names_where_and_why() {
    let schema = json!({"type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "n": {"type": "integer", "maximum": 2}},
        "additionalProperties": false});
    let found = errors(schema, json!({"n": 3.5, "extra": true}));
    assert_eq!(
        found,
        [
            "at /: missing required field \"name\"",
            "at /n: expected integer, found number",
            "at /n: 3.5 is more than 2",
            "at /: field \"extra\" is not allowed",
        ]
    );
}

#[test]
fn refs_resolve_within_the_document_and_a_dangling_one_fails() {
    let schema = json!({"$ref": "#/$defs/point",
        "$defs": {"point": {"type": "object", "required": ["x"]}}});
    assert!(check(&schema, &json!({"x": 1})).is_empty());
    assert_eq!(check(&schema, &json!({})).len(), 1);
    let dangling = json!({"$ref": "#/$defs/missing"});
    assert!(!check(&dangling, &json!(1)).is_empty(), "an unresolved ref never passes");
}

#[test]
fn a_ref_cycle_ends_in_a_violation_not_a_stack_overflow() {
    let schema = json!({"$ref": "#"});
    assert!(!check(&schema, &json!(1)).is_empty());
}

#[test]
fn one_of_wants_exactly_one_and_reports_the_nearest_shape() {
    let schema = json!({"oneOf": [
        {"type": "object", "properties": {"type": {"const": "a"}, "x": {"type": "string"}},
            "required": ["type", "x"]},
        {"type": "object", "properties": {"type": {"const": "b"}}, "required": ["type"]}]});
    assert!(check(&schema, &json!({"type": "b"})).is_empty());
    let found = errors(schema.clone(), json!({"type": "a"}));
    assert_eq!(
        found,
        ["at /: matches none of the allowed shapes", "at /: missing required field \"x\""]
    );
    let both = json!({"oneOf": [{"type": "integer"}, {"type": "number"}]});
    assert_eq!(check(&both, &json!(1)).len(), 1, "1 is both an integer and a number");
}

#[test]
fn enums_consts_and_type_lists() {
    let schema = json!({"type": ["string", "null"], "enum": ["x", null]});
    assert!(check(&schema, &json!(null)).is_empty());
    assert!(check(&schema, &json!("x")).is_empty());
    assert_eq!(errors(schema, json!("y")), ["at /: \"y\" is not one of \"x\", null"]);
    assert!(check(&json!({"const": 1}), &json!(1.0)).is_empty(), "1 and 1.0 are one number");
}

#[test]
fn strings_arrays_and_numbers_have_their_bounds() {
    let schema = json!({"type": "array", "minItems": 2, "uniqueItems": true,
        "items": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3}});
    let found = errors(schema, json!(["abcd"]));
    assert_eq!(
        found,
        ["at /0: is 4 characters long, longer than 3", "at /: has 1 items, fewer than 2"]
    );
    let pattern = json!({"type": "string", "pattern": "^[a-z]+$"});
    assert_eq!(errors(pattern, json!("A1")), ["at /: does not match the pattern ^[a-z]+$"]);
    let step = json!({"multipleOf": 0.5, "exclusiveMinimum": 0});
    assert!(check(&step, &json!(1.5)).is_empty());
    assert_eq!(check(&step, &json!(0)).len(), 1);
}

#[test]
fn a_broken_schema_is_a_violation_never_a_panic() {
    for schema in [json!(3), json!({"type": 7}), json!({"pattern": "("}), json!(false)] {
        let value = json!("text");
        assert!(!check(&schema, &value).is_empty(), "{schema}");
    }
    assert!(check(&json!(true), &json!({"any": "thing"})).is_empty());
}

#[test]
fn keywords_it_does_not_check_are_listed() {
    let schema = json!({"type": "object", "patternProperties": {"^x": {}},
        "properties": {"a": {"dependentRequired": {}, "description": "ignored"}}});
    assert_eq!(unsupported_keywords(&schema), ["patternProperties", "dependentRequired"]);
}
