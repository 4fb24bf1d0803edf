//! Issue 35 item 6: nothing a stdio MCP server starts outlives keel, even
//! a server that ignores EOF and SIGTERM when keel is SIGKILLed, and even
//! a child the server moved into its own session (`setsid`).

use std::time::{Duration, Instant};

use serde_json::json;

use super::mcp_faults::{calls, exec};
use super::mcp_support::{fault_table, gone_soon, python, recorded, write_config};
use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire};

#[tokio::test]
async fn a_server_that_ignores_eof_is_gone_after_keel_is_sigkilled() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("sticky.jsonl");
    write_config(&sandbox, &fault_table("fault", &python, "sticky", &record, ""));
    let model = scripted_model(
        Wire::Chat,
        &[calls(&[("mcp__fault__slow", json!({}))]), Step::Answer("ok".into())],
    )
    .await;
    let mut keel = std::process::Command::new(assert_cmd::cargo::cargo_bin("keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::chat(&model).flags())
        .args(["--json", "--yolo", "go"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until the server runs the call that never ends.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !recorded(&record).iter().any(|message| message["method"] == "tools/call") {
        assert!(Instant::now() < deadline, "the server never got the call");
        std::thread::sleep(Duration::from_millis(20));
    }
    keel.kill().unwrap();
    keel.wait().unwrap();
    assert!(gone_soon(&record.display().to_string()), "the server outlived a SIGKILLed keel");
}

#[tokio::test]
async fn a_server_s_setsid_child_is_gone_after_a_normal_end() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("setsid.jsonl");
    write_config(&sandbox, &fault_table("fault", &python, "setsid-child", &record, ""));
    let model = scripted_model(
        Wire::Chat,
        &[calls(&[("mcp__fault__echo", json!({"text": "x"}))]), Step::Answer("ok".into())],
    )
    .await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(gone_soon(&record.display().to_string()), "the server's setsid child outlived keel");
}
