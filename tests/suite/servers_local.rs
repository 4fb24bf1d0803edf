//! Local OpenAI-compatible servers as a real run met them (issue 33, the
//! llama-cpp-python review): fixture servers on 127.0.0.1 that validate
//! requests like it, and what keel does about each behaviour, through the
//! real binary.

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::{Model, Sandbox, json_lines};
use super::wire::{Step, Wire, call, render};

/// llama-cpp-python's answer (HTTP 500) to an assistant message whose
/// `content` is `null`: pydantic's report, one entry per message type of
/// the union it tried.
const NULL_CONTENT_REPORT: &str = "7 validation errors:\n  {'type': 'literal_error', 'loc': ('body', 'messages', 3, 'ChatCompletionRequestSystemMessage', 'role'), 'msg': \"Input should be 'system'\", 'input': 'assistant', 'ctx': {'expected': \"'system'\"}}\n  {'type': 'string_type', 'loc': ('body', 'messages', 3, 'ChatCompletionRequestAssistantMessage', 'content'), 'msg': 'Input should be a valid string', 'input': None}\n  {'type': 'literal_error', 'loc': ('body', 'messages', 3, 'ChatCompletionRequestToolMessage', 'role'), 'msg': \"Input should be 'tool'\", 'input': 'assistant'}";

fn validation_failure() -> ResponseTemplate {
    ResponseTemplate::new(500).set_body_json(json!({"error": {
        "message": NULL_CONTENT_REPORT, "type": "internal_server_error", "param": null, "code": null}}))
}

/// Plays `steps` like [`super::support::scripted_model`], but validates
/// every request as llama-cpp-python does: an assistant message whose
/// `content` is present and not a string is refused.
struct Validating {
    bodies: Vec<String>,
    next: AtomicUsize,
}

impl Respond for Validating {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let invalid = body["messages"].as_array().into_iter().flatten().any(|message| {
            message["role"] == "assistant"
                && message.get("content").is_some_and(|content| !content.is_string())
        });
        if invalid {
            return validation_failure();
        }
        let index = self.next.fetch_add(1, Ordering::SeqCst).min(self.bodies.len() - 1);
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(self.bodies[index].clone())
    }
}

async fn validating_server(steps: &[Step]) -> MockServer {
    let server = MockServer::start().await;
    let bodies = steps.iter().enumerate().map(|(i, step)| render(Wire::Chat, step, i)).collect();
    Mock::given(method("POST"))
        .and(path(Wire::Chat.path()))
        .respond_with(Validating { bodies, next: AtomicUsize::new(0) })
        .mount(&server)
        .await;
    server
}

fn exec(sandbox: &Sandbox, server: &MockServer, args: &[&str]) -> std::process::Output {
    sandbox.keel_on(&Model::chat(server), &["exec"]).args(args).output().unwrap()
}

#[tokio::test]
async fn a_call_without_text_is_sent_back_with_a_string_content() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "notes.txt"}))] },
        Step::Answer("It says alpha.".into()),
    ];
    let server = validating_server(&steps).await;
    let output = exec(&sandbox, &server, &["--json", "What is in notes.txt?"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.last().unwrap()["final_text"], "It says alpha.");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "no request was refused: {stderr}");
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let assistant = &second["messages"].as_array().unwrap()[3];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
}

