//! `keel mcp-server`: keel as an MCP server. Driven by keel's own MCP
//! client (a real `keel exec` whose model calls `mcp__inner__keel`), and by
//! a raw JSON-RPC client that checks stdout carries nothing else and that
//! the calling agent cannot widen what keel may do.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use serde_json::{Value, json};

use super::mcp_support::write_config;
use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call, render};

fn calls(list: &[(&str, Value)]) -> Step {
    Step::Calls { text: None, calls: list.iter().map(|(n, a)| call(n, a.clone())).collect() }
}

#[tokio::test]
async fn another_agent_hands_keel_a_task_and_reads_its_answer_and_what_was_declined() {
    let sandbox = Sandbox::new();
    sandbox.write("README.md", "hello from the readme\n");
    // One scripted model serves both: the outer session's first request,
    // then the inner task's two, then the outer session's last.
    let model = scripted_model(
        Wire::Chat,
        &[
            calls(&[("mcp__inner__keel", json!({"prompt": "summarise the readme"}))]),
            calls(&[
                ("read_file", json!({"path": "README.md"})),
                ("write_file", json!({"path": "notes.txt", "content": "x"})),
            ]),
            Step::Answer("the readme says hello".into()),
            Step::Answer("done".into()),
        ],
    )
    .await;
    let base_url = format!("{}/v1", model.uri());
    write_config(
        &sandbox,
        &format!(
            "[mcp_servers.inner]\ncommand = {bin:?}\nargs = {args}\n",
            bin = env!("CARGO_BIN_EXE_keel"),
            args = json!([
                "mcp-server",
                "--mode",
                "ask",
                "--provider",
                "openai-chat",
                "--model",
                "m",
                "--base-url",
                base_url
            ]),
        ),
    );
    let talks_to = Model::with_base_url("openai-chat", &base_url);
    let output = sandbox.run(&talks_to, &["exec", "--json", "--yolo", "ask keel"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    let item = lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == "mcp__inner__keel")
        .unwrap_or_else(|| panic!("no keel call in {lines:#?}"));
    let text = item["item"]["output"].as_str().unwrap();
    assert!(text.starts_with("the readme says hello\n"), "{text}");
    assert!(text.contains("[keel: the task ended needs_approval]"), "{text}");
    assert!(text.contains("write_file"), "the declined write is named: {text}");
    assert!(!sandbox.repo.join("notes.txt").exists(), "ask mode wrote a file");

    let bodies = request_bodies(&model).await;
    assert_eq!(bodies.len(), 4);
    let inner_first = bodies[1]["messages"].to_string();
    assert!(inner_first.contains("summarise the readme"), "{inner_first}");
    let read_result = bodies[2]["messages"].to_string();
    assert!(read_result.contains("hello from the readme"), "{read_result}");
}

/// `keel mcp-server` with piped stdio, its stdout read line by line.
struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl Served {
    fn start(sandbox: &Sandbox, base_url: &str, flags: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_keel"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &sandbox.home)
            .env("KEEL_HOME", &sandbox.home)
            .current_dir(&sandbox.repo)
            .args(["mcp-server", "--provider", "openai-chat", "--model", "m"])
            .args(["--base-url", base_url])
            .args(flags)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        Self { stdin: child.stdin.take(), child, lines, next_id: 0 }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Sends a request; returns its response (every line read must be
    /// JSON-RPC).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            // A failure bound only: the answer comes at once.
            let line = self.lines.recv_timeout(Duration::from_secs(60)).unwrap();
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            if message["id"] == id {
                return message;
            }
        }
    }
}

#[tokio::test]
async fn a_raw_client_gets_json_rpc_only_and_cannot_widen_what_keel_may_do() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.repo.join("sub")).unwrap();
    let model = scripted_model(Wire::Chat, &[Step::Answer("all done".into())]).await;
    let mut served = Served::start(&sandbox, &format!("{}/v1", model.uri()), &["--full-auto"]);
    let init = served.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "keel", "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    served.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));

    let listed = served.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1, "{listed}");
    assert_eq!(tools[0]["name"], "keel");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["prompt"]));
    let description = tools[0]["description"].as_str().unwrap();
    assert!(description.contains("auto mode"), "{description}");

    // The caller cannot pick the mode, nor a folder outside the server's.
    let invalid = |reply: &Value, needle: &str| {
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains(needle), "{message}");
    };
    let args = |arguments: Value| json!({"name": "keel", "arguments": arguments});
    let reply = served.request("tools/call", args(json!({"prompt": "x", "mode": "yolo"})));
    invalid(&reply, "unknown argument `mode`");
    let reply = served.request("tools/call", args(json!({"prompt": "x", "cwd": "/"})));
    invalid(&reply, "outside");
    let reply = served.request("tools/call", args(json!({"prompt": "x", "cwd": "sub/../.."})));
    invalid(&reply, "outside");
    let reply = served.request("tools/call", args(json!({"prompt": " "})));
    invalid(&reply, "`prompt` is required");
    let reply = served.request("tools/call", json!({"name": "shell", "arguments": {}}));
    invalid(&reply, "unknown tool `shell`");
    assert!(request_bodies(&model).await.is_empty(), "a refused call reached the model");

    // A folder inside is fine; the answer is text, the result line structured.
    let reply =
        served.request("tools/call", args(json!({"prompt": "what is left?", "cwd": "sub"})));
    assert_eq!(reply["result"]["isError"], false, "{reply}");
    assert_eq!(reply["result"]["content"][0]["text"], "all done", "{reply}");
    let result = &reply["result"]["structuredContent"];
    assert_eq!(result["type"], "result", "{reply}");
    assert_eq!(result["status"], "completed", "{reply}");
    let log = std::fs::read_to_string(result["log_path"].as_str().unwrap()).unwrap();
    let cwd = sandbox.repo.join("sub").canonicalize().unwrap();
    assert!(log.contains(&format!("{:?}", cwd.display().to_string())), "{log}");

    // Its client gone, the server ends.
    drop(served.stdin.take());
    let status = served.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

