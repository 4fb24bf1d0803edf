//! Stream reducers on situations the recorded captures lack: error events
//! of every protocol, incomplete responses, lenient endings, servers that
//! omit fields, and arbitrary input (property tests: never a panic).

use proptest::prelude::*;
use serde_json::{Value, json};

use super::ProviderKind;
use super::assembler::Assembler;
use super::error::LlmError;
use super::sse::{SseEvent, decode_chunks};
use super::test_support::{chat_sse, typed_sse};
use crate::protocol::{ModelResponse, StopReason, StreamEvent};

/// Feeds a whole body the way the client does and returns the outcome.
fn reduce(kind: ProviderKind, body: &str) -> Result<ModelResponse, LlmError> {
    let mut assembler = Assembler::new(kind);
    let mut sink = |_: StreamEvent| {};
    // Whether the completion event came is what `finish` reports on.
    assembler.feed_events(decode_chunks([body.as_bytes()]), true, &mut sink)?;
    assembler.finish()
}

#[test]
fn anthropic_overloaded_error_event_is_retryable() {
    let body = typed_sse(&[
        json!({"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":1}}}),
        json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
    ]);
    let err = reduce(ProviderKind::Anthropic, &body).unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(err.to_string().contains("Overloaded"), "{err}");
}

#[test]
fn responses_failed_for_context_length_is_classified() {
    let body = typed_sse(&[
        json!({"type":"response.failed","response":{"id":"r","status":"failed",
        "error":{"code":"context_length_exceeded","message":"Your input exceeds the context window."}}}),
    ]);
    let err = reduce(ProviderKind::OpenAiResponses, &body).unwrap_err();
    assert!(matches!(err, LlmError::ContextLengthExceeded { .. }), "{err:?}");
}

#[test]
fn responses_incomplete_stops_for_max_tokens_and_keeps_partial_text() {
    let body = typed_sse(&[
        json!({"type":"response.output_item.added","output_index":0,"item":{"id":"m","type":"message","content":[]}}),
        json!({"type":"response.output_text.delta","output_index":0,"delta":"Part"}),
        json!({"type":"response.incomplete","response":{"id":"r","incomplete_details":{"reason":"max_output_tokens"},
            "usage":{"input_tokens":5,"output_tokens":9}}}),
    ]);
    let response = reduce(ProviderKind::OpenAiResponses, &body).unwrap();
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.text(), "Part");
    assert_eq!(response.usage.output_tokens, 9);
}

#[test]
fn chat_error_chunk_carries_the_message() {
    let body = chat_sse(&[json!({"error":{"message":"provider melted","code":502}})]);
    let err = reduce(ProviderKind::OpenAiChat, &body).unwrap_err();
    assert!(
        err.to_string().contains("provider melted") && err.to_string().contains("502"),
        "{err}"
    );
}

#[test]
fn chat_finish_reason_without_done_is_accepted_but_neither_is_cut() {
    let finished = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n";
    let response = reduce(ProviderKind::OpenAiChat, finished).unwrap();
    assert_eq!((response.text().as_str(), response.stop_reason), ("ok", StopReason::EndTurn));
    let cut = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"}}]}\n\n";
    assert!(matches!(reduce(ProviderKind::OpenAiChat, cut), Err(LlmError::StreamCut { .. })));
}

#[test]
fn chat_calls_without_index_or_id_still_assemble() {
    let delta = |calls: Value| json!({"choices":[{"delta":{"tool_calls":calls}}]});
    let body = chat_sse(&[
        delta(json!([{"id":"a","function":{"name":"one","arguments":"{\"x\":"}}])),
        delta(json!([{"function":{"arguments":"1}"}}])),
        delta(json!([{"id":"b","function":{"name":"two","arguments":"{}"}}])),
        json!({"choices":[{"delta":{},"finish_reason":"stop"}]}),
    ]);
    let response = reduce(ProviderKind::OpenAiChat, &body).unwrap();
    let calls: Vec<_> =
        response.tool_calls().map(|c| (c.call_id.as_str(), c.arguments.as_str())).collect();
    assert_eq!(calls, [("a", "{\"x\":1}"), ("b", "{}")]);
    assert_eq!(response.stop_reason, StopReason::ToolUse, "calls win over `stop`");
    let anonymous =
        chat_sse(&[delta(json!([{"index":0,"function":{"name":"f","arguments":"{}"}}]))]);
    let response = reduce(ProviderKind::OpenAiChat, &anonymous).unwrap();
    assert_eq!(response.tool_calls().next().unwrap().call_id, "call_0");
}

