//! Resume and the log's failure modes through the real binary: a damaged
//! log resumes with warnings, a pending approval is asked again, a full
//! disk stops keel before anything runs unrecorded, and `keel sessions`
//! lists what is there.

use serde_json::{Value, json};

use super::support::{Sandbox, json_lines, read_jsonl, request_bodies, scripted_model, types};
use super::wire::{Step, Wire, call};

fn model_args(uri: &str) -> Vec<String> {
    ["--provider", "openai-chat", "--model", "m", "--base-url"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain([format!("{uri}/v1")])
        .collect()
}

fn log_file(sandbox: &Sandbox) -> std::path::PathBuf {
    let dir = sandbox.home.join("sessions");
    std::fs::read_dir(dir).unwrap().next().unwrap().unwrap().path()
}

#[tokio::test]
async fn a_torn_corrupt_and_newer_log_resumes_with_warnings() {
    let sandbox = Sandbox::new();
    let server = scripted_model(
        Wire::Chat,
        &[Step::Answer("first answer".into()), Step::Answer("second answer".into())],
    )
    .await;
    let args = model_args(&server.uri());
    let output = sandbox.keel().arg("exec").args(&args).arg("first question").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));

    // Damage the log: a corrupt line in the middle, a line from a newer
    // keel, and a torn last line.
    let path = log_file(&sandbox);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.insert(2, "{{{ not json".to_owned());
    let newer = json!({"v": 2, "seq": 99, "ts": "t", "type": "hologram", "beam": true});
    lines.push(newer.to_string());
    let mut damaged = lines.join("\n");
    damaged.push_str("\n{\"v\":1,\"seq\":100,\"ts\":\"2026");
    std::fs::write(&path, damaged).unwrap();

    let id = path.file_stem().unwrap().to_string_lossy()[..13].to_owned();
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--resume", &id])
        .args(&args)
        .arg("second question")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    let warnings: Vec<&Value> = lines.iter().filter(|l| l["type"] == "warning").collect();
    let all = format!("{warnings:?}");
    assert!(all.contains("corrupt line 3"), "{all}");
    assert!(all.contains("hologram"), "{all}");
    assert!(all.contains("torn last line"), "{all}");
    assert_eq!(lines.last().unwrap()["final_text"], "second answer");

    // The model saw the whole first exchange again.
    let bodies = request_bodies(&server).await;
    let last = bodies.last().unwrap().to_string();
    assert!(last.contains("first question") && last.contains("first answer"), "{last}");
    assert!(last.contains("second question"));
}

#[tokio::test]
async fn a_pending_approval_is_asked_again_after_a_crash() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "x.txt", "content": "x"}))],
        },
        Step::Answer("could not write".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let args = model_args(&server.uri());
    // Seq 0 session_started, 1 prompt_prefix, 2 turn_started, 3
    // context_updated, 4 user_message, 5 model_response: killed while the
    // approval is pending.
    let output = sandbox
        .keel()
        .arg("exec")
        .args(&args)
        .arg("write x")
        .env("KEEL_TEST_CRASH_AFTER_SEQ", "5")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), None, "killed");
    let output = sandbox.keel().args(["exec", "--json", "--last"]).args(&args).output().unwrap();
    // Asked again, and declined again: exec cannot ask (needs_approval).
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let log = read_jsonl(&log_file(&sandbox));
    let log_types = types(&log);
    let resumed = log_types.iter().position(|t| t == "session_resumed").unwrap();
    let approval = log.iter().position(|l| l["type"] == "approval").unwrap();
    assert!(approval > resumed, "asked again after the resume: {log_types:?}");
    let judged = log
        .iter()
        .rposition(|l| l["type"] == "policy_decision" && l["decision"] == "prompt")
        .unwrap();
    assert!(resumed < judged && judged < approval, "judged again first: {log_types:?}");
    assert_eq!(log[approval]["approved"], false);
    assert_eq!(log[approval]["scope"], "once");
    assert!(!sandbox.repo.join("x.txt").exists());
    assert_eq!(json_lines(&output.stdout).last().unwrap()["final_text"], "could not write");
}

#[tokio::test]
async fn a_full_disk_is_reported_and_nothing_runs_unrecorded() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "x.txt", "content": "x"}))],
        },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    // Seq 5 model_response, 6 policy_decision, 7 phase_changed (orient to
    // implement), 8 the write_file call's tool_call_started line.
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--full-auto"])
        .args(model_args(&server.uri()))
        .arg("write x")
        .env("KEEL_TEST_FAIL_WRITE_AT_SEQ", "8")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["status"], "failed");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("no space left on device"), "{error}");
    assert!(error.contains(".jsonl"), "names the log: {error}");
    assert!(!sandbox.repo.join("x.txt").exists(), "the unrecorded call did not run");
    assert_eq!(request_bodies(&server).await.len(), 1, "and nothing else happened");
}

