//! Tool calls a local model wrote as text (issue 33): a server that does
//! not pass the tools through its chat template, or a small model that
//! ignores the format, leaves the call in the answer: `<tool_call>{…}
//! </tool_call>` (Hermes, Qwen), a fenced ```` ```json ```` block, or the
//! whole answer one JSON object. keel takes such a call as the model's
//! call when, and only when, it is unambiguous.
//!
//! Invariants: pure. Only a response with no native call that ended its
//! turn is read. One form only: the tags, else fenced blocks, else the
//! whole answer; a response in which two forms hold calls is left alone.
//! Every candidate of that form must name an offered tool and carry
//! arguments that parse as a JSON object (`arguments`, or `parameters`),
//! or none is taken. The answer's text is kept as it was (the model wrote
//! it; the history shows it), the calls follow it, and the caller says in
//! the log that calls were read from text.

use serde_json::Value;

use crate::protocol::{Item, ModelResponse, StopReason, ToolCall, ToolSpec};

/// The calls read from a response's text, and the form they were in.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    pub response: ModelResponse,
    pub form: TextForm,
    pub names: Vec<String>,
}

/// How a model wrote its calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextForm {
    Tags,
    Fenced,
    Bare,
}

impl TextForm {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Tags => "<tool_call> tags",
            Self::Fenced => "a fenced JSON block",
            Self::Bare => "a JSON object",
        }
    }
}

/// `response` with the calls its text holds, when it holds unambiguous
/// calls of `tools`; `None` otherwise (the response stands as it came).
pub fn recover(tools: &[ToolSpec], response: &ModelResponse) -> Option<Recovered> {
    if response.tool_calls().next().is_some()
        || !matches!(response.stop_reason, StopReason::EndTurn)
    {
        return None;
    }
    let text = response.text();
    let forms = [
        (TextForm::Tags, tagged(&text)),
        (TextForm::Fenced, fenced(&text)),
        (TextForm::Bare, bare(&text)),
    ];
    let mut found = forms.into_iter().filter(|(_, blocks)| !blocks.is_empty());
    let (form, blocks) = found.next()?;
    // The bare form is the whole answer: it never coexists with another.
    if found.next().is_some() {
        return None;
    }
    let calls: Option<Vec<(String, String)>> =
        blocks.iter().map(|block| call_of(block, tools)).collect();
    let calls = calls?;
    let mut response = response.clone();
    let names = calls.iter().map(|(name, _)| name.clone()).collect();
    for (index, (name, arguments)) in calls.into_iter().enumerate() {
        let id = format!("text_call_{index}");
        response.items.push(Item::ToolCall(ToolCall::new(id, name, arguments)));
    }
    response.stop_reason = StopReason::ToolUse;
    Some(Recovered { response, form, names })
}

/// The bodies of `<tool_call>…</tool_call>` blocks; an opened tag never
/// closed makes the form unreadable (one empty body, which no call parses).
fn tagged(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("<tool_call>") {
        let after = &rest[start + "<tool_call>".len()..];
        let Some(end) = after.find("</tool_call>") else {
            blocks.push("");
            break;
        };
        blocks.push(after[..end].trim());
        rest = &after[end + "</tool_call>".len()..];
    }
    blocks
}

/// The bodies of fenced blocks tagged `json` (or untagged) that hold a
/// JSON object.
fn fenced(text: &str) -> Vec<&str> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(newline) = after.find('\n') else { break };
        let tag = after[..newline].trim();
        let body_and_more = &after[newline + 1..];
        let Some(end) = body_and_more.find("```") else { break };
        let body = body_and_more[..end].trim();
        if (tag.is_empty() || tag.eq_ignore_ascii_case("json")) && body.starts_with('{') {
            blocks.push(body);
        }
        rest = &body_and_more[end + 3..];
    }
    blocks
}

/// The whole answer, when it is one JSON object.
fn bare(text: &str) -> Vec<&str> {
    let text = text.trim();
    if text.starts_with('{') && text.ends_with('}') { vec![text] } else { Vec::new() }
}