#[tokio::test]
async fn tools_offered_to_a_local_server_come_with_tool_choice_auto() {
    let sandbox = Sandbox::new();
    let server = validating_server(&[Step::Answer("hello".into())]).await;
    let output = exec(&sandbox, &server, &["hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert!(first["tools"].as_array().is_some_and(|tools| !tools.is_empty()));
    // llama-cpp-python leaves the tools out of the prompt without it.
    assert_eq!(first["tool_choice"], "auto");
}

#[tokio::test]
async fn a_validation_report_is_not_retried_and_is_shown_in_one_line() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(validation_failure()).mount(&server).await;
    let output = exec(&sandbox, &server, &["hi"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("retrying"), "a permanent error is not retried: {stderr}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "{stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    let uri = server.uri();
    assert_eq!(
        errors,
        [format!(
            "error: POST {uri}/v1/chat/completions returned HTTP 500: the server rejected keel's \
             request as invalid (7 validation errors; e.g. \
             body.messages.3.ChatCompletionRequestAssistantMessage.content: Input should be a \
             valid string); a retry gets the same answer; please report it with the session log"
        )
        .as_str()],
        "{stderr}"
    );
    assert!(!stderr.contains("'loc'"), "no raw dump: {stderr}");
}

#[tokio::test]
async fn a_422_with_a_body_is_not_retried() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    let detail = json!({"detail": [{"type": "missing", "loc": ["body", "model"],
        "msg": "Field required", "input": {}}]});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(422).set_body_json(detail))
        .mount(&server)
        .await;
    let output = exec(&sandbox, &server, &["hi"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "{stderr}");
    assert!(stderr.contains("(1 validation error; e.g. body.model: Field required)"), "{stderr}");
}

/// A Chat Completions stream whose answer stops at the output limit, as
/// llama-cpp-python ends it (Gemma 3 270M at a 2048-token window).
fn cut_answer() -> String {
    let chunk = |delta: Value, finish: Value| {
        let data = json!({"id": "cmpl-1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {data}\n\n")
    };
    chunk(json!({"role": "assistant", "content": "The fix is to change"}), Value::Null)
        + &chunk(json!({"content": " the loop so that"}), Value::Null)
        + &chunk(json!({}), json!("length"))
        + "data: [DONE]\n\n"
}

#[tokio::test]
async fn an_answer_cut_at_the_output_limit_is_not_completed() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(cut_answer()),
        )
        .mount(&server)
        .await;
    let output = exec(&sandbox, &server, &["--json", "explain the bug"]);
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "cut", "{result}");
    assert_eq!(result["final_text"], "The fix is to change the loop so that");
    assert!(result["error"].as_str().unwrap().contains("cut off at the output limit"), "{result}");

    let human = exec(&sandbox, &server, &["explain the bug"]);
    assert_eq!(human.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with("error: the model's answer was cut off")),
        "{stderr}"
    );
}

/// The `max_tokens` of the first request `args` make.
async fn first_max_tokens(args: &[&str]) -> Value {
    let sandbox = Sandbox::new();
    let server = validating_server(&[Step::Answer("hello".into())]).await;
    let output = exec(&sandbox, &server, args);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = server.received_requests().await.unwrap();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert!(first.get("max_completion_tokens").is_none(), "local servers read max_tokens");
    first["max_tokens"].clone()
}

#[tokio::test]
async fn every_request_bounds_its_output_by_the_window_or_the_setting() {
    // Without a limit llama-cpp-python generated until its window was full
    // (284 s for one answer): a quarter of the window, unless configured.
    assert_eq!(first_max_tokens(&["-c", "context.window=8192", "hi"]).await, 2048);
    let configured = ["-c", "context.window=8192", "-c", "provider.max_output_tokens=300", "hi"];
    assert_eq!(first_max_tokens(&configured).await, 300);
    assert_eq!(first_max_tokens(&["hi"]).await, Value::Null, "unknown window, none configured");
}

#[tokio::test]
async fn a_task_a_local_server_answered_without_tools_is_not_completed() {
    // llama-cpp-python without a tool-calling chat format: the tools never
    // reach the model, which answers a request to fix a file in prose.
    let sandbox = Sandbox::new();
    let prose = "To fix the bug, change `a - b` to `a + b` in calc.py.";
    let server = validating_server(&[Step::Answer(prose.into())]).await;
    let output = exec(&sandbox, &server, &["--json", "fix the bug in calc.py"]);
    assert_eq!(output.status.code(), Some(0), "a guess from the prompt never fails the run");
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "no_tool_call", "{result}");
    assert_eq!(result["final_text"], prose);
    let why = result["error"].as_str().unwrap();
    assert!(why.contains("answered without using any tool"), "{why}");
    assert!(why.contains("--jinja") && why.contains("chatml-function-calling"), "{why}");

    let human = exec(&sandbox, &server, &["fix the bug in calc.py"]);
    assert_eq!(human.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&human.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with("warning: the model answered without using any tool")),
        "{stderr}"
    );

    // A question answered in text is what a question is for.
    let question = exec(&sandbox, &server, &["--json", "what does calc.py do?"]);
    assert_eq!(question.status.code(), Some(0));
    assert_eq!(json_lines(&question.stdout).last().unwrap()["status"], "completed");
}

/// llama-cpp-python's answer to a prompt that does not fit its window, as
/// it gives it unstreamed (HTTP 400); streamed, the error is raised after
/// the 200 went out and the stream closes without any data.
const OVERFLOW: &str = "This model's maximum context length is 2048 tokens. However, you \
    requested 2650 tokens (2394 in the messages, 256 in the completion). Please reduce the \
    length of the messages or completion.";

