//! Provider errors: the [`LlmError`] enum and what may be retried.
//!
//! Invariants: every variant built from a server reply carries the server's
//! own message; each message is one line naming what was tried and, where
//! keel can tell, the likely fix. [`LlmError::is_retryable`] is the single
//! place that decides what the retry loop may retry: transient failures
//! only, never quota, authentication or a request the server refused.
//! Classification of replies lives in `classify`.

use std::time::Duration;

/// Why a model request failed. `Display` always carries the server's own
/// message when there is one, on one line.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// 401/403: names the environment variable of the key and whether one
    /// was sent at all.
    #[error("authentication failed (HTTP {status} from {url}): {}; {}", clause(.message), key_hint(.env_var, *.key_sent))]
    Auth { status: u16, url: String, env_var: String, key_sent: bool, message: String },
    /// 429 with `insufficient_quota` (or a billing error): waiting does not
    /// help, so it is never retried.
    #[error(
        "quota exhausted (HTTP {status} from {url}): {}; check the plan and billing of the key in ${env_var}",
        clause(.message)
    )]
    Quota { status: u16, url: String, env_var: String, message: String },
    /// 404 naming the model: the server has no model of that name.
    #[error(
        "unknown model `{model}` (HTTP 404 from {url}): {}; name one this server has with --model (or `model` in config.toml)",
        clause(.message)
    )]
    UnknownModel { model: String, url: String, message: String },
    /// The driver can compact the history and retry.
    #[error("context length exceeded: {message}")]
    ContextLengthExceeded { message: String },
    #[error("cancelled")]
    Cancelled,
    /// Any other non-success HTTP status; retryable for 408, 429 and 5xx.
    /// `hint` is keel's guess at the fix (a missing `/v1`, the wrong
    /// protocol), empty when it has none.
    #[error("POST {url} returned HTTP {status}: {message}{hint}")]
    Http { status: u16, url: String, message: String, hint: String, retry_after: Option<Duration> },
    /// The server's request validation rejected the body (whatever the
    /// status: llama-cpp-python says 500): the same request gets the same
    /// answer, so it is never retried. `summary` is the report in one line
    /// (`llm::validation`).
    #[error(
        "POST {url} returned HTTP {status}: the server rejected keel's request as invalid ({summary}); a retry gets the same answer; please report it with the session log"
    )]
    InvalidRequest { status: u16, url: String, summary: String },
    /// Connecting, sending or reading the body failed (reset, refused, …);
    /// `message` is the cause in a few words with the likely fix.
    #[error("{} {url}: {message}", if *.connecting { "cannot reach" } else { "the connection broke off from" })]
    Transport {
        url: String,
        message: String,
        /// No connection was made at all.
        connecting: bool,
        #[source]
        source: reqwest::Error,
    },
    /// A successful status with a body that is not an API stream: an HTML
    /// page (a web server or a login portal at the base URL).
    #[error(
        "POST {url} answered with {what}, not an API stream; check the base URL (OpenAI-compatible APIs usually end in /v1)"
    )]
    NotAnApi { url: String, what: String },
    /// The body ended before the protocol's completion event.
    #[error("stream ended before its completion event `{expected}`")]
    StreamCut { expected: &'static str },
    /// A successful status whose stream closed before any event:
    /// llama-cpp-python does this when the prompt does not fit its window
    /// (the error is raised after the headers went out). The client then
    /// re-sends the request once unstreamed to get the real error;
    /// `resent` says that re-send did not tell either. Not retried: the
    /// same request closes the same way.
    #[error(
        "the server answered HTTP 200 and closed the stream without any data{}",
        if *.resent { "; re-sent unstreamed, it did not say why either" } else { "" }
    )]
    StreamEmpty { resent: bool },
    /// Nothing arrived from the server for the idle timeout.
    #[error("no data from the server for {}s (idle_timeout_secs)", .after.as_secs_f64())]
    IdleTimeout { after: Duration },
    /// No part of the answer came within `request_timeout_secs` of the
    /// request (retries included): keep-alives only, or nothing at all.
    #[error("no complete response within {}s (request_timeout_secs); the server kept the request open without sending any of the answer", .after.as_secs_f64())]
    DeadlineExceeded { after: Duration },
    /// The answer had started, then nothing more of it came for
    /// `request_timeout_secs` while the server kept the stream open.
    #[error("the answer stopped streaming for {}s (request_timeout_secs) while the server kept the request open", .after.as_secs_f64())]
    AnswerStalled { after: Duration },
    /// The answer kept streaming past keel's bound on one response.
    #[error("the answer was still streaming after {}s, the most one response may take (4 × request_timeout_secs)", .after.as_secs_f64())]
    StreamTooLong { after: Duration },
    /// The server sent more than keel keeps of one response (`what`: one
    /// line or event, or the response's text): a broken or hostile server,
    /// never a real answer. Not retried: the same server floods again.
    #[error(
        "the server sent {what} of more than {} MiB; keel stopped reading (no real model response is that large)",
        .limit / (1024 * 1024)
    )]
    ResponseTooLarge { what: &'static str, limit: usize },
    /// An event's data was not what the protocol requires (e.g. not JSON).
    #[error("malformed stream event `{event}`: {message}")]
    MalformedStream { event: String, message: String },
    /// The provider reported an error inside the stream (`error` event,
    /// `response.failed`, an `error` object in a chunk).
    #[error("provider error ({}): {message}", .code.as_deref().unwrap_or("no code"))]
    Provider { code: Option<String>, message: String, retryable: bool },
    /// The stream completed without any text or tool call.
    #[error(
        "the server ended the response without any text or tool call (stop reason: {stop_reason})"
    )]
    EmptyResponse { stop_reason: String },
    /// Transient failures kept happening; `last` is the final attempt's error.
    #[error("{last} (gave up after {attempts} attempts)")]
    RetriesExhausted {
        attempts: u32,
        #[source]
        last: Box<LlmError>,
    },
    /// The [`super::ProviderConfig`] cannot be used (bad URL, bad key bytes).
    #[error("invalid provider configuration: {message}")]
    InvalidConfig { message: String },
}

