//! Counting with the server's own tokenizer (issue 33): fixture servers on
//! 127.0.0.1 that count tokens where llama.cpp (`/tokenize`) and
//! llama-cpp-python (`/extras/tokenize/count`) do, finer than keel's own
//! estimate; the prompt check's figures follow the server's count. A
//! server without the endpoint, or whose endpoint fails, leaves keel's
//! estimate as it was. Through the real binary.

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::support::{Model, Sandbox};
use super::wire::{Step, Wire, render};

/// Counts two tokens for every five bytes of the text under `field`
/// (2.5 bytes a token, finer than `o200k_base`), in `shape`.
struct Counting {
    field: &'static str,
    shape: Shape,
}

#[derive(Clone, Copy)]
enum Shape {
    /// `{"tokens": [ids]}`
    LlamaCpp,
    /// `{"count": N}`
    LlamaCppPython,
    /// `{"count": N, "max_model_len": L, "tokens": [ids]}`
    Vllm,
}

impl Respond for Counting {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let Some(text) = body[self.field].as_str() else {
            return ResponseTemplate::new(400).set_body_json(json!({"error": "no text"}));
        };
        let tokens = text.len() * 2 / 5;
        let answer = match self.shape {
            Shape::LlamaCpp => json!({"tokens": vec![42; tokens]}),
            Shape::LlamaCppPython => json!({"count": tokens}),
            Shape::Vllm => {
                json!({"count": tokens, "max_model_len": 16384, "tokens": vec![42; tokens]})
            }
        };
        ResponseTemplate::new(200).set_body_json(answer)
    }
}

/// A llama.cpp-like server: `/props` says a 16384-token window, the chat
/// route answers "sent", and `tokenizer` (route and responder) counts.
async fn server(props: bool, tokenizer: Option<(&str, ResponseTemplateOr)>) -> MockServer {
    let server = MockServer::start().await;
    if props {
        Mock::given(method("GET"))
            .and(path("/props"))
            .respond_with(ResponseTemplate::new(200).set_body_json(
                json!({"default_generation_settings": {"n_ctx": 16384}, "total_slots": 1}),
            ))
            .mount(&server)
            .await;
    }
    match tokenizer {
        Some((route, ResponseTemplateOr::Counting(counting))) => {
            Mock::given(method("POST")).and(path(route)).respond_with(counting).mount(&server).await
        }
        Some((route, ResponseTemplateOr::Fixed(template))) => {
            Mock::given(method("POST")).and(path(route)).respond_with(template).mount(&server).await
        }
        None => {}
    }
    Mock::given(method("POST"))
        .and(path(Wire::Chat.path()))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(render(Wire::Chat, &Step::Answer("sent".into()), 0)),
        )
        .mount(&server)
        .await;
    server
}

enum ResponseTemplateOr {
    Counting(Counting),
    Fixed(ResponseTemplate),
}

fn llama_cpp() -> Option<(&'static str, ResponseTemplateOr)> {
    Some((
        "/tokenize",
        ResponseTemplateOr::Counting(Counting { field: "content", shape: Shape::LlamaCpp }),
    ))
}

/// 8000 one-token words (`o200k_base`): with keel's instructions and tools
/// they fit a 16384-token window's compaction limit (13926) by keel's
/// estimate, not at 2.5 bytes a token.
fn prompt() -> String {
    let mut text = "word".to_owned();
    text.push_str(&" word".repeat(7999));
    text
}

struct Run {
    code: Option<i32>,
    stderr: String,
    chats: usize,
    /// What `/tokenize` was asked to count.
    tokenized: Vec<Value>,
}

