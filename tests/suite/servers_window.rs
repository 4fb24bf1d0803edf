//! What keel learns from a local server and does with it (issue 33):
//! fixture servers on 127.0.0.1 that say their window where llama.cpp,
//! vLLM and Ollama say it, report an overflow with the window in its text,
//! write tool calls as text, report no usage; through the real binary.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::{Model, Sandbox, json_lines};
use super::wire::{Step, Wire, render};

/// A Chat Completions server that plays `steps` on `/v1/chat/completions`
/// and says its window where `server` would.
async fn server_saying(window: Option<(&str, &str, Value)>, steps: &[Step]) -> MockServer {
    let server = MockServer::start().await;
    if let Some((verb, route, body)) = window {
        Mock::given(method(verb))
            .and(path(route))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&server)
            .await;
    }
    let bodies: Vec<String> =
        steps.iter().enumerate().map(|(i, step)| render(Wire::Chat, step, i)).collect();
    Mock::given(method("POST"))
        .and(path(Wire::Chat.path()))
        .respond_with(Playing { bodies, next: Default::default() })
        .mount(&server)
        .await;
    server
}

struct Playing {
    bodies: Vec<String>,
    next: std::sync::atomic::AtomicUsize,
}

impl Respond for Playing {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(self.bodies[index.min(self.bodies.len() - 1)].clone())
    }
}

