//! Issue 37: the everyday habits of Claude Code and Codex users, driven in
//! the real binary in a tmux pane (`tui_tmux.rs`'s `launch`/`Pane`): pastes
//! typed as keys keep their line breaks, `\`+Enter is a newline, a long
//! paste is a chip sent whole, history survives a restart and Ctrl+R finds
//! it, approvals take `1`/`2`/`3` and Enter, and notifications reach the
//! terminal. Every wait is on what the pane shows, never a timer.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::support::{Sandbox, request_bodies, scripted_model};
use super::tui_tmux::launch;
use super::wire::{Step, Wire, call};

/// The text of the user messages the model received, in order.
async fn user_texts(server: &wiremock::MockServer) -> Vec<String> {
    let mut texts = Vec::new();
    for body in request_bodies(server).await {
        for message in body["messages"].as_array().into_iter().flatten() {
            if message["role"] == "user" {
                if let Some(text) = message["content"].as_str() {
                    texts.push(text.to_owned());
                }
                for part in message["content"].as_array().into_iter().flatten() {
                    if let Some(text) = part.get("text").and_then(Value::as_str) {
                        texts.push(text.to_owned());
                    }
                }
            }
        }
    }
    texts
}

/// main sent "line one" alone (the first typed Enter) and lost the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paste_typed_as_keys_keeps_its_line_breaks_and_backslash_enter_is_a_newline() {
    let sandbox = Sandbox::new();
    let steps = [Step::Answer("Got three lines.".into()), Step::Answer("Got two.".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    // One send-keys: the keys reach keel in one write, as a paste does.
    pane.keys(&["line one", "Enter", "line two", "Enter", "line three"]);
    pane.wait_for(&["line three"]);
    pane.keys(&["Enter"]);
    pane.wait_for(&["Got three lines."]);
    pane.type_text("first\\");
    pane.keys(&["Enter"]);
    pane.type_text("second");
    pane.wait_for(&["second"]);
    pane.keys(&["Enter"]);
    pane.wait_for(&["Got two."]);
    let texts = user_texts(&server).await;
    assert!(texts.iter().any(|t| t.contains("line one\nline two\nline three")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("first\nsecond")), "{texts:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// A 15-line paste shows as one chip and the model gets every line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_paste_is_a_chip_and_is_sent_whole() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Read it all.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    let lines: Vec<String> = (1..=15).map(|n| format!("pasted-{n}")).collect();
    let mut keys = Vec::new();
    for line in &lines {
        keys.extend([line.as_str(), "Enter"]);
    }
    pane.keys(&keys);
    let screen = pane.wait_for(&["[pasted 15 lines]"]);
    assert!(!screen.contains("pasted-7"), "{screen}");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Read it all."]);
    let texts = user_texts(&server).await;
    let sent = lines.join("\n");
    assert!(texts.iter().any(|t| t.contains(&sent)), "{texts:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// main kept history in memory only: after a restart Up found nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_survives_a_restart_and_ctrl_r_finds_it() {
    let sandbox = Sandbox::new();
    let steps = [Step::Answer("First answer.".into()), Step::Answer("Second answer.".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("remember this prompt");
    pane.keys(&["Enter"]);
    pane.wait_for(&["First answer."]);
    pane.type_text("and a second one");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Second answer."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    drop(pane);
    let file = sandbox.home.join("history.jsonl");
    let mode = std::fs::metadata(&file).expect("history file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.keys(&["Up"]);
    pane.wait_for(&["│and a second one"]);
    pane.keys(&["C-u", "C-r"]);
    pane.type_text("remem");
    pane.wait_for(&["reverse search: remem", "│remember this prompt"]);
    pane.keys(&["Enter"]);
    pane.keys(&["C-u", "C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// main ignored `1` and Enter in the approval overlay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_take_claude_codes_numbers_and_enter() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "touch ONE"}))] },
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "touch TWO"}))] },
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("make two files");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Allow shell?", "$ touch ONE", "[1/y] yes, once"]);
    pane.keys(&["1"]);
    pane.wait_for(&["Allow shell?", "$ touch TWO"]);
    assert!(sandbox.repo.join("ONE").exists(), "`1` did not run it");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Done."]);
    assert!(sandbox.repo.join("TWO").exists(), "Enter on `yes, once` did not run it");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}
