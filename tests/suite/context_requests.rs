//! Snapshots of what the model sees: the request keel assembles, for each
//! provider, and after a compaction. One line per item (texts cut short,
//! temp paths, dates and ids filtered), with the instructions' sections in
//! order, so a change to the assembly order or to an item's shape shows up
//! in review.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, request_bodies, scripted_model};
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

/// A user message: one line, or for a context message (keel's note of
/// what changed) the tag and the headings it holds.
fn user_line(prefix: &str, text: &str) -> Vec<String> {
    if text.starts_with("<keel_context>") {
        let mut lines = vec![format!("{prefix}<keel_context>")];
        lines.extend(
            text.lines()
                .filter(|line| line.starts_with('#') || line.starts_with("The "))
                .map(|line| format!("  {}", one_line(line))),
        );
        return lines;
    }
    vec![format!("{prefix}{}", one_line(text))]
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
                    _ => {
                        let role = item["role"].as_str().unwrap_or("?");
                        let prefix = format!("{kind}: {role}: ");
                        out.extend(user_line(&prefix, &content_text(&item["content"])));
                        continue;
                    }
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
                if role == "user" {
                    out.extend(user_line("user: ", &text));
                    continue;
                }
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
                // Blocks of one message, each on its own line(s).
                let texts: Vec<String> = match &message["content"] {
                    Value::Array(blocks) => blocks
                        .iter()
                        .map(|b| content_text(&Value::Array(vec![b.clone()])))
                        .collect(),
                    other => vec![content_text(other)],
                };
                for text in texts {
                    out.extend(user_line(&format!("{role}: "), &text));
                }
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
    let output = sandbox.run(&Model::on(wire, &server), &["exec", "What is in notes.txt?"]);
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

#[tokio::test]
async fn a_slash_skill_prompt_brings_the_skill_body_in_exec() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("reviewed".into())]).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "/review focus on error handling"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&server).await[0].clone();
    let messages = body["messages"].as_array().unwrap();
    let users: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .filter(|text| !text.starts_with("<keel_context>"))
        .collect();
    let user = users[0].to_owned();
    assert!(user.starts_with("Use the skill `review`"), "{user}");
    assert!(
        user.contains("<skill name=\"review\">") && user.ends_with("focus on error handling\n")
    );
    let log = sandbox.only_log();
    let recorded = log.iter().find(|line| line["type"] == "user_message").unwrap();
    assert_eq!(recorded["text"].as_str(), Some(user.as_str()), "the log holds what the model saw");
}

/// Everything the model reads in a first request, in full: the
/// instructions, every message, and every tool's description and
/// parameters (one line each). Reviewed line by line when a prompt
/// changes; its size is the whole body's.
fn full_text(body: &Value) -> String {
    let mut out = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        out.push(format!("===== {} =====", message["role"].as_str().unwrap_or("?")));
        out.push(content_text(&message["content"]));
    }
    out.push("===== tools =====".to_owned());
    for tool in body["tools"].as_array().into_iter().flatten() {
        let function = &tool["function"];
        out.push(format!("## {}", function["name"].as_str().unwrap_or("")));
        out.push(function["description"].as_str().unwrap_or("").to_owned());
        let parameters = &function["parameters"];
        let required: Vec<&str> = parameters["required"]
            .as_array()
            .map(|list| list.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in parameters["properties"].as_object().into_iter().flatten() {
            let mark = if required.contains(&name.as_str()) { "*" } else { "" };
            let mut rest = property.clone();
            if let Some(object) = rest.as_object_mut() {
                object.remove("description");
            }
            let line = match property["description"].as_str() {
                Some(description) => format!("- {name}{mark} {rest}: {description}"),
                None => format!("- {name}{mark} {rest}"),
            };
            out.push(line);
        }
    }
    out.join("\n") + "\n"
}

#[tokio::test]
async fn first_request_in_full_and_within_20_kilobytes() {
    let sandbox = Sandbox::new();
    sandbox.write("README.md", "# bench fixture\n\nA tiny repository for agent benchmarks.\n");
    let server = scripted_model(Wire::Chat, &[Step::Answer("done".into())]).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "Run the benchmark task."]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&server).await[0].clone();
    let size = serde_json::to_string(&body).unwrap().len();
    assert!(size <= 20 * 1024, "the first request is {size} bytes");
    insta::assert_snapshot!(filter(&full_text(&body), &sandbox));
}

