//! The interactive TUI end to end: the real binary in a tmux pane against a
//! scripted mock model. Type a prompt, approve a command with "always",
//! see its result and a diff, see a later matching command run without
//! asking, interrupt a long command with Esc, quit with Ctrl+D. Every step
//! waits on what the pane shows (polled with a deadline), never on a timer.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

pub(super) use super::tmux_support::{DEADLINE, Pane, launch, shell_quote};

/// Waits until process `pid` is gone or a zombie (killed, not yet reaped).
fn wait_until_dead(pid: &str) {
    let started = Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the command name in parentheses.
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next());
        if matches!(state, None | Some("Z") | Some("X")) {
            return;
        }
        assert!(started.elapsed() < DEADLINE, "process {pid} still runs: {stat}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_prompt_on_the_command_line_is_sent_at_once() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Hi from the **model**.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "'say hi'");
    let screen = pane.wait_for(&["› say hi", "Hi from the model.", "Ask keel"]);
    assert!(screen.contains("↑100 ↓20"), "usage not shown:\n{screen}");
    pane.keys(&["C-c"]);
    pane.wait_for(&["press Ctrl+C again to quit"]);
    pane.keys(&["C-c"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_always_see_a_diff_interrupt_and_quit() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\nsecond line\n");
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "mkdir -p out && echo hello from shell"}))],
        },
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "notes.txt"}))] },
        Step::Calls {
            text: Some("Now the edit.".into()),
            calls: vec![call(
                "edit_file",
                json!({"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}),
            )],
        },
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "mkdir -p out2 && echo hello again"}))],
        },
        Step::Answer("All **tidy**.".into()),
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "sleep 30"}))] },
        Step::Answer("unreachable".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);

    pane.type_text("tidy up");
    pane.keys(&["Enter"]);
    pane.wait_for(&[
        "Allow shell?",
        "$ mkdir -p out && echo hello from shell",
        "[2/a] yes, always for `mkdir`",
    ]);
    pane.keys(&["a"]);

    pane.wait_for(&["Allow edit_file?", "-alpha", "+beta"]);
    pane.keys(&["y"]);
    let screen = pane.wait_for(&["All tidy."]);
    assert!(screen.contains("hello from shell"), "{screen}");
    assert!(screen.contains("✓ edit_file notes.txt"), "{screen}");
    assert!(
        screen.contains("1   │-alpha") && screen.contains("  1 │+beta"),
        "no numbered diff:\n{screen}"
    );
    // The second `mkdir …` ran under the "always" answer, unasked.
    assert!(screen.contains("✓ shell mkdir -p out2 && echo hello again"), "{screen}");
    assert!(!screen.contains("Allow shell?"), "{screen}");
    assert_eq!(sandbox.read("notes.txt"), "beta\nsecond line\n");

    // `sleep` only reads: it runs unasked, as a read (a spinner on its cell).
    pane.type_text("wait for it");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for(&["shell sleep 30", "Esc to stop"]);
    assert!(!screen.contains("Allow shell?"), "{screen}");
    let started = Instant::now();
    pane.keys(&["Escape"]);
    let screen = pane.wait_for(&["interrupted", "Ask keel"]);
    assert!(started.elapsed() < Duration::from_secs(10), "the sleep was not stopped");
    assert!(screen.contains("✗ shell sleep 30"), "{screen}");

    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let log = sandbox.only_log();
    let turn = log.iter().rev().find(|line| line["type"] == "turn_completed").unwrap();
    assert_eq!(turn["outcome"], "interrupted");
    assert_eq!(log.last().unwrap()["type"], "session_ended", "quitting ends the session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_restores_the_terminal() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("unused".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    let out = pane.tmux(&["display-message", "-p", "-t", "keel", "#{pane_pid}"], &[]);
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(comm.trim(), "keel", "the pane runs keel itself");
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    assert_eq!(pane.wait_exit(), 143, "128 + SIGTERM, as documented");
    // Back on the normal screen: the TUI's frame is gone, the exit note is there.
    let screen = pane.screen();
    assert!(!screen.contains("Ask keel") && screen.contains(".jsonl"), "{screen}");
}

