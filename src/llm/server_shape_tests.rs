//! The server-shape fixtures of the end-to-end corpus
//! (`tests/fixtures/servers/*.sse`, replayed through the real binary by
//! `tests/suite/servers*.rs`), held to the decoder's invariant: the same
//! response and the same live events whichever byte the body is split at,
//! fed whole or one byte at a time. Also what each reduces to, in short.

use std::path::{Path, PathBuf};

use super::ProviderKind;
use super::conformance_tests::{Reduced, reduce};
use crate::protocol::{Item, ReasoningItem};

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/servers");
    let mut paths: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().map(|entry| entry.unwrap().path()).collect();
    paths.sort();
    assert!(paths.len() >= 18, "{paths:?}");
    paths
}

fn kind_of(path: &Path) -> ProviderKind {
    let name = path.file_name().unwrap().to_string_lossy();
    if name.starts_with("anthropic") {
        ProviderKind::Anthropic
    } else if name.contains("responses") {
        ProviderKind::OpenAiResponses
    } else {
        ProviderKind::OpenAiChat
    }
}

/// What a reduced fixture amounts to: items by kind, or the error.
fn summary(reduced: &Reduced) -> String {
    let response = match &reduced.result {
        Ok(response) => response,
        Err(error) => return format!("error: {error}"),
    };
    let items: Vec<String> = response
        .items
        .iter()
        .map(|item| match item {
            Item::Assistant { text } => format!("text {text:?}"),
            Item::ToolCall(call) => {
                let data = if call.provider_data.is_some() { " +data" } else { "" };
                format!("call {} {}{data}", call.call_id, call.arguments)
            }
            Item::Reasoning(ReasoningItem::Chat { text, provider_data, .. }) => {
                format!("reasoning {text:?} {:?}", provider_data.keys().collect::<Vec<_>>())
            }
            Item::Reasoning(ReasoningItem::OpenAi { content, .. }) => {
                format!("reasoning {content:?}")
            }
            Item::Reasoning(_) => "reasoning".to_owned(),
            Item::User { .. } | Item::ToolResult(_) | Item::Context { .. } => {
                "unexpected".to_owned()
            }
        })
        .collect();
    items.join(" | ")
}

#[test]
fn every_fixture_reduces_the_same_at_every_split() {
    for path in fixtures() {
        let body = std::fs::read(&path).unwrap();
        let kind = kind_of(&path);
        let whole = reduce(kind, [&body[..]]);
        assert_eq!(reduce(kind, body.chunks(1)), whole, "{}: byte by byte", path.display());
        for cut in 0..=body.len() {
            let split = reduce(kind, [&body[..cut], &body[cut..]]);
            assert_eq!(split, whole, "{}: split at byte {cut}", path.display());
        }
    }
}

#[test]
fn each_fixture_reduces_to_what_its_server_meant() {
    let mut seen = Vec::new();
    for path in fixtures() {
        let body = std::fs::read(&path).unwrap();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        seen.push(format!("{name}: {}", summary(&reduce(kind_of(&path), [&body[..]]))));
    }
    let notes = r#"{"path":"notes.txt"}"#;
    let expected = [
        "anthropic-cache: text \"notes.txt lists alpha and beta.\"".to_owned(),
        "azure: call call_AzQ1 {\"path\":\"notes.txt\"}".to_owned(),
        format!("calls-without-index-or-id: call call_0 {notes} | call call_1 {{\"path\":\"todo.txt\"}}"),
        "deepseek: reasoning \"The user asks about notes.txt. I should read it first.\" [] | call call_00_Rk5vWbQ1 {\"path\": \"notes.txt\"}".to_owned(),
        "empty-answer: ".to_owned(),
        format!("gemini: reasoning \"\" [\"extra_content\"] | text \"Reading it.\" | call function-call-14928311 {notes} +data"),
        format!("groq: reasoning \"Read the file.\" [] | call fc_7d2e9b1c {notes}"),
        format!("litellm: reasoning \"Need notes.\" [\"thinking_blocks\"] | call toolu_01XyZ {notes} +data"),
        format!("llamacpp-chat: reasoning \"Read notes.txt.\" [] | call Yk3mPq9sT2 {notes}"),
        format!("llamacpp-responses: reasoning [\"Read notes.txt.\"] | call fc_Yk3mPq9sT2 {notes}"),
        format!("lmstudio: text \"Reading it.\" | call 365174485 {notes}"),
        format!("mistral: reasoning \"I will read notes.txt.\" [] | text \"Reading it.\" | call D681PevKs {notes}"),
        format!("ollama: reasoning \"Two files; read both.\" [] | call call_k1x9wz3a {notes} | call call_p2m4qq7b {{\"path\":\"todo.txt\"}}"),
        "openrouter-midstream-502: error: provider error (502): Provider returned error".to_owned(),
        format!("openrouter: reasoning \"Need the file.\" [\"reasoning_details\"] | call toolu_01AbCdEf {notes}"),
        "responses-completed-only: text \"notes.txt lists alpha and beta.\"".to_owned(),
        format!("together: call call_6hqp0s3kt9 {notes}"),
        "vllm: reasoning \"The user wants notes.txt read.\" [] | call chatcmpl-tool-5c1e0a {\"path\": \"notes.txt\"}".to_owned(),
    ];
    assert_eq!(seen, expected);
}
