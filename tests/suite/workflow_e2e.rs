//! The workflow (issue 6) through the real `keel exec` binary against a
//! scripted model: phases, the verification gate, plan-first refusals and
//! `--plan-only`.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, scripted_model};
use super::wire::{Step, Wire, call};

pub(super) fn phase(to: &str) -> Step {
    Step::Calls { text: None, calls: vec![call("set_phase", json!({"phase": to, "note": "next"}))] }
}

pub(super) fn shell(command: &str) -> Step {
    Step::Calls { text: None, calls: vec![call("shell", json!({"command": command}))] }
}

pub(super) fn typo_edit() -> Step {
    Step::Calls {
        text: None,
        calls: vec![call(
            "edit_file",
            json!({"path": "hello.txt", "old_string": "helo", "new_string": "hello"}),
        )],
    }
}

pub(super) fn read_hello() -> Step {
    Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "hello.txt"}))] }
}

/// A repository with a typo in `hello.txt` and a `make test` that passes
/// once it is fixed.
pub(super) fn typo_project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    sandbox.write("Makefile", "test:\n\tgrep -q 'hello world' hello.txt\n");
    sandbox
}

/// The whole small fix: read, implement, verify with `make test`,
/// deliver, then `answer`.
pub(super) fn typo_fix_steps(answer: &str) -> Vec<Step> {
    vec![
        read_hello(),
        phase("implement"),
        typo_edit(),
        phase("verify"),
        shell("make test"),
        phase("deliver"),
        Step::Answer(answer.into()),
    ]
}

/// Read, fix the typo, verify with `make test`, deliver, answer.
pub(super) fn fix_verify_deliver() -> Vec<Step> {
    vec![
        read_hello(),
        typo_edit(),
        phase("verify"),
        shell("make test"),
        phase("deliver"),
        Step::Answer("Fixed and verified.".into()),
    ]
}

/// Runs `keel exec --json` with `flags` against `steps`; returns the exit
/// code, the stdout lines and the session log.
async fn exec(sandbox: &Sandbox, steps: &[Step], flags: &[&str]) -> (i32, Vec<Value>, Vec<Value>) {
    let server = scripted_model(Wire::Chat, steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server).named("mock-model"), &["exec", "--json"])
        .args(flags)
        .arg("Fix the typo in hello.txt")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let code = output.status.code().unwrap_or(-1);
    assert!(code == 0, "exit {code}: {stderr}");
    (code, json_lines(&output.stdout), sandbox.only_log())
}

pub(super) fn phase_moves(log: &[Value]) -> Vec<(String, String)> {
    log.iter()
        .filter(|line| line["type"] == "phase_changed")
        .map(|line| (line["from"].as_str().unwrap().into(), line["to"].as_str().unwrap().into()))
        .collect()
}

/// The results the model read, in order: (tool result text, is_error).
pub(super) fn results(log: &[Value]) -> Vec<(String, bool)> {
    log.iter()
        .filter(|line| line["type"] == "tool_call_finished")
        .map(|line| {
            let result = &line["result"];
            (result["output"].as_str().unwrap_or("").to_owned(), result["is_error"] == true)
        })
        .collect()
}

pub(super) fn moves(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
}

#[tokio::test]
async fn a_typo_fix_goes_orient_implement_verify_deliver_without_a_plan() {
    let sandbox = typo_project();
    let steps = typo_fix_steps("Fixed the typo; make test passes.");
    let (_, lines, log) = exec(&sandbox, &steps, &["--full-auto"]).await;
    assert_eq!(sandbox.read("hello.txt"), "hello world\n");
    assert_eq!(
        phase_moves(&log),
        moves(&[("orient", "implement"), ("implement", "verify"), ("verify", "deliver")])
    );
    assert!(results(&log).iter().all(|(_, is_error)| !is_error), "{:?}", results(&log));
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(log.iter().filter(|line| line["type"] == "plan_updated").count(), 0);
}

