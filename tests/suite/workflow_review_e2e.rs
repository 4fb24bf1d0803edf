//! Plan review across processes through the real `keel exec` binary
//! (issue 6, acceptance 2): in plan mode a plan is submitted, rejected with
//! feedback (`resume ID --reject-plan`), revised, approved (`resume ID
//! --approve-plan`), implemented, verified (failing once, then passing) and
//! delivered, and the log shows each step.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};
use super::workflow_e2e::{
    moves, phase, phase_moves, read_hello, shell, typo_edit, typo_fix_steps, typo_project,
};

const FIRST_PLAN: &str = "## Steps\n1. Fix `helo` in hello.txt\n## Verification\nmake test";
const FEEDBACK: &str = "also note the fix in CHANGELOG";
const SECOND_PLAN: &str = "## Steps\n1. Fix `helo` in hello.txt\n2. Note the fix in CHANGELOG\n## Verification\nmake test";

fn submit(plan: &str) -> Step {
    Step::Calls { text: None, calls: vec![call("submit_plan", json!({"plan_markdown": plan}))] }
}

/// Runs `keel exec --json` with `args` against `steps`; returns the stdout
/// lines (the last is the `result`) and the model's request bodies.
async fn run(sandbox: &Sandbox, steps: &[Step], args: &[&str]) -> (Vec<Value>, Vec<Value>) {
    let server = scripted_model(Wire::Chat, steps).await;
    let model = Model::chat(&server).named("mock-model");
    let output = sandbox.keel_on(&model, &["exec"]).args(args).arg("--json").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines = json_lines(&output.stdout);
    // Declined work (exec cannot ask) is exit 3; everything else here ends 0.
    let declined = lines.last().is_some_and(|result| result["status"] == "needs_approval");
    assert_eq!(output.status.code(), Some(if declined { 3 } else { 0 }), "{stderr}");
    (lines, request_bodies(&server).await)
}

