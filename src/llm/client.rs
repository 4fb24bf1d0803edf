//! The HTTP side: [`LlmClient`] sends one request, decodes the SSE body,
//! feeds the protocol's assembler, and retries transient failures.
//!
//! Invariants: every await is raced against the cancellation token (biased
//! towards cancelling) and, while waiting on the server, against the idle
//! timeout and the request's deadline. The deadline bounds *waiting*, not
//! progress: `request_timeout` runs from the request (retries and backoffs
//! included) and starts again with each piece of the answer that streams,
//! so a server sending only keep-alives cannot hold a turn past it, while
//! one that keeps delivering text goes on, up to its own larger bound
//! ([`STREAM_BOUND_FACTOR`] × `request_timeout` from the request). Each
//! of the three ends has its own message. Only errors for which
//! [`LlmError::is_retryable`] holds are retried, at most
//! `RetryPolicy::max_retries` times, and every retry is announced
//! ([`StreamEvent::Retrying`]) before its backoff. A retried attempt
//! streams its events again from the start. A response with no text and
//! no tool call is retried once, then reported as an error.
//!
//! A 200 whose stream closes before any event ([`LlmError::StreamEmpty`]:
//! llama-cpp-python on a prompt that overflows its window) is re-sent once
//! unstreamed (`"stream": false`), whose reply carries the real error (or
//! the answer). With `[provider] stream = false` every request goes
//! unstreamed; its wait for the whole answer is bounded by
//! `request_timeout`, not the idle timeout (nothing streams meanwhile).
//!
//! Memory is bounded whatever the server sends: one SSE line or event by
//! the decoder's limit ([`super::sse::MAX_EVENT_BYTES`]), the streamed
//! text, reasoning and call arguments of one response by
//! [`MAX_RESPONSE_BYTES`], and a non-stream body (an error page, a JSON
//! error) by [`MAX_ERROR_BODY_BYTES`]; past a cap the attempt fails with
//! [`LlmError::ResponseTooLarge`] and the connection is dropped.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::assembler::Assembler;
use super::classify::{ErrorContext, classify_http, json_instead_of_stream};
use super::error::LlmError;
use super::profile::{CacheTtl, KeyHeader};
use super::retry::{backoff_delay, parse_retry_after};
use super::sse::{EventTooLarge, SseDecoder};
use super::{ProviderConfig, ProviderKind, WireOptions, anthropic, openai_chat, responses_request};
use crate::protocol::{ModelRequest, ModelResponse, StreamEvent};

/// Sent with every Anthropic request.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Sent with Anthropic requests that write one-hour cache entries.
const ANTHROPIC_CACHE_TTL_BETA: &str = "extended-cache-ttl-2025-04-11";
/// Establishing a TCP/TLS connection may not take longer than this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most text, reasoning and tool-call arguments one response may
/// stream. The largest real outputs (128k tokens) are under 1 MiB.
pub(crate) const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;
/// A response that keeps streaming its answer may take this many times
/// `request_timeout` in all (40 min at the default 600 s).
pub(crate) const STREAM_BOUND_FACTOR: u32 = 4;
/// How much of a body that is not an event stream (an error page, a JSON
/// error) keel reads; the rest is dropped, the message needs no more.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// A client for one provider endpoint.
#[derive(Debug, Clone)]
pub struct LlmClient {
    config: ProviderConfig,
    endpoint: reqwest::Url,
    http: reqwest::Client,
    /// The session id, sent as `prompt_cache_key` where the profile says
    /// so, so a session's requests reach the same prompt cache.
    cache_key: Option<String>,
}

