//! The shape a final answer must have (`keel exec --output-schema FILE`):
//! the JSON Schema a script demands, what the model is told, and the check
//! of its answer (issue 40).
//!
//! The model is asked in the prompt (every protocol) and, where the wire
//! protocol has it, natively (`llm/`: Responses `text.format`, Chat
//! `response_format`, both `json_schema` without `strict`, since a
//! script's schema need not meet OpenAI's strict subset; Anthropic has
//! the instruction only). Whatever the server promised, the answer is
//! checked here: a JSON value (alone, or in one fenced block) that
//! validates ([`super::json_check`]). `exec` asks again with the
//! violations ([`AnswerShape::retry_prompt`]) at most
//! [`MAX_ANSWER_ATTEMPTS`] times in all, then ends `schema_invalid`.
//!
//! Invariants: pure; an answer passes only when it parses and validates;
//! the schema is read once, as given (no `$ref` leaves the document).

use serde_json::Value;

use super::json_check::{self, Violation};

/// Answers the model may give per run before it ends `schema_invalid`:
/// the first and two more after being shown what was wrong.
pub const MAX_ANSWER_ATTEMPTS: u32 = 3;

/// Why a schema file cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerShapeError {
    #[error("the output schema is not JSON: {0}")]
    NotJson(String),
    #[error("the output schema must be a JSON object (or true/false), not {0}")]
    NotASchema(&'static str),
}

/// A script's JSON Schema for the final answer.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerShape {
    schema: Value,
}

/// Why an answer does not have its shape.
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeMiss {
    /// The answer is not one JSON value (the parser's message).
    NotJson(String),
    /// It parsed, and breaks the schema here.
    Invalid(Vec<Violation>),
}

impl std::fmt::Display for ShapeMiss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotJson(error) => write!(f, "the answer is not a JSON value ({error})"),
            Self::Invalid(violations) => {
                let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
                write!(f, "the answer does not validate: {}", list.join("; "))
            }
        }
    }
}

impl AnswerShape {
    /// The schema in `text` (a file's contents).
    pub fn parse(text: &str) -> Result<Self, AnswerShapeError> {
        let schema: Value =
            serde_json::from_str(text).map_err(|e| AnswerShapeError::NotJson(e.to_string()))?;
        match &schema {
            Value::Object(_) | Value::Bool(_) => Ok(Self { schema }),
            Value::Null => Err(AnswerShapeError::NotASchema("null")),
            Value::Number(_) => Err(AnswerShapeError::NotASchema("a number")),
            Value::String(_) => Err(AnswerShapeError::NotASchema("a string")),
            Value::Array(_) => Err(AnswerShapeError::NotASchema("an array")),
        }
    }

    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// Keywords of the schema this check does not enforce (a warning for
    /// the user: the answer is not checked against them).
    pub fn unchecked_keywords(&self) -> Vec<String> {
        json_check::unsupported_keywords(&self.schema)
    }

    /// The answer as JSON, when it has the shape. The value alone, or in
    /// one fenced block (```json … ```), with blanks around it.
    pub fn check(&self, answer: &str) -> Result<Value, ShapeMiss> {
        let text = unfenced(answer.trim());
        let value: Value =
            serde_json::from_str(text).map_err(|e| ShapeMiss::NotJson(e.to_string()))?;
        let violations = json_check::check(&self.schema, &value);
        if violations.is_empty() { Ok(value) } else { Err(ShapeMiss::Invalid(violations)) }
    }

    /// What the prompt adds: answer with only JSON of this schema.
    pub fn instruction(&self) -> String {
        let schema = serde_json::to_string_pretty(&self.schema).unwrap_or_default();
        format!(
            "When the task is done, your final answer must be only a JSON value (no prose, \
             no code fence) that validates against this JSON Schema:\n{schema}"
        )
    }

    /// The next turn's prompt after an answer that missed the shape.
    pub fn retry_prompt(&self, miss: &ShapeMiss) -> String {
        let why = match miss {
            ShapeMiss::NotJson(error) => format!("It is not a JSON value: {error}.\n"),
            ShapeMiss::Invalid(violations) => {
                format!("It breaks the schema:\n{}", json_check::describe(violations))
            }
        };
        format!(
            "Your final answer does not have the required shape. {why}Answer again with only \
             a JSON value that validates against the JSON Schema you were given."
        )
    }
}

/// The inside of one fenced block that is the whole text, else the text.
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else { return text };
    let Some(body) = rest.strip_suffix("```") else { return text };
    // The info string (`json`) runs to the first line break.
    match body.split_once('\n') {
        Some((info, inner)) if !info.contains('`') => inner.trim(),
        Some(_) | None => text,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn shape() -> AnswerShape {
        AnswerShape::parse(
            r#"{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_valid_answer_alone_or_fenced_passes() {
        assert_eq!(shape().check(" {\"ok\": true}\n"), Ok(json!({"ok": true})));
        assert_eq!(shape().check("```json\n{\"ok\": false}\n```"), Ok(json!({"ok": false})));
    }

    #[test]
    fn prose_or_the_wrong_shape_misses_with_what_to_fix() {
        let miss = shape().check("Done! {\"ok\": true}").unwrap_err();
        assert!(matches!(miss, ShapeMiss::NotJson(_)), "{miss:?}");
        let miss = shape().check("{\"ok\": \"yes\"}").unwrap_err();
        let prompt = shape().retry_prompt(&miss);
        assert!(prompt.contains("at /ok: expected boolean, found string"), "{prompt}");
        assert!(miss.to_string().contains("does not validate"), "{miss}");
    }

    #[test]
    fn a_schema_file_must_be_a_json_object() {
        assert!(matches!(AnswerShape::parse("{"), Err(AnswerShapeError::NotJson(_))));
        assert_eq!(AnswerShape::parse("[1]"), Err(AnswerShapeError::NotASchema("an array")));
        assert!(AnswerShape::parse("true").is_ok());
    }

    #[test]
    fn the_instruction_carries_the_schema() {
        assert!(shape().instruction().contains("\"required\": [\n    \"ok\"\n  ]"));
    }
}
