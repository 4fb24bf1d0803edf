//! Snapshots of what the model sees: the request keel assembles, for each
//! provider, and after a compaction. One line per item (texts cut short,
//! temp paths, dates and ids filtered), with the instructions' sections in
//! order, so a change to the assembly order or to an item's shape shows up
//! in review.

use serde_json::{Value, json};

use super::support::{Sandbox, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// Cuts `text` to one line of at most 90 characters.
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut line: String = flat.chars().take(90).collect();
    if flat.chars().count() > 90 {
        line.push('…');
    }
    line
}

/// Replaces what changes between runs: the temp repo, the date, ids.
pub(super) fn filter(text: &str, sandbox: &Sandbox) -> String {
    let repo = sandbox.repo.display().to_string();
    let mut text = text.replace(&repo, "[REPO]");
    if let Some(start) = text.find("Date: ") {
        let end = text[start..].find(['\n', '"']).map_or(text.len(), |n| start + n);
        text.replace_range(start..end, "Date: [DATE]");
    }
    text
}

/// The instructions as the headings they contain, in order.
fn sections(instructions: &str) -> Vec<String> {
    let mut lines = vec![format!("  {}", one_line(instructions.lines().next().unwrap_or("")))];
    lines.extend(
        instructions.lines().filter(|line| line.starts_with('#')).map(|line| format!("  {line}")),
    );
    lines
}

fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .map(|part| {
                let kind = part["type"].as_str().unwrap_or("?");
                match kind {
                    "text" | "input_text" | "output_text" => {
                        part["text"].as_str().unwrap_or("").to_owned()
                    }
                    "tool_use" => format!(
                        "tool_use {} {}",
                        part["name"].as_str().unwrap_or(""),
                        part["input"]
                    ),
                    "tool_result" => format!("tool_result {}", content_text(&part["content"])),
                    other => format!("[{other}]"),
                }
            })
            .collect::<Vec<_>>()
            .join(" | "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// One line per item of the request body of `wire`.
pub(super) fn render(wire: Wire, body: &Value) -> String {
    let mut out = Vec::new();
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|tool| tool["name"].as_str().or(tool["function"]["name"].as_str()))
                .collect()
        })
        .unwrap_or_default();
    match wire {
        Wire::Responses => {
            out.push("instructions:".to_owned());
            out.extend(sections(body["instructions"].as_str().unwrap_or("")));
            for item in body["input"].as_array().into_iter().flatten() {
                let kind = item["type"].as_str().unwrap_or("message");
                let text = match kind {
                    "function_call" => format!(
                        "{} {}",
                        item["name"].as_str().unwrap_or(""),
                        item["arguments"].as_str().unwrap_or("")
                    ),
                    "function_call_output" => item["output"].as_str().unwrap_or("").to_owned(),
                    _ => format!(
                        "{}: {}",
                        item["role"].as_str().unwrap_or("?"),
                        content_text(&item["content"])
                    ),
                };
                out.push(format!("{kind}: {}", one_line(&text)));
            }
        }
        Wire::Chat => {
            for message in body["messages"].as_array().into_iter().flatten() {
                let role = message["role"].as_str().unwrap_or("?");
                if role == "system" {
                    out.push("system:".to_owned());
                    out.extend(sections(message["content"].as_str().unwrap_or("")));
                    continue;
                }
                let mut text = content_text(&message["content"]);
                for call in message["tool_calls"].as_array().into_iter().flatten() {
                    text.push_str(&format!(
                        " call {} {}",
                        call["function"]["name"].as_str().unwrap_or(""),
                        call["function"]["arguments"].as_str().unwrap_or("")
                    ));
                }
                out.push(format!("{role}: {}", one_line(&text)));
            }
        }
        Wire::Anthropic => {
            out.push("system:".to_owned());
            let system = match &body["system"] {
                Value::String(text) => text.clone(),
                other => content_text(other),
            };
            out.extend(sections(&system));
            for message in body["messages"].as_array().into_iter().flatten() {
                let role = message["role"].as_str().unwrap_or("?");
                out.push(format!("{role}: {}", one_line(&content_text(&message["content"]))));
            }
        }
    }
    out.push(format!("tools: {}", tools.join(", ")));
    out.join("\n") + "\n"
}

/// Runs a two-step session on `wire` and returns the second request.
async fn second_request(wire: Wire) -> String {
    let sandbox = Sandbox::new();
    sandbox.write("AGENTS.md", "# Project\n\nRun `cargo test` before you say done.\n");
    sandbox.write("notes.txt", "alpha\nbeta\n");
    let memory = sandbox.home.join("memory");
    std::fs::create_dir_all(&memory).unwrap();
    let note =
        "---\ndescription: The user prefers small commits\ntype: user\n---\nKeep commits small.\n";
    std::fs::write(memory.join("commits.md"), note).unwrap();
    let steps = [
        Step::Calls {
            text: Some("Reading it.".into()),
            calls: vec![call("read_file", json!({"path": "notes.txt"}))],
        },
        Step::Answer("It lists alpha and beta.".into()),
    ];
    let server = scripted_model(wire, &steps).await;
    let output = sandbox
        .keel()
        .args(["exec", "--provider", wire.provider(), "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "What is in notes.txt?"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let requests = request_bodies(&server).await;
    filter(&render(wire, &requests[1]), &sandbox)
}

#[tokio::test]
async fn responses_request_snapshot() {
    insta::assert_snapshot!(second_request(Wire::Responses).await);
}

#[tokio::test]
async fn chat_request_snapshot() {
    insta::assert_snapshot!(second_request(Wire::Chat).await);
}

#[tokio::test]
async fn anthropic_request_snapshot() {
    insta::assert_snapshot!(second_request(Wire::Anthropic).await);
}
