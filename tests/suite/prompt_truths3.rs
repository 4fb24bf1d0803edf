//! Issue 32's "false or misleading" items (the third review of what the
//! model sees), each through the real `keel exec` binary and a scripted
//! model: what the model is told must match what the harness does.

use serde_json::{Value, json};

use super::prompt_truths::{calc_project, calls, read};
use super::support::{Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// The text of every tool result the model got in `request` (Responses).
fn responses_outputs(request: &Value) -> Vec<String> {
    request["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `keel exec --json` on Responses with a GPT model name (the profile that
/// gets apply_patch instead of edit_file); the request bodies and stderr.
async fn gpt_run(sandbox: &Sandbox, steps: &[Step], prompt: &str) -> (i32, Vec<Value>, String) {
    let server = scripted_model(Wire::Responses, steps).await;
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--full-auto", "--provider", "openai", "--model", "gpt-5.1-codex"])
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .arg(prompt)
        .output()
        .unwrap();
    let _ = json_lines(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output.status.code().unwrap_or(-1), request_bodies(&server).await, stderr)
}

// 32.2: `*** Add File` over an existing, unread README.md is refused with
// edit_file's message and changes nothing; after read_file it succeeds and
// the result shows the diff (32.1: "their result shows the diff").
#[tokio::test]
async fn gpt_add_file_over_an_unread_file_is_refused_then_allowed_after_reading() {
    let sandbox = calc_project();
    sandbox.write("README.md", "The user's notes.\n");
    let add = "*** Begin Patch\n*** Add File: README.md\n+# calc\n*** End Patch\n";
    let patch = || calls(vec![call("apply_patch", json!({ "patch": add }))]);
    let steps = [patch(), read("README.md"), patch(), Step::Answer("Wrote the README.".into())];
    let (code, requests, stderr) = gpt_run(&sandbox, &steps, "write a README").await;
    assert!(code == 0 || code == 1, "{code}: {stderr}");
    let offered = requests[0]["tools"].to_string();
    assert!(offered.contains("\"apply_patch\"") && !offered.contains("\"edit_file\""), "{offered}");
    let refused = responses_outputs(&requests[1]);
    let refused = refused.last().unwrap();
    assert!(
        refused.contains(
            "README.md exists but has not been read in this session; read it with read_file first"
        ),
        "{refused}"
    );
    let applied = responses_outputs(&requests[3]);
    let applied = applied.last().unwrap();
    assert!(applied.contains("A README.md\n--- a/README.md\n+++ b/README.md"), "{applied}");
    assert!(applied.contains("-The user's notes.\n+# calc"), "{applied}");
    assert_eq!(sandbox.read("README.md"), "# calc\n");
}
