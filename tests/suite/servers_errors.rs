//! Network errors and hung servers through the real binary: one line each,
//! printed once, naming the URL tried and the likely fix; transient
//! failures retried visibly; quota and authentication never retried; a
//! silent server or one that only sends keep-alives stopped by the idle
//! timeout and the request deadline (small values set with `-c`).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::json;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::support::{Model, Sandbox, json_lines};
use super::transcript;

/// `keel exec` (human output) against `base_url`, with extra arguments.
fn exec(sandbox: &Sandbox, base_url: &str, args: &[&str]) -> std::process::Output {
    let model = Model::with_base_url("openai-chat", base_url);
    sandbox.keel_on(&model, &["exec"]).args(args).arg("hi").output().unwrap()
}

/// The `error:` lines of stderr; exactly one is expected.
fn the_error(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "one error line, printed once: {stderr}");
    assert!(!stderr.contains("tokens: 0 in"), "no empty usage line: {stderr}");
    errors[0].to_owned()
}

async fn server_answering(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(template).mount(&server).await;
    server
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap().len()
}

#[tokio::test]
async fn a_base_url_without_v1_gets_a_hint_and_the_url() {
    let sandbox = Sandbox::new();
    let server =
        server_answering(ResponseTemplate::new(404).set_body_string("404 page not found")).await;
    let output = exec(&sandbox, &server.uri(), &[]);
    assert_eq!(output.status.code(), Some(1));
    let uri = server.uri();
    assert_eq!(
        the_error(&output),
        format!(
            "error: POST {uri}/chat/completions returned HTTP 404: 404 page not found; \
             does the base URL need the /v1 segment (try {uri}/v1)?"
        )
    );
    assert_eq!(requests(&server).await, 1, "a 404 is not retried");
}

