//! Adversarial corpus, file tools (issue 13, Critical 4 and the FIFO and
//! symlink findings): the file tools run in keel's own process, outside the
//! sandbox, so a path must never lead them out of the workspace: not
//! through a symlink, `..`, an absolute path, a folder swapped for a
//! symlink mid-call, nor into a FIFO, socket or device. Through the real
//! binary (`keel tool`, `keel exec`), with canaries outside workspace and
//! temp; every refusal names its reason.

use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::canary::{Canary, exec_in};
use super::support::{Model, Sandbox, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

const SECRET: &str = "CANARY-SECRET-7f3a";

/// `keel tool NAME ARGS --yes`: exit code and the result envelope.
fn tool(sandbox: &Sandbox, name: &str, args: Value) -> (Option<i32>, Value) {
    let out = sandbox
        .keel()
        .args(["tool", name, &args.to_string(), "--yes", "--mode", "yolo"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let envelope = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), envelope)
}

/// The call was refused with error kind `kind`, and the message says why.
fn assert_refused(envelope: &Value, kind: &str, reason: &str) {
    assert_eq!(envelope["ok"], false, "{envelope}");
    assert_eq!(envelope["meta"]["error"], kind, "{envelope}");
    let message = envelope["error"].as_str().unwrap_or_default();
    assert!(message.contains(reason), "the refusal should say `{reason}`: {message}");
}

/// Refused for being outside, by the tool or already by policy, or (a
/// folder above the workspace that holds the home's secret places) by
/// secret protection, which judges first.
fn assert_refused_outside(envelope: &Value) {
    assert_eq!(envelope["ok"], false, "{envelope}");
    let message = envelope["error"].as_str().unwrap_or_default();
    let holds_secrets = message.contains("protect_secrets: ") && message.contains(" (holds ");
    assert!(message.contains("outside the workspace") || holds_secrets, "{message}");
}

/// A canary folder holding a secret file `x`.
fn secret_canary(name: &str) -> Canary {
    let canary = Canary::new(name);
    std::fs::write(canary.file("x"), SECRET).unwrap();
    canary
}

fn assert_untouched(canary: &Canary) {
    assert_eq!(canary.entries(), ["x"], "files appeared outside the workspace");
    assert_eq!(std::fs::read_to_string(canary.file("x")).unwrap(), SECRET, "changed outside");
}

#[test]
fn read_file_on_a_fifo_is_refused_at_once_instead_of_hanging() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.repo.join("pipe"));
    let (code, envelope) = tool(&sandbox, "read_file", json!({"path": "pipe"}));
    assert_eq!(code, Some(1));
    assert_refused(&envelope, "not_a_regular_file", "is a FIFO (named pipe)");
}

#[test]
fn writes_and_edits_onto_a_fifo_are_refused() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.repo.join("pipe"));
    let (_, envelope) = tool(&sandbox, "write_file", json!({"path": "pipe", "content": "x"}));
    assert_refused(&envelope, "not_a_regular_file", "FIFO");
    let edit = json!({"path": "pipe", "old_string": "a", "new_string": "b"});
    let (_, envelope) = tool(&sandbox, "edit_file", edit);
    assert_refused(&envelope, "not_a_regular_file", "FIFO");
    let patch = "*** Begin Patch\n*** Update File: pipe\n@@\n-a\n+b\n*** End Patch\n";
    let (_, envelope) = tool(&sandbox, "apply_patch", json!({"patch": patch}));
    assert_refused(&envelope, "not_a_regular_file", "FIFO");
}

#[test]
fn read_file_on_a_socket_is_refused() {
    let sandbox = Sandbox::new();
    let _listener = std::os::unix::net::UnixListener::bind(sandbox.repo.join("sock")).unwrap();
    let (_, envelope) = tool(&sandbox, "read_file", json!({"path": "sock"}));
    assert_refused(&envelope, "not_a_regular_file", "socket");
}

#[test]
fn read_file_on_a_device_node_is_refused_without_opening_it() {
    let sandbox = Sandbox::new();
    let node = sandbox.repo.join("disk");
    // Only root can make device nodes; elsewhere this case is the FIFO's.
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        &node,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o600),
        rustix::fs::makedev(1, 5), // /dev/zero: reading it would never end
    );
    if made.is_err() {
        mkfifo(&node);
    }
    let (_, envelope) = tool(&sandbox, "read_file", json!({"path": "disk"}));
    let kind = if made.is_ok() { "character device" } else { "FIFO" };
    assert_refused(&envelope, "not_a_regular_file", kind);
    let (_, envelope) = tool(&sandbox, "grep", json!({"pattern": "x", "path": "disk"}));
    assert_refused(&envelope, "not_a_regular_file", kind);
}

