//! Typing while a turn runs, in the real TUI (tmux, issue 37): Enter
//! queues the text for after the turn, Tab steers the running turn (the
//! next request of the same turn carries it, after the batch's results);
//! then the model's `ask_user` question is answered in its dialog with a
//! number key. Every wait is on the screen or the log, never a timer.

use serde_json::{Value, json};

use super::support::{Sandbox, read_jsonl, request_bodies, scripted_model};
use super::tmux_support::launch;
use super::wire::{Step, Wire, call};

fn last_message(request: &Value) -> Value {
    request["messages"].as_array().unwrap().last().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_queues_tab_steers_and_ask_user_takes_a_number() {
    let sandbox = Sandbox::new();
    let command = "while [ ! -f go ]; do sleep 0.05; done; echo released";
    let question = json!({ "question": "Which database?", "choices": ["SQLite", "Postgres"] });
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] },
        Step::Answer("Steered answer.".into()),
        Step::Answer("Queued answer.".into()),
        Step::Calls { text: None, calls: vec![call("ask_user", question)] },
        Step::Answer("Postgres it is.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "--full-auto 'begin the work'");
    pane.wait_for(&["shell while", "Esc to stop"]);

    pane.type_text("use tabs");
    pane.keys(&["Tab"]);
    pane.wait_for(&["steer  use tabs"]);
    pane.type_text("then the docs");
    pane.keys(&["Enter"]);
    pane.wait_for(&["queued then the docs"]);
    // Both are in the log while the command still runs.
    let log_path = sandbox.only_log_path();
    let started = std::time::Instant::now();
    loop {
        let log = read_jsonl(&log_path);
        let queued = log.iter().filter(|l| l["type"] == "input_queued").count();
        if queued == 2 {
            assert!(!log.iter().any(|l| l["type"] == "tool_call_finished"), "the call still runs");
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "not logged: {log:#?}");
        std::thread::yield_now();
    }
    sandbox.write("go", "");
    let screen = pane.wait_for(&["Steered answer.", "Queued answer.", "Ask keel"]);
    assert!(screen.contains("› use tabs") && screen.contains("› then the docs"), "{screen}");
    assert!(!screen.contains("steer  use tabs"), "the pending list emptied:\n{screen}");
    let requests = request_bodies(&server).await;
    assert_eq!(requests.len(), 3);
    let steer = last_message(&requests[1]);
    assert_eq!(
        (steer["role"].as_str(), steer["content"].as_str()),
        (Some("user"), Some("use tabs"))
    );
    let queued = last_message(&requests[2]);
    assert_eq!(queued["content"], "then the docs");

    pane.type_text("pick a database");
    pane.keys(&["Enter"]);
    pane.wait_for(&["The model asks", "Which database?", "2. Postgres"]);
    pane.keys(&["2"]);
    pane.wait_for(&["Postgres it is."]);
    let requests = request_bodies(&server).await;
    let answer = last_message(&requests[4]);
    assert_eq!(answer["role"], "tool");
    assert_eq!(answer["content"], "The user answered: Postgres");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}
