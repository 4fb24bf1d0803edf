//! OpenTelemetry export (issue 41) through the real `keel exec`: an OTLP
//! receiver in the test (127.0.0.1, plain HTTP/1.1, bodies decoded with
//! `opentelemetry-proto`'s messages, the official definitions) gets the
//! spans, metrics and log events of a session with a tool call and a
//! subagent, the child's spans under the parent's `agent` call span; a
//! collector that never answers or is not there does not hold the
//! session up; no prompt or tool content leaves unless opted in.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use serde_json::json;

use super::routed_model::{Route, RoutedModel};
use super::subagents_e2e::{PARENT, agent_call, answer, calls, logs, of_type, result_of};
use super::support::{Sandbox, read_jsonl};
use super::wire::call;

const EXPLORE: &str = "You are a subagent exploring a codebase";
const PROMPT: &str = "Which port does the server use? (prompt-marker-5521)";
const FILE_TEXT: &str = "pub const PORT: u16 = 8080; // file-marker-7730\n";

/// Every request the receiver got: its path and body.
type Bodies = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// How the receiver treats a request.
#[derive(Clone, Copy, PartialEq)]
enum Collector {
    Answers,
    /// Reads the request and never answers (nor closes).
    Silent,
}

/// An OTLP/HTTP receiver on 127.0.0.1; returns its base URL.
fn receiver(mode: Collector) -> (String, Bodies) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let bodies: Bodies = Arc::default();
    let seen = Arc::clone(&bodies);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            if mode == Collector::Silent {
                held.push(stream);
                continue;
            }
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || serve(stream, &seen));
        }
    });
    (url, bodies)
}

/// Answers 200 to every request on one keep-alive connection.
fn serve(stream: TcpStream, seen: &Bodies) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim().is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        seen.lock().unwrap().push((path, body));
        let reply =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// `keel exec --json --full-auto` against `model` with telemetry on,
/// exporting to `endpoint`.
fn exec_exporting(
    sandbox: &Sandbox,
    model: &RoutedModel,
    endpoint: &str,
    extra: &[&str],
) -> std::process::Output {
    sandbox
        .keel()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer header-secret-1234")
        .env("OTEL_SERVICE_NAME", "keel-under-test")
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", model.uri)])
        .args(["-c", "telemetry.enabled=true"])
        .args(extra)
        .arg(PROMPT)
        .output()
        .unwrap()
}

/// A parent that reads a file and delegates to `explore`, which reads it too.
fn delegating_model() -> RoutedModel {
    RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![call("read_file", json!({"path": "src/config.rs"}))]),
                calls(vec![agent_call("explore", "find the port", "Find the port.")]),
                answer("The server listens on 8080."),
            ],
        ),
        Route::system(
            "explore",
            EXPLORE,
            vec![
                calls(vec![call("read_file", json!({"path": "src/config.rs"}))]),
                answer("PORT is 8080."),
            ],
        ),
    ])
}

fn spans_of(bodies: &Bodies) -> Vec<Span> {
    let bodies = bodies.lock().unwrap();
    let mut spans = Vec::new();
    for (_, body) in bodies.iter().filter(|(path, _)| path == "/v1/traces") {
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        for resource in request.resource_spans {
            let service = resource.resource.unwrap().attributes;
            assert!(service.iter().any(|kv| kv.key == "service.name"
                && format!("{:?}", kv.value).contains("keel-under-test")));
            for scope in resource.scope_spans {
                spans.extend(scope.spans);
            }
        }
    }
    spans
}

fn attr(span: &Span, key: &str) -> String {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| format!("{:?}", kv.value))
        .unwrap_or_default()
}