/// Issue 14: a closed terminal (SIGHUP) during a command kills the command's
/// whole process group, records the turn as interrupted and ends the session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_during_a_command_kills_it_and_ends_the_session() {
    let sandbox = Sandbox::new();
    let marker = format!("KEEL_TUI_SIGNAL_TEST={}", std::process::id());
    let command = format!("export {marker}; sleep 60 & sleep 60");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] },
        Step::Answer("unreachable".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "'wait for it'");
    pane.wait_for(&["Allow shell?"]);
    pane.keys(&["y"]);
    let marked = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter(|entry| {
                std::fs::read(entry.path().join("environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == marker.as_bytes()))
            })
            .map(|entry| entry.file_name().to_string_lossy().into_owned())
            .collect()
    };
    let started = Instant::now();
    while marked().len() < 2 {
        assert!(started.elapsed() < DEADLINE, "the command never started:\n{}", pane.screen());
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = pane.tmux(&["display-message", "-p", "-t", "keel", "#{pane_pid}"], &[]);
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    assert_eq!(pane.wait_exit(), 129, "128 + SIGHUP:\n{}", pane.screen());
    assert_eq!(marked(), Vec::<String>::new(), "a process of the call survived");
    let log = sandbox.only_log();
    let turn = log.iter().rev().find(|line| line["type"] == "turn_completed").unwrap();
    assert_eq!(turn["outcome"], "interrupted");
    assert_eq!(log.last().unwrap()["type"], "session_ended");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keel_resume_picks_a_session_and_continues_it() {
    let sandbox = Sandbox::new();
    let steps = [Step::Answer("Hi there.".into()), Step::Answer("Back again.".into())];
    let server = scripted_model(Wire::Chat, &steps).await;
    let first = launch(&sandbox, &server.uri(), "'say hi'");
    first.wait_for(&["Hi there.", "Ask keel"]);
    first.keys(&["C-d"]);
    assert_eq!(first.wait_exit(), 0, "{}", first.screen());
    drop(first);

    let pane = launch(&sandbox, &server.uri(), "resume");
    pane.wait_for(&["Resume a session (1 in this folder)", "say hi", "Enter open"]);
    pane.keys(&["Enter"]);
    // The resumed session: its history, then the status line.
    let screen = pane.wait_for(&["› say hi", "Hi there.", "sandbox", "Ask keel"]);
    assert!(screen.contains(" m · ask"), "{screen}");
    pane.type_text("/help");
    pane.keys(&["Enter"]);
    pane.wait_for(&["/compact [focus]"]);
    pane.type_text("and again");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Back again."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let log = sandbox.only_log();
    assert!(log.iter().any(|line| line["type"] == "session_resumed"), "one log, appended to");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_resume_is_an_overlay_esc_returns_enter_opens_the_picked_one() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Answer("Hi there.".into()),
        Step::Answer("Still here.".into()),
        Step::Answer("Back again.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let first = launch(&sandbox, &server.uri(), "'say hi'");
    first.wait_for(&["Hi there.", "Ask keel"]);
    first.keys(&["C-d"]);
    assert_eq!(first.wait_exit(), 0, "{}", first.screen());
    drop(first);

    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("/resume");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Resume a session (1 in this folder)", "say hi", "Esc back to this session"]);
    // Esc returns to the live session, which still answers.
    pane.keys(&["Escape"]);
    pane.wait_for(&["Ask keel"]);
    pane.type_text("still there?");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Still here."]);
    pane.type_text("/resume");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Resume a session (1 in this folder)", "say hi"]);
    pane.keys(&["Enter"]);
    pane.wait_for(&["› say hi", "Hi there.", "resumed", "Ask keel"]);
    pane.type_text("and again");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Back again."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let logs = std::fs::read_dir(sandbox.home.join("sessions")).unwrap().count();
    assert_eq!(logs, 2, "the resumed session appends to its own log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untrusted_project_with_rules_asks_once_for_trust() {
    let sandbox = Sandbox::new();
    sandbox.write(".keel/rules/team.rules", "prefix_rule(pattern=[\"ls\"], decision=\"allow\")\n");
    let server = scripted_model(Wire::Chat, &[Step::Answer("unused".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Trust this project?", ".keel/rules/", "[y] trust it"]);
    pane.keys(&["y"]);
    pane.wait_for(&["trusted this project", "Ask keel"]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    drop(pane);
    let again = launch(&sandbox, &server.uri(), "");
    let screen = again.wait_for(&["Ask keel", "sandbox"]);
    assert!(!screen.contains("Trust this project?"), "asked again:\n{screen}");
    again.keys(&["C-d"]);
    assert_eq!(again.wait_exit(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_review_edit_in_editor_then_approve_then_auto() {
    let sandbox = Sandbox::new();
    let plan = "# Rename\n\n1. write a.txt\n2. tell the callers\n";
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": plan}))],
        },
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "a.txt", "content": "done\n"}))],
        },
        Step::Answer("Implemented.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let keel = assert_cmd::cargo::cargo_bin("keel");
    // The "editor" rewrites the plan file in place, as a user would, and
    // notes the environment it was given (no credentials may reach it).
    let editor_env = sandbox.home.join("editor-env.txt");
    let editor = sandbox.home.join("editor.sh");
    std::fs::write(
        &editor,
        format!("#!/bin/sh\nenv > {}\nsed -i s/callers/everyone/ \"$1\"\n", editor_env.display()),
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let command = format!(
        "env -i PATH={} HOME={} KEEL_HOME={} TERM=xterm-256color OPENAI_API_KEY=sk-editor-canary \
         EDITOR={} {} --provider openai-chat --base-url {} --model m",
        shell_quote(&std::env::var("PATH").unwrap_or_default()),
        shell_quote(&sandbox.home.display().to_string()),
        shell_quote(&sandbox.home.display().to_string()),
        shell_quote(&editor.display().to_string()),
        shell_quote(&keel.display().to_string()),
        shell_quote(&format!("{}/v1", server.uri())),
    );
    let pane = Pane::start(&sandbox.repo, &command);
    pane.wait_for(&["Ask keel"]);
    pane.type_text("/plan");
    pane.keys(&["Enter"]);
    pane.wait_for(&["mode plan"]);
    pane.type_text("rename it");
    pane.keys(&["Enter"]);
    pane.wait_for(&["Plan: Rename", "tell the callers", "[A] approve, then auto"]);
    pane.keys(&["e"]);
    pane.wait_for(&["tell the everyone", "edited ·"]);
    let seen = std::fs::read_to_string(&editor_env).unwrap();
    assert!(seen.contains("KEEL_HOME=") && !seen.contains("sk-editor-canary"), "{seen}");
    pane.keys(&["A"]);
    let screen = pane.wait_for(&["Implemented.", "mode auto"]);
    assert!(screen.contains("✓ write_file a.txt"), "{screen}");
    assert!(!screen.contains("Allow write_file?"), "auto mode asked:\n{screen}");
    assert_eq!(sandbox.read("a.txt"), "done\n");
    let plans = sandbox.repo.join(".keel").join("plans");
    let saved: Vec<_> = std::fs::read_dir(&plans).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(saved.len(), 1);
    assert!(std::fs::read_to_string(&saved[0]).unwrap().contains("tell the everyone"));
    // The approval told the model to re-read the edited file.
    let log = sandbox.only_log();
    let approval = log
        .iter()
        .find(|line| {
            line["type"] == "tool_call_finished"
                && line["result"]["output"].as_str().is_some_and(|o| o.contains("plan approved"))
        })
        .unwrap_or_else(|| panic!("no plan result in {log:#?}"));
    let output = approval["result"]["output"].as_str().unwrap();
    assert!(output.contains("edited the plan") && output.contains(".keel/plans/"), "{output}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_approval_is_asked_again_after_keel_resume_last() {
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "echo resumed-ok > out.txt"}))],
        },
        Step::Answer("Done after the resume.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let first = launch(&sandbox, &server.uri(), "'write out.txt'");
    first.wait_for(&["Allow shell?", "$ echo resumed-ok > out.txt"]);
    // Killed while the approval is open: nothing ran, nothing was answered.
    let out = first.tmux(&["display-message", "-p", "-t", "keel", "#{pane_pid}"], &[]);
    let pid = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(Command::new("kill").args(["-KILL", &pid]).status().unwrap().success());
    // Dead is enough: tmux sometimes leaves the killed child a zombie for a
    // long while before it marks the pane dead, so the process is watched.
    wait_until_dead(&pid);
    drop(first);
    assert!(!sandbox.repo.join("out.txt").exists());

    let pane = launch(&sandbox, &server.uri(), "resume --last");
    pane.wait_for(&["› write out.txt", "Allow shell?", "$ echo resumed-ok > out.txt"]);
    pane.keys(&["y"]);
    pane.wait_for(&["Done after the resume.", "Ask keel"]);
    assert_eq!(sandbox.read("out.txt"), "resumed-ok\n");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_diff_and_compact_reach_the_session() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&sandbox.repo)
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["add", "notes.txt"]);
    git(&["commit", "-qm", "notes"]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "notes.txt"}))] },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}),
            )],
        },
        Step::Answer("Edited.".into()),
        // The summary `/compact` asks the model for.
        Step::Answer("The user had notes.txt edited from alpha to beta.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "'edit the notes'");
    pane.wait_for(&["Allow edit_file?"]);
    pane.keys(&["y"]);
    pane.wait_for(&["Edited.", "Ask keel"]);
    pane.type_text("/diff");
    pane.keys(&["Enter"]);
    pane.wait_for(&["✓ git diff", "│-alpha", "│+beta"]);
    pane.type_text("/compact the notes");
    pane.keys(&["Enter"]);
    pane.wait_for(&["context compacted (manual)"]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let log = sandbox.only_log();
    assert!(log.iter().any(|line| line["type"] == "compaction"), "compaction recorded");
}

/// Issue 13 through the TUI's own start: a repository whose git config
/// names commands (fsmonitor, external diff) runs none of them, neither at
/// start nor for `/diff`, and an untrusted config's ignored keys are said
/// in one line once the trust question is answered "no".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_repository_runs_nothing_when_the_tui_starts() {
    let sandbox = Sandbox::new();
    let canary = super::canary::Canary::new("tui-start");
    sandbox.write("notes.txt", "alpha\n");
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&sandbox.repo)
            .status()
            .unwrap();
        assert!(status.success());
    };
    git(&["add", "notes.txt"]);
    git(&["commit", "-qm", "notes"]);
    git(&["config", "core.fsmonitor", &format!("{}; echo", canary.trap("fsmonitor"))]);
    git(&["config", "diff.external", &canary.trap("external-diff")]);
    sandbox.write("notes.txt", "beta\n");
    sandbox.write(".keel/config.toml", "model = \"project-model\"\nmax_steps = 1\n");
    let server = scripted_model(Wire::Chat, &[Step::Answer("unused".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Trust this project?", ".keel/config.toml"]);
    pane.keys(&["n"]);
    pane.wait_for(&["config.toml is not trusted", "model, max_steps", "Ask keel"]);
    pane.type_text("/diff");
    pane.keys(&["Enter"]);
    pane.wait_for(&["│-alpha", "│+beta"]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    canary.assert_quiet("the TUI's start and /diff");
}

/// Issue 14: `keel resume ID` of a session another keel is running refuses
/// (before the screen switches) naming the holder, exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resuming_a_live_session_is_refused() {
    use std::io::{BufRead, BufReader};
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "sleep 60"}))] },
        Step::Answer("unreachable".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let mut holder = Command::new(assert_cmd::cargo::cargo_bin("keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .arg("exec")
        .args(Model::chat(&server).flags())
        .args(["--json", "--full-auto", "wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(holder.stdout.take().unwrap());
    let mut id = None;
    loop {
        let mut line = String::new();
        assert!(reader.read_line(&mut line).unwrap() > 0, "keel ended early");
        let value = super::support::exec_line(&line);
        id = id.or_else(|| value["session_id"].as_str().map(str::to_owned));
        if value["type"] == "item_started" {
            break;
        }
    }
    let id = id.expect("the session announced its id");
    let pane = launch(&sandbox, &server.uri(), &format!("resume {id}"));
    assert_eq!(pane.wait_exit(), 1, "{}", pane.screen());
    let screen = pane.screen();
    assert!(screen.contains(&format!("(pid {} on host", holder.id())), "{screen}");
    let _ = Command::new("kill").args(["-TERM", &holder.id().to_string()]).status();
    assert_eq!(holder.wait().unwrap().code(), Some(143));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_changed_files_without_a_passing_check_ends_saying_unverified() {
    let sandbox = Sandbox::new();
    let write = call(
        "write_file",
        json!({"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
    );
    let steps = [
        Step::Calls { text: None, calls: vec![write] },
        Step::Answer("Added add() to calc.py.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "--full-auto 'add an add function'");
    let screen =
        pane.wait_for(&["Added add() to calc.py.", "unverified: files changed", "Ask keel"]);
    assert!(screen.contains("no check"), "the reason is missing:\n{screen}");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// A trusted project's custom command in the TUI: listed in the slash
/// popup with its argument hint, typed with its arguments, sent expanded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_command_is_offered_and_sent_expanded() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".keel/commands/fix.md",
        "---\ndescription: Fix a bug\nargument-hint: [what]\n---\nFix this bug: $ARGUMENTS.\n",
    );
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let server = scripted_model(Wire::Chat, &[Step::Answer("Fixed it.".into())]).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("/fi");
    pane.wait_for(&["/fix", "[what]  Fix a bug"]);
    pane.type_text("x the login bug");
    pane.keys(&["Enter"]);
    pane.wait_for(&["› /fix the login bug", "Fixed it."]);
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
    let bodies = super::support::request_bodies(&server).await;
    let user = super::routed_model::first_user_of(&bodies[0]);
    assert_eq!(user, "Fix this bug: the login bug.");
}

/// Review S1: after a PreToolUse hook rewrote a command and the sandbox
/// blocked the rewrite, the unsandboxed re-run offered is the rewrite's:
/// the question shows the command that would run, and a yes runs that,
/// never the model's original command, which the hook had replaced (main
/// asked about and re-ran the original outside the sandbox).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rerun_offer_after_a_hook_rewrite_runs_the_rewrite() {
    let outside = tempfile::tempdir_in(super::policy_sandbox::outside_temp()).unwrap();
    let target = outside.path().join("escaped");
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    let rules = "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n";
    std::fs::write(sandbox.home.join("rules/user.rules"), rules).unwrap();
    let rewritten = format!("touch {}", target.display());
    let hook = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"command": rewritten},
    }});
    let toml = format!(
        "[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \
         \"command\"\ncommand = {:?}\n",
        format!("cat > /dev/null; echo '{hook}'")
    );
    std::fs::write(sandbox.home.join("config.toml"), toml).unwrap();
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "touch ORIGINAL-7"}))],
        },
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("touch it");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for(&["outside the sandbox?"]);
    assert!(!screen.contains("$ touch ORIGINAL-7"), "asked about the replaced call:\n{screen}");
    assert!(screen.contains(&format!("$ {rewritten}")), "not asked about the rewrite:\n{screen}");
    pane.keys(&["y"]);
    pane.wait_for(&["Done."]);
    assert!(!sandbox.repo.join("ORIGINAL-7").exists(), "the replaced call ran");
    assert!(target.exists(), "the approved re-run did not run the rewrite");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// Review S7: a PreToolUse hook's "ask" reaches the user on every call it
