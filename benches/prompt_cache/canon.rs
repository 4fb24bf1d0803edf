//! A request body as the provider's prompt cache sees it: a sequence of
//! blocks in the order the provider reads them (tools, then the
//! instructions, then the conversation), each block as canonical JSON.
//! Request `n` can be served from the cache up to the longest run of
//! leading blocks it shares with an earlier request.
//!
//! Shared by the caching bench (`benches/prompt_cache.rs`) and the test
//! that the prefix holds (`tests/suite/context_prefix.rs`). Anthropic
//! `cache_control` markers are taken out of the blocks (they do not change
//! what is cached, only where) and kept as breakpoint flags; a Messages
//! message is split into its content blocks, so a block appended to the
//! last user message extends the prefix as a new message would, and a
//! string content counts as the one text block it stands for.

use serde_json::Value;

/// The wire protocol of a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Responses,
    Chat,
    Anthropic,
}

impl Protocol {
    /// The protocol of a request to `path` (`…/responses`,
    /// `…/chat/completions`, `…/messages`).
    pub fn from_path(path: &str) -> Option<Self> {
        let path = path.trim_end_matches(".json");
        if path.ends_with("responses") {
            Some(Protocol::Responses)
        } else if path.ends_with("completions") {
            Some(Protocol::Chat)
        } else if path.ends_with("messages") {
            Some(Protocol::Anthropic)
        } else {
            None
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Responses => "openai (Responses)",
            Protocol::Chat => "openai-chat",
            Protocol::Anthropic => "anthropic",
        }
    }
}

/// One cacheable unit of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// Canonical JSON, `cache_control` removed.
    pub text: String,
    /// An Anthropic `cache_control` breakpoint ends here.
    pub breakpoint: bool,
}

fn block(value: &Value) -> Block {
    let mut value = value.clone();
    let breakpoint = strip_cache_control(&mut value);
    Block { text: value.to_string(), breakpoint }
}

/// Removes every `cache_control` key; whether there was one.
fn strip_cache_control(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut found = map.remove("cache_control").is_some();
            for inner in map.values_mut() {
                found |= strip_cache_control(inner);
            }
            found
        }
        Value::Array(items) => {
            items.iter_mut().fold(false, |found, item| strip_cache_control(item) | found)
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => false,
    }
}

fn each(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// The blocks of `body`, in the provider's reading order.
pub fn blocks(protocol: Protocol, body: &Value) -> Vec<Block> {
    let mut out: Vec<Block> = each(&body["tools"]).map(block).collect();
    match protocol {
        Protocol::Responses => {
            if let Some(instructions) = body.get("instructions") {
                out.push(block(&serde_json::json!({ "instructions": instructions })));
            }
            out.extend(each(&body["input"]).map(block));
        }
        Protocol::Chat => out.extend(each(&body["messages"]).map(block)),
        Protocol::Anthropic => {
            match &body["system"] {
                Value::Array(parts) => {
                    out.extend(
                        parts.iter().map(|part| block(&serde_json::json!({ "system": part }))),
                    );
                }
                Value::Null => {}
                text => out.push(block(&serde_json::json!({ "system": text_block(text) }))),
            }
            for message in each(&body["messages"]) {
                let role = &message["role"];
                match &message["content"] {
                    Value::Array(parts) => out.extend(
                        parts
                            .iter()
                            .map(|part| block(&serde_json::json!({ "role": role, "block": part }))),
                    ),
                    text => out.push(block(
                        &serde_json::json!({ "role": role, "block": text_block(text) }),
                    )),
                }
            }
        }
    }
    out
}

/// A string content as the one text block it stands for.
fn text_block(text: &Value) -> Value {
    serde_json::json!({ "type": "text", "text": text })
}

/// How many leading blocks `a` and `b` share.
pub fn shared_prefix(a: &[Block], b: &[Block]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x.text == y.text).count()
}
