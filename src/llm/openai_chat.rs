//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`, as
//! served by OpenAI, Ollama, vLLM, LM Studio, OpenRouter): the request body
//! and the reducer of its chunk stream.
//!
//! Invariants: the flat history is folded into role messages (consecutive
//! assistant text and calls become one assistant message); reasoning items
//! of other protocols are dropped. Only choice 0 feeds the response (we
//! never ask for `n > 1`). Tool calls are assembled by `tool_calls[].index`
//! and their arguments are the exact concatenated string. `data: [DONE]`
//! completes the stream; a stream that ends after a `finish_reason` but
//! without `[DONE]` is accepted, one with neither is cut.

use serde_json::{Value, json};

use super::assembler::{at, parse_data, str_at, u64_at};
use super::error::{LlmError, classify_stream_error, error_from_json};
use super::sse::SseEvent;
use crate::protocol::{
    Item, ModelRequest, ModelResponse, StopReason, StreamEvent, ToolCall, Usage,
};

/// The JSON body of a streaming Chat Completions request.
pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": messages(request),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.max_output_tokens {
        // `max_tokens`, not `max_completion_tokens`: the local servers this
        // provider exists for understand only the older name.
        body["max_tokens"] = json!(max);
    }
    body
}

fn messages(request: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.items.len() + 1);
    if !request.instructions.is_empty() {
        out.push(json!({"role": "system", "content": request.instructions}));
    }
    // The assistant message being folded: its text and its calls.
    let mut text = String::new();
    let mut calls: Vec<Value> = Vec::new();
    for item in &request.items {
        match item {
            Item::Assistant { text: part } => text.push_str(part),
            Item::ToolCall(call) => calls.push(json!({
                "id": call.call_id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            })),
            Item::Reasoning(_) => {} // no Chat Completions form
            Item::User { text: user } => {
                flush_assistant(&mut out, &mut text, &mut calls);
                out.push(json!({"role": "user", "content": user}));
            }
            Item::ToolResult(result) => {
                flush_assistant(&mut out, &mut text, &mut calls);
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": result.output,
                }));
            }
        }
    }
    flush_assistant(&mut out, &mut text, &mut calls);
    out
}

fn flush_assistant(out: &mut Vec<Value>, text: &mut String, calls: &mut Vec<Value>) {
    if text.is_empty() && calls.is_empty() {
        return;
    }
    let mut message = json!({"role": "assistant"});
    message["content"] = if text.is_empty() { Value::Null } else { json!(std::mem::take(text)) };
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(std::mem::take(calls));
    }
    out.push(message);
}

/// One tool call of choice 0 while it streams in.
#[derive(Debug)]
struct PartialCall {
    index: u64,
    id: Option<String>,
    name: String,
    arguments: String,
}

impl PartialCall {
    /// Servers that send no id still need one for the result to refer to.
    fn call_id(&self) -> String {
        self.id.clone().unwrap_or_else(|| format!("call_{}", self.index))
    }
}

/// Reduces a Chat Completions chunk stream.
#[derive(Debug, Default)]
pub(crate) struct ChatAssembler {
    response_id: Option<String>,
    text: String,
    refusal: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Usage,
    done: bool,
}

