//! Anthropic Messages (`POST {base}/messages`): the request body and the
//! reducer of its event stream.
//!
//! Invariants: messages strictly alternate user/assistant (adjacent
//! same-role messages are merged); thinking and redacted-thinking blocks go
//! back byte-for-byte; tool results travel as `tool_result` blocks of a user
//! message; images are `image` blocks (base64 source) of a user message or
//! of a `tool_result`'s content. Server-run tools (`server_tool_use`, `mcp_tool_use`) and their
//! result blocks are not client calls and are skipped. A tool call's
//! `arguments` is the exact JSON the model streamed (`{}` when it streamed
//! nothing), even when it never closed.
//!
//! Usage: `input_tokens` is the whole prompt (Anthropic's uncached input
//! plus cache reads and cache writes), matching OpenAI's meaning;
//! `cached_input_tokens` is the cache reads, `cache_write_tokens` the
//! writes. Requests carry `cache_control` breakpoints
//! (`cache_breakpoints`). With `[provider] strict_tools` each tool with a
//! strict form (`protocol::strict_schema`) goes in it with `strict: true`,
//! up to [`MAX_STRICT_TOOLS`]; the others carry no `strict` field.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::cache_breakpoints;
use super::classify::{classify_stream_error, error_from_json};
use super::error::LlmError;
use super::json::{event_type, parse_data, str_at};
use super::sse::SseEvent;
use super::{WireOptions, image_parts};
use crate::protocol::strict_schema::StrictDialect;
use crate::protocol::{
    ImagePart, Item, ModelRequest, ModelResponse, ReasoningItem, StopReason, StreamEvent, ToolCall,
    Usage,
};

/// Most tools one request may mark strict (Anthropic's documented limit);
/// later ones go as they are.
use crate::protocol::strict_schema::MAX_ANTHROPIC_STRICT_TOOLS as MAX_STRICT_TOOLS;

/// `max_tokens` is required by the API; this is used when the request has none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 16_384;

/// The JSON body of a streaming Messages request. Keys follow the cache
/// prefix order (tools, system, messages), so the bytes of two requests
/// agree as far as their cached prefixes do.
pub(crate) fn request_body(request: &ModelRequest, options: &WireOptions<'_>) -> Value {
    let ttl = options.profile.cache_ttl;
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "stream": true,
    });
    if !request.tools.is_empty() {
        let mut strict_count = 0;
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                // Strict only for the first tools: Anthropic caps a
                // request's strict tools.
                let strict = (strict_count < MAX_STRICT_TOOLS)
                    .then(|| options.strict_parameters(tool, StrictDialect::Anthropic))
                    .flatten();
                let mut entry = json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": strict.as_ref().unwrap_or(&tool.parameters),
                });
                if strict.is_some() {
                    strict_count += 1;
                    entry["strict"] = json!(true);
                }
                entry
            })
            .collect();
        cache_breakpoints::mark_tools(&mut tools, ttl);
        body["tools"] = Value::Array(tools);
    }
    if !request.instructions.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": request.instructions,
            "cache_control": cache_breakpoints::cache_control(ttl),
        }]);
    }
    let mut messages = messages(&request.items, options);
    cache_breakpoints::mark_messages(&mut messages, ttl);
    body["messages"] = Value::Array(messages);
    body
}

fn messages(items: &[Item], options: &WireOptions<'_>) -> Vec<Value> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for item in items {
        let (role, new_blocks) = match item {
            Item::User { text, images } => ("user", user_blocks(text, images, options)),
            other => match block(other, options) {
                Some((role, block)) => (role, vec![block]),
                None => continue,
            },
        };
        if new_blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last_role, blocks)) if *last_role == role => blocks.extend(new_blocks),
            _ => out.push((role, new_blocks)),
        }
    }
    out.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect()
}

/// A user message's text (unless empty: the API rejects empty text
/// blocks) and its images.
fn user_blocks(text: &str, images: &[ImagePart], options: &WireOptions<'_>) -> Vec<Value> {
    let text = (!text.is_empty()).then(|| json!({"type": "text", "text": text}));
    text.into_iter()
        .chain(images.iter().map(|image| image_parts::anthropic_block(image, options)))
        .collect()
}

