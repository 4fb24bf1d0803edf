//! `keel undo` restores a file changed by `edit_file` and one changed by a
//! shell command, removes a file a command created, and is recorded.

use serde_json::json;

use super::support::{Sandbox, scripted_model, types};
use super::wire::{Step, Wire, call};

#[tokio::test]
async fn undo_restores_edits_and_shell_changes() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\n");
    sandbox.write("s.txt", "old\n");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "a.txt"}))] },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
            )],
        },
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "printf new > s.txt && touch made.txt"}))],
        },
        Step::Answer("changed".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel()
        .args(["exec", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "change things"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("a.txt"), "beta\n");
    assert_eq!(sandbox.read("s.txt"), "new");
    assert!(sandbox.repo.join("made.txt").exists());

    let output = sandbox.keel().arg("undo").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("before turn 1"), "{stderr}");
    assert_eq!(sandbox.read("a.txt"), "alpha\n");
    assert_eq!(sandbox.read("s.txt"), "old\n");
    assert!(!sandbox.repo.join("made.txt").exists());
    assert!(sandbox.repo.join(".git/HEAD").exists(), "the user's .git is untouched");

    let log = sandbox.only_log();
    let log_types = types(&log);
    assert_eq!(log_types.iter().filter(|t| *t == "checkpoint").count(), 1, "{log_types:?}");
    assert_eq!(log.last().unwrap()["type"], "undo");

    let again = sandbox.keel().arg("undo").output().unwrap();
    assert_eq!(again.status.code(), Some(2), "nothing left to undo");
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to undo"));
}