/// asks about, whatever was answered "always" before. main's TUI answered
/// the second question itself after "yes, always for every `write_file`
/// call" at the first, so the hook that asks before each write was never
/// heard again (and its reason was never shown: the policy's was).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hooks_ask_is_put_to_the_user_after_an_always() {
    let sandbox = Sandbox::new();
    let ask = r#"cat > /dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"HOOK-ASKS-9"}}'"#;
    let toml = format!(
        "[[hooks.PreToolUse]]\nmatcher = \"Write\"\n[[hooks.PreToolUse.hooks]]\ntype = \
         \"command\"\ncommand = {ask:?}\n"
    );
    std::fs::write(sandbox.home.join("config.toml"), toml).unwrap();
    let write = |path: &str| call("write_file", json!({"path": path, "content": "x\n"}));
    let steps = vec![
        Step::Calls { text: None, calls: vec![write("one.txt")] },
        Step::Calls { text: None, calls: vec![write("two.txt")] },
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("write them");
    pane.keys(&["Enter"]);
    pane.wait_for(&[
        "Allow write_file?",
        "HOOK-ASKS-9",
        "[2/a] yes, always for every `write_file`",
    ]);
    pane.keys(&["a"]);
    let screen = pane.wait_for(&["Allow write_file?", "two.txt", "HOOK-ASKS-9"]);
    assert!(!sandbox.repo.join("two.txt").exists(), "written unasked:\n{screen}");
    pane.keys(&["y"]);
    pane.wait_for(&["Done."]);
    assert!(sandbox.repo.join("two.txt").exists());
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// Issue 34 High 1: main cut a long command at 16 rows with no marker and
/// `y` ran the 21st line unseen. Now the dialog says what is below, and
/// the first `y` shows it instead of answering; the second runs it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_command_is_shown_to_its_last_line_before_y_runs_it() {
    let sandbox = Sandbox::new();
    let mut command: String = (1..=20).map(|i| format!("echo step-{i}\n")).collect();
    command.push_str("touch LINE-21");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": command}))] },
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("run it");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for(&["Allow shell?", "rows 1–16 of 21; 5 more below"]);
    // (The reason names the command; the body row is what was hidden.)
    assert!(!screen.contains("│  touch LINE-21"), "{screen}");
    pane.keys(&["y"]);
    pane.wait_for(&["│  touch LINE-21", "rows 6–21 of 21"]);
    assert!(!sandbox.repo.join("LINE-21").exists(), "the first y ran it");
    pane.keys(&["y"]);
    pane.wait_for(&["Done."]);
    assert!(sandbox.repo.join("LINE-21").exists(), "the second y did not run it");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}