/// The server's sentence as a clause before keel's remedy: its closing
/// full stop would read `.;` after it.
fn clause(message: &str) -> &str {
    let message = message.trim_end();
    message.strip_suffix('.').filter(|rest| !rest.ends_with('.')).unwrap_or(message)
}

fn key_hint(env_var: &str, key_sent: bool) -> String {
    if key_sent {
        format!("check the API key in ${env_var}")
    } else {
        format!("no API key was sent: set ${env_var} (or `api_key_env` in config)")
    }
}

impl LlmError {
    /// Whether a new attempt of the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => is_retryable_status(*status),
            LlmError::Transport { source, .. } => !source.is_builder(),
            LlmError::StreamCut { .. }
            | LlmError::IdleTimeout { .. }
            | LlmError::EmptyResponse { .. } => true,
            LlmError::Provider { retryable, .. } => *retryable,
            LlmError::Auth { .. }
            | LlmError::Quota { .. }
            | LlmError::UnknownModel { .. }
            | LlmError::ContextLengthExceeded { .. }
            | LlmError::Cancelled
            | LlmError::InvalidRequest { .. }
            | LlmError::NotAnApi { .. }
            | LlmError::DeadlineExceeded { .. }
            | LlmError::AnswerStalled { .. }
            | LlmError::StreamTooLong { .. }
            | LlmError::StreamEmpty { .. }
            | LlmError::ResponseTooLarge { .. }
            | LlmError::MalformedStream { .. }
            | LlmError::RetriesExhausted { .. }
            | LlmError::InvalidConfig { .. } => false,
        }
    }

    /// How long the server asked us to wait before retrying, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Http { retry_after, .. } => *retry_after,
            LlmError::RetriesExhausted { last, .. } => last.retry_after(),
            LlmError::Auth { .. }
            | LlmError::Quota { .. }
            | LlmError::UnknownModel { .. }
            | LlmError::ContextLengthExceeded { .. }
            | LlmError::Cancelled
            | LlmError::InvalidRequest { .. }
            | LlmError::Transport { .. }
            | LlmError::NotAnApi { .. }
            | LlmError::StreamCut { .. }
            | LlmError::StreamEmpty { .. }
            | LlmError::IdleTimeout { .. }
            | LlmError::DeadlineExceeded { .. }
            | LlmError::AnswerStalled { .. }
            | LlmError::StreamTooLong { .. }
            | LlmError::ResponseTooLarge { .. }
            | LlmError::MalformedStream { .. }
            | LlmError::Provider { .. }
            | LlmError::EmptyResponse { .. }
            | LlmError::InvalidConfig { .. } => None,
        }
    }

    /// The error of the last attempt (unwraps [`LlmError::RetriesExhausted`]).
    pub fn last_attempt(&self) -> &LlmError {
        match self {
            LlmError::RetriesExhausted { last, .. } => last.last_attempt(),
            other => other,
        }
    }

    /// A few words for a "retrying" line: what went wrong, without the URL.
    pub fn short_reason(&self) -> String {
        match self {
            LlmError::Http { status, .. } => format!("HTTP {status}"),
            LlmError::Transport { message, .. } => message.clone(),
            LlmError::StreamCut { .. } => "the stream was cut".to_owned(),
            LlmError::IdleTimeout { after } => {
                format!("no data for {}s", after.as_secs_f64())
            }
            LlmError::Provider { code, message, .. } => match code {
                Some(code) => format!("provider error {code}: {message}"),
                None => format!("provider error: {message}"),
            },
            LlmError::EmptyResponse { .. } => "empty response".to_owned(),
            other => other.to_string(),
        }
    }

    pub(crate) fn transport(source: reqwest::Error, url: &str) -> Self {
        LlmError::Transport {
            url: url.to_owned(),
            message: super::classify::transport_cause(&source),
            connecting: source.is_connect(),
            source,
        }
    }

    pub(crate) fn malformed(event: &str, message: impl Into<String>) -> Self {
        LlmError::MalformedStream { event: event.to_owned(), message: message.into() }
    }
}

/// 408, 429 and every 5xx (529 "overloaded" included) are transient.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}
