//! What keel takes from an MCP server on trust, through the real binary
//! against the fault server (`tests/fixtures/mcp/fault_server.py`): a
//! tool's `readOnlyHint` only where the user opted in per server
//! (`trust_read_only_hint`), so a hostile server's "read-only" tool that
//! writes never runs unasked, nor at all in the read-only modes.

use serde_json::{Value, json};

use super::mcp_faults::{calls, exec, item};
use super::mcp_support::{fault_table, python, write_config};
use super::support::{Sandbox, json_lines, scripted_model};
use super::wire::{Step, Wire};

/// Runs `keel exec --mode MODE` with a lying server (every tool claims
/// read-only; `add` writes) and the model calling `mcp__lie__add`;
/// `extra` goes into the server's table. The call's item, the final
/// result line, whether the counter file was written.
async fn lying_add(mode: &str, extra: &str) -> (Value, Value, bool) {
    let python = python().unwrap();
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("lie.jsonl");
    write_config(&sandbox, &fault_table("lie", &python, "lying", &record, extra));
    let script = [calls(&[("mcp__lie__add", json!({}))]), Step::Answer("done".into())];
    let model = scripted_model(Wire::Chat, &script).await;
    let output = exec(&sandbox, &model, &["--mode", mode], "go");
    let lines = json_lines(&output.stdout);
    let add = item(&lines, "mcp__lie__add")["item"].clone();
    let result = lines.last().cloned().unwrap_or_default();
    (add, result, std::path::Path::new(&format!("{}.count", record.display())).exists())
}

#[tokio::test]
async fn a_server_s_read_only_claim_is_not_trusted_unless_the_user_says_so() {
    if python().is_none() {
        return;
    }
    // Read-only modes refuse it, naming the setting that would trust it.
    for mode in ["plan", "explore"] {
        let (add, _, written) = lying_add(mode, "").await;
        assert_eq!(add["is_error"], true, "{mode}: {add}");
        let output = add["output"].as_str().unwrap();
        assert!(
            output.contains(&format!("{mode} mode is read-only"))
                && output.contains("trust_read_only_hint = true"),
            "{mode}: {output}"
        );
        assert!(!written, "{mode}: the lying tool wrote");
    }
    // Ask and auto ask (headless: declined, nothing ran).
    for mode in ["ask", "auto"] {
        let (add, _, written) = lying_add(mode, "").await;
        assert!(add["output"].as_str().unwrap().contains("needs approval"), "{mode}: {add}");
        assert!(!written, "{mode}: the lying tool wrote");
    }
    // The user's opt-in makes the claim count: it runs as a read, also in plan.
    let (add, _, written) = lying_add("plan", "trust_read_only_hint = true").await;
    assert_eq!(add["output"], "added one", "{add}");
    assert!(written);
}

/// An MCP call that changed the workspace counts as a change for the
/// verification gate: delivering right after it is `unverified`.
#[tokio::test]
async fn an_mcp_call_that_wrote_to_the_workspace_leaves_the_turn_unverified() {
    if python().is_none() {
        return;
    }
    let (add, result, written) = lying_add("yolo", "").await;
    assert_eq!(add["output"], "added one", "{add}");
    assert!(written);
    assert_eq!(result["type"], "result", "{result}");
    assert_eq!(result["status"], "unverified", "{result}");
}

#[tokio::test]
async fn keel_mcp_get_says_whether_a_server_s_read_only_claims_are_trusted() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("lie.jsonl");
    write_config(&sandbox, &fault_table("lie", &python, "lying", &record, ""));
    let output = sandbox.keel().args(["mcp", "get", "lie"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("trust_read_only_hint = false"), "{stdout}");
    assert!(stdout.contains("mcp__lie__add  (may change things; claims read-only)"), "{stdout}");
    let output = sandbox.keel().args(["mcp", "get", "lie", "--json"]).output().unwrap();
    let server: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(server["trust_read_only_hint"], false);
    assert_eq!(server["tools"][0]["claims_read_only"], true);
    assert_eq!(server["tools"][0]["read_only"], false);
}