#[tokio::test]
async fn deliver_without_passing_verification_is_refused_then_unverified_after_the_limit() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    sandbox.write("Makefile", "test:\n\tfalse\n");
    let steps = vec![
        read_hello(),
        phase("implement"),
        typo_edit(),
        phase("verify"),
        phase("deliver"),
        shell("make test"),
        shell("make test"),
        phase("deliver"),
        shell("make test"),
        phase("deliver"),
        Step::Answer("The tests keep failing; delivering unverified.".into()),
    ];
    let (_, lines, log) = exec(&sandbox, &steps, &["--full-auto"]).await;
    let results = results(&log);
    let deliveries: Vec<&(String, bool)> =
        results.iter().filter(|(text, _)| text.contains("deliver")).collect();
    assert_eq!(deliveries.len(), 3, "{results:?}");
    assert!(deliveries[0].1 && deliveries[1].1, "refused before the limit: {deliveries:?}");
    assert!(!deliveries[2].1 && deliveries[2].0.contains("NOT verified"), "{deliveries:?}");
    assert_eq!(phase_moves(&log).last(), Some(&("verify".to_owned(), "deliver".to_owned())));
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "unverified", "{result}");
}

#[tokio::test]
async fn a_write_before_the_plan_is_approved_is_refused_and_nothing_changes() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let steps = vec![
        read_hello(),
        typo_edit(),
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "new.txt", "content": "x"}))],
        },
        Step::Answer("I need a plan first.".into()),
    ];
    let (_, _, log) = exec(&sandbox, &steps, &["--full-auto", "--approve-plan"]).await;
    assert_eq!(sandbox.read("hello.txt"), "helo world\n");
    assert!(!sandbox.repo.join("new.txt").exists());
    let results = results(&log);
    assert_eq!(results.len(), 3);
    for (text, is_error) in &results[1..] {
        assert!(*is_error && text.contains("plan is required and not yet approved"), "{text}");
    }
    assert!(phase_moves(&log).is_empty(), "{:?}", phase_moves(&log));
    let started = log.iter().filter(|line| line["type"] == "tool_call_started").count();
    assert_eq!(started, 1, "only the read ran");
}

#[tokio::test]
async fn plan_only_returns_plan_ready_with_the_plan() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let plan = "## Steps\n1. Fix `helo` in hello.txt\n## Verification\nmake test";
    let steps = vec![
        read_hello(),
        phase("plan"),
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": plan}))],
        },
        Step::Answer("never asked".into()),
    ];
    let (_, lines, log) = exec(&sandbox, &steps, &["--plan-only"]).await;
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "plan_ready", "{result}");
    assert_eq!(result["final_text"], plan);
    let saved = result["plan_path"].as_str().unwrap();
    assert!(saved.contains("/.keel/plans/"), "{saved}");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), plan);
    assert_eq!(sandbox.read("hello.txt"), "helo world\n");
    let plans: Vec<&Value> = log.iter().filter(|line| line["type"] == "plan_updated").collect();
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["plan"]["status"], "submitted");
    assert_eq!(plans[0]["plan"]["text"], plan);
    assert_eq!(plans[0]["plan"]["path"], saved);
    assert_eq!(log.iter().filter(|line| line["type"] == "model_response").count(), 3);
}

#[tokio::test]
async fn approve_plan_approves_within_the_run_and_the_change_goes_through() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let steps = vec![
        read_hello(),
        phase("plan"),
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": "1. fix the typo"}))],
        },
        phase("implement"),
        typo_edit(),
        Step::Answer("Fixed.".into()),
    ];
    let (_, lines, log) = exec(&sandbox, &steps, &["--full-auto", "--approve-plan"]).await;
    assert_eq!(sandbox.read("hello.txt"), "hello world\n");
    let statuses: Vec<&Value> = log
        .iter()
        .filter(|line| line["type"] == "plan_updated")
        .map(|line| &line["plan"]["status"])
        .collect();
    assert_eq!(statuses, vec!["submitted", "approved"]);
    let paths: Vec<&Value> = log
        .iter()
        .filter(|line| line["type"] == "plan_updated")
        .map(|line| &line["plan"]["path"])
        .collect();
    assert!(paths[0].as_str().is_some_and(|p| p.ends_with("-r1.md")), "{paths:?}");
    assert_eq!(paths[0], paths[1]);
    assert_eq!(lines.last().unwrap()["status"], "unverified");
}

