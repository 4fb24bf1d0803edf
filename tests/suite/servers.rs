//! Real servers' stream shapes through the real binary: each test replays
//! one response recorded in the shape a server documents (fixtures in
//! `tests/fixtures/servers/*.sse`, each naming its sources in SSE comment
//! lines) to `keel exec`, lets the tool run, and checks the **next
//! request**: what that server validates (echoed signatures, reasoning,
//! ids, no duplicate or merged calls).

use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::{Sandbox, json_lines};
use super::wire::{Step, Wire, render};

/// The body of a fixture file.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/servers/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Answers successive requests with successive bodies (the last repeats),
/// on any path, keeping what it received.
struct Bodies(Vec<String>, std::sync::atomic::AtomicUsize);

impl Respond for Bodies {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let n = self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst).min(self.0.len() - 1);
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(self.0[n].clone())
    }
}

/// What a replay left behind.
pub struct Replay {
    pub sandbox: Sandbox,
    pub output: std::process::Output,
    pub requests: Vec<Request>,
}

impl Replay {
    pub fn bodies(&self) -> Vec<Value> {
        self.requests.iter().map(|r| serde_json::from_slice(&r.body).unwrap()).collect()
    }

    pub fn lines(&self) -> Vec<Value> {
        json_lines(&self.output.stdout)
    }

    pub fn result(&self) -> Value {
        self.lines().pop().unwrap()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Tool calls the session started, by name.
    pub fn started_calls(&self) -> Vec<Value> {
        self.sandbox
            .only_log()
            .into_iter()
            .filter(|line| line["type"] == "tool_call_started")
            .map(|line| line["call"].clone())
            .collect()
    }
}

/// How to run one replay.
pub struct Run<'a> {
    pub wire: Wire,
    pub model: &'a str,
    /// Appended to the mock's URI to make the base URL.
    pub base_path: &'a str,
    pub args: &'a [&'a str],
    pub env: &'a [(&'a str, &'a str)],
}

impl Run<'_> {
    pub fn chat(model: &str) -> Run<'_> {
        Run { wire: Wire::Chat, model, base_path: "/v1", args: &[], env: &[] }
    }
}

/// Replays `first` bodies (then a final answer) to `keel exec --json
/// --full-auto`, in a repo holding `notes.txt` and `todo.txt`.
pub async fn replay(run: Run<'_>, first: &[String]) -> Replay {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\nbeta\n");
    sandbox.write("todo.txt", "buy milk\n");
    let mut bodies = first.to_vec();
    bodies.push(render(run.wire, &Step::Answer("Done: alpha and beta.".into()), 9));
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Bodies(bodies, std::sync::atomic::AtomicUsize::new(0)))
        .mount(&server)
        .await;
    let mut command = sandbox.keel();
    command
        .args(["exec", "--json", "--full-auto", "--provider", run.wire.provider()])
        .args(["--base-url", &format!("{}{}", server.uri(), run.base_path)])
        .args(["--model", run.model])
        .args(run.args);
    for (key, value) in run.env {
        command.env(key, value);
    }
    let output = command.arg("What do notes.txt and todo.txt say?").output().unwrap();
    let requests = server.received_requests().await.unwrap_or_default();
    Replay { sandbox, output, requests }
}

/// The assistant messages of a Chat Completions request.
pub fn assistant_messages(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .cloned()
        .collect()
}

/// `(tool_call_id, content)` of the tool messages of a Chat request.
pub fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Asserts a completed run whose second request answers `call_ids`, each
/// once, with the files' contents.
pub fn assert_round_trip(replay: &Replay, call_ids: &[&str]) -> Value {
    assert_eq!(replay.output.status.code(), Some(0), "stderr: {}", replay.stderr());
    assert_eq!(replay.result()["status"], "completed", "{}", replay.result());
    let bodies = replay.bodies();
    assert_eq!(bodies.len(), 2, "one tool round trip, then the answer");
    let second = bodies[1].clone();
    let results = tool_messages(&second);
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, call_ids, "each call answered once, by its own id");
    let calls = assistant_messages(&second)[0]["tool_calls"].as_array().unwrap().clone();
    let echoed: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(echoed, call_ids, "the calls go back with the server's ids");
    assert!(results[0].1.contains("alpha"), "{results:?}");
    second
}

