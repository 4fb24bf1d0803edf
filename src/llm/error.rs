//! Provider errors: the [`LlmError`] enum, and the classification of HTTP
//! error responses and in-stream error events into it.
//!
//! Invariants: every variant built from a server reply carries the server's
//! own message; [`LlmError::is_retryable`] is the single place that decides
//! what the retry loop may retry (transient failures only); classification
//! never panics on any body.

use std::time::Duration;

/// The longest server message we keep (bodies can be whole HTML pages).
const MAX_MESSAGE_CHARS: usize = 2000;

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
    /// Any other non-success HTTP status; retryable for 408, 429 and 5xx.
    #[error("server returned HTTP {status}: {message}")]
    Http { status: u16, message: String, retry_after: Option<Duration> },
    /// Connecting, sending or reading the body failed (reset, refused, …).
    #[error("transport error: {message}")]
    Transport {
        message: String,
        #[source]
        source: reqwest::Error,
    },
    /// The body ended before the protocol's completion event.
    #[error("stream ended before its completion event `{expected}`")]
    StreamCut { expected: &'static str },
    /// Nothing arrived from the server for the configured idle timeout.
    #[error("no data from the server for {after:?}")]
    IdleTimeout { after: Duration },
    /// An event's data was not what the protocol requires (e.g. not JSON).
    #[error("malformed stream event `{event}`: {message}")]
    MalformedStream { event: String, message: String },
    /// The provider reported an error inside the stream (`error` event,
    /// `response.failed`).
    #[error("provider error ({}): {message}", .code.as_deref().unwrap_or("no code"))]
    Provider { code: Option<String>, message: String, retryable: bool },
    /// Transient failures kept happening; `last` is the final attempt's error.
    #[error("gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        attempts: u32,
        #[source]
        last: Box<LlmError>,
    },
    /// The [`super::ProviderConfig`] cannot be used (bad URL, bad key bytes).
    #[error("invalid provider configuration: {message}")]
    InvalidConfig { message: String },
}

impl LlmError {
    /// Whether a new attempt of the same request may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => is_retryable_status(*status),
            LlmError::Transport { source, .. } => !source.is_builder(),
            LlmError::StreamCut { .. } | LlmError::IdleTimeout { .. } => true,
            LlmError::Provider { retryable, .. } => *retryable,
            LlmError::Auth { .. }
            | LlmError::UnknownModel { .. }
            | LlmError::ContextLengthExceeded { .. }
            | LlmError::Cancelled
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
            | LlmError::UnknownModel { .. }
            | LlmError::ContextLengthExceeded { .. }
            | LlmError::Cancelled
            | LlmError::Transport { .. }
            | LlmError::StreamCut { .. }
            | LlmError::IdleTimeout { .. }
            | LlmError::MalformedStream { .. }
            | LlmError::Provider { .. }
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

    pub(crate) fn transport(source: reqwest::Error) -> Self {
        // `{:#}`-style chain: reqwest's top message hides the cause
        // ("error sending request"), so append the sources.
        let mut message = source.to_string();
        let mut cause = std::error::Error::source(&source);
        while let Some(inner) = cause {
            message.push_str(": ");
            message.push_str(&inner.to_string());
            cause = inner.source();
        }
        LlmError::Transport { message, source }
    }

    pub(crate) fn malformed(event: &str, message: impl Into<String>) -> Self {
        LlmError::MalformedStream { event: event.to_owned(), message: message.into() }
    }
}

/// 408, 429 and every 5xx (529 "overloaded" included) are transient.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..=599).contains(&status)
}

/// What we could read out of an error body.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorBody {
    pub message: String,
    pub code: Option<String>,
    pub kind: Option<String>,
}

/// Reads `{"error":{"message","type","code"}}` (OpenAI, Anthropic),
/// `{"error":"…"}` (Ollama) or `{"message":…}`; anything else is kept as
/// trimmed text.
pub(crate) fn parse_error_body(body: &str) -> ErrorBody {
    let Ok(json) = serde_json::from_str::<serde_json::Value>(body) else {
        return ErrorBody { message: truncate(body.trim()), ..ErrorBody::default() };
    };
    error_from_json(&json)
        .unwrap_or_else(|| ErrorBody { message: truncate(body.trim()), ..ErrorBody::default() })
}

/// Extracts an error from a JSON value shaped like one of the vendors'
/// error objects (or an envelope `{"error": …}` around one).
pub(crate) fn error_from_json(json: &serde_json::Value) -> Option<ErrorBody> {
    let object = match json.get("error") {
        Some(serde_json::Value::String(message)) => {
            return Some(ErrorBody { message: truncate(message), ..ErrorBody::default() });
        }
        Some(inner @ serde_json::Value::Object(_)) => inner,
        _ => json,
    };
    let message = object.get("message").and_then(|m| m.as_str())?;
    let code = object.get("code").and_then(scalar_string);
    let kind = object.get("type").and_then(scalar_string);
    Some(ErrorBody { message: truncate(message), code, kind })
}

fn scalar_string(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Null
        | serde_json::Value::Bool(_)
        | serde_json::Value::Array(_)
        | serde_json::Value::Object(_) => None,
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Context about the request an HTTP error is classified against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorContext<'a> {
    pub api_key_env: &'a str,
    pub model: &'a str,
}