impl LlmClient {
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let endpoint = endpoint_url(&config)?;
        if let Some(key) = &config.api_key {
            HeaderValue::from_str(key).map_err(|_| LlmError::InvalidConfig {
                message: format!(
                    "the API key in ${} has characters not allowed in an HTTP header",
                    config.api_key_env
                ),
            })?;
        }
        // No redirects: reqwest strips `Authorization` on a cross-host
        // redirect but resends `x-api-key`/`api-key` and the conversation
        // to whatever host a 307 names. A moved endpoint is an error
        // naming the new address (`classify`), for the user to configure.
        let mut builder = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none());
        if is_plain_loopback(&endpoint) {
            // A local server over plain HTTP costs ~0.1 ms per connection,
            // while reusing one lets the kernel's delayed ACK meet a server
            // that leaves Nagle on (Python's http.server, many small local
            // servers): every streamed response then stalls ~40 ms. Remote
            // and TLS endpoints keep their pooled connections.
            builder = builder.pool_max_idle_per_host(0);
        }
        let http = builder
            .build()
            .map_err(|err| LlmError::InvalidConfig { message: format!("http client: {err}") })?;
        Ok(Self { config, endpoint, http, cache_key: None })
    }

    /// Sends `key` (the session id) as the prompt cache key.
    pub fn with_cache_key(mut self, key: impl Into<String>) -> Self {
        self.cache_key = Some(key.into());
        self
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// Streams one request, calling `on_event` for each incremental event
    /// and each retry, retrying transient failures, and returns the
    /// assembled response.
    pub async fn stream(
        &self,
        request: &ModelRequest,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, LlmError> {
        self.stream_shaped(request, None, on_event, cancel).await
    }

    /// [`Self::stream`], asking for a final answer of the JSON Schema
    /// `answer` where the protocol can (`protocol::answer_shape`).
    pub async fn stream_shaped(
        &self,
        request: &ModelRequest,
        answer: Option<&Value>,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, LlmError> {
        // Serialized once: every attempt sends the same bytes.
        let body = serialized(&self.shaped_body(request, answer))?;
        let streamed = !self.config.profile.unstreamed;
        let mut resent = false;
        let started = Instant::now();
        let mut clock = Deadlines {
            waiting_until: started + self.config.request_timeout,
            streaming_until: started + self.config.request_timeout * STREAM_BOUND_FACTOR,
            answered: false,
        };
        let policy = self.config.retry;
        let mut retries = 0;
        let mut empty_retried = false;
        loop {
            if cancel.is_cancelled() {
                return Err(LlmError::Cancelled);
            }
            let outcome = match self
                .attempt(&body, streamed, &request.model, on_event, cancel, &mut clock)
                .await
            {
                Err(LlmError::StreamEmpty { .. }) if !resent => {
                    resent = true;
                    tracing::info!("the stream closed without data; re-sending unstreamed");
                    let body = without_streaming(self.shaped_body(request, answer));
                    let unstreamed = serialized(&body)?;
                    self.attempt(&unstreamed, false, &request.model, on_event, cancel, &mut clock)
                        .await
                }
                other => other,
            };
            let err = match outcome {
                Ok(response) => match empty_answer(&response) {
                    None => return Ok(response),
                    Some(err) => err,
                },
                Err(err) => err,
            };
            let again_empty = matches!(err, LlmError::EmptyResponse { .. }) && empty_retried;
            if !err.is_retryable() || again_empty || retries >= policy.max_retries {
                return Err(match retries {
                    0 => err,
                    _ if !err.is_retryable() => err,
                    _ => LlmError::RetriesExhausted { attempts: retries + 1, last: Box::new(err) },
                });
            }
            empty_retried |= matches!(err, LlmError::EmptyResponse { .. });
            let delay = backoff_delay(&policy, retries, err.retry_after(), fastrand::f64());
            if Instant::now() + delay >= clock.waiting_until.min(clock.streaming_until) {
                let streaming = clock.streaming_until <= clock.waiting_until;
                return Err(clock.exceeded(streaming, &self.config));
            }
            tracing::debug!(error = %err, ?delay, retry = retries + 1, "retrying model request");
            on_event(StreamEvent::Retrying {
                attempt: retries + 2,
                max_attempts: policy.max_retries + 1,
                reason: err.short_reason(),
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            });
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                () = tokio::time::sleep(delay) => {}
            }
            retries += 1;
        }
    }

    pub(crate) fn request_body(&self, request: &ModelRequest) -> Value {
        self.shaped_body(request, None)
    }

    fn shaped_body(&self, request: &ModelRequest, answer: Option<&Value>) -> Value {
        let options = WireOptions {
            profile: self.config.profile,
            cache_key: self.cache_key.as_deref().filter(|_| self.config.profile.prompt_cache_key),
            images: self.config.profile.takes_images(&request.model),
            answer_schema: answer,
        };
        let body = match self.config.kind {
            ProviderKind::OpenAiResponses => responses_request::request_body(request, &options),
            ProviderKind::OpenAiChat => openai_chat::request_body(request, &options),
            ProviderKind::Anthropic => anthropic::request_body(request, &options),
        };
        match self.config.profile.unstreamed {
            true => without_streaming(body),
            false => body,
        }
    }

    fn http_request(&self, body: &[u8]) -> reqwest::RequestBuilder {
        let builder = self
            .http
            .post(self.endpoint.clone())
            .header(ACCEPT, "text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(body.to_vec());
        let key = self.config.api_key.as_deref();
        match (self.config.kind, key, self.config.profile.key_header) {
            (ProviderKind::Anthropic, key, _) => {
                let mut builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
                if self.config.profile.cache_ttl == CacheTtl::OneHour {
                    builder = builder.header("anthropic-beta", ANTHROPIC_CACHE_TTL_BETA);
                }
                match key {
                    Some(key) => builder.header("x-api-key", key),
                    None => builder,
                }
            }
            (ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat, Some(key), header) => {
                match header {
                    KeyHeader::Bearer => builder.bearer_auth(key),
                    KeyHeader::ApiKey => builder.header("api-key", key),
                }
            }
            (ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat, None, _) => builder,
        }
    }

    fn error_context<'a>(&'a self, model: &'a str) -> ErrorContext<'a> {
        ErrorContext {
            api_key_env: &self.config.api_key_env,
            key_sent: self.config.api_key.is_some(),
            model,
            url: self.endpoint.as_str(),
            base_url: &self.config.base_url,
            path: self.config.kind.path(),
        }
    }

    /// One attempt: send, check the status, stream until completion (or,
    /// not `streamed`, read the whole answer).
    async fn attempt(
        &self,
        body: &[u8],
        streamed: bool,
        model: &str,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
        clock: &mut Deadlines,
    ) -> Result<ModelResponse, LlmError> {
        // Unstreamed, nothing arrives until the whole answer is made.
        let idle = match streamed {
            true => self.config.idle_timeout,
            false => self.config.idle_timeout.max(self.config.request_timeout),
        };
        let mut timer = Timer { idle, clock: *clock, config: &self.config };
        let url = self.endpoint.as_str();
        let response = timer
            .guard(cancel, self.http_request(body).send())
            .await?
            .map_err(|err| LlmError::transport(err, url))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = parse_retry_after(response.headers(), std::time::SystemTime::now());
            let moved_to = status
                .is_redirection()
                .then(|| response.headers().get(reqwest::header::LOCATION))
                .flatten()
                .and_then(|location| location.to_str().ok())
                .map(str::to_owned);
            // A body we cannot read still leaves the status to report.
            let text = timer
                .guard(cancel, capped_text(response, MAX_ERROR_BODY_BYTES))
                .await?
                .unwrap_or_default();
            let text = match moved_to {
                Some(to) => format!(
                    "the endpoint moved to {to}: point --base-url (or base_url) there; keel does \
                     not follow redirects, which would send the API key to another host"
                ),
                None => text,
            };
            return Err(classify_http(
                status.as_u16(),
                retry_after,
                &text,
                self.error_context(model),
            ));
        }
        if !streamed {
            let text = timer
                .guard(cancel, capped_text(response, MAX_RESPONSE_BYTES))
                .await?
                .map_err(|err| LlmError::transport(err, url))?;
            if text.len() >= MAX_RESPONSE_BYTES {
                let what = "one response's text";
                return Err(LlmError::ResponseTooLarge { what, limit: MAX_RESPONSE_BYTES });
            }
            let mut emit = |event: StreamEvent| on_event(event);
            return Assembler::unstreamed(self.config.kind, &text, &mut emit)
                .unwrap_or(Err(LlmError::StreamEmpty { resent: true }));
        }
        match content_kind(response.headers()) {
            ContentKind::Json => {
                // Some proxies answer 200 with a JSON error instead of a stream.
                let text = timer
                    .guard(cancel, capped_text(response, MAX_ERROR_BODY_BYTES))
                    .await?
                    .map_err(|err| LlmError::transport(err, url))?;
                return Err(json_instead_of_stream(&text));
            }
            ContentKind::Html => {
                let what = "an HTML page (text/html)".to_owned();
                return Err(LlmError::NotAnApi { url: url.to_owned(), what });
            }
            ContentKind::Other => {}
        }
        let mut chunks = response.bytes_stream();
        let mut decoder = SseDecoder::default();
        let mut assembler = Assembler::new(self.config.kind);
        let mut events = Vec::new();
        let mut streamed = 0usize;
        let mut decoded = 0usize;
        let too_large = |err: EventTooLarge| LlmError::ResponseTooLarge {
            what: "one line or event",
            limit: err.limit,
        };
        loop {
            let chunk = timer.guard(cancel, chunks.next()).await?;
            let ended = match chunk {
                Some(Ok(bytes)) => {
                    decoder.push(&bytes, &mut events).map_err(too_large)?;
                    false
                }
                Some(Err(err)) => return Err(LlmError::transport(err, url)),
                None => {
                    decoder.finish(&mut events).map_err(too_large)?;
                    true
                }
            };
            decoded += events.len();
            if ended && decoded == 0 {
                return Err(LlmError::StreamEmpty { resent: false });
            }
            let before = streamed;
            let mut counted = |event: StreamEvent| {
                streamed = streamed.saturating_add(streamed_bytes(&event));
                on_event(event);
            };
            let complete = assembler.feed_events(events.drain(..), ended, &mut counted)?;
            if streamed > before {
                // Progress: the wait for the rest starts again.
                clock.answered = true;
                clock.waiting_until = Instant::now() + self.config.request_timeout;
                timer.clock = *clock;
            }
            // Checked per chunk: one chunk adds at most a read buffer's worth.
            if streamed > MAX_RESPONSE_BYTES {
                return Err(LlmError::ResponseTooLarge {
                    what: "one response's text",
                    limit: MAX_RESPONSE_BYTES,
                });
            }
            if complete || ended {
                return assembler.finish();
            }
        }
    }
}

/// How many bytes of the response an event adds (what the assembler keeps).
fn streamed_bytes(event: &StreamEvent) -> usize {
    match event {
        StreamEvent::TextDelta { delta }
        | StreamEvent::ReasoningDelta { delta }
        | StreamEvent::ToolCallArgumentsDelta { delta, .. } => delta.len(),
        StreamEvent::ToolCallStarted { call_id, name } => call_id.len() + name.len(),
        StreamEvent::Retrying { .. } => 0,
    }
}

/// The request body's bytes.
fn serialized(body: &Value) -> Result<Vec<u8>, LlmError> {
    serde_json::to_vec(body).map_err(|err| LlmError::InvalidConfig {
        message: format!("cannot serialize the request: {err}"),
    })
}

/// `body` asking for the whole answer at once: `"stream": false` is how
/// all three protocols say it.
fn without_streaming(mut body: Value) -> Value {
    if let Some(object) = body.as_object_mut() {
        object.insert("stream".to_owned(), Value::Bool(false));
        object.remove("stream_options");
    }
    body
}

/// The body as text, at most `limit` bytes of it; the rest is not read.
async fn capped_text(response: reqwest::Response, limit: usize) -> Result<String, reqwest::Error> {
    let mut chunks = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        let room = limit - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= limit {
            break;
        }
    }
    // Lossy, as `Response::text`: a character cut at the cap shows as `�`.
    Ok(String::from_utf8_lossy(&body).into_owned())
}

