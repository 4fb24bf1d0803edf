//! The streamable HTTP transport's HTTP side, on keel's own reqwest 0.12
//! client: rmcp's worker (sessions, reconnects, the JSON-RPC framing) is
//! used as is, through its [`StreamableHttpClient`] trait.
//!
//! Why not rmcp's own reqwest backend: it is reqwest 0.13, a second copy
//! of the HTTP stack (plus the platform certificate verifier) to build on
//! two cores, for the three requests below.
//!
//! A URL answering POST with 405 is named as a legacy HTTP+SSE endpoint
//! (`legacy_sse`), the usual reason a configured server fails that way;
//! the client remembers it so the connection can try that transport.
//!
//! Invariants: every body is read within a limit (JSON bodies and
//! diagnostics by the transport's limits, each SSE event by
//! `max_sse_event_size`), so a hostile server cannot exhaust memory; a
//! request that expects no answer (a notification) never fails on an odd
//! but successful response.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Sse, SseStream};

/// A POST refused with 405 (or answered with an event stream and an
/// error): the URL is most likely a legacy HTTP+SSE endpoint (MCP
/// 2024-11-05, a GET stream plus a separate POST URL). keel then tries
/// that transport (`legacy_sse`); this message says what happened if that
/// fails too, not a bare "HTTP 405".
fn legacy_sse(status: reqwest::StatusCode) -> String {
    format!(
        "HTTP {status}: this URL does not accept MCP requests by POST; it looks like a server \
         speaking MCP's legacy HTTP+SSE transport (2024-11-05). Use the server's streamable \
         HTTP endpoint (often `/mcp` where the legacy one is `/sse`), or set \
         `transport = \"sse\"` with the URL of its event stream"
    )
}

const SESSION_HEADER: &str = "Mcp-Session-Id";
const LAST_EVENT_ID_HEADER: &str = "Last-Event-Id";
const EVENT_STREAM: &str = "text/event-stream";
const JSON: &str = "application/json";
/// The SSE event limit when the transport does not pass one.
const DEFAULT_MAX_SSE_EVENT: usize = 16 * 1024 * 1024;

type HttpError = StreamableHttpError<reqwest::Error>;

/// keel's HTTP client for MCP servers; it remembers whether a POST was
/// refused as a legacy SSE endpoint would (`connection.rs` falls back to
/// `legacy_sse` then).
#[derive(Debug, Clone, Default)]
pub struct McpHttpClient(reqwest::Client, Arc<AtomicBool>);

impl McpHttpClient {
    /// Redirects are not followed: reqwest would resend the configured
    /// headers (API keys: it strips only `Authorization` and cookies) and
    /// the calls' arguments to whatever host the answer names. The MCP
    /// transport has no use for redirects; a moved server is reconfigured.
    pub fn new() -> Self {
        let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build();
        Self(client.unwrap_or_default(), Arc::default())
    }

    /// The underlying client (same policy: no redirects).
    pub fn inner(&self) -> &reqwest::Client {
        &self.0
    }

    /// Whether a POST was answered 405 (a legacy HTTP+SSE endpoint).
    pub fn saw_legacy_sse(&self) -> bool {
        self.1.load(Ordering::SeqCst)
    }

    fn request(
        &self,
        builder: reqwest::RequestBuilder,
        session_id: Option<&str>,
        auth_token: Option<String>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> reqwest::RequestBuilder {
        let mut builder = builder;
        if let Some(session_id) = session_id {
            builder = builder.header(SESSION_HEADER, session_id);
        }
        if let Some(token) = auth_token {
            builder = builder.bearer_auth(token);
        }
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        builder
    }
}

fn media_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
}