fn plan_reviews(log: &[Value]) -> Vec<(String, u64, String)> {
    log.iter()
        .filter(|line| line["type"] == "plan_updated")
        .map(|line| {
            let plan = &line["plan"];
            let status = match plan["feedback"].as_str() {
                Some(feedback) => format!("{}: {feedback}", plan["status"].as_str().unwrap()),
                None => plan["status"].as_str().unwrap().to_owned(),
            };
            (status, plan["revision"].as_u64().unwrap(), plan["text"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// Exit codes of the `make test` runs, in order. (The scripted model's
/// call ids repeat across processes, so each start is paired with the
/// next result of its id.)
fn verifications(log: &[Value]) -> Vec<i64> {
    log.iter()
        .enumerate()
        .filter(|(_, line)| line["type"] == "tool_call_started")
        .filter(|(_, line)| line["call"]["arguments"].as_str().unwrap().contains("make test"))
        .map(|(at, line)| {
            let id = &line["call"]["call_id"];
            let finished = log[at..]
                .iter()
                .find(|later| {
                    later["type"] == "tool_call_finished" && later["result"]["call_id"] == *id
                })
                .unwrap();
            finished["meta"]["exit_code"].as_i64().unwrap()
        })
        .collect()
}

#[tokio::test]
async fn plan_mode_story_reject_revise_approve_implement_fail_fix_verify_deliver() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    sandbox
        .write("Makefile", "test:\n\tgrep -q 'hello world' hello.txt\n\tgrep -q typo CHANGELOG\n");

    // 1. Plan mode: a write before approval is refused; the first plan is
    // submitted and the run stops for review.
    let planning = vec![read_hello(), typo_edit(), phase("plan"), submit(FIRST_PLAN)];
    let args = ["--mode", "plan", "--plan-only", "Fix the typo in hello.txt"];
    let (lines, _) = run(&sandbox, &planning, &args).await;
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "plan_ready", "{result}");
    assert_eq!(result["final_text"], FIRST_PLAN);
    let id = result["session_id"].as_str().unwrap().to_owned();
    assert_eq!(sandbox.read("hello.txt"), "helo world\n", "the early edit was refused");

    // 2. Rejected with feedback: the model reads it, stays in plan, revises.
    let revising = vec![submit(SECOND_PLAN), Step::Answer("never asked".into())];
    let (lines, bodies) =
        run(&sandbox, &revising, &["resume", &id, "--reject-plan", FEEDBACK]).await;
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "plan_ready", "{result}");
    assert_eq!(result["final_text"], SECOND_PLAN);
    let saved = result["plan_path"].as_str().unwrap();
    assert!(saved.ends_with("-r2.md"), "{saved}");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), SECOND_PLAN);
    assert_eq!(bodies.len(), 1, "the run stops after the revised plan");
    let request = bodies[0].to_string();
    assert!(request.contains(&format!("plan rejected: {FEEDBACK}")), "{request}");
    assert!(request.contains("Phase: plan."), "{request}");
    assert_eq!(sandbox.read("hello.txt"), "helo world\n", "nothing changed while planning");

    // 3. Approved: implement, verification fails, fix, passes, deliver.
    let changelog = json!({"path": "CHANGELOG", "content": "- fixed a typo in hello.txt\n"});
    let implementing = vec![
        phase("implement"),
        typo_edit(),
        phase("verify"),
        shell("make test"),
        phase("implement"),
        Step::Calls { text: None, calls: vec![call("write_file", changelog)] },
        phase("verify"),
        shell("make test"),
        phase("deliver"),
        Step::Answer("Fixed the typo and noted it in CHANGELOG; make test passes.".into()),
    ];
    let args = ["resume", &id, "--approve-plan", "--mode", "auto"];
    let (lines, bodies) = run(&sandbox, &implementing, &args).await;
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(sandbox.read("hello.txt"), "hello world\n");
    assert!(sandbox.read("CHANGELOG").contains("typo"));
    assert!(bodies[0].to_string().contains("The plan is approved"), "{}", bodies[0]);

    // The log tells the whole story.
    let log = sandbox.only_log();
    let started = log.iter().find(|line| line["type"] == "session_started").unwrap();
    assert_eq!(started["mode"], "plan");
    let reviews = plan_reviews(&log);
    let expected = vec![
        ("submitted".to_owned(), 1, FIRST_PLAN.to_owned()),
        (format!("rejected: {FEEDBACK}"), 1, FIRST_PLAN.to_owned()),
        ("submitted".to_owned(), 2, SECOND_PLAN.to_owned()),
        ("approved".to_owned(), 2, SECOND_PLAN.to_owned()),
    ];
    assert_eq!(reviews, expected);
    assert_eq!(
        phase_moves(&log),
        moves(&[
            ("orient", "plan"),
            ("plan", "implement"),
            ("implement", "verify"),
            ("verify", "implement"),
            ("implement", "verify"),
            ("verify", "deliver"),
        ])
    );
    let early_edit = log
        .iter()
        .find(|line| line["type"] == "tool_call_finished" && line["result"]["is_error"] == true)
        .unwrap();
    let refusal = early_edit["result"]["output"].as_str().unwrap();
    assert!(refusal.starts_with("not run:") && refusal.contains("plan"), "{refusal}");
    let failed_then_passed = verifications(&log);
    assert_eq!(failed_then_passed.len(), 2, "{failed_then_passed:?}");
    assert_ne!(failed_then_passed[0], 0);
    assert_eq!(failed_then_passed[1], 0);
    let modes: Vec<&Value> = log
        .iter()
        .filter(|line| line["type"] == "mode_changed")
        .map(|line| &line["mode"])
        .collect();
    assert_eq!(modes, vec!["auto"], "plan mode until the approved run switched to auto");
}

/// Even where policy would allow it (auto mode), the plan phase refuses
/// writes and commands, and nothing changes on disk.
#[tokio::test]
async fn a_write_in_the_plan_phase_is_refused_and_nothing_changes_on_disk() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let steps = vec![
        phase("plan"),
        typo_edit(),
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "new.txt", "content": "x"}))],
        },
        shell("echo x > made.txt"),
        Step::Answer("Planning only.".into()),
    ];
    let (lines, _) = run(&sandbox, &steps, &["--full-auto", "Fix the typo in hello.txt"]).await;
    assert_eq!(sandbox.read("hello.txt"), "helo world\n");
    assert!(!sandbox.repo.join("new.txt").exists());
    assert!(!sandbox.repo.join("made.txt").exists());
    let log = sandbox.only_log();
    let refusals: Vec<&Value> = log
        .iter()
        .filter(|line| line["type"] == "tool_call_finished" && line["meta"]["kind"] == "denied")
        .collect();
    assert_eq!(refusals.len(), 3, "{refusals:?}");
    for refusal in refusals {
        let text = refusal["result"]["output"].as_str().unwrap();
        assert!(text.contains("not allowed in the plan phase"), "{text}");
        assert_eq!(refusal["meta"]["phase"], "plan");
    }
    assert!(!log.iter().any(|line| line["type"] == "tool_call_started"), "nothing ran");
    assert_eq!(lines.last().unwrap()["status"], "completed", "{log:#?}");
}

