//! `keel exec --json` items come in honest pairs (README "`keel exec
//! --json`"), through the real binary: every `item_started` has exactly
//! one `item_completed` with the same `item.id` after it, and nothing
//! completes that did not start: a message cut by Ctrl-C or by a failed
//! request completes with what streamed and says so, and a call that never
//! ran (declined, forbidden, refused by a hook, in a subagent, after a
//! resume) starts right before it completes.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use super::subagents_e2e::counter_that_must_ask;
use super::support::{Model, Sandbox, json_lines, scripted_model, types};
use super::wire::{Step, Wire, call};

/// The pairing invariant over all lines of one run; returns the completed
/// items. An item without an `id` is keyed by its call id or type.
pub(super) fn assert_paired(lines: &[Value]) -> Vec<Value> {
    let mut open: Vec<String> = Vec::new();
    let mut done: Vec<String> = Vec::new();
    let mut completed = Vec::new();
    for line in lines {
        let item = &line["item"];
        let key = match item["id"].as_str() {
            Some(id) => id.to_owned(),
            None => format!("{}:{}:{}", line["parent"], item["type"], item["call_id"]),
        };
        match line["type"].as_str() {
            Some("item_started") => {
                assert!(!open.contains(&key) && !done.contains(&key), "{key} started twice");
                open.push(key);
            }
            Some("item_completed") => {
                let Some(at) = open.iter().position(|k| *k == key) else {
                    panic!("{key} completed without starting: {line}\n{:?}", types(lines))
                };
                done.push(open.remove(at));
                completed.push(item.clone());
            }
            Some("result") => assert!(open.is_empty(), "never completed: {open:?}\n{lines:?}"),
            _ => {}
        }
    }
    assert_eq!(lines.last().map(|l| &l["type"]), Some(&json!("result")), "{lines:?}");
    completed
}

fn exec_json(sandbox: &Sandbox, uri: &str, extra: &[&str], prompt: &str) -> Vec<Value> {
    let output = sandbox
        .keel_on(&Model::at("openai-chat", uri), &["exec", "--json"])
        .args(extra)
        .arg(prompt)
        .output()
        .unwrap();
    json_lines(&output.stdout)
}

fn shell(command: &str) -> Step {
    Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] }
}

/// Ask mode cannot ask for an edit: the call is declined.
#[tokio::test]
async fn a_declined_call_starts_before_it_completes() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    let steps = [
        Step::Calls {
            text: Some("Editing.".into()),
            calls: vec![call(
                "edit_file",
                json!({"path": "a.txt", "old_string": "a", "new_string": "b"}),
            )],
        },
        Step::Answer("could not".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let lines = exec_json(&sandbox, &server.uri(), &[], "edit");
    assert_eq!(lines.last().unwrap()["status"], "needs_approval");
    let completed = assert_paired(&lines);
    let edit = completed.iter().find(|i| i["name"] == "edit_file").unwrap();
    assert_eq!(edit["meta"]["kind"], "denied", "{edit}");
    let messages: Vec<&Value> = completed.iter().filter(|i| i["type"] == "agent_message").collect();
    assert_eq!(messages.len(), 2, "{completed:?}");
    assert!(messages.iter().all(|m| m["status"] == "completed"), "{messages:?}");
}

#[tokio::test]
async fn a_call_forbidden_by_a_rule_starts_before_it_completes() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    let rule = "prefix_rule(pattern=[\"curl\"], decision=\"forbidden\")\n";
    std::fs::write(sandbox.home.join("rules/user.rules"), rule).unwrap();
    let server = scripted_model(
        Wire::Chat,
        &[shell("curl -s http://127.0.0.1:9/x"), Step::Answer("no".into())],
    )
    .await;
    let lines = exec_json(&sandbox, &server.uri(), &["--full-auto"], "download");
    let completed = assert_paired(&lines);
    assert!(completed.iter().any(|i| i["name"] == "shell" && i["meta"]["kind"] == "denied"));
}

#[tokio::test]
async fn a_call_refused_by_a_hook_starts_before_it_completes() {
    let sandbox = Sandbox::new();
    let hook = "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\n\
                type = \"command\"\ncommand = \"echo no >&2; exit 2\"\n";
    std::fs::write(sandbox.home.join("config.toml"), hook).unwrap();
    let server =
        scripted_model(Wire::Chat, &[shell("touch x.txt"), Step::Answer("no".into())]).await;
    let lines = exec_json(&sandbox, &server.uri(), &["--full-auto"], "touch");
    let completed = assert_paired(&lines);
    assert!(completed.iter().any(|i| i["name"] == "shell"), "{completed:?}");
    assert!(!sandbox.repo.join("x.txt").exists());
}

