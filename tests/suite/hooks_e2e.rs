//! Hooks through the real binary: each event fires, exit 2 blocks a tool
//! call with the reason given to the model, a hook cannot loosen policy,
//! and every run is in the session log.

use serde_json::json;

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// Writes `$KEEL_HOME/config.toml` with hooks: (event, matcher, command).
fn configure(sandbox: &Sandbox, hooks: &[(&str, &str, &str)]) {
    let mut toml = String::new();
    for (event, matcher, command) in hooks {
        toml.push_str(&format!(
            "[[hooks.{event}]]\nmatcher = {matcher:?}\n[[hooks.{event}.hooks]]\ntype = \"command\"\ncommand = {command:?}\n\n"
        ));
    }
    std::fs::write(sandbox.home.join("config.toml"), toml).unwrap();
}

fn hook_runs(sandbox: &Sandbox) -> Vec<serde_json::Value> {
    sandbox.only_log().into_iter().filter(|l| l["type"] == "hook_ran").collect()
}

async fn exec(
    sandbox: &Sandbox,
    steps: &[Step],
    extra: &[&str],
) -> (std::process::Output, wiremock::MockServer) {
    let server = scripted_model(Wire::Chat, steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json"])
        .args(extra)
        .arg("go")
        .output()
        .unwrap();
    (output, server)
}

#[tokio::test]
async fn exit_2_blocks_a_tool_call_and_the_model_reads_why() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[("PreToolUse", "Bash", "echo 'BLOCKED: no rm here' >&2; exit 2")]);
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "touch gone.txt"}))],
        },
        Step::Answer("ok".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &["--full-auto"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!sandbox.repo.join("gone.txt").exists(), "the blocked command ran");
    let bodies = request_bodies(&server).await;
    assert!(bodies[1].to_string().contains("BLOCKED: no rm here"), "the model is told why");
    let runs = hook_runs(&sandbox);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["event"], "PreToolUse");
    assert_eq!(runs[0]["decision"], "deny");
}

#[tokio::test]
async fn a_hook_cannot_turn_a_prompt_into_an_allow() {
    let sandbox = Sandbox::new();
    let allow = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'"#;
    configure(&sandbox, &[("PreToolUse", "", allow)]);
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "x.txt", "content": "x"}))],
        },
        Step::Answer("ok".into()),
    ];
    // No --full-auto: policy asks, exec cannot ask, so the write is declined
    // and the run says so (needs_approval, exit 3).
    let (output, _server) = exec(&sandbox, &steps, &[]).await;
    assert_eq!(output.status.code(), Some(3));
    assert!(!sandbox.repo.join("x.txt").exists(), "the hook loosened policy");
    let runs = hook_runs(&sandbox);
    assert!(runs[0]["refused"].as_str().unwrap().contains("cannot loosen"), "{runs:?}");
}

#[tokio::test]
async fn every_session_event_runs_its_hooks() {
    let sandbox = Sandbox::new();
    let context = r#"echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"HOOK-CONTEXT-42"}}'"#;
    let post = r#"echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"POST-NOTE-7"}}'"#;
    configure(
        &sandbox,
        &[
            ("SessionStart", "startup", context),
            ("UserPromptSubmit", "", "touch prompt.hook"),
            ("PreToolUse", "read_file", "touch pre.hook"),
            ("PostToolUse", "Read", post),
            ("PostToolUseFailure", "", "touch failure.hook"),
            ("Stop", "", "touch stop.hook"),
            ("SessionEnd", "", "touch end.hook"),
        ],
    );
    sandbox.write("a.txt", "hello\n");
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![
                call("read_file", json!({"path": "a.txt"})),
                call("read_file", json!({"path": "missing.txt"})),
            ],
        },
        Step::Answer("done".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    for marker in ["prompt.hook", "pre.hook", "failure.hook", "stop.hook", "end.hook"] {
        assert!(sandbox.repo.join(marker).exists(), "{marker} hook did not run");
    }
    let bodies = request_bodies(&server).await;
    let first = bodies[0].to_string();
    assert!(first.contains("HOOK-CONTEXT-42"), "SessionStart context reaches the model");
    assert!(bodies[1].to_string().contains("POST-NOTE-7"), "PostToolUse context reaches the model");
    let events: Vec<String> =
        hook_runs(&sandbox).iter().map(|r| r["event"].as_str().unwrap().to_owned()).collect();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "Stop",
        "SessionEnd",
    ] {
        assert!(events.iter().any(|e| e == event), "{event} missing from {events:?}");
    }
}

