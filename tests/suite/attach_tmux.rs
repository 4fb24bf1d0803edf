//! `keel attach ID` end to end (issue 40): a TUI session runs in one tmux
//! server, `keel attach` in another sees its transcript and stream, answers
//! an approval and queues a prompt; killed, it leaves the session running,
//! and the log had one writer throughout. A session no keel runs is
//! resumed instead, past a stale socket; a socket path that is not keel's
//! is refused. Every wait is on a screen or the log, never a timer.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{Value, json};

use super::support::{Model, Sandbox, read_jsonl, scripted_model};
use super::tui_tmux::{Pane, launch, shell_quote};
use super::wire::{Step, Wire, call};

/// `keel attach ID` in a pane of its own, with a cleared environment.
fn attach(sandbox: &Sandbox, model_uri: &str, id: &str) -> Pane {
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let command = format!(
        "env -i PATH={} HOME={} KEEL_HOME={} TERM=xterm-256color {} --provider openai-chat \
         --base-url {} --model m attach {id}",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sandbox.home.display().to_string()),
        shell_quote(&sandbox.home.display().to_string()),
        shell_quote(&keel.display().to_string()),
        shell_quote(&format!("{model_uri}/v1")),
    );
    Pane::start(&sandbox.repo, &command)
}

fn session_id(log: &Path) -> String {
    log.file_stem().unwrap().to_string_lossy().into_owned()
}

/// One writer: seqs run 1, 2, 3, … without a gap or a repeat, and one
/// `session_started`.
fn assert_one_writer(log: &[Value]) {
    let seqs: Vec<u64> = log.iter().map(|line| line["seq"].as_u64().unwrap()).collect();
    let first = seqs[0];
    let expected: Vec<u64> = (first..first + seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "seqs not contiguous");
    let started = log.iter().filter(|line| line["type"] == "session_started").count();
    assert_eq!(started, 1, "{log:#?}");
}

