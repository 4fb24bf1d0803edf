//! Issue 21 through the real binary: in a repository with committed code,
//! the first undo checkpoint borrows the project's objects instead of
//! copying them, undo still restores edits and shell-made changes (and the
//! user's own uncommitted work stays as it was), later turns checkpoint
//! only what changed, a step costs the same work in a large repository
//! (no walk around each command), the first checkpoint of a large one is
//! announced, and starting a session reads no tree.

use std::path::Path;

use keel::policy::{ApprovalMode, ApprovalScope};
use keel::protocol::ToolCall;
use keel::runtime::{ApprovalAnswer, Approver, EventSink, RuntimeEvent, Session};
use keel::tools::BoxFuture;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

fn git(repo: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgSign=false"])
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `files` files of `bytes` pseudo-random (incompressible) bytes each, in
/// folders of 10, committed.
fn commit_files(sandbox: &Sandbox, files: usize, bytes: usize) {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    for n in 0..files {
        let content: Vec<u8> = (0..bytes)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let path = sandbox.repo.join(format!("src/d{}/f{n}.bin", n / 10));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    git(&sandbox.repo, &["add", "-A"]);
    git(&sandbox.repo, &["commit", "-qm", "code"]);
}

fn size_of(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => size_of(&entry.path()),
            _ => entry.metadata().map_or(0, |meta| meta.len()),
        })
        .sum()
}

fn exec(sandbox: &Sandbox, uri: &str, extra: &[&str]) -> std::process::Output {
    sandbox
        .keel_on(&Model::at("openai-chat", uri), &["exec", "--full-auto"])
        .args(extra)
        .arg("change things")
        .output()
        .unwrap()
}

fn shell(command: &str) -> Step {
    Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] }
}

#[tokio::test]
async fn the_first_checkpoint_borrows_committed_files_instead_of_copying_them() {
    let sandbox = Sandbox::new();
    commit_files(&sandbox, 1500, 4096);
    let committed = size_of(&sandbox.repo.join(".git/objects"));
    assert!(committed > 5_000_000, "the fixture holds {committed} bytes of objects");
    let steps = [shell("printf changed > src/d0/f0.bin"), Step::Answer("done".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let shadow = size_of(&sandbox.home.join("shadow"));
    assert!(
        shadow < committed / 8,
        "the undo store grew by {shadow} bytes for a workspace of {committed} bytes"
    );
    let undo = sandbox.keel().arg("undo").output().unwrap();
    assert_eq!(undo.status.code(), Some(0), "{}", String::from_utf8_lossy(&undo.stderr));
    assert_eq!(git(&sandbox.repo, &["status", "--porcelain"]), "", "f0.bin is back");
}

#[tokio::test]
async fn undo_restores_the_turn_and_leaves_the_users_own_work_and_ignored_files() {
    let sandbox = Sandbox::new();
    sandbox.write(".gitignore", "*.log\n");
    sandbox.write("src/a.txt", "alpha\n");
    sandbox.write("src/b.txt", "bravo\n");
    sandbox.write("src/c.txt", "charlie\n");
    git(&sandbox.repo, &["add", "-A"]);
    git(&sandbox.repo, &["commit", "-qm", "start"]);
    // The user's work in progress before the session.
    sandbox.write("src/b.txt", "bravo, edited by the user\n");
    sandbox.write("notes.md", "my notes\n");
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "src/a.txt"}))] },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "src/a.txt", "old_string": "alpha", "new_string": "ALPHA"}),
            )],
        },
        shell("printf agent > src/b.txt && rm src/c.txt && printf new > made.txt"),
        shell("printf noise > build.log && printf more >> notes.md"),
        Step::Answer("changed".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("src/b.txt"), "agent");

    let output = sandbox.keel().arg("undo").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(sandbox.read("src/a.txt"), "alpha\n");
    assert_eq!(sandbox.read("src/b.txt"), "bravo, edited by the user\n");
    assert_eq!(sandbox.read("src/c.txt"), "charlie\n");
    assert_eq!(sandbox.read("notes.md"), "my notes\n");
    assert!(!sandbox.repo.join("made.txt").exists());
    assert_eq!(sandbox.read("build.log"), "noise", "ignored files are not checkpointed");
    assert!(
        stderr.contains("not restored, because checkpoints do not hold them: build.log (ignored"),
        "{stderr}"
    );
    assert_eq!(git(&sandbox.repo, &["status", "--porcelain"]), " M src/b.txt\n?? notes.md\n");
}