#[test]
fn grep_skips_fifos_inside_a_search_instead_of_hanging() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "needle\n");
    mkfifo(&sandbox.repo.join("pipe"));
    let (code, envelope) = tool(&sandbox, "grep", json!({"pattern": "needle"}));
    assert_eq!(code, Some(0), "{envelope}");
    assert_eq!(envelope["output"], "a.txt:1:needle\n");
}

#[test]
fn a_symlink_to_a_folder_outside_is_refused_by_every_file_tool() {
    let sandbox = Sandbox::new();
    let canary = secret_canary("symdir");
    symlink(&canary.dir, sandbox.repo.join("out")).unwrap();
    for (name, args) in [
        ("read_file", json!({"path": "out/x"})),
        ("write_file", json!({"path": "out/x", "content": "pwned"})),
        ("write_file", json!({"path": "out/new.txt", "content": "pwned"})),
        ("edit_file", json!({"path": "out/x", "old_string": "CANARY", "new_string": "PWNED"})),
        ("list_dir", json!({"path": "out"})),
        ("glob", json!({"pattern": "*", "path": "out"})),
        ("grep", json!({"pattern": "CANARY", "path": "out"})),
    ] {
        let (code, envelope) = tool(&sandbox, name, args);
        assert_eq!(code, Some(1), "{name}: {envelope}");
        // Writes are refused by policy already (it judges the resolved
        // path), reads and listings by the tool.
        assert_refused_outside(&envelope);
    }
    let patch = "*** Begin Patch\n*** Add File: out/y\n+pwned\n*** Update File: out/x\n@@\n\
                 -CANARY-SECRET-7f3a\n+pwned\n*** End Patch\n";
    let (_, envelope) = tool(&sandbox, "apply_patch", json!({"patch": patch}));
    assert_refused_outside(&envelope);
    assert_untouched(&canary);
}

#[test]
fn searches_do_not_follow_symlinks_out_of_the_workspace() {
    let sandbox = Sandbox::new();
    let canary = secret_canary("search");
    sandbox.write("inside.txt", "nothing here\n");
    symlink(&canary.dir, sandbox.repo.join("out")).unwrap();
    symlink(canary.file("x"), sandbox.repo.join("x-link")).unwrap();
    let (_, grep) = tool(&sandbox, "grep", json!({"pattern": "CANARY"}));
    assert!(!grep.to_string().contains(SECRET), "grep read outside: {grep}");
    let (_, glob) = tool(&sandbox, "glob", json!({"pattern": "**/*"}));
    assert!(!glob.to_string().contains("out/x"), "glob listed outside: {glob}");
    let (_, list) = tool(&sandbox, "list_dir", json!({"depth": 5}));
    let listing = list["output"].as_str().unwrap_or_default();
    assert!(listing.contains("out@") && !listing.contains("out/x"), "{listing}");
    assert_untouched(&canary);
}

#[test]
fn a_symlink_to_a_file_outside_is_refused_and_a_delete_removes_only_the_link() {
    let sandbox = Sandbox::new();
    let canary = secret_canary("symfile");
    symlink(canary.file("x"), sandbox.repo.join("notes.txt")).unwrap();
    let (_, envelope) = tool(&sandbox, "read_file", json!({"path": "notes.txt"}));
    assert_refused(&envelope, "outside_workspace", "outside the workspace");
    let (_, envelope) = tool(&sandbox, "write_file", json!({"path": "notes.txt", "content": "p"}));
    assert_refused_outside(&envelope);
    let patch = "*** Begin Patch\n*** Delete File: notes.txt\n*** End Patch\n";
    let (code, envelope) = tool(&sandbox, "apply_patch", json!({"patch": patch}));
    assert_eq!(code, Some(0), "{envelope}");
    assert!(std::fs::symlink_metadata(sandbox.repo.join("notes.txt")).is_err());
    assert_untouched(&canary);
}

#[test]
fn a_symlink_inside_the_workspace_is_used_by_its_resolved_path() {
    // `docs/notes.txt -> ../NOTES.md`: the tool reads and reports
    // `NOTES.md`, so what policy and hooks judge (the resolved path) is what
    // is used. (A link to `.env` is refused by `protect_secrets`:
    // `policy_escapes.rs`.)
    let sandbox = Sandbox::new();
    sandbox.write("NOTES.md", "notes\n");
    sandbox.write("docs/readme.md", "hi\n");
    symlink("../NOTES.md", sandbox.repo.join("docs/notes.txt")).unwrap();
    let (code, envelope) = tool(&sandbox, "read_file", json!({"path": "docs/notes.txt"}));
    assert_eq!(code, Some(0), "{envelope}");
    assert_eq!(envelope["meta"]["path"], "NOTES.md", "{envelope}");
}