/// A model that takes five minutes to answer, saying when it was asked.
struct Stalls(Mutex<Sender<()>>);

impl wiremock::Respond for Stalls {
    fn respond(&self, _request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let _ = self.0.lock().unwrap().send(());
        wiremock::ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(render(Wire::Chat, &Step::Answer("too late".into()), 0))
            .set_delay(Duration::from_secs(300))
    }
}

#[tokio::test]
async fn notifications_cancelled_interrupts_the_task_and_frees_the_server() {
    let sandbox = Sandbox::new();
    let model = scripted_model(Wire::Chat, &[Step::Answer("quick answer".into())]).await;
    let (asked, model_asked) = channel();
    wiremock::Mock::given(wiremock::matchers::body_string_contains("slow task"))
        .respond_with(Stalls(Mutex::new(asked)))
        .with_priority(1)
        .mount(&model)
        .await;
    let mut served = Served::start(&sandbox, &format!("{}/v1", model.uri()), &[]);
    served.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "1"}}),
    );
    served.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    served.send(&json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": {"name": "keel", "arguments": {"prompt": "slow task"}}}));
    model_asked.recv_timeout(Duration::from_secs(60)).unwrap();
    served.send(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 100, "reason": "the user changed their mind"}}));
    // One task at a time: this one runs once the cancelled one has ended,
    // long before the stalled answer would have come.
    let reply = served.request(
        "tools/call",
        json!({"name": "keel", "arguments": {"prompt": "how far did it get?"}}),
    );
    assert_eq!(reply["result"]["content"][0]["text"], "quick answer", "{reply}");
    let logs: Vec<Value> = std::fs::read_dir(sandbox.home.join("sessions"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .flat_map(|path| super::support::read_jsonl(&path))
        .collect();
    let ends: Vec<&Value> = logs.iter().filter(|l| l["type"] == "turn_completed").collect();
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert!(ends.iter().any(|l| l["outcome"] == "interrupted"), "{ends:?}");
    drop(served.stdin.take());
    assert!(served.child.wait().unwrap().success());
}
