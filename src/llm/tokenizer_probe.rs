//! Asking a server on this machine how many tokens its model's tokenizer
//! makes of a text (issue 33): keel estimates with `o200k_base`, and a
//! local model's tokenizer can count far more (or fewer) tokens for the
//! same bytes, which moves every window decision.
//!
//! Where each server counts: llama.cpp `POST /tokenize {"content": TEXT}`
//! → `{"tokens": [...]}` (ids, or `{id, piece}` objects with
//! `with_pieces`; special tokens are not added by default);
//! vLLM `POST /tokenize {"prompt": TEXT, "model": M}` → `{"count": N,
//! "tokens": [...], "max_model_len": L}` (the same route: one body carries
//! both servers' fields, each ignores the other's); llama-cpp-python
//! `POST /extras/tokenize/count {"input": TEXT, "model": M}` → `{"count":
//! N}`. Both routes are asked at once; `/tokenize`'s answer wins.
//!
//! Invariants: only ever asked of a loopback host (the caller checks
//! `ServerProfile::probe_window`, as for the window); one short timeout
//! bounds both; an error, a timeout or an answer of another shape is
//! `None`, never an error (keel's own estimate then stands). The text sent
//! is bounded ([`bounded_sample`]); parsing is pure (`parse_*`).

use std::time::Duration;

use serde_json::{Value, json};

use super::ProviderConfig;
use super::window_probe::{Probe, root_of};

/// How long the count may take: a server on this machine tokenizes a few
/// kilobytes in milliseconds; one that hangs costs the session start this.
pub const TOKENIZE_TIMEOUT: Duration = Duration::from_secs(2);
/// The most of a sample sent to be counted.
pub const SAMPLE_MAX_BYTES: usize = 16 * 1024;

/// Which endpoint counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerSource {
    /// llama.cpp's `/tokenize`.
    LlamaCpp,
    /// vLLM's `/tokenize` (its answer has `max_model_len`).
    Vllm,
    /// llama-cpp-python's `/extras/tokenize/count`.
    LlamaCppPython,
}

impl TokenizerSource {
    /// Where the count came from, for the notice.
    pub fn describe(self) -> &'static str {
        match self {
            Self::LlamaCpp => "llama.cpp's /tokenize",
            Self::Vllm => "vLLM's /tokenize",
            Self::LlamaCppPython => "llama-cpp-python's /extras/tokenize/count",
        }
    }
}

/// The tokens a server's tokenizer made of one text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerTokenCount {
    pub tokens: u64,
    pub source: TokenizerSource,
}

/// At most [`SAMPLE_MAX_BYTES`] of `text`, cut at a character boundary.
pub fn bounded_sample(text: &str) -> &str {
    let mut end = text.len().min(SAMPLE_MAX_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Asks the server at `config.base_url` to count `text` ([`bounded_sample`]
/// of it) where llama.cpp and llama-cpp-python do, both at once, bounded
/// by `timeout`.
pub async fn count_tokens(
    config: &ProviderConfig,
    model: &str,
    text: &str,
    timeout: Duration,
) -> Option<ServerTokenCount> {
    let http = reqwest::Client::builder()
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .ok()?;
    let text = bounded_sample(text);
    let probe = Probe { http, key: config.api_key.as_deref(), root: root_of(&config.base_url) };
    let (llama_cpp, python) = tokio::join!(
        probe.post("/tokenize", json!({ "content": text, "prompt": text, "model": model })),
        probe.post("/extras/tokenize/count", json!({ "input": text, "model": model })),
    );
    llama_cpp
        .and_then(|body| parse_tokenize(&body))
        .or_else(|| python.and_then(|body| parse_count(&body)))
}

/// llama.cpp's or vLLM's `/tokenize`: the number of `tokens`.
pub fn parse_tokenize(body: &Value) -> Option<ServerTokenCount> {
    let tokens = body["tokens"].as_array()?.len() as u64;
    let source = match body.get("max_model_len") {
        Some(_) => TokenizerSource::Vllm,
        None => TokenizerSource::LlamaCpp,
    };
    (tokens > 0).then_some(ServerTokenCount { tokens, source })
}

/// llama-cpp-python's `/extras/tokenize/count`: `count`.
pub fn parse_count(body: &Value) -> Option<ServerTokenCount> {
    let tokens = body["count"].as_u64().filter(|count| *count > 0)?;
    Some(ServerTokenCount { tokens, source: TokenizerSource::LlamaCppPython })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llama_cpp_counts_its_tokens_with_or_without_pieces() {
        let ids = json!({"tokens": [15339, 1917, 0]});
        assert_eq!(parse_tokenize(&ids).map(|c| c.tokens), Some(3));
        let pieces =
            json!({"tokens": [{"id": 15339, "piece": "hello"}, {"id": 1917, "piece": " w"}]});
        assert_eq!(parse_tokenize(&pieces).map(|c| c.tokens), Some(2));
        assert_eq!(parse_tokenize(&json!({"tokens": []})), None, "nothing counted");
        assert_eq!(parse_tokenize(&json!({"count": 3})), None, "another server's shape");
        let vllm = json!({"count": 2, "max_model_len": 32768, "tokens": [9906, 1917]});
        let vllm = parse_tokenize(&vllm).unwrap();
        assert_eq!((vllm.tokens, vllm.source), (2, TokenizerSource::Vllm));
    }

    #[test]
    fn llama_cpp_python_says_the_count() {
        let count = parse_count(&json!({"count": 1234})).unwrap();
        assert_eq!((count.tokens, count.source), (1234, TokenizerSource::LlamaCppPython));
        assert_eq!(parse_count(&json!({"count": 0})), None);
        assert_eq!(parse_count(&json!({"count": "12"})), None);
        assert_eq!(parse_count(&json!({"detail": "Not Found"})), None);
    }

    #[test]
    fn the_sample_is_bounded_at_a_character_boundary() {
        assert_eq!(bounded_sample("short"), "short");
        let long = "é".repeat(SAMPLE_MAX_BYTES);
        let sample = bounded_sample(&long);
        assert!(sample.len() <= SAMPLE_MAX_BYTES && sample.len() >= SAMPLE_MAX_BYTES - 1);
        assert!(sample.chars().all(|c| c == 'é'));
    }
}