#[test]
fn parent_and_absolute_escapes_are_refused() {
    let sandbox = Sandbox::new();
    let canary = secret_canary("dotdot");
    sandbox.write("sub/a.txt", "a\n");
    let outside = canary.file("x").display().to_string();
    let dotdot = format!("../../../../../../../..{outside}");
    for path in [outside.as_str(), dotdot.as_str(), "sub/../../x", "/etc/passwd", ".."] {
        let (_, envelope) = tool(&sandbox, "write_file", json!({"path": path, "content": "p"}));
        assert_refused_outside(&envelope);
        let (_, envelope) = tool(&sandbox, "read_file", json!({"path": path}));
        assert_refused_outside(&envelope);
    }
    let patch = format!(
        "*** Begin Patch\n*** Update File: sub/a.txt\n*** Move to: {outside}\n@@\n-a\n+b\n\
         *** End Patch\n"
    );
    let (_, envelope) = tool(&sandbox, "apply_patch", json!({"patch": patch}));
    assert_refused_outside(&envelope);
    assert_eq!(sandbox.read("sub/a.txt"), "a\n");
    assert_untouched(&canary);
}

#[test]
fn a_dangling_symlink_is_not_written_through() {
    let sandbox = Sandbox::new();
    let canary = secret_canary("dangling");
    symlink(canary.file("new"), sandbox.repo.join("later.txt")).unwrap();
    let (_, envelope) = tool(&sandbox, "write_file", json!({"path": "later.txt", "content": "p"}));
    // Policy sees where the link leads (outside) and refuses first; without
    // it the tool refuses the dangling link.
    if envelope["meta"]["kind"] == "denied" {
        assert_refused_outside(&envelope);
    } else {
        assert_refused(&envelope, "dangling_symlink", "does not exist");
    }
    assert_untouched(&canary);
}

#[test]
fn a_file_too_large_to_edit_is_refused_with_the_limit() {
    let sandbox = Sandbox::new();
    let big = sandbox.repo.join("big.log");
    std::fs::File::create(&big).unwrap().set_len(33 * 1024 * 1024).unwrap();
    let edit = json!({"path": "big.log", "old_string": "a", "new_string": "b"});
    let (_, envelope) = tool(&sandbox, "edit_file", edit);
    assert_refused(&envelope, "file_too_large", "use a shell command");
}

#[test]
fn a_single_enormous_line_is_read_cut_not_whole() {
    let sandbox = Sandbox::new();
    let line = "a".repeat(20 * 1024 * 1024);
    sandbox.write("one-line.txt", &format!("{line}\nsecond\n"));
    let (code, envelope) = tool(&sandbox, "read_file", json!({"path": "one-line.txt"}));
    assert_eq!(code, Some(0), "{}", envelope["error"]);
    let text = envelope["output"].as_str().unwrap();
    assert!(text.contains("[... line cut]") && text.contains("     2\tsecond"), "{}", &text[..80]);
    assert_eq!(envelope["meta"]["total_lines"], 2);
    assert!(text.len() < 16 * 1024, "{} bytes shown", text.len());
}

fn mkfifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
}

/// Swaps `repo/real` between a folder and a symlink to `target` until
/// stopped: the attack of Critical 4, as a background process would.
fn flip(repo: &Path, target: &Path, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let (real, away, target) = (repo.join("real"), repo.join("real.away"), target.to_owned());
    std::thread::spawn(move || {
        let mut flips = 0;
        while !stop.load(Ordering::Relaxed) {
            let _ = std::fs::rename(&real, &away);
            let _ = symlink(&target, &real);
            std::thread::yield_now();
            let _ = std::fs::remove_file(&real);
            let _ = std::fs::rename(&away, &real);
            flips += 1;
        }
        flips
    })
}

