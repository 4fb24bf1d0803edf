//! Fault injection against a local wiremock server: rate limits, server
//! errors, cut streams, auth and model errors, malformed data, idle
//! timeouts and cancellation, plus one happy path per protocol.
//!
//! Invariants: every test binds 127.0.0.1, uses millisecond backoffs and
//! `Retry-After: 0`, and asserts the exact number of requests the client
//! made (retries are part of the behaviour under test).

use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::test_support::*;
use super::{LlmClient, LlmError, ProviderKind};
use crate::protocol::{Item, ReasoningItem, StopReason, StreamEvent, ToolCall, Usage};

async fn server() -> MockServer {
    MockServer::start().await
}

async fn mount(
    server: &MockServer,
    kind: ProviderKind,
    template: ResponseTemplate,
    times: Option<u64>,
) {
    let mock = Mock::given(method("POST")).and(path(endpoint(kind))).respond_with(template);
    match times {
        Some(n) => mock.up_to_n_times(n).mount(server).await,
        None => mock.mount(server).await,
    }
}

async fn request_count(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

fn error_json(message: &str, code: &str) -> serde_json::Value {
    json!({"error": {"message": message, "type": "invalid_request_error", "code": code}})
}

#[tokio::test]
async fn responses_happy_path_streams_reasoning_and_text() {
    let server = server().await;
    mount(&server, ProviderKind::OpenAiResponses, sse_template(responses_stream()), None).await;
    let (result, events) =
        run(config(ProviderKind::OpenAiResponses, &server, 0), &simple_request()).await;
    let response = result.unwrap();
    let reasoning = ReasoningItem::OpenAi {
        id: "rs_1".into(),
        summary: vec!["Thinking hard".into()],
        encrypted_content: Some("enc-xyz".into()),
        content: Vec::new(),
    };
    assert_eq!(
        response.items,
        vec![Item::Reasoning(reasoning), Item::Assistant { text: "Hello world".into() }]
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.response_id.as_deref(), Some("resp_1"));
    let usage = Usage {
        input_tokens: 30,
        output_tokens: 12,
        cached_input_tokens: 10,
        reasoning_tokens: 5,
        cache_write_tokens: 0,
    };
    assert_eq!(response.usage, usage);
    assert_eq!(
        events,
        vec![
            StreamEvent::ReasoningDelta { delta: "Thinking".into() },
            StreamEvent::ReasoningDelta { delta: " hard".into() },
            StreamEvent::TextDelta { delta: "Hello".into() },
            StreamEvent::TextDelta { delta: " world".into() },
        ]
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].headers.get("authorization").unwrap(), "Bearer sk-test");
}

