//! LLM providers: the only user of reqwest. Streams a [`ModelRequest`] to one
//! of three wire protocols over SSE and assembles a [`ModelResponse`].
//!
//! Invariants: a response is returned only after the stream's completion
//! event; a stream cut before it is an error the retry loop may retry.
//! Retries (429/5xx/529, resets, cut streams) happen here, honouring
//! `Retry-After`, with exponential backoff and jitter.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::protocol::{ModelRequest, ModelResponse, StreamEvent};

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
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    pub kind: ProviderKind,
    /// Base URL ending in the API version segment, e.g. `http://127.0.0.1:11434/v1`.
    pub base_url: String,
    /// The key's value; `None` for servers that need none.
    pub api_key: Option<String>,
    /// Name of the variable the key came from (for error messages).
    pub api_key_env: String,
    pub retry: RetryPolicy,
    /// A stream that yields nothing for this long is treated as cut.
    pub idle_timeout: Duration,
}

/// Why a model request failed. `Display` always carries the server's own
/// message when there is one.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// 401/403: the message names the environment variable of the key.
    #[error("authentication failed (HTTP {status}): {message}; check the API key in ${env_var}")]
    Auth { status: u16, env_var: String, message: String },
    #[error("unknown model `{model}`: {message}")]
    UnknownModel { model: String, message: String },
    /// The driver can compact the history and retry.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded { message: String },
    #[error("cancelled")]
    Cancelled,
    /// Placeholder until the providers land.
    #[error("stub")]
    Stub,
}

/// A client for one provider endpoint.
#[derive(Debug, Clone)]
pub struct LlmClient {
    config: ProviderConfig,
}

impl LlmClient {
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        Ok(Self { config })
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Streams one request, calling `on_event` for each incremental event,
    /// retrying transient failures, and returns the assembled response.
    pub async fn stream(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, LlmError> {
        let _ = (request, on_event, cancel);
        Err(LlmError::Stub)
    }
}
