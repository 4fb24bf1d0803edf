//! Rewind and fork through the real binary (issue 38): `keel exec resume
//! ID --rewind-to N` takes the files (shell commands' changes included)
//! and the conversation back to before prompt N, keeps the user's own later
//! edits, and `--undo-rewind` gives back the state before it; `keel fork`
//! and `keel exec --fork` start sessions of their own that go on apart
//! from their parent.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, read_jsonl, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// The workspace's files and their contents (`.git` left out): equal
/// trees have equal fingerprints.
fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut folders = vec![root.to_owned()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|name| name == ".git") {
                continue;
            }
            if path.is_dir() {
                folders.push(path);
            } else {
                let rel = path.strip_prefix(root).unwrap().display().to_string();
                files.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

fn result_of(stdout: &[u8]) -> Value {
    json_lines(stdout).into_iter().find(|line| line["type"] == "result").unwrap()
}

/// One `exec --json` run against a model scripted with `steps`; the
/// session id and the requests the model got.
async fn turn(sandbox: &Sandbox, args: &[&str], steps: &[Step]) -> (String, Vec<Value>) {
    let server = scripted_model(Wire::Chat, steps).await;
    let mut argv = vec!["exec", "--json", "--full-auto"];
    argv.extend(args);
    let output = sandbox.run(&Model::chat(&server), &argv);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{argv:?}: {stderr}");
    let id = result_of(&output.stdout)["session_id"].as_str().unwrap().to_owned();
    (id, request_bodies(&server).await)
}

fn shell(command: &str) -> Vec<Step> {
    vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] },
        Step::Answer("done".into()),
    ]
}

fn answer() -> Vec<Step> {
    vec![Step::Answer("ok".into())]
}

/// The text of the last request's messages.
fn last_request(bodies: &[Value]) -> String {
    bodies.last().unwrap()["messages"].to_string()
}

fn log_of(sandbox: &Sandbox, id: &str) -> Vec<Value> {
    read_jsonl(&sandbox.home.join("sessions").join(format!("{id}.jsonl")))
}

#[tokio::test]
async fn a_file_a_shell_command_created_in_turn_2_is_gone_after_a_rewind_to_prompt_2() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "one\n");
    let (id, _) = turn(&sandbox, &["prompt one"], &shell("printf 'two\\n' > a.txt")).await;
    let at_prompt_2 = tree(&sandbox.repo);
    let second = shell("touch made2.txt && printf three > a.txt");
    turn(&sandbox, &["resume", &id, "prompt two"], &second).await;
    turn(&sandbox, &["resume", &id, "prompt three"], &shell("rm made2.txt && touch made3.txt"))
        .await;
    let before_rewind = tree(&sandbox.repo);
    assert!(sandbox.repo.join("made3.txt").exists());

    let (_, bodies) = turn(&sandbox, &["resume", &id, "--rewind-to", "2"], &[]).await;
    assert!(bodies.is_empty(), "a rewind without a prompt asks the model nothing");
    assert!(!sandbox.repo.join("made2.txt").exists());
    assert!(!sandbox.repo.join("made3.txt").exists());
    assert_eq!(sandbox.read("a.txt"), "two\n");
    assert_eq!(tree(&sandbox.repo), at_prompt_2, "the workspace as it was before prompt 2");
    let log = log_of(&sandbox, &id);
    let rewound = log.iter().rev().find(|line| line["type"] == "rewound").unwrap();
    assert_eq!(rewound["to_prompt"], 2);
    assert_eq!(rewound["scope"], "both");

    // The conversation goes on from before prompt 2, edited.
    let (_, bodies) = turn(&sandbox, &["resume", &id, "prompt two, edited"], &answer()).await;
    let sent = last_request(&bodies);
    assert!(sent.contains("prompt one") && sent.contains("prompt two, edited"), "{sent}");
    assert!(!sent.contains("prompt two\"") && !sent.contains("prompt three"), "{sent}");

    // Undoing the rewind gives back the files and the conversation before it.
    turn(&sandbox, &["resume", &id, "--undo-rewind"], &[]).await;
    assert_eq!(tree(&sandbox.repo), before_rewind);
    let (_, bodies) = turn(&sandbox, &["resume", &id, "prompt four"], &answer()).await;
    let sent = last_request(&bodies);
    assert!(sent.contains("prompt three") && !sent.contains("prompt two, edited"), "{sent}");
}