impl ChatAssembler {
    pub fn feed(
        &mut self,
        event: &SseEvent,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), LlmError> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk = parse_data(event)?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            let body = error_from_json(&chunk).unwrap_or_default();
            return Err(classify_stream_error(body));
        }
        if let (None, Some(id)) = (&self.response_id, str_at(&chunk, &["id"])) {
            self.response_id = Some(id.to_owned());
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Usage {
                input_tokens: u64_at(usage, &["prompt_tokens"]),
                output_tokens: u64_at(usage, &["completion_tokens"]),
                cached_input_tokens: u64_at(usage, &["prompt_tokens_details", "cached_tokens"]),
                reasoning_tokens: u64_at(usage, &["completion_tokens_details", "reasoning_tokens"]),
            };
        }
        let choices = chunk.get("choices").and_then(Value::as_array).map(Vec::as_slice);
        for choice in choices.unwrap_or_default() {
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0 {
                self.choice(choice, emit);
            }
        }
        Ok(())
    }

    pub fn is_complete(&self) -> bool {
        self.done
    }

    pub fn finish(self) -> Result<ModelResponse, LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::StreamCut { expected: "data: [DONE]" });
        }
        let refused = !self.refusal.is_empty();
        let mut items = Vec::new();
        if !self.text.is_empty() {
            items.push(Item::Assistant { text: self.text });
        }
        if !self.refusal.is_empty() {
            items.push(Item::Assistant { text: self.refusal });
        }
        let mut calls = self.calls;
        calls.sort_by_key(|call| call.index);
        let has_calls = !calls.is_empty();
        for call in calls {
            let call_id = call.call_id();
            items.push(Item::ToolCall(ToolCall {
                call_id,
                name: call.name,
                arguments: call.arguments,
                item_id: None,
            }));
        }
        let stop_reason = match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            // Some servers say `stop` even when they ask for tools.
            _ if has_calls => StopReason::ToolUse,
            _ if refused => StopReason::Refusal,
            Some("stop") | None => StopReason::EndTurn,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        Ok(ModelResponse { items, usage: self.usage, stop_reason, response_id: self.response_id })
    }

    fn choice(&mut self, choice: &Value, emit: &mut dyn FnMut(StreamEvent)) {
        if let Some(reason) = str_at(choice, &["finish_reason"]) {
            self.finish_reason = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else { return };
        if let Some(text) = str_at(delta, &["content"]).filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            emit(StreamEvent::TextDelta { delta: text.to_owned() });
        }
        if let Some(refusal) = str_at(delta, &["refusal"]).filter(|t| !t.is_empty()) {
            self.refusal.push_str(refusal);
            emit(StreamEvent::TextDelta { delta: refusal.to_owned() });
        }
        // vLLM/DeepSeek say `reasoning_content`, OpenRouter/Ollama `reasoning`.
        let reasoning =
            str_at(delta, &["reasoning_content"]).or_else(|| str_at(delta, &["reasoning"]));
        if let Some(reasoning) = reasoning.filter(|t| !t.is_empty()) {
            emit(StreamEvent::ReasoningDelta { delta: reasoning.to_owned() });
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array).map(Vec::as_slice);
        for call in calls.unwrap_or_default() {
            self.call_delta(call, emit);
        }
    }

    fn call_delta(&mut self, delta: &Value, emit: &mut dyn FnMut(StreamEvent)) {
        let id = str_at(delta, &["id"]).filter(|id| !id.is_empty());
        // Some servers omit `index`: a new id starts a call, else continue.
        let index = match delta.get("index").and_then(Value::as_u64) {
            Some(index) => index,
            None => match (id, self.calls.last()) {
                (Some(id), Some(last)) if last.id.as_deref() != Some(id) => {
                    last.index.saturating_add(1)
                }
                (_, Some(last)) => last.index,
                (_, None) => 0,
            },
        };
        let position = match self.calls.iter().position(|call| call.index == index) {
            Some(position) => position,
            None => {
                self.calls.push(PartialCall {
                    index,
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        };
        let Some(call) = self.calls.get_mut(position) else { return };
        let first = call.id.is_none() && call.name.is_empty();
        if let (None, Some(id)) = (&call.id, id) {
            call.id = Some(id.to_owned());
        }
        // The name comes once; servers that repeat it must not double it.
        if let Some(name) = str_at(delta, &["function", "name"]).filter(|_| call.name.is_empty()) {
            call.name = name.to_owned();
        }
        if first {
            emit(StreamEvent::ToolCallStarted { call_id: call.call_id(), name: call.name.clone() });
        }
        if let Some(arguments) = at(delta, &["function", "arguments"]).and_then(Value::as_str) {
            if !arguments.is_empty() {
                call.arguments.push_str(arguments);
                let event = StreamEvent::ToolCallArgumentsDelta {
                    call_id: call.call_id(),
                    delta: arguments.to_owned(),
                };
                emit(event);
            }
        }
    }
}
