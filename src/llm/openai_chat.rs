//! OpenAI-compatible Chat Completions (`POST {base}/chat/completions`, as
//! served by OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, Groq,
//! DeepSeek, Mistral, Together, Azure, Gemini and LiteLLM): the request
//! body and the reducer of its chunk stream.
//!
//! Invariants: the flat history is folded into role messages (consecutive
//! assistant text, reasoning and calls become one assistant message);
//! reasoning items of other protocols are dropped. What the server
//! attached for the next request is sent back verbatim: per-call provider
//! data on each call, message-level data (`MESSAGE_KEYS`) on the assistant
//! message; the reasoning text only as the profile says
//! ([`ReasoningEcho`]). Only choice 0 feeds the response (we never ask for
//! `n > 1`). An assistant message with calls and no text says
//! `"content": ""`, never `null` (servers that validate the request reject
//! `null`). `data: [DONE]` completes the stream; a stream that ends after
//! a `finish_reason` but without `[DONE]` is accepted, one with neither is
//! cut. Error objects inside the stream end it with the provider's message.
//! An unstreamed answer (`[provider] stream = false`, or the client's
//! re-send after an empty stream) goes through the same reducer. Images
//! are `image_url` parts of a user message; a `tool` message holds text
//! only, so a run of tool results is followed by one user message with
//! their images. `function.strict: true` goes only with `[provider]
//! strict_tools`, on each tool with a strict form (`protocol::strict_schema`).

use serde_json::{Map, Value, json};

use super::chat_parts::{CallAssembler, MESSAGE_KEYS, merge_field, usage_of};
use super::classify::{classify_stream_error, stream_error};
use super::error::LlmError;
use super::json::{parse_data, str_at};
use super::profile::{OutputLimitField, ReasoningEcho};
use super::sse::SseEvent;
use super::{WireOptions, image_parts};
use crate::protocol::strict_schema::StrictDialect;
use crate::protocol::{
    Item, ModelRequest, ModelResponse, ReasoningItem, StopReason, StreamEvent, Usage,
};

/// Reduces an unstreamed answer (`"stream": false`): one `chat.completion`
/// object whose choice carries the whole `message`, read by the chunk
/// reducer (which takes `message` for `delta`); it has no `[DONE]`.
pub(crate) fn unstreamed_response(
    body: &str,
    emit: &mut dyn FnMut(StreamEvent),
) -> Result<ModelResponse, LlmError> {
    let value: Value = serde_json::from_str(body).map_err(|err| {
        LlmError::malformed("body", format!("the unstreamed answer is not JSON: {err}"))
    })?;
    if let Some(error) = stream_error(&value) {
        return Err(classify_stream_error(error));
    }
    if !value.get("choices").is_some_and(Value::is_array) {
        return Err(LlmError::malformed("body", "the unstreamed answer has no `choices`"));
    }
    let mut assembler = ChatAssembler::default();
    assembler.feed(&SseEvent { event: "message".to_owned(), data: body.to_owned() }, emit)?;
    assembler.done = true;
    assembler.finish()
}

/// The JSON body of a streaming Chat Completions request.
pub(crate) fn request_body(request: &ModelRequest, options: &WireOptions<'_>) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": messages(request, options),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let strict = options.strict_parameters(tool, StrictDialect::OpenAi);
                let mut function = json!({
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": strict.as_ref().unwrap_or(&tool.parameters),
                });
                // Only with `[provider] strict_tools`: servers that copy
                // the API without strict mode may refuse the field.
                if strict.is_some() {
                    function["strict"] = json!(true);
                }
                json!({"type": "function", "function": function})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        if options.profile.tool_choice_auto {
            body["tool_choice"] = json!("auto");
        }
    }
    if let Some(max) = request.max_output_tokens {
        // Local servers read only the older name; OpenAI's reasoning models
        // refuse it (`ServerProfile::output_limit_field`).
        let field = match options.profile.output_limit_field {
            OutputLimitField::MaxTokens => "max_tokens",
            OutputLimitField::MaxCompletionTokens => "max_completion_tokens",
        };
        body[field] = json!(max);
    }
    if let Some(key) = options.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(schema) = options.answer_schema {
        // Not strict: a script's schema need not meet OpenAI's strict subset.
        body["response_format"] = json!({"type": "json_schema", "json_schema":
            {"name": "final_answer", "schema": schema, "strict": false}});
    }
    body
}

