//! Real MCP servers from the npm registry (installed by `.ci/run` into a
//! cache folder, pinned by `tests/fixtures/mcp-npm/package-lock.json`),
//! each driven end to end by `keel exec` with a scripted model:
//! `@modelcontextprotocol/server-everything` over stdio and over streamable
//! HTTP, `@modelcontextprotocol/server-filesystem` over stdio.
//!
//! A plain clone without the packages passes these (they say "skipped: …
//! not installed at …"); under `CI` a missing package fails.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::mcp_support::{exec_ask as exec_with, npm_entry, npm_servers, write_config};
use super::support::Sandbox;
use super::wire::{Step, call};

fn calls(list: &[(&str, Value)]) -> Step {
    Step::Calls { text: None, calls: list.iter().map(|(n, a)| call(n, a.clone())).collect() }
}

fn completed<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    &lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == name)
        .unwrap_or_else(|| panic!("no result for {name}: {lines:#?}"))["item"]
}

async fn exec(sandbox: &Sandbox, steps: &[Step], prompt: &str) -> (Vec<Value>, Vec<Value>) {
    exec_with(sandbox, steps, prompt, 0).await
}

/// The everything server's tools through keel: echo, add, structured
/// content, an image, a long-running tool with progress, an error.
async fn everything_tools(sandbox: &Sandbox) -> Vec<Value> {
    let steps = [
        calls(&[
            ("mcp__everything__echo", json!({"message": "hello"})),
            ("mcp__everything__get-sum", json!({"a": 2, "b": 40})),
            ("mcp__everything__get-structured-content", json!({"location": "Chicago"})),
            ("mcp__everything__get-tiny-image", json!({})),
            (
                "mcp__everything__trigger-long-running-operation",
                json!({"duration": 0.2, "steps": 2}),
            ),
            ("mcp__everything__get-sum", json!({"a": "not a number", "b": 1})),
        ]),
        Step::Answer("done".into()),
    ];
    let (lines, bodies) = exec(sandbox, &steps, "use everything").await;
    let status = lines.iter().find(|l| l["type"] == "mcp_server_status").unwrap();
    assert_eq!(status["status"], "ready", "{status}");
    let results: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] != Value::Null)
        .map(|l| &l["item"])
        .collect();
    assert_eq!(results.len(), 6, "{results:#?}");
    assert_eq!(results[0]["output"], "Echo: hello");
    assert_eq!(results[1]["output"], "The sum of 2 and 40 is 42.");
    assert!(results[2]["output"].as_str().unwrap().contains("temperature"), "{}", results[2]);
    assert_eq!(results[2]["meta"]["content"], json!(["text", "structured"]));
    let image = results[3]["output"].as_str().unwrap();
    assert!(image.contains("[image: image/png"), "{image}");
    assert!(image.len() < 2_000, "no base64 reaches the model");
    assert!(results[4]["output"].as_str().unwrap().contains("Long running operation completed"));
    assert_eq!(results[5]["is_error"], true, "{}", results[5]);
    // Progress is best effort: a notification the server sends just before
    // its answer may be handled after the call ended.
    let progress: Vec<&Value> = lines.iter().filter(|l| l["type"] == "tool_progress").collect();
    assert!(!progress.is_empty(), "no progress reached the front end");
    assert_eq!(progress[0]["total"], 2.0, "{}", progress[0]);
    // Read-only tools ran without asking in ask mode, concurrently.
    let asked = lines.iter().any(|l| l["item"]["output"].to_string().contains("needs approval"));
    assert!(!asked);
    assert_eq!(bodies[0]["tools"].to_string(), bodies[1]["tools"].to_string());
    lines
}

#[tokio::test]
async fn server_everything_over_stdio() {
    let Some(dir) = npm_servers() else { return };
    let sandbox = Sandbox::new();
    let config = format!(
        "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
         trust_read_only_hint = true\n\
         env = {{ KEEL_MCP_MARKER = \"set-by-config\" }}\n",
        npm_entry(&dir, "server-everything")
    );
    write_config(&sandbox, &config);
    everything_tools(&sandbox).await;

    // The server's environment: its own variable, none of keel's secrets.
    let steps = [calls(&[("mcp__everything__get-env", json!({}))]), Step::Answer("ok".into())];
    let (lines, _) = exec(&sandbox, &steps, "env").await;
    let env = completed(&lines, "mcp__everything__get-env")["output"].as_str().unwrap().to_owned();
    assert!(env.contains("set-by-config"), "{env}");
    assert!(!env.contains("sk-keel-test-secret"), "the API key reached the server");

    // Its prompts are slash commands.
    let steps = [Step::Answer("ok".into())];
    let (_, bodies) = exec(&sandbox, &steps, "/mcp__everything__simple-prompt").await;
    assert!(bodies[0].to_string().contains("This is a simple prompt"), "{}", bodies[0]);
}

/// A server-everything process serving HTTP on a free port: `mode` is
/// `streamableHttp` or `sse` (the legacy transport).
struct HttpServer(Child, u16);

impl HttpServer {
    fn start(entry: &str, mode: &str) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new("node")
            .args([entry, mode])
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (ready, listening) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on port") || line.contains("running on port") {
                    let _ = ready.send(());
                }
            }
        });
        // A bound on a broken start, not a synchronisation sleep.
        listening.recv_timeout(Duration::from_secs(60)).expect("the HTTP server never listened");
        Self(child, port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test]
