//! The parts of a Chat Completions response that arrive in pieces across
//! chunks and need more than concatenation: tool calls (matched to the
//! call they continue) and opaque provider data (merged, to be echoed
//! back verbatim); and usage, which servers put in different places.
//!
//! Invariants: pure; a delta never panics and is never dropped silently
//! (every call delta lands in some call). Matching, in order: an `index`
//! names a call, unless that index already holds a call with another `id`
//! (Ollama reuses `index: 0` for parallel calls), or the delta starts a
//! new named call after a complete one (whole calls at one index); an
//! `id` alone names a call; a delta with neither continues the last call
//! unless it carries a name (whole calls in one chunk). Arguments given
//! as a JSON value rather than a string are serialized, not dropped.

use serde_json::{Map, Value};

use super::json::{str_at, u64_at};
use crate::protocol::{StreamEvent, ToolCall, Usage};

/// Keys of a tool-call delta that are the protocol's own; any other key
/// is provider data the server wants back on that call.
const CALL_KEYS: [&str; 4] = ["index", "id", "type", "function"];

/// Message-level keys servers attach for the next request: OpenRouter's
/// `reasoning_details`, Gemini's `extra_content` (thought signatures on
/// text), LiteLLM's `thinking_blocks` and `provider_specific_fields`.
/// Others stay unechoed: strict servers reject unknown message fields.
pub(crate) const MESSAGE_KEYS: [&str; 4] =
    ["reasoning_details", "extra_content", "thinking_blocks", "provider_specific_fields"];

/// One tool call while it streams in.
#[derive(Debug)]
struct PartialCall {
    index: u64,
    id: Option<String>,
    name: String,
    arguments: String,
    provider_data: Map<String, Value>,
    /// Where it sits among the response's calls (for a stand-in id).
    position: usize,
}

impl PartialCall {
    /// Servers that send no id still need one for the result to refer to.
    fn call_id(&self) -> String {
        self.id.clone().unwrap_or_else(|| format!("call_{}", self.position))
    }
}

/// The tool calls of choice 0.
#[derive(Debug, Default)]
pub(crate) struct CallAssembler {
    calls: Vec<PartialCall>,
}

impl CallAssembler {
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Applies one entry of a chunk's `delta.tool_calls`.
    pub fn delta(&mut self, delta: &Value, emit: &mut dyn FnMut(StreamEvent)) {
        let id = str_at(delta, &["id"]).filter(|id| !id.is_empty());
        let name = str_at(delta, &["function", "name"]).filter(|name| !name.is_empty());
        let index = delta.get("index").and_then(Value::as_u64);
        let position = match self.find(index, id, name) {
            Some(position) => position,
            None => self.start(index),
        };
        let Some(call) = self.calls.get_mut(position) else { return };
        let announce = call.id.is_none() && call.name.is_empty();
        if let (None, Some(id)) = (&call.id, id) {
            call.id = Some(id.to_owned());
        }
        // The name comes once; servers that repeat it must not double it.
        if let (true, Some(name)) = (call.name.is_empty(), name) {
            call.name = name.to_owned();
        }
        if announce && (call.id.is_some() || !call.name.is_empty()) {
            emit(StreamEvent::ToolCallStarted { call_id: call.call_id(), name: call.name.clone() });
        }
        for (key, value) in delta.as_object().into_iter().flatten() {
            if !CALL_KEYS.contains(&key.as_str()) {
                merge_field(&mut call.provider_data, key, value);
            }
        }
        let piece = match delta.get("function").and_then(|f| f.get("arguments")) {
            Some(Value::String(text)) => text.clone(),
            // llama.cpp (ggml-org/llama.cpp#20198) and proxies in front of
            // Ollama's native API send the arguments as an object.
            Some(value @ (Value::Object(_) | Value::Array(_))) => value.to_string(),
            Some(Value::Null | Value::Bool(_) | Value::Number(_)) | None => String::new(),
        };
        if !piece.is_empty() {
            call.arguments.push_str(&piece);
            emit(StreamEvent::ToolCallArgumentsDelta { call_id: call.call_id(), delta: piece });
        }
    }

    /// The call a delta continues, if any.
    fn find(&self, index: Option<u64>, id: Option<&str>, name: Option<&str>) -> Option<usize> {
        match (index, id) {
            (Some(index), id) => {
                let position = self.calls.iter().rposition(|call| call.index == index)?;
                let call = &self.calls[position];
                let other_id = matches!((&call.id, id), (Some(old), Some(new)) if old != new);
                let next_whole_call = id.is_none()
                    && name.is_some()
                    && !call.name.is_empty()
                    && serde_json::from_str::<Value>(&call.arguments).is_ok_and(|v| v.is_object());
                (!other_id && !next_whole_call).then_some(position)
            }
            (None, Some(id)) => self.calls.iter().rposition(|call| call.id.as_deref() == Some(id)),
            (None, None) if name.is_some() => None,
            (None, None) => self.calls.len().checked_sub(1),
        }
    }

