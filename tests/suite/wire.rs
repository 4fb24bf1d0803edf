//! Real-shaped SSE bodies for the three wire protocols, so tests can script
//! a model's trajectory. Arguments are split into several deltas, as real
//! models stream them.

use serde_json::{Value, json};

/// Which protocol a scripted step is rendered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Responses,
    Chat,
    Anthropic,
}

impl Wire {
    pub fn provider(self) -> &'static str {
        match self {
            Wire::Responses => "openai",
            Wire::Chat => "openai-chat",
            Wire::Anthropic => "anthropic",
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Wire::Responses => "/v1/responses",
            Wire::Chat => "/v1/chat/completions",
            Wire::Anthropic => "/v1/messages",
        }
    }
}

/// One model turn of a script.
#[derive(Debug, Clone)]
pub enum Step {
    /// Tool calls (name, JSON arguments as a string), optionally after text.
    Calls { text: Option<String>, calls: Vec<(String, String)> },
    /// A final text answer.
    Answer(String),
}

pub fn call(name: &str, args: Value) -> (String, String) {
    (name.to_owned(), args.to_string())
}

fn pieces(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let size = chars.len().div_ceil(3).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn event(name: Option<&str>, data: &Value) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// The usage a scripted response reports: the whole prompt (`input`), the
/// part read from the cache, and the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    pub input: u64,
    pub cached: u64,
    pub output: u64,
}

impl Default for Tokens {
    fn default() -> Self {
        Self { input: 100, cached: 40, output: 20 }
    }
}

/// Renders `step` (the `index`-th response) as an SSE body.
pub fn render(wire: Wire, step: &Step, index: usize) -> String {
    render_with(wire, step, index, Tokens::default())
}

/// [`render`] reporting `tokens` as the response's usage.
pub fn render_with(wire: Wire, step: &Step, index: usize, tokens: Tokens) -> String {
    match wire {
        Wire::Responses => responses(step, index, tokens),
        Wire::Chat => chat(step, index, tokens),
        Wire::Anthropic => anthropic(step, index, tokens),
    }
}

fn split(step: &Step) -> (Option<String>, Vec<(String, String)>) {
    match step {
        Step::Calls { text, calls } => (text.clone(), calls.clone()),
        Step::Answer(text) => (Some(text.clone()), Vec::new()),
    }
}

fn responses(step: &Step, index: usize, tokens: Tokens) -> String {
    let (text, calls) = split(step);
    let id = format!("resp_{index}");
    let mut out = event(
        Some("response.created"),
        &json!({"type": "response.created", "response": {"id": id, "status": "in_progress", "output": []}}),
    );
    let mut output = Vec::new();
    let mut position = 0;
    if let Some(text) = text {
        let item_id = format!("msg_{index}");
        out += &event(
            Some("response.output_item.added"),
            &json!({"type": "response.output_item.added", "output_index": position, "item": {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}}),
        );
        for piece in pieces(&text) {
            out += &event(
                Some("response.output_text.delta"),
                &json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": position, "content_index": 0, "delta": piece}),
            );
        }
        let item = json!({"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]});
        out += &event(
            Some("response.output_item.done"),
            &json!({"type": "response.output_item.done", "output_index": position, "item": item}),
        );
        output.push(item);
        position += 1;
    }
    for (n, (name, args)) in calls.iter().enumerate() {
        let item_id = format!("fc_{index}_{n}");
        let call_id = format!("call_{index}_{n}");
        out += &event(
            Some("response.output_item.added"),
            &json!({"type": "response.output_item.added", "output_index": position, "item": {"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": "", "status": "in_progress"}}),
        );
        for piece in pieces(args) {
            out += &event(
                Some("response.function_call_arguments.delta"),
                &json!({"type": "response.function_call_arguments.delta", "item_id": item_id, "output_index": position, "delta": piece}),
            );
        }
        out += &event(
            Some("response.function_call_arguments.done"),
            &json!({"type": "response.function_call_arguments.done", "item_id": item_id, "output_index": position, "arguments": args}),
        );
        let item = json!({"type": "function_call", "id": item_id, "call_id": call_id, "name": name, "arguments": args, "status": "completed"});
        out += &event(
            Some("response.output_item.done"),
            &json!({"type": "response.output_item.done", "output_index": position, "item": item}),
        );
        output.push(item);
        position += 1;
    }
    out += &event(
        Some("response.completed"),
        &json!({"type": "response.completed", "response": {"id": id, "status": "completed", "output": output, "usage": {"input_tokens": tokens.input, "input_tokens_details": {"cached_tokens": tokens.cached}, "output_tokens": tokens.output, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": tokens.input + tokens.output}}}),
    );
    out
}

fn chat(step: &Step, index: usize, tokens: Tokens) -> String {
    let (text, calls) = split(step);
    let id = format!("chatcmpl-{index}");
    let chunk = |delta: Value, finish: Value| {
        event(
            None,
            &json!({"id": id, "object": "chat.completion.chunk", "model": "mock", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let mut out = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    if let Some(text) = text {
        for piece in pieces(&text) {
            out += &chunk(json!({"content": piece}), Value::Null);
        }
    }
    for (n, (name, args)) in calls.iter().enumerate() {
        out += &chunk(
            json!({"tool_calls": [{"index": n, "id": format!("call_{index}_{n}"), "type": "function", "function": {"name": name, "arguments": ""}}]}),
            Value::Null,
        );
        for piece in pieces(args) {
            out += &chunk(
                json!({"tool_calls": [{"index": n, "function": {"arguments": piece}}]}),
                Value::Null,
            );
        }
    }
    let finish = if calls.is_empty() { "stop" } else { "tool_calls" };
    out += &chunk(json!({}), json!(finish));
    out += &event(
        None,
        &json!({"id": id, "object": "chat.completion.chunk", "model": "mock", "choices": [], "usage": {"prompt_tokens": tokens.input, "completion_tokens": tokens.output, "total_tokens": tokens.input + tokens.output, "prompt_tokens_details": {"cached_tokens": tokens.cached}}}),
    );
    out += "data: [DONE]\n\n";
    out
}

fn anthropic(step: &Step, index: usize, tokens: Tokens) -> String {
    let (text, calls) = split(step);
    let mut out = event(
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": format!("msg_{index}"), "type": "message", "role": "assistant", "model": "mock", "content": [], "stop_reason": null, "usage": {"input_tokens": tokens.input - tokens.cached, "cache_read_input_tokens": tokens.cached, "output_tokens": 1}}}),
    );
    let mut block = 0;
    if let Some(text) = text {
        out += &event(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": block, "content_block": {"type": "text", "text": ""}}),
        );
        for piece in pieces(&text) {
            out += &event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": block, "delta": {"type": "text_delta", "text": piece}}),
            );
        }
        out += &event(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": block}),
        );
        block += 1;
    }
    for (n, (name, args)) in calls.iter().enumerate() {
        out += &event(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": block, "content_block": {"type": "tool_use", "id": format!("toolu_{index}_{n}"), "name": name, "input": {}}}),
        );
        for piece in pieces(args) {
            out += &event(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": block, "delta": {"type": "input_json_delta", "partial_json": piece}}),
            );
        }
        out += &event(
            Some("content_block_stop"),
            &json!({"type": "content_block_stop", "index": block}),
        );
        block += 1;
    }
    let stop = if calls.is_empty() { "end_turn" } else { "tool_use" };
    out += &event(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": tokens.output}}),
    );
    out += &event(Some("message_stop"), &json!({"type": "message_stop"}));
    out
}
