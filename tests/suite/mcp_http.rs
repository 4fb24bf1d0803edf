//! A streamable HTTP server's side of the wire as keel speaks it: every
//! request carries the bearer token read from `bearer_token_env_var` and
//! the configured `http_headers` (a minimal MCP endpoint on wiremock).

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::mcp_support::{python, write_config};
use super::support::Sandbox;

/// Answers `initialize` and `tools/list`, accepts notifications, and has no
/// server-to-client stream (GET: 405, as the spec allows).
struct Endpoint;

impl Respond for Endpoint {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let message: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "remote", "version": "1"},
            }),
            Some("tools/list") => json!({"tools": [
                {"name": "whoami", "inputSchema": {"type": "object"},
                 "annotations": {"readOnlyHint": true}},
            ]}),
            _ => return ResponseTemplate::new(202),
        };
        ResponseTemplate::new(200)
            .insert_header("content-type", "application/json")
            .set_body_json(json!({"jsonrpc": "2.0", "id": message["id"], "result": result}))
    }
}

#[tokio::test]
async fn every_request_carries_the_bearer_token_and_the_configured_headers() {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/mcp")).respond_with(Endpoint).mount(&server).await;
    Mock::given(method("GET"))
        .and(path("/mcp"))
        .respond_with(ResponseTemplate::new(405))
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "[mcp_servers.remote]\nurl = \"{}/mcp\"\nbearer_token_env_var = \"REMOTE_TOKEN\"\n\
             http_headers = {{ \"X-Team\" = \"keel\" }}\n",
            server.uri()
        ),
    );
    let listed =
        sandbox.keel().env("REMOTE_TOKEN", "s3cret").args(["mcp", "list", "--json"]).output();
    let listed = listed.unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert_eq!(
        listed.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let servers: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(servers[0]["status"], "ready", "{servers}");
    assert!(servers[0].to_string().contains("whoami"), "{servers}");

    let requests = server.received_requests().await.unwrap();
    let posts: Vec<&Request> = requests.iter().filter(|r| r.method.as_str() == "POST").collect();
    let methods: Vec<String> = posts
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["method"].to_string())
        .collect();
    assert!(methods.len() >= 3, "initialize, initialized, tools/list: {methods:?}");
    for request in &requests {
        let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
        assert_eq!(
            header("authorization"),
            Some("Bearer s3cret"),
            "{} {methods:?}",
            request.method
        );
        assert_eq!(header("x-team"), Some("keel"), "{} {methods:?}", request.method);
    }

    // No token in the environment: the server is reported, not called
    // without its credentials.
    let unset = sandbox.keel().args(["mcp", "list", "--json"]).output().unwrap();
    let servers: Value = serde_json::from_slice(&unset.stdout).unwrap();
    assert_ne!(servers[0]["status"], "ready", "{servers}");
    assert!(servers[0].to_string().contains("REMOTE_TOKEN"), "{servers}");
    assert_eq!(server.received_requests().await.unwrap().len(), requests.len());
}

/// A server that answers with a redirect (its own choice, or an open
/// redirect on its host) does not get keel to send the configured
/// headers and the bearer token (nor the calls' arguments) elsewhere.
#[tokio::test]
async fn a_redirect_is_not_followed_with_the_servers_secrets() {
    let elsewhere = MockServer::start().await;
    Mock::given(method("POST")).and(path("/mcp")).respond_with(Endpoint).mount(&elsewhere).await;
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(
            ResponseTemplate::new(307)
                .insert_header("location", format!("{}/mcp", elsewhere.uri())),
        )
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "[mcp_servers.remote]\nurl = \"{}/mcp\"\nbearer_token_env_var = \"REMOTE_TOKEN\"\n\
             http_headers = {{ \"X-Api-Key\" = \"k3y\" }}\nstartup_timeout_sec = 5\n",
            server.uri()
        ),
    );
    let listed =
        sandbox.keel().env("REMOTE_TOKEN", "s3cret").args(["mcp", "list", "--json"]).output();
    let listed = listed.unwrap();
    let servers: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    let leaked = elsewhere.received_requests().await.unwrap_or_default();
    let headers: Vec<String> =
        leaked.iter().map(|request| format!("{:?}", request.headers)).collect();
    assert!(leaked.is_empty(), "the redirect was followed with: {headers:?}");
    assert_eq!(servers[0]["status"], "failed", "{servers}");
    let error = servers[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("307"), "the user is told why: {error}");
}

/// A server configured by URL that speaks MCP's legacy HTTP+SSE transport
/// (its `/sse` URL streams on GET and refuses POST with 405) fails with a
/// message naming that transport and what to do, not a bare "HTTP 405".
#[tokio::test]
async fn a_legacy_sse_server_is_named_as_such() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/sse"))
        .respond_with(ResponseTemplate::new(405))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/sse"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string("event: endpoint\ndata: /messages?session=1\n\n"),
        )
        .mount(&server)
        .await;
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!("[mcp_servers.old]\nurl = \"{}/sse\"\nstartup_timeout_sec = 5\n", server.uri()),
    );
    let listed = sandbox.keel().args(["mcp", "list", "--json"]).output().unwrap();
    let servers: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    assert_eq!(servers[0]["status"], "failed", "{servers}");
    let error = servers[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("legacy HTTP+SSE transport"), "{error}");
    assert!(error.contains("streamable HTTP endpoint"), "what to do: {error}");
}

/// `tests/fixtures/mcp/legacy_sse_server.py` on a free port, announcing `endpoint`.
struct LegacyServer(std::process::Child, u16);

impl LegacyServer {
    fn start(python: &str, endpoint: &str) -> Self {
        use std::io::BufRead;
        let script =
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp/legacy_sse_server.py");
        let mut child = std::process::Command::new(python)
            .args([script, endpoint])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        Self(child, line.trim().parse().expect("the legacy server printed its port"))
    }
}

impl Drop for LegacyServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A URL configured without `transport` whose POST is refused with 405: keel
/// speaks the legacy transport to it and its tool works.
#[tokio::test]
async fn a_legacy_sse_server_is_spoken_to_after_a_405() {
    let Some(python) = python() else { return };
    let server = LegacyServer::start(&python, "/messages");
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "[mcp_servers.old]\nurl = \"http://127.0.0.1:{}/sse\"\nstartup_timeout_sec = 10\n",
            server.1
        ),
    );
    let listed = sandbox.keel().args(["mcp", "list", "--json"]).output().unwrap();
    let servers: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    assert_eq!(servers[0]["status"], "ready", "{servers}");
    assert_eq!(servers[0]["tools"][0]["name"], "mcp__old__ping", "{servers}");
}

/// A legacy server whose `endpoint` event names another origin is refused.
#[tokio::test]
async fn a_legacy_sse_endpoint_elsewhere_is_refused() {
    let Some(python) = python() else { return };
    let server = LegacyServer::start(&python, "http://127.0.0.2:9/messages");
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!(
            "[mcp_servers.old]\nurl = \"http://127.0.0.1:{}/sse\"\ntransport = \"sse\"\n\
             startup_timeout_sec = 10\n",
            server.1
        ),
    );
    let listed = sandbox.keel().args(["mcp", "list", "--json"]).output().unwrap();
    let servers: Value = serde_json::from_slice(&listed.stdout).unwrap_or_default();
    assert_eq!(servers[0]["status"], "failed", "{servers}");
    let error = servers[0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("another origin (http://127.0.0.2:9)"), "{error}");
}
