//! Classification: HTTP error replies, in-stream error objects and
//! transport failures become [`LlmError`]s with the server's message and,
//! where keel can tell, the likely fix.
//!
//! Invariants: never panics on any body; error bodies are read in every
//! shape servers use (`{"error":{…}}`, `{"error":"…"}`, `{"message":…}`,
//! and Gemini's array `[{"error":{…}}]`), codes as strings or numbers.
//! Quota, authentication and invalid requests are never classified as
//! retryable; 5xx-class codes and "overloaded"/"server error" are, except
//! a request-validation report (`validation`), which is permanent whatever
//! its status.

use std::time::Duration;

use serde_json::Value;

use super::error::LlmError;

/// The longest server message we keep (bodies can be whole HTML pages).
const MAX_MESSAGE_CHARS: usize = 2000;

/// What we could read out of an error body.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ErrorBody {
    pub message: String,
    pub code: Option<String>,
    pub kind: Option<String>,
}

/// Reads an error body in any of the shapes servers use; anything else is
/// kept as trimmed text (an HTML page is named, not quoted).
pub(crate) fn parse_error_body(body: &str) -> ErrorBody {
    if looks_like_html(body) {
        return ErrorBody { message: "an HTML page".to_owned(), ..ErrorBody::default() };
    }
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        return ErrorBody { message: truncate(body.trim()), ..ErrorBody::default() };
    };
    error_from_json(&json)
        .unwrap_or_else(|| ErrorBody { message: truncate(body.trim()), ..ErrorBody::default() })
}

/// Extracts an error from a JSON value shaped like one of the vendors'
/// error objects, an envelope `{"error": …}` around one, or an array
/// whose first element is one (Gemini).
pub(crate) fn error_from_json(json: &Value) -> Option<ErrorBody> {
    if let Value::Array(elements) = json {
        return elements.first().and_then(error_from_json);
    }
    let object = match json.get("error") {
        Some(Value::String(message)) => {
            return Some(ErrorBody { message: truncate(message), ..ErrorBody::default() });
        }
        Some(inner @ Value::Object(_)) => inner,
        _ => json,
    };
    let message = object.get("message").and_then(Value::as_str)?;
    // Gemini says `status: "INVALID_ARGUMENT"` beside a numeric `code`.
    let code = object.get("code").and_then(scalar_string);
    let kind = object
        .get("type")
        .and_then(scalar_string)
        .or_else(|| object.get("status").and_then(scalar_string));
    Some(ErrorBody { message: truncate(message), code, kind })
}

/// Whether a chunk of a 200 stream is an error report rather than data.
pub(crate) fn stream_error(chunk: &Value) -> Option<ErrorBody> {
    match chunk {
        Value::Array(_) => error_from_json(chunk),
        Value::Object(map) => match map.get("error") {
            None | Some(Value::Null) => None,
            Some(_) => error_from_json(chunk).or_else(|| {
                Some(ErrorBody {
                    message: truncate(&chunk["error"].to_string()),
                    ..ErrorBody::default()
                })
            }),
        },
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => None,
    }
}

fn scalar_string(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Null | Value::Bool(_) | Value::Array(_) | Value::Object(_) => None,
    }
}

pub(crate) fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

pub(crate) fn looks_like_html(body: &str) -> bool {
    let start: String = body.trim_start().chars().take(15).collect::<String>().to_ascii_lowercase();
    start.starts_with("<!doctype html") || start.starts_with("<html")
}

/// Context about the request an HTTP error is classified against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorContext<'a> {
    pub api_key_env: &'a str,
    pub key_sent: bool,
    pub model: &'a str,
    /// The URL the request went to.
    pub url: &'a str,
    /// The configured base URL (for the "missing /v1" hint).
    pub base_url: &'a str,
    /// The protocol's path under the base URL (`chat/completions`).
    pub path: &'a str,
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
    let url = ctx.url.to_owned();
    if let Some(summary) = super::validation::summary(body, &parsed.message) {
        return LlmError::InvalidRequest { status, url, summary };
    }
    // One line, whatever the server wrote.
    let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
    match status {
        401 | 403 => LlmError::Auth {
            status,
            url,
            env_var: ctx.api_key_env.to_owned(),
            key_sent: ctx.key_sent,
            message,
        },
        429 | 402 if is_quota(&parsed) => {
            LlmError::Quota { status, url, env_var: ctx.api_key_env.to_owned(), message }
        }
        404 if is_model_not_found(&parsed) => {
            LlmError::UnknownModel { model: ctx.model.to_owned(), url, message }
        }
        400 | 413 | 422 if is_context_length(&parsed) => {
            LlmError::ContextLengthExceeded { message }
        }
        _ => {
            let hint = http_hint(status, ctx);
            LlmError::Http { status, url, message, hint, retry_after }
        }
    }
}

