//! Anthropic prompt-cache breakpoints (`cache_control`), placed the way
//! Anthropic documents them (docs.claude.com, "Prompt caching"): the cache
//! prefix is tools → system → messages; a breakpoint caches everything up
//! to and including its block; at most 4 per request; a request reads a
//! cached prefix when it has a breakpoint at, or up to 20 blocks after,
//! the end of that prefix; thinking blocks cannot carry one.
//!
//! keel's placement, so each request reads everything the previous one
//! wrote:
//! 1. the last tool (the tool list is fixed for a session);
//! 2. the system prompt (the core instructions, fixed for a session);
//! 3. the end of the last message (the rolling breakpoint: it writes the
//!    whole conversation, which the next request extends);
//! 4. only when the latest step added 16 blocks or more (a wide parallel
//!    batch), the end of the previous request's last message too, so the
//!    previous write stays within the 20-block lookback.
//!
//! Invariants: pure; at most 4 markers; markers never change a block's
//! content, and a block's bytes before its marker are the same with or
//! without it (the marker is the block's last key), so consecutive
//! requests agree byte for byte up to the previous request's last
//! breakpoint.

use serde_json::{Value, json};

use super::profile::CacheTtl;

/// Blocks after the previous request's end from which a second message
/// breakpoint is placed there (Anthropic looks back 20 blocks).
const LOOKBACK_MARGIN: usize = 16;

/// The marker itself.
pub(crate) fn cache_control(ttl: CacheTtl) -> Value {
    match ttl {
        CacheTtl::FiveMinutes => json!({"type": "ephemeral"}),
        CacheTtl::OneHour => json!({"type": "ephemeral", "ttl": "1h"}),
    }
}

/// Marks the last tool definition.
pub(crate) fn mark_tools(tools: &mut [Value], ttl: CacheTtl) {
    if let Some(Value::Object(last)) = tools.last_mut() {
        last.insert("cache_control".into(), cache_control(ttl));
    }
}

/// Marks the end of the conversation and, after a wide step, the end of
/// the previous request. `messages` are `{"role", "content": [blocks]}`.
pub(crate) fn mark_messages(messages: &mut [Value], ttl: CacheTtl) {
    let Some(last) = messages.len().checked_sub(1) else { return };
    let previous = messages[..last]
        .iter()
        .rposition(|message| message["role"] == "assistant")
        .and_then(|assistant| messages[..assistant].iter().rposition(|m| m["role"] == "user"));
    if let Some(previous) = previous {
        let added: usize = messages[previous + 1..].iter().map(|m| blocks(m).len()).sum();
        if added >= LOOKBACK_MARGIN {
            mark_last_block(&mut messages[previous], ttl);
        }
    }
    mark_last_block(&mut messages[last], ttl);
}

fn blocks(message: &Value) -> &[Value] {
    message["content"].as_array().map(Vec::as_slice).unwrap_or_default()
}

/// Marks the message's last block that may carry a marker.
fn mark_last_block(message: &mut Value, ttl: CacheTtl) {
    let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) else { return };
    let cacheable = blocks
        .iter_mut()
        .rev()
        .find(|block| !matches!(block["type"].as_str(), Some("thinking" | "redacted_thinking")));
    if let Some(Value::Object(block)) = cacheable {
        block.insert("cache_control".into(), cache_control(ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(role: &str, blocks: usize) -> Value {
        let content: Vec<Value> =
            (0..blocks).map(|n| json!({"type": "text", "text": format!("{role} {n}")})).collect();
        json!({"role": role, "content": content})
    }

    fn marked(messages: &[Value]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for (m, message) in messages.iter().enumerate() {
            for (b, block) in blocks(message).iter().enumerate() {
                if block.get("cache_control").is_some() {
                    out.push((m, b));
                }
            }
        }
        out
    }

    #[test]
    fn the_end_of_the_conversation_is_marked() {
        let mut messages = vec![message("user", 1), message("assistant", 2), message("user", 2)];
        mark_messages(&mut messages, CacheTtl::FiveMinutes);
        assert_eq!(marked(&messages), vec![(2, 1)]);
        let key_order: Vec<&String> =
            messages[2]["content"][1].as_object().unwrap().keys().collect();
        assert_eq!(key_order.last().map(|k| k.as_str()), Some("cache_control"));
    }

    #[test]
    fn a_wide_step_keeps_the_previous_end_marked() {
        let mut messages = vec![message("user", 1), message("assistant", 9), message("user", 9)];
        mark_messages(&mut messages, CacheTtl::OneHour);
        assert_eq!(marked(&messages), vec![(0, 0), (2, 8)]);
        assert_eq!(messages[0]["content"][0]["cache_control"]["ttl"], "1h");
    }

    #[test]
    fn thinking_blocks_are_never_marked() {
        let mut messages = vec![json!({"role": "assistant", "content": [
            {"type": "text", "text": "a"}, {"type": "thinking", "thinking": "t", "signature": "s"}
        ]})];
        mark_messages(&mut messages, CacheTtl::FiveMinutes);
        assert_eq!(marked(&messages), vec![(0, 0)]);
        mark_messages(&mut [], CacheTtl::FiveMinutes);
    }
}
