//! OpenAI Responses API (`POST {base}/responses`): the request body built
//! from a [`ModelRequest`], and the reducer of its event stream.
//!
//! Invariants: requests are stateless (`store: false`), so reasoning items
//! travel back with their `encrypted_content`; Anthropic reasoning is never
//! sent here. Output items are kept by `output_index`; `output_item.done`
//! values win over accumulated deltas (they are equal on a healthy stream).
//! Built-in tool items (web search, apply_patch, local shell) are not ours
//! to run and are skipped: we only offer `function` tools.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::assembler::{at, event_type, parse_data, str_at, u64_at};
use super::error::{ErrorBody, LlmError, classify_stream_error, error_from_json};
use super::sse::SseEvent;
use crate::protocol::{
    Item, ModelRequest, ModelResponse, ReasoningItem, StopReason, StreamEvent, ToolCall, Usage,
};

/// The JSON body of a streaming Responses request.
pub(crate) fn request_body(request: &ModelRequest) -> Value {
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
                "strict": false,
            })
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "instructions": request.instructions,
        "input": request.items.iter().filter_map(input_item).collect::<Vec<_>>(),
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.max_output_tokens {
        body["max_output_tokens"] = json!(max);
    }
    body
}

fn input_item(item: &Item) -> Option<Value> {
    Some(match item {
        Item::User { text } => json!({
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }),
        Item::Assistant { text } => json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }),
        Item::Reasoning(reasoning) => return reasoning_item(reasoning),
        Item::ToolCall(call) => json!({
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }),
        Item::ToolResult(result) => json!({
            "type": "function_call_output",
            "call_id": result.call_id,
            "output": result.output,
        }),
    })
}

fn reasoning_item(reasoning: &ReasoningItem) -> Option<Value> {
    match reasoning {
        // With `store: false` the server cannot look a reasoning item up by
        // id, so one without its encrypted content would be rejected.
        ReasoningItem::OpenAi { id, summary, encrypted_content: Some(encrypted) } => Some(json!({
            "type": "reasoning",
            "id": id,
            "summary": summary
                .iter()
                .map(|text| json!({"type": "summary_text", "text": text}))
                .collect::<Vec<_>>(),
            "encrypted_content": encrypted,
        })),
        ReasoningItem::OpenAi { encrypted_content: None, .. }
        | ReasoningItem::AnthropicThinking { .. }
        | ReasoningItem::AnthropicRedacted { .. } => None,
    }
}

/// One output item while it streams in.
#[derive(Debug)]
enum Output {
    Message {
        text: String,
    },
    Reasoning {
        id: String,
        summary: Vec<String>,
        encrypted: Option<String>,
    },
    Call {
        item_id: String,
        call_id: String,
        name: String,
        arguments: String,
    },
    /// Built-in tool items and anything new: displayed by nobody, skipped.
    Other,
}

impl Output {
    fn from_item(item: &Value) -> Self {
        let text = |key: &str| str_at(item, &[key]).unwrap_or_default().to_owned();
        match str_at(item, &["type"]) {
            Some("message") => Output::Message { text: message_text(item) },
            Some("reasoning") => Output::Reasoning {
                id: text("id"),
                summary: item
                    .get("summary")
                    .and_then(Value::as_array)
                    .map(|parts| parts.iter().map(|p| text_of(p, "text")).collect())
                    .unwrap_or_default(),
                encrypted: str_at(item, &["encrypted_content"]).map(str::to_owned),
            },
            Some("function_call") => Output::Call {
                item_id: text("id"),
                call_id: text("call_id"),
                name: text("name"),
                arguments: text("arguments"),
            },
            other => {
                tracing::debug!(item_type = ?other, "skipping a responses output item");
                Output::Other
            }
        }
    }
}

impl Output {
    /// This (final) item, with the streamed value where it has none.
    fn keeping_streamed(self, streamed: Output) -> Output {
        let or = |value: String, streamed: Option<String>| match streamed {
            Some(old) if value.is_empty() => old,
            Some(_) | None => value,
        };
        match self {
            Output::Message { text } => Output::Message { text: or(text, streamed.into_text()) },
            Output::Reasoning { id, summary, encrypted } => {
                let summary = match streamed {
                    Output::Reasoning { summary: old, .. } if summary.is_empty() => old,
                    Output::Reasoning { .. }
                    | Output::Message { .. }
                    | Output::Call { .. }
                    | Output::Other => summary,
                };
                Output::Reasoning { id, summary, encrypted }
            }
            Output::Call { item_id, call_id, name, arguments } => Output::Call {
                item_id,
                call_id,
                name,
                arguments: or(arguments, streamed.into_text()),
            },
            Output::Other => Output::Other,
        }
    }