/// keel's guess at the fix for an HTTP failure, `; …` or empty.
fn http_hint(status: u16, ctx: ErrorContext<'_>) -> String {
    match status {
        404 | 405 if !has_version_segment(ctx.base_url) => {
            let base = ctx.base_url.trim_end_matches('/');
            format!("; does the base URL need the /v1 segment (try {base}/v1)?")
        }
        404 | 405 => format!(
            "; check the base URL, and that this server offers /{} (--provider openai posts to \
             /responses, openai-chat to /chat/completions, anthropic to /messages)",
            ctx.path
        ),
        _ => String::new(),
    }
}

/// Whether the URL's path ends in an API version segment (`/v1`,
/// `/v1beta/openai`, `/api/v3`) or names a deployment (Azure).
fn has_version_segment(base_url: &str) -> bool {
    let path = base_url.split_once("://").map_or(base_url, |(_, rest)| rest);
    let path = path.split('?').next().unwrap_or_default();
    path.split('/').skip(1).any(|segment| {
        let digits = segment.strip_prefix('v').unwrap_or_default();
        (digits.starts_with(|c: char| c.is_ascii_digit()))
            || segment == "deployments"
            || segment == "openai"
    })
}

/// Maps an error reported inside a stream (or a 200 JSON error) to an error.
pub(crate) fn classify_stream_error(body: ErrorBody) -> LlmError {
    if is_context_length(&body) {
        return LlmError::ContextLengthExceeded { message: body.message };
    }
    let retryable = !is_quota(&body) && !is_permanent(&body) && is_transient(&body);
    LlmError::Provider { code: body.code.or(body.kind), message: body.message, retryable }
}

/// Codes and messages of failures that go away with time.
fn is_transient(body: &ErrorBody) -> bool {
    let labels = [body.code.as_deref(), body.kind.as_deref()];
    let named = labels.into_iter().flatten().any(|label| {
        matches!(
            label,
            "server_error"
                | "internal_error"
                | "internal_server_error"
                | "api_error"
                | "overloaded_error"
                | "rate_limit_exceeded"
                | "rate_limit_error"
                | "server_is_overloaded"
                | "slow_down"
                | "timeout"
                | "UNAVAILABLE"
                | "INTERNAL"
                | "RESOURCE_EXHAUSTED"
                | "DEADLINE_EXCEEDED"
        ) || label
            .parse::<u16>()
            .is_ok_and(|status| status == 408 || status == 429 || status >= 500)
    });
    let message = body.message.to_lowercase();
    named
        || ["overloaded", "server error", "internal error", "temporarily unavailable", "try again"]
            .iter()
            .any(|needle| message.contains(needle))
}

/// Invalid requests and authentication: a retry gets the same answer.
fn is_permanent(body: &ErrorBody) -> bool {
    let labels = [body.code.as_deref(), body.kind.as_deref()];
    labels.into_iter().flatten().any(|label| {
        matches!(
            label,
            "invalid_request_error"
                | "authentication_error"
                | "permission_error"
                | "invalid_api_key"
                | "INVALID_ARGUMENT"
                | "PERMISSION_DENIED"
                | "UNAUTHENTICATED"
        ) || label
            .parse::<u16>()
            .is_ok_and(|status| (400..500).contains(&status) && status != 408 && status != 429)
    })
}

fn is_quota(body: &ErrorBody) -> bool {
    let labels = [body.code.as_deref(), body.kind.as_deref()];
    let named = labels.into_iter().flatten().any(|label| {
        matches!(label, "insufficient_quota" | "billing_error" | "billing_hard_limit_reached")
    });
    let message = body.message.to_lowercase();
    named
        || message.contains("exceeded your current quota")
        || message.contains("credit balance is too low")
        || message.contains("insufficient credits")
}

/// A successful status whose body is JSON, not an event stream: the
/// server's error if it holds one, else a malformed stream.
pub(crate) fn json_instead_of_stream(body: &str) -> LlmError {
    let parsed = serde_json::from_str::<Value>(body).ok();
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

/// The cause of a transport failure in a few words, with the likely fix
/// (reqwest's own text is a chain such as "error sending request for url
/// (…): client error (Connect): tcp connect error: Connection refused (os
/// error 111)").
pub(crate) fn transport_cause(error: &reqwest::Error) -> String {
    let mut chain = Vec::new();
    let mut cause: Option<&dyn std::error::Error> = Some(error);
    while let Some(inner) = cause {
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            if let Some(text) = io_cause(io.kind()) {
                return text.to_owned();
            }
        }
        chain.push(inner.to_string());
        cause = inner.source();
    }
    let all = chain.join(": ").to_lowercase();
    if all.contains("dns error") || all.contains("failed to lookup address") {
        return "cannot resolve the host name; check the base URL".to_owned();
    }
    if all.contains("certificate") || all.contains("tls") || all.contains("handshake") {
        let last = chain.last().cloned().unwrap_or_default();
        return format!("TLS failed ({last}); is it http:// rather than https://?");
    }
    if error.is_timeout() || error.is_connect() && all.contains("timed out") {
        return "the connection timed out; check the host and port".to_owned();
    }
    // The innermost cause says most; the outer ones repeat the URL.
    chain.last().cloned().unwrap_or_else(|| error.to_string())
}