/// Maps a non-success HTTP reply to an error.
pub(crate) fn classify_http(
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
    ctx: ErrorContext<'_>,
) -> LlmError {
    let parsed = parse_error_body(body);
    let message = if parsed.message.is_empty() {
        format!("empty response body (HTTP {status})")
    } else {
        parsed.message.clone()
    };
    match status {
        401 | 403 => LlmError::Auth { status, env_var: ctx.api_key_env.to_owned(), message },
        404 if is_model_not_found(&parsed) => {
            LlmError::UnknownModel { model: ctx.model.to_owned(), message }
        }
        400 | 413 | 422 if is_context_length(&parsed) => {
            LlmError::ContextLengthExceeded { message }
        }
        _ => LlmError::Http { status, message, retry_after },
    }
}

/// Maps an error reported inside a stream to an error.
pub(crate) fn classify_stream_error(body: ErrorBody) -> LlmError {
    if is_context_length(&body) {
        return LlmError::ContextLengthExceeded { message: body.message };
    }
    let retryable = [body.code.as_deref(), body.kind.as_deref()].into_iter().flatten().any(|c| {
        matches!(
            c,
            "server_error"
                | "internal_error"
                | "api_error"
                | "overloaded_error"
                | "rate_limit_exceeded"
                | "rate_limit_error"
                | "server_is_overloaded"
                | "slow_down"
        )
    });
    LlmError::Provider { code: body.code.or(body.kind), message: body.message, retryable }
}

/// A successful status whose body is JSON, not an event stream: the
/// server's error if it holds one, else a malformed stream.
pub(crate) fn json_instead_of_stream(body: &str) -> LlmError {
    let parsed = serde_json::from_str::<serde_json::Value>(body).ok();
    match parsed.as_ref().and_then(error_from_json) {
        Some(error) => classify_stream_error(error),
        None => LlmError::malformed(
            "body",
            format!("expected an event stream, got JSON: {}", truncate(body.trim())),
        ),
    }
}

fn is_context_length(body: &ErrorBody) -> bool {
    if body.code.as_deref() == Some("context_length_exceeded") {
        return true;
    }
    let message = body.message.to_lowercase();
    [
        "context_length_exceeded",
        "maximum context length",
        "context length",
        "context window",
        "prompt is too long",
        "input length and `max_tokens` exceed",
        "input length and max_tokens exceed",
    ]
    .iter()
    .any(|needle| message.contains(needle))
}

fn is_model_not_found(body: &ErrorBody) -> bool {
    if body.code.as_deref() == Some("model_not_found") {
        return true;
    }
    let message = body.message.to_lowercase();
    let mentions_model = message.contains("model");
    let not_found = body.kind.as_deref() == Some("not_found_error")
        || message.contains("not found")
        || message.contains("does not exist");
    mentions_model && not_found
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: ErrorContext<'static> = ErrorContext { api_key_env: "OPENAI_API_KEY", model: "m" };

    #[test]
    fn parses_the_three_vendor_shapes_and_plain_text() {
        let openai = r#"{"error":{"message":"bad","type":"invalid_request_error","code":"x"}}"#;
        assert_eq!(parse_error_body(openai).message, "bad");
        assert_eq!(parse_error_body(openai).code.as_deref(), Some("x"));
        let anthropic =
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: x"}}"#;
        assert_eq!(parse_error_body(anthropic).kind.as_deref(), Some("not_found_error"));
        assert_eq!(
            parse_error_body(r#"{"error":"model 'x' not found"}"#).message,
            "model 'x' not found"
        );
        assert_eq!(parse_error_body("  <html>oops</html>\n").message, "<html>oops</html>");
        assert_eq!(parse_error_body("[1,2]").message, "[1,2]");
    }

    #[test]
    fn classifies_statuses() {
        let auth = classify_http(401, None, r#"{"error":{"message":"bad key"}}"#, CTX);
        assert!(auth.to_string().contains("$OPENAI_API_KEY"), "{auth}");
        let anthropic_404 =
            r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}"#;
        assert!(matches!(
            classify_http(404, None, anthropic_404, CTX),
            LlmError::UnknownModel { .. }
        ));
        let too_long = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        assert!(matches!(
            classify_http(400, None, too_long, CTX),
            LlmError::ContextLengthExceeded { .. }
        ));
        let plain_400 = classify_http(400, None, r#"{"error":{"message":"bad tool"}}"#, CTX);
        assert!(!plain_400.is_retryable());
        let overloaded = classify_http(529, Some(Duration::from_secs(2)), "", CTX);
        assert!(overloaded.is_retryable());
        assert_eq!(overloaded.retry_after(), Some(Duration::from_secs(2)));
        assert!(overloaded.to_string().contains("529"), "{overloaded}");
    }

    #[test]
    fn truncates_long_bodies_on_a_char_boundary() {
        let long = "é".repeat(MAX_MESSAGE_CHARS + 10);
        assert_eq!(parse_error_body(&long).message.chars().count(), MAX_MESSAGE_CHARS + 1);
    }
}
