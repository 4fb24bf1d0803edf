//! Conformance: every recorded stream under `../shared/conformance/sse`
//! (relative to the crate root) reduces to what its `expected.json` says,
//! as far as our model represents it, and decodes identically whichever
//! byte the body is split at.
//!
//! Deliberately not modelled (and asserted absent rather than ignored):
//! chat choices other than index 0 (we never ask for `n > 1`), Responses
//! built-in tool items (`web_search_call`, `apply_patch_call`,
//! `local_shell_call`: we only offer function tools), message `phase`,
//! Anthropic server-run tools (`server_tool_use`, `mcp_tool_use`) and their
//! result blocks, citations, `stop_sequence` and `service_tier`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ProviderKind;
use super::assembler::Assembler;
use super::sse::{SseDecoder, decode_chunks};
use crate::protocol::{Item, ModelResponse, ReasoningItem, StopReason, StreamEvent, Usage};

/// One recorded case.
struct Case {
    name: String,
    body: Vec<u8>,
    expect: Value,
}

/// The recorded captures, or `None` (the test is skipped) in a clone
/// without the shared corpus: see `crate::shared_corpus`.
fn conformance_root() -> Option<PathBuf> {
    crate::shared_corpus::locate("conformance/sse")
}

fn load_cases(root: &Path, protocol: &str) -> Vec<Case> {
    let dir = root.join(protocol);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|err| {
        panic!("conformance captures missing: looked in {} ({err})", dir.display())
    });
    let mut dirs: Vec<PathBuf> =
        entries.map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    dirs.sort();
    assert!(!dirs.is_empty(), "no conformance cases in {}", dir.display());
    dirs.iter().map(|case| load_case(case)).collect()
}

fn load_case(dir: &Path) -> Case {
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    let expected = std::fs::read_to_string(dir.join("expected.json"))
        .unwrap_or_else(|err| panic!("{name}: cannot read expected.json: {err}"));
    let expected: Value = serde_json::from_str(&expected).unwrap();
    let file = dir.join(expected["stream"]["file"].as_str().unwrap());
    let raw =
        std::fs::read(&file).unwrap_or_else(|err| panic!("{name}: {}: {err}", file.display()));
    let body = match expected["stream"]["format"].as_str() {
        Some("sse") => raw,
        Some("data-lines") => data_lines_to_sse(&raw),
        other => panic!("{name}: unknown stream format {other:?}"),
    };
    Case { name, body, expect: expected["expect"].clone() }
}

/// The vercel/ai fixture format: one data payload per line; the event name
/// is the payload's `type`.
fn data_lines_to_sse(raw: &[u8]) -> Vec<u8> {
    let text = std::str::from_utf8(raw).unwrap();
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let json: Value = serde_json::from_str(line).unwrap();
        let kind = json["type"].as_str().unwrap();
        out.push_str(&format!("event: {kind}\ndata: {line}\n\n"));
    }
    out.into_bytes()
}

/// What a stream reduced to: the response (or the error's text) and the
/// incremental events, exactly as the client's loop would produce them.
#[derive(Debug, PartialEq)]
pub(super) struct Reduced {
    pub result: Result<ModelResponse, String>,
    pub events: Vec<StreamEvent>,
}

pub(super) fn reduce<'a>(
    kind: ProviderKind,
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Reduced {
    let mut decoder = SseDecoder::default();
    let mut assembler = Assembler::new(kind);
    let mut events = Vec::new();
    let mut emit = |event| events.push(event);
    let mut sse = Vec::new();
    let mut fed = Ok(false);
    for chunk in chunks {
        decoder.push(chunk, &mut sse).unwrap();
        fed = assembler.feed_events(sse.drain(..), false, &mut emit);
        if !matches!(fed, Ok(false)) {
            break;
        }
    }
    if matches!(fed, Ok(false)) {
        decoder.finish(&mut sse).unwrap();
        fed = assembler.feed_events(sse.drain(..), true, &mut emit);
    }
    let result = match fed {
        Err(err) => Err(err.to_string()),
        Ok(_) => assembler.finish().map_err(|err| err.to_string()),
    };
    Reduced { result, events }
}