/// Issue 34 High 1, the second dialog: "run it once more outside the
/// sandbox?" showed the same 16 rows with no marker, so a 21st line ran
/// unconfined after two `y`s unseen. The re-run offer pages like the first
/// dialog: it says what is below, the first `y` shows it, the second runs
/// the command outside the sandbox.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rerun_offer_of_a_long_command_shows_its_last_line_before_y_runs_it() {
    let outside = tempfile::tempdir_in(super::policy_sandbox::outside_temp()).unwrap();
    let target = outside.path().join("LINE-21");
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    let rules = "prefix_rule(pattern=[\"touch\"], decision=\"allow\")\n";
    std::fs::write(sandbox.home.join("rules/user.rules"), rules).unwrap();
    let mut command: String = (1..=20).map(|i| format!("echo step-{i}\n")).collect();
    command.push_str(&format!("touch {}", target.display()));
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": command}))] },
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let pane = launch(&sandbox, &server.uri(), "");
    pane.wait_for(&["Ask keel"]);
    pane.type_text("run it");
    pane.keys(&["Enter"]);
    let screen = pane.wait_for(&["outside the sandbox?", "rows 1–16 of 21; 5 more below"]);
    assert!(!screen.contains(&format!("│  touch {}", target.display())), "{screen}");
    assert!(!target.exists(), "the sandboxed run wrote outside the workspace");
    pane.keys(&["y"]);
    pane.wait_for(&["│  touch ", "rows 6–21 of 21"]);
    assert!(!target.exists(), "the first y ran it outside the sandbox");
    pane.keys(&["y"]);
    pane.wait_for(&["Done."]);
    assert!(target.exists(), "the second y did not run it outside the sandbox");
    pane.keys(&["C-d"]);
    assert_eq!(pane.wait_exit(), 0, "{}", pane.screen());
}
