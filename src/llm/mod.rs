//! LLM providers: the only user of reqwest. Streams a
//! [`ModelRequest`](crate::protocol::ModelRequest) to one of three wire
//! protocols over SSE and assembles a
//! [`ModelResponse`](crate::protocol::ModelResponse).
//!
//! Invariants: a response is returned only after the stream's completion
//! event; a stream cut before it is an error the retry loop may retry.
//! Retries (429/5xx/529, resets, cut streams, idle timeouts, one empty
//! response) happen here, honouring `Retry-After`, with exponential backoff
//! and jitter, each announced as a [`StreamEvent::Retrying`]; quota,
//! authentication and refused requests are never retried. Whatever a
//! server attaches for the next request (signatures, reasoning, opaque
//! metadata) is kept on the items and sent back verbatim where that server
//! wants it (`profile`).
//!
//! Layout: `sse` decodes bytes into events; `openai_responses`,
//! `openai_chat` and `anthropic` each own a pure stream reducer, unified by
//! `assembler`, and a request-body builder (the Responses body in
//! `responses_request`; Chat's tool-call and provider data assembly in
//! `chat_parts`, Anthropic's cache breakpoints in `cache_breakpoints`, images as each protocol's content in
//! `image_parts`); `client` does HTTP, timeouts, the deadline,
//! cancellation and the retry loop; `retry` the backoff arithmetic;
//! `error` the error type, `classify` the mapping of replies onto it with
//! hints; `profile` what a server needs that its stream does not say;
//! `window_probe` asks a server on this machine for its context window,
//! `tokenizer_probe` how many tokens its tokenizer makes of a sample;
//! `text_tool_calls` recovers calls a local model wrote as text.
//! Tests: `conformance_tests` (recorded captures), `reducer_tests`,
//! `server_shape_tests`, `fault_tests` and `request_tests` (wiremock),
//! sharing `test_support`.
//!
//! [`StreamEvent::Retrying`]: crate::protocol::StreamEvent::Retrying

use std::time::Duration;

mod anthropic;
mod assembler;
mod cache_breakpoints;
mod chat_parts;
mod classify;
mod client;
mod error;
mod image_parts;
mod json;
mod model_family;
mod openai_chat;
mod openai_responses;
mod profile;
mod responses_request;
mod retry;
mod sse;
mod text_tool_calls;
mod tokenizer_probe;
mod validation;
mod window_probe;

#[cfg(test)]
mod conformance_tests;
#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod reducer_tests;
#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod server_shape_tests;
#[cfg(test)]
mod sse_fuzz_tests;
#[cfg(test)]
mod test_support;

pub use client::LlmClient;
pub use error::LlmError;
pub use model_family::ModelChoice;
pub use profile::{
    CacheTtl, KeyHeader, LocalServer, OutputLimitField, ProfileSettings, ReasoningEcho,
    ServerProfile,
};
pub use text_tool_calls::{Recovered, TextForm, recover as recover_text_calls};
pub use tokenizer_probe::{
    ServerTokenCount, TOKENIZE_TIMEOUT, TokenizerSource, bounded_sample, count_tokens,
};
pub use window_probe::{PROBE_TIMEOUT, ServerWindow, WindowSource, list_models, probe_window};

/// Which wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI Responses API, `POST {base}/responses`. CLI name `openai`.
    OpenAiResponses,
    /// OpenAI-compatible Chat Completions, `POST {base}/chat/completions`.
    /// CLI name `openai-chat`.
    OpenAiChat,
    /// Anthropic Messages, `POST {base}/messages`. CLI name `anthropic`.
    Anthropic,
}

impl ProviderKind {
    pub fn cli_name(self) -> &'static str {
        match self {
            ProviderKind::OpenAiResponses => "openai",
            ProviderKind::OpenAiChat => "openai-chat",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    pub fn from_cli_name(name: &str) -> Option<Self> {
        match name {
            "openai" | "openai-responses" => Some(ProviderKind::OpenAiResponses),
            "openai-chat" | "chat" => Some(ProviderKind::OpenAiChat),
            "anthropic" => Some(ProviderKind::Anthropic),
            _ => None,
        }
    }

    /// The environment variable an API key is read from by default.
    pub fn default_api_key_env(self) -> &'static str {
        match self {
            ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// The protocol's path under the base URL.
    pub fn path(self) -> &'static str {
        match self {
            ProviderKind::OpenAiResponses => "responses",
            ProviderKind::OpenAiChat => "chat/completions",
            ProviderKind::Anthropic => "messages",
        }
    }

    pub fn default_base_url(self) -> &'static str {
        match self {
            ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat => "https://api.openai.com/v1",
            ProviderKind::Anthropic => "https://api.anthropic.com/v1",
        }
    }
}

/// Retry behaviour for transient failures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// Everything needed to talk to one provider endpoint.
#[derive(Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Base URL ending in the API version segment, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The key's value; `None` for servers that need none.
    pub api_key: Option<String>,
    /// Name of the variable the key came from (for error messages).
    pub api_key_env: String,
    pub retry: RetryPolicy,
    /// A server that sends nothing for this long (before the first byte
    /// or between two chunks) is treated as gone.
    pub idle_timeout: Duration,
    /// One request may not take longer than this, retries and backoffs
    /// included: keep-alives cannot hold a turn forever.
    pub request_timeout: Duration,
    /// What this server needs beyond the protocol (detected, then the
    /// `[provider]` settings).
    pub profile: ServerProfile,
}

impl ProviderConfig {
    /// What a command's or agent's `model:` comes to on this provider
    /// (`model_family`).
    pub fn choose_model(&self, requested: &str) -> ModelChoice {
        let custom = self.base_url.trim_end_matches('/') != self.kind.default_base_url();
        model_family::choose_model(self.kind, custom, requested)
    }
}

impl std::fmt::Debug for ProviderConfig {
    /// Never prints the key itself: configs end up in logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderConfig")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("retry", &self.retry)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("profile", &self.profile)
            .finish()
    }
}

/// What the request builders need besides the request itself.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WireOptions<'a> {
    pub profile: ServerProfile,
    /// `prompt_cache_key` to send (the session id), when the profile sends one.
    pub cache_key: Option<&'a str>,
    /// The model takes images: send them (else a text note each).
    pub images: bool,
    /// The JSON Schema the final answer must follow (`--output-schema`),
    /// asked for natively where the protocol can.
    pub answer_schema: Option<&'a serde_json::Value>,
}

impl WireOptions<'_> {
    /// The strict form of `tool`'s schema when the profile asks for strict
    /// tool calling and the tool has one (`protocol::strict_schema`); `None`
    /// sends the tool as it is, not strict.
    pub(crate) fn strict_parameters(
        &self,
        tool: &crate::protocol::ToolSpec,
        dialect: crate::protocol::strict_schema::StrictDialect,
    ) -> Option<serde_json::Value> {
        if !self.profile.strict_tools {
            return None;
        }
        crate::protocol::strict_schema::strict_parameters(tool, dialect)
    }
}
