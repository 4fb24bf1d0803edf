//! Ctrl-C (SIGINT) during a running command ends the turn cleanly: the
//! command is killed, every call is answered, exit code 130, and the
//! `result` line still comes.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::{Model, Sandbox, types};
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
        .arg("exec")
        .args(Model::chat(&server).flags())
        .args(["--json", "--full-auto", "sleep"])
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
        let value = super::support::exec_line(&line);
        let is_shell_start = value["type"] == "item_started" && value["item"]["name"] == "shell";
        lines.push(value);
        if is_shell_start {
            break;
        }
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    for line in reader.lines() {
        lines.push(super::support::exec_line(&line.unwrap()));
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
    super::json_pairs::assert_paired(&lines);
    let log = sandbox.only_log();
    let turn_end = log.iter().rev().find(|l| l["type"] == "turn_completed").unwrap();
    assert_eq!(turn_end["outcome"], "interrupted");
}

/// What an interrupted command printed before Ctrl-C reaches the model
/// (and the log, so a resume has it): before, its result was only
/// "cancelled by the user", and how far it got was lost.
#[tokio::test]
async fn an_interrupted_command_keeps_what_it_printed() {
    let sandbox = Sandbox::new();
    let script = "echo got-this-far; touch ran.flag; sleep 30";
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({ "command": script }))] },
        Step::Answer("unreachable".into()),
    ];
    let server = super::support::scripted_model(Wire::Chat, &steps).await;
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::chat(&server).flags())
        .args(["--json", "--full-auto", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The flag is made after the echo, so the output is in the pipe.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !sandbox.repo.join("ran.flag").exists() {
        assert!(Instant::now() < deadline, "the command never ran");
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let stdout = child.stdout.take().unwrap();
    let lines: Vec<serde_json::Value> = BufReader::new(stdout)
        .lines()
        .map(|line| super::support::exec_line(&line.unwrap()))
        .collect();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{lines:?}");
    let shell_done = lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == "shell")
        .unwrap_or_else(|| panic!("the shell call was never answered: {:?}", types(&lines)));
    let output = shell_done["item"]["output"].as_str().unwrap();
    assert!(output.starts_with("cancelled by the user"), "{output}");
    assert!(output.contains("got-this-far"), "the output so far is kept: {output}");
    assert_eq!(shell_done["item"]["meta"]["kind"], "cancelled");
    let log = sandbox.only_log();
    let finished = log.iter().find(|l| l["type"] == "tool_call_finished").unwrap();
    assert!(finished.to_string().contains("got-this-far"), "and logged: {finished}");
}
