//! `[provider] strict_tools = true` (issue 32), through the real binary on
//! each protocol: the recorded first request offers every keel tool in the
//! protocol's strict subset with its strict flag (`call_tool`, whose
//! arguments are free-form, as it is), and a call that says `null` for
//! each optional argument, as strict mode makes a model do, runs like one
//! that leaves them out.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// Each tool of a request body: its name, strict flag and schema.
fn tools(wire: Wire, body: &Value) -> Vec<(String, Option<bool>, Value)> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let (entry, schema) = match wire {
                Wire::Responses => (tool, &tool["parameters"]),
                Wire::Chat => (&tool["function"], &tool["function"]["parameters"]),
                Wire::Anthropic => (tool, &tool["input_schema"]),
            };
            let name = entry["name"].as_str().unwrap_or_default().to_owned();
            (name, entry["strict"].as_bool(), schema.clone())
        })
        .collect()
}

/// The tools of the first request, one line each (name, strict flag, what
/// it requires), then `grep`'s and `shell`'s schemas in full (one line each).
fn render(wire: Wire, body: &Value) -> String {
    let tools = tools(wire, body);
    let mut out: Vec<String> = tools
        .iter()
        .map(|(name, strict, schema)| {
            let closed = schema["additionalProperties"] == false;
            format!("{name} strict={strict:?} closed={closed} required={}", schema["required"])
        })
        .collect();
    for (name, _, schema) in &tools {
        if name == "grep" || name == "shell" {
            out.push(format!("{name}: {}", schema));
        }
    }
    out.join("\n") + "\n"
}

/// A strict-profile `keel exec` on `wire` whose model calls `grep` and
/// `shell` with `null` for every optional argument, then `grep` with a
/// `context` past its bound; returns the recorded requests.
async fn strict_session(wire: Wire) -> Vec<Value> {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\nbeta\n");
    let nulls = json!({"pattern": "alpha", "path": null, "glob": null, "type": null,
        "case_insensitive": null, "mode": null, "context": null, "limit": null});
    let shell = json!({"command": "echo strict-ran", "timeout_ms": null, "workdir": null,
        "verify": null, "background": null});
    let steps = [
        Step::Calls { text: None, calls: vec![call("grep", nulls), call("shell", shell)] },
        Step::Calls {
            text: None,
            calls: vec![call("grep", json!({"pattern": "beta", "context": 50}))],
        },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(wire, &steps).await;
    let output = sandbox.run(
        &Model::on(wire, &server),
        &["exec", "--full-auto", "-c", "provider.strict_tools=true", "Find alpha."],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    request_bodies(&server).await
}

async fn strict_requests(wire: Wire) -> String {
    let requests = strict_session(wire).await;
    assert_eq!(requests.len(), 3);
    // The calls with nulls ran: their results are in the second request.
    let second = requests[1].to_string();
    assert!(second.contains("notes.txt:1:alpha"), "{second}");
    assert!(second.contains("strict-ran"), "{second}");
    assert!(!second.contains("invalid type: null"), "{second}");
    // A bound the strict schema could not carry (Anthropic) is said.
    let third = requests[2].to_string();
    assert!(third.contains("[context lowered to 10, the most allowed]"), "{third}");
    // The prefix stays byte-stable across the session.
    assert_eq!(requests[0]["tools"], requests[2]["tools"]);
    render(wire, &requests[0])
}

#[tokio::test]
async fn strict_tools_on_responses() {
    insta::assert_snapshot!(strict_requests(Wire::Responses).await);
}

#[tokio::test]
async fn strict_tools_on_chat() {
    insta::assert_snapshot!(strict_requests(Wire::Chat).await);
}

#[tokio::test]
async fn strict_tools_on_anthropic() {
    insta::assert_snapshot!(strict_requests(Wire::Anthropic).await);
}

/// Off (the default), no tool says `strict: true` and none is closed.
#[tokio::test]
async fn strict_tools_are_off_by_default() {
    for wire in [Wire::Responses, Wire::Chat, Wire::Anthropic] {
        let sandbox = Sandbox::new();
        let server = scripted_model(wire, &[Step::Answer("done".into())]).await;
        let output = sandbox.run(&Model::on(wire, &server), &["exec", "Hi."]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        let body = &request_bodies(&server).await[0];
        for (name, strict, schema) in tools(wire, body) {
            assert_ne!(strict, Some(true), "{wire:?} {name}");
            assert!(schema.get("additionalProperties").is_none(), "{wire:?} {name}");
        }
    }
}

/// The sizes keel logs for the tools (`prompt_prefix`'s `tool_bytes`, what
/// the spend ledger splits the prefix by) are those of the schemas sent:
/// the strict forms under `strict_tools`.
#[tokio::test]
async fn the_logged_tool_sizes_are_those_of_the_strict_schemas_sent() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("done".into())]).await;
    let output = sandbox
        .run(&Model::on(Wire::Chat, &server), &["exec", "-c", "provider.strict_tools=true", "Hi."]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = &request_bodies(&server).await[0];
    let log = sandbox.only_log();
    let prefix = log.iter().find(|line| line["type"] == "prompt_prefix").unwrap();
    let mut strict = 0;
    for tool in body["tools"].as_array().unwrap() {
        let function = &tool["function"];
        let name = function["name"].as_str().unwrap();
        let sent = name.len()
            + function["description"].as_str().unwrap().len()
            + function["parameters"].to_string().len();
        assert_eq!(prefix["tool_bytes"][name].as_u64(), Some(sent as u64), "{name}: {prefix}");
        strict += usize::from(function["strict"] == true);
    }
    assert!(strict > 3, "strict tools were sent: {body}");
}

/// A strict call's `null`s are absent fields (issue 32): the user is shown
/// the call without them (the headless needs-approval listing, the same
/// text the TUI's approval shows), and a hook's `tool_input` has none.
#[tokio::test]
async fn a_strict_calls_nulls_reach_neither_the_approval_nor_the_hooks() {
    let sandbox = Sandbox::new();
    let hook = "[[hooks.PreToolUse]]\nmatcher = \"\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\n\
                command = \"cat > hook-input.json\"\n";
    std::fs::write(sandbox.home.join("config.toml"), hook).unwrap();
    let shell = json!({"command": "touch made.txt", "timeout_ms": null, "workdir": null,
        "verify": null, "background": null, "pty": null});
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", shell)] },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(
        &Model::on(Wire::Chat, &server),
        &["exec", "-c", "provider.strict_tools=true", "Make the file."],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!sandbox.repo.join("made.txt").exists(), "the call needed approval: {stderr}");
    assert!(stderr.contains("    $ touch made.txt\n"), "{stderr}");
    assert!(!stderr.contains("null"), "{stderr}");
    let input: Value = serde_json::from_str(&sandbox.read("hook-input.json")).unwrap();
    assert_eq!(input["tool_input"], json!({"command": "touch made.txt"}), "{input}");
    // The model's own call goes back to it as it was sent.
    let second = request_bodies(&server).await[1].to_string();
    assert!(second.contains(r#"\"timeout_ms\":null"#), "{second}");
}