#[tokio::test]
async fn a_rewind_keeps_the_users_own_later_edits() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "one\n");
    let (id, _) = turn(&sandbox, &["prompt one"], &answer()).await;
    turn(&sandbox, &["resume", &id, "prompt two"], &shell("printf two > a.txt && touch b.txt"))
        .await;
    // The user's own edits after the turn (their clock is later than it).
    sandbox.write("a.txt", "mine\n");
    sandbox.write("mine.txt", "new\n");
    let later = SystemTime::now() + Duration::from_secs(5);
    for name in ["a.txt", "mine.txt"] {
        let file = std::fs::File::options().write(true).open(sandbox.repo.join(name)).unwrap();
        file.set_modified(later).unwrap();
    }

    turn(&sandbox, &["resume", &id, "--rewind-to", "2", "--rewind-scope", "code"], &[]).await;
    assert!(!sandbox.repo.join("b.txt").exists(), "keel's file is gone");
    assert_eq!(sandbox.read("a.txt"), "mine\n", "the user's edit stays");
    assert_eq!(sandbox.read("mine.txt"), "new\n");
    let log = log_of(&sandbox, &id);
    let rewound = log.iter().rev().find(|line| line["type"] == "rewound").unwrap();
    assert_eq!(rewound["scope"], "code");
    assert_eq!(rewound["kept"], json!(["a.txt", "mine.txt"]));
    assert!(rewound.get("items").is_none(), "the conversation was not rewound");
}

#[tokio::test]
async fn a_fork_at_prompt_2_continues_independently_of_its_parent() {
    let sandbox = Sandbox::new();
    let (parent, _) = turn(&sandbox, &["prompt one"], &answer()).await;
    turn(&sandbox, &["resume", &parent, "prompt two"], &answer()).await;
    let parent_path = sandbox.home.join("sessions").join(format!("{parent}.jsonl"));
    let parent_bytes = std::fs::read(&parent_path).unwrap();

    let output = sandbox.keel().args(["fork", &parent, "--at", "2"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let fork = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    assert_ne!(fork, parent);
    assert_eq!(std::fs::read(&parent_path).unwrap(), parent_bytes, "the parent's log is untouched");
    let forked = log_of(&sandbox, &fork);
    assert_eq!(forked[0]["type"], "session_started");
    assert_eq!(forked[0]["session_id"], fork.as_str());
    assert_eq!(forked[1]["type"], "forked");
    assert_eq!(forked[1]["parent_session"], parent.as_str());
    assert_eq!(forked[1]["prompt"], 2);

    // Both go on, apart.
    let (id, bodies) = turn(&sandbox, &["resume", &fork, "fork prompt"], &answer()).await;
    assert_eq!(id, fork);
    let sent = last_request(&bodies);
    assert!(sent.contains("prompt one") && !sent.contains("prompt two"), "{sent}");
    assert_eq!(std::fs::read(&parent_path).unwrap(), parent_bytes);
    let (id, bodies) = turn(&sandbox, &["resume", &parent, "parent prompt"], &answer()).await;
    assert_eq!(id, parent);
    let sent = last_request(&bodies);
    assert!(sent.contains("prompt two") && !sent.contains("fork prompt"), "{sent}");
    let fork_log = log_of(&sandbox, &fork);
    assert!(!fork_log.iter().any(|line| line.to_string().contains("parent prompt")));

    // `exec --fork` forks and runs the prompt in the fork at once.
    let (other, bodies) =
        turn(&sandbox, &["--fork", &parent, "--at", "1", "from scratch"], &answer()).await;
    assert!(other != parent && other != fork);
    let sent = last_request(&bodies);
    assert!(sent.contains("from scratch") && !sent.contains("prompt one"), "{sent}");
}

#[tokio::test]
async fn a_rewind_to_a_prompt_that_is_not_there_is_a_usage_error() {
    let sandbox = Sandbox::new();
    let (id, _) = turn(&sandbox, &["prompt one"], &answer()).await;
    let server = scripted_model(Wire::Chat, &[]).await;
    let output =
        sandbox.run(&Model::chat(&server), &["exec", "--json", "resume", &id, "--rewind-to", "5"]);
    assert_eq!(output.status.code(), Some(2));
    let result = result_of(&output.stdout);
    assert!(result["error"].as_str().unwrap().contains("no prompt 5"), "{result}");
    let output = sandbox.keel().args(["fork", &id, "--at", "3"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
}