async fn run(server: &MockServer, extra: &[&str]) -> Run {
    let sandbox = Sandbox::new();
    let prompt = prompt();
    let output = sandbox
        .keel_on(&Model::chat(server), &["exec"])
        .args(["-c", "provider.probe=true"])
        .args(extra)
        .arg(&prompt)
        .output()
        .unwrap();
    let requests = server.received_requests().await.unwrap();
    let tokenized = requests
        .iter()
        .filter(|r| r.url.path() == "/tokenize")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    Run {
        code: output.status.code(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        chats: requests.iter().filter(|r| r.url.path() == Wire::Chat.path()).count(),
        tokenized,
    }
}

/// The server's count and keel's estimate of the sample, from the notice.
fn counts_in(notice: &str) -> (u64, u64) {
    let number_after = |marker: &str| -> u64 {
        let rest =
            &notice[notice.find(marker).unwrap_or_else(|| panic!("{notice}")) + marker.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    (number_after(") counts "), number_after("where keel estimates "))
}

#[tokio::test]
async fn the_prompt_check_counts_with_llama_cpp_s_tokenizer() {
    let server = server(true, llama_cpp()).await;
    let run = run(&server, &[]).await;
    assert_eq!(run.code, Some(1), "refused: {}", run.stderr);
    assert_eq!(run.chats, 0, "nothing was sent: {}", run.stderr);
    let notices: Vec<&str> =
        run.stderr.lines().filter(|l| l.starts_with("warning: the server's tokenizer")).collect();
    assert_eq!(notices.len(), 1, "said once: {}", run.stderr);
    assert!(notices[0].contains("(llama.cpp's /tokenize)"), "{}", notices[0]);
    assert!(
        notices[0].contains(
            "(2.5 bytes a token): keel counts this session's tokens as the server does (x"
        ),
        "{}",
        notices[0]
    );
    let (server_tokens, estimate) = counts_in(notices[0]);
    assert!(server_tokens > estimate, "finer than keel's: {}", notices[0]);
    // The prompt's figure is the server's: 8000 of keel's tokens, scaled.
    let expected = (8000 * server_tokens + estimate / 2) / estimate;
    assert!(
        run.stderr.contains(&format!("the prompt is about {expected} tokens;")),
        "{expected}: {}",
        run.stderr
    );
    assert!(run.stderr.contains("cannot fit the 16384-token window"), "{}", run.stderr);
    assert_eq!(run.tokenized.len(), 1, "asked once");
    let sample = run.tokenized[0]["content"].as_str().unwrap();
    assert!(sample.len() <= 16 * 1024 && sample.len() > 8 * 1024, "{} bytes", sample.len());
    assert!(sample.contains("read_file"), "keel's instructions and tools");
}

#[tokio::test]
async fn llama_cpp_python_s_count_is_used_too() {
    let counting = Counting { field: "input", shape: Shape::LlamaCppPython };
    let server =
        server(false, Some(("/extras/tokenize/count", ResponseTemplateOr::Counting(counting))))
            .await;
    let run = run(&server, &["-c", "context.window=16384"]).await;
    assert_eq!(run.code, Some(1), "refused: {}", run.stderr);
    assert_eq!(run.chats, 0);
    assert!(
        run.stderr.contains("(llama-cpp-python's /extras/tokenize/count) counts"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("the prompt is about 1"), "scaled past 10000: {}", run.stderr);
}

#[tokio::test]
async fn without_a_tokenizer_keel_s_estimate_stands_and_nothing_is_said() {
    let failing = ResponseTemplate::new(500).set_body_string("tokenizer crashed");
    let hanging = ResponseTemplate::new(200)
        .set_body_json(json!({"tokens": vec![1; 90_000]}))
        .set_delay(std::time::Duration::from_secs(30));
    let tokenizers = [
        None,
        Some(("/tokenize", ResponseTemplateOr::Fixed(failing))),
        Some(("/tokenize", ResponseTemplateOr::Fixed(hanging))),
    ];
    for tokenizer in tokenizers {
        let server = server(true, tokenizer).await;
        let started = std::time::Instant::now();
        let run = run(&server, &[]).await;
        // A tokenizer that hangs costs its 2 s timeout, not the 30 s.
        assert!(started.elapsed().as_secs() < 15, "{:?}", started.elapsed());
        assert_eq!(run.code, Some(0), "the prompt fits by keel's estimate: {}", run.stderr);
        assert_eq!(run.chats, 1, "{}", run.stderr);
        assert!(!run.stderr.contains("tokenizer"), "{}", run.stderr);
        assert!(run.stderr.contains("a 16384-token context window"), "the window: {}", run.stderr);
    }
}

#[tokio::test]
async fn a_server_keel_does_not_probe_is_not_asked_to_count() {
    // The same gate as the window's (`ServerProfile::probe_window`): a
    // loopback port keel does not know is asked only with `provider.probe`;
    // a host off this machine never (`only_local_servers_are_probed_…`).
    let server = server(true, llama_cpp()).await;
    let sandbox = Sandbox::new();
    let output = sandbox.keel_on(&Model::chat(&server), &["exec"]).arg("hi").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = server.received_requests().await.unwrap();
    assert!(requests.iter().all(|r| r.url.path() == Wire::Chat.path()), "no probe, no count");
}

#[tokio::test]
async fn vllm_s_tokenize_is_read_from_the_same_route() {
    let counting = Counting { field: "prompt", shape: Shape::Vllm };
    let server = server(true, Some(("/tokenize", ResponseTemplateOr::Counting(counting)))).await;
    let run = run(&server, &[]).await;
    assert_eq!(run.code, Some(1), "refused: {}", run.stderr);
    assert!(run.stderr.contains("(vLLM's /tokenize) counts"), "{}", run.stderr);
    assert_eq!(run.tokenized[0]["model"], "m", "{:?}", run.tokenized);
}