#[test]
fn anthropic_refusal_and_cut_streams() {
    let start = json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":1,"output_tokens":1}}});
    let refusal = typed_sse(&[
        start.clone(),
        json!({"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":3}}),
        json!({"type":"message_stop"}),
    ]);
    assert_eq!(reduce(ProviderKind::Anthropic, &refusal).unwrap().stop_reason, StopReason::Refusal);
    let cut = typed_sse(&[start]);
    let err = reduce(ProviderKind::Anthropic, &cut).unwrap_err();
    assert!(err.is_retryable() && err.to_string().contains("message_stop"), "{err}");
}

#[test]
fn malformed_data_names_the_event_for_every_protocol() {
    let event = SseEvent { event: "content_block_delta".into(), data: "{oops".into() };
    for kind in [ProviderKind::OpenAiResponses, ProviderKind::OpenAiChat, ProviderKind::Anthropic] {
        let err = Assembler::new(kind).feed(&event, &mut |_| {}).unwrap_err();
        assert!(!err.is_retryable());
        assert!(err.to_string().contains("content_block_delta"), "{kind:?}: {err}");
    }
}

#[test]
fn json_body_on_success_status_is_reported() {
    let err = super::classify::json_instead_of_stream(
        r#"{"error":{"message":"quota gone","code":"insufficient_quota"}}"#,
    );
    assert!(err.to_string().contains("quota gone"), "{err}");
    let err = super::classify::json_instead_of_stream(r#"{"id":"x"}"#);
    assert!(matches!(err, LlmError::MalformedStream { .. }), "{err:?}");
}

/// JSON values of every shape, for fields the reducers read.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(|n| json!(n)),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z_.{}\":]{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(field_name(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Names the reducers look at, so random objects reach their code paths.
fn field_name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "type",
        "index",
        "output_index",
        "summary_index",
        "delta",
        "item",
        "content_block",
        "text",
        "id",
        "call_id",
        "name",
        "arguments",
        "partial_json",
        "choices",
        "tool_calls",
        "function",
        "usage",
        "finish_reason",
        "error",
        "message",
        "response",
        "content",
        "summary",
        "stop_reason",
        "signature",
    ])
    .prop_map(str::to_owned)
}

fn event_type() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "message_start",
        "content_block_start",
        "content_block_delta",
        "message_delta",
        "message_stop",
        "error",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.completed",
        "response.incomplete",
        "response.failed",
        "message",
    ])
    .prop_map(str::to_owned)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn reducers_never_panic_on_arbitrary_events(
        events in prop::collection::vec((event_type(), any_json()), 0..12),
    ) {
        for kind in [ProviderKind::OpenAiResponses, ProviderKind::OpenAiChat, ProviderKind::Anthropic] {
            let mut assembler = Assembler::new(kind);
            for (name, mut data) in events.clone() {
                if let Value::Object(map) = &mut data {
                    map.insert("type".into(), Value::String(name.clone()));
                }
                let event = SseEvent { event: name, data: data.to_string() };
                if assembler.feed(&event, &mut |_| {}).is_err() {
                    break;
                }
            }
            let _ = assembler.finish();
        }
    }

    #[test]
    fn decoder_never_panics_and_ignores_chunking(bytes in prop::collection::vec(any::<u8>(), 0..256), cut in any::<prop::sample::Index>()) {
        let cut = cut.index(bytes.len() + 1);
        prop_assert_eq!(decode_chunks([&bytes[..cut], &bytes[cut..]]), decode_chunks([&bytes[..]]));
    }
}