/// Calls on `real/…` of every file tool, many times over.
fn racing_calls(rounds: usize) -> Vec<(String, String)> {
    let mut calls = Vec::new();
    for round in 0..rounds {
        let (old, new) = if round % 2 == 0 { ("one", "two") } else { ("two", "one") };
        calls.push(call("read_file", json!({"path": "real/x"})));
        calls.push(call(
            "edit_file",
            json!({"path": "real/x", "old_string": old, "new_string": new}),
        ));
        calls.push(call("write_file", json!({"path": "real/x", "content": format!("{new}\n")})));
        calls.push(call("write_file", json!({"path": "real/sub/new.txt", "content": "pwned"})));
        let patch = format!(
            "*** Begin Patch\n*** Add File: real/added.txt\n+pwned\n*** Update File: real/x\n@@\n\
             -{new}\n+{old}\n*** End Patch\n"
        );
        calls.push(call("apply_patch", json!({"patch": patch})));
        calls.push(call("grep", json!({"pattern": "CANARY", "path": "real"})));
    }
    calls
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_tools_racing_a_folder_swapped_for_a_symlink_never_reach_outside() {
    let sandbox = Sandbox::new();
    let canary = secret_canary("race");
    sandbox.write("real/x", "one\n");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "real/x"}))] },
        Step::Calls { text: None, calls: racing_calls(40) },
        Step::Calls { text: None, calls: racing_calls(40) },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = flip(&sandbox.repo, &canary.dir, stop.clone());
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json", "--yolo", "race"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let flips = flipper.join().unwrap();
    assert!(flips > 100, "the flipper barely ran ({flips} flips)");
    assert!(output.status.code().is_some(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_untouched(&canary);
    for body in request_bodies(&server).await {
        assert!(!body.to_string().contains(SECRET), "a file tool read outside the workspace");
    }
    let log = sandbox.only_log();
    let mut outcomes = std::collections::BTreeMap::new();
    for line in log.iter().filter(|line| line["type"] == "tool_call_finished") {
        let kind = line["meta"]["error"].as_str().unwrap_or("ok").to_owned();
        *outcomes.entry(kind).or_insert(0) += 1;
    }
    let finished: usize = outcomes.values().sum();
    assert!(finished >= 480, "only {finished} calls finished: {outcomes:?}");
    // Informational: how the calls fared against the flipping folder.
    eprintln!("{flips} flips; outcomes {outcomes:?}");
}

#[tokio::test]
async fn started_in_a_subfolder_a_path_from_grep_can_be_read_and_edited() {
    let sandbox = Sandbox::new();
    sandbox.write("crate/src/lib.rs", "pub fn helper() {}\n");
    sandbox.write("crate/README.md", "crate\n");
    sandbox.write("README.md", "root\n");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("grep", json!({"pattern": "helper"}))] },
        Step::Calls {
            text: None,
            calls: vec![call("read_file", json!({"path": "crate/src/lib.rs"}))],
        },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "crate/src/lib.rs", "old_string": "helper", "new_string": "aid"}),
            )],
        },
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "src/lib.rs"}))] },
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "README.md"}))] },
        Step::Answer("done".into()),
    ];
    let dir = sandbox.repo.join("crate");
    let output = exec_in(&sandbox, &dir, &steps, &[], &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("crate/src/lib.rs"), "pub fn aid() {}\n");
    let results: Vec<Value> = sandbox
        .only_log()
        .into_iter()
        .filter(|line| line["type"] == "tool_call_finished")
        .map(|line| line["result"].clone())
        .collect();
    assert!(results[0]["output"].as_str().unwrap().starts_with("crate/src/lib.rs:1:"));
    for result in &results {
        assert_eq!(result["is_error"], false, "{result}");
    }
    // `src/lib.rs` exists only from the working directory: accepted.
    assert!(results[3]["output"].as_str().unwrap().contains("pub fn aid()"), "{}", results[3]);
    // `README.md` exists at the root too: the root's, as the rule says.
    assert!(results[4]["output"].as_str().unwrap().contains("root"), "{}", results[4]);
}

#[tokio::test]
async fn a_session_writing_to_a_fifo_is_refused_and_does_not_hang() {
    let sandbox = Sandbox::new();
    mkfifo(&sandbox.repo.join("pipe"));
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "pipe", "content": "x"}))],
        },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
            )],
        },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json", "--full-auto", "write"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(output.status.code().is_some(), "keel hung on the FIFO and was killed");
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 3, "{}", String::from_utf8_lossy(&output.stderr));
    assert!(bodies[2].to_string().contains("is a FIFO (named pipe)"), "{}", bodies[2]);
}

#[test]
fn policy_judges_the_path_the_tool_will_use_from_a_subfolder() {
    // The tools read `secrets/key` from the root first; policy must judge
    // that reading too, or a rule on the root's `secrets/` is bypassed by
    // a session started in a subfolder.
    let sandbox = Sandbox::new();
    sandbox.write("secrets/key", "k\n");
    sandbox.write("sub/readme.md", "hi\n");
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    std::fs::write(
        sandbox.home.join("rules/team.rules"),
        "path_rule(glob=\"secrets/**\", access=\"write\", decision=\"forbidden\")\n",
    )
    .unwrap();
    let out = sandbox
        .keel()
        .current_dir(sandbox.repo.join("sub"))
        .args(["tool", "write_file", r#"{"path":"secrets/key","content":"pwned"}"#])
        .args(["--mode", "yolo", "--yes"])
        .output()
        .unwrap();
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(envelope["meta"]["decision"], "forbidden", "{envelope}");
    assert_eq!(sandbox.read("secrets/key"), "k\n");
}