/// The endpoint: the base URL's path extended by the protocol's path, its
/// query (Azure's `api-version`) kept.
fn endpoint_url(config: &ProviderConfig) -> Result<reqwest::Url, LlmError> {
    let invalid = |message: String| LlmError::InvalidConfig {
        message: format!("base url `{}`: {message}", config.base_url),
    };
    let mut url =
        reqwest::Url::parse(config.base_url.trim()).map_err(|err| invalid(err.to_string()))?;
    url.path_segments_mut()
        .map_err(|()| invalid("not a base URL".to_owned()))?
        .pop_if_empty()
        .extend(config.kind.path().split('/'));
    Ok(url)
}

/// Why the model said nothing usable, if it did not: no visible text and
/// no tool call.
fn empty_answer(response: &ModelResponse) -> Option<LlmError> {
    let has_call = response.tool_calls().next().is_some();
    let has_text = response
        .items
        .iter()
        .any(|item| item.assistant_text().is_some_and(|text| !text.trim().is_empty()));
    if has_call || has_text {
        return None;
    }
    Some(LlmError::EmptyResponse { stop_reason: response.stop_reason.as_str().to_owned() })
}

/// What a successful reply's body is, by its content type.
enum ContentKind {
    Json,
    Html,
    /// An event stream, or a server that did not say.
    Other,
}