    fn start(&mut self, index: Option<u64>) -> usize {
        let position = self.calls.len();
        let index = index.unwrap_or_else(|| {
            self.calls.iter().map(|call| call.index.saturating_add(1)).max().unwrap_or(0)
        });
        self.calls.push(PartialCall {
            index,
            id: None,
            name: String::new(),
            arguments: String::new(),
            provider_data: Map::new(),
            position,
        });
        position
    }

    /// The calls in index order (arrival order among equal indexes).
    pub fn finish(self) -> Vec<ToolCall> {
        let mut calls = self.calls;
        calls.sort_by_key(|call| call.index);
        calls
            .into_iter()
            .map(|call| ToolCall {
                call_id: call.call_id(),
                name: call.name,
                arguments: call.arguments,
                item_id: None,
                provider_data: (!call.provider_data.is_empty()).then_some(call.provider_data),
            })
            .collect()
    }
}

/// Merges one streamed piece of provider data into what arrived so far:
/// text-like strings concatenate (reasoning streamed in pieces), objects
/// merge key by key, array elements merge with the element of the same
/// `index` (or the last one of the same `type`), anything else is
/// replaced. Nulls never erase.
pub(crate) fn merge_field(into: &mut Map<String, Value>, key: &str, value: &Value) {
    if value.is_null() {
        return;
    }
    match into.get_mut(key) {
        Some(old) => merge_value(old, key, value),
        None => {
            into.insert(key.to_owned(), value.clone());
        }
    }
}

fn merge_value(old: &mut Value, key: &str, new: &Value) {
    match (old, new) {
        (Value::String(old), Value::String(new)) if is_text_key(key) => old.push_str(new),
        (Value::Object(old), Value::Object(new)) => {
            for (key, value) in new {
                merge_field(old, key, value);
            }
        }
        (Value::Array(old), Value::Array(new)) => {
            for element in new {
                merge_element(old, element);
            }
        }
        (old, new) => *old = new.clone(),
    }
}

fn merge_element(elements: &mut Vec<Value>, element: &Value) {
    let kind = element.get("type");
    let target = match element.get("index") {
        Some(index) => elements.iter_mut().rfind(|old| {
            old.get("index") == Some(index) && (kind.is_none() || old.get("type") == kind)
        }),
        None => elements.last_mut().filter(|old| kind.is_some() && old.get("type") == kind),
    };
    match target {
        Some(old) => merge_value(old, "", element),
        None => elements.push(element.clone()),
    }
}

fn is_text_key(key: &str) -> bool {
    matches!(key, "text" | "thinking" | "summary" | "data" | "content")
}

