//! Issue 17 through the real `keel exec`: results that say what happened
//! (declined work is `needs_approval`, not `completed`), failed commands
//! marked as failed with their output, and model text that cannot drive
//! the terminal (issue 13). What the user reads is pinned whole
//! (`transcript`): a lost line or a changed remedy fails.

use serde_json::json;

use super::support::{Model, Sandbox, json_lines, scripted_model};
use super::transcript;
use super::wire::{Step, Wire, call};

/// The review's fix-the-bug story: read, edit, run the test, then claim
/// success.
fn fixbug_steps() -> Vec<Step> {
    vec![
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "calc.py"}))] },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "calc.py", "old_string": "a - b", "new_string": "a + b"}),
            )],
        },
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "python3 test_calc.py"}))],
        },
        Step::Answer("Fixed add() in calc.py; test_calc.py passes.".into()),
    ]
}

fn fixbug_repo() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    sandbox.write("test_calc.py", "from calc import add\nassert add(2, 3) == 5\nprint('ok')\n");
    sandbox
}

fn exec(sandbox: &Sandbox, uri: &str, extra: &[&str]) -> std::process::Output {
    sandbox.keel_on(&Model::at("openai-chat", uri), &["exec"]).args(extra).output().unwrap()
}

/// Issue 34 High 1: the needs-approval listing is what the flag would
/// allow, in full: every line of a long command (main showed the command
/// alone, an MCP call one argument), controls shown as escapes.
#[tokio::test]
async fn the_needs_approval_listing_shows_every_line_and_escapes_controls() {
    let sandbox = Sandbox::new();
    let mut command: String = (1..=20).map(|i| format!("echo step-{i}\n")).collect();
    command.push_str("touch PWNED-21 # \u{1b}]52;c;aGk=\u{7} \u{202e}");
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": command}))] },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), &["go"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(!sandbox.repo.join("PWNED-21").exists());
    assert!(stderr.contains("  shell: allow with"), "{stderr}");
    assert!(stderr.contains("    $ echo step-1\n      echo step-2\n"), "{stderr}");
    assert!(
        stderr.contains("      touch PWNED-21 # \\u{1b}]52;c;aGk=\\u{7} \\u{202e}\n"),
        "{stderr}"
    );
    assert!(!stderr.contains('\u{1b}') && !stderr.contains('\u{202e}'), "{stderr}");
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
}

/// Issue 34: a shell whose script is a process substitution, and a
/// stdin-fed shell inside `bash -c`, ran in yolo (keel could not read
/// the code they run). Now they are declined for want of an approval.
#[tokio::test]
async fn code_from_a_substitution_is_not_run_in_yolo() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![
                call("shell", json!({"command": "bash <(echo 'touch PWNED-SUB')"})),
                call("shell", json!({"command": "echo 'touch PWNED-PIPE' | bash -c sh"})),
            ],
        },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), &["--yolo", "go"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("needs approval: 2 call(s)"), "{stderr}");
    assert!(!sandbox.repo.join("PWNED-SUB").exists(), "{stderr}");
    assert!(!sandbox.repo.join("PWNED-PIPE").exists(), "{stderr}");
}

#[tokio::test]
async fn declined_work_ends_needs_approval_with_the_flag_that_allows_it() {
    let sandbox = fixbug_repo();
    let server = scripted_model(Wire::Chat, &fixbug_steps()).await;
    let output = exec(&sandbox, &server.uri(), &["fix the bug in calc.py"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "needs_approval is not success: {stderr}");
    assert_eq!(sandbox.read("calc.py"), "def add(a, b):\n    return a - b\n");
    // Each declined call shows as a call, then why it did not run; the
    // closing lines list each call with its remedy, uncut, and the flag
    // (an allow rule too, when policy suggests one narrow enough for
    // `python3 test_calc.py`: issue 17 item 4).
    insta::assert_snapshot!("declined_work_human_output", transcript::of(&output, &sandbox));

    let server = scripted_model(Wire::Chat, &fixbug_steps()).await;
    let output = exec(&sandbox, &server.uri(), &["--json", "fix the bug in calc.py"]);
    assert_eq!(output.status.code(), Some(3));
    let lines = json_lines(&output.stdout);
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "needs_approval", "{result}");
    let declined = result["declined"].as_array().unwrap();
    assert_eq!(declined.len(), 2, "{result}");
    assert_eq!(declined[0]["name"], "edit_file");
    assert_eq!(declined[0]["allow_with"], "--full-auto");
    let events: Vec<&serde_json::Value> =
        lines.iter().filter(|l| l["type"] == "approval_declined").collect();
    assert_eq!(events.len(), 2, "one event per declined call");
    assert!(lines.iter().all(|l| l["schema_version"] == 1), "every line is versioned");

    // --full-auto: the same story runs and changes the file.
    let server = scripted_model(Wire::Chat, &fixbug_steps()).await;
    let output = exec(&sandbox, &server.uri(), &["--full-auto", "--json", "fix the bug"]);
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_ne!(result["status"], "needs_approval", "{result}");
    assert_eq!(result["declined"], json!([]));
    assert_eq!(sandbox.read("calc.py"), "def add(a, b):\n    return a + b\n");
}

