//! Issue 17 item 11 through the real binary: `keel sessions` (header, the
//! last turn's outcome, empty sessions hidden), `keel replay` of a file
//! that is not a log, `keel demo` (a diff, no deleted log path), `keel
//! undo` naming the files, `keel policy check` giving a reason for allow.

use keel::protocol::{SessionEvent, TurnOutcome, Usage};
use keel::session::SessionLog;
use serde_json::json;

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

fn write_log(sandbox: &Sandbox, id: &str, events: Vec<SessionEvent>) {
    let mut log = SessionLog::create(&sandbox.home.join("sessions"), id).unwrap();
    log.append(SessionEvent::SessionStarted {
        session_id: id.into(),
        cwd: sandbox.repo.display().to_string(),
        provider: "openai".into(),
        model: "m".into(),
        keel_version: "0".into(),
        git_head: None,
        mode: None,
        parent: None,
    })
    .unwrap();
    for event in events {
        log.append(event).unwrap();
    }
}

#[test]
fn sessions_show_interrupted_runs_a_header_and_hide_empty_ones() {
    let sandbox = Sandbox::new();
    write_log(
        &sandbox,
        "01a00000-0000-7000-8000-000000000001",
        vec![
            SessionEvent::UserMessage {
                text: "long task".into(),
                images: Vec::new(),
                queued: None,
            },
            SessionEvent::TurnStarted { turn: 1 },
            SessionEvent::TurnCompleted {
                turn: 1,
                outcome: TurnOutcome::Interrupted,
                usage: Usage::default(),
            },
            SessionEvent::SessionEnded { reason: "exec finished".into() },
        ],
    );
    write_log(
        &sandbox,
        "01a00000-0000-7000-8000-000000000002",
        vec![SessionEvent::SessionEnded { reason: "the user left the session".into() }],
    );
    let output = sandbox.keel().arg("sessions").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let table = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert!(lines[0].starts_with("ID") && lines[0].contains("STATUS"), "{table}");
    assert!(lines[1].contains("interrupted") && lines[1].contains("long task"), "{table}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("1 empty session(s) hidden"), "{stderr}");
    let all = sandbox.keel().args(["sessions", "--all"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&all.stdout).lines().count(), 3);
}

#[test]
fn replaying_a_file_that_is_not_a_log_fails_clearly() {
    let sandbox = Sandbox::new();
    sandbox.write("g.jsonl", "garbage {\n");
    sandbox.write("garbage.bin", "\u{0}\u{1}binary");
    for name in ["g.jsonl", "garbage.bin"] {
        let output = sandbox.keel().args(["replay", name]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(&format!("{name} is not a keel session log")), "{stderr}");
        assert!(output.stdout.is_empty(), "{name}: no report for a non-log");
    }
}

#[test]
fn the_demo_shows_its_diff_and_never_a_path_it_deletes() {
    let sandbox = Sandbox::new();
    let output = sandbox.keel().arg("demo").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.contains("--- a/greet.sh\n+++ b/greet.sh\n"), "{stdout}");
    assert!(
        stdout.contains("-") && stdout.contains("Helo") && stdout.contains("Hello"),
        "{stdout}"
    );
    assert!(stderr.contains("a replay of a recorded session"), "{stderr}");
    let named = |line: &str| line.starts_with("log ") || line.starts_with("workdir ");
    assert!(!stderr.lines().any(named), "a deleted path is shown: {stderr}");
    assert!(stdout.contains("next: set a key"), "{stdout}");
}

#[tokio::test]
async fn undo_names_the_files_it_restored() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "notes.txt"}))] },
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "notes.txt", "content": "beta\n"}))],
        },
        Step::Answer("Changed.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--full-auto", "change the notes"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("notes.txt"), "beta\n");
    let undo = sandbox.keel().arg("undo").output().unwrap();
    assert_eq!(undo.status.code(), Some(0), "{}", String::from_utf8_lossy(&undo.stderr));
    let stderr = String::from_utf8_lossy(&undo.stderr);
    assert!(stderr.contains("restored notes.txt (1 file) to before turn 1"), "{stderr}");
    assert_eq!(sandbox.read("notes.txt"), "alpha\n");
}

#[test]
fn policy_check_gives_a_reason_for_allow_and_takes_the_command_without_dashes() {
    let sandbox = Sandbox::new();
    let output = sandbox.keel().args(["policy", "check", "git", "status"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("allow: a known read-only command"), "{stdout}");
    let json = sandbox.keel().args(["policy", "check", "--json", "--", "ls", "-la"]).output();
    let report: serde_json::Value = serde_json::from_slice(&json.unwrap().stdout).unwrap();
    assert_eq!(report["decision"], "allow");
    assert_ne!(report["reason"], "", "{report}");
}

// Issue 31 scope 2: `keel policy check --net HOST` says what the proxy
// would do with HOST under the user's settings, and why (a listed name, a
// name not on the list, an IP literal, a closed network).
#[test]
fn policy_check_net_says_what_the_proxy_would_do_and_why() {
    let sandbox = Sandbox::new();
    let check = |args: &[&str]| {
        let output = sandbox.keel().args(["policy", "check"]).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let closed = check(&["--net", "pkgs.example.test"]);
    assert!(closed.starts_with("deny: ") && closed.contains("network = \"off\""), "{closed}");
    std::fs::write(
        sandbox.home.join("config.toml"),
        "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"pkgs.example.test\"]\n",
    )
    .unwrap();
    let listed = check(&["--net", "pkgs.example.test"]);
    assert!(listed.starts_with("allow: "), "{listed}");
    let unlisted = check(&["--net", "other.example.test"]);
    assert!(unlisted.starts_with("deny: ") && unlisted.contains("allowed_domains"), "{unlisted}");
    let literal = check(&["--net", "127.0.0.1"]);
    assert!(literal.starts_with("deny: ") && literal.contains("IP address"), "{literal}");
    let json: serde_json::Value =
        serde_json::from_str(&check(&["--json", "--net", "other.example.test"])).unwrap();
    assert_eq!(json["host"], "other.example.test", "{json}");
    assert_eq!(json["network"], "allowlist", "{json}");
    assert_eq!(json["decision"], "deny", "{json}");
}
