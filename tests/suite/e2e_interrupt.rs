//! Ctrl-C (SIGINT) during a running command ends the turn cleanly: the
//! command is killed, every call is answered, exit code 130, and the
//! `result` line still comes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::{Sandbox, types};
use super::wire::{Step, Wire, call};

#[tokio::test]
async fn sigint_kills_the_running_command_and_exits_130() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "sleep 30"}))] },
        Step::Answer("unreachable".into()),
    ];
    let server = super::support::scripted_model(Wire::Chat, &steps).await;
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let mut child = Command::new(keel)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "--model", "m", "sleep"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut lines = Vec::new();
    // Wait (on output, not on time) until the command is running.
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "keel ended early: {lines:?}");
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        let is_shell_start = value["type"] == "item_started" && value["item"]["name"] == "shell";
        lines.push(value);
        if is_shell_start {
            break;
        }
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    for line in reader.lines() {
        lines.push(serde_json::from_str(&line.unwrap()).unwrap());
    }
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(130), "{lines:?}");
    assert!(started.elapsed() < Duration::from_secs(20), "the sleep was not killed");
    let result = lines.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["status"], "interrupted");
    let shell_done = lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == "shell")
        .unwrap_or_else(|| panic!("the shell call was never answered: {:?}", types(&lines)));
    assert_eq!(shell_done["item"]["is_error"], true);
    let log = sandbox.only_log();
    let end = log.iter().rev().find(|l| l["type"] == "turn_completed").unwrap();
    assert_eq!(end["outcome"], "interrupted");
}