/// The pid of the `keel` the pane runs (the pane's shell may have forked it).
fn keel_pid(pane: &Pane) -> String {
    let out = pane.tmux(&["display-message", "-p", "-t", "keel", "#{pane_pid}"], &[]);
    let mut pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    for _ in 0..4 {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.trim() == "keel" {
            return pid;
        }
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"));
        match children.unwrap_or_default().split_whitespace().next() {
            Some(child) => pid = child.to_owned(),
            None => break,
        }
    }
    panic!("no keel process under the pane ({pid})");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_terminal_sees_the_stream_answers_an_approval_and_queues_a_prompt() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "echo one > one.txt"}))],
        },
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "echo two > two.txt"}))],
        },
        Step::Answer("Both files written.".into()),
        Step::Answer("Bye from the queue.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let owner = launch(&sandbox, &server.uri(), "'write two files'");
    owner.wait_for(&["Allow shell?", "$ echo one > one.txt"]);
    let log_path = sandbox.only_log_path();
    let id = session_id(&log_path);
    let socket = sandbox.home.join("attach").join(format!("{id}.sock"));
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    let folder = std::fs::metadata(sandbox.home.join("attach")).unwrap().permissions().mode();
    assert_eq!((mode, folder & 0o777), (0o600, 0o700));

    let attached = attach(&sandbox, &server.uri(), &id);
    // The transcript so far, then the open approval in full.
    attached.wait_for(&["attached to", "write two files", "Allow shell?", "$ echo one > one.txt"]);
    attached.type_text("y");
    attached.keys(&["Enter"]);
    owner.wait_for(&["answered in an attached terminal", "Allow shell?", "$ echo two > two.txt"]);
    attached.wait_for(&["approved in an attached terminal", "✓ shell", "$ echo two > two.txt"]);
    attached.type_text("then say bye");
    attached.keys(&["Enter"]);
    // Written to the socket: the owner reads it even after the attacher dies
    // (it is recorded once the open approval is answered).
    attached.wait_for(&["sent; the session takes it"]);

    // The attacher dies; the session goes on, answered by its owner.
    let pid = keel_pid(&attached);
    let killed = std::process::Command::new("kill").args(["-9", &pid]).status().unwrap();
    assert!(killed.success());
    let started = std::time::Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        if matches!(state, None | Some("Z" | "X")) {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{stat}");
        std::thread::yield_now();
    }
    owner.keys(&["y"]);
    owner.wait_for(&["Both files written.", "› then say bye", "Bye from the queue."]);
    assert_eq!(sandbox.read("one.txt"), "one\n");
    assert_eq!(sandbox.read("two.txt"), "two\n");
    owner.keys(&["C-d"]);
    assert_eq!(owner.wait_exit(), 0, "{}", owner.screen());

    let log = read_jsonl(&log_path);
    assert_one_writer(&log);
    let approvals: Vec<&Value> = log.iter().filter(|line| line["type"] == "approval").collect();
    assert_eq!(approvals.len(), 2, "{log:#?}");
    assert!(approvals.iter().all(|line| line["approved"] == true && line["scope"] == "once"));
    let queued = log.iter().find(|line| line["type"] == "input_queued").expect("queued input");
    assert_eq!(queued["text"], "then say bye");
    assert!(!socket.exists(), "the socket is removed when the session ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_to_a_session_no_keel_runs_resumes_it_past_a_stale_socket() {
    let sandbox = Sandbox::new();
    let steps = [Step::Answer("Hello from before.".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let out = sandbox.run(&Model::chat(&server), &["exec", "say hello"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let id = session_id(&sandbox.only_log_path());
    // A socket file left by a keel that died: nobody listens on it.
    let dir = sandbox.home.join("attach");
    std::fs::create_dir_all(&dir).unwrap();
    drop(std::os::unix::net::UnixListener::bind(dir.join(format!("{id}.sock"))).unwrap());

    let pane = attach(&sandbox, &server.uri(), &id[..13]);
    pane.wait_for(&["› say hello", "Hello from before.", "Ask keel"]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let log = read_jsonl(&sandbox.only_log_path());
    assert_one_writer(&log);
    assert!(log.iter().any(|line| line["type"] == "session_resumed"), "{log:#?}");
}

#[test]
fn a_socket_path_that_is_not_keels_is_refused() {
    let sandbox = Sandbox::new();
    let id = "0193aaaa-0000-7000-8000-000000000001";
    let line = json!({"v": 1, "seq": 1, "ts": "2026-12-02T00:00:00Z", "type": "session_started",
        "session_id": id, "cwd": sandbox.repo, "provider": "openai-chat", "model": "m",
        "keel_version": "0"});
    let sessions = sandbox.home.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join(format!("{id}.jsonl")), format!("{line}\n")).unwrap();
    let dir = sandbox.home.join("attach");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{id}.sock")), "not a socket").unwrap();
    let out = sandbox.keel().args(["attach", id]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("is not keel's socket for this user"), "{stderr}");
}

/// Root only: a socket owned by another user is not talked to.
#[test]
#[ignore = "needs root: chown to another uid"]
fn a_socket_of_another_user_is_refused() {
    let sandbox = Sandbox::new();
    let id = "0193aaaa-0000-7000-8000-000000000002";
    let line = json!({"v": 1, "seq": 1, "ts": "2026-12-02T00:00:00Z", "type": "session_started",
        "session_id": id, "cwd": sandbox.repo, "provider": "openai-chat", "model": "m",
        "keel_version": "0"});
    let sessions = sandbox.home.join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join(format!("{id}.jsonl")), format!("{line}\n")).unwrap();
    let dir = sandbox.home.join("attach");
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join(format!("{id}.sock"));
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::os::unix::fs::lchown(&socket, Some(65534), Some(65534)).unwrap();
    let out = sandbox.keel().args(["attach", id]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("owned by uid 65534"), "{stderr}");
}