#[test]
fn a_session_with_a_tool_and_a_subagent_exports_linked_spans_metrics_and_logs() {
    let sandbox = Sandbox::new();
    sandbox.write("src/config.rs", FILE_TEXT);
    let (endpoint, bodies) = receiver(Collector::Answers);
    let model = delegating_model();
    let output = exec_exporting(&sandbox, &model, &endpoint, &[]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(result_of(&output)["status"], "completed");
    assert!(!stderr.contains("header-secret-1234"), "{stderr}");

    let (parents, children) = logs(&sandbox);
    let parent_id = read_jsonl(&parents[0])[0]["session_id"].as_str().unwrap().to_owned();
    let child_id = read_jsonl(&children[0])[0]["session_id"].as_str().unwrap().to_owned();
    let spans = spans_of(&bodies);
    let of = |session: &str, name: &str| -> Vec<&Span> {
        spans.iter().filter(|s| s.name == name && attr(s, "session.id").contains(session)).collect()
    };
    // The parent's turn: the root of the trace.
    let turns = of(&parent_id, "keel.turn");
    assert_eq!(turns.len(), 1, "{spans:#?}");
    let turn = turns[0];
    assert!(turn.parent_span_id.is_empty(), "the turn is the root");
    // Its model requests and tool calls hang under it, in its trace.
    assert_eq!(of(&parent_id, "chat m").len(), 3, "{spans:#?}");
    let reads = of(&parent_id, "execute_tool read_file");
    let agents = of(&parent_id, "execute_tool agent");
    assert_eq!((reads.len(), agents.len()), (1, 1), "{spans:#?}");
    for span in of(&parent_id, "chat m").into_iter().chain(reads).chain(agents.clone()) {
        assert_eq!(span.trace_id, turn.trace_id);
        assert_eq!(span.parent_span_id, turn.span_id, "{span:?}");
        assert!(span.end_time_unix_nano >= span.start_time_unix_nano);
    }
    // The child's turn is under the parent's `agent` call span, same trace.
    let child_turn = of(&child_id, "keel.turn");
    assert_eq!(child_turn.len(), 1, "{spans:#?}");
    assert_eq!(child_turn[0].trace_id, turn.trace_id, "one trace for the task");
    assert_eq!(child_turn[0].parent_span_id, agents[0].span_id, "under the agent call");
    let child_read = of(&child_id, "execute_tool read_file");
    assert_eq!(child_read.len(), 1);
    assert_eq!(child_read[0].parent_span_id, child_turn[0].span_id);
    assert_eq!(of(&child_id, "chat m").len(), 2);

    // Metrics: tokens (and their kinds), tool calls, tool latency.
    let bodies_now = bodies.lock().unwrap().clone();
    let mut metric_names = Vec::new();
    for (_, body) in bodies_now.iter().filter(|(path, _)| path == "/v1/metrics") {
        let request = ExportMetricsServiceRequest::decode(body.as_slice()).unwrap();
        for resource in request.resource_metrics {
            for scope in resource.scope_metrics {
                metric_names.extend(scope.metrics.into_iter().map(|m| m.name));
            }
        }
    }
    for name in ["keel.token.usage", "keel.tool.calls", "keel.tool.duration"] {
        assert!(metric_names.iter().any(|m| m == name), "{name} in {metric_names:?}");
    }
    // Log events: one per log line, named by its type.
    let mut events = Vec::new();
    for (_, body) in bodies_now.iter().filter(|(path, _)| path == "/v1/logs") {
        let request = ExportLogsServiceRequest::decode(body.as_slice()).unwrap();
        for resource in request.resource_logs {
            for scope in resource.scope_logs {
                events.extend(scope.log_records.into_iter().map(|r| r.event_name));
            }
        }
    }
    for name in ["keel.user_message", "keel.model_response", "keel.subagent_started"] {
        assert!(events.iter().any(|e| e == name), "{name} in {events:?}");
    }
    // Not opted in: no prompt, no file content, no header anywhere.
    for (path, body) in &bodies_now {
        let text = String::from_utf8_lossy(body);
        for marker in ["prompt-marker-5521", "file-marker-7730", "header-secret-1234"] {
            assert!(!text.contains(marker), "{marker} exported to {path}");
        }
    }
    // Nothing was lost, so the log says nothing about telemetry.
    let parent_log = read_jsonl(&parents[0]);
    assert!(of_type(&parent_log, "error").is_empty(), "{parent_log:?}");
}

#[test]
fn opted_in_prompts_and_tool_content_are_exported() {
    let sandbox = Sandbox::new();
    sandbox.write("src/config.rs", FILE_TEXT);
    let (endpoint, bodies) = receiver(Collector::Answers);
    let model = delegating_model();
    let opt_in = ["-c", "telemetry.log_prompts=true", "-c", "telemetry.log_tool_content=true"];
    let output = exec_exporting(&sandbox, &model, &endpoint, &opt_in);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let all: Vec<u8> = bodies.lock().unwrap().iter().flat_map(|(_, b)| b.clone()).collect();
    let text = String::from_utf8_lossy(&all);
    assert!(text.contains("prompt-marker-5521"), "the prompt, opted in");
    assert!(text.contains("file-marker-7730"), "the tool's output, opted in");
}

#[test]
fn a_collector_that_never_answers_does_not_hold_the_session() {
    let sandbox = Sandbox::new();
    sandbox.write("src/config.rs", FILE_TEXT);
    let (endpoint, _) = receiver(Collector::Silent);
    let model = delegating_model();
    let started = Instant::now();
    // An export timeout far longer than the test may take.
    let output = sandbox
        .keel()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "600000")
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", model.uri)])
        .args(["-c", "telemetry.enabled=true", PROMPT])
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(result_of(&output)["status"], "completed");
    assert!(took < Duration::from_secs(60), "waited on the collector: {took:?}");
    // What could not be sent is counted in the log.
    let (parents, _) = logs(&sandbox);
    let log = read_jsonl(&parents[0]);
    let errors = of_type(&log, "error");
    assert!(
        errors.iter().any(|e| e["message"].as_str().unwrap().contains("unsent at exit")),
        "{errors:?}"
    );
}

#[test]
fn a_collector_that_is_not_there_costs_a_line_in_the_log() {
    let sandbox = Sandbox::new();
    sandbox.write("src/config.rs", FILE_TEXT);
    // A port nobody listens on: connections are refused.
    let endpoint = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let model = delegating_model();
    let output = exec_exporting(&sandbox, &model, &endpoint, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let (parents, _) = logs(&sandbox);
    let log = read_jsonl(&parents[0]);
    let errors = of_type(&log, "error");
    let note = errors.iter().find_map(|e| e["message"].as_str()).unwrap_or_default();
    assert!(note.starts_with("telemetry:") && note.contains("dropped"), "{errors:?}");
    assert!(!note.contains("header-secret-1234"), "{note}");
}
