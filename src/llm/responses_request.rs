//! The body of a streaming OpenAI Responses request (`POST {base}/responses`)
//! built from a [`ModelRequest`].
//!
//! Invariants: requests are stateless (`store: false`), so reasoning items
//! travel back with their `encrypted_content`, or with their reasoning
//! text for servers that send text instead (llama.cpp, vLLM), never with
//! neither; other protocols' reasoning is never sent here. The session id
//! goes as `prompt_cache_key` when the profile says so. Images go as
//! `input_image` parts of the user message or of a call's `output`. Tools
//! go `strict: false` unless `[provider] strict_tools` (then each one with a
//! strict form goes in it with `strict: true`: `protocol::strict_schema`).

use serde_json::{Value, json};

use super::{WireOptions, image_parts};
use crate::protocol::strict_schema::StrictDialect;
use crate::protocol::{Item, ModelRequest, ReasoningItem};

/// The JSON body of a streaming Responses request.
pub(crate) fn request_body(request: &ModelRequest, options: &WireOptions<'_>) -> Value {
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|tool| {
            let strict = options.strict_parameters(tool, StrictDialect::OpenAi);
            json!({
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": strict.as_ref().unwrap_or(&tool.parameters),
                "strict": strict.is_some(),
            })
        })
        .collect();
    let mut body = json!({
        "model": request.model,
        "instructions": request.instructions,
        "input": request.items.iter().filter_map(|item| input_item(item, options)).collect::<Vec<_>>(),
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
    if let Some(key) = options.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(schema) = options.answer_schema {
        // Not strict: a script's schema need not meet OpenAI's strict subset.
        body["text"] = json!({"format": {"type": "json_schema", "name": "final_answer",
            "schema": schema, "strict": false}});
    }
    body
}

fn input_item(item: &Item, options: &WireOptions<'_>) -> Option<Value> {
    Some(match item {
        Item::User { text, images } => {
            let mut content = vec![json!({"type": "input_text", "text": text})];
            content.extend(images.iter().map(|image| image_parts::responses_part(image, options)));
            json!({"type": "message", "role": "user", "content": content})
        }
        Item::Context { text, .. } => json!({
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
        // With images the output is a list of content parts (text first).
        Item::ToolResult(result) if !result.images.is_empty() => {
            let mut output = vec![json!({"type": "input_text", "text": result.output})];
            output.extend(
                result.images.iter().map(|image| image_parts::responses_part(image, options)),
            );
            json!({"type": "function_call_output", "call_id": result.call_id, "output": output})
        }
        Item::ToolResult(result) => json!({
            "type": "function_call_output",
            "call_id": result.call_id,
            "output": result.output,
        }),
    })
}

fn reasoning_item(reasoning: &ReasoningItem) -> Option<Value> {
    match reasoning {
        ReasoningItem::OpenAi { id, summary, encrypted_content, content } => {
            let encrypted = encrypted_content.as_deref().filter(|blob| !blob.is_empty());
            // With `store: false` the server cannot look a reasoning item
            // up by id: one with neither its encrypted content nor its text
            // would be rejected (llama.cpp: "item['content'] is not an array").
            if encrypted.is_none() && content.is_empty() {
                return None;
            }
            let mut item = json!({
                "type": "reasoning",
                "id": id,
                "summary": summary
                    .iter()
                    .map(|text| json!({"type": "summary_text", "text": text}))
                    .collect::<Vec<_>>(),
            });
            if !content.is_empty() {
                let parts: Vec<Value> = content
                    .iter()
                    .map(|text| json!({"type": "reasoning_text", "text": text}))
                    .collect();
                item["content"] = Value::Array(parts);
            }
            if let Some(encrypted) = encrypted {
                item["encrypted_content"] = json!(encrypted);
            }
            Some(item)
        }
        ReasoningItem::AnthropicThinking { .. }
        | ReasoningItem::AnthropicRedacted { .. }
        | ReasoningItem::Chat { .. } => None,
    }
}