#[test]
fn connection_refused_names_the_url_and_retries_visibly() {
    let sandbox = Sandbox::new();
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let output = exec(&sandbox, &base, &["-c", "max_retries=1"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let retry = stderr.lines().find(|l| l.starts_with("retrying")).unwrap_or_default();
    assert!(
        retry.starts_with("retrying (2/2) in ")
            && retry.ends_with("s: connection refused: is the server running, and on this port?"),
        "{stderr}"
    );
    assert_eq!(
        the_error(&output),
        format!(
            "error: cannot reach {base}/chat/completions: connection refused: is the server \
             running, and on this port? (gave up after 2 attempts)"
        )
    );
}

#[tokio::test]
async fn an_html_page_is_named_and_not_retried() {
    let sandbox = Sandbox::new();
    let page = "<!DOCTYPE html><html><body>Welcome to nginx!</body></html>";
    let server = server_answering(ResponseTemplate::new(200).set_body_raw(page, "text/html")).await;
    let output = exec(&sandbox, &format!("{}/v1", server.uri()), &[]);
    assert_eq!(output.status.code(), Some(1));
    the_error(&output);
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
    assert_eq!(requests(&server).await, 1);
}

#[tokio::test]
async fn a_missing_or_wrong_key_names_the_variable_and_is_not_retried() {
    let denied = ResponseTemplate::new(401).set_body_json(
        json!({"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}),
    );
    let server = server_answering(denied).await;
    let base = format!("{}/v1", server.uri());
    let sandbox = Sandbox::new();
    let missing = exec(&sandbox, &base, &[]);
    the_error(&missing);
    insta::assert_snapshot!("no_key_sent", transcript::of(&missing, &sandbox));
    let wrong = sandbox
        .keel()
        .env("OPENAI_API_KEY", "sk-wrong")
        .args(["exec", "--provider", "openai-chat", "--model", "m", "--base-url", &base, "hi"])
        .output()
        .unwrap();
    the_error(&wrong);
    insta::assert_snapshot!("a_wrong_key", transcript::of(&wrong, &sandbox));
    assert_eq!(requests(&server).await, 2, "one request each, no retries");
}

/// A wrong model name: the URL tried and the flag that fixes it, not only
/// the server's words (before: "unknown model `m`: …" and nothing to do).
#[tokio::test]
async fn an_unknown_model_names_the_url_and_the_flag() {
    let missing = ResponseTemplate::new(404).set_body_json(json!({"error": {
        "message": "The model `m` does not exist or you do not have access to it.",
        "type": "invalid_request_error", "code": "model_not_found"}}));
    let server = server_answering(missing).await;
    let sandbox = Sandbox::new();
    let output = exec(&sandbox, &format!("{}/v1", server.uri()), &[]);
    assert_eq!(output.status.code(), Some(1));
    the_error(&output);
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
    assert_eq!(requests(&server).await, 1, "not retried");
}

#[tokio::test]
async fn insufficient_quota_is_not_retried() {
    let quota = ResponseTemplate::new(429).set_body_json(json!({"error": {
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "type": "insufficient_quota", "code": "insufficient_quota"}}));
    let server = server_answering(quota).await;
    let sandbox = Sandbox::new();
    let output = exec(&sandbox, &format!("{}/v1", server.uri()), &[]);
    assert_eq!(output.status.code(), Some(1));
    the_error(&output);
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
    assert_eq!(requests(&server).await, 1);
}

#[tokio::test]
async fn server_errors_are_retried_with_a_retrying_event_each() {
    let failing = ResponseTemplate::new(503).insert_header("retry-after", "0");
    let server = server_answering(failing).await;
    let sandbox = Sandbox::new();
    let output =
        sandbox.run(&Model::chat(&server), &["exec", "--json", "-c", "max_retries=2", "hi"]);
    let lines = json_lines(&output.stdout);
    let retrying: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "retrying").collect();
    assert_eq!(retrying.len(), 2, "{lines:?}");
    assert_eq!(retrying[0]["attempt"], 2);
    assert_eq!(retrying[1]["attempt"], 3);
    assert_eq!(retrying[1]["max_attempts"], 3);
    assert_eq!(retrying[0]["reason"], "HTTP 503");
    assert!(retrying[0]["delay_ms"].is_u64());
    assert_eq!(lines.last().unwrap()["status"], "failed");
    assert_eq!(requests(&server).await, 3);
}

/// RFC 9110 lets `Retry-After` be an HTTP date: keel waits until then (the
/// `retrying` line says how long), not its own sub-second backoff.
#[tokio::test]
async fn a_retry_after_date_is_waited_for() {
    let at = std::time::SystemTime::now() + Duration::from_secs(4);
    let failing =
        ResponseTemplate::new(503).insert_header("retry-after", httpdate::fmt_http_date(at));
    let server = server_answering(failing).await;
    let sandbox = Sandbox::new();
    let output =
        sandbox.run(&Model::chat(&server), &["exec", "--json", "-c", "max_retries=1", "hi"]);
    let lines = json_lines(&output.stdout);
    let retrying: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "retrying").collect();
    assert_eq!(retrying.len(), 1, "{lines:?}");
    // The date has whole seconds: 4 s ahead is at most 4 s of waiting, less
    // the time keel took to start and ask (over a second at a load of 12);
    // keel's own backoff would be under a second.
    let delay = retrying[0]["delay_ms"].as_u64().unwrap();
    assert!((1_500..=4_000).contains(&delay), "waited {delay} ms for a date 4 s ahead");
    assert_eq!(requests(&server).await, 2);
}

/// A server that accepts connections and reads requests; `keep_alive`
/// then answers 200 with an event stream of keep-alive comments every
/// 100 ms, else it never answers.
fn hung_server(keep_alive: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buffer = [0u8; 65536];
            let _ = stream.read(&mut buffer);
            if !keep_alive {
                held.push(stream);
                continue;
            }
            std::thread::spawn(move || {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                let _ = stream.write_all(head.as_bytes());
                let comment = ": keep-alive\n\n";
                let chunk = format!("{:x}\r\n{comment}\r\n", comment.len());
                while stream.write_all(chunk.as_bytes()).and_then(|()| stream.flush()).is_ok() {
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
    });
    base
}

#[test]
fn a_silent_server_times_out_per_attempt_and_says_so() {
    let sandbox = Sandbox::new();
    let base = hung_server(false);
    let started = Instant::now();
    let output = exec(&sandbox, &base, &["-c", "idle_timeout_secs=1", "-c", "max_retries=1"]);
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("retrying (2/2) in "), "{stderr}");
    assert!(stderr.contains(": no data for 1s"), "{stderr}");
    assert_eq!(
        the_error(&output),
        "error: no data from the server for 1s (idle_timeout_secs) (gave up after 2 attempts)"
    );
}

#[test]
fn keep_alives_forever_hit_the_request_deadline() {
    let sandbox = Sandbox::new();
    let base = hung_server(true);
    let started = Instant::now();
    let args = ["-c", "idle_timeout_secs=1", "-c", "request_timeout_secs=2", "-c", "max_retries=3"];
    let output = exec(&sandbox, &base, &args);
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(20), "{elapsed:?}");
    assert_eq!(output.status.code(), Some(1));
    let error = the_error(&output);
    assert!(
        error.starts_with("error: no complete response within 2s (request_timeout_secs)"),
        "{error}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("retrying"), "the deadline covers retries: {stderr}");
}
