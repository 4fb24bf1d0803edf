//! Request mapping: the exact JSON body each protocol receives for one rich
//! history (reasoning of both vendors, text, two calls, an ok and a failed
//! result, a trailing user turn), captured by a wiremock server.
//!
//! Invariants asserted: each provider replays only its own reasoning kind
//! (OpenAI reasoning with its `encrypted_content`, Anthropic thinking with
//! its signature, redacted data verbatim); tool results refer to their
//! calls; tools carry their schema.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

use super::ProviderKind;
use super::test_support::*;
use crate::protocol::{Item, ModelRequest, ReasoningItem, ToolCall, ToolResult, ToolSpec};

fn schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
}

fn rich_request() -> ModelRequest {
    let call = |id: &str, name: &str, args: &str, item_id: Option<&str>| {
        Item::ToolCall(ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments: args.into(),
            item_id: item_id.map(Into::into),
            provider_data: None,
        })
    };
    ModelRequest {
        model: "test-model".into(),
        instructions: "be brief".into(),
        items: vec![
            Item::user("fix the bug"),
            Item::Reasoning(ReasoningItem::OpenAi {
                id: "rs_1".into(),
                summary: vec!["looked".into()],
                encrypted_content: Some("enc-1".into()),
                content: Vec::new(),
            }),
            // Without encrypted content a stateless request cannot use it.
            Item::Reasoning(ReasoningItem::OpenAi {
                id: "rs_2".into(),
                summary: vec![],
                encrypted_content: None,
                content: Vec::new(),
            }),
            Item::Reasoning(ReasoningItem::AnthropicThinking {
                thinking: "hmm".into(),
                signature: Some("sig-1".into()),
            }),
            Item::Reasoning(ReasoningItem::AnthropicRedacted { data: "opaque".into() }),
            Item::Assistant { text: "Looking.".into() },
            call("call_a", "read_file", r#"{"path":"a.rs"}"#, Some("fc_a")),
            call("call_b", "read_file", "{not json", None),
            Item::ToolResult(ToolResult::ok("call_a", "fn main() {}")),
            Item::ToolResult(ToolResult::error("call_b", "invalid arguments")),
            Item::user("also check tests"),
            Item::Assistant { text: "Done.".into() },
        ],
        tools: vec![ToolSpec {
            name: "read_file".into(),
            description: "Read a file".into(),
            parameters: schema(),
        }],
        max_output_tokens: Some(1000),
    }
}

/// Sends `rich_request` and returns the body the server received.
async fn received_body(kind: ProviderKind, stream: String) -> Value {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(endpoint(kind)))
        .respond_with(sse_template(stream))
        .mount(&server)
        .await;
    let (result, _) = run(config(kind, &server, 0), &rich_request()).await;
    result.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    serde_json::from_slice(&requests[0].body).unwrap()
}

#[tokio::test]
async fn responses_body_carries_encrypted_reasoning_calls_and_results() {
    let body = received_body(ProviderKind::OpenAiResponses, responses_stream()).await;
    let message = |role: &str, kind: &str, text: &str| json!({"type": "message", "role": role, "content": [{"type": kind, "text": text}]});
    let expected = json!({
        "model": "test-model",
        "instructions": "be brief",
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 1000,
        "tools": [{"type": "function", "name": "read_file", "description": "Read a file",
                   "parameters": schema(), "strict": false}],
        "input": [
            message("user", "input_text", "fix the bug"),
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "looked"}],
             "encrypted_content": "enc-1"},
            message("assistant", "output_text", "Looking."),
            {"type": "function_call", "call_id": "call_a", "name": "read_file", "arguments": "{\"path\":\"a.rs\"}"},
            {"type": "function_call", "call_id": "call_b", "name": "read_file", "arguments": "{not json"},
            {"type": "function_call_output", "call_id": "call_a", "output": "fn main() {}"},
            {"type": "function_call_output", "call_id": "call_b", "output": "invalid arguments"},
            message("user", "input_text", "also check tests"),
            message("assistant", "output_text", "Done."),
        ],
    });
    assert_eq!(body, expected);
}

#[tokio::test]
async fn chat_body_folds_assistant_turns_and_sends_tool_messages() {
    let body = received_body(ProviderKind::OpenAiChat, chat_stream()).await;
    let call = |id: &str, args: &str| json!({"id": id, "type": "function", "function": {"name": "read_file", "arguments": args}});
    let expected = json!({
        "model": "test-model",
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_tokens": 1000,
        "tools": [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
                   "parameters": schema()}}],
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "fix the bug"},
            {"role": "assistant", "content": "Looking.",
             "tool_calls": [call("call_a", "{\"path\":\"a.rs\"}"), call("call_b", "{not json")]},
            {"role": "tool", "tool_call_id": "call_a", "content": "fn main() {}"},
            {"role": "tool", "tool_call_id": "call_b", "content": "invalid arguments"},
            {"role": "user", "content": "also check tests"},
            {"role": "assistant", "content": "Done."},
        ],
    });
    assert_eq!(body, expected);
}