#[tokio::test]
async fn a_failed_command_is_a_red_cross_with_its_stderr() {
    let sandbox = Sandbox::new();
    let steps = vec![
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "cat f1.txt"}))] },
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "echo step-1"}))] },
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), &["--full-auto", "go"]);
    // The failed call's stderr under a red cross, the next call's output
    // under a tick, no model-facing framing ("exit code:").
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
}

#[tokio::test]
async fn plan_only_without_a_plan_is_not_completed() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("Nothing to plan.".into())]).await;
    let output = exec(&sandbox, &server.uri(), &["--json", "--plan-only", "plan it"]);
    assert_eq!(output.status.code(), Some(1));
    json_lines(&output.stdout);
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
}

#[tokio::test]
async fn output_to_a_missing_folder_fails_before_the_model_is_paid() {
    let sandbox = Sandbox::new();
    let server = scripted_model(Wire::Chat, &[Step::Answer("paid".into())]).await;
    let target = sandbox.home.join("no-such-dir").join("last.txt");
    let output = exec(&sandbox, &server.uri(), &["-o", target.to_str().unwrap(), "hi"]);
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
    let requests = server.received_requests().await.unwrap_or_default();
    assert!(requests.is_empty(), "the model was called");
}

/// The review's case: after a Ctrl-C'd run, `exec --last` without a
/// prompt printed the header and exited 0 with nothing done.
#[tokio::test]
async fn exec_last_after_an_interrupted_run_says_there_is_nothing_to_continue() {
    use keel::protocol::{SessionEvent, TurnOutcome, Usage};
    let sandbox = Sandbox::new();
    let mut log =
        keel::session::SessionLog::create(&sandbox.home.join("sessions"), "01a0").unwrap();
    for event in [
        SessionEvent::SessionStarted {
            session_id: "01a0".into(),
            cwd: sandbox.repo.display().to_string(),
            provider: "openai-chat".into(),
            model: "m".into(),
            keel_version: "0".into(),
            git_head: None,
            mode: None,
            parent: None,
        },
        SessionEvent::TurnStarted { turn: 1 },
        SessionEvent::UserMessage { text: "long task".into(), images: Vec::new(), queued: None },
        SessionEvent::TurnCompleted {
            turn: 1,
            outcome: TurnOutcome::Interrupted,
            usage: Usage::default(),
        },
        SessionEvent::SessionEnded { reason: "exec finished".into() },
    ] {
        log.append(event).unwrap();
    }
    drop(log);
    let server = scripted_model(Wire::Chat, &[Step::Answer("unused".into())]).await;
    let output = exec(&sandbox, &server.uri(), &["--last"]);
    assert_eq!(output.status.code(), Some(2));
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
    assert!(server.received_requests().await.unwrap_or_default().is_empty());
}

#[test]
fn json_usage_errors_from_flag_parsing_still_end_with_a_result_line() {
    let sandbox = Sandbox::new();
    let output = sandbox.keel().args(["exec", "--json", "--provider", "gemini", "x"]).output();
    let output = output.unwrap();
    assert_eq!(output.status.code(), Some(2));
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "result");
    assert_eq!(lines[0]["status"], "usage_error", "a bad flag is told apart from a dead server");
    insta::assert_snapshot!(transcript::of(&output, &sandbox));
}

/// The `error` of a usage error's result line names what is wrong, also
/// when clap puts that on a line of its own (before, the missing
/// argument was cut off: "the following required arguments were not
/// provided:").
#[test]
fn json_usage_error_names_the_missing_argument() {
    let sandbox = Sandbox::new();
    let output = sandbox.keel().args(["exec", "--json", "--model", "m"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let lines = json_lines(&output.stdout);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let error = lines[0]["error"].as_str().unwrap();
    assert!(error.contains("not provided") && error.contains("<PROMPT>"), "{error}");
    assert!(!error.contains('\n') && !error.contains("Usage:"), "one line: {error}");
}

/// The final text on a terminal (a pty from `script`) loses its control
/// sequences; through a pipe it stays exactly what the model wrote.
#[tokio::test]
async fn model_escape_sequences_never_reach_the_terminal() {
    let sandbox = Sandbox::new();
    let evil = "Done.\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b]0;pwned\x07 All clear.";
    let server = scripted_model(Wire::Chat, &[Step::Answer(evil.into())]).await;
    let keel = assert_cmd::cargo::cargo_bin("keel");
    let command = format!(
        "env -i PATH=/usr/bin:/bin HOME={home} KEEL_HOME={home} {keel} exec --provider \
         openai-chat --model m --base-url {uri}/v1 hi",
        home = sandbox.home.display(),
        keel = keel.display(),
        uri = server.uri(),
    );
    let output = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(&sandbox.repo)
        .output()
        .unwrap();
    let seen = String::from_utf8_lossy(&output.stdout);
    assert!(seen.contains("Done. All clear."), "{seen:?}");
    for bad in ["\x1b]52", "\x1b[2J", "\x1b]0;", "\x07"] {
        assert!(!seen.contains(bad), "{bad:?} reached the terminal: {seen:?}");
    }

    let server = scripted_model(Wire::Chat, &[Step::Answer(evil.into())]).await;
    let piped = exec(&sandbox, &server.uri(), &["hi"]);
    assert_eq!(String::from_utf8_lossy(&piped.stdout), format!("{evil}\n"));
}
