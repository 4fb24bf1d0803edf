//! Chat Completions SSE bodies for the benches' mock models: a text answer
//! or a batch of tool calls, each ending with a usage chunk and `[DONE]`.
//!
//! Invariant: the usage a body reports is the one its caller gives, so a
//! mock can report a prompt that grows with the request (as a real server
//! does) and keel's window, compaction and spend see what they would see
//! in a real session. [`prompt_tokens_of`] is the usual estimate (a token
//! per four bytes of request). Included by `#[path]`; not a bench of its own.

#![allow(dead_code)]

use serde_json::{Value, json};

/// The prompt tokens a real server would count for a request body of
/// `request_bytes` bytes (about four bytes a token, at least one).
pub fn prompt_tokens_of(request_bytes: usize) -> u64 {
    (request_bytes as u64 / 4).max(1)
}

fn chunk(delta: Value, finish: Value) -> String {
    let data = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {data}\n\n")
}

fn tail(finish: &str, prompt_tokens: u64) -> String {
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": 20,
            "total_tokens": prompt_tokens + 20}});
    format!("{}data: {usage}\n\ndata: [DONE]\n\n", chunk(json!({}), json!(finish)))
}

/// A text answer.
pub fn answer(text: &str, prompt_tokens: u64) -> String {
    chunk(json!({"role": "assistant", "content": text}), Value::Null) + &tail("stop", prompt_tokens)
}

/// `calls` tool calls in one response, ids `call_{first_id + n}`.
pub fn tool_calls(calls: &[(&str, Value)], first_id: u64, prompt_tokens: u64) -> String {
    let mut out = chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    for (n, (name, args)) in calls.iter().enumerate() {
        out += &chunk(
            json!({"tool_calls": [{"index": n, "id": format!("call_{}", first_id + n as u64),
                "type": "function", "function": {"name": name, "arguments": args.to_string()}}]}),
            Value::Null,
        );
    }
    out + &tail("tool_calls", prompt_tokens)
}