#[tokio::test]
async fn a_blocked_prompt_fails_the_turn_with_the_reason() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[("UserPromptSubmit", "", "echo 'no secrets in prompts' >&2; exit 2")]);
    let (output, server) = exec(&sandbox, &[Step::Answer("never".into())], &[]).await;
    assert_eq!(output.status.code(), Some(1));
    let lines = json_lines(&output.stdout);
    assert!(lines.last().unwrap()["error"].as_str().unwrap().contains("no secrets in prompts"));
    assert!(request_bodies(&server).await.is_empty(), "the model was called");
}

#[tokio::test]
async fn notification_fires_when_approval_is_needed_and_stop_can_continue_once() {
    let sandbox = Sandbox::new();
    let stop = r#"if [ ! -f stopped.once ]; then touch stopped.once; echo '{"decision":"block","reason":"also run the tests"}'; fi"#;
    configure(&sandbox, &[("Notification", "", "touch notified.hook"), ("Stop", "", stop)]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "touch x.txt"}))] },
        Step::Answer("first".into()),
        Step::Answer("second".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(sandbox.repo.join("notified.hook").exists());
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 3, "Stop sent the model back once");
    assert!(bodies[2].to_string().contains("also run the tests"));
    assert_eq!(json_lines(&output.stdout).last().unwrap()["final_text"], "second");
}

#[tokio::test]
async fn phase_change_hooks_see_the_phase_entered() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[("PhaseChange", "implement", "cat > phase.json")]);
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("set_phase", json!({"phase": "implement", "note": "fix it"}))],
        },
        Step::Answer("ok".into()),
    ];
    let (output, _server) = exec(&sandbox, &steps, &["--full-auto"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let payload: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sandbox.repo.join("phase.json")).unwrap())
            .unwrap();
    assert_eq!(payload["hook_event_name"], "PhaseChange");
    assert_eq!(
        (payload["from"].as_str(), payload["to"].as_str()),
        (Some("orient"), Some("implement"))
    );
}

/// The `policy_decision` lines that judged a hook's rewrite.
fn rewrite_decisions(sandbox: &Sandbox) -> Vec<serde_json::Value> {
    sandbox
        .only_log()
        .into_iter()
        .filter(|l| l["type"] == "policy_decision")
        .filter(|l| l["reason"].as_str().is_some_and(|r| r.contains("hook rewrote the input")))
        .collect()
}

/// A PreToolUse hook that rewrites every shell command into `command`.
fn rewriting_hook(command: &str) -> String {
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"command": command},
    }});
    format!("cat > /dev/null; echo '{output}'")
}

#[tokio::test]
async fn a_hook_rewrite_into_a_forbidden_command_is_denied_by_policy() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[("PreToolUse", "Bash", &rewriting_hook("rm -rf /"))]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "echo hi"}))] },
        Step::Answer("ok".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &["--full-auto"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let second = request_bodies(&server).await[1].to_string();
    assert!(second.contains("policy forbids the rewrite"), "the model is told why: {second}");
    assert!(!second.contains("\\nhi"), "the original command ran instead");
    let decisions = rewrite_decisions(&sandbox);
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["decision"], "forbidden");
    assert!(decisions[0]["reason"].as_str().unwrap().contains("rm -rf /"), "{decisions:?}");
}

