//! Issue 14: one writer per session. While a `keel exec` runs a command,
//! every other way to append to its log (`exec resume ID`, `exec --last`,
//! `exec --resume`, `undo`) refuses with the holder's pid and host and exit
//! 1, and the log stays one clean sequence; `keel sessions` shows the
//! session live. Once the holder is killed (SIGKILL: no cleanup at all) its
//! lock is gone with it, and a resume goes on.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, read_jsonl, scripted_model};
use super::wire::{Step, Wire, call};

const BOUND: Duration = Duration::from_secs(30);

fn marked(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if environ.split(|b| *b == 0).any(|var| var == marker.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

/// `keel exec` running a scripted `sleep 60`, once the command runs.
fn hold_the_lock(sandbox: &Sandbox, uri: &str, marker: &str) -> (Child, Vec<Value>) {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::at("openai-chat", uri).flags())
        .args(["--json", "--full-auto", "wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut lines = Vec::new();
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "keel ended early: {lines:?}");
        let value = super::support::exec_line(&line);
        let started = value["type"] == "item_started" && value["item"]["name"] == "shell";
        lines.push(value);
        if started {
            break;
        }
    }
    let started = Instant::now();
    while marked(marker).is_empty() {
        assert!(started.elapsed() < BOUND, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, lines)
}

fn refusal(output: &std::process::Output, pid: u32, what: &str) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
    let text = format!("{stderr}{}", String::from_utf8_lossy(&output.stdout));
    assert!(text.contains("in use by keel"), "{what}: {text}");
    assert!(text.contains(&format!("pid {pid} on host ")), "{what}: {text}");
    text
}

#[tokio::test]
async fn a_live_session_refuses_a_second_writer_until_its_holder_dies() {
    let sandbox = Sandbox::new();
    let marker = format!("KEEL_LOCK_TEST={}", std::process::id());
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({ "command": format!("export {marker}; sleep 60") }))],
        },
        Step::Answer("resumed and done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let uri = format!("{}/v1", server.uri());
    let (mut holder, lines) = hold_the_lock(&sandbox, &server.uri(), &marker);
    let id = lines.iter().find_map(|l| l["session_id"].as_str()).unwrap().to_owned();
    let pid = holder.id();
    let exec = |extra: &[&str]| {
        let mut cmd = sandbox.keel();
        cmd.args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
            .args(["--base-url", &uri])
            .args(extra);
        cmd.output().unwrap()
    };

    let output = exec(&["resume", &id]);
    refusal(&output, pid, "exec resume ID");
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(
        (result["type"].as_str(), result["status"].as_str()),
        (Some("result"), Some("failed"))
    );
    refusal(&exec(&["--last", "more"]), pid, "exec --last");
    refusal(&exec(&["--resume", &id[..8], "more"]), pid, "exec --resume");
    let undo = sandbox.keel().args(["undo", "--session", &id]).output().unwrap();
    refusal(&undo, pid, "undo");

    let listed = sandbox.keel().args(["sessions", "--json"]).output().unwrap();
    let sessions: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(sessions[0]["live"]["pid"], pid, "{sessions}");
    assert_eq!(sessions[0]["status"], "running", "{sessions}");

    // The holder dies without any cleanup: the kernel drops its lock.
    holder.kill().unwrap();
    holder.wait().unwrap();
    for pid in marked(&marker) {
        let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    }
    let listed = sandbox.keel().args(["sessions", "--json"]).output().unwrap();
    let sessions: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(sessions[0]["live"], Value::Null, "{sessions}");
    assert_eq!(sessions[0]["status"], "crashed", "{sessions}");
    let output = exec(&["resume", &id]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(json_lines(&output.stdout).pop().unwrap()["final_text"], "resumed and done");

    let log_path = sandbox.home.join("sessions").join(format!("{id}.jsonl"));
    for (seq, line) in read_jsonl(&log_path).iter().enumerate() {
        assert_eq!(line["seq"], seq as u64, "one writer at a time: {line}");
    }
}