#[tokio::test]
async fn anthropic_body_alternates_roles_and_replays_thinking() {
    let body = received_body(ProviderKind::Anthropic, anthropic_stream()).await;
    let ephemeral = json!({"type": "ephemeral"});
    let expected = json!({
        "model": "test-model",
        "max_tokens": 1000,
        "stream": true,
        "tools": [{"name": "read_file", "description": "Read a file", "input_schema": schema(),
                   "cache_control": ephemeral}],
        "system": [{"type": "text", "text": "be brief", "cache_control": ephemeral}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "fix the bug"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "call_a", "name": "read_file", "input": {"path": "a.rs"}},
                // Invalid JSON arguments cannot be an `input` object.
                {"type": "tool_use", "id": "call_b", "name": "read_file", "input": {}},
            ]},
            {"role": "user", "content": [
                // `is_error: false` is the API's default and costs tokens: left out.
                {"type": "tool_result", "tool_use_id": "call_a", "content": "fn main() {}"},
                {"type": "tool_result", "tool_use_id": "call_b", "content": "invalid arguments", "is_error": true},
                {"type": "text", "text": "also check tests"},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done.", "cache_control": ephemeral}]},
        ],
    });
    assert_eq!(body, expected);
    // Keys in the cache's prefix order: tools, system, then messages.
    let keys: Vec<&str> = body.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["model", "max_tokens", "stream", "tools", "system", "messages"]);
}

#[test]
fn anthropic_body_defaults_max_tokens_and_omits_empty_parts() {
    let mut request = simple_request();
    request.instructions.clear();
    request.items.push(Item::Assistant { text: String::new() });
    let body = super::anthropic::request_body(&request, &super::WireOptions::default());
    assert_eq!(body["max_tokens"], super::anthropic::DEFAULT_MAX_TOKENS);
    assert!(body.get("system").is_none() && body.get("tools").is_none());
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
        ]}])
    );
}

/// `[provider] strict_tools`: each protocol's strict flag, on the tools
/// with a strict form only; off, the bodies carry none.
#[test]
fn strict_tools_mark_each_protocol_s_tools() {
    let tool = |name: &str, parameters: Value| ToolSpec {
        name: name.into(),
        description: "d".into(),
        parameters,
    };
    let free = json!({"type": "object", "properties": {"arguments": {"type": "object"}}});
    let mut request = simple_request();
    request.tools =
        vec![tool("read_file", schema()), tool("mcp__s__t", schema()), tool("call_tool", free)];
    let off = super::WireOptions::default();
    let mut on = super::WireOptions::default();
    on.profile.strict_tools = true;
    let responses = super::responses_request::request_body(&request, &on);
    let flags: Vec<&Value> =
        responses["tools"].as_array().unwrap().iter().map(|t| &t["strict"]).collect();
    assert_eq!(flags, [&json!(true), &json!(false), &json!(false)]);
    assert_eq!(responses["tools"][0]["parameters"]["additionalProperties"], false);
    assert_eq!(responses["tools"][1]["parameters"], schema(), "an MCP tool as it is");
    let chat = super::openai_chat::request_body(&request, &on);
    assert_eq!(chat["tools"][0]["function"]["strict"], true);
    assert!(chat["tools"][1]["function"].get("strict").is_none());
    let chat_off = super::openai_chat::request_body(&request, &off);
    assert!(chat_off["tools"][0]["function"].get("strict").is_none());
    assert_eq!(chat_off["tools"][0]["function"]["parameters"], schema());
    let anthropic = super::anthropic::request_body(&request, &on);
    assert_eq!(anthropic["tools"][0]["strict"], true);
    assert!(anthropic["tools"][2].get("strict").is_none());
    // Anthropic caps a request's strict tools: the later ones go as they are.
    request.tools = (0..25).map(|n| tool(&format!("t{n}"), schema())).collect();
    let many = super::anthropic::request_body(&request, &on);
    let strict = many["tools"].as_array().unwrap().iter().filter(|t| t["strict"] == true).count();
    assert_eq!(strict, 20);
    assert!(many["tools"][24].get("strict").is_none());
}