    /// The streamed text of a message or the arguments of a call.
    fn into_text(self) -> Option<String> {
        match self {
            Output::Message { text } => Some(text),
            Output::Call { arguments, .. } => Some(arguments),
            Output::Reasoning { .. } | Output::Other => None,
        }
    }
}

fn text_of(value: &Value, key: &str) -> String {
    str_at(value, &[key]).unwrap_or_default().to_owned()
}

/// All `output_text` (and `refusal`) parts of a message item, joined.
fn message_text(item: &Value) -> String {
    let parts = item.get("content").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
    parts
        .iter()
        .filter_map(|part| str_at(part, &["text"]).or_else(|| str_at(part, &["refusal"])))
        .collect()
}

/// How the response ended, once it did.
#[derive(Debug)]
enum Outcome {
    Completed,
    Incomplete(Option<String>),
}

/// Reduces a Responses event stream.
#[derive(Debug, Default)]
pub(crate) struct ResponsesAssembler {
    outputs: BTreeMap<u64, Output>,
    response_id: Option<String>,
    usage: Usage,
    outcome: Option<Outcome>,
    refused: bool,
}

impl ResponsesAssembler {
    pub fn feed(
        &mut self,
        event: &SseEvent,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), LlmError> {
        let data = parse_data(event)?;
        let index = data.get("output_index").and_then(Value::as_u64);
        let delta = str_at(&data, &["delta"]).unwrap_or_default();
        match event_type(event, &data) {
            "response.created" | "response.in_progress" => self.note_response(&data),
            "response.output_item.added" | "response.output_item.done" => {
                let item = data.get("item").unwrap_or(&Value::Null);
                self.put_item(index.unwrap_or(self.outputs.len() as u64), item, emit);
            }
            "response.output_text.delta" => self.push_text(index, delta, emit),
            "response.refusal.delta" => {
                self.refused = true;
                self.push_text(index, delta, emit);
            }
            "response.function_call_arguments.delta" => self.push_arguments(index, delta, emit),
            "response.function_call_arguments.done" => {
                if let Some(Output::Call { arguments, .. }) = self.output(index) {
                    if let Some(done) = str_at(&data, &["arguments"]) {
                        *arguments = done.to_owned();
                    }
                }
            }
            "response.reasoning_summary_text.delta" => {
                let slot = u64_at(&data, &["summary_index"]) as usize;
                self.push_summary(index, slot, delta, false);
                emit(StreamEvent::ReasoningDelta { delta: delta.to_owned() });
            }
            "response.reasoning_summary_text.done" => {
                let slot = u64_at(&data, &["summary_index"]) as usize;
                let text = str_at(&data, &["text"]).unwrap_or_default();
                self.push_summary(index, slot, text, true);
            }
            "response.reasoning_text.delta" => {
                emit(StreamEvent::ReasoningDelta { delta: delta.to_owned() });
            }
            "response.completed" => self.end(&data, Outcome::Completed),
            "response.incomplete" => {
                let reason = str_at(&data, &["response", "incomplete_details", "reason"]);
                self.end(&data, Outcome::Incomplete(reason.map(str::to_owned)));
            }
            "response.failed" => return Err(failure(at(&data, &["response", "error"]))),
            "error" => return Err(failure(Some(&data))),
            _ => {}
        }
        Ok(())
    }

    pub fn is_complete(&self) -> bool {
        self.outcome.is_some()
    }

