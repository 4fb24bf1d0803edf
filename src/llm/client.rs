//! The HTTP side: [`LlmClient`] sends one request, decodes the SSE body,
//! feeds the protocol's assembler, and retries transient failures.
//!
//! Invariants: every await is raced against the cancellation token (biased
//! towards cancelling) and, while waiting on the server, against the idle
//! timeout; backoff sleeps are cancellable too. Only errors for which
//! [`LlmError::is_retryable`] holds are retried, at most
//! `RetryPolicy::max_retries` times. A retried attempt streams its events
//! again from the start.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, HeaderValue};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::assembler::Assembler;
use super::error::{ErrorContext, LlmError, classify_http, json_instead_of_stream};
use super::retry::{backoff_delay, parse_retry_after};
use super::sse::SseDecoder;
use super::{ProviderConfig, ProviderKind, anthropic, openai_chat, openai_responses};
use crate::protocol::{ModelRequest, ModelResponse, StreamEvent};

/// Sent with every Anthropic request.
const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Establishing a TCP/TLS connection may not take longer than this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// A client for one provider endpoint.
#[derive(Debug, Clone)]
pub struct LlmClient {
    config: ProviderConfig,
    endpoint: reqwest::Url,
    http: reqwest::Client,
}

impl LlmClient {
    pub fn new(config: ProviderConfig) -> Result<Self, LlmError> {
        let path = match config.kind {
            ProviderKind::OpenAiResponses => "responses",
            ProviderKind::OpenAiChat => "chat/completions",
            ProviderKind::Anthropic => "messages",
        };
        let url = format!("{}/{path}", config.base_url.trim_end_matches('/'));
        let endpoint = reqwest::Url::parse(&url).map_err(|err| LlmError::InvalidConfig {
            message: format!("base url `{}`: {err}", config.base_url),
        })?;
        if let Some(key) = &config.api_key {
            HeaderValue::from_str(key).map_err(|_| LlmError::InvalidConfig {
                message: format!(
                    "the API key in ${} has characters not allowed in an HTTP header",
                    config.api_key_env
                ),
            })?;
        }
        let mut builder = reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT);
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
        Ok(Self { config, endpoint, http })
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
        let body = self.request_body(request);
        let policy = self.config.retry;
        let mut retries = 0;
        loop {
            if cancel.is_cancelled() {
                return Err(LlmError::Cancelled);
            }
            let err = match self.attempt(&body, &request.model, on_event, cancel).await {
                Ok(response) => return Ok(response),
                Err(err) => err,
            };
            if !err.is_retryable() {
                return Err(err);
            }
            if retries >= policy.max_retries {
                if retries == 0 {
                    return Err(err);
                }
                return Err(LlmError::RetriesExhausted {
                    attempts: retries + 1,
                    last: Box::new(err),
                });
            }
            let delay = backoff_delay(&policy, retries, err.retry_after(), fastrand::f64());
            tracing::debug!(error = %err, ?delay, retry = retries + 1, "retrying model request");
            tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(LlmError::Cancelled),
                () = tokio::time::sleep(delay) => {}
            }
            retries += 1;
        }
    }

    pub(crate) fn request_body(&self, request: &ModelRequest) -> Value {
        match self.config.kind {
            ProviderKind::OpenAiResponses => openai_responses::request_body(request),
            ProviderKind::OpenAiChat => openai_chat::request_body(request),
            ProviderKind::Anthropic => anthropic::request_body(request),
        }
    }

    fn http_request(&self, body: &Value) -> reqwest::RequestBuilder {
        let builder =
            self.http.post(self.endpoint.clone()).header(ACCEPT, "text/event-stream").json(body);
        match (self.config.kind, &self.config.api_key) {
            (ProviderKind::Anthropic, key) => {
                let builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
                match key {
                    Some(key) => builder.header("x-api-key", key),
                    None => builder,
                }
            }
            (ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat, Some(key)) => {
                builder.bearer_auth(key)
            }
            (ProviderKind::OpenAiResponses | ProviderKind::OpenAiChat, None) => builder,
        }
    }

    /// One attempt: send, check the status, stream until completion.
    async fn attempt(
        &self,
        body: &Value,
        model: &str,
        on_event: &mut (dyn FnMut(StreamEvent) + Send),
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, LlmError> {
        let idle = self.config.idle_timeout;
        let response = guard(cancel, idle, self.http_request(body).send())
            .await?
            .map_err(LlmError::transport)?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = parse_retry_after(response.headers());
            // A body we cannot read still leaves the status to report.
            let text = guard(cancel, idle, response.text()).await?.unwrap_or_default();
            let ctx = ErrorContext { api_key_env: &self.config.api_key_env, model };
            return Err(classify_http(status.as_u16(), retry_after, &text, ctx));
        }
        if is_json(response.headers()) {
            // Some proxies answer 200 with a JSON error instead of a stream.
            let text = guard(cancel, idle, response.text()).await?.map_err(LlmError::transport)?;
            return Err(json_instead_of_stream(&text));
        }
        let mut chunks = response.bytes_stream();
        let mut decoder = SseDecoder::default();
        let mut assembler = Assembler::new(self.config.kind);
        let mut events = Vec::new();
        loop {
            let chunk = guard(cancel, idle, chunks.next()).await?;
            let ended = match chunk {
                Some(Ok(bytes)) => {
                    decoder.push(&bytes, &mut events);
                    false
                }
                Some(Err(err)) => return Err(LlmError::transport(err)),
                None => {
                    decoder.finish(&mut events);
                    true
                }
            };
            let complete = assembler.feed_events(events.drain(..), ended, on_event)?;
            if complete || ended {
                return assembler.finish();
            }
        }
    }
}

fn is_json(headers: &reqwest::header::HeaderMap) -> bool {
    let content_type = headers.get(reqwest::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    content_type.is_some_and(|value| value.trim_start().starts_with("application/json"))
}

/// Runs `future` unless the token is cancelled or `idle` passes first.
async fn guard<F: Future>(
    cancel: &CancellationToken,
    idle: Duration,
    future: F,
) -> Result<F::Output, LlmError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(LlmError::Cancelled),
        output = tokio::time::timeout(idle, future) => output.map_err(|_| LlmError::IdleTimeout { after: idle }),
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
}