#[test]
fn a_subagents_declined_call_is_paired_under_its_parent() {
    let (sandbox, model) = counter_that_must_ask();
    let lines = exec_json(&sandbox, &model.uri, &["--full-auto"], "Count");
    assert_eq!(lines.last().unwrap()["status"], "needs_approval");
    assert_paired(&lines);
    let started = lines
        .iter()
        .find(|l| l["type"] == "item_started" && l["item"]["name"] == "shell")
        .unwrap_or_else(|| panic!("the child's call never started: {lines:?}"));
    assert!(started["parent"].is_string(), "{started}");
}

#[tokio::test]
async fn a_call_declined_again_after_a_resume_starts_in_the_resumed_stream() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "x.txt", "content": "x"}))],
        },
        Step::Answer("could not write".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let base = format!("{}/v1", server.uri());
    let model = ["--provider", "openai-chat", "--model", "m", "--base-url", &base];
    // Killed after the model's response (seq 5), before the approval.
    let crashed = sandbox
        .keel()
        .arg("exec")
        .args(model)
        .arg("write x")
        .env("KEEL_TEST_CRASH_AFTER_SEQ", "5")
        .output()
        .unwrap();
    assert_eq!(crashed.status.code(), None, "killed");
    let output = sandbox.keel().args(["exec", "--json", "--last"]).args(model).output().unwrap();
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.last().unwrap()["status"], "needs_approval", "{lines:?}");
    let completed = assert_paired(&lines);
    assert!(completed.iter().any(|i| i["name"] == "write_file"), "{completed:?}");
}

/// A chat-completions server streaming `text` in pieces to every request;
/// then it keeps the connection open (`hold`) or drops it mid-response.
fn streaming_server(text: &'static str, hold: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || answer_partly(stream, text, hold));
        }
    });
    format!("http://{address}")
}

fn answer_partly(mut stream: TcpStream, text: &str, hold: bool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = value.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let mut out = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n",
    );
    for piece in [&text[..text.len() / 2], &text[text.len() / 2..]] {
        let chunk = json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
    if hold {
        // Until keel goes away.
        let _ = reader.read_to_end(&mut Vec::new());
    }
}

#[test]
fn a_message_cut_by_ctrl_c_completes_with_its_text_as_interrupted() {
    let sandbox = Sandbox::new();
    let uri = streaming_server("Hello, wor", true);
    let mut child = Command::new(env!("CARGO_BIN_EXE_keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::at("openai-chat", &uri).flags())
        .args(["--json", "greet"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines: Vec<Value> = Vec::new();
    // Wait (on output, not on time) until the message streams.
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "keel ended early: {lines:?}");
        let value = super::support::exec_line(&line);
        let streaming = value["type"] == "item_started" && value["item"]["type"] == "agent_message";
        lines.push(value);
        if streaming {
            break;
        }
    }
    let kill = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(kill.success());
    for line in reader.lines() {
        lines.push(super::support::exec_line(&line.unwrap()));
    }
    assert_eq!(child.wait().unwrap().code(), Some(130), "{lines:?}");
    assert_eq!(lines.last().unwrap()["status"], "interrupted");
    let completed = assert_paired(&lines);
    let message = completed.iter().find(|i| i["type"] == "agent_message").unwrap();
    assert_eq!(message["status"], "interrupted", "{message}");
    // What streamed before the signal: at least the first piece, which
    // announced the message.
    assert!(message["text"].as_str().unwrap().starts_with("Hello"), "{message}");
}

#[test]
fn a_message_cut_by_a_failed_request_completes_as_failed_each_attempt() {
    let sandbox = Sandbox::new();
    let uri = streaming_server("Half an ans", false);
    let output = sandbox
        .run(&Model::at("openai-chat", &uri), &["exec", "--json", "-c", "max_retries=1", "greet"]);
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.last().unwrap()["status"], "failed", "{lines:?}");
    assert!(lines.iter().any(|l| l["type"] == "retrying"), "{:?}", types(&lines));
    let completed = assert_paired(&lines);
    let messages: Vec<&Value> = completed.iter().filter(|i| i["type"] == "agent_message").collect();
    assert_eq!(messages.len(), 2, "one per attempt: {completed:?}");
    for message in messages {
        assert_eq!(message["status"], "failed", "{message}");
        assert_eq!(message["text"], "Half an ans");
    }
}
