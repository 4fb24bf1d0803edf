//! Stream behaviours that are not one server's (calls with neither index
//! nor id, a Responses output only in `response.completed`, an empty
//! answer, error objects inside a 200 stream), llama.cpp's Responses
//! endpoint, and Gemini's array-shaped error body, each through the real
//! binary, checking the next request or the one-line error.

use serde_json::Value;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::servers::{Run, assert_round_trip, fixture, replay};
use super::support::{Model, Sandbox, json_lines};
use super::wire::Wire;

#[tokio::test]
async fn whole_calls_with_neither_index_nor_id_are_two_calls() {
    let replay =
        replay(Run::chat("local-model"), &[fixture("calls-without-index-or-id.sse")]).await;
    let second = assert_round_trip(&replay, &["call_0", "call_1"]);
    let messages = second["messages"].as_array().unwrap();
    let assistant = messages.iter().find(|message| message["role"] == "assistant").unwrap();
    let calls = &assistant["tool_calls"];
    assert_eq!(calls[1]["function"]["arguments"], r#"{"path":"todo.txt"}"#, "{second}");
}

#[tokio::test]
async fn llama_cpp_responses_without_output_index_run_each_call_once() {
    let run = Run { wire: Wire::Responses, ..Run::chat("gpt-oss-20b") };
    let replay = replay(run, &[fixture("llamacpp-responses.sse")]).await;
    assert_eq!(replay.output.status.code(), Some(0), "{}", replay.stderr());
    assert_eq!(replay.started_calls().len(), 1, "the call runs once");
    assert_eq!(replay.started_calls()[0]["arguments"], r#"{"path":"notes.txt"}"#);
    let second = &replay.bodies()[1];
    // keel's context message (environment, mode, phase) is not this test's.
    let input: Vec<&Value> = second["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| !item.to_string().contains("<keel_context>"))
        .collect();
    let kinds: Vec<&str> = input.iter().map(|item| item["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["message", "reasoning", "function_call", "function_call_output"],
        "no duplicate items: {second}"
    );
    let reasoning = &input[1];
    assert_eq!(reasoning["content"][0]["text"], "Read notes.txt.", "{reasoning}");
    assert!(reasoning.get("encrypted_content").is_none(), "an empty blob is not sent: {reasoning}");
    assert_eq!(input[2]["call_id"], "fc_Yk3mPq9sT2");
    assert_eq!(input[3]["call_id"], "fc_Yk3mPq9sT2");
    assert!(input[3]["output"].as_str().unwrap().contains("alpha"));
}

#[tokio::test]
async fn a_responses_output_only_in_completed_is_the_answer() {
    let run = Run { wire: Wire::Responses, ..Run::chat("m") };
    let replay = replay(run, &[fixture("responses-completed-only.sse")]).await;
    assert_eq!(replay.output.status.code(), Some(0), "{}", replay.stderr());
    let result = replay.result();
    assert_eq!(result["status"], "completed");
    assert_eq!(result["final_text"], "notes.txt lists alpha and beta.", "{result}");
    assert_eq!(replay.requests.len(), 1);
}

#[tokio::test]
async fn an_empty_answer_is_retried_once_then_an_error_naming_the_stop_reason() {
    let empty = fixture("empty-answer.sse");
    let replay = replay(Run::chat("m"), &[empty.clone(), empty]).await;
    assert_eq!(replay.output.status.code(), Some(1), "{}", replay.stderr());
    assert_eq!(replay.requests.len(), 2, "retried once");
    let result = replay.result();
    assert_eq!(result["status"], "failed");
    let error = result["error"].as_str().unwrap();
    assert!(
        error.contains("without any text or tool call") && error.contains("max_tokens"),
        "{error}"
    );
    let retrying: Vec<Value> =
        replay.lines().into_iter().filter(|l| l["type"] == "retrying").collect();
    assert_eq!(retrying.len(), 1);
}

#[tokio::test]
async fn an_empty_answer_then_a_real_one_completes() {
    let replay = replay(Run::chat("m"), &[fixture("empty-answer.sse")]).await;
    assert_eq!(replay.output.status.code(), Some(0), "{}", replay.stderr());
    assert_eq!(replay.result()["final_text"], "Done: alpha and beta.");
}

#[tokio::test]
async fn quota_inside_a_stream_is_not_retried() {
    let body = "data: {\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}\n\n";
    let replay = replay(Run::chat("m"), &[body.to_owned()]).await;
    assert_eq!(replay.output.status.code(), Some(1));
    assert_eq!(replay.requests.len(), 1, "not retried");
    assert!(replay.result()["error"].as_str().unwrap().contains("exceeded your current quota"));
}

#[tokio::test]
async fn gemini_array_error_bodies_show_the_message() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    let body = r#"[{"error":{"code":400,"message":"Function call is missing a thought_signature in functionCall parts.","status":"INVALID_ARGUMENT"}}]"#;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_raw(body, "application/json"))
        .mount(&server)
        .await;
    let output = sandbox
        .keel()
        .args(["exec", "--provider", "openai-chat", "--model", "gemini-3-pro-preview"])
        .args(["--base-url", &format!("{}/v1beta/openai", server.uri()), "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "printed once: {stderr}");
    assert!(
        errors[0].contains("HTTP 400: Function call is missing a thought_signature"),
        "{stderr}"
    );
    assert!(!errors[0].contains("[{"), "not the raw body: {stderr}");
}

#[tokio::test]
async fn anthropic_cache_reads_and_writes_reach_the_result_and_the_cost() {
    let sandbox = Sandbox::new();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(fixture("anthropic-cache.sse"), "text/event-stream"),
        )
        .mount(&server)
        .await;
    let output = sandbox.run(
        &Model::on(Wire::Anthropic, &server).named("claude-sonnet-4-5"),
        &["exec", "--json", "what is in notes.txt?"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    let usage = &result["usage"];
    assert_eq!(usage["input_tokens"], 12 + 6000 + 1800, "{usage}");
    assert_eq!(usage["cached_input_tokens"], 6000);
    assert_eq!(usage["cache_write_tokens"], 1800);
    assert_eq!(usage["cache_hit_rate"], 0.768, "{usage}");
    // 12 × $3 + 6000 × $0.30 + 1800 × $3.75 + 200 × $15, per million.
    let cost = result["cost_usd"].as_f64().unwrap();
    let want = (12.0 * 3.0 + 6000.0 * 0.3 + 1800.0 * 3.75 + 200.0 * 15.0) / 1e6;
    assert!((cost - want).abs() < 1e-9, "{cost} vs {want}");
    let turn = lines.iter().find(|l| l["type"] == "turn_completed").unwrap();
    assert_eq!(turn["usage"]["cache_write_tokens"], 1800, "usage events carry writes too");
}
