//! The documented exit codes (README "Exit codes"), one per kind of
//! failure, through the real binary: a usage mistake and a broken
//! configuration exit 2 whatever the command; a run that failed exits 1
//! (`keel exec`, `keel undo`, and the TUI when its session cannot start).
//! Signals (128 + their number) are `e2e_signals.rs`'s.

use std::process::Output;

use serde_json::json;

use super::support::{Model, Sandbox, json_lines, scripted_model};
use super::tui_tmux::launch;
use super::wire::{Step, Wire, call};

/// Writes `rel` under the sandbox's `KEEL_HOME`.
fn write_home(sandbox: &Sandbox, rel: &str, text: &str) {
    std::fs::write(sandbox.home.join(rel), text).unwrap();
}

fn code_and_stderr(output: &Output) -> (Option<i32>, String) {
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

fn exec(sandbox: &Sandbox, args: &[&str]) -> Output {
    sandbox
        .keel_on(&Model::at("openai-chat", "http://127.0.0.1:9"), &["exec", "--json"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn exec_usage_and_config_errors_exit_2_with_a_result_line() {
    let sandbox = Sandbox::new();
    let usage = exec(&sandbox, &["--reject-plan", "more tests", "fix it"]);
    let (code, stderr) = code_and_stderr(&usage);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: --reject-plan needs a session to resume"), "{stderr}");
    let result = json_lines(&usage.stdout).pop().unwrap();
    assert_eq!(
        (result["type"].as_str(), result["status"].as_str()),
        (Some("result"), Some("usage_error"))
    );

    write_home(&sandbox, "config.toml", "max_steps = \"many\"\n");
    let config = exec(&sandbox, &["fix it"]);
    let (code, stderr) = code_and_stderr(&config);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("config.toml"), "{stderr}");
    assert_eq!(json_lines(&config.stdout).pop().unwrap()["status"], "usage_error");
}

/// `keel exec -` with nothing on stdin says stdin was empty (before: "pass
/// a task, or `-` to read it from stdin", to someone who had passed `-`).
#[test]
fn an_empty_stdin_prompt_is_named_as_such() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .keel_on(&Model::at("openai-chat", "http://127.0.0.1:9"), &["exec", "-"])
        .write_stdin("  \n")
        .output()
        .unwrap();
    let (code, stderr) = code_and_stderr(&output);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: the prompt is empty: nothing but blanks came on stdin (`-`)"),
        "{stderr}"
    );
}

#[test]
fn exec_whose_session_cannot_open_exits_1() {
    let sandbox = Sandbox::new();
    // The log cannot be created: `sessions` is a file, not a folder.
    write_home(&sandbox, "sessions", "not a folder");
    let output = exec(&sandbox, &["fix it"]);
    let (code, stderr) = code_and_stderr(&output);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(json_lines(&output.stdout).pop().unwrap()["status"], "failed");
}

/// A session whose one turn changed `a.txt` (so it has a checkpoint).
async fn session_with_a_checkpoint(sandbox: &Sandbox) {
    sandbox.write("a.txt", "alpha\n");
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "echo beta > a.txt"}))],
        },
        Step::Answer("changed".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--full-auto", "change a.txt"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
}

#[tokio::test]
async fn an_undo_that_fails_exits_1_and_asking_too_much_exits_2() {
    let sandbox = Sandbox::new();
    session_with_a_checkpoint(&sandbox).await;
    let too_many = sandbox.keel().args(["undo", "--turns", "5"]).output().unwrap();
    let (code, stderr) = code_and_stderr(&too_many);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("nothing to undo"), "{stderr}");

    // The checkpoints are gone: the restore itself fails (before this
    // change every CLI error exited 2, as if the user had mistyped).
    std::fs::remove_dir_all(sandbox.home.join("shadow")).unwrap();
    let failed = sandbox.keel().arg("undo").output().unwrap();
    let (code, stderr) = code_and_stderr(&failed);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert_eq!(sandbox.read("a.txt"), "beta\n", "nothing was restored");
}

#[test]
fn the_interactive_session_needs_a_terminal_and_a_valid_config() {
    let sandbox = Sandbox::new();
    // Not a terminal (the test's pipes): a usage error before anything opens.
    let (code, stderr) = code_and_stderr(&sandbox.keel().arg("fix the tests").output().unwrap());
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("needs a terminal"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_exits_2_on_a_broken_config_and_1_when_its_session_cannot_start() {
    let server = scripted_model(Wire::Chat, &[Step::Answer("unused".into())]).await;

    let broken = Sandbox::new();
    write_home(&broken, "config.toml", "max_steps = \"many\"\n");
    let pane = launch(&broken, &server.uri(), "'fix the tests'");
    assert_eq!(pane.wait_exit(), 2, "{}", pane.screen());

    let unopenable = Sandbox::new();
    write_home(&unopenable, "sessions", "not a folder");
    let pane = launch(&unopenable, &server.uri(), "'fix the tests'");
    assert_eq!(pane.wait_exit(), 1, "{}", pane.screen());
}