#[tokio::test]
async fn sessions_lists_newest_first_with_status_and_prompt() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("hi".into())]).await;
    let args = model_args(&server.uri());
    for prompt in ["first task", "second task"] {
        let output = sandbox.keel().arg("exec").args(&args).arg(prompt).output().unwrap();
        assert_eq!(output.status.code(), Some(0));
    }
    let output = sandbox.keel().args(["sessions", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&output.stdout).unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["first_prompt"], "second task");
    assert_eq!(list[1]["first_prompt"], "first task");
    assert_eq!(list[0]["status"], "completed", "the last turn's outcome, not `ended`");
    assert_eq!(list[0]["folder"], sandbox.repo.display().to_string());
    assert!(list[0]["started"].as_str().unwrap() >= list[1]["started"].as_str().unwrap());
    let table = sandbox.keel().arg("sessions").output().unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert_eq!(text.lines().count(), 3, "a header and two rows: {text}");
    assert!(text.lines().next().unwrap().starts_with("ID"), "{text}");
    assert!(text.lines().nth(1).unwrap().contains("second task"), "{text}");
}

/// Issue 5, acceptance 2: killed while an approval is pending during
/// implement, the resume asks for it again, and phase, approved plan and
/// tasks are as they were.
#[tokio::test]
async fn a_pending_approval_in_implement_is_asked_again_with_plan_phase_and_tasks_restored() {
    use super::workflow_e2e::{phase, read_hello, typo_edit};
    let todos = json!({"todos": [{"id": "1", "text": "fix the typo", "status": "in_progress"}]});
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("todo_write", todos)] },
        read_hello(),
        phase("plan"),
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": "1. fix the typo"}))],
        },
        phase("implement"),
        typo_edit(),
        Step::Answer("The edit was declined.".into()),
    ];
    let fresh = || {
        let sandbox = Sandbox::new();
        sandbox.write("hello.txt", "helo world\n");
        sandbox
    };
    // Where the edit's policy decision (ask) lands, from a run that ends.
    let reference = fresh();
    let server = scripted_model(Wire::Chat, &steps).await;
    let args = model_args(&server.uri());
    let output = reference
        .keel()
        .arg("exec")
        .args(&args)
        .args(["--approve-plan", "fix it"])
        .output()
        .unwrap();
    // The edit asks in ask mode and exec cannot ask: needs_approval.
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let log = reference.only_log();
    let asked = log.iter().find(|l| l["type"] == "policy_decision" && l["decision"] == "prompt");
    let seq = asked.unwrap()["seq"].as_u64().unwrap();
    let edit_id = asked.unwrap()["call_id"].as_str().unwrap().to_owned();

    let sandbox = fresh();
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel()
        .arg("exec")
        .args(model_args(&server.uri()))
        .args(["--approve-plan", "fix it"])
        .env("KEEL_TEST_CRASH_AFTER_SEQ", seq.to_string())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), None, "killed while the approval was pending");

    let after = vec![Step::Answer("The edit was declined.".into())];
    let server = scripted_model(Wire::Chat, &after).await;
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--last"])
        .args(model_args(&server.uri()))
        .output()
        .unwrap();
    // The pending edit is asked again and declined again: needs_approval.
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["tasks"][0]["status"], "in_progress", "{result}");
    assert_eq!(sandbox.read("hello.txt"), "helo world\n", "declined: nothing changed");

    let log = read_jsonl(&log_file(&sandbox));
    let resumed = log.iter().position(|l| l["type"] == "session_resumed").unwrap();
    let approvals: Vec<usize> = log
        .iter()
        .enumerate()
        .filter(|(_, l)| l["type"] == "approval" && l["call_id"] == edit_id.as_str())
        .map(|(i, _)| i)
        .collect();
    assert_eq!(approvals.len(), 1, "asked once, after the resume");
    assert!(approvals[0] > resumed);
    let request = request_bodies(&server).await[0].to_string();
    assert!(request.contains("Phase: implement."), "{request}");
    assert!(request.contains("[>] 1 fix the typo"), "{request}");
    let statuses: Vec<&Value> =
        log.iter().filter(|l| l["type"] == "plan_updated").map(|l| &l["plan"]["status"]).collect();
    assert_eq!(statuses, vec!["submitted", "approved"], "the approved plan came back as it was");
    let phases: Vec<&Value> =
        log[resumed..].iter().filter(|l| l["type"] == "phase_changed").map(|l| &l["to"]).collect();
    assert!(phases.is_empty(), "still in implement, no move needed: {phases:?}");
}