/// A window too small for any request: streamed, an empty 200; unstreamed,
/// the 400 that says why.
struct Overflowing;

impl Respond for Overflowing {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        if body["stream"] == true {
            return ResponseTemplate::new(200).insert_header("content-type", "text/event-stream");
        }
        ResponseTemplate::new(400).set_body_json(json!({"error": {"message": OVERFLOW,
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}))
    }
}

#[tokio::test]
async fn an_empty_stream_is_re_sent_unstreamed_and_its_error_reported() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(Overflowing).mount(&server).await;
    let output = exec(&sandbox, &server, &["hello"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The user sees the server's own reason, not "stream ended before its
    // completion"; and when compaction cannot make the request fit, the
    // run ends failed with that reason as its error, not a warning that
    // promises another try.
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("stream ended before"), "{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap_or_else(|| {
        panic!("the run ended with no error line: {stderr}");
    });
    assert!(error.contains("maximum context length is 2048"), "{error}");
    assert!(error.contains("still does not fit"), "{error}");
    assert!(
        !stderr.lines().last().unwrap_or_default().contains("asking again"),
        "the last word is a promise not kept: {stderr}"
    );
    assert!(!stderr.contains("retrying"), "the same request closes the same way: {stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("context length exceeded: This model's maximum context length")),
        "{stderr}"
    );
    let requests = server.received_requests().await.unwrap();
    let streams: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap()["stream"].clone())
        .collect();
    // Each streamed request is followed by its unstreamed re-send.
    assert!(!streams.is_empty() && streams.len().is_multiple_of(2), "{streams:?}");
    for pair in streams.chunks(2) {
        assert_eq!(pair, [json!(true), json!(false)], "{streams:?}");
    }
}

/// An unstreamed Chat Completions answer, as llama-cpp-python gives it.
fn completion(message: Value, finish: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"id": "chatcmpl-1",
        "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45}}))
}

/// Answers unstreamed only: a call first, then the text.
struct Unstreamed {
    next: AtomicUsize,
}

impl Respond for Unstreamed {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        if body["stream"] != false || body.get("stream_options").is_some() {
            return ResponseTemplate::new(400).set_body_string("streaming is off here");
        }
        match self.next.fetch_add(1, Ordering::SeqCst) {
            0 => completion(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
                    "type": "function", "function": {"name": "read_file",
                    "arguments": "{\"path\": \"notes.txt\"}"}}]}),
                "tool_calls",
            ),
            _ => completion(json!({"role": "assistant", "content": "It says alpha."}), "stop"),
        }
    }
}

#[tokio::test]
async fn stream_false_sends_every_request_unstreamed_and_reads_the_answers() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Unstreamed { next: AtomicUsize::new(0) })
        .mount(&server)
        .await;
    let args = ["-c", "provider.stream=false", "--json", "What is in notes.txt?"];
    let output = exec(&sandbox, &server, &args);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    assert_eq!(result["final_text"], "It says alpha.", "{result}");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "{stderr}");
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let tool = second["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(tool["role"], "tool");
    assert!(tool["content"].as_str().unwrap().contains("alpha"), "{tool}");
}

#[test]
fn stream_false_is_refused_where_keel_cannot_read_the_answer() {
    let sandbox = Sandbox::new();
    let model = Model::at("anthropic", "http://127.0.0.1:9");
    let output =
        sandbox.keel_on(&model, &["exec", "-c", "provider.stream=false", "hi"]).output().unwrap();
    assert_ne!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("provider.stream")
            && stderr.contains("only from Chat Completions (openai-chat), not from `anthropic`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn an_overflow_compaction_cannot_cure_is_the_result_s_error() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(Overflowing).mount(&server).await;
    let output = exec(&sandbox, &server, &["--json", "hello"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "result")
        .unwrap_or_else(|| panic!("no result line: {stdout}"));
    assert_eq!(result["status"], "failed", "{result}");
    let error = result["error"].as_str().unwrap_or_else(|| panic!("no error: {result}"));
    assert!(error.contains("maximum context length is 2048"), "{error}");
    let errors = stdout.lines().filter(|l| l.contains(r#""type":"error""#)).count();
    assert_eq!(errors, 1, "the error is shown once: {stdout}");
}