/// Reads at most `limit` bytes of the body; `Err` if it is longer.
async fn bounded_body(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| StreamableHttpError::Client(error.without_url()))?;
        if body.len() + chunk.len() > limit {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The start of a failed response's body, for the error message.
async fn diagnostic(response: reqwest::Response, limit: usize) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= limit {
            body.truncate(limit);
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}

/// The response body as SSE events, each at most `max_event` bytes.
pub(super) fn sse_events(
    response: reqwest::Response,
    max_event: usize,
) -> BoxStream<'static, Result<Sse, SseError>> {
    let mut since_boundary = 0usize;
    let mut last = 0u8;
    let bytes = response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(|error| std::io::Error::other(error.to_string()))?;
        for &byte in chunk.iter() {
            // An event ends at a blank line ("\n\n"); "\r\n" endings end
            // with the same two "\n" bytes apart only by "\r".
            since_boundary = if byte == b'\n' && last == b'\n' { 0 } else { since_boundary + 1 };
            if byte != b'\r' {
                last = byte;
            }
        }
        if since_boundary > max_event {
            return Err(std::io::Error::other(format!(
                "an SSE event is larger than {max_event} bytes"
            )));
        }
        Ok(chunk)
    });
    SseStream::from_bytes_stream(bytes).boxed()
}

impl StreamableHttpClient for McpHttpClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        let awaits_no_response = !matches!(message, JsonRpcMessage::Request(_));
        let builder = self.0.post(uri.as_ref()).header(ACCEPT, format!("{JSON}, {EVENT_STREAM}"));
        let response = self
            .request(builder, session_id.as_deref(), auth_token, custom_headers)
            .json(&message)
            .send()
            .await
            .map_err(|error| StreamableHttpError::Client(error.without_url()))?;
        let status = response.status();
        if matches!(status, reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        let new_session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let media = media_type(&response);
        if status == reqwest::StatusCode::METHOD_NOT_ALLOWED
            || media.as_deref() == Some(EVENT_STREAM) && !status.is_success()
        {
            self.1.store(true, Ordering::SeqCst);
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(legacy_sse(
                status,
            ))));
        }
        if !status.is_success() {
            if media.as_deref() == Some(JSON) {
                let body = bounded_body(response, limits.max_json_response_size).await?;
                if let Ok(error @ JsonRpcMessage::Error(_)) =
                    serde_json::from_slice::<ServerJsonRpcMessage>(&body)
                {
                    return Ok(StreamableHttpPostResponse::Json(error, new_session));
                }
                let text = String::from_utf8_lossy(&body);
                let shown: String = text.chars().take(limits.max_error_response_size).collect();
                return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                    "HTTP {status}: {shown}"
                ))));
            }
            let text = diagnostic(response, limits.max_error_response_size).await;
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(format!(
                "HTTP {status}: {text}"
            ))));
        }
        match media.as_deref() {
            Some(EVENT_STREAM) => Ok(StreamableHttpPostResponse::Sse(
                sse_events(response, limits.max_sse_event_size),
                new_session,
            )),
            Some(JSON) => {
                let body = bounded_body(response, limits.max_json_response_size).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(parsed) => Ok(StreamableHttpPostResponse::Json(parsed, new_session)),
                    Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                    Err(error) => Err(StreamableHttpError::Deserialize(error)),
                }
            }
            // Some servers answer a notification with an empty 200.
            _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_owned))),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        let builder = self.0.delete(uri.as_ref());
        let response = self
            .request(builder, Some(&session_id), auth_token, custom_headers)
            .send()
            .await
            .map_err(|error| StreamableHttpError::Client(error.without_url()))?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        response
            .error_for_status()
            .map_err(|error| StreamableHttpError::Client(error.without_url()))?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            DEFAULT_MAX_SSE_EVENT,
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, HttpError> {
        let mut builder =
            self.0.get(uri.as_ref()).header(ACCEPT, format!("{EVENT_STREAM}, {JSON}"));
        if let Some(last_event_id) = last_event_id {
            builder = builder.header(LAST_EVENT_ID_HEADER, last_event_id);
        }
        let response = self
            .request(builder, session_id.as_deref(), auth_token, custom_headers)
            .send()
            .await
            .map_err(|error| StreamableHttpError::Client(error.without_url()))?;
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let response = response
            .error_for_status()
            .map_err(|error| StreamableHttpError::Client(error.without_url()))?;
        match media_type(&response).as_deref() {
            Some(EVENT_STREAM | JSON) => Ok(sse_events(response, max_sse_event_size)),
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_owned))),
        }
    }
}