/// The content block an item becomes, with the role of its message.
fn block(item: &Item, options: &WireOptions<'_>) -> Option<(&'static str, Value)> {
    Some(match item {
        // The API rejects empty text blocks.
        Item::Context { text, .. } if text.is_empty() => return None,
        Item::Assistant { text } if text.is_empty() => return None,
        Item::User { text, .. } | Item::Context { text, .. } => {
            ("user", json!({"type": "text", "text": text}))
        }
        Item::Assistant { text } => ("assistant", json!({"type": "text", "text": text})),
        Item::Reasoning(ReasoningItem::AnthropicThinking {
            thinking,
            signature: Some(signature),
        }) => {
            ("assistant", json!({"type": "thinking", "thinking": thinking, "signature": signature}))
        }
        Item::Reasoning(ReasoningItem::AnthropicRedacted { data }) => {
            ("assistant", json!({"type": "redacted_thinking", "data": data}))
        }
        // Unsigned thinking would be rejected; other protocols' reasoning
        // is not ours.
        Item::Reasoning(ReasoningItem::AnthropicThinking { signature: None, .. })
        | Item::Reasoning(ReasoningItem::OpenAi { .. } | ReasoningItem::Chat { .. }) => {
            return None;
        }
        Item::ToolCall(call) => {
            // `input` must be an object; arguments that are not one (the
            // model wrote invalid JSON) go back as `{}`: the tool result
            // already told the model what was wrong.
            let input = serde_json::from_str::<Value>(&call.arguments)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            (
                "assistant",
                json!({"type": "tool_use", "id": call.call_id, "name": call.name, "input": input}),
            )
        }
        Item::ToolResult(result) => {
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": result.call_id,
                "content": result.output,
            });
            if !result.images.is_empty() {
                let mut content = vec![json!({"type": "text", "text": result.output})];
                content.extend(
                    result.images.iter().map(|image| image_parts::anthropic_block(image, options)),
                );
                block["content"] = Value::Array(content);
            }
            // `false` is the API's default: leaving it out saves tokens
            // on every result the history carries.
            if result.is_error {
                block["is_error"] = Value::Bool(true);
            }
            ("user", block)
        }
    })
}

/// One content block while it streams in.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking {
        thinking: String,
        signature: Option<String>,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// Server-run tools, their results, and block types we do not know.
    Skipped,
}

/// Token counts as Anthropic reports them; later non-null values win.
#[derive(Debug, Default)]
struct RawUsage {
    input: u64,
    cache_read: u64,
    cache_write: u64,
    output: u64,
}

impl RawUsage {
    fn update(&mut self, usage: &Value) {
        let set = |key: &str, slot: &mut u64| {
            if let Some(value) = usage.get(key).and_then(Value::as_u64) {
                *slot = value;
            }
        };
        set("input_tokens", &mut self.input);
        set("cache_read_input_tokens", &mut self.cache_read);
        set("cache_creation_input_tokens", &mut self.cache_write);
        set("output_tokens", &mut self.output);
    }
}

/// Reduces a Messages event stream.
#[derive(Debug, Default)]
pub(crate) struct AnthropicAssembler {
    response_id: Option<String>,
    blocks: BTreeMap<u64, Block>,
    usage: RawUsage,
    stop_reason: Option<String>,
    done: bool,
}

impl AnthropicAssembler {
    pub fn feed(
        &mut self,
        event: &SseEvent,
        emit: &mut dyn FnMut(StreamEvent),
    ) -> Result<(), LlmError> {
        let data = parse_data(event)?;
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event_type(event, &data) {
            "message_start" => {
                let message = data.get("message").unwrap_or(&Value::Null);
                self.response_id = str_at(message, &["id"]).map(str::to_owned);
                if let Some(usage) = message.get("usage") {
                    self.usage.update(usage);
                }
            }
            "content_block_start" => {
                let start = data.get("content_block").unwrap_or(&Value::Null);
                self.start_block(index, start, emit);
            }
            "content_block_delta" => {
                let delta = data.get("delta").unwrap_or(&Value::Null);
                self.delta(index, delta, emit);
            }
            "message_delta" => {
                if let Some(reason) = str_at(&data, &["delta", "stop_reason"]) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(usage) = data.get("usage") {
                    self.usage.update(usage);
                }
            }
            "message_stop" => self.done = true,
            "error" => {
                return Err(classify_stream_error(error_from_json(&data).unwrap_or_default()));
            }
            _ => {} // ping, content_block_stop, and anything new
        }
        Ok(())
    }

    pub fn is_complete(&self) -> bool {
        self.done
    }