#[tokio::test]
async fn a_hook_rewrite_into_a_harmless_command_runs_the_rewrite() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[("PreToolUse", "Bash", &rewriting_hook("echo REWRITTEN-42"))]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "echo hi"}))] },
        Step::Answer("ok".into()),
    ];
    // Ask mode: the rewrite is read-only, so it runs without asking.
    let (output, server) = exec(&sandbox, &steps, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let second = request_bodies(&server).await[1].to_string();
    assert!(second.contains("REWRITTEN-42"), "the rewrite did not run: {second}");
    let decisions = rewrite_decisions(&sandbox);
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["decision"], "allow");
}

#[tokio::test]
async fn a_hook_rewrite_that_needs_approval_is_declined_when_nobody_can_ask() {
    let sandbox = Sandbox::new();
    configure(&sandbox, &[("PreToolUse", "Bash", &rewriting_hook("touch rewritten.txt"))]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "echo hi"}))] },
        Step::Answer("ok".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(!sandbox.repo.join("rewritten.txt").exists(), "an unapproved rewrite ran");
    let second = request_bodies(&server).await[1].to_string();
    assert!(second.contains("rewrite was not approved"), "{second}");
    let log = sandbox.only_log();
    let approvals: Vec<&serde_json::Value> =
        log.iter().filter(|line| line["type"] == "approval").collect();
    assert_eq!(approvals.len(), 1, "the answer about the rewrite is recorded");
    assert_eq!(approvals[0]["approved"], false);
}

#[tokio::test]
async fn the_native_protect_secrets_hook_keeps_env_files_out_of_the_model_context() {
    let sandbox = Sandbox::new();
    sandbox.write(".env", "API_TOKEN=sk-very-secret-123\n");
    sandbox.write("config/.env.test", "TEST_TOKEN=harmless-456\n");
    // A project cannot switch the protection off.
    sandbox.write(".keel/config.toml", "[secrets]\nprotect_files = false\n");
    std::fs::write(
        sandbox.home.join("config.toml"),
        "[secrets]\nallow_files = [\"config/.env.test\"]\n",
    )
    .unwrap();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![
                call("read_file", json!({"path": ".env"})),
                call("read_file", json!({"path": "config/.env.test"})),
            ],
        },
        Step::Answer("ok".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let second = request_bodies(&server).await[1].to_string();
    assert!(!second.contains("sk-very-secret-123"), "the secret reached the model");
    assert!(second.contains("looks like a secret file"), "the model is told why: {second}");
    assert!(second.contains("harmless-456"), "an allowed file was blocked");
    let runs = hook_runs(&sandbox);
    assert_eq!(runs.len(), 1, "only the run with a say is recorded: {runs:?}");
    assert_eq!(
        (runs[0]["source"].as_str(), runs[0]["command"].as_str(), runs[0]["decision"].as_str()),
        (Some("native"), Some("protect_secrets"), Some("deny"))
    );
}

