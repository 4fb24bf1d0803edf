//! Issue 14: a model's call never ends the session. The patch that used to
//! panic keel applies; a tool or native hook that panics (injected with
//! `KEEL_TEST_PANIC_IN`) becomes an error result the model reads and an
//! `internal_error` log line, and the session goes on to its `result`.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

fn exec(sandbox: &Sandbox, uri: &str) -> assert_cmd::Command {
    sandbox.keel_on(&Model::at("openai-chat", uri), &["exec", "--json", "--full-auto"])
}

fn tool_outputs(lines: &[Value]) -> Vec<(String, bool, String)> {
    lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["type"] == "tool_call")
        .map(|l| {
            let item = &l["item"];
            (
                item["name"].as_str().unwrap_or("").to_owned(),
                item["is_error"] == true,
                item["output"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_addition_before_a_removal_applies_and_the_session_completes() {
    let sandbox = Sandbox::new();
    sandbox.write("f.txt", "a\nb\nc\nd\n");
    let patch = "*** Begin Patch\n*** Update File: f.txt\n@@\n+tail\n@@\n a\n-b\n*** End Patch\n";
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({ "path": "f.txt" }))] },
        Step::Calls { text: None, calls: vec![call("apply_patch", json!({ "patch": patch }))] },
        Step::Answer("patched".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri()).arg("patch it").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(sandbox.read("f.txt"), "a\nc\nd\ntail\n");
    let lines = json_lines(&output.stdout);
    let outputs = tool_outputs(&lines);
    assert_eq!(outputs.len(), 2, "{lines:?}");
    assert!(!outputs[1].1, "the patch failed: {}", outputs[1].2);
    assert_eq!(lines.last().unwrap()["type"], "result");
}

#[tokio::test]
async fn a_panicking_tool_is_an_error_result_and_an_internal_error_line() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "hi\n");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "hello.txt"}))] },
        Step::Calls { text: None, calls: vec![call("list_dir", json!({}))] },
        Step::Answer("done anyway".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri())
        .env("KEEL_TEST_PANIC_IN", "read_file")
        .arg("read it")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // The caught panic is reported as keel's warning, not as Rust's
    // "thread panicked" message.
    assert!(!stderr.contains("thread '"), "{stderr}");
    let lines = json_lines(&output.stdout);
    let warned = lines.iter().any(|l| {
        l["type"] == "warning"
            && l["message"].as_str().unwrap_or("").contains("internal error in the read_file tool")
    });
    assert!(warned, "{lines:?}");
    let outputs = tool_outputs(&lines);
    assert_eq!(outputs[0].0, "read_file");
    assert!(outputs[0].1 && outputs[0].2.contains("failed unexpectedly"), "{outputs:?}");
    assert!(outputs[0].2.contains("injected by KEEL_TEST_PANIC_IN"), "{outputs:?}");
    assert_eq!(outputs[1], ("list_dir".into(), false, outputs[1].2.clone()), "the session went on");
    let result = lines.last().unwrap();
    assert_eq!(
        (result["type"].as_str(), result["status"].as_str()),
        (Some("result"), Some("completed"))
    );

    // The model read the error; the log has the internal_error line.
    let bodies = request_bodies(&server).await;
    assert!(bodies[1].to_string().contains("failed unexpectedly"));
    let log = sandbox.only_log();
    let internal: Vec<&Value> = log.iter().filter(|l| l["type"] == "internal_error").collect();
    assert_eq!(internal.len(), 1, "{log:?}");
    assert_eq!(internal[0]["source"], "tool");
    assert_eq!(internal[0]["name"], "read_file");
    assert_eq!(internal[0]["call_id"], "call_0_0");
    assert_eq!(log.last().unwrap()["type"], "session_ended");
}

#[tokio::test]
async fn a_panicking_native_hook_blocks_the_call_and_the_session_goes_on() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "hi\n");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "hello.txt"}))] },
        Step::Answer("done anyway".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri())
        .env("KEEL_TEST_PANIC_IN", "protect_secrets")
        .arg("read it")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    let outputs = tool_outputs(&lines);
    assert!(outputs[0].1, "a broken guard lets nothing through: {outputs:?}");
    assert!(outputs[0].2.contains("protect_secrets hook failed"), "{outputs:?}");
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let log = sandbox.only_log();
    let internal: Vec<&Value> = log.iter().filter(|l| l["type"] == "internal_error").collect();
    assert_eq!(internal.len(), 1, "{log:?}");
    assert_eq!(
        (internal[0]["source"].as_str(), internal[0]["name"].as_str()),
        (Some("hook"), Some("protect_secrets"))
    );
}