    pub fn finish(self) -> Result<ModelResponse, LlmError> {
        if !self.done {
            return Err(LlmError::StreamCut { expected: "message_stop" });
        }
        let mut items: Vec<Item> = Vec::with_capacity(self.blocks.len());
        for block in self.blocks.into_values() {
            match block {
                Block::Text(text) => match items.last_mut() {
                    // Citation-split answers arrive as many text blocks.
                    Some(Item::Assistant { text: previous }) => previous.push_str(&text),
                    _ => items.push(Item::Assistant { text }),
                },
                Block::Thinking { thinking, signature } => {
                    items.push(Item::Reasoning(ReasoningItem::AnthropicThinking {
                        thinking,
                        signature,
                    }));
                }
                Block::Redacted(data) => {
                    items.push(Item::Reasoning(ReasoningItem::AnthropicRedacted { data }));
                }
                Block::ToolUse { id, name, json } => {
                    let arguments = if json.is_empty() { "{}".to_owned() } else { json };
                    items.push(Item::ToolCall(ToolCall {
                        call_id: id,
                        name,
                        arguments,
                        item_id: None,
                        provider_data: None,
                    }));
                }
                Block::Skipped => {}
            }
        }
        let has_calls = items.iter().any(|item| matches!(item, Item::ToolCall(_)));
        let stop_reason = match self.stop_reason.as_deref() {
            Some("end_turn") | Some("stop_sequence") => StopReason::EndTurn,
            Some("tool_use") => StopReason::ToolUse,
            Some("max_tokens") | Some("model_context_window_exceeded") => StopReason::MaxTokens,
            Some("refusal") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_owned()),
            None if has_calls => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        let raw = self.usage;
        let usage = Usage {
            input_tokens: raw.input.saturating_add(raw.cache_read).saturating_add(raw.cache_write),
            output_tokens: raw.output,
            cached_input_tokens: raw.cache_read,
            reasoning_tokens: 0,
            cache_write_tokens: raw.cache_write,
        };
        Ok(ModelResponse { items, usage, stop_reason, response_id: self.response_id })
    }

    fn start_block(&mut self, index: u64, start: &Value, emit: &mut dyn FnMut(StreamEvent)) {
        let text = |key: &str| str_at(start, &[key]).unwrap_or_default().to_owned();
        let block = match str_at(start, &["type"]) {
            Some("text") => {
                let initial = text("text");
                if !initial.is_empty() {
                    emit(StreamEvent::TextDelta { delta: initial.clone() });
                }
                Block::Text(initial)
            }
            Some("thinking") => Block::Thinking {
                thinking: text("thinking"),
                signature: str_at(start, &["signature"])
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned),
            },
            Some("redacted_thinking") => Block::Redacted(text("data")),
            Some("tool_use") => {
                let (id, name) = (text("id"), text("name"));
                emit(StreamEvent::ToolCallStarted { call_id: id.clone(), name: name.clone() });
                Block::ToolUse { id, name, json: String::new() }
            }
            other => {
                tracing::debug!(block_type = ?other, "skipping an anthropic content block");
                Block::Skipped
            }
        };
        self.blocks.insert(index, block);
    }

    fn delta(&mut self, index: u64, delta: &Value, emit: &mut dyn FnMut(StreamEvent)) {
        let Some(block) = self.blocks.get_mut(&index) else {
            tracing::debug!(index, "content_block_delta for a block that never started");
            return;
        };
        let piece = |key: &str| str_at(delta, &[key]).unwrap_or_default();
        // Other delta kinds (citations, server-tool input) are not kept.
        let kind = str_at(delta, &["type"]).unwrap_or_default();
        match block {
            Block::Text(text) if kind == "text_delta" => {
                text.push_str(piece("text"));
                emit(StreamEvent::TextDelta { delta: piece("text").to_owned() });
            }
            Block::Thinking { thinking, .. } if kind == "thinking_delta" => {
                thinking.push_str(piece("thinking"));
                emit(StreamEvent::ReasoningDelta { delta: piece("thinking").to_owned() });
            }
            Block::Thinking { signature, .. } if kind == "signature_delta" => {
                signature.get_or_insert_with(String::new).push_str(piece("signature"));
            }
            Block::ToolUse { id, json, .. } if kind == "input_json_delta" => {
                let partial = piece("partial_json");
                json.push_str(partial);
                if !partial.is_empty() {
                    let event = StreamEvent::ToolCallArgumentsDelta {
                        call_id: id.clone(),
                        delta: partial.to_owned(),
                    };
                    emit(event);
                }
            }
            Block::Text(_) | Block::Thinking { .. } | Block::ToolUse { .. } => {}
            Block::Redacted(_) | Block::Skipped => {}
        }
    }
}