#[tokio::test]
async fn ollama_parallel_calls_at_index_0_stay_two_calls() {
    let replay = replay(Run::chat("qwen3:8b"), &[fixture("ollama.sse")]).await;
    let second = assert_round_trip(&replay, &["call_k1x9wz3a", "call_p2m4qq7b"]);
    let calls = &assistant_messages(&second)[0]["tool_calls"];
    assert_eq!(calls[0]["function"]["arguments"], r#"{"path":"notes.txt"}"#);
    assert_eq!(calls[1]["function"]["arguments"], r#"{"path":"todo.txt"}"#);
    assert!(tool_messages(&second)[1].1.contains("buy milk"));
    // Ollama's `reasoning` is kept in the log but not sent back (unwanted).
    assert!(assistant_messages(&second)[0].get("reasoning").is_none(), "{second}");
    assert_eq!(replay.result()["usage"]["input_tokens"], 812 + 100);
}

#[tokio::test]
async fn vllm_reasoning_stays_out_of_the_next_request_and_cache_hits_count() {
    let replay = replay(Run::chat("Qwen/Qwen3-8B"), &[fixture("vllm.sse")]).await;
    let second = assert_round_trip(&replay, &["chatcmpl-tool-5c1e0a"]);
    let message = &assistant_messages(&second)[0];
    assert!(message.get("reasoning_content").is_none(), "{message}");
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], r#"{"path": "notes.txt"}"#);
    let reasoning = replay
        .lines()
        .into_iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["type"] == "reasoning")
        .unwrap();
    assert_eq!(reasoning["item"]["text"], "The user wants notes.txt read.");
    assert_eq!(replay.result()["usage"]["cached_input_tokens"], 512 + 40);
}