/// The assistant message being folded from consecutive items.
#[derive(Default)]
struct Fold {
    text: String,
    calls: Vec<Value>,
    reasoning: String,
    /// The field the reasoning came in (`reasoning_content`, `reasoning`).
    field: String,
    data: Map<String, Value>,
}

impl Fold {
    fn is_empty(&self) -> bool {
        self.text.is_empty() && self.calls.is_empty()
    }

    /// The message, then a fresh fold; nothing when there is no text and
    /// no call (reasoning alone is never a message).
    fn flush(&mut self, echo: ReasoningEcho, out: &mut Vec<Value>) {
        let fold = std::mem::take(self);
        if fold.is_empty() {
            return;
        }
        let mut message = Map::new();
        message.insert("role".into(), json!("assistant"));
        // `""`, never `null`, beside tool calls: llama-cpp-python's request
        // validation answers HTTP 500 to `null` (its `content` is a string
        // that may be left out), and `""` is what the widely used AI SDK
        // sends every OpenAI-compatible server.
        message.insert("content".into(), json!(fold.text));
        match echo {
            ReasoningEcho::Off => {}
            // DeepSeek answers 400 when a message with calls lacks the
            // field, empty or not (api-docs.deepseek.com/guides/thinking_mode).
            ReasoningEcho::Deepseek if !fold.calls.is_empty() || !fold.reasoning.is_empty() => {
                message.insert("reasoning_content".into(), json!(fold.reasoning));
            }
            ReasoningEcho::Always if !fold.reasoning.is_empty() => {
                let field = if fold.field.is_empty() { "reasoning_content" } else { &fold.field };
                message.insert(field.to_owned(), json!(fold.reasoning));
            }
            ReasoningEcho::Deepseek | ReasoningEcho::Always => {}
        }
        message.extend(fold.data);
        if !fold.calls.is_empty() {
            message.insert("tool_calls".into(), Value::Array(fold.calls));
        }
        out.push(Value::Object(message));
    }
}

fn messages(request: &ModelRequest, options: &WireOptions<'_>) -> Vec<Value> {
    let echo = options.profile.reasoning_echo;
    let mut out = Vec::with_capacity(request.items.len() + 1);
    if !request.instructions.is_empty() {
        out.push(json!({"role": "system", "content": request.instructions}));
    }
    let mut fold = Fold::default();
    // Images of the tool results just sent: a `tool` message holds text
    // only, so they follow the run of results as one user message.
    let mut tool_images: Vec<Value> = Vec::new();
    for item in &request.items {
        if !matches!(item, Item::ToolResult(_)) {
            flush_tool_images(&mut tool_images, &mut out);
        }
        match item {
            Item::Assistant { text } => fold.text.push_str(text),
            Item::ToolCall(call) => {
                let mut value = json!({
                    "id": call.call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                });
                if let (Some(object), Some(data)) = (value.as_object_mut(), &call.provider_data) {
                    object.extend(data.clone());
                }
                fold.calls.push(value);
            }
            Item::Reasoning(ReasoningItem::Chat { text, field, provider_data }) => {
                fold.reasoning.push_str(text);
                if fold.field.is_empty() {
                    fold.field.clone_from(field);
                }
                for (key, value) in provider_data {
                    merge_field(&mut fold.data, key, value);
                }
            }
            Item::Reasoning(
                ReasoningItem::OpenAi { .. }
                | ReasoningItem::AnthropicThinking { .. }
                | ReasoningItem::AnthropicRedacted { .. },
            ) => {} // another protocol's
            Item::User { text: user, images } if !images.is_empty() => {
                fold.flush(echo, &mut out);
                let mut content = vec![json!({"type": "text", "text": user})];
                content.extend(images.iter().map(|image| image_parts::chat_part(image, options)));
                out.push(json!({"role": "user", "content": content}));
            }
            Item::User { text: user, .. } | Item::Context { text: user, .. } => {
                fold.flush(echo, &mut out);
                out.push(json!({"role": "user", "content": user}));
            }
            Item::ToolResult(result) => {
                fold.flush(echo, &mut out);
                out.push(json!({
                    "role": "tool",
                    "tool_call_id": result.call_id,
                    "content": result.output,
                }));
                if !result.images.is_empty() {
                    let intro = format!("The images of tool call {}:", result.call_id);
                    tool_images.push(json!({"type": "text", "text": intro}));
                    tool_images.extend(
                        result.images.iter().map(|image| image_parts::chat_part(image, options)),
                    );
                }
            }
        }
    }
    flush_tool_images(&mut tool_images, &mut out);
    fold.flush(echo, &mut out);
    out
}