struct Quiet;

impl EventSink for Quiet {
    fn emit(&mut self, _event: RuntimeEvent) {}
}

/// Says yes to every command (no sandbox launcher in a library test).
struct Yes;

impl Approver for Yes {
    fn decide<'a>(&'a mut self, _: &'a ToolCall, _: &'a str) -> BoxFuture<'a, ApprovalAnswer> {
        Box::pin(async {
            ApprovalAnswer { approved: true, note: None, scope: ApprovalScope::Once }
        })
    }
}

#[tokio::test]
async fn later_turns_checkpoint_what_changed_and_undo_goes_back_one_turn_at_a_time() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a0\n");
    sandbox.write("deep/er/b.txt", "b0\n");
    git(&sandbox.repo, &["add", "-A"]);
    git(&sandbox.repo, &["commit", "-qm", "start"]);
    let steps = [
        shell("printf a1 > a.txt"),
        Step::Answer("one".into()),
        shell("printf b1 > deep/er/b.txt && mkdir -p gen/x && printf g > gen/x/new.txt"),
        Step::Answer("two".into()),
        shell("printf a3 > a.txt"),
        Step::Answer("three".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let settings = sandbox.settings(&server.uri());
    let options = sandbox.options(ApprovalMode::Ask);
    let mut session = Session::start(&settings, options, Box::new(Quiet), Box::new(Yes)).unwrap();
    let cancel = CancellationToken::new();
    for prompt in ["one", "two", "three"] {
        session.run_turn(prompt.into(), &cancel).await.unwrap();
    }
    let log = session.log_path().to_owned();
    drop(session);
    let finished: Vec<serde_json::Value> = super::support::read_jsonl(&log)
        .into_iter()
        .filter(|line| line["type"] == "tool_call_finished")
        .collect();
    assert!(
        finished.iter().all(|line| line["meta"]["changed"] == true),
        "every command changed a file: {finished:?}"
    );

    let undo = |expect: &str| {
        let output = sandbox.keel().arg("undo").output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert!(stderr.contains(expect), "{stderr}");
    };
    undo("restored a.txt (1 file) to before turn 3");
    assert_eq!(sandbox.read("a.txt"), "a1");
    undo("to before turn 2");
    assert_eq!(sandbox.read("deep/er/b.txt"), "b0\n");
    assert!(!sandbox.repo.join("gen/x/new.txt").exists());
    assert_eq!(sandbox.read("a.txt"), "a1");
    undo("to before turn 1");
    assert_eq!(sandbox.read("a.txt"), "a0\n");
}

/// How many times `keel ARGS` (and every process it starts) called each
/// of `syscalls`, counted by strace: work, not time, so a loaded machine
/// cannot make the test flaky.
fn count_syscalls(sandbox: &Sandbox, args: &[&str], syscalls: &[&str]) -> u64 {
    let counts = tempfile::NamedTempFile::new().unwrap();
    let status = std::process::Command::new("strace")
        .args(["-f", "-c", "-o"])
        .arg(counts.path())
        .arg(format!("-etrace={}", syscalls.join(",")))
        .arg(env!("CARGO_BIN_EXE_keel"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("strace is installed (.ci/run installs it)");
    assert!(status.success(), "keel under strace: {status}");
    let table = std::fs::read_to_string(counts.path()).unwrap();
    // `% time  seconds  usecs/call  calls  [errors]  syscall` rows.
    table
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let name = *fields.last()?;
            syscalls.contains(&name).then(|| fields.get(3)?.parse::<u64>().ok()).flatten()
        })
        .sum()
}

#[tokio::test]
async fn starting_in_a_large_repository_reads_no_folder_and_stats_no_tracked_file() {
    let sandbox = Sandbox::new();
    for n in 0..6000 {
        sandbox.write(&format!("src/m{}/f{n}.rs", n / 10), "");
    }
    git(&sandbox.repo, &["add", "-A"]);
    git(&sandbox.repo, &["commit", "-qm", "code"]);
    // Something untracked and big, as a data folder or an unignored build.
    for n in 0..3000 {
        sandbox.write(&format!("data/d{}/x{n}", n / 10), "");
    }
    let server = scripted_model(Wire::Chat, &[Step::Answer("hi".into())]).await;
    let uri = format!("{}/v1", server.uri());
    let args =
        ["exec", "--provider", "openai-chat", "--model", "m", "--base-url", uri.as_str(), "hello"];
    let folders_read = count_syscalls(&sandbox, &args, &["getdents64", "getdents"]);
    let stats =
        count_syscalls(&sandbox, &args, &["newfstatat", "statx", "lstat", "stat", "fstatat64"]);
    // 600 tracked and 300 untracked folders, 9 000 files: a walk or a
    // `git status` would read or stat each of them.
    assert!(folders_read < 100, "{folders_read} folder reads to say hello");
    assert!(stats < 1500, "{stats} stat calls to say hello");
}

/// `files` empty files in folders of 10, committed.
fn commit_empty_files(sandbox: &Sandbox, files: usize) {
    for n in 0..files {
        sandbox.write(&format!("src/m{}/f{n}.rs", n / 10), "");
    }
    git(&sandbox.repo, &["add", "-A"]);
    git(&sandbox.repo, &["commit", "-qm", "code"]);
}

fn writing_steps(steps: usize) -> Vec<Step> {
    let mut script: Vec<Step> =
        (0..steps).map(|k| shell(&format!("echo step-{k} >> steps.txt"))).collect();
    script.push(Step::Answer("done".into()));
    script
}

#[tokio::test]
async fn a_step_costs_the_same_work_in_a_large_repository() {
    // Two identical 6 000-file repositories: one session runs one writing
    // command, the other six. What the extra five cost is the per-step
    // work, which must not grow with the repository (before: a walk of
    // the tree around every command, two stats per file). Both are a
    // workspace's second session: in the first, the undo watcher's walk
    // starts after the first checkpoint and runs beside the steps, so a
    // 1-step session stopped it part-way and a 6-step one counted all of
    // it (flaky under load); from the second on, the walk is shared with
    // the jail's nested `.git` search and done before the first command.
    let stats = ["newfstatat", "statx", "lstat", "stat", "fstatat64"];
    let mut counts = Vec::new();
    for steps in [1, 6] {
        let sandbox = Sandbox::new();
        commit_empty_files(&sandbox, 6000);
        let mut runs = Vec::new();
        for (session, steps) in [("first", 1), ("counted", steps), ("counted", steps)] {
            let server = scripted_model(Wire::Chat, &writing_steps(steps)).await;
            let uri = format!("{}/v1", server.uri());
            let args = [
                "exec",
                "--full-auto",
                "--provider",
                "openai-chat",
                "--model",
                "m",
                "--base-url",
                uri.as_str(),
                "append",
            ];
            let count = count_syscalls(&sandbox, &args, &stats);
            if session == "counted" {
                runs.push(count);
            }
        }
        // The fewer of two counted sessions: one of them now and then
        // (2 runs in 9 under load, 2026-12-03) counts ~1 000 stats more,
        // once, not per step (not yet understood; docs/status.md). Work
        // that grows with the repository per step shows in both.
        counts.push(runs.iter().copied().min().unwrap_or(u64::MAX));
        assert_eq!(sandbox.read("steps.txt").lines().count(), 1 + 2 * steps, "every command ran");
    }
    let per_step = counts[1].saturating_sub(counts[0]) / 5;
    assert!(per_step < 300, "{per_step} stats per extra step ({counts:?}) in 6 000 files");
}

#[tokio::test]
async fn the_first_checkpoint_of_a_large_workspace_is_announced() {
    let sandbox = Sandbox::new();
    commit_empty_files(&sandbox, 10_000);
    let steps = [shell("echo x >> notes.txt"), Step::Answer("done".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), &["--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let progress: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["type"] == "progress")
        .map(|event| event["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        progress.first().is_some_and(|first| first.starts_with(
            "taking the first undo checkpoint of this workspace (10000 tracked files)"
        )),
        "{progress:?}"
    );
    assert!(
        progress.last().is_some_and(|last| last.starts_with("undo checkpoint taken in")),
        "{progress:?}"
    );
}

#[tokio::test]
async fn a_writing_session_reads_each_folder_once() {
    // 600 folders. The jail's nested `.git` search and the undo watcher
    // both need every folder; they share one walk, and the second
    // session's `git status` reads none (git's untracked cache). Before,
    // each walked the tree on its own: two reads a folder, plus the
    // fingerprint's bounded walk (2 000 files) before the first command.
    let sandbox = Sandbox::new();
    commit_empty_files(&sandbox, 6000);
    let server = scripted_model(Wire::Chat, &writing_steps(1)).await;
    let output = exec(&sandbox, &server.uri(), &[]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let server = scripted_model(Wire::Chat, &writing_steps(3)).await;
    let uri = format!("{}/v1", server.uri());
    let args = [
        "exec",
        "--full-auto",
        "--provider",
        "openai-chat",
        "--model",
        "m",
        "--base-url",
        &uri,
        "a",
    ];
    // A folder read is two calls: its entries, then the end.
    let reads = count_syscalls(&sandbox, &args, &["getdents64", "getdents"]) / 2;
    assert_eq!(sandbox.read("steps.txt").lines().count(), 4, "every command ran");
    assert!(reads < 1000, "{reads} folder reads for 600 folders");
}

#[tokio::test]
async fn a_writing_session_keeps_nested_git_folders_read_only_ignored_ones_too() {
    let sandbox = Sandbox::new();
    sandbox.write("vendor/lib/.git/config", "[core]\n");
    sandbox.write("build/dep/.git/config", "[core]\n");
    // What the repository hides from policy, which reads only the command.
    sandbox.write(
        "tools/setup.sh",
        "for d in vendor/lib build/dep; do echo '[core] fsmonitor = touch pwned' >> $d/.git/config; done\n",
    );
    sandbox.write(".gitignore", "build/\n");
    sandbox.write("a.txt", "a\n");
    git(&sandbox.repo, &["add", "-A"]);
    git(&sandbox.repo, &["commit", "-qm", "start"]);
    // The first session searches alone; the second one's search is also
    // the watcher's walk, over the folder listings the first one kept.
    for content in ["x", "y"] {
        let command = format!("printf {content} > a.txt; sh tools/setup.sh; true");
        let steps = [shell(&command), Step::Answer("done".into())];
        let server = scripted_model(Wire::Chat, &steps).await;
        let output = exec(&sandbox, &server.uri(), &[]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        assert_eq!(sandbox.read("a.txt"), content, "the command ran");
        assert_eq!(sandbox.read("vendor/lib/.git/config"), "[core]\n");
        assert_eq!(sandbox.read("build/dep/.git/config"), "[core]\n", "ignored, still protected");
    }
    let undo = sandbox.keel().arg("undo").output().unwrap();
    assert_eq!(undo.status.code(), Some(0), "{}", String::from_utf8_lossy(&undo.stderr));
    assert_eq!(sandbox.read("a.txt"), "x");
}