/// Splitting the body in two at any byte yields the same result.
///
/// Every cut is checked against the SSE decoder inside the event block
/// (the bytes up to and including a blank line) that contains it: a blank
/// line dispatches and resets the decoder, which the first assertion pins
/// down (decoding block by block equals decoding the whole body). That
/// keeps the every-byte check linear in block size rather than quadratic
/// in body size (the largest capture is 82 KB, and tests run unoptimised).
/// The full reduction is also re-run on the whole body at a spread of
/// cuts, which also covers the events flushed at end of body.
fn assert_split_invariant(kind: ProviderKind, case: &Case, whole: &Reduced) {
    let body = &case.body;
    let blocks = event_blocks(body);
    let by_block: Vec<_> = blocks.iter().flat_map(|block| decode_chunks([*block])).collect();
    assert!(by_block == decode_chunks([&body[..]]), "{}: block-wise decoding differs", case.name);
    let mut offset = 0;
    for block in blocks {
        let baseline = decode_chunks([block]);
        for cut in 0..=block.len() {
            let split = decode_chunks([&block[..cut], &block[cut..]]);
            assert!(
                split == baseline,
                "{}: SSE events differ when split at byte {}",
                case.name,
                offset + cut
            );
        }
        offset += block.len();
    }
    // Every byte boundary at once: the body fed one byte at a time through
    // the whole pipeline (decoder and assembler) gives the same result.
    let bytewise = reduce(kind, body.chunks(1));
    assert!(&bytewise == whole, "{}: result differs when fed one byte at a time", case.name);
    let step = (body.len() / 64).max(1);
    for cut in (0..=body.len()).step_by(step).chain([body.len() - 1]) {
        let split = reduce(kind, [&body[..cut], &body[cut..]]);
        assert!(&split == whole, "{}: result differs when split at byte {cut}", case.name);
    }
}

/// The body cut after each blank line (`\n\n`); the last block keeps the rest.
fn event_blocks(body: &[u8]) -> Vec<&[u8]> {
    let mut blocks = Vec::new();
    let mut start = 0;
    for end in 1..body.len() {
        if body[end - 1] == b'\n' && body[end] == b'\n' {
            blocks.push(&body[start..=end]);
            start = end + 1;
        }
    }
    blocks.push(&body[start..]);
    blocks
}

fn run_protocol(protocol: &str, kind: ProviderKind, check: fn(&Case, &Reduced)) {
    let Some(root) = conformance_root() else { return };
    for case in load_cases(&root, protocol) {
        let reduced = reduce(kind, [&case.body[..]]);
        check(&case, &reduced);
        assert_streamed_matches_final(&case.name, &reduced);
        assert_split_invariant(kind, &case, &reduced);
    }
}

/// The deltas shown live add up to what the response holds.
fn assert_streamed_matches_final(name: &str, reduced: &Reduced) {
    let Ok(response) = &reduced.result else { return };
    let streamed: String = reduced
        .events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta { delta } => Some(delta.as_str()),
            StreamEvent::ReasoningDelta { .. }
            | StreamEvent::ToolCallStarted { .. }
            | StreamEvent::ToolCallArgumentsDelta { .. }
            | StreamEvent::Retrying { .. } => None,
        })
        .collect();
    assert_eq!(streamed, response.text(), "{name}: streamed text");
    for call in response.tool_calls() {
        let args: String = reduced
            .events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallArgumentsDelta { call_id, delta }
                    if *call_id == call.call_id =>
                {
                    Some(delta.as_str())
                }
                StreamEvent::TextDelta { .. }
                | StreamEvent::ReasoningDelta { .. }
                | StreamEvent::ToolCallStarted { .. }
                | StreamEvent::ToolCallArgumentsDelta { .. }
                | StreamEvent::Retrying { .. } => None,
            })
            .collect();
        assert!(
            args == call.arguments || (args.is_empty() && call.arguments == "{}"),
            "{name}: streamed args"
        );
        let started = reduced.events.iter().any(|e| {
            matches!(e, StreamEvent::ToolCallStarted { call_id, name } if *call_id == call.call_id && *name == call.name)
        });
        assert!(started, "{name}: no ToolCallStarted for {}", call.call_id);
    }
}

fn ok<'a>(case: &Case, reduced: &'a Reduced) -> &'a ModelResponse {
    match &reduced.result {
        Ok(response) => response,
        Err(err) => panic!("{}: expected a response, got error: {err}", case.name),
    }
}

fn u(value: &Value, path: &[&str]) -> u64 {
    path.iter().fold(value, |v, k| &v[k]).as_u64().unwrap_or(0)
}

/// Our items, reduced to what the captures can be compared on.
#[derive(Debug, PartialEq)]
enum Shape {
    Text(String),
    OpenAiReasoning { id: String, summary: Vec<String>, encrypted: bool },
    Thinking { thinking: String, signed: bool },
    Redacted { len: usize },
    ChatReasoning(String),
    Call { call_id: String, name: String, arguments: String, item_id: Option<String> },
}