/// The call `block` writes: `{"name", "arguments"|"parameters"}`, or the
/// same under `"function"`; its name offered, its arguments an object
/// (or a string holding one).
fn call_of(block: &str, tools: &[ToolSpec]) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(block).ok()?;
    let call = value.get("function").filter(|f| f.is_object()).unwrap_or(&value);
    let name = call.get("name")?.as_str()?;
    if !tools.iter().any(|tool| tool.name == name) {
        return None;
    }
    let arguments = call.get("arguments").or_else(|| call.get("parameters"))?;
    let arguments = match arguments {
        Value::Object(_) => arguments.clone(),
        Value::String(text) => serde_json::from_str::<Value>(text).ok().filter(Value::is_object)?,
        _ => return None,
    };
    Some((name.to_owned(), arguments.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::Usage;

    fn tools() -> Vec<ToolSpec> {
        ["read_file", "write_file"]
            .iter()
            .map(|name| ToolSpec {
                name: (*name).to_owned(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    fn answer(text: &str) -> ModelResponse {
        ModelResponse {
            items: vec![Item::Assistant { text: text.to_owned() }],
            usage: Usage::default(),
            stop_reason: StopReason::EndTurn,
            response_id: None,
        }
    }

    /// The calls recovered from `text`: (name, arguments) pairs.
    fn calls(text: &str) -> Option<Vec<(String, Value)>> {
        let recovered = recover(&tools(), &answer(text))?;
        assert_eq!(recovered.response.stop_reason, StopReason::ToolUse);
        assert_eq!(recovered.response.text(), text, "the text is kept");
        Some(
            recovered
                .response
                .tool_calls()
                .map(|c| (c.name.clone(), serde_json::from_str(&c.arguments).unwrap()))
                .collect(),
        )
    }

    fn read(path: &str) -> Option<Vec<(String, Value)>> {
        Some(vec![("read_file".to_owned(), json!({"path": path}))])
    }

    #[test]
    fn tags_fences_and_bare_objects_are_read() {
        let tagged = "I'll look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": \
                      {\"path\": \"calc.py\"}}\n</tool_call>";
        assert_eq!(calls(tagged), read("calc.py"));
        let fenced = "Let me read it:\n```json\n{\"name\": \"read_file\", \"parameters\": \
                      {\"path\": \"a.py\"}}\n```";
        assert_eq!(calls(fenced), read("a.py"));
        let bare = " {\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"b\\\"}\"} ";
        assert_eq!(calls(bare), read("b"));
        let nested = "{\"type\": \"function\", \"function\": {\"name\": \"read_file\", \
                      \"arguments\": {\"path\": \"c\"}}}";
        assert_eq!(calls(nested), read("c"));
        let two = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\
                   </tool_call><tool_call>{\"name\": \"write_file\", \"arguments\": \
                   {\"path\": \"y\", \"content\": \"\"}}</tool_call>";
        assert_eq!(calls(two).map(|calls| calls.len()), Some(2));
    }

    #[test]
    fn anything_ambiguous_is_left_alone() {
        let unknown = "{\"name\": \"delete_everything\", \"arguments\": {}}";
        assert_eq!(calls(unknown), None, "not an offered tool");
        let broken = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": </tool_call>";
        assert_eq!(calls(broken), None, "arguments that do not parse");
        let not_object = "{\"name\": \"read_file\", \"arguments\": [1]}";
        assert_eq!(calls(not_object), None);
        let one_bad = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\
                       </tool_call><tool_call>{\"name\": \"nope\", \"arguments\": {}}</tool_call>";
        assert_eq!(calls(one_bad), None, "every candidate or none");
        let mixed = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}\
                     </tool_call>\n```json\n{\"name\": \"read_file\", \"arguments\": {}}\n```";
        assert_eq!(calls(mixed), None, "two forms");
        let unclosed = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}";
        assert_eq!(calls(unclosed), None);
        let prose = "Change `a - b` to `a + b` in calc.py.";
        assert_eq!(calls(prose), None);
        let example = "Here is the config:\n```json\n{\"debug\": true}\n```";
        assert_eq!(calls(example), None, "JSON that names no tool");
    }

    #[test]
    fn only_a_finished_answer_without_native_calls_is_read() {
        let text = "{\"name\": \"read_file\", \"arguments\": {\"path\": \"x\"}}";
        let mut cut = answer(text);
        cut.stop_reason = StopReason::MaxTokens;
        assert_eq!(recover(&tools(), &cut), None, "a cut answer is not a call");
        let mut native = answer(text);
        native.items.push(Item::ToolCall(ToolCall::new("c1", "read_file", "{}")));
        native.stop_reason = StopReason::ToolUse;
        assert_eq!(recover(&tools(), &native), None);
    }
}
