//! Issue 17 (scale and size): a prompt that cannot fit the model's window
//! is refused before anything is sent, with the window and the prompt's
//! size, in exec and in the TUI (before: a 1 MB prompt for a 128 k model
//! was sent, twice, after a "compaction" that grew it).

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::support::{Model, Sandbox, scripted_model};
use super::tui_tmux::launch;
use super::wire::{Step, Wire};

/// About `tokens` tokens of text (four one-token words per 23 bytes).
fn words(tokens: usize) -> String {
    "alpha beta gamma delta ".repeat(tokens / 4)
}

#[tokio::test]
async fn exec_refuses_a_prompt_larger_than_the_window_and_sends_nothing() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("never".into())]).await;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .arg("exec")
        .args(Model::chat(&server).named("gpt-4o").flags())
        .args(["--json", "-"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let prompt = words(180_000);
    assert!(prompt.len() > 1_000_000);
    child.stdin.take().unwrap().write_all(prompt.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let result: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(result["status"], "failed");
    let error = result["error"].as_str().unwrap();
    assert!(error.contains("cannot fit the 128000-token window of gpt-4o"), "{error}");
    assert!(error.contains("the prompt is about 1"), "its size is named: {error}");
    assert!(error.contains("Nothing was sent"), "{error}");
    let requests = server.received_requests().await.unwrap();
    assert!(requests.is_empty(), "{} requests were sent", requests.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tui_refuses_it_too_and_the_session_goes_on() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Small enough.".into())]).await;
    let prompt = sandbox.home.join("prompt.txt");
    std::fs::write(&prompt, words(20_000)).unwrap();
    let extra = format!("-c context.window=20000 \"$(cat '{}')\"", prompt.display());
    let pane = launch(&sandbox, &server.uri(), &extra);
    let started = Instant::now();
    loop {
        // The message wraps: compare it with the screen's words.
        let screen = pane.screen().split_whitespace().collect::<Vec<_>>().join(" ");
        if screen.contains("cannot fit the 20000-token window of m") {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no refusal shown:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(server.received_requests().await.unwrap().is_empty(), "nothing was sent");
    pane.type_text("say hi");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Small enough."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}
