//! Issue 35, item 8, through the real `keel` binary: a log line repeated
//! (its seq not greater than the last applied one's) is skipped with a
//! warning, so a call that had started is not run again; and a child's log
//! is named by its parent's `subagent_started` line before the child
//! writes its first line, so a crash right then still resumes the child.

use std::os::unix::process::ExitStatusExt;

use serde_json::json;

use super::routed_model::{Route, RoutedModel, tool_results};
use super::subagents_e2e::{PARENT, agent_call, answer, calls, logs, of_type, result_of};
use super::support::{Sandbox, read_jsonl};
use super::wire::call;

/// `keel exec --json --full-auto` against `model`, with `env` set.
fn exec(
    sandbox: &Sandbox,
    model: &RoutedModel,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    let mut keel = sandbox.keel();
    for (name, value) in env {
        keel.env(name, value);
    }
    keel.args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", model.uri)])
        .args(args)
        .output()
        .unwrap()
}

/// The seq of the first line of `log` of type `kind`.
fn seq_of(log: &[serde_json::Value], kind: &str) -> u64 {
    of_type(log, kind)[0]["seq"].as_u64().unwrap()
}

/// keel is killed right after a command's `tool_call_started` line (before
/// it runs), and the response line that asked for it is then repeated at
/// the log's end, as a copied line would be. The resume skips the repeat
/// with a warning and answers the call "interrupted"; the command never
/// runs. Before, the repeated response made the call look new: the resume
/// ran it.
#[test]
fn a_repeated_response_line_does_not_run_a_started_call_again() {
    let sandbox = Sandbox::new();
    let command = call("shell", json!({ "command": "echo ran >> runs.log" }));
    let model = RoutedModel::start(vec![Route::system(
        "parent",
        PARENT,
        vec![calls(vec![command.clone()]), answer("stopped")],
    )]);
    // A first run finds the seq of the call's start; the second is killed there.
    let probe = Sandbox::new();
    let probe_model = RoutedModel::start(vec![Route::system(
        "parent",
        PARENT,
        vec![calls(vec![command.clone()]), answer("done")],
    )]);
    assert_eq!(exec(&probe, &probe_model, &[], &["go"]).status.code(), Some(0));
    let (probe_logs, _) = logs(&probe);
    let started = seq_of(&read_jsonl(&probe_logs[0]), "tool_call_started").to_string();

    let killed = exec(&sandbox, &model, &[("KEEL_TEST_CRASH_AFTER_SEQ", &started)], &["go"]);
    assert_eq!(killed.status.signal(), Some(9), "killed after the call's start");
    assert!(!sandbox.repo.join("runs.log").exists(), "the command had not run");
    let (parents, _) = logs(&sandbox);
    let text = std::fs::read_to_string(&parents[0]).unwrap();
    let response = text.lines().find(|l| l.contains("\"type\":\"model_response\"")).unwrap();
    std::fs::write(&parents[0], format!("{text}{response}\n")).unwrap();

    let id = read_jsonl(&parents[0])[0]["session_id"].as_str().unwrap().to_owned();
    let output = exec(&sandbox, &model, &[], &["resume", &id]);
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    assert!(!sandbox.repo.join("runs.log").exists(), "the started command ran again");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        said.contains("(a repeated or misplaced line) was skipped"),
        "the repeated line is said: {said}"
    );
    let last = model.of("parent").pop().unwrap();
    let results = tool_results(&last.body);
    assert!(results.iter().any(|r| r.starts_with("interrupted:")), "{results:?}");
}

/// keel is killed right after the first line of the child's log (the
/// second log the process creates). The parent's log already names the
/// child, so the resume finds it and gives it its task. Before, the
/// child's log was written first and the crash left it unnamed: the
/// resume answered the call "interrupted" and the child's log stayed open.
#[test]
fn a_child_log_is_named_by_its_parent_before_its_first_line() {
    let sandbox = Sandbox::new();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("explore", "look", "look around")]), answer("looked")],
        ),
        Route::first_user("child", "look around", vec![answer("nothing to see")]),
    ]);
    let crash = [("KEEL_TEST_CRASH_AFTER_FIRST_LINE_OF_LOG", "2")];
    let killed = exec(&sandbox, &model, &crash, &["Delegate"]);
    assert_eq!(killed.status.signal(), Some(9), "killed as the child started");
    let (parents, children) = logs(&sandbox);
    assert_eq!(children.len(), 1);
    let child = read_jsonl(&children[0]);
    assert_eq!(child.len(), 1, "only the child's first line");
    let parent = read_jsonl(&parents[0]);
    let named = of_type(&parent, "subagent_started");
    assert_eq!(named.len(), 1, "the parent names the child before the child writes");
    assert_eq!(named[0]["session_id"], child[0]["session_id"]);

    let id = parent[0]["session_id"].as_str().unwrap().to_owned();
    let output = exec(&sandbox, &model, &[], &["resume", &id]);
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    assert_eq!(result["final_text"], "looked", "{result}");
    let delegated = tool_results(&model.of("parent").pop().unwrap().body).pop().unwrap();
    assert!(delegated.starts_with("nothing to see"), "{delegated}");
}