#[tokio::test]
async fn chat_happy_path_assembles_parallel_calls_without_a_key() {
    let server = server().await;
    mount(&server, ProviderKind::OpenAiChat, sse_template(chat_stream()), None).await;
    let mut config = config(ProviderKind::OpenAiChat, &server, 0);
    config.api_key = None;
    config.base_url.push('/'); // a trailing slash is trimmed
    let (result, events) = run(config, &simple_request()).await;
    let response = result.unwrap();
    let call = |id: &str, name: &str, args: &str| {
        Item::ToolCall(ToolCall {
            call_id: id.into(),
            name: name.into(),
            arguments: args.into(),
            item_id: None,
            provider_data: None,
        })
    };
    assert_eq!(
        response.items,
        vec![
            Item::Assistant { text: "Checking.".into() },
            call("call_a", "read_file", r#"{"path":"a.rs"}"#),
            call("call_b", "list_dir", "{}"),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 7,
            cached_input_tokens: 3,
            reasoning_tokens: 0,
            cache_write_tokens: 0
        }
    );
    assert!(events.contains(&StreamEvent::ToolCallStarted {
        call_id: "call_b".into(),
        name: "list_dir".into()
    }));
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn anthropic_happy_path_keeps_thinking_signature_and_tool_input() {
    let server = server().await;
    mount(&server, ProviderKind::Anthropic, sse_template(anthropic_stream()), None).await;
    let (result, events) =
        run(config(ProviderKind::Anthropic, &server, 0), &simple_request()).await;
    let response = result.unwrap();
    let thinking = ReasoningItem::AnthropicThinking {
        thinking: "Let me look.".into(),
        signature: Some("sig-abc".into()),
    };
    let call = ToolCall {
        call_id: "toolu_1".into(),
        name: "read_file".into(),
        arguments: r#"{"path": "src/main.rs"}"#.into(),
        item_id: None,
        provider_data: None,
    };
    assert_eq!(response.items, vec![Item::Reasoning(thinking), Item::ToolCall(call)]);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 16,
            output_tokens: 42,
            cached_input_tokens: 4,
            reasoning_tokens: 0,
            cache_write_tokens: 2
        }
    );
    assert_eq!(events[0], StreamEvent::ReasoningDelta { delta: "Let me look.".into() });
    assert_eq!(
        events[1],
        StreamEvent::ToolCallStarted { call_id: "toolu_1".into(), name: "read_file".into() }
    );
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests[0].headers.get("x-api-key").unwrap(), "sk-test");
    assert_eq!(requests[0].headers.get("anthropic-version").unwrap(), "2023-06-01");
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_retried() {
    let server = server().await;
    let limited = ResponseTemplate::new(429)
        .insert_header("retry-after", "0")
        .set_body_json(error_json("slow down please", "rate_limit_exceeded"));
    mount(&server, ProviderKind::OpenAiChat, limited, Some(1)).await;
    mount(&server, ProviderKind::OpenAiChat, sse_template(chat_stream()), None).await;
    let (result, _) = run(config(ProviderKind::OpenAiChat, &server, 3), &simple_request()).await;
    assert_eq!(result.unwrap().text(), "Checking.");
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn server_errors_exhaust_the_retries_and_keep_the_message() {
    let server = server().await;
    let failing =
        ResponseTemplate::new(500).set_body_json(error_json("upstream exploded", "server_error"));
    mount(&server, ProviderKind::OpenAiResponses, failing, None).await;
    let (result, _) =
        run(config(ProviderKind::OpenAiResponses, &server, 2), &simple_request()).await;
    let err = result.unwrap_err();
    assert_eq!(request_count(&server).await, 3);
    assert!(matches!(&err, LlmError::RetriesExhausted { attempts: 3, .. }), "{err:?}");
    assert!(matches!(err.last_attempt(), LlmError::Http { status: 500, .. }));
    let shown = err.to_string();
    assert!(shown.contains("500") && shown.contains("upstream exploded"), "{shown}");
}

#[tokio::test]
async fn anthropic_stream_cut_inside_tool_input_is_retried() {
    let server = server().await;
    let cut = cut_after(&anthropic_stream(), "src/ma");
    mount(&server, ProviderKind::Anthropic, sse_template(cut), Some(1)).await;
    mount(&server, ProviderKind::Anthropic, sse_template(anthropic_stream()), None).await;
    let (result, _) = run(config(ProviderKind::Anthropic, &server, 2), &simple_request()).await;
    let response = result.unwrap();
    let call = response.tool_calls().next().unwrap();
    assert_eq!(call.arguments, r#"{"path": "src/main.rs"}"#);
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn chat_stream_cut_inside_tool_arguments_is_retried_then_reported() {
    let server = server().await;
    // Cut at an event boundary: every event parses, only the end is missing.
    let cut = first_events(&chat_stream(), 3);
    assert!(cut.ends_with("\n\n") && cut.contains("path"), "{cut}");
    mount(&server, ProviderKind::OpenAiChat, sse_template(cut), None).await;
    let (result, _) = run(config(ProviderKind::OpenAiChat, &server, 1), &simple_request()).await;
    let err = result.unwrap_err();
    assert!(matches!(err.last_attempt(), LlmError::StreamCut { .. }), "{err:?}");
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn unauthorized_names_the_key_variable_and_is_not_retried() {
    let server = server().await;
    let denied = ResponseTemplate::new(401)
        .set_body_json(error_json("Incorrect API key provided", "invalid_api_key"));
    mount(&server, ProviderKind::OpenAiResponses, denied, None).await;
    let (result, _) =
        run(config(ProviderKind::OpenAiResponses, &server, 3), &simple_request()).await;
    let err = result.unwrap_err();
    let shown = err.to_string();
    assert!(
        shown.contains(&format!("${KEY_ENV}")) && shown.contains("Incorrect API key"),
        "{shown}"
    );
    assert!(matches!(err, LlmError::Auth { status: 401, .. }));
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn malformed_event_data_is_a_clear_error() {
    let server = server().await;
    let body = "event: response.output_text.delta\ndata: {not json at all\n\nevent: response.completed\ndata: {}\n\n";
    mount(&server, ProviderKind::OpenAiResponses, sse_template(body), None).await;
    let (result, _) =
        run(config(ProviderKind::OpenAiResponses, &server, 3), &simple_request()).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, LlmError::MalformedStream { event, .. } if event == "response.output_text.delta")
    );
    assert!(err.to_string().contains("not JSON"), "{err}");
    assert_eq!(request_count(&server).await, 1);
}

#[tokio::test]
async fn model_not_found_is_an_unknown_model() {
    let server = server().await;
    let body = error_json(
        "The model `gpt-nope` does not exist or you do not have access to it.",
        "model_not_found",
    );
    mount(
        &server,
        ProviderKind::OpenAiResponses,
        ResponseTemplate::new(404).set_body_json(body),
        None,
    )
    .await;
    let (result, _) =
        run(config(ProviderKind::OpenAiResponses, &server, 3), &simple_request()).await;
    let err = result.unwrap_err();
    assert!(
        matches!(&err, LlmError::UnknownModel { model, .. } if model == "test-model"),
        "{err:?}"
    );
    assert!(err.to_string().contains("does not exist"));
}

#[tokio::test]
async fn context_length_errors_are_classified_for_openai_and_anthropic() {
    let server = server().await;
    let openai = error_json(
        "This model's maximum context length is 128000 tokens.",
        "context_length_exceeded",
    );
    mount(
        &server,
        ProviderKind::OpenAiChat,
        ResponseTemplate::new(400).set_body_json(openai),
        None,
    )
    .await;
    let anthropic = json!({"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}});
    mount(
        &server,
        ProviderKind::Anthropic,
        ResponseTemplate::new(400).set_body_json(anthropic),
        None,
    )
    .await;
    for kind in [ProviderKind::OpenAiChat, ProviderKind::Anthropic] {
        let (result, _) = run(config(kind, &server, 3), &simple_request()).await;
        let err = result.unwrap_err();
        assert!(matches!(err, LlmError::ContextLengthExceeded { .. }), "{kind:?}: {err:?}");
    }
    assert_eq!(request_count(&server).await, 2);
}

#[tokio::test]
async fn idle_server_times_out_is_retried_then_reported() {
    let server = server().await;
    let stalled = sse_template(responses_stream()).set_delay(Duration::from_secs(10));
    mount(&server, ProviderKind::OpenAiResponses, stalled, None).await;
    let mut config = config(ProviderKind::OpenAiResponses, &server, 1);
    config.idle_timeout = Duration::from_millis(50);
    let (result, _) = run(config, &simple_request()).await;
    let err = result.unwrap_err();
    assert!(matches!(err.last_attempt(), LlmError::IdleTimeout { .. }), "{err:?}");
    assert_eq!(request_count(&server).await, 2);
}

/// Cancels the token as the server answers, so the client is mid-request.
struct CancelWhenAnswering {
    cancel: CancellationToken,
    template: ResponseTemplate,
}

impl Respond for CancelWhenAnswering {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        self.cancel.cancel();
        self.template.clone()
    }
}

#[tokio::test]
async fn cancelling_aborts_a_backoff_and_a_stalled_response() {
    let long_backoff = ResponseTemplate::new(503).insert_header("retry-after", "60");
    let stalled = sse_template(chat_stream()).set_delay(Duration::from_secs(60));
    for template in [long_backoff, stalled] {
        let server = server().await;
        let cancel = CancellationToken::new();
        let responder = CancelWhenAnswering { cancel: cancel.clone(), template };
        Mock::given(method("POST")).respond_with(responder).mount(&server).await;
        let started = Instant::now();
        let (result, _) = run_with_cancel(
            config(ProviderKind::OpenAiChat, &server, 3),
            &simple_request(),
            &cancel,
        )
        .await;
        assert!(matches!(result, Err(LlmError::Cancelled)), "{result:?}");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(request_count(&server).await, 1);
    }
}

#[test]
fn the_stream_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let config = super::ProviderConfig { api_key: None, ..offline_config(ProviderKind::Anthropic) };
    let client = LlmClient::new(config).unwrap();
    let request = simple_request();
    let cancel = CancellationToken::new();
    let mut on_event = |_| {};
    assert_send(&client.stream(&request, &mut on_event, &cancel));
}

#[test]
fn invalid_configs_are_rejected_and_keys_are_not_printed() {
    let mut config = super::ProviderConfig {
        base_url: "not a url".into(),
        api_key: Some("sk-secret".into()),
        ..offline_config(ProviderKind::OpenAiChat)
    };
    assert!(!format!("{config:?}").contains("sk-secret"));
    assert!(matches!(LlmClient::new(config.clone()), Err(LlmError::InvalidConfig { .. })));
    config.base_url = "http://127.0.0.1:9/v1".into();
    config.api_key = Some("bad\nkey".into());
    let err = LlmClient::new(config).unwrap_err();
    assert!(err.to_string().contains(KEY_ENV), "{err}");
}
