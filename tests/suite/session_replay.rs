//! `keel replay` re-runs a recorded session offline and reports results
//! that differ; `keel demo` runs with no key and no network.

use serde_json::json;

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

#[tokio::test]
async fn replay_reruns_from_the_first_checkpoint_and_reports_differences() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "hello world\n");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "hello.txt"}))] },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "hello.txt", "old_string": "hello", "new_string": "goodbye"}),
            )],
        },
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "cat hello.txt"}))] },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--full-auto", "edit it"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let sessions = sandbox.home.join("sessions");
    let log = std::fs::read_dir(&sessions).unwrap().next().unwrap().unwrap().path();

    // The workspace already holds the edit; the replay starts from the
    // checkpoint taken before it, so every result matches.
    let output = sandbox.keel().args(["replay", log.to_str().unwrap()]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("3 tool call(s): 0 result(s) differ"), "{stdout}");
    assert_eq!(sandbox.read("hello.txt"), "goodbye world\n", "the workspace is untouched");

    // Tamper with a recorded result: the replay reports it.
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replace("\"output\":\"goodbye", "\"output\":\"adieu")).unwrap();
    let id = log.file_stem().unwrap().to_string_lossy().into_owned();
    let output = sandbox.keel().args(["replay", &id]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("1 result(s) differ"), "{stdout}");
    assert!(stdout.contains("shell"), "{stdout}");
}

#[test]
fn demo_runs_with_no_key_and_no_network() {
    let sandbox = Sandbox::new();
    let output = sandbox.keel().arg("demo").output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("0 result(s) differ"), "{stdout}");
    assert!(stdout.contains("Hello, world!"), "{stdout}");
    assert!(stderr.contains("→ edit_file greet.sh"), "{stderr}");
    assert!(!sandbox.home.join("sessions").exists(), "the demo writes no session");
}