/// A resume keeps the mode the log last recorded; a mode flag on the
/// resume wins and is recorded.
#[tokio::test]
async fn a_resume_keeps_the_logged_mode_unless_a_flag_says_otherwise() {
    let sandbox = Sandbox::new();
    let write = || Step::Calls {
        text: None,
        calls: vec![call("write_file", json!({"path": "new.txt", "content": "x"}))],
    };
    let (lines, _) =
        run(&sandbox, &[Step::Answer("ok".into())], &["--mode", "explore", "look around"]).await;
    let id = lines.last().unwrap()["session_id"].as_str().unwrap().to_owned();

    let steps = vec![write(), Step::Answer("refused".into())];
    run(&sandbox, &steps, &["resume", &id, "write new.txt"]).await;
    assert!(!sandbox.repo.join("new.txt").exists(), "still explore mode: read-only");

    run(&sandbox, &steps, &["resume", &id, "--mode", "auto", "write new.txt"]).await;
    assert_eq!(sandbox.read("new.txt"), "x", "the flag switched to auto");

    let log = sandbox.only_log();
    let modes: Vec<&Value> = log
        .iter()
        .filter(|line| line["type"] == "mode_changed")
        .map(|line| &line["mode"])
        .collect();
    assert_eq!(modes, vec!["auto"]);
    let refused = log
        .iter()
        .find(|line| line["type"] == "tool_call_finished" && line["result"]["is_error"] == true)
        .unwrap();
    let text = refused["result"]["output"].as_str().unwrap();
    assert!(text.contains("explore"), "{text}");
}

/// The project's own checks (here a Makefile `test` target) are detected
/// and named to the model while it implements and verifies.
#[tokio::test]
async fn the_projects_checks_are_detected_and_named_in_the_guidance() {
    let sandbox = typo_project();
    let steps = typo_fix_steps("Fixed; make test passes.");
    let (lines, bodies) = run(&sandbox, &steps, &["--full-auto", "Fix the typo"]).await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let named = |body: &Value| body.to_string().contains("This project's checks: `make test`");
    assert!(!named(&bodies[0]), "orient: {}", bodies[0]);
    assert!(named(&bodies[2]), "implement: {}", bodies[2]);
    assert!(named(&bodies[4]), "verify: {}", bodies[4]);
}

/// A trusted project's rules may require a plan for every change: a fix
/// without one is refused, as in plan mode.
#[tokio::test]
async fn a_trusted_projects_rules_can_require_a_plan() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let shipped = include_str!("../../rules/phases.toml");
    assert!(shipped.contains("require_plan = false"));
    sandbox.write(
        ".keel/phases.toml",
        &shipped.replace("require_plan = false", "require_plan = true"),
    );
    let trusted = sandbox.keel().arg("trust").output().unwrap();
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let steps = vec![read_hello(), typo_edit(), Step::Answer("I need a plan first.".into())];
    run(&sandbox, &steps, &["--full-auto", "Fix the typo"]).await;
    assert_eq!(sandbox.read("hello.txt"), "helo world\n");
    let log = sandbox.only_log();
    let refusal = log
        .iter()
        .find(|line| line["type"] == "tool_call_finished" && line["result"]["is_error"] == true)
        .unwrap();
    let text = refusal["result"]["output"].as_str().unwrap();
    assert!(text.contains("plan is required"), "{text}");
}

/// After `--plan-only`, a resume that neither approves nor rejects the
/// plan cannot implement it: the plan still waits for review.
#[tokio::test]
async fn a_plan_left_for_review_cannot_be_implemented_by_a_plain_resume() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let planning = vec![read_hello(), phase("plan"), submit(FIRST_PLAN)];
    let (lines, _) = run(&sandbox, &planning, &["--plan-only", "Fix the typo in hello.txt"]).await;
    let id = lines.last().unwrap()["session_id"].as_str().unwrap().to_owned();

    let steps = vec![phase("implement"), typo_edit(), Step::Answer("Waiting for review.".into())];
    run(&sandbox, &steps, &["resume", &id, "--full-auto", "just do it"]).await;
    assert_eq!(sandbox.read("hello.txt"), "helo world\n");
    let log = sandbox.only_log();
    let resumed = log.iter().position(|line| line["type"] == "session_resumed").unwrap();
    let refused: Vec<&str> = log[resumed..]
        .iter()
        .filter(|line| line["type"] == "tool_call_finished" && line["result"]["is_error"] == true)
        .map(|line| line["result"]["output"].as_str().unwrap())
        .collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused.iter().all(|text| text.contains("not yet approved") || text.contains("plan")));
}