    pub fn finish(self) -> Result<ModelResponse, LlmError> {
        let Some(outcome) = self.outcome else {
            return Err(LlmError::StreamCut { expected: "response.completed" });
        };
        let mut items = Vec::with_capacity(self.outputs.len());
        for output in self.outputs.into_values() {
            match output {
                Output::Message { text } => items.push(Item::Assistant { text }),
                Output::Reasoning { id, summary, encrypted } => {
                    items.push(Item::Reasoning(ReasoningItem::OpenAi {
                        id,
                        summary,
                        encrypted_content: encrypted,
                    }));
                }
                Output::Call { item_id, call_id, name, arguments } => {
                    let item_id = (!item_id.is_empty()).then_some(item_id);
                    items.push(Item::ToolCall(ToolCall { call_id, name, arguments, item_id }));
                }
                Output::Other => {}
            }
        }
        let has_calls = items.iter().any(|item| matches!(item, Item::ToolCall(_)));
        let stop_reason = match outcome {
            Outcome::Incomplete(reason) => match reason.as_deref() {
                Some("content_filter") => StopReason::Refusal,
                Some("max_output_tokens") | None => StopReason::MaxTokens,
                Some(other) => StopReason::Other(other.to_owned()),
            },
            Outcome::Completed if has_calls => StopReason::ToolUse,
            Outcome::Completed if self.refused => StopReason::Refusal,
            Outcome::Completed => StopReason::EndTurn,
        };
        Ok(ModelResponse { items, usage: self.usage, stop_reason, response_id: self.response_id })
    }

    fn note_response(&mut self, data: &Value) {
        if let Some(id) = str_at(data, &["response", "id"]) {
            self.response_id = Some(id.to_owned());
        }
    }

    fn end(&mut self, data: &Value, outcome: Outcome) {
        self.note_response(data);
        if let Some(usage) = at(data, &["response", "usage"]).filter(|u| u.is_object()) {
            self.usage = Usage {
                input_tokens: u64_at(usage, &["input_tokens"]),
                output_tokens: u64_at(usage, &["output_tokens"]),
                cached_input_tokens: u64_at(usage, &["input_tokens_details", "cached_tokens"]),
                reasoning_tokens: u64_at(usage, &["output_tokens_details", "reasoning_tokens"]),
            };
        }
        self.outcome = Some(outcome);
    }

    /// `output_item.added` creates the item; `.done` replaces it, keeping
    /// streamed values the final item lacks.
    fn put_item(&mut self, index: u64, item: &Value, emit: &mut dyn FnMut(StreamEvent)) {
        let new = Output::from_item(item);
        let merged = match self.outputs.remove(&index) {
            Some(streamed) => new.keeping_streamed(streamed),
            None => {
                if let Output::Call { call_id, name, .. } = &new {
                    let event = StreamEvent::ToolCallStarted {
                        call_id: call_id.clone(),
                        name: name.clone(),
                    };
                    emit(event);
                }
                new
            }
        };
        self.outputs.insert(index, merged);
    }

    fn output(&mut self, index: Option<u64>) -> Option<&mut Output> {
        self.outputs.get_mut(&index?)
    }

    fn push_text(&mut self, index: Option<u64>, delta: &str, emit: &mut dyn FnMut(StreamEvent)) {
        // Only text that lands in a message is shown, so the deltas always
        // add up to the response's text.
        let Some(index) = index else { return };
        let output = self.outputs.entry(index).or_insert(Output::Message { text: String::new() });
        if let Output::Message { text } = output {
            text.push_str(delta);
            emit(StreamEvent::TextDelta { delta: delta.to_owned() });
        }
    }

    fn push_arguments(
        &mut self,
        index: Option<u64>,
        delta: &str,
        emit: &mut dyn FnMut(StreamEvent),
    ) {
        if let Some(Output::Call { call_id, arguments, .. }) = self.output(index) {
            arguments.push_str(delta);
            emit(StreamEvent::ToolCallArgumentsDelta {
                call_id: call_id.clone(),
                delta: delta.to_owned(),
            });
        }
    }

    fn push_summary(&mut self, index: Option<u64>, slot: usize, text: &str, replace: bool) {
        if let Some(Output::Reasoning { summary, .. }) = self.output(index) {
            // Indexes come from the server: grow only one slot at a time.
            if slot > summary.len() {
                return;
            }
            if slot == summary.len() {
                summary.push(String::new());
            }
            if let Some(part) = summary.get_mut(slot) {
                if replace {
                    *part = text.to_owned();
                } else {
                    part.push_str(text);
                }
            }
        }
    }
}

/// The error of an `error` event or of `response.failed`.
fn failure(error: Option<&Value>) -> LlmError {
    let body = error.and_then(error_from_json).unwrap_or_else(|| ErrorBody {
        message: "the response failed without an error message".to_owned(),
        ..ErrorBody::default()
    });
    classify_stream_error(body)
}