/// The chat requests `server` received, as JSON.
async fn chat_requests(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.unwrap();
    requests
        .iter()
        .filter(|r| r.url.path() == Wire::Chat.path())
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

fn exec(sandbox: &Sandbox, server: &MockServer, args: &[&str]) -> std::process::Output {
    sandbox.keel_on(&Model::chat(server), &["exec"]).args(args).output().unwrap()
}

/// Runs "hi" against a server saying its window so; the first chat
/// request and stderr.
async fn first_request_with(window: (&str, &str, Value)) -> (Value, String) {
    let sandbox = Sandbox::new();
    let server = server_saying(Some(window), &[Step::Answer("hello".into())]).await;
    let output = exec(&sandbox, &server, &["-c", "provider.probe=true", "hi"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    (chat_requests(&server).await.remove(0), stderr)
}

fn tool_names(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().unwrap();
    tools.iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn llama_cpp_props_give_the_window_that_bounds_every_answer() {
    let props = json!({"default_generation_settings": {"n_ctx": 16384}, "total_slots": 1});
    let (first, stderr) = first_request_with(("GET", "/props", props)).await;
    assert_eq!(first["max_tokens"], 4096, "a quarter of the window: {stderr}");
    assert!(
        stderr.contains("a 16384-token context window (llama.cpp's /props (n_ctx))"),
        "said once: {stderr}"
    );
    assert_eq!(stderr.matches("context window (").count(), 1, "{stderr}");
}

#[tokio::test]
async fn vllm_max_model_len_is_the_window() {
    let models = json!({"object": "list", "data": [{"id": "m", "object": "model",
        "max_model_len": 32768}]});
    let (first, stderr) = first_request_with(("GET", "/v1/models", models)).await;
    assert_eq!(first["max_tokens"], 8192, "{stderr}");
    assert!(stderr.contains("vLLM's /v1/models (max_model_len)"), "{stderr}");
}

#[tokio::test]
async fn ollama_num_ctx_below_the_model_s_window_is_used_and_warned_about() {
    let show = json!({"parameters": "num_ctx    12288", "model_info": {
        "general.architecture": "qwen2", "qwen2.context_length": 32768}});
    let (first, stderr) = first_request_with(("POST", "/api/show", show)).await;
    assert_eq!(first["max_tokens"], 3072, "{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with("warning: Ollama runs m with a 12288-token window")
            && l.contains("though the model takes 32768")
            && l.contains("OLLAMA_CONTEXT_LENGTH")),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_server_on_an_unknown_port_is_not_probed_unless_asked() {
    let sandbox = Sandbox::new();
    let props = json!({"default_generation_settings": {"n_ctx": 4096}});
    let server = server_saying(Some(("GET", "/props", props)), &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server, &["hi"]);
    assert_eq!(output.status.code(), Some(0));
    let requests = server.received_requests().await.unwrap();
    assert!(requests.iter().all(|r| r.url.path() == Wire::Chat.path()), "no probe");
}

#[tokio::test]
async fn a_small_window_gets_the_compact_tools_and_instructions() {
    let sandbox = Sandbox::new();
    let server = server_saying(None, &[Step::Answer("hello".into())]).await;
    let output = exec(&sandbox, &server, &["-c", "context.window=4096", "hi"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let first = chat_requests(&server).await.remove(0);
    assert_eq!(
        tool_names(&first),
        ["read_file", "glob", "grep", "write_file", "edit_file", "shell", "submit_plan"]
    );
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.len() < 1500, "short instructions: {} bytes", system.len());
    assert!(system.contains("never write the call as text"), "{system}");

    let large = Sandbox::new();
    let server = server_saying(None, &[Step::Answer("hello".into())]).await;
    let output = exec(&large, &server, &["-c", "context.window=32768", "hi"]);
    assert_eq!(output.status.code(), Some(0));
    assert!(tool_names(&chat_requests(&server).await.remove(0)).len() > 10, "every tool");
}

/// llama-cpp-python's overflow, streamed as an empty 200, unstreamed as
/// the 400 that names the window.
struct Overflowing;

const OVERFLOW: &str = "This model's maximum context length is 2048 tokens. However, you \
    requested 2650 tokens (2394 in the messages, 256 in the completion).";

impl Respond for Overflowing {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        if body["stream"] == true {
            return ResponseTemplate::new(200).insert_header("content-type", "text/event-stream");
        }
        ResponseTemplate::new(400).set_body_json(json!({"error": {"message": OVERFLOW,
            "type": "invalid_request_error", "code": "context_length_exceeded"}}))
    }
}

#[tokio::test]
async fn the_window_an_overflow_names_is_kept_and_the_summary_fits_it() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    Mock::given(method("POST")).respond_with(Overflowing).mount(&server).await;
    let output = exec(&sandbox, &server, &["hello"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the server says its context window is 2048 tokens"), "{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap();
    assert!(error.contains("the window is 2048 tokens; keel's instructions and tools"), "{error}");
    let requests = chat_requests(&server).await;
    assert!(requests[0]["max_tokens"].is_null(), "unknown at first");
    // Every request after the overflow asks for no more than the window.
    for later in &requests[2..] {
        let asked = later["max_tokens"].as_u64().unwrap_or_else(|| panic!("{later}"));
        assert!(asked <= 2048, "{asked}");
    }
}

/// A server whose model writes its call as `text` first, then answers.
async fn writing_calls_as(text: &str) -> MockServer {
    server_saying(None, &[Step::Answer(text.into()), Step::Answer("It says alpha.".into())]).await
}

async fn run_text_call(text: &str) -> (Vec<Value>, String, Value) {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    let server = writing_calls_as(text).await;
    let output = exec(&sandbox, &server, &["--json", "What is in notes.txt?"]);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let result = json_lines(&output.stdout).pop().unwrap();
    (chat_requests(&server).await, stderr, result)
}

#[tokio::test]
async fn tool_calls_written_as_text_are_run_in_each_form() {
    let forms = [
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>",
        "I will read it.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"notes.txt\"}}\n```",
        "{\"name\": \"read_file\", \"parameters\": {\"path\": \"notes.txt\"}}",
    ];
    for text in forms {
        let (requests, _, result) = run_text_call(text).await;
        assert_eq!(result["final_text"], "It says alpha.", "{text}: {result}");
        assert_eq!(requests.len(), 2, "{text}");
        let tool = requests[1]["messages"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(tool["role"], "tool", "{text}: {tool}");
        assert!(tool["content"].as_str().unwrap().contains("alpha"), "{tool}");
    }
}

#[tokio::test]
async fn a_text_call_is_said_in_a_warning_and_an_unknown_tool_is_not_run() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    let server = writing_calls_as(
        "<tool_call>{\"name\": \"read_file\", \"arguments\": \
        {\"path\": \"notes.txt\"}}</tool_call>",
    )
    .await;
    let output = exec(&sandbox, &server, &["What is in notes.txt?"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.lines().any(|l| l.starts_with(
            "warning: the model wrote its tool call as text \
             (<tool_call> tags)"
        )),
        "{stderr}"
    );

    let unknown = "{\"name\": \"delete_repo\", \"arguments\": {}}";
    let (requests, _, result) = run_text_call(unknown).await;
    assert_eq!(requests.len(), 1, "no call: the answer stands");
    assert_eq!(result["final_text"], unknown);
}

#[tokio::test]
async fn progress_is_shown_when_asked_and_never_under_json() {
    let sandbox = Sandbox::new();
    let server = server_saying(None, &[Step::Answer("hello".into())]).await;
    let shown = exec(&sandbox, &server, &["--progress", "hi"]);
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert_eq!(shown.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("… waiting for the model · 0s"), "{stderr}");
    assert!(stderr.contains("\r\x1b[2K"), "the line is erased: {stderr:?}");

    let quiet = exec(&sandbox, &server, &["hi"]);
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("waiting for the model"));
    let json = exec(&sandbox, &server, &["--json", "--progress", "hi"]);
    assert!(!String::from_utf8_lossy(&json.stderr).contains("waiting for the model"));
}

/// A stream that ends a text answer with no usage, as llama-cpp-python's
/// does.
fn text_without_usage(text: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        let data = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {data}\n\n")
    };
    chunk(json!({"role": "assistant", "content": text}), Value::Null)
        + &chunk(json!({}), json!("stop"))
        + "data: [DONE]\n\n"
}

#[tokio::test]
async fn doctor_reports_the_window_text_calls_and_missing_usage() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/props"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"default_generation_settings": {"n_ctx": 2048}})),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"object": "list", "data": [{"id": "m", "object": "model"}]})),
        )
        .mount(&server)
        .await;
    let call =
        "<tool_call>{\"name\": \"add_numbers\", \"arguments\": {\"a\": 2, \"b\": 3}}</tool_call>";
    Mock::given(method("POST"))
        .and(path(Wire::Chat.path()))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(text_without_usage(call)),
        )
        .mount(&server)
        .await;
    let output = sandbox.keel_on(&Model::chat(&server), &["doctor", "--json"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let found: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(found["protocol"], "openai-chat", "{found}");
    assert_eq!(found["models"], json!(["m"]));
    assert_eq!(found["window"], 2048, "probed though on an unknown port: asked");
    assert_eq!(found["tools"], "text");
    assert_eq!(found["usage_reported"], false);
    assert_eq!(found["streamed"], true);
    let actions = found["actions"].to_string();
    assert!(actions.contains("offers 6 tools and short instructions"), "{actions}");
    assert!(actions.contains("estimates tokens itself"), "{actions}");

    let human = sandbox.keel_on(&Model::chat(&server), &["doctor"]).output().unwrap();
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(
        text.lines().any(|l| l == "window: 2048 tokens (llama.cpp's /props (n_ctx))"),
        "{text}"
    );
    assert!(text.contains("→ tools: the model wrote the call as text"), "{text}");
}