/// A trusted project's rules may name checks a phase needs: deliver is
/// refused until `sh lint.sh` passed after the last change.
#[tokio::test]
async fn a_phases_checks_must_pass_before_it_is_entered() {
    let sandbox = typo_project();
    sandbox.write("lint.sh", "! grep -q helo hello.txt\n");
    let shipped = include_str!("../../rules/phases.toml");
    let gate = "requires = [\"verified_after_last_change\"]";
    assert!(shipped.contains(gate));
    let rules = shipped.replace(gate, &format!("{gate}\nchecks = [\"sh lint.sh\"]"));
    sandbox.write(".keel/phases.toml", &rules);
    let trusted = sandbox.keel().arg("trust").output().unwrap();
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let steps = vec![
        read_hello(),
        phase("implement"),
        typo_edit(),
        phase("verify"),
        shell("make test"),
        phase("deliver"),
        shell("sh lint.sh"),
        phase("deliver"),
        Step::Answer("Fixed; tests and lint pass.".into()),
    ];
    let (lines, bodies) = run(&sandbox, &steps, &["--full-auto", "Fix the typo"]).await;
    assert_eq!(lines.last().unwrap()["status"], "completed");
    let verify_request = bodies[4].to_string();
    assert!(verify_request.contains("Entering deliver needs `sh lint.sh`"), "{verify_request}");
    let log = sandbox.only_log();
    let answers: Vec<(bool, &str)> = log
        .iter()
        .filter(|line| line["type"] == "tool_call_finished")
        .map(|line| {
            (line["result"]["is_error"] == true, line["result"]["output"].as_str().unwrap_or(""))
        })
        .filter(|(_, text)| text.contains("deliver"))
        .collect();
    assert_eq!(answers.len(), 2, "{answers:?}");
    assert!(answers[0].0 && answers[0].1.contains("`sh lint.sh`"), "{answers:?}");
    assert!(!answers[1].0, "{answers:?}");
    assert_eq!(phase_moves(&log).last(), Some(&("verify".to_owned(), "deliver".to_owned())));
}

/// `--reject-plan` says plainly when there is nothing to reject or no
/// feedback, and needs a session to resume.
#[tokio::test]
async fn reject_plan_without_a_waiting_plan_or_feedback_is_refused() {
    let sandbox = Sandbox::new();
    let (lines, _) = run(&sandbox, &[Step::Answer("hi".into())], &["say hi"]).await;
    let id = lines.last().unwrap()["session_id"].as_str().unwrap().to_owned();
    let server = scripted_model(Wire::Chat, &[Step::Answer("never asked".into())]).await;
    let attempt = |args: &[&str]| {
        sandbox
            .keel_on(&Model::chat(&server).named("mock-model"), &["exec", "--json"])
            .args(args)
            .output()
            .unwrap()
    };
    let output = attempt(&["resume", &id, "--reject-plan", "smaller steps"]);
    assert_eq!(output.status.code(), Some(1));
    let result = json_lines(&output.stdout).pop().unwrap();
    assert!(result["error"].as_str().unwrap().contains("no plan waiting for review"), "{result}");

    let output = attempt(&["resume", &id, "--reject-plan", " "]);
    assert_eq!(output.status.code(), Some(2));
    let output = attempt(&["--reject-plan", "smaller steps", "a new task"]);
    assert_eq!(output.status.code(), Some(2));
    let output = attempt(&["resume", &id, "--reject-plan", "x", "--approve-plan"]);
    assert_eq!(output.status.code(), Some(2), "approve and reject conflict");
    assert!(request_bodies(&server).await.is_empty(), "the model was never asked");
}

/// Approving a plan in a later run leaves plan mode for ask mode, as a
/// live approval does, and the log says so.
#[tokio::test]
async fn approving_in_a_later_run_leaves_plan_mode_for_ask() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    let planning = vec![read_hello(), phase("plan"), submit(FIRST_PLAN)];
    let args = ["--mode", "plan", "--plan-only", "Fix the typo in hello.txt"];
    let (lines, _) = run(&sandbox, &planning, &args).await;
    let id = lines.last().unwrap()["session_id"].as_str().unwrap().to_owned();

    let steps = vec![phase("implement"), typo_edit(), Step::Answer("Asked to edit.".into())];
    let (lines, _) = run(&sandbox, &steps, &["resume", &id, "--approve-plan"]).await;
    assert_eq!(lines.last().unwrap()["status"], "needs_approval");
    let log = sandbox.only_log();
    let approved = log
        .iter()
        .position(|line| line["type"] == "plan_updated" && line["plan"]["status"] == "approved")
        .unwrap();
    assert_eq!(log[approved + 1]["type"], "mode_changed", "{:?}", log[approved + 1]);
    assert_eq!(log[approved + 1]["mode"], "ask");
    let decision = log.iter().rev().find(|line| line["type"] == "policy_decision").unwrap();
    assert_eq!(decision["decision"], "prompt", "ask mode asks before the edit: {decision}");
    assert_eq!(sandbox.read("hello.txt"), "helo world\n", "exec cannot approve the edit");
}