async fn server_everything_over_streamable_http() {
    let Some(dir) = npm_servers() else { return };
    let server = HttpServer::start(&npm_entry(&dir, "server-everything"), "streamableHttp");
    let sandbox = Sandbox::new();
    let config = format!(
        "[mcp_servers.everything]\nurl = \"http://127.0.0.1:{}/mcp\"\n\
         trust_read_only_hint = true\n\
         http_headers = {{ \"X-Keel-Test\" = \"1\" }}\n",
        server.1
    );
    write_config(&sandbox, &config);
    let lines = everything_tools(&sandbox).await;
    let status = lines.iter().find(|l| l["type"] == "mcp_server_status").unwrap();
    assert_eq!(status["log"], Value::Null, "HTTP servers have no stderr log");
}

#[tokio::test]
async fn server_everything_over_the_legacy_sse_transport() {
    let Some(dir) = npm_servers() else { return };
    let server = HttpServer::start(&npm_entry(&dir, "server-everything"), "sse");
    let sandbox = Sandbox::new();
    let config = format!(
        "[mcp_servers.everything]\nurl = \"http://127.0.0.1:{}/sse\"\ntransport = \"sse\"\n\
         trust_read_only_hint = true\n",
        server.1
    );
    write_config(&sandbox, &config);
    let steps = [
        calls(&[
            ("mcp__everything__echo", json!({"message": "over sse"})),
            ("mcp__everything__resources", json!({})),
        ]),
        Step::Answer("done".into()),
    ];
    let (lines, _) = exec(&sandbox, &steps, "use everything").await;
    let status = lines.iter().find(|l| l["type"] == "mcp_server_status").unwrap();
    assert_eq!(status["status"], "ready", "{status}");
    assert_eq!(completed(&lines, "mcp__everything__echo")["output"], "Echo: over sse");
    let listing = completed(&lines, "mcp__everything__resources")["output"].to_string();
    assert!(listing.contains("architecture.md"), "{listing}");
}

#[tokio::test]
async fn server_filesystem_over_stdio() {
    let Some(dir) = npm_servers() else { return };
    let sandbox = Sandbox::new();
    sandbox.write("notes/todo.txt", "buy milk\n");
    let repo = sandbox.repo.display().to_string();
    let config = format!(
        "[mcp_servers.fs]\ncommand = \"node\"\nargs = [{:?}, {repo:?}]\n\
         trust_read_only_hint = true\n\
         enabled_tools = [\"read_text_file\", \"list_directory\", \"write_file\"]\n",
        npm_entry(&dir, "server-filesystem")
    );
    write_config(&sandbox, &config);
    let steps = [
        calls(&[
            ("mcp__fs__read_text_file", json!({"path": format!("{repo}/notes/todo.txt")})),
            ("mcp__fs__list_directory", json!({"path": format!("{repo}/notes")})),
            ("mcp__fs__read_text_file", json!({"path": "/etc/hostname"})),
            ("mcp__fs__write_file", json!({"path": format!("{repo}/x.txt"), "content": "x"})),
        ]),
        Step::Answer("done".into()),
    ];
    let (lines, bodies) = exec_with(&sandbox, &steps, "read my notes", 3).await;
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "needs_approval", "{result}");
    assert_eq!(result["declined"][0]["name"], "mcp__fs__write_file", "{result}");
    let results: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] != Value::Null)
        .map(|l| &l["item"])
        .collect();
    assert_eq!(results[0]["output"], "buy milk\n");
    assert!(results[1]["output"].as_str().unwrap().contains("[FILE] todo.txt"), "{}", results[1]);
    // Outside the server's allowed folder: its own error, as a tool error.
    assert_eq!(results[2]["is_error"], true, "{}", results[2]);
    // A tool that may change things asks in ask mode (headless: declined).
    assert!(results[3]["output"].as_str().unwrap().contains("needs approval"), "{}", results[3]);
    assert!(!sandbox.repo.join("x.txt").exists());
    let offered: Vec<String> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with("mcp__"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        offered,
        ["mcp__fs__read_text_file", "mcp__fs__write_file", "mcp__fs__list_directory"]
    );
}
