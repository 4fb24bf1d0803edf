//! Argument plumbing shared by every tool: parsing the raw argument string,
//! typed deserialization with the offending field named, and running
//! blocking work off the async runtime. The schema offered to the model is
//! generated from the same type (`protocol::schema_of`).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::ToolError;

/// Parses the model's raw argument string; empty (or `null`) means `{}`.
pub(crate) fn parse_json(tool: &str, raw: &str) -> Result<Value, ToolError> {
    let raw = raw.trim();
    if raw.is_empty() || raw == "null" {
        return Ok(Value::Object(Map::new()));
    }
    serde_json::from_str(raw).map_err(|error| ToolError::InvalidArguments {
        tool: tool.to_owned(),
        message: format!("arguments are not valid JSON ({error}); send a JSON object"),
    })
}

/// Deserializes `args` into a tool's argument type, naming the field that
/// did not fit. A `null` field is an absent one: strict tool calling
/// (`protocol::strict_schema`) sends `null` for every optional field the
/// model leaves out, and a `#[serde(default)]` flag would refuse it.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, mut args: Value) -> Result<T, ToolError> {
    crate::protocol::strict_schema::nulls_as_absent(&mut args);
    serde_path_to_error::deserialize(args).map_err(|error| {
        let field = error.path().to_string();
        let inner = error.into_inner();
        let message =
            if field == "." { inner.to_string() } else { format!("field `{field}`: {inner}") };
        ToolError::InvalidArguments { tool: tool.to_owned(), message }
    })
}

/// `asked` within `min..=max`, and the note the result carries when it was
/// not (`[depth lowered to 5, the most allowed]`): a bound the model went
/// past is said, never applied in silence. Under strict tool calling on
/// Anthropic the schema cannot carry the bounds (`protocol::strict_schema`),
/// so the note is what tells the model.
pub(crate) fn bounded(
    field: &str,
    asked: Option<u64>,
    default: u64,
    min: u64,
    max: u64,
) -> (u64, Option<String>) {
    let value = asked.unwrap_or(default);
    let used = value.clamp(min, max);
    let note = match asked {
        Some(asked) if asked > max => Some(format!("[{field} lowered to {max}, the most allowed]")),
        Some(asked) if asked < min => Some(format!("[{field} raised to {min}, the least allowed]")),
        _ => None,
    };
    (used, note)
}

/// Runs blocking work (filesystem walks, reads, writes) on the blocking
/// pool, so concurrent read-only tools do not stall the runtime.
pub(crate) async fn blocking<T, F>(tool: &str, work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    let internal = |message: String| ToolError::Internal { tool: tool.to_owned(), message };
    // Caught on the blocking thread itself, so the panic hook knows it is
    // handled (see `panic_guard`).
    let guarded = move || crate::support::panic_guard::catch(work);
    match tokio::task::spawn_blocking(guarded).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(panic)) => Err(internal(panic.to_string())),
        Err(error) => Err(internal(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Example {
        path: String,
        count: Option<u32>,
    }

    #[test]
    fn empty_arguments_mean_an_empty_object() {
        assert_eq!(parse_json("t", "  ").ok(), Some(serde_json::json!({})));
        assert!(matches!(parse_json("t", "{oops"), Err(ToolError::InvalidArguments { .. })));
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct WithFlag {
        path: String,
        #[serde(default)]
        verify: bool,
        #[serde(default)]
        choices: Vec<String>,
    }

    #[test]
    fn a_null_optional_field_reads_as_absent() {
        let args = serde_json::json!({ "path": "a", "verify": null, "choices": null });
        let parsed = parse_args::<WithFlag>("t", args).unwrap();
        assert!(!parsed.verify && parsed.choices.is_empty());
        let args = serde_json::json!({ "path": "a", "count": null });
        assert_eq!(parse_args::<Example>("t", args).unwrap().count, None);
    }

    #[test]
    fn a_bound_past_its_limit_is_said() {
        assert_eq!(bounded("depth", None, 1, 1, 5), (1, None));
        assert_eq!(bounded("depth", Some(3), 1, 1, 5), (3, None));
        let lowered = Some("[depth lowered to 5, the most allowed]".to_owned());
        assert_eq!(bounded("depth", Some(50), 1, 1, 5), (5, lowered));
        let raised = Some("[offset raised to 1, the least allowed]".to_owned());
        assert_eq!(bounded("offset", Some(0), 1, 1, u64::MAX), (1, raised));
    }

    #[test]
    fn type_errors_name_the_field() {
        let args = serde_json::json!({ "path": "a", "count": "three" });
        let error = parse_args::<Example>("t", args).map(|_| ()).err().map(|e| e.to_string());
        let error = error.unwrap_or_default();
        assert!(error.contains("field `count`"), "{error}");
        let missing =
            parse_args::<Example>("t", serde_json::json!({})).err().map(|e| e.to_string());
        assert!(missing.unwrap_or_default().contains("missing field `path`"));
    }
}