fn io_cause(kind: std::io::ErrorKind) -> Option<&'static str> {
    use std::io::ErrorKind;
    match kind {
        ErrorKind::ConnectionRefused => {
            Some("connection refused: is the server running, and on this port?")
        }
        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted => {
            Some("the connection was reset by the server")
        }
        ErrorKind::TimedOut => Some("the connection timed out; check the host and port"),
        ErrorKind::UnexpectedEof => Some("the server closed the connection mid-reply"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CTX: ErrorContext<'static> = ErrorContext {
        api_key_env: "OPENAI_API_KEY",
        key_sent: true,
        model: "m",
        url: "http://127.0.0.1:9/v1/chat/completions",
        base_url: "http://127.0.0.1:9/v1",
        path: "chat/completions",
    };

    #[test]
    fn parses_every_vendor_shape_and_plain_text() {
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
        // Gemini's OpenAI-compatible endpoint answers with an array.
        let gemini = r#"[{"error":{"code":400,"message":"Function call is missing a thought_signature","status":"INVALID_ARGUMENT"}}]"#;
        let parsed = parse_error_body(gemini);
        assert_eq!(parsed.message, "Function call is missing a thought_signature");
        assert_eq!(parsed.code.as_deref(), Some("400"));
        assert_eq!(parsed.kind.as_deref(), Some("INVALID_ARGUMENT"));
        assert_eq!(
            parse_error_body("  <!DOCTYPE html><html>oops</html>\n").message,
            "an HTML page"
        );
        assert_eq!(parse_error_body("[1,2]").message, "[1,2]");
    }

    #[test]
    fn classifies_statuses() {
        let auth = classify_http(401, None, r#"{"error":{"message":"bad key"}}"#, CTX);
        assert!(auth.to_string().contains("$OPENAI_API_KEY"), "{auth}");
        let unsent = ErrorContext { key_sent: false, ..CTX };
        let auth = classify_http(401, None, r#"{"error":"unauthorized"}"#, unsent);
        assert!(auth.to_string().contains("no API key was sent: set $OPENAI_API_KEY"), "{auth}");
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
    fn quota_is_never_retried() {
        let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}"#;
        let error = classify_http(429, None, body, CTX);
        assert!(matches!(error, LlmError::Quota { .. }), "{error:?}");
        assert!(!error.is_retryable());
        let limited = classify_http(429, None, r#"{"error":{"message":"slow down"}}"#, CTX);
        assert!(limited.is_retryable());
    }

    #[test]
    fn a_404_names_the_url_and_suggests_the_missing_version() {
        let ctx = ErrorContext {
            url: "http://127.0.0.1:9/chat/completions",
            base_url: "http://127.0.0.1:9",
            ..CTX
        };
        let shown = classify_http(404, None, "404 page not found", ctx).to_string();
        assert_eq!(
            shown,
            "POST http://127.0.0.1:9/chat/completions returned HTTP 404: 404 page not found; \
             does the base URL need the /v1 segment (try http://127.0.0.1:9/v1)?"
        );
        let with_version = classify_http(404, None, "", CTX).to_string();
        assert!(with_version.contains("offers /chat/completions"), "{with_version}");
        assert!(has_version_segment("https://generativelanguage.googleapis.com/v1beta/openai"));
        assert!(has_version_segment("https://ark.cn-beijing.volces.com/api/v3"));
        assert!(!has_version_segment("http://localhost:11434"));
        assert!(!has_version_segment("http://localhost:11434/vision"));
    }

    #[test]
    fn stream_errors_retry_transient_codes_only() {
        let retryable = |chunk: &str| {
            let value: Value = serde_json::from_str(chunk).unwrap();
            classify_stream_error(stream_error(&value).unwrap()).is_retryable()
        };
        assert!(retryable(r#"{"error":{"code":502,"message":"Bad gateway"}}"#));
        assert!(retryable(r#"{"error":{"code":"503","message":"upstream"}}"#));
        assert!(retryable(r#"{"error":{"message":"Model is overloaded"}}"#));
        assert!(retryable(
            r#"[{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}]"#
        ));
        assert!(!retryable(
            r#"{"error":{"code":400,"message":"Server error in your tool schema"}}"#
        ));
        assert!(!retryable(r#"{"error":{"code":"insufficient_quota","message":"server error"}}"#));
        assert!(!retryable(r#"{"error":{"type":"invalid_request_error","message":"bad"}}"#));
        assert!(!retryable(r#"{"error":"unauthorized"}"#));
        assert!(stream_error(&serde_json::json!({"error": null, "choices": []})).is_none());
    }

    #[test]
    fn truncates_long_bodies_on_a_char_boundary() {
        let long = "é".repeat(MAX_MESSAGE_CHARS + 10);
        assert_eq!(parse_error_body(&long).message.chars().count(), MAX_MESSAGE_CHARS + 1);
    }
}
