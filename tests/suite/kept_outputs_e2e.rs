//! A command output cut for the model is kept whole (issue 32, "Results"):
//! through the real `keel exec`, a ~1.2 MB build log with a marker in the
//! middle is cut to the model's share, the result names the kept file, and
//! the model's next call, `read_file` of that path, finds the marker; the
//! session resumed, and a fork of it, still read it; the file is owner-only.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, reacting_model, request_bodies};
use super::wire::{Step, Wire, call};

/// About 1.2 MB: 40 000 numbered lines with a marker line in the middle.
const BUILD_LOG: &str = "for i in $(seq 1 40000); do [ $i = 20000 ] && echo MIDDLE-MARKER; \
                         printf 'line %05d of the build log ..........\\n' $i; done";

/// The text of the last tool result in a Chat Completions request body.
fn last_tool_result(body: &Value) -> String {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.iter().rev().find(|m| m["role"] == "tool");
    last.map(|m| m["content"].as_str().unwrap_or_default().to_owned()).unwrap_or_default()
}

/// The kept path a cut result names (empty when it names none).
fn kept_path(result: &str) -> String {
    let Some((_, rest)) = result.split_once("is kept in ") else { return String::new() };
    rest.split(": read_file").next().unwrap_or_default().to_owned()
}

/// A model that runs the build, then reads the kept output around its
/// middle, then answers.
async fn build_then_read() -> wiremock::MockServer {
    reacting_model(Wire::Chat, |index, body| match index {
        0 => Step::Calls { text: None, calls: vec![call("shell", json!({"command": BUILD_LOG}))] },
        1 => {
            let path = kept_path(&last_tool_result(body));
            let args = json!({"path": path, "offset": 19995, "limit": 10});
            Step::Calls { text: None, calls: vec![call("read_file", args)] }
        }
        _ => Step::Answer("done".into()),
    })
    .await
}

fn session_id(lines: &[Value]) -> String {
    let started = lines.iter().find(|l| l["type"] == "session_started");
    started.and_then(|l| l["session_id"].as_str()).unwrap_or_default().to_owned()
}

#[tokio::test]
async fn a_cut_build_log_is_kept_and_the_next_read_file_finds_its_middle() {
    let sandbox = Sandbox::new();
    // Not HOME itself, as keel's home usually is not: then it is a secret
    // place, which read_file still reads the kept outputs of.
    let keel_home = sandbox.home.join(".keel");
    let run = |model: &Model, args: &[&str]| {
        sandbox.keel_on(model, args).env("KEEL_HOME", &keel_home).output().unwrap()
    };
    let server = build_then_read().await;
    let output = run(&Model::chat(&server), &["exec", "--json", "--full-auto", "build"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 3, "build, read, answer");
    let cut = last_tool_result(&bodies[1]);
    assert!(cut.len() < 40 * 1024, "the model's share only: {} bytes", cut.len());
    assert!(!cut.contains("MIDDLE-MARKER"), "the middle is cut");
    assert!(cut.contains("bytes, 40001 lines) is kept in "), "{}", &cut[..400.min(cut.len())]);
    let id = session_id(&json_lines(&output.stdout));
    let path = kept_path(&cut);
    assert!(path.starts_with(&keel_home.join("outputs").join(&id).display().to_string()), "{path}");
    let read = last_tool_result(&bodies[2]);
    assert!(read.contains("MIDDLE-MARKER"), "read_file found the middle: {read}");
    let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode();
    assert_eq!(mode(std::path::Path::new(&path)) & 0o777, 0o600);
    assert_eq!(mode(&keel_home.join("outputs").join(&id)) & 0o777, 0o700);

    // The session resumed still reads what it kept.
    let resumed = reacting_model(Wire::Chat, move |index, _| match index {
        0 => Step::Calls {
            text: None,
            calls: vec![call("read_file", json!({"path": path, "offset": 20000, "limit": 1}))],
        },
        _ => Step::Answer("still there".into()),
    })
    .await;
    let again = run(
        &Model::chat(&resumed),
        &["exec", "resume", &id, "--json", "--full-auto", "look again"],
    );
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let bodies = request_bodies(&resumed).await;
    let read = last_tool_result(&bodies[1]);
    assert!(read.contains("MIDDLE-MARKER"), "after the resume: {read}");
}
