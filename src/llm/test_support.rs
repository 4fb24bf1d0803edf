//! Test fixtures shared by the wiremock tests: client configs with tiny
//! backoffs, real-shaped SSE bodies for each protocol, and a runner that
//! collects the streamed events.
//!
//! Invariants: servers bind 127.0.0.1 only (wiremock's default); nothing
//! here sleeps to synchronise.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::MockServer;

use super::{LlmClient, LlmError, ProviderConfig, ProviderKind, RetryPolicy};
use crate::protocol::{ModelRequest, ModelResponse, StreamEvent};

pub(super) const KEY_ENV: &str = "KEEL_TEST_API_KEY";

pub(super) fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(10),
    }
}

pub(super) fn config(kind: ProviderKind, server: &MockServer, max_retries: u32) -> ProviderConfig {
    ProviderConfig {
        base_url: format!("{}/v1", server.uri()),
        retry: fast_retry(max_retries),
        ..offline_config(kind)
    }
}

/// A config for a server that is never contacted.
pub(super) fn offline_config(kind: ProviderKind) -> ProviderConfig {
    ProviderConfig {
        kind,
        base_url: "http://127.0.0.1:9/v1".to_owned(),
        api_key: Some("sk-test".to_owned()),
        api_key_env: KEY_ENV.to_owned(),
        retry: fast_retry(0),
        idle_timeout: Duration::from_secs(5),
        request_timeout: Duration::from_secs(60),
        profile: super::ServerProfile::default(),
    }
}

pub(super) fn endpoint(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::OpenAiResponses => "/v1/responses",
        ProviderKind::OpenAiChat => "/v1/chat/completions",
        ProviderKind::Anthropic => "/v1/messages",
    }
}

pub(super) fn simple_request() -> ModelRequest {
    ModelRequest {
        model: "test-model".to_owned(),
        instructions: "be brief".to_owned(),
        items: vec![crate::protocol::Item::user("hi".to_owned())],
        tools: Vec::new(),
        max_output_tokens: None,
    }
}

/// Runs one request, returning the result and every streamed event.
pub(super) async fn run(
    config: ProviderConfig,
    request: &ModelRequest,
) -> (Result<ModelResponse, LlmError>, Vec<StreamEvent>) {
    run_with_cancel(config, request, &CancellationToken::new()).await
}

pub(super) async fn run_with_cancel(
    config: ProviderConfig,
    request: &ModelRequest,
    cancel: &CancellationToken,
) -> (Result<ModelResponse, LlmError>, Vec<StreamEvent>) {
    let client = LlmClient::new(config).unwrap();
    let mut events = Vec::new();
    let mut on_event = |event| events.push(event);
    let result = client.stream(request, &mut on_event, cancel).await;
    (result, events)
}

/// `event: <type>` / `data: <json>` pairs, as Responses and Anthropic send.
pub(super) fn typed_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap_or("message"))
        })
        .collect()
}

/// Chat Completions chunks, ending with `data: [DONE]`.
pub(super) fn chat_sse(chunks: &[Value]) -> String {
    let mut body: String = chunks.iter().map(|chunk| format!("data: {chunk}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

pub(super) fn sse_template(body: impl Into<String>) -> wiremock::ResponseTemplate {
    wiremock::ResponseTemplate::new(200).set_body_raw(body.into(), "text/event-stream")
}

/// Reasoning with a two-part summary and encrypted content, then text.
pub(super) fn responses_stream() -> String {
    typed_sse(&[
        json!({"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}),
        json!({"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}),
        json!({"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"Thinking"}),
        json!({"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":" hard"}),
        json!({"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning",
            "summary":[{"type":"summary_text","text":"Thinking hard"}],"encrypted_content":"enc-xyz"}}),
        json!({"type":"response.output_item.added","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}),
        json!({"type":"response.output_text.delta","output_index":1,"item_id":"msg_1","delta":"Hello"}),
        json!({"type":"response.output_text.delta","output_index":1,"item_id":"msg_1","delta":" world"}),
        json!({"type":"response.output_item.done","output_index":1,"item":{"id":"msg_1","type":"message","role":"assistant",
            "content":[{"type":"output_text","text":"Hello world"}]}}),
        json!({"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{
            "input_tokens":30,"input_tokens_details":{"cached_tokens":10},
            "output_tokens":12,"output_tokens_details":{"reasoning_tokens":5}}}}),
    ])
}

/// Text, then two parallel calls whose argument pieces interleave.
pub(super) fn chat_stream() -> String {
    let delta = |delta: Value| json!({"id":"chatcmpl-1","choices":[{"index":0,"delta":delta}]});
    chat_sse(&[
        delta(json!({"role":"assistant","content":"Checking."})),
        delta(
            json!({"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}),
        ),
        delta(json!({"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":\"a"}}]})),
        delta(
            json!({"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"list_dir","arguments":"{}"}}]}),
        ),
        delta(json!({"tool_calls":[{"index":0,"function":{"arguments":".rs\"}"}}]})),
        json!({"id":"chatcmpl-1","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
        json!({"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":7,
            "prompt_tokens_details":{"cached_tokens":3}}}),
    ])
}

/// Signed thinking, then a tool call whose input arrives in three pieces.
pub(super) fn anthropic_stream() -> String {
    let delta = |index: u64, delta: Value| json!({"type":"content_block_delta","index":index,"delta":delta});
    typed_sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],
            "usage":{"input_tokens":10,"cache_read_input_tokens":4,"cache_creation_input_tokens":2,"output_tokens":1}}}),
        json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
        delta(0, json!({"type":"thinking_delta","thinking":"Let me look."})),
        delta(0, json!({"type":"signature_delta","signature":"sig-abc"})),
        json!({"type":"content_block_stop","index":0}),
        json!({"type":"ping"}),
        json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"read_file","input":{}}}),
        delta(1, json!({"type":"input_json_delta","partial_json":"{\"path\":"})),
        delta(1, json!({"type":"input_json_delta","partial_json":" \"src/main"})),
        delta(1, json!({"type":"input_json_delta","partial_json":".rs\"}"})),
        json!({"type":"content_block_stop","index":1}),
        json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}),
        json!({"type":"message_stop"}),
    ])
}

/// `body` cut just after the first occurrence of `marker` (mid-line).
pub(super) fn cut_after(body: &str, marker: &str) -> String {
    let at = body.find(marker).unwrap() + marker.len();
    body[..at].to_owned()
}

/// The first `n` events of an SSE body (cut at an event boundary).
pub(super) fn first_events(body: &str, n: usize) -> String {
    body.split_inclusive("\n\n").take(n).collect()
}
