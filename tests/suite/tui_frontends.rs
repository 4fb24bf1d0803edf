//! Issue 17 in the real TUI (tmux) and the CLI around it: start flags and
//! `default_mode`, key hints, the yolo confirmation, the resume line on
//! quit, failed commands as red crosses without framing, tabs, the real
//! diff in approvals, `/model NAME`, and mistyped subcommands.

use serde_json::json;

use super::support::{Model, Sandbox, request_bodies, scripted_model};
use super::tui_tmux::{Pane, launch};
use super::wire::{Step, Wire, call};

impl Pane {
    /// The screen with its colours (SGR sequences kept).
    fn screen_ansi(&self) -> String {
        let out = self.tmux(&["capture-pane", "-e", "-p", "-t", "keel"], &[]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_mode_hints_yolo_confirmation_and_the_resume_line_on_quit() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.join("config.toml"), "default_mode = \"auto\"\n").unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("unused".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    let screen = pane.wait_for(&["Ask keel", "sandbox", "? shortcuts"]);
    assert!(screen.contains(" m · auto"), "default_mode not applied:\n{screen}");
    pane.keys(&["BTab"]);
    pane.wait_for(&["mode plan: read-only", " m · plan"]);
    pane.keys(&["BTab"]);
    let screen = pane.wait_for(&["y switches to it"]);
    assert!(screen.contains(" m · plan"), "yolo without a confirmation:\n{screen}");
    pane.keys(&["y"]);
    pane.wait_for(&[" m · yolo"]);
    pane.type_text("?");
    let screen = pane.wait_for(&["Shift+Tab cycle mode"]);
    assert!(!screen.contains("mode: "), "mode changes went into the transcript:\n{screen}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let screen = pane.screen();
    let log = sandbox.only_log();
    let id = log[0]["session_id"].as_str().unwrap();
    assert!(screen.contains(&format!("resume with: keel resume {id}")), "{screen}");
    drop(pane);

    let pane = launch(&sandbox, &server.uri(), "--mode explore");
    let screen = pane.wait_for(&["Ask keel", "sandbox"]);
    assert!(screen.contains(" m · explore"), "{screen}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_command_is_a_red_cross_and_reads_keep_their_tabs() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "calc.py"}))] },
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "cat f1.txt"}))] },
        Step::Answer("Read it.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "--full-auto 'look around'");
    let screen = pane.wait_for(&["Read it.", "Ask keel"]);
    assert!(screen.contains("✗ shell cat f1.txt  exit 1"), "{screen}");
    assert!(screen.contains("│ cat: f1.txt: No such file or directory"), "{screen}");
    assert!(screen.contains("│     1  def add(a, b):"), "the tab was dropped:\n{screen}");
    assert!(!screen.contains("exit code:") && !screen.contains("--- stderr"), "{screen}");
    let ansi = pane.screen_ansi();
    let cross = ansi.find("✗").unwrap();
    let colour = ansi[..cross].rsplit('\x1b').next().unwrap_or("");
    assert!(colour.ends_with("38;5;1m") || colour.ends_with("31m"), "not red: {ansi:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_shows_the_real_diff_with_context_and_line_numbers() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "import os\n\ndef add(a, b):\n    return a - b\n\nprint(add(1, 2))\n");
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
            )],
        },
        Step::Answer("Declined, fine.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "'fix it'");
    let screen = pane.wait_for(&["Allow edit_file?", "@@ -1,6 +1,6 @@"]);
    assert!(screen.contains("3 3 │ def add(a, b):"), "no context line:\n{screen}");
    assert!(screen.contains("4   │-    return a - b"), "{screen}");
    assert!(screen.contains("  4 │+    return a + b"), "{screen}");
    pane.keys(&["n", "Enter"]);
    pane.wait_for(&["Declined, fine.", "Ask keel"]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_model_switches_the_model_of_the_next_request() {
    let sandbox = Sandbox::new();
    let steps = [Step::Answer("One.".into()), Step::Answer("Two.".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "'say one'");
    pane.wait_for(&["One.", "Ask keel"]);
    pane.type_text("/model other-model");
    pane.keys(&["Enter"]);
    pane.wait_for(&["model other-model from the next request", " other-model · ask"]);
    pane.type_text("second");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Two."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0);
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies[0]["model"], "m");
    assert_eq!(bodies[1]["model"], "other-model");
    let log = sandbox.only_log();
    assert!(log.iter().any(|l| l["type"] == "model_changed" && l["model"] == "other-model"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lone_word_waits_in_the_input_instead_of_going_to_the_model() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Refactored nothing.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "refactor");
    pane.wait_for(&["`refactor` is not a keel command: Enter sends it", "│refactor"]);
    assert!(request_bodies(&server).await.is_empty(), "sent before the user said so");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Refactored nothing."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0);
}

#[test]
fn a_mistyped_subcommand_is_an_error_with_did_you_mean() {
    let sandbox = Sandbox::new();
    let output = sandbox
        .keel()
        .args(["--provider", "openai-chat", "--base-url", "http://127.0.0.1:9/v1", "-m", "m"])
        .arg("sesions")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did you mean `keel sessions`?"), "{stderr}");
}

#[test]
fn completion_scripts_for_the_usual_shells() {
    let sandbox = Sandbox::new();
    for (shell, marker) in
        [("bash", "complete -F"), ("zsh", "#compdef keel"), ("fish", "complete -c keel")]
    {
        let output = sandbox.keel().args(["completion", shell]).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.contains(marker) && script.contains("sessions"), "{shell}: {script}");
    }
}

#[tokio::test]
async fn dash_c_works_in_another_folder() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("here".into())]).await;
    let output = sandbox
        .keel()
        .current_dir(&sandbox.home)
        .arg("-C")
        .arg(&sandbox.repo)
        .arg("exec")
        .args(Model::chat(&server).flags())
        .args(["--json", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = super::support::json_lines(&output.stdout);
    assert_eq!(lines[0]["workspace_root"], sandbox.repo.display().to_string());
    let missing = sandbox.keel().args(["-C", "/no/such/dir", "sessions"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot work in /no/such/dir"));
}