/// `keel debug prompt` prints the body `keel exec` sends first, for the
/// folder and provider at hand (the session id, which does not exist yet,
/// stands in as `<session id>` where the provider takes a cache key).
async fn debug_prompt_matches_the_first_request(wire: Wire) {
    let sandbox = Sandbox::new();
    sandbox.write("AGENTS.md", "# Project\n\nRun `make test` before you say done.\n");
    let server = scripted_model(wire, &[Step::Answer("done".into())]).await;
    let base = format!("{}/v1", server.uri());
    let model = ["--provider", wire.provider(), "--model", "m", "--base-url", &base];
    let printed = sandbox
        .keel()
        .args(["debug", "prompt"])
        .args(model)
        .args(["--raw", "Fix the typo."])
        .output()
        .unwrap();
    assert_eq!(printed.status.code(), Some(0), "{}", String::from_utf8_lossy(&printed.stderr));
    let stderr = String::from_utf8_lossy(&printed.stderr);
    assert!(stderr.contains("bytes") && stderr.contains(wire.provider()), "{stderr}");
    let mut printed: Value = serde_json::from_slice(&printed.stdout).unwrap();
    let sessions = sandbox.home.join("sessions");
    assert!(
        sessions.read_dir().map_or(true, |mut d| d.next().is_none()),
        "debug prompt opened no session"
    );
    let ran = sandbox.keel().arg("exec").args(model).arg("Fix the typo.").output().unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", String::from_utf8_lossy(&ran.stderr));
    let mut sent = request_bodies(&server).await[0].clone();
    if let Some(key) = sent.get_mut("prompt_cache_key") {
        assert_eq!(printed["prompt_cache_key"], "<session id>");
        *key = printed["prompt_cache_key"].clone();
    }
    printed.as_object_mut().unwrap().retain(|_, value| !value.is_null());
    sent.as_object_mut().unwrap().retain(|_, value| !value.is_null());
    assert_eq!(printed, sent, "debug prompt prints what exec sends");
}

#[tokio::test]
async fn debug_prompt_prints_the_first_request_on_responses() {
    debug_prompt_matches_the_first_request(Wire::Responses).await;
}

#[tokio::test]
async fn debug_prompt_prints_the_first_request_on_anthropic() {
    debug_prompt_matches_the_first_request(Wire::Anthropic).await;
}

#[tokio::test]
async fn debug_prompt_prints_the_first_request_on_chat() {
    debug_prompt_matches_the_first_request(Wire::Chat).await;
}

/// A spend limit the first request would cross stops `keel exec` before
/// sending; `keel debug prompt` sends nothing and still prints the request
/// (it once failed with "a bug in keel's state machine").
#[test]
fn debug_prompt_prints_the_request_under_a_spend_limit() {
    let sandbox = Sandbox::new();
    let printed = sandbox
        .keel()
        .args(["debug", "prompt", "--provider", "openai", "--model", "gpt-4o"])
        .args(["--base-url", "http://127.0.0.1:9/v1", "-c", "limits.max_cost_usd=0.000001"])
        .args(["--raw", "Fix the typo."])
        .output()
        .unwrap();
    assert_eq!(printed.status.code(), Some(0), "{}", String::from_utf8_lossy(&printed.stderr));
    let body: Value = serde_json::from_slice(&printed.stdout).unwrap();
    assert!(body["input"].to_string().contains("Fix the typo."), "{body}");
}

/// The instruction files a Claude Code or Codex user already has reach the
/// prompt, the user's first, with Claude's inline imports expanded
/// (issue 36): the `## path` headings of `keel debug prompt`'s section.
#[test]
fn debug_prompt_shows_claude_and_codex_instruction_files() {
    let sandbox = Sandbox::new();
    for (rel, text) in [(".claude/CLAUDE.md", "claude memory\n"), (".codex/AGENTS.md", "codex\n")] {
        let path = sandbox.home.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    sandbox.write("AGENTS.md", "team rules\n");
    sandbox.write("AGENTS.override.md", "See @README for the overview.\n");
    sandbox.write("README", "README BODY\n");
    sandbox.write("CLAUDE.local.md", "my own notes\n");
    let printed = sandbox
        .keel()
        .args(["debug", "prompt", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", "http://127.0.0.1:9/v1", "--raw", "hi"])
        .output()
        .unwrap();
    assert_eq!(printed.status.code(), Some(0), "{}", String::from_utf8_lossy(&printed.stderr));
    let body: Value = serde_json::from_slice(&printed.stdout).unwrap();
    let text = full_text(&body);
    let section = &text[text.find("# Project instructions").expect(&text)..];
    let section = section.split("\n# ").next().unwrap_or(section);
    let home = format!("{}/", sandbox.home.display());
    let repo = format!("{}/", sandbox.repo.display());
    let headings: Vec<String> = section
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .map(|path| path.replace(&home, "~/").replace(&repo, ""))
        .collect();
    assert_eq!(
        headings,
        ["~/.claude/CLAUDE.md", "~/.codex/AGENTS.md", "AGENTS.override.md", "CLAUDE.local.md"]
    );
    assert!(section.contains("README BODY") && !section.contains("team rules"), "{section}");
}