/// Issue 13: a hook's `updatedInput` is judged by keel's native hooks too,
/// so a rewrite cannot point a harmless read at a secret file.
#[tokio::test]
async fn a_hook_rewrite_onto_a_secret_file_is_blocked_by_protect_secrets() {
    let sandbox = Sandbox::new();
    sandbox.write(".env", "API_KEY=sk-rewrite-canary\n");
    sandbox.write("README.md", "readme\n");
    let output = json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"path": ".env"},
    }});
    let hook = format!("cat > /dev/null; echo '{output}'");
    configure(&sandbox, &[("PreToolUse", "read_file|Read", &hook)]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "README.md"}))] },
        Step::Answer("ok".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &["--yolo"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let second = request_bodies(&server).await[1].to_string();
    assert!(!second.contains("sk-rewrite-canary"), "the secret reached the model: {second}");
    assert!(second.contains("secret file"), "the model is told why: {second}");
}

/// A PreToolUse hook that answers "ask" about a call policy allowed:
/// `step` asks (a headless run declines), records the answer as an
/// `approval` line between the call's start and its result, and the
/// model reads that a hook blocked it; no declined call, exit 0.
#[tokio::test]
async fn a_hook_ask_is_a_question_whose_answer_is_logged() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "hello\n");
    let ask = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"ASK-REASON-5"}}'"#;
    configure(&sandbox, &[("PreToolUse", "Read", ask)]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "notes.txt"}))] },
        Step::Answer("ok".into()),
    ];
    let (output, server) = exec(&sandbox, &steps, &["--full-auto"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let bodies = request_bodies(&server).await;
    let second = bodies[1].to_string();
    assert!(second.contains("blocked by a hook"), "{second}");
    assert!(!second.contains("hello"), "the file was read");
    let log = sandbox.only_log();
    let types: Vec<&str> = log.iter().filter_map(|l| l["type"].as_str()).collect();
    let at =
        |kind: &str| types.iter().position(|t| *t == kind).unwrap_or_else(|| panic!("{types:?}"));
    assert!(at("tool_call_started") < at("hook_ran"), "{types:?}");
    assert!(
        at("hook_ran") < at("approval") && at("approval") < at("tool_call_finished"),
        "{types:?}"
    );
    let approval = &log[at("approval")];
    assert_eq!(
        (approval["approved"].clone(), approval["scope"].clone()),
        (json!(false), json!("once"))
    );
}

/// Review S5: a guard hook runs on every call, also after a question about
/// an earlier call was declined. With a Chat server that sends no call ids
/// (keel names each response's first call `call_0`), main kept the hooks'
/// verdict from before the declined question and used it for the next
/// response's `call_0`: the guard hook never ran and the file it guards
/// reached the model.
#[tokio::test]
async fn a_guard_hook_runs_on_a_call_after_a_declined_question_with_the_same_id() {
    let sandbox = Sandbox::new();
    sandbox.write("guarded.txt", "SECRET-CONTENT-3\n");
    let guard = "grep -q guarded && { echo 'GUARD: not that file' >&2; exit 2; }; exit 0";
    configure(&sandbox, &[("PreToolUse", "Bash", guard)]);
    let steps = [
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "touch a"}))] },
        Step::Calls {
            text: None,
            calls: vec![call("shell", json!({"command": "cat guarded.txt"}))],
        },
        Step::Answer("ok".into()),
    ];
    let server = super::support::scripted_chat_without_call_ids(&steps).await;
    let output = sandbox.run(&Model::chat(&server), &["exec", "--json", "go"]);
    assert_eq!(output.status.code(), Some(3), "{}", String::from_utf8_lossy(&output.stderr));
    let started: Vec<serde_json::Value> = sandbox
        .only_log()
        .into_iter()
        .filter(|line| line["type"] == "tool_call_started")
        .map(|line| line["call"]["call_id"].clone())
        .collect();
    assert_eq!(started, [json!("call_0")], "the server's calls have no ids: {started:?}");
    let third = request_bodies(&server).await[2].to_string();
    assert!(!third.contains("SECRET-CONTENT-3"), "the guard hook did not run: {third}");
    assert!(third.contains("GUARD: not that file"), "{third}");
    assert_eq!(hook_runs(&sandbox).len(), 2, "{:?}", hook_runs(&sandbox));
}

