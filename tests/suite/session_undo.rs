//! `keel undo` restores a file changed by `edit_file` and one changed by a
//! shell command, removes a file a command created, and is recorded.

use serde_json::json;

use super::support::{Model, Sandbox, scripted_model, types};
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
    let output = sandbox.run(&Model::chat(&server), &["exec", "--full-auto", "change things"]);
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

/// A session that only answered a question after the one that changed
/// files: `keel undo` undoes the change, naming the session it undid
/// (main looked at the newest session only: "nothing to undo").
#[tokio::test]
async fn undo_reaches_past_a_newer_session_that_changed_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\n");
    let exec = |uri: String, prompt: &str| {
        sandbox.run(&Model::at("openai-chat", &uri), &["exec", "--full-auto", prompt])
    };
    let change = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "a.txt"}))] },
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "a.txt", "content": "beta\n"}))],
        },
        Step::Answer("changed".into()),
    ];
    let server = scripted_model(Wire::Chat, &change).await;
    assert_eq!(exec(server.uri(), "change it").status.code(), Some(0));
    let question = scripted_model(Wire::Chat, &[Step::Answer("it says beta".into())]).await;
    assert_eq!(exec(question.uri(), "what does a.txt say?").status.code(), Some(0));
    assert_eq!(sandbox.read("a.txt"), "beta\n");

    let output = sandbox.keel().arg("undo").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(sandbox.read("a.txt"), "alpha\n");
    assert!(stderr.contains("the newer sessions of this folder have no turn left"), "{stderr}");
    // Nothing older is left: the newest session's reason is given.
    let again = sandbox.keel().arg("undo").output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing to undo"));
}