fn shapes(response: &ModelResponse) -> Vec<Shape> {
    response
        .items
        .iter()
        .map(|item| match item {
            Item::Assistant { text } => Shape::Text(text.clone()),
            Item::Reasoning(ReasoningItem::OpenAi { id, summary, encrypted_content, .. }) => {
                Shape::OpenAiReasoning {
                    id: id.clone(),
                    summary: summary.clone(),
                    encrypted: encrypted_content.is_some(),
                }
            }
            Item::Reasoning(ReasoningItem::AnthropicThinking { thinking, signature }) => {
                Shape::Thinking { thinking: thinking.clone(), signed: signature.is_some() }
            }
            Item::Reasoning(ReasoningItem::AnthropicRedacted { data }) => {
                Shape::Redacted { len: data.len() }
            }
            Item::Reasoning(ReasoningItem::Chat { text, .. }) => Shape::ChatReasoning(text.clone()),
            Item::ToolCall(call) => Shape::Call {
                call_id: call.call_id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                item_id: call.item_id.clone(),
            },
            Item::User { .. } | Item::ToolResult(_) | Item::Context { .. } => {
                panic!("a response holds no {item:?}")
            }
        })
        .collect()
}

fn s(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

fn check_responses(case: &Case, reduced: &Reduced) {
    let expect = &case.expect;
    if expect["status"] == "failed" {
        let err = reduced.result.as_ref().expect_err(&case.name);
        let message = expect["error"]["message"].as_str().unwrap();
        assert!(err.contains(message), "{}: error `{err}` lacks the server message", case.name);
        return;
    }
    let response = ok(case, reduced);
    assert_eq!(response.response_id.as_deref(), expect["response_id"].as_str(), "{}", case.name);
    assert_eq!(response.text(), expect["final_text"].as_str().unwrap(), "{}", case.name);
    // Expected item order: the captures list kinds separately, but each
    // has at most one message, and reasoning always precedes the rest.
    let mut want: Vec<Shape> = Vec::new();
    for r in expect["reasoning"].as_array().unwrap() {
        let summary = r["summary"].as_array().unwrap().iter().map(s).collect();
        want.push(Shape::OpenAiReasoning {
            id: s(&r["id"]),
            summary,
            encrypted: r["has_encrypted_content"] == true,
        });
    }
    for m in expect["messages"].as_array().unwrap() {
        want.push(Shape::Text(s(&m["text"])));
    }
    let function_calls: Vec<&Value> = expect["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "function_call")
        .collect();
    for c in &function_calls {
        want.push(Shape::Call {
            call_id: s(&c["call_id"]),
            name: s(&c["name"]),
            arguments: s(&c["arguments"]),
            item_id: Some(s(&c["item_id"])),
        });
    }
    let mut got = shapes(response);
    // Case 05 interleaves reasoning and a web search before the message;
    // compare as the same multiset in stable kind order.
    got.sort_by_key(shape_rank);
    assert_eq!(got, want, "{}: items", case.name);
    let usage = &expect["usage"];
    let want_usage = Usage {
        input_tokens: u(usage, &["input_tokens"]),
        output_tokens: u(usage, &["output_tokens"]),
        cached_input_tokens: u(usage, &["input_tokens_details", "cached_tokens"]),
        reasoning_tokens: u(usage, &["output_tokens_details", "reasoning_tokens"]),
        cache_write_tokens: 0,
    };
    assert_eq!(response.usage, want_usage, "{}: usage", case.name);
    let stop = if function_calls.is_empty() { StopReason::EndTurn } else { StopReason::ToolUse };
    assert_eq!(response.stop_reason, stop, "{}: stop reason", case.name);
}

fn shape_rank(shape: &Shape) -> u8 {
    match shape {
        Shape::OpenAiReasoning { .. }
        | Shape::Thinking { .. }
        | Shape::Redacted { .. }
        | Shape::ChatReasoning(_) => 0,
        Shape::Text(_) => 1,
        Shape::Call { .. } => 2,
    }
}

fn check_chat(case: &Case, reduced: &Reduced) {
    let expect = &case.expect;
    let response = ok(case, reduced);
    assert_eq!(response.response_id.as_deref(), expect["id"].as_str(), "{}", case.name);
    let choice = &expect["choices"][0];
    assert_eq!(choice["index"], 0, "{}", case.name);
    let mut want = Vec::new();
    for part in [&choice["content"], &choice["refusal"]] {
        if let Some(text) = part.as_str() {
            want.push(Shape::Text(text.to_owned()));
        }
    }
    for c in choice["tool_calls"].as_array().unwrap() {
        let call_id = s(&c["id"]);
        want.push(Shape::Call {
            call_id,
            name: s(&c["name"]),
            arguments: s(&c["arguments"]),
            item_id: None,
        });
    }
    assert_eq!(shapes(response), want, "{}: items (choice 0 only)", case.name);
    let usage = &expect["usage"];
    let want_usage = Usage {
        input_tokens: u(usage, &["prompt_tokens"]),
        output_tokens: u(usage, &["completion_tokens"]),
        cached_input_tokens: u(usage, &["prompt_tokens_details", "cached_tokens"]),
        reasoning_tokens: u(usage, &["completion_tokens_details", "reasoning_tokens"]),
        cache_write_tokens: 0,
    };
    assert_eq!(response.usage, want_usage, "{}: usage", case.name);
    let stop = match (choice["finish_reason"].as_str(), choice["refusal"].is_string()) {
        (Some("tool_calls"), _) => StopReason::ToolUse,
        (Some("length"), _) => StopReason::MaxTokens,
        (Some("stop"), true) => StopReason::Refusal,
        (Some("stop"), false) => StopReason::EndTurn,
        (other, _) => panic!("{}: unexpected finish_reason {other:?}", case.name),
    };
    assert_eq!(response.stop_reason, stop, "{}: stop reason", case.name);
}

fn check_anthropic(case: &Case, reduced: &Reduced) {
    let expect = &case.expect;
    let response = ok(case, reduced);
    assert_eq!(response.response_id.as_deref(), expect["message_id"].as_str(), "{}", case.name);
    assert_eq!(response.text(), expect["final_text"].as_str().unwrap(), "{}", case.name);
    let mut want: Vec<Shape> = Vec::new();
    for block in expect["content"].as_array().unwrap() {
        match block["type"].as_str().unwrap() {
            "text" => match want.last_mut() {
                Some(Shape::Text(previous)) => previous.push_str(block["text"].as_str().unwrap()),
                _ => want.push(Shape::Text(s(&block["text"]))),
            },
            "thinking" => want.push(Shape::Thinking {
                thinking: s(&block["thinking"]),
                signed: block["signature_present"] == true,
            }),
            "redacted_thinking" => {
                want.push(Shape::Redacted { len: u(block, &["data_length"]) as usize })
            }
            "tool_use" => {
                let raw = s(&block["input_json_raw"]);
                let arguments = if raw.is_empty() { "{}".to_owned() } else { raw };
                if !block["input"].is_null() {
                    let parsed: Value = serde_json::from_str(&arguments).unwrap();
                    assert_eq!(parsed, block["input"], "{}: tool input", case.name);
                }
                want.push(Shape::Call {
                    call_id: s(&block["id"]),
                    name: s(&block["name"]),
                    arguments,
                    item_id: None,
                });
            }
            // Run by the API itself; not client tool calls.
            "server_tool_use" | "mcp_tool_use" => {}
            other if other.ends_with("_tool_result") => {}
            other => panic!("{}: block type {other} not covered by this test", case.name),
        }
    }
    assert_eq!(shapes(response), want, "{}: items", case.name);
    let usage = &expect["usage"];
    let cache_read = u(usage, &["cache_read_input_tokens"]);
    let want_usage = Usage {
        input_tokens: u(usage, &["input_tokens"])
            + cache_read
            + u(usage, &["cache_creation_input_tokens"]),
        output_tokens: u(usage, &["output_tokens"]),
        cached_input_tokens: cache_read,
        reasoning_tokens: 0,
        cache_write_tokens: u(usage, &["cache_creation_input_tokens"]),
    };
    assert_eq!(response.usage, want_usage, "{}: usage", case.name);
    let stop = match expect["stop_reason"].as_str() {
        Some("end_turn") => StopReason::EndTurn,
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        other => panic!("{}: unexpected stop_reason {other:?}", case.name),
    };
    assert_eq!(response.stop_reason, stop, "{}: stop reason", case.name);
}

#[test]
fn openai_responses_captures() {
    run_protocol("openai-responses", ProviderKind::OpenAiResponses, check_responses);
}

#[test]
fn openai_chat_captures() {
    run_protocol("openai-chat", ProviderKind::OpenAiChat, check_chat);
}

#[test]
fn anthropic_messages_captures() {
    run_protocol("anthropic-messages", ProviderKind::Anthropic, check_anthropic);
}

#[test]
fn responses_error_event_is_a_provider_error_with_the_message() {
    let Some(root) = conformance_root() else { return };
    let case = load_case(&root.join("openai-responses/06-error-event-insufficient-quota"));
    let mut assembler = Assembler::new(ProviderKind::OpenAiResponses);
    let err = decode_chunks([&case.body[..]])
        .iter()
        .find_map(|event| assembler.feed(event, &mut |_| {}).err())
        .expect("an error");
    assert!(
        matches!(&err, super::LlmError::Provider { code: Some(code), .. } if code == "insufficient_quota")
    );
    assert!(!err.is_retryable());
}