/// A Claude Code settings file as users have them now: a newer event
/// (`PermissionRequest`) and a `prompt` hook next to command hooks. keel
/// starts, says once what it skipped, and the command hooks read Claude's
/// fields: `permission_mode` in Claude's values, `tool_use_id`, and
/// `error` on a failure.
#[tokio::test]
async fn a_claude_settings_file_with_newer_events_runs_its_command_hooks_with_claudes_fields() {
    let sandbox = Sandbox::new();
    let claude_dir = sandbox.home.parent().unwrap().join(".claude");
    std::fs::create_dir_all(&claude_dir).unwrap();
    let settings = json!({"hooks": {
        "PermissionRequest": [{"matcher": "", "hooks": [{"type": "command", "command": "true"}]}],
        "Stop": [{"hooks": [{"type": "prompt", "prompt": "Is the work complete?"}]}],
        "PreToolUse": [{"matcher": "", "hooks": [{"type": "command", "command": "cat >> pre.jsonl; echo >> pre.jsonl"}]}],
        "PostToolUseFailure": [{"matcher": "", "hooks": [{"type": "command", "command": "cat >> failed.jsonl; echo >> failed.jsonl"}]}]
    }});
    std::fs::write(claude_dir.join("settings.json"), settings.to_string()).unwrap();
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "missing.txt"}))] },
        Step::Answer("done".into()),
    ];
    let (output, _server) =
        exec(&sandbox, &steps, &["--full-auto", "-c", "import_claude_hooks=true"]).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let warnings: Vec<String> = json_lines(&output.stdout)
        .into_iter()
        .filter(|line| line["type"] == "warning")
        .map(|line| line["message"].as_str().unwrap().to_owned())
        .filter(|message| message.contains("skipped"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {warnings:?}");
    assert!(warnings[0].contains("`PermissionRequest` (1 hook)"), "{warnings:?}");
    assert!(warnings[0].contains("`prompt` (1 hook)"), "{warnings:?}");
    let payloads = |file: &str| -> Vec<serde_json::Value> {
        let text = sandbox.read(file);
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let pre = payloads("pre.jsonl");
    assert_eq!(pre[0]["permission_mode"], "acceptEdits", "{pre:?}");
    assert_eq!(pre[0]["tool_name"], "Read");
    let id = pre[0]["tool_use_id"].as_str().expect("tool_use_id");
    let failed = payloads("failed.jsonl");
    assert_eq!(failed[0]["tool_use_id"], id);
    assert!(failed[0]["error"].as_str().is_some_and(|e| !e.is_empty()), "{failed:?}");
}

/// Writes `~/.claude/settings.json` with `hooks` (the import is turned on
/// by `-c import_claude_hooks=true`).
fn claude_settings(sandbox: &Sandbox, hooks: serde_json::Value) {
    let claude_dir = sandbox.home.parent().unwrap().join(".claude");
    std::fs::create_dir_all(&claude_dir).unwrap();
    std::fs::write(claude_dir.join("settings.json"), json!({ "hooks": hooks }).to_string())
        .unwrap();
}

/// The JSON lines a hook appended to `file` in the workspace.
fn appended(sandbox: &Sandbox, file: &str) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(sandbox.repo.join(file)).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn todo_call() -> (String, String) {
    call("todo_write", json!({"todos": [{"text": "write the parser", "status": "in_progress"}]}))
}

/// Issue 36 (review H3): Claude Code fires PreToolUse and PostToolUse for
/// `TodoWrite`; hook scripts that log every call (matcher `""`) saw no
/// line at all for keel's `todo_write`. Now both fire with Claude's
/// name, its input shape (`todos[].content`), the call's id, and the
/// response for Post.
#[tokio::test]
async fn todo_write_fires_pre_and_post_tool_use_with_claudes_payload() {
    let sandbox = Sandbox::new();
    let log_to = |file: &str| {
        json!([{"matcher": "", "hooks": [{"type": "command",
        "command": format!("cat >> {file}; echo >> {file}")}]}])
    };
    claude_settings(
        &sandbox,
        json!({"PreToolUse": log_to("pre.jsonl"), "PostToolUse": log_to("post.jsonl")}),
    );
    let steps = [Step::Calls { text: None, calls: vec![todo_call()] }, Step::Answer("ok".into())];
    let (output, _server) =
        exec(&sandbox, &steps, &["--full-auto", "-c", "import_claude_hooks=true"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let pre = appended(&sandbox, "pre.jsonl");
    assert_eq!(pre.len(), 1, "one PreToolUse payload: {pre:?}");
    assert_eq!(pre[0]["tool_name"], "TodoWrite");
    assert_eq!(pre[0]["tool_input"]["todos"][0]["content"], "write the parser", "{pre:?}");
    assert_eq!(pre[0]["tool_input"]["todos"][0]["status"], "in_progress");
    let id = pre[0]["tool_use_id"].as_str().expect("tool_use_id");
    let post = appended(&sandbox, "post.jsonl");
    assert_eq!(post.len(), 1, "one PostToolUse payload: {post:?}");
    assert_eq!(post[0]["hook_event_name"], "PostToolUse");
    assert_eq!(post[0]["tool_name"], "TodoWrite");
    assert_eq!(post[0]["tool_use_id"], id);
    let response = post[0]["tool_response"]["output"].as_str().unwrap_or_default();
    assert!(response.contains("write the parser"), "{post:?}");
}

/// Issue 36: a PreToolUse deny on `TodoWrite` (Claude's matcher) refuses
/// the call as it does any tool's: the task list is not updated and the
/// model reads the hook's reason.
#[tokio::test]
async fn a_pre_tool_use_deny_on_todo_write_keeps_the_task_list() {
    let sandbox = Sandbox::new();
    let deny = r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"NO-TODOS-HERE"}}'"#;
    claude_settings(
        &sandbox,
        json!({"PreToolUse": [{"matcher": "TodoWrite",
            "hooks": [{"type": "command", "command": deny}]}]}),
    );
    let steps = [Step::Calls { text: None, calls: vec![todo_call()] }, Step::Answer("ok".into())];
    let (output, server) =
        exec(&sandbox, &steps, &["--full-auto", "-c", "import_claude_hooks=true"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let second = request_bodies(&server).await[1].to_string();
    assert!(second.contains("NO-TODOS-HERE"), "the model is told why: {second}");
    let log = sandbox.only_log();
    assert!(!log.iter().any(|l| l["type"] == "task_updated"), "the task list changed");
    let runs = hook_runs(&sandbox);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["decision"], "deny");
}

/// Issue 36: `submit_plan` is Claude's `ExitPlanMode` and `ask_user` its
/// `AskUserQuestion` for hooks from Claude settings: matchers by those
/// names fire, with the input in Claude's shape.
#[tokio::test]
async fn plan_and_question_calls_reach_claudes_exit_plan_mode_and_ask_user_question_matchers() {
    let sandbox = Sandbox::new();
    claude_settings(
        &sandbox,
        json!({"PreToolUse": [{"matcher": "ExitPlanMode|AskUserQuestion", "hooks": [{
            "type": "command", "command": "cat >> pre.jsonl; echo >> pre.jsonl"}]}]}),
    );
    let calls = vec![
        call("submit_plan", json!({"plan_markdown": "1. read\n2. fix"})),
        call("ask_user", json!({"question": "Which branch?", "choices": ["main", "dev"]})),
    ];
    let steps = [Step::Calls { text: None, calls }, Step::Answer("ok".into())];
    let (output, _server) =
        exec(&sandbox, &steps, &["--full-auto", "-c", "import_claude_hooks=true"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let pre = appended(&sandbox, "pre.jsonl");
    let names: Vec<&str> = pre.iter().filter_map(|p| p["tool_name"].as_str()).collect();
    assert_eq!(names, ["ExitPlanMode", "AskUserQuestion"], "{pre:?}");
    assert_eq!(pre[0]["tool_input"]["plan"], "1. read\n2. fix");
    let question = &pre[1]["tool_input"]["questions"][0];
    assert_eq!(question["question"], "Which branch?", "{pre:?}");
    assert_eq!(question["options"][1]["label"], "dev");
}
