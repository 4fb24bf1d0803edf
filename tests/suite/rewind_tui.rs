//! Esc Esc in the real TUI (tmux): the list of prompts opens, Enter takes
//! the session back to before the last one: the file its shell command
//! made is gone, the prompt is back in the input, the log has `rewound`.

use serde_json::json;

use super::support::{Sandbox, scripted_model};
use super::tmux_support::launch;
use super::wire::{Step, Wire, call};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_esc_rewinds_to_the_prompt_chosen() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Answer("first answer".into()),
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "touch made.txt"}))],
        },
        Step::Answer("second answer".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "--full-auto");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("prompt one");
    pane.keys(&["Enter"]);
    pane.wait_for(&["first answer"]);
    pane.type_text("prompt two");
    pane.keys(&["Enter"]);
    pane.wait_for(&["second answer"]);
    assert!(sandbox.repo.join("made.txt").exists());

    pane.keys(&["Escape"]);
    pane.wait_for(&["Esc again to rewind"]);
    pane.keys(&["Escape"]);
    pane.wait_for(&["Rewind to before a prompt (2)", "prompt one", "prompt two"]);
    pane.keys(&["Enter"]);
    let screen = pane.wait_for(&["restored 1 file(s): made.txt", "edit it and send it again"]);
    assert!(!screen.contains("second answer"), "the transcript is redrawn:\n{screen}");
    assert!(!sandbox.repo.join("made.txt").exists());
    pane.keys(&["C-c"]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let log = sandbox.only_log();
    let rewound = log.iter().find(|line| line["type"] == "rewound").unwrap();
    assert_eq!(rewound["to_prompt"], 2);
}