fn content_kind(headers: &reqwest::header::HeaderMap) -> ContentKind {
    let value = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let value = value.trim_start().to_ascii_lowercase();
    if value.starts_with("application/json") {
        ContentKind::Json
    } else if value.starts_with("text/html") {
        ContentKind::Html
    } else {
        ContentKind::Other
    }
}

/// When a request stops waiting: `waiting_until` moves on with each piece
/// of the answer, `streaming_until` never does.
#[derive(Debug, Clone, Copy)]
struct Deadlines {
    waiting_until: Instant,
    streaming_until: Instant,
    /// Some of the answer has streamed (in any attempt).
    answered: bool,
}

impl Deadlines {
    /// The error for a deadline reached; `streaming` is whether the bound
    /// on the whole stream was the one that passed.
    fn exceeded(&self, streaming: bool, config: &ProviderConfig) -> LlmError {
        let after = config.request_timeout;
        match (streaming, self.answered) {
            (true, _) => LlmError::StreamTooLong { after: after * STREAM_BOUND_FACTOR },
            (false, true) => LlmError::AnswerStalled { after },
            (false, false) => LlmError::DeadlineExceeded { after },
        }
    }
}

/// The clocks an attempt's waits race against.
struct Timer<'a> {
    idle: Duration,
    clock: Deadlines,
    config: &'a ProviderConfig,
}

