//! One `web_fetch`: hop by hop, each host resolved by the proxy's
//! resolver and judged (the first by the loop, later ones by
//! [`WebAccess::judge_hop`]), each judgement recorded as the call's
//! `network_access` line; the body read in chunks up to [`MAX_READ`].
//!
//! The client is built per hop with the hop's addresses pinned
//! (`resolve_to_addrs`), no system proxy and no redirect policy of its
//! own, so it can reach nothing the judgement did not see.

use std::net::SocketAddr;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{MAX_READ, MAX_REDIRECTS, Page, WebAccess, WebError};
use crate::sandbox::netproxy::{self, NetEvent};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
const TOTAL_TIMEOUT: Duration = Duration::from_secs(60);
const ACCEPT: &str = "text/html, text/markdown;q=0.9, text/plain;q=0.8, */*;q=0.5";

/// Fetches `url` for the call `call_id`, whose host the loop approved.
pub async fn fetch(
    access: &WebAccess,
    url: &str,
    call_id: &str,
    cancel: &CancellationToken,
) -> Result<Page, WebError> {
    let bad = || WebError::BadUrl { url: url.to_owned() };
    let mut current = url::Url::parse(url.trim()).map_err(|_| bad())?;
    let approved = host_of(&current).ok_or_else(bad)?;
    let mut redirected_from = Vec::new();
    for hop in 0..=MAX_REDIRECTS {
        let host = host_of(&current).ok_or_else(bad)?;
        let port = current.port_or_known_default().unwrap_or(80);
        let judged = if hop == 0 {
            Ok("the call's URL, judged by the loop's policy".to_owned())
        } else {
            access.judge_hop(&approved, &host)
        };
        let note = |allowed: bool, reason: &str| {
            access.net_log.note(NetEvent {
                call_id: call_id.to_owned(),
                host: host.clone(),
                port,
                allowed,
                reason: format!("web_fetch: {reason}"),
            });
        };
        if let Err(reason) = judged {
            note(false, &reason);
            return Err(WebError::Refused { reason });
        }
        let addresses = resolve(access, &host, port).await;
        let addresses = match addresses {
            Ok(addresses) if !addresses.is_empty() => addresses,
            Ok(_) => {
                let reason = format!("{host} resolves to no address");
                note(false, &reason);
                return Err(WebError::Refused { reason });
            }
            Err(reason) => {
                note(false, &reason);
                return Err(WebError::Refused { reason });
            }
        };
        note(true, judged.as_deref().unwrap_or_default());
        let response = tokio::select! {
            () = cancel.cancelled() => return Err(WebError::Cancelled),
            response = request(&current, &host, &addresses) => response?,
        };
        if response.status().is_redirection()
            && let Some(next) = location(&current, &response)
        {
            redirected_from.push(current.to_string());
            current = next;
            continue;
        }
        return read(current.to_string(), redirected_from, response, cancel).await;
    }
    Err(WebError::TooManyRedirects { url: current.to_string() })
}

/// The URL's host, lower-case, without brackets or a trailing dot.
fn host_of(url: &url::Url) -> Option<String> {
    crate::protocol::tool_facts::url_host(url.as_str())
}

async fn resolve(access: &WebAccess, host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    let hosts = access.hosts.clone();
    let name = host.to_owned();
    tokio::task::spawn_blocking(move || netproxy::resolve_host(&hosts, &name, port))
        .await
        .unwrap_or_else(|error| Err(format!("the resolver failed: {error}")))
}

async fn request(
    url: &url::Url,
    host: &str,
    addresses: &[SocketAddr],
) -> Result<reqwest::Response, WebError> {
    let failed = |error: reqwest::Error| WebError::Request {
        url: url.to_string(),
        message: error.without_url().to_string(),
    };
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .resolve_to_addrs(host, addresses)
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(TOTAL_TIMEOUT)
        .user_agent(concat!("keel/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(failed)?;
    client.get(url.clone()).header("Accept", ACCEPT).send().await.map_err(failed)
}

/// Where a redirect points, resolved against the URL that sent it.
fn location(current: &url::Url, response: &reqwest::Response) -> Option<url::Url> {
    let location = response.headers().get("location")?.to_str().ok()?;
    current.join(location).ok()
}

/// The body, read in chunks up to [`MAX_READ`] bytes.
async fn read(
    url: String,
    redirected_from: Vec<String>,
    mut response: reqwest::Response,
    cancel: &CancellationToken,
) -> Result<Page, WebError> {
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let expected = response.content_length().and_then(|n| usize::try_from(n).ok());
    let mut body = Vec::with_capacity(expected.unwrap_or(0).min(MAX_READ));
    let mut cut = false;
    loop {
        let chunk = tokio::select! {
            () = cancel.cancelled() => return Err(WebError::Cancelled),
            chunk = response.chunk() => chunk,
        };
        let chunk = chunk.map_err(|error| WebError::Request {
            url: url.clone(),
            message: error.without_url().to_string(),
        })?;
        let Some(chunk) = chunk else { break };
        let room = MAX_READ - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            cut = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Page { url, redirected_from, status, content_type, body, cut })
}