/// Usage in any of the places Chat Completions servers put it: `usage`
/// (OpenAI and most), `x_groq.usage` (Groq), a choice's `usage`
/// (Moonshot). Cache reads come as `prompt_tokens_details.cached_tokens`
/// (OpenAI, vLLM, OpenRouter), `prompt_cache_hit_tokens` (DeepSeek) or
/// `cache_read_input_tokens` (LiteLLM in front of Anthropic); cache writes
/// as `prompt_tokens_details.cache_write_tokens` (OpenRouter) or
/// `cache_creation_input_tokens` (LiteLLM).
pub(crate) fn usage_of(chunk: &Value) -> Option<Usage> {
    let usage = [
        chunk.get("usage"),
        chunk.get("x_groq").and_then(|x| x.get("usage")),
        chunk.pointer("/choices/0/usage"),
    ]
    .into_iter()
    .flatten()
    .find(|usage| usage.is_object())?;
    let first = |paths: &[&[&str]]| paths.iter().map(|path| u64_at(usage, path)).find(|n| *n > 0);
    Some(Usage {
        input_tokens: u64_at(usage, &["prompt_tokens"]),
        output_tokens: u64_at(usage, &["completion_tokens"]),
        cached_input_tokens: first(&[
            &["prompt_tokens_details", "cached_tokens"],
            &["prompt_cache_hit_tokens"],
            &["cache_read_input_tokens"],
            &["cached_tokens"],
        ])
        .unwrap_or(0),
        reasoning_tokens: u64_at(usage, &["completion_tokens_details", "reasoning_tokens"]),
        cache_write_tokens: first(&[
            &["prompt_tokens_details", "cache_write_tokens"],
            &["cache_creation_input_tokens"],
        ])
        .unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn assemble(deltas: &[Value]) -> Vec<ToolCall> {
        let mut calls = CallAssembler::default();
        for delta in deltas {
            calls.delta(delta, &mut |_| {});
        }
        calls.finish()
    }

    fn summary(calls: &[ToolCall]) -> Vec<(String, String, String)> {
        calls.iter().map(|c| (c.call_id.clone(), c.name.clone(), c.arguments.clone())).collect()
    }

    fn row(id: &str, name: &str, args: &str) -> (String, String, String) {
        (id.to_owned(), name.to_owned(), args.to_owned())
    }

    #[test]
    fn an_occupied_index_with_a_new_id_is_a_new_call() {
        // Ollama (ollama/ollama#15457): parallel calls all at index 0.
        let calls = assemble(&[
            json!({"id":"call_a","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}),
            json!({"id":"call_b","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}}),
        ]);
        assert_eq!(
            summary(&calls),
            vec![
                row("call_a", "read_file", r#"{"path":"a"}"#),
                row("call_b", "read_file", r#"{"path":"b"}"#)
            ]
        );
    }

    #[test]
    fn calls_match_by_id_and_by_neither() {
        let by_id = assemble(&[
            json!({"id":"x","function":{"name":"a","arguments":"{\"q\":"}}),
            json!({"id":"y","function":{"name":"b","arguments":"{}"}}),
            json!({"id":"x","function":{"arguments":"1}"}}),
        ]);
        assert_eq!(summary(&by_id), vec![row("x", "a", r#"{"q":1}"#), row("y", "b", "{}")]);
        let whole = assemble(&[
            json!({"function":{"name":"a","arguments":"{}"}}),
            json!({"function":{"name":"b","arguments":"{\"k\":"}}),
            json!({"function":{"arguments":"2}"}}),
        ]);
        assert_eq!(
            summary(&whole),
            vec![row("call_0", "a", "{}"), row("call_1", "b", r#"{"k":2}"#)]
        );
        let same_index_no_ids = assemble(&[
            json!({"index":0,"function":{"name":"a","arguments":"{}"}}),
            json!({"index":0,"function":{"name":"b","arguments":"{}"}}),
        ]);
        assert_eq!(summary(&same_index_no_ids).len(), 2);
    }

    #[test]
    fn object_arguments_are_serialized_and_extra_keys_kept() {
        let calls = assemble(&[json!({
            "index": 0, "id": "function-call-1", "type": "function",
            "function": {"name": "shell", "arguments": {"command": "ls"}},
            "extra_content": {"google": {"thought_signature": "c2ln"}}
        })]);
        assert_eq!(calls[0].arguments, r#"{"command":"ls"}"#);
        let data = calls[0].provider_data.as_ref().unwrap();
        assert_eq!(data["extra_content"]["google"]["thought_signature"], "c2ln");
    }

    #[test]
    fn repeated_names_and_empty_names_do_not_double() {
        // LM Studio (lmstudio-bug-tracker#649) repeats `"name": ""`.
        let calls = assemble(&[
            json!({"index":0,"id":"1","type":"function","function":{"name":"grep","arguments":""}}),
            json!({"index":0,"type":"function","function":{"name":"","arguments":"{\"pattern\""}}),
            json!({"index":0,"type":"function","function":{"name":"grep","arguments":":\"x\"}"}}),
        ]);
        assert_eq!(summary(&calls), vec![row("1", "grep", r#"{"pattern":"x"}"#)]);
    }

    #[test]
    fn streamed_provider_data_merges_by_index_and_type() {
        let mut data = Map::new();
        merge_field(
            &mut data,
            "reasoning_details",
            &json!([{"type":"reasoning.text","text":"Let ","index":0,"format":"f"}]),
        );
        merge_field(
            &mut data,
            "reasoning_details",
            &json!([{"type":"reasoning.text","text":"me","index":0}]),
        );
        merge_field(
            &mut data,
            "reasoning_details",
            &json!([{"type":"reasoning.text","signature":"sig","index":0}]),
        );
        merge_field(
            &mut data,
            "reasoning_details",
            &json!([{"type":"reasoning.encrypted","data":"e","index":1}]),
        );
        merge_field(&mut data, "thinking_blocks", &json!([{"type":"thinking","thinking":"a"}]));
        merge_field(
            &mut data,
            "thinking_blocks",
            &json!([{"type":"thinking","thinking":"b","signature":"s"}]),
        );
        merge_field(&mut data, "extra_content", &json!({"google":{"thought_signature":"t"}}));
        merge_field(&mut data, "extra_content", &Value::Null);
        assert_eq!(
            Value::Object(data),
            json!({
                "reasoning_details": [
                    {"type":"reasoning.text","text":"Let me","index":0,"format":"f","signature":"sig"},
                    {"type":"reasoning.encrypted","data":"e","index":1}
                ],
                "thinking_blocks": [{"type":"thinking","thinking":"ab","signature":"s"}],
                "extra_content": {"google":{"thought_signature":"t"}}
            })
        );
    }

    #[test]
    fn usage_is_read_wherever_servers_put_it() {
        let groq =
            json!({"x_groq":{"id":"req_1","usage":{"prompt_tokens":50,"completion_tokens":7}}});
        assert_eq!(usage_of(&groq).map(|u| (u.input_tokens, u.output_tokens)), Some((50, 7)));
        let deepseek = json!({"usage":{"prompt_tokens":90,"completion_tokens":3,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":26}});
        assert_eq!(usage_of(&deepseek).map(|u| u.cached_input_tokens), Some(64));
        let openrouter = json!({"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0,"cache_write_tokens":8}}});
        assert_eq!(usage_of(&openrouter).map(|u| u.cache_write_tokens), Some(8));
        assert_eq!(usage_of(&json!({"usage": null, "choices": []})), None);
    }
}
