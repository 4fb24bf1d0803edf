//! A server that repeats call ids (`call_0_0` in every response) and
//! subagents resumed after a kill: a child belongs to the call started
//! last before it (review S6, `docs/review-2026-12-01.md`).

use std::time::{Duration, Instant};

use serde_json::json;

use super::routed_model::{Reply, Route, RoutedModel, tool_results};
use super::support::{Sandbox, read_jsonl};
use super::wire::{Step, call};

const PARENT: &str = "You are keel, a coding agent";

fn agent_call(description: &str, prompt: &str) -> (String, String) {
    call("agent", json!({"agent": "explore", "description": description, "prompt": prompt}))
}

/// Review S6 (`runtime/subagent/resume.rs`): a parent whose server
/// reuses call ids (`call_0_0` in every response) is killed while the
/// second `agent` call's PreToolUse hook runs (after its
/// `tool_call_started`, before its child opened). The resume must not
/// answer the second call from the first call's child: that child's task
/// was another one. Its own child never opened, so it is answered as any
/// call interrupted before its result. On 09822b9 the second call got
/// "ANSWER-ONE".
#[test]
fn a_resumed_agent_call_is_not_answered_by_an_earlier_call_s_child_with_its_id() {
    let sandbox = Sandbox::new();
    let marker = sandbox.home.join("hook-holding");
    let pid = sandbox.home.join("hook.pid");
    let hook = format!(
        "grep -q TASK-TWO || exit 0; echo $$ > {}; touch {}; exec sleep 60",
        pid.display(),
        marker.display()
    );
    let toml = format!(
        "[[hooks.PreToolUse]]\nmatcher = \"Task\"\n[[hooks.PreToolUse.hooks]]\ntype = \
         \"command\"\ncommand = {hook:?}\n"
    );
    std::fs::write(sandbox.home.join("config.toml"), toml).unwrap();
    let model = RoutedModel::start(vec![
        Route::first_user("one", "TASK-ONE", vec![Reply::Step(Step::Answer("ANSWER-ONE".into()))]),
        Route::first_user("two", "TASK-TWO", vec![Reply::Step(Step::Answer("ANSWER-TWO".into()))]),
        Route::system(
            "parent",
            PARENT,
            vec![
                Reply::Step(Step::Calls { text: None, calls: vec![agent_call("one", "TASK-ONE")] }),
                Reply::Step(Step::Calls { text: None, calls: vec![agent_call("two", "TASK-TWO")] }),
                Reply::Step(Step::Answer("done".into())),
            ],
        )
        .with_repeated_ids(),
    ]);
    let keel = |args: &[&str]| {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_keel"));
        command
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &sandbox.home)
            .env("KEEL_HOME", &sandbox.home)
            .current_dir(&sandbox.repo)
            .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
            .args(["--base-url", &format!("{}/v1", model.uri)])
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        command
    };
    let mut running = keel(&["delegate twice"]).spawn().unwrap();
    let started = Instant::now();
    while !marker.exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "the hook never held the call");
        std::thread::sleep(Duration::from_millis(20));
    }
    running.kill().unwrap(); // SIGKILL, mid-hook
    running.wait().unwrap();
    let hook_pid = std::fs::read_to_string(&pid).unwrap();
    let _ = std::process::Command::new("kill").arg(hook_pid.trim()).status();

    let sessions = sandbox.home.join("sessions");
    let parent = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .find(|path| read_jsonl(path)[0]["parent"].is_null())
        .unwrap();
    let id = read_jsonl(&parent)[0]["session_id"].as_str().unwrap().to_owned();
    std::fs::write(sandbox.home.join("config.toml"), "").unwrap();
    let status = keel(&["resume", &id]).status().unwrap();
    assert_eq!(status.code(), Some(0));
    let last = model.of("parent").pop().unwrap();
    let results = tool_results(&last.body);
    let second = results.last().unwrap();
    assert!(!second.starts_with("ANSWER-ONE"), "answered by the first call's child: {results:?}");
    assert!(second.starts_with("interrupted: keel stopped before"), "{results:?}");
    assert!(results[0].starts_with("ANSWER-ONE"), "the first call keeps its answer: {results:?}");
}