impl Timer<'_> {
    /// Runs `future` unless the token is cancelled, `idle` passes, or one
    /// of the request's deadlines does first.
    async fn guard<F: Future>(
        &self,
        cancel: &CancellationToken,
        future: F,
    ) -> Result<F::Output, LlmError> {
        let idle_end = Instant::now() + self.idle;
        let deadline = self.clock.waiting_until.min(self.clock.streaming_until);
        let end = idle_end.min(deadline);
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(LlmError::Cancelled),
            output = tokio::time::timeout_at(end, future) => output.map_err(|_| {
                if end < idle_end {
                    let streaming = self.clock.streaming_until <= self.clock.waiting_until;
                    self.clock.exceeded(streaming, self.config)
                } else {
                    LlmError::IdleTimeout { after: self.idle }
                }
            }),
        }
    }
}

/// Whether `url` is plain HTTP to this machine.
fn is_plain_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("").trim_start_matches('[').trim_end_matches(']');
    let loopback =
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    url.scheme() == "http" && loopback
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_to_this_machine_skips_connection_reuse() {
        let plain = |s: &str| is_plain_loopback(&reqwest::Url::parse(s).unwrap());
        assert!(plain("http://127.0.0.1:8080/v1/responses"));
        assert!(plain("http://localhost:11434/v1/chat/completions"));
        assert!(plain("http://[::1]:8080/v1/messages"));
        assert!(!plain("https://127.0.0.1/v1/messages"));
        assert!(!plain("http://10.0.0.5:8080/v1/responses"));
        assert!(!plain("https://api.openai.com/v1/responses"));
    }

    #[test]
    fn the_endpoint_keeps_the_query_of_the_base_url() {
        let mut config = super::super::test_support::offline_config(ProviderKind::OpenAiChat);
        let url = |config: &ProviderConfig| endpoint_url(config).unwrap().to_string();
        config.base_url =
            "https://r.openai.azure.com/openai/deployments/gpt?api-version=2024-10-21".into();
        assert_eq!(
            url(&config),
            "https://r.openai.azure.com/openai/deployments/gpt/chat/completions?api-version=2024-10-21"
        );
        config.base_url = "http://127.0.0.1:11434/v1/".into();
        assert_eq!(url(&config), "http://127.0.0.1:11434/v1/chat/completions");
        config.kind = ProviderKind::Anthropic;
        config.base_url = "http://127.0.0.1:9".into();
        assert_eq!(url(&config), "http://127.0.0.1:9/messages");
    }
}
