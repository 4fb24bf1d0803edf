//! Request-validation reports in one line: a server that checks requests
//! against a schema (pydantic behind FastAPI, as in llama-cpp-python, vLLM
//! and LiteLLM) answers a request it cannot parse with a list of every
//! mismatch. Such a report is permanent (the same body gets the same
//! answer), so the error built from it is never retried, and it is shown as
//! its count and its most telling entry rather than the whole dump.
//!
//! Two shapes are read: FastAPI's `{"detail": [{"loc": […], "msg": …}]}`
//! (HTTP 422) and pydantic's text `N validation errors:\n  {'type': …,
//! 'loc': (…), 'msg': …}` inside an error message (llama-cpp-python wraps it
//! in a 500). Invariants: pure, never panics on any body; `None` for
//! anything that is not clearly such a report.

use serde_json::Value;

/// One mismatch of a report: where in the request, and what was wrong.
#[derive(Debug, PartialEq, Eq)]
struct Mismatch {
    kind: String,
    location: String,
    message: String,
}

/// `N validation error(s); e.g. body.messages.3.content: Input should be a
/// valid string` when `body` (or its already parsed `message`) is a
/// validation report.
pub(crate) fn summary(body: &str, message: &str) -> Option<String> {
    let (count, mismatches) = match fastapi_detail(body) {
        Some(mismatches) => (mismatches.len(), mismatches),
        None => pydantic_text(message)?,
    };
    // A union of message types reports one `literal_error` per member whose
    // tag (`role`) did not match; the other entries say what was wrong.
    let telling =
        mismatches.iter().find(|m| m.kind != "literal_error").or_else(|| mismatches.first())?;
    let plural = if count == 1 { "" } else { "s" };
    Some(format!(
        "{count} validation error{plural}; e.g. {}: {}",
        telling.location,
        one_line(&telling.message)
    ))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// FastAPI's 422 body.
fn fastapi_detail(body: &str) -> Option<Vec<Mismatch>> {
    let json: Value = serde_json::from_str(body).ok()?;
    let entries = json.get("detail")?.as_array()?;
    let mismatches: Vec<Mismatch> = entries
        .iter()
        .filter_map(|entry| {
            let location = entry.get("loc")?.as_array()?;
            let location = location
                .iter()
                .map(|part| match part {
                    Value::String(name) => name.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(".");
            Some(Mismatch {
                kind: entry.get("type").and_then(Value::as_str).unwrap_or_default().to_owned(),
                location,
                message: entry.get("msg")?.as_str()?.to_owned(),
            })
        })
        .collect();
    (!mismatches.is_empty()).then_some(mismatches)
}

/// pydantic's `ValidationError` text: a header line with the count, then
/// one Python dict repr per mismatch (a message cut short keeps fewer).
fn pydantic_text(message: &str) -> Option<(usize, Vec<Mismatch>)> {
    let (head, _) = message.split_once(" validation error")?;
    let stated = head.rsplit(|c: char| !c.is_ascii_digit()).next()?.parse::<usize>().ok();
    let mismatches: Vec<Mismatch> = message
        .split("{'type': ")
        .skip(1)
        .filter_map(|entry| {
            let (kind, rest) = python_string(entry)?;
            let location = rest.split_once("'loc': (")?.1.split_once(')')?.0;
            let location = location
                .split(',')
                .map(|part| part.trim().trim_matches(['\'', '"']))
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join(".");
            let (message, _) = python_string(rest.split_once("'msg': ")?.1)?;
            Some(Mismatch { kind, location, message })
        })
        .collect();
    let count = stated.unwrap_or(mismatches.len()).max(mismatches.len());
    (!mismatches.is_empty()).then_some((count, mismatches))
}

/// A Python string literal at the start of `text` (`'…'` or `"…"`), and
/// what follows it.
fn python_string(text: &str) -> Option<(String, &str)> {
    let quote = text.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let inner = &text[1..];
    let mut escaped = false;
    for (at, c) in inner.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            c if c == quote && !escaped => {
                return Some((inner[..at].replace("\\'", "'"), &inner[at + 1..]));
            }
            _ => escaped = false,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What llama-cpp-python's server answered (HTTP 500) to an assistant
    /// message with `"content": null` beside its tool calls.
    const LLAMA_CPP_PYTHON: &str = "7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 3, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {'expected': \"'system'\"}}\n  {'type': 'string_type', 'loc': ('body', 'messages', 3, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 3, 'ChatCompletionRequestToolMessage', 'role'), 'msg': \"Input should be 'tool'\", 'input': 'assistant'}";

    #[test]
    fn a_pydantic_dump_becomes_its_count_and_the_telling_entry() {
        assert_eq!(
            summary("", LLAMA_CPP_PYTHON).as_deref(),
            Some(
                "7 validation errors; e.g. body.messages.3.ChatCompletionRequestAssistantMessage.content: \
                 Input should be a valid string"
            )
        );
    }

    #[test]
    fn a_fastapi_422_detail_is_read() {
        let body = r#"{"detail":[{"type":"missing","loc":["body","model"],"msg":"Field required","input":{}}]}"#;
        assert_eq!(
            summary(body, body).as_deref(),
            Some("1 validation error; e.g. body.model: Field required")
        );
    }

    #[test]
    fn anything_else_is_not_a_report() {
        assert_eq!(summary("", "bad tool schema"), None);
        assert_eq!(summary(r#"{"detail":"Not Found"}"#, "Not Found"), None);
        assert_eq!(summary("", "1 validation error: {'type': 'x"), None);
        assert_eq!(summary("{", "validation errors"), None);
    }
}