#[tokio::test]
async fn plan_only_then_resume_with_approve_plan_completes_in_a_second_process() {
    let sandbox = typo_project();
    let planning = vec![
        read_hello(),
        phase("plan"),
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": "1. fix the typo"}))],
        },
    ];
    let (_, lines, _) = exec(&sandbox, &planning, &["--plan-only"]).await;
    let first = lines.last().unwrap();
    assert_eq!(first["status"], "plan_ready", "{first}");
    let id = first["session_id"].as_str().unwrap().to_owned();

    let implementing = [vec![phase("implement")], fix_verify_deliver()].concat();
    let server = scripted_model(Wire::Chat, &implementing).await;
    let output = sandbox.run(
        &Model::chat(&server).named("mock-model"),
        &["exec", "--json", "--resume", &id, "--approve-plan", "--full-auto"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(sandbox.read("hello.txt"), "hello world\n");
    let log = sandbox.only_log();
    let statuses: Vec<&Value> = log
        .iter()
        .filter(|line| line["type"] == "plan_updated")
        .map(|line| &line["plan"]["status"])
        .collect();
    assert_eq!(statuses, vec!["submitted", "approved"]);
    assert_eq!(
        phase_moves(&log),
        moves(&[
            ("orient", "plan"),
            ("plan", "implement"),
            ("implement", "verify"),
            ("verify", "deliver")
        ])
    );
}

/// Phase, approved plan and tasks survive a SIGKILL during implement.
#[tokio::test]
async fn killed_during_implement_resume_restores_phase_plan_and_tasks() {
    let todos = json!({"todos": [{"id": "1", "text": "fix the typo", "status": "in_progress"}]});
    let before_kill = vec![
        Step::Calls { text: None, calls: vec![call("todo_write", todos)] },
        read_hello(),
        phase("plan"),
        Step::Calls {
            text: None,
            calls: vec![call("submit_plan", json!({"plan_markdown": "1. fix the typo"}))],
        },
        phase("implement"),
        Step::Answer("unused".into()),
    ];
    let fresh = || typo_project();
    // Where the move to implement lands in the log, from a run that ends.
    let reference = fresh();
    let (_, _, log) = exec(&reference, &before_kill, &["--full-auto", "--approve-plan"]).await;
    let seq = log
        .iter()
        .find(|line| line["type"] == "phase_changed" && line["to"] == "implement")
        .map(|line| line["seq"].as_u64().unwrap())
        .unwrap();

    let sandbox = fresh();
    let server = scripted_model(Wire::Chat, &before_kill).await;
    let killed = sandbox
        .keel()
        .env("KEEL_TEST_CRASH_AFTER_SEQ", seq.to_string())
        .arg("exec")
        .args(Model::chat(&server).named("mock-model").flags())
        .args(["--json"])
        .args(["--full-auto", "--approve-plan", "Fix the typo in hello.txt"])
        .output()
        .unwrap();
    assert_ne!(killed.status.code(), Some(0), "the run was killed");

    let after = fix_verify_deliver();
    let server = scripted_model(Wire::Chat, &after).await;
    let output = sandbox.run(
        &Model::chat(&server).named("mock-model"),
        &["exec", "--json", "--full-auto", "--approve-plan", "--last"],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let result = json_lines(&output.stdout).pop().unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["tasks"][0]["status"], "in_progress", "{result}");
    assert_eq!(sandbox.read("hello.txt"), "hello world\n");
    let bodies = super::support::request_bodies(&server).await;
    let first = bodies[0].to_string();
    assert!(first.contains("Phase: implement."), "{first}");
    assert!(first.contains("[>] 1 fix the typo"), "{first}");
    let log = sandbox.only_log();
    let statuses: Vec<&Value> = log
        .iter()
        .filter(|line| line["type"] == "plan_updated")
        .map(|line| &line["plan"]["status"])
        .collect();
    assert_eq!(statuses, vec!["submitted", "approved"], "no second review after the resume");
}

/// A trusted project's `.keel/phases.toml` replaces the shipped rules; an
/// untrusted one is ignored with a warning.
#[tokio::test]
async fn a_trusted_projects_phase_rules_apply_and_an_untrusted_ones_do_not() {
    let read_only = "start = \"look\"\n[phases.look]\npurpose = \"Only look.\"\n\
                     tools = [\"read\"]\nnext = []\n";
    let steps = vec![read_hello(), typo_edit(), Step::Answer("Looked only.".into())];

    let untrusted = Sandbox::new();
    untrusted.write("hello.txt", "helo world\n");
    untrusted.write(".keel/phases.toml", read_only);
    let (_, lines, _) = exec(&untrusted, &steps, &["--full-auto"]).await;
    assert_eq!(untrusted.read("hello.txt"), "hello world\n", "shipped rules: the edit runs");
    let warned = lines.iter().any(|l| {
        l["type"] == "warning" && l["message"].as_str().unwrap_or("").contains("phases.toml")
    });
    assert!(warned, "{lines:?}");

    let trusted = Sandbox::new();
    trusted.write("hello.txt", "helo world\n");
    trusted.write(".keel/phases.toml", read_only);
    let status = trusted.keel().arg("trust").output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let (_, _, log) = exec(&trusted, &steps, &["--full-auto"]).await;
    assert_eq!(trusted.read("hello.txt"), "helo world\n", "the project's rules refuse writes");
    let refusal = &results(&log)[1];
    assert!(refusal.1 && refusal.0.contains("look phase"), "{refusal:?}");
}

/// `verify.commands` (here from a trusted project's config) counts as
/// verification.
#[tokio::test]
async fn configured_verify_commands_open_the_deliver_gate() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    sandbox.write("check.sh", "grep -q 'hello world' hello.txt\n");
    sandbox.write(".keel/config.toml", "[verify]\ncommands = [\"sh check.sh\"]\n");
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let steps = vec![
        read_hello(),
        typo_edit(),
        phase("verify"),
        shell("sh check.sh"),
        phase("deliver"),
        Step::Answer("Fixed; check.sh passes.".into()),
    ];
    let (_, lines, log) = exec(&sandbox, &steps, &["--full-auto"]).await;
    assert_eq!(sandbox.read("hello.txt"), "hello world\n");
    assert!(results(&log).iter().all(|(_, is_error)| !is_error), "{:?}", results(&log));
    assert_eq!(lines.last().unwrap()["status"], "completed");
}

