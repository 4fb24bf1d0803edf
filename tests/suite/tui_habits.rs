//! Issue 37: the everyday habits of Claude Code and Codex users, driven in
//! the real binary in a tmux pane (`tmux_support.rs`): pastes
//! typed as keys keep their line breaks, `\`+Enter is a newline, a long
//! paste is a chip sent whole, history survives a restart and Ctrl+R finds
//! it, approvals take `1`/`2`/`3` and Enter, and notifications reach the
//! terminal. Every wait is on what the pane shows, never a timer.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::support::{Sandbox, request_bodies, scripted_model};
use super::tmux_support::{Launch, launch, launch_with, record_output, wait_for_output};
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
    // Typed, not pasted: each key is read before the next is sent (under
    // load, keys sent back to back arrive as one burst, which is a paste
    // and keeps its backslash).
    pane.type_text("first\\");
    pane.wait_for(&["first\\"]);
    pane.keys(&["Enter"]);
    pane.wait_gone("first\\");
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

/// main wrote nothing when an approval waited or a turn ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_approval_rings_the_bell() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "touch BELL"}))] },
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    let output = record_output(&pane, &sandbox);
    pane.type_text("make a file");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Allow shell?"]);
    wait_for_output(&output, b"\x07");
    pane.keys(&["y"]);
    pane.wait_for(&["Done."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_ending_sends_osc_9_when_configured() {
    let sandbox = Sandbox::new();
    let config = "[tui]\nnotify = \"osc9\"\nnotify_after_secs = 0\n";
    std::fs::write(sandbox.home.join("config.toml"), config).unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Finished.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    let output = record_output(&pane, &sandbox);
    pane.type_text("go");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Finished."]);
    wait_for_output(&output, b"\x1b]9;keel: the turn ended after");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// The SGR parameters of `bytes` that set or reset a colour.
fn colour_escapes(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut found = Vec::new();
    for piece in text.split("\x1b[").skip(1) {
        let Some(end) = piece.find(|c: char| ('\x40'..='\x7e').contains(&c)) else { continue };
        if !piece[end..].starts_with('m') {
            continue;
        }
        let params = &piece[..end];
        let colour = params
            .split([';', ':'])
            .any(|p| matches!(p.parse::<u16>(), Ok(30..=49 | 58 | 59 | 90..=97 | 100..=107)));
        if colour {
            found.push(params.to_owned());
        }
    }
    found
}

/// main drew colours (and reset them every frame) under `TERM=dumb`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn term_dumb_writes_no_colour_escapes() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "touch DUMB"}))] },
        Step::Answer("A **bold** answer with `code`.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch_with(&sandbox, &server.uri(), &Launch { term: "dumb", ..Launch::default() });
    pane.wait_for(&["Ask keel"]);
    let output = record_output(&pane, &sandbox);
    pane.type_text("go");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Allow shell?"]);
    pane.keys(&["y"]);
    pane.wait_for(&["A bold answer with code."]);
    let bytes = wait_for_output(&output, b"code");
    assert!(bytes.len() > 100, "nothing recorded: {bytes:?}");
    let escapes = colour_escapes(&bytes);
    assert!(escapes.is_empty(), "colour escapes written: {escapes:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// main sent `#…` to the model as a prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hash_line_saves_a_memory_note_where_the_user_picks() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("#always run the linter first");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Save to memory?", "[p] project"]);
    pane.keys(&["p"]);
    pane.wait_for(&["saved the memory note"]);
    let note = sandbox.repo.join(".keel/memory/always-run-the-linter-first.md");
    let text = std::fs::read_to_string(&note).expect("the note");
    assert!(text.contains("description: \"always run the linter first\""), "{text}");
    assert!(request_bodies(&server).await.is_empty(), "the note reached the model");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// main sent only the text `@calc.py`, not the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mention_attaches_the_file_but_never_a_secret() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a + b  # MARK-42\n");
    sandbox.write(".env", "API_KEY=sk-live-secret-77\n");
    let server = scripted_model(Wire::Chat, &[Step::Answer("Seen.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("explain @calc.py and @.env ");
    pane.wait_for(&["explain @calc.py and @.env"]);
    pane.keys(&["Enter"]);
    pane.wait_for(&["Seen.", "attached calc.py", "@.env not attached"]);
    let texts = user_texts(&server).await;
    assert!(texts.iter().any(|t| t.contains("MARK-42")), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("sk-live-secret-77")), "{texts:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// main answered "unknown command" to both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_status_says_the_session_and_clear_starts_a_fresh_one() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    let screen = pane.wait_for(&["Ask keel", "session "]);
    let id = screen
        .split("session ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the session id")
        .to_owned();
    pane.type_text("/status");
    pane.keys(&["Enter"]);
    pane.wait_for(&["mode ask:", "network off", &format!("session {id} · log")]);
    pane.type_text("/clear");
    pane.keys(&["Enter"]);
    pane.wait_for(&[&format!("the previous session is kept: keel resume {id}")]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// main sent `!…` to the model as a prompt: the user's own command never ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bang_line_runs_the_command_as_the_user_and_the_next_turn_sees_its_output() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("I see MARK-42.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    // Ask mode: a command that writes would ask the model; the user typing it approves it.
    pane.type_text("!echo MARK-$((6*7)) > made.txt && cat made.txt");
    pane.keys(&["Enter"]);
    pane.wait_for(&["MARK-42", "the output goes to the model with your next message"]);
    assert_eq!(std::fs::read_to_string(sandbox.repo.join("made.txt")).unwrap(), "MARK-42\n");
    assert!(request_bodies(&server).await.is_empty(), "the command reached the model as a prompt");
    // What policy forbids runs nowhere, the user's command or not.
    pane.type_text("!rm -rf /");
    pane.keys(&["Enter"]);
    pane.wait_for(&["not run:"]);
    pane.type_text("what did it print?");
    pane.keys(&["Enter"]);
    pane.wait_for(&["I see MARK-42."]);
    let texts = user_texts(&server).await;
    let ran =
        texts.iter().position(|t| t.contains("I ran this command myself") && t.contains("MARK-42"));
    let asked = texts.iter().position(|t| t == "what did it print?");
    assert!(matches!((ran, asked), (Some(r), Some(a)) if r < a), "{texts:?}");
    assert!(!texts.iter().any(|t| t.contains("rm -rf /")), "{texts:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    // Logged as the user's message, before the turn that carried it.
    let log = sandbox.only_log();
    let message = log.iter().position(|l| {
        l["type"] == "user_message" && l["text"].as_str().is_some_and(|t| t.contains("MARK-42"))
    });
    let turn = log.iter().position(|l| l["type"] == "turn_started");
    assert!(matches!((message, turn), (Some(m), Some(t)) if m < t), "{log:#?}");
}

/// Ctrl+J and Alt+Enter insert a newline, as Shift+Enter does in CSI-u
/// terminals (checked for issue 37; xterm's `ESC[27;2;13~`: the next test).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_j_and_alt_enter_insert_a_newline() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Three lines.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("alpha");
    pane.wait_for(&["│alpha"]);
    pane.keys(&["C-j"]);
    pane.type_text("beta");
    pane.wait_for(&["│beta"]);
    pane.keys(&["M-Enter"]);
    pane.type_text("gamma");
    pane.wait_for(&["│gamma"]);
    pane.keys(&["Enter"]);
    pane.wait_for(&["Three lines."]);
    let texts = user_texts(&server).await;
    assert!(texts.iter().any(|t| t.contains("alpha\nbeta\ngamma")), "{texts:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// Shift+Enter and Ctrl+Enter in xterm's modifyOtherKeys form (`CSI 27 ; mod ; 13 ~`, sent by
/// foot, Ghostty, xterm and tmux with `extended-keys`) insert a newline (issue 37). Before the
/// vendored crossterm's patch (`vendor/crossterm/KEEL-PATCH.md`) the parser dropped both
/// sequences and the words ran together on one line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shift_and_ctrl_enter_in_the_modify_other_keys_form_insert_a_newline() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Three lines.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("alpha");
    pane.wait_for(&["│alpha"]);
    pane.send_bytes(b"\x1b[27;2;13~"); // Shift+Enter
    pane.type_text("beta");
    pane.wait_for(&["│beta"]);
    pane.send_bytes(b"\x1b[27;5;13~"); // Ctrl+Enter
    pane.type_text("gamma");
    pane.wait_for(&["│gamma"]);
    pane.keys(&["Enter"]);
    pane.wait_for(&["Three lines."]);
    let texts = user_texts(&server).await;
    assert!(texts.iter().any(|t| t.contains("alpha\nbeta\ngamma")), "{texts:?}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}