/// The user message that carries the images of a run of tool results.
fn flush_tool_images(images: &mut Vec<Value>, out: &mut Vec<Value>) {
    if !images.is_empty() {
        out.push(json!({"role": "user", "content": std::mem::take(images)}));
    }
}

/// Reduces a Chat Completions chunk stream.
#[derive(Debug, Default)]
pub(crate) struct ChatAssembler {
    response_id: Option<String>,
    text: String,
    refusal: String,
    reasoning: String,
    reasoning_field: String,
    message_data: Map<String, Value>,
    calls: CallAssembler,
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
        if let Some(error) = stream_error(&chunk) {
            return Err(classify_stream_error(error));
        }
        if let (None, Some(id)) = (&self.response_id, str_at(&chunk, &["id"])) {
            self.response_id = Some(id.to_owned()).filter(|id| !id.is_empty());
        }
        if let Some(usage) = usage_of(&chunk) {
            self.usage = usage;
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
        if !self.reasoning.is_empty() || !self.message_data.is_empty() {
            items.push(Item::Reasoning(ReasoningItem::Chat {
                text: self.reasoning,
                field: self.reasoning_field,
                provider_data: self.message_data,
            }));
        }
        if !self.text.is_empty() {
            items.push(Item::Assistant { text: self.text });
        }
        if !self.refusal.is_empty() {
            items.push(Item::Assistant { text: self.refusal });
        }
        let has_calls = !self.calls.is_empty();
        items.extend(self.calls.finish().into_iter().map(Item::ToolCall));
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
        // Some proxies send the last piece as a whole `message`.
        let Some(delta) = choice.get("delta").or_else(|| choice.get("message")) else { return };
        match delta.get("content") {
            Some(Value::String(text)) => self.push_text(text, emit),
            // Mistral's reasoning models stream content as typed parts.
            Some(Value::Array(parts)) => {
                for part in parts {
                    match str_at(part, &["type"]) {
                        Some("text") => {
                            self.push_text(str_at(part, &["text"]).unwrap_or_default(), emit)
                        }
                        Some("thinking") => {
                            let pieces = part.get("thinking").and_then(Value::as_array);
                            for piece in pieces.into_iter().flatten() {
                                let text = str_at(piece, &["text"]).unwrap_or_default();
                                self.push_reasoning("reasoning_content", text, emit);
                            }
                        }
                        _ => {}
                    }
                }
            }
            Some(_) | None => {}
        }
        if let Some(refusal) = str_at(delta, &["refusal"]).filter(|t| !t.is_empty()) {
            self.refusal.push_str(refusal);
            emit(StreamEvent::TextDelta { delta: refusal.to_owned() });
        }
        // vLLM/DeepSeek/llama.cpp say `reasoning_content`, OpenRouter,
        // Ollama, Groq and newer vLLM `reasoning`; a server sending both
        // sends the same text twice.
        let reasoning = ["reasoning_content", "reasoning"]
            .into_iter()
            .find_map(|field| Some((field, str_at(delta, &[field]).filter(|t| !t.is_empty())?)));
        if let Some((field, text)) = reasoning {
            self.push_reasoning(field, text, emit);
        }
        for key in MESSAGE_KEYS {
            if let Some(value) = delta.get(key) {
                merge_field(&mut self.message_data, key, value);
            }
        }
        let calls = delta.get("tool_calls").and_then(Value::as_array).map(Vec::as_slice);
        for call in calls.unwrap_or_default() {
            self.calls.delta(call, emit);
        }
    }

    fn push_text(&mut self, text: &str, emit: &mut dyn FnMut(StreamEvent)) {
        if !text.is_empty() {
            self.text.push_str(text);
            emit(StreamEvent::TextDelta { delta: text.to_owned() });
        }
    }

    fn push_reasoning(&mut self, field: &str, text: &str, emit: &mut dyn FnMut(StreamEvent)) {
        if text.is_empty() {
            return;
        }
        if self.reasoning_field.is_empty() {
            self.reasoning_field = field.to_owned();
        }
        self.reasoning.push_str(text);
        emit(StreamEvent::ReasoningDelta { delta: text.to_owned() });
    }
}
