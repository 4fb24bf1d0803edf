//! Issue 32: the rarely used built-ins (`list_dir`, the background-process
//! tools, `web_fetch`, `set_phase`, `ask_user`) wait behind
//! `tool_search`/`call_tool`, so the first request stays under 16 kB; the
//! model finds them by words, a call through `call_tool` is judged, run and
//! logged under the tool's own name, and the tool list never changes.

use serde_json::{Value, json};

use super::mcp_faults::{calls, exec, item, tool_names};
use super::support::{Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire};

#[tokio::test]
async fn a_deferred_built_in_is_found_with_tool_search_and_judged_by_its_own_name() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.repo.join("calc.py"), "x = 1\n").unwrap();
    let model = scripted_model(
        Wire::Chat,
        &[
            calls(&[("tool_search", json!({"query": "directory"}))]),
            calls(&[("call_tool", json!({"tool": "list_dir", "arguments": {}}))]),
            // A read of the network: headless ask mode refuses it, as
            // `web_fetch`, never as `call_tool`.
            calls(&[(
                "call_tool",
                json!({"tool": "web_fetch", "arguments": {"url": "http://docs.example.test/"}}),
            )]),
            calls(&[(
                "call_tool",
                json!({"tool": "set_phase", "arguments": {"phase": "explore"}}),
            )]),
            Step::Answer("done".into()),
        ],
    )
    .await;
    let output = exec(&sandbox, &model, &[], "look around");
    // 3: needs_approval, for the web_fetch no one could approve.
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);

    let found = item(&lines, "tool_search")["item"]["output"].as_str().unwrap().to_owned();
    assert!(found.starts_with("list_dir\n"), "{found}");
    assert!(found.contains("input schema: {"), "{found}");
    assert!(found.contains(r#""maximum":5,"minimum":1"#), "list_dir's depth bounds: {found}");
    let listed = &item(&lines, "list_dir")["item"];
    assert_eq!(listed["is_error"], false, "{listed}");
    assert!(listed["output"].as_str().unwrap().contains("calc.py"), "{listed}");
    let fetched = &item(&lines, "web_fetch")["item"];
    assert_eq!(fetched["is_error"], true, "{fetched}");
    let moved = &item(&lines, "set_phase")["item"];
    assert_eq!(moved["is_error"], false, "{moved}");
    assert!(
        !lines.iter().any(|l| l["type"] == "item_completed" && l["item"]["name"] == "call_tool"),
        "every call ran under its own name"
    );

    let bodies = request_bodies(&model).await;
    let names = tool_names(&bodies[0]);
    for deferred in ["list_dir", "process_output", "web_fetch", "set_phase"] {
        assert!(!names.iter().any(|name| name == deferred), "{deferred} in {names:?}");
    }
    assert!(names.ends_with(&["tool_search".to_owned(), "call_tool".to_owned()]), "{names:?}");
    // The prefix never changes: every request offers the same tools.
    for body in &bodies[1..] {
        assert_eq!(body["tools"], bodies[0]["tools"], "the tool list was rewritten");
    }
    // The history sends back what the model wrote.
    assert!(bodies[2].to_string().contains("call_tool"));
}

/// The first request of `keel debug prompt` on `provider` with `model`.
fn first_request(provider: &str, model: &str, interactive: bool) -> Value {
    let sandbox = Sandbox::new();
    let printed = sandbox
        .keel()
        .args(["debug", "prompt", "--raw", "--provider", provider, "--model", model])
        .args(["--base-url", "http://127.0.0.1:9/v1"])
        .args(interactive.then_some("--interactive"))
        .arg("Fix the bugs in calc.py; the tests must pass")
        .output()
        .unwrap();
    assert_eq!(printed.status.code(), Some(0), "{}", String::from_utf8_lossy(&printed.stderr));
    serde_json::from_slice(&printed.stdout).unwrap()
}

// Interactive sessions offer `ask_user` too: behind tool_search, named in
// its text, never in the tool list.
#[test]
fn an_interactive_session_finds_ask_user_behind_tool_search() {
    let body = first_request("openai-chat", "m", true);
    let names = tool_names(&body);
    assert!(!names.iter().any(|name| name == "ask_user"), "{names:?}");
    let search = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "tool_search")
        .unwrap()["function"]["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(search.contains("ask_user (ask the user)"), "{search}");
    let headless = first_request("openai-chat", "m", false);
    assert!(!headless.to_string().contains("ask_user"), "no one answers a headless run");
}
