//! The legacy HTTP+SSE transport (MCP 2024-11-05), for servers that never
//! moved to streamable HTTP: a GET on the configured URL opens an event
//! stream whose first `endpoint` event names the URL to POST JSON-RPC
//! messages to; answers come back on the stream as `message` events. rmcp
//! 3.11 has no client for it, so this is a small [`Transport`] on keel's own
//! HTTP client ([`McpHttpClient`]: no redirects, bounded bodies).
//!
//! Used when a server's config says `transport = "sse"` (`.mcp.json`:
//! `"type": "sse"`), or when the streamable POST was answered 405
//! (`connection.rs` tries this then).
//!
//! Invariants: the endpoint must have the configured URL's origin (scheme,
//! host, port): a server naming another is refused, so the calls'
//! arguments and the configured headers never go elsewhere; every SSE
//! event is bounded (`http::sse_events`); the wait for the `endpoint` event
//! is bounded by the caller (the startup timeout).

use std::sync::Arc;

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, HeaderMap};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::Sse;

use super::McpError;
use super::http::{McpHttpClient, sse_events};
use crate::display::redact_urls;

/// Why sending to the server failed.
#[derive(Debug, thiserror::Error)]
pub enum LegacySseError {
    #[error("cannot reach the server: {0}")]
    Http(String),
    #[error("the server answered a message with HTTP {status}")]
    Status { status: reqwest::StatusCode },
}

/// An open legacy SSE session.
pub struct LegacySseTransport {
    client: reqwest::Client,
    endpoint: Arc<reqwest::Url>,
    headers: HeaderMap,
    events: BoxStream<'static, Result<Sse, SseError>>,
}

impl LegacySseTransport {
    /// GETs `url`'s event stream and waits for its `endpoint` event.
    pub async fn connect(
        http: &McpHttpClient,
        url: &str,
        headers: HeaderMap,
        max_event: usize,
    ) -> Result<Self, McpError> {
        let fail = |what: String| McpError::Handshake {
            message: format!("cannot open a legacy SSE session at {}: {what}", redact_urls(url)),
        };
        let base = reqwest::Url::parse(url).map_err(|error| fail(error.to_string()))?;
        let client = http.inner().clone();
        let response = client
            .get(base.clone())
            .header(ACCEPT, "text/event-stream")
            .headers(headers.clone())
            .send()
            .await
            .map_err(|error| fail(error.without_url().to_string()))?;
        if !response.status().is_success() {
            return Err(fail(format!("HTTP {} to the GET of its event stream", response.status())));
        }
        let mut events = sse_events(response, max_event);
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    break event.data.unwrap_or_default();
                }
                Some(Ok(_)) => continue,
                Some(Err(error)) => return Err(fail(error.to_string())),
                None => return Err(fail("the stream ended before its `endpoint` event".into())),
            }
        };
        let endpoint = confined(&base, endpoint.trim()).map_err(fail)?;
        Ok(Self { client, endpoint: Arc::new(endpoint), headers, events })
    }
}

/// `endpoint` resolved against `base`, if it has `base`'s origin.
fn confined(base: &reqwest::Url, endpoint: &str) -> Result<reqwest::Url, String> {
    let resolved = base.join(endpoint).map_err(|error| format!("bad `endpoint` event: {error}"))?;
    if resolved.origin() != base.origin() {
        return Err(format!(
            "its `endpoint` event names another origin ({}), which keel refuses: the messages \
             would leave the server you configured",
            resolved.origin().ascii_serialization()
        ));
    }
    Ok(resolved)
}

impl Transport<RoleClient> for LegacySseTransport {
    type Error = LegacySseError;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request =
            self.client.post(self.endpoint.as_ref().clone()).headers(self.headers.clone());
        let message: ClientJsonRpcMessage = item;
        async move {
            let response = request
                .json(&message)
                .send()
                .await
                .map_err(|error| LegacySseError::Http(error.without_url().to_string()))?;
            let status = response.status();
            if !status.is_success() {
                return Err(LegacySseError::Status { status });
            }
            Ok(())
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let event = self.events.next().await?.ok()?;
            if !matches!(event.event.as_deref(), None | Some("message")) {
                continue;
            }
            let data = event.data.unwrap_or_default();
            // A message keel cannot parse is dropped; the request waiting
            // for it times out like any unanswered one.
            if let Ok(message) = serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                return Some(message);
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.events = futures_util::stream::empty().boxed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_must_keep_the_configured_origin() {
        let base = reqwest::Url::parse("http://127.0.0.1:3001/sse").unwrap();
        let same = confined(&base, "/message?sessionId=abc").unwrap();
        assert_eq!(same.as_str(), "http://127.0.0.1:3001/message?sessionId=abc");
        let absolute = confined(&base, "http://127.0.0.1:3001/m").unwrap();
        assert_eq!(absolute.path(), "/m");
        for elsewhere in ["http://127.0.0.2:3001/m", "https://127.0.0.1:3001/m", "//evil.test/m"] {
            let error = confined(&base, elsewhere).unwrap_err();
            assert!(error.contains("another origin"), "{elsewhere}: {error}");
        }
    }
}