/// A question that needs no change goes straight from orient to deliver.
#[tokio::test]
async fn a_question_goes_orient_to_deliver_with_no_change() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let steps = vec![
        read_hello(),
        phase("deliver"),
        Step::Answer("hello.txt says `helo world` (with a typo).".into()),
    ];
    let (_, lines, log) = exec(&sandbox, &steps, &[]).await;
    assert_eq!(phase_moves(&log), moves(&[("orient", "deliver")]));
    assert!(results(&log).iter().all(|(_, is_error)| !is_error), "{:?}", results(&log));
    assert_eq!(lines.last().unwrap()["status"], "completed");
    assert_eq!(sandbox.read("hello.txt"), "helo world\n");
}

/// A command policy proves read-only (run in the sandbox's read-only
/// jail) is a read: orient runs it without moving; one that may write
/// still moves to explore.
#[tokio::test]
async fn orient_runs_a_read_only_command_in_place_and_a_write_moves_to_explore() {
    let sandbox = typo_project();
    let steps = vec![
        shell("git log --oneline -3"),
        shell("touch x"),
        Step::Answer("Looked around.".into()),
    ];
    let (_, lines, log) = exec(&sandbox, &steps, &["--full-auto"]).await;
    assert_eq!(phase_moves(&log), moves(&[("orient", "explore")]));
    let started: Vec<&str> = log
        .iter()
        .filter(|line| line["type"] == "tool_call_started")
        .map(|line| line["call"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(started.len(), 2, "{started:?}");
    let moved = log.iter().position(|line| line["type"] == "phase_changed").unwrap();
    let first_ran = log.iter().position(|line| line["type"] == "tool_call_finished").unwrap();
    assert!(first_ran < moved, "git log ran in orient");
    assert!(sandbox.repo.join("x").exists());
    // `touch x` changed the workspace and nothing verified it.
    assert_eq!(lines.last().unwrap()["status"], "unverified");
}