#[tokio::test]
async fn llama_cpp_object_arguments_are_serialized_not_dropped() {
    let replay = replay(Run::chat("gpt-oss-20b"), &[fixture("llamacpp-chat.sse")]).await;
    let second = assert_round_trip(&replay, &["Yk3mPq9sT2"]);
    let call = &assistant_messages(&second)[0]["tool_calls"][0];
    assert_eq!(call["function"]["arguments"], r#"{"path":"notes.txt"}"#);
}

#[tokio::test]
async fn lm_studio_empty_repeated_names_do_not_rename_the_call() {
    let replay = replay(Run::chat("qwen3-30b-a3b"), &[fixture("lmstudio.sse")]).await;
    let second = assert_round_trip(&replay, &["365174485"]);
    let message = &assistant_messages(&second)[0];
    assert_eq!(message["content"], "Reading it.");
    assert_eq!(message["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(message["tool_calls"][0]["function"]["arguments"], r#"{"path":"notes.txt"}"#);
}

#[tokio::test]
async fn openrouter_reasoning_details_go_back_unchanged() {
    let replay =
        replay(Run::chat("anthropic/claude-sonnet-4.5"), &[fixture("openrouter.sse")]).await;
    let second = assert_round_trip(&replay, &["toolu_01AbCdEf"]);
    let message = &assistant_messages(&second)[0];
    let expected = serde_json::json!([{"type": "reasoning.text", "text": "Need the file.",
        "format": "anthropic-claude-v1", "index": 0, "signature": "EqQBCkYIBxgCKkDsig"}]);
    assert_eq!(message["reasoning_details"], expected, "{message}");
    assert!(message.get("reasoning").is_none(), "the plain text is not sent twice");
    assert_eq!(replay.result()["usage"]["cached_input_tokens"], 1536 + 40);
}

#[tokio::test]
async fn openrouter_numeric_502_mid_stream_is_retried_visibly() {
    let first = [fixture("openrouter-midstream-502.sse"), fixture("openrouter.sse")];
    let replay = replay(Run::chat("anthropic/claude-sonnet-4.5"), &first).await;
    assert_eq!(replay.output.status.code(), Some(0), "{}", replay.stderr());
    assert_eq!(replay.requests.len(), 3, "the failed attempt, its retry, the answer");
    let retrying: Vec<Value> =
        replay.lines().into_iter().filter(|l| l["type"] == "retrying").collect();
    assert_eq!(retrying.len(), 1, "{retrying:?}");
    assert_eq!(retrying[0]["attempt"], 2);
    let reason = retrying[0]["reason"].as_str().unwrap();
    assert!(reason.contains("502") && reason.contains("Provider returned error"), "{reason}");
    assert_eq!(replay.started_calls().len(), 1, "the call of the retried attempt runs once");
}

#[tokio::test]
async fn groq_usage_is_read_from_x_groq() {
    let replay = replay(Run::chat("openai/gpt-oss-120b"), &[fixture("groq.sse")]).await;
    assert_round_trip(&replay, &["fc_7d2e9b1c"]);
    let usage = &replay.result()["usage"];
    assert_eq!(usage["input_tokens"], 1530 + 100, "{usage}");
    assert_eq!(usage["output_tokens"], 44 + 20, "{usage}");
}

#[tokio::test]
async fn deepseek_thinking_mode_gets_its_reasoning_content_back() {
    let replay = replay(Run::chat("deepseek-reasoner"), &[fixture("deepseek.sse")]).await;
    let second = assert_round_trip(&replay, &["call_00_Rk5vWbQ1"]);
    let message = &assistant_messages(&second)[0];
    assert_eq!(
        message["reasoning_content"], "The user asks about notes.txt. I should read it first.",
        "{message}"
    );
    assert_eq!(replay.result()["usage"]["cached_input_tokens"], 1024 + 40);
}

#[tokio::test]
async fn reasoning_echo_setting_overrides_detection() {
    let args = ["-c", "provider.reasoning_echo=off"];
    let run = Run { args: &args, ..Run::chat("deepseek-reasoner") };
    let off = replay(run, &[fixture("deepseek.sse")]).await;
    let second = assert_round_trip(&off, &["call_00_Rk5vWbQ1"]);
    assert!(assistant_messages(&second)[0].get("reasoning_content").is_none());
    let args = ["-c", "provider.reasoning_echo=always"];
    let run = Run { args: &args, ..Run::chat("Qwen/Qwen3-8B") };
    let always = replay(run, &[fixture("vllm.sse")]).await;
    let second = assert_round_trip(&always, &["chatcmpl-tool-5c1e0a"]);
    assert_eq!(
        assistant_messages(&second)[0]["reasoning_content"],
        "The user wants notes.txt read."
    );
}

#[tokio::test]
async fn mistral_nine_character_ids_and_thinking_chunks() {
    let replay = replay(Run::chat("magistral-medium-2509"), &[fixture("mistral.sse")]).await;
    let second = assert_round_trip(&replay, &["D681PevKs"]);
    let message = &assistant_messages(&second)[0];
    assert_eq!(message["content"], "Reading it.", "thinking chunks are not text");
    let reasoning = replay
        .lines()
        .into_iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["type"] == "reasoning")
        .unwrap();
    assert_eq!(reasoning["item"]["text"], "I will read notes.txt.");
}

#[tokio::test]
async fn together_null_tool_calls_and_usage_on_the_finish_chunk() {
    let replay =
        replay(Run::chat("Qwen/Qwen3-235B-A22B-Instruct-2507-tput"), &[fixture("together.sse")])
            .await;
    assert_round_trip(&replay, &["call_6hqp0s3kt9"]);
    assert_eq!(replay.result()["usage"]["input_tokens"], 900 + 100);
}

#[tokio::test]
async fn azure_keeps_api_version_and_sends_the_api_key_header() {
    let env = [("OPENAI_API_KEY", "azure-key")];
    let run = Run {
        base_path: "/openai/deployments/gpt-4o?api-version=2024-10-21",
        env: &env,
        ..Run::chat("gpt-4o")
    };
    let replay = replay(run, &[fixture("azure.sse")]).await;
    assert_round_trip(&replay, &["call_AzQ1"]);
    let request = &replay.requests[1];
    assert_eq!(request.url.path(), "/openai/deployments/gpt-4o/chat/completions");
    assert_eq!(request.url.query(), Some("api-version=2024-10-21"));
    assert_eq!(request.headers.get("api-key").unwrap(), "azure-key");
    assert!(request.headers.get("authorization").is_none());
}

#[tokio::test]
async fn gemini_thought_signatures_are_echoed_on_the_call_and_the_message() {
    let replay = replay(Run::chat("gemini-3-pro-preview"), &[fixture("gemini.sse")]).await;
    let second = assert_round_trip(&replay, &["function-call-14928311"]);
    let message = &assistant_messages(&second)[0];
    assert_eq!(
        message["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
        "EpoBCpcBAdHtimCallSig==",
        "{message}"
    );
    assert_eq!(
        message["extra_content"]["google"]["thought_signature"], "CrICAdHtim827fQtextsig",
        "{message}"
    );
}

#[tokio::test]
async fn litellm_heartbeats_are_skipped_and_thinking_blocks_go_back() {
    let replay = replay(Run::chat("claude-sonnet-4-5"), &[fixture("litellm.sse")]).await;
    let second = assert_round_trip(&replay, &["toolu_01XyZ"]);
    let message = &assistant_messages(&second)[0];
    let blocks = serde_json::json!([{"type": "thinking", "thinking": "Need notes.",
        "signature": "ErUBCkYIBRgCIkBsig"}]);
    assert_eq!(message["thinking_blocks"], blocks, "{message}");
    assert_eq!(message["tool_calls"][0]["provider_specific_fields"]["cache_hint"], "a");
    let usage = &replay.result()["usage"];
    assert_eq!(usage["cache_write_tokens"], 900, "{usage}");
}

#[tokio::test]
async fn a_resumed_session_sends_the_provider_data_back_too() {
    // The first run ends after the tool ran (the answer is a 500); the
    // resume's request is built from the log alone.
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\nbeta\n");
    let server = MockServer::start().await;
    let fail = ResponseTemplate::new(400).set_body_string(r#"{"error":{"message":"stop here"}}"#);
    Mock::given(method("POST"))
        .respond_with(Bodies(vec![fixture("gemini.sse")], 0.into()))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST")).respond_with(fail).up_to_n_times(1).mount(&server).await;
    let answer = render(Wire::Chat, &Step::Answer("resumed".into()), 3);
    Mock::given(method("POST")).respond_with(Bodies(vec![answer], 0.into())).mount(&server).await;
    let base = format!("{}/v1", server.uri());
    let first = sandbox
        .keel()
        .args([
            "exec",
            "--json",
            "--full-auto",
            "--provider",
            "openai-chat",
            "--model",
            "gemini-3-pro-preview",
        ])
        .args(["--base-url", &base, "read notes.txt"])
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(1));
    let session =
        json_lines(&first.stdout).pop().unwrap()["session_id"].as_str().unwrap().to_owned();
    let resumed = sandbox
        .keel()
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat"])
        .args(["--model", "gemini-3-pro-preview", "--base-url", &base])
        .args(["resume", &session, "go on"])
        .output()
        .unwrap();
    assert_eq!(resumed.status.code(), Some(0), "{}", String::from_utf8_lossy(&resumed.stderr));
    let requests = server.received_requests().await.unwrap();
    let last: Value = serde_json::from_slice(&requests.last().unwrap().body).unwrap();
    let message = &assistant_messages(&last)[0];
    assert_eq!(
        message["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
        "EpoBCpcBAdHtimCallSig==",
        "{message}"
    );
}
