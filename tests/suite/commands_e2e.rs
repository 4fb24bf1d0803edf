//! Custom commands (issue 20) through the real `keel exec`: a project's
//! `.keel/commands/fix.md` runs as `/fix args` once the project is
//! trusted (and not before), Claude Code's and Codex's folders work
//! unchanged, and a command's `allowed-tools` (pre-approvals, as Claude
//! Code reads them) and `model` hold for its turn.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

fn exec(sandbox: &Sandbox, uri: &str, prompt: &str) -> std::process::Output {
    sandbox.run(&Model::at("openai-chat", uri), &["exec", "--json", "--full-auto", prompt])
}

/// The first request's first user message that is not keel's context.
fn sent_prompt(bodies: &[Value]) -> String {
    super::routed_model::first_user_of(&bodies[0])
}

const FIX: &str = "---\ndescription: Fix a bug\nargument-hint: [what]\n---\n\
Fix this bug: $ARGUMENTS. Then run the tests.\n";

#[tokio::test]
async fn a_project_command_runs_expanded_once_trusted_and_is_skipped_before() {
    let sandbox = Sandbox::new();
    sandbox.write(".keel/commands/fix.md", FIX);
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/fix the login bug");
    assert_eq!(output.status.code(), Some(2), "not loaded, so unknown (issue 36)");
    let warnings: Vec<Value> =
        json_lines(&output.stdout).into_iter().filter(|l| l["type"] == "warning").collect();
    let skipped = warnings.iter().find(|w| w["message"].as_str().unwrap().contains("command(s)"));
    let skipped =
        skipped.unwrap_or_else(|| panic!("no warning in {warnings:?}"))["message"].clone();
    assert!(skipped.as_str().unwrap().contains(".keel/commands/fix.md"), "{skipped}");
    assert!(skipped.as_str().unwrap().contains("keel trust"), "{skipped}");
    let result = json_lines(&output.stdout).into_iter().find(|l| l["type"] == "result").unwrap();
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains(".keel/commands/fix.md") && error.contains("keel trust"), "{result}");
    assert!(request_bodies(&server).await.is_empty(), "the line was sent to the model");

    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/fix the login bug");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(
        sent_prompt(&request_bodies(&server).await),
        "Fix this bug: the login bug. Then run the tests."
    );
}

/// As Claude Code's documentation writes them: the hint is not YAML.
const REVIEW_PR: &str = "---\nallowed-tools: Read, Grep, Bash(gh pr view:*)\n\
argument-hint: [pr-number] [priority]\ndescription: Review a pull request\n---\n\n\
Review PR #$1 with priority $2. Report findings only.\n";

#[tokio::test]
async fn claude_and_codex_command_folders_work_unchanged() {
    let sandbox = Sandbox::new();
    sandbox.write(".claude/commands/git/review-pr.md", REVIEW_PR);
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "notes.md", "content": "x"}))],
        },
        Step::Answer("reviewed".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), "/review-pr 456 high");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let bodies = request_bodies(&server).await;
    assert_eq!(sent_prompt(&bodies), "Review PR #456 with priority high. Report findings only.");
    // `allowed-tools` pre-approves; it does not narrow: an unlisted write
    // is judged as usual (allowed in `--full-auto`).
    let result = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert!(!result.to_string().contains("is not one of"), "{result}");
    assert_eq!(sandbox.read("notes.md"), "x");

    // Codex's prompts folder, by name or as `/prompts:name`.
    std::fs::create_dir_all(sandbox.home.join(".codex/prompts")).unwrap();
    std::fs::write(sandbox.home.join(".codex/prompts/hello.md"), "Say hello to $1.").unwrap();
    for typed in ["/hello world", "/prompts:hello world"] {
        let server = scripted_model(Wire::Chat, &[Step::Answer("hi".into())]).await;
        let output = exec(&sandbox, &server.uri(), typed);
        assert_eq!(output.status.code(), Some(0));
        assert_eq!(sent_prompt(&request_bodies(&server).await), "Say hello to world.", "{typed}");
    }
}

#[tokio::test]
async fn a_commands_model_holds_for_its_turn_and_is_logged() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/quick.md"),
        "---\nmodel: small-model\n---\nAnswer briefly: $ARGUMENTS",
    )
    .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("4".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/quick 2+2");
    assert_eq!(output.status.code(), Some(0));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies[0]["model"], "small-model");
    let log = sandbox.only_log();
    let switches: Vec<&Value> =
        log.iter().filter(|l| l["type"] == "model_changed").map(|l| &l["model"]).collect();
    assert_eq!(switches, [&json!("small-model"), &json!("m")], "there and back, recorded");
}

/// A command's pre-approvals are recorded with the turn they are for: a
/// prompt a hook refuses leaves no `turn_scope` line that a later resume
/// would apply to another turn.
#[tokio::test]
async fn a_refused_commands_turn_records_no_narrowing() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/look.md"),
        "---\nallowed-tools: Read, Bash(git status)\n---\nLook at $ARGUMENTS",
    )
    .unwrap();
    std::fs::write(
        sandbox.home.join("config.toml"),
        "[[hooks.UserPromptSubmit]]\nmatcher = \"\"\n[[hooks.UserPromptSubmit.hooks]]\n\
         type = \"command\"\ncommand = \"echo 'not today' >&2; exit 2\"\n",
    )
    .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("never".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/look src");
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stdout));
    assert!(request_bodies(&server).await.is_empty(), "the model was called");
    let log = sandbox.only_log();
    let scopes: Vec<&Value> = log.iter().filter(|l| l["type"] == "turn_scope").collect();
    assert!(scopes.is_empty(), "pre-approvals without their turn: {scopes:?}");
}

/// Every `$ARGUMENTS` repeats the arguments, so a command's prompt grows
/// multiplicatively: past its bound (1 MiB) keel says which command and
/// sends nothing, instead of building the whole text first (review O7).
#[tokio::test]
async fn a_command_whose_expansion_is_too_large_is_refused_by_name() {
    let sandbox = Sandbox::new();
    let body = "$ARGUMENTS ".repeat(2_000);
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(sandbox.home.join("commands/echo.md"), body).unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), &format!("/echo {}", "y".repeat(1024)));
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stdout));
    let result = json_lines(&output.stdout).into_iter().find(|l| l["type"] == "result").unwrap();
    let error = result["error"].as_str().unwrap_or_default().to_owned();
    assert!(error.contains("/echo") && error.contains("shorter arguments"), "{result}");
    assert!(request_bodies(&server).await.is_empty(), "a request was sent");
}

/// Review S3: a command written for Claude Code (`allowed-tools: Read,
/// Edit`) can edit on a model offered `apply_patch` instead of `edit_file`
/// (`[tools] edit = auto` on a gpt- model): the two edit tools are one
/// power, as for agent types. main refused the only edit tool the model
/// was offered ("`apply_patch` is not one of the /tidy command's tools").
#[tokio::test]
async fn a_commands_edit_permission_covers_the_edit_tool_the_model_is_offered() {
    let sandbox = Sandbox::new();
    sandbox.write("notes.txt", "alpha\n");
    sandbox.write(
        ".keel/commands/tidy.md",
        "---\nallowed-tools: Read, Edit\n---\nTidy notes.txt: $ARGUMENTS\n",
    );
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+beta\n*** End Patch\n";
    let steps = [
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "notes.txt"}))] },
        Step::Calls { text: None, calls: vec![call("apply_patch", json!({"patch": patch}))] },
        Step::Answer("tidied".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .run(&Model::chat(&server).named("gpt-5"), &["exec", "--json", "--full-auto", "/tidy now"]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let bodies = request_bodies(&server).await;
    let offered: Vec<String> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(offered.contains(&"apply_patch".to_owned()), "{offered:?}");
    assert!(!offered.contains(&"edit_file".to_owned()), "{offered:?}");
    let answer: Vec<&Value> = bodies[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|message| message["role"] == "tool")
        .collect();
    let answer = json!(answer);
    assert!(!answer.to_string().contains("is not one of"), "refused: {answer}");
    assert_eq!(sandbox.read("notes.txt"), "beta\n", "{answer}");
}

/// A command written for Claude Code naming a whole MCP server
/// (`allowed-tools: mcp__fault`) may call each of its tools, and a tool it
/// does not name is judged as usual, not refused (issue 36). An older
/// main matched names exactly: the server's `echo` was refused as "not one
/// of the /ask command's tools".
#[tokio::test]
async fn a_command_naming_a_whole_mcp_server_calls_its_tools() {
    use super::mcp_support::{fault_table, python, recorded, write_config};
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("fault.jsonl");
    let trust = "trust_read_only_hint = true";
    write_config(&sandbox, &fault_table("fault", &python, "ok", &record, trust));
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/ask.md"),
        "---\nallowed-tools: mcp__fault\n---\nAsk the server: $ARGUMENTS\n",
    )
    .unwrap();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![
                call("mcp__fault__echo", json!({"text": "hi"})),
                call("read_file", json!({"path": "README.md"})),
            ],
        },
        Step::Answer("asked".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server.uri(), "/ask now");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let results: Vec<Value> = json_lines(&output.stdout)
        .into_iter()
        .filter(|line| line["type"] == "item_completed" && line["item"]["type"] == "tool_call")
        .map(|line| line["item"].clone())
        .collect();
    let of = |name: &str| results.iter().find(|item| item["name"] == name).unwrap().clone();
    assert_eq!(of("mcp__fault__echo")["is_error"], false, "{results:?}");
    // Unlisted, it is judged as usual (a read: it runs), not refused.
    let read = of("read_file");
    assert!(!read["output"].as_str().unwrap().contains("is not one of"), "{read}");
    let called = recorded(&record).iter().filter(|line| line["method"] == "tools/call").count();
    assert_eq!(called, 1);
}

/// A wshobson-style command written for Claude Code names a Claude model:
/// on an OpenAI-compatible server keel sends the session's model and says
/// so once (issue 36), instead of `claude-sonnet-4-0` priced as Claude.
#[tokio::test]
async fn a_claude_model_named_by_a_command_is_not_sent_to_an_openai_server() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/tdd-red.md"),
        "---\nmodel: claude-sonnet-4-0\n---\nWrite failing tests for: $ARGUMENTS",
    )
    .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/tdd-red parser");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies[0]["model"], "m", "the session's model");
    let notices: Vec<String> = json_lines(&output.stdout)
        .into_iter()
        .filter(|l| l["type"] == "warning")
        .map(|l| l["message"].as_str().unwrap().to_owned())
        .filter(|m| m.contains("claude-sonnet-4-0"))
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(notices[0].contains("/tdd-red") && notices[0].contains("`m`"), "{}", notices[0]);
    let log = sandbox.only_log();
    assert!(!log.iter().any(|l| l["type"] == "model_changed"), "no switch");
}

/// Issue 36: wshobson/commands documents `/tools:api-scaffold` for its
/// `tools/api-scaffold.md`; main sent the line to the model as text and
/// exited 0. The namespaced name runs the command; a name nothing answers
/// to is a usage error (exit 2) and nothing is sent; a path is a prompt.
#[tokio::test]
async fn namespaced_commands_run_and_an_unknown_one_is_a_usage_error() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join(".claude/commands/tools")).unwrap();
    std::fs::write(
        sandbox.home.join(".claude/commands/tools/api-scaffold.md"),
        "---\ndescription: Scaffold an API\n---\nScaffold an API for: $ARGUMENTS",
    )
    .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/tools:api-scaffold users");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(sent_prompt(&request_bodies(&server).await), "Scaffold an API for: users");

    let server = scripted_model(Wire::Chat, &[Step::Answer("never".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/workflows:tdd-cycle users");
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stdout));
    let result = json_lines(&output.stdout).into_iter().find(|l| l["type"] == "result").unwrap();
    assert_eq!(result["status"], "usage_error", "{result}");
    let error = result["error"].as_str().unwrap_or_default();
    assert!(error.contains("unknown command /workflows:tdd-cycle"), "{result}");
    assert!(request_bodies(&server).await.is_empty(), "the line was sent to the model");

    let server = scripted_model(Wire::Chat, &[Step::Answer("looked".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/etc/hosts looks wrong");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(sent_prompt(&request_bodies(&server).await), "/etc/hosts looks wrong");
}

/// Issue 36: davila7's generate-test-cases.md (real file, 133 of its
/// commands are like it) gathers context with `` !`cmd` `` lines. They run
/// before the turn, as the user's `!cmd` (policy, sandbox), their output in
/// the prompt; main sent them as text. A line policy forbids is not run and
/// said so.
#[tokio::test]
async fn a_commands_shell_lines_run_before_the_turn_through_policy() {
    let sandbox = Sandbox::new();
    sandbox.write("calc.test.js", "test('x', () => {});\n");
    sandbox.write(
        ".claude/commands/generate-test-cases.md",
        include_str!("../fixtures/claude/commands/generate-test-cases.md"),
    );
    sandbox.write(".claude/commands/wipe.md", "Before: !`rm -rf /`\nNow tidy $ARGUMENTS.\n");
    sandbox.write(".claude/commands/root.md", "Who: !`sudo id`\n");
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/generate-test-cases calc.js");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let prompt = sent_prompt(&request_bodies(&server).await);
    assert!(!prompt.contains("!`find"), "a `!` line reached the model as text: {prompt}");
    assert!(prompt.contains("Jest/Vitest detected"), "{prompt}");
    assert!(prompt.contains("./calc.test.js test file patterns"), "{prompt}");
    assert!(prompt.contains("intelligent coverage: **calc.js**"), "{prompt}");

    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/wipe notes");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let prompt = sent_prompt(&request_bodies(&server).await);
    assert!(
        prompt.starts_with("Before: (`rm -rf /` was not run: refused in every mode"),
        "{prompt}"
    );
    let warned = json_lines(&output.stdout).into_iter().any(|l| {
        l["type"] == "warning" && l["message"].as_str().unwrap_or_default().contains("did not run")
    });
    assert!(warned, "no warning");

    // A project's file is not the user typing: policy's "ask" does not run.
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/root");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let prompt = sent_prompt(&request_bodies(&server).await);
    assert!(prompt.starts_with("Who: (`sudo id` was not run: it needs approval"), "{prompt}");
}

/// Issue 36: 71 of davila7's commands name files as `@path` (Claude Code
/// attaches them); main sent the text alone. Each is read with
/// `read_file`'s confinement: a path outside the project is refused and
/// said, a secret's value is masked; `@alice` is not a file.
#[tokio::test]
async fn a_commands_file_references_are_inlined_within_read_files_confinement() {
    let sandbox = Sandbox::new();
    sandbox.write("docs/standards.md", "Use tabs.\n");
    sandbox.write(".env", "API_KEY=sk-live-123\n");
    std::fs::write(sandbox.home.join("outside.txt"), "private\n").unwrap();
    let outside = sandbox.home.join("outside.txt");
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/std.md"),
        format!("Follow @docs/standards.md, ask @alice. Not @.env nor @{}.", outside.display()),
    )
    .unwrap();
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &server.uri(), "/std");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let prompt = sent_prompt(&request_bodies(&server).await);
    assert!(prompt.contains("<file path=\"docs/standards.md\">"), "{prompt}");
    assert!(prompt.contains("Use tabs."), "{prompt}");
    assert!(!prompt.contains("sk-live-123") && !prompt.contains("private"), "{prompt}");
    assert!(prompt.contains("[redacted: .env:API_KEY]"), "the secret's value masked: {prompt}");
    assert!(prompt.contains(&format!("(@{} was not inlined:", outside.display())), "{prompt}");
    assert!(!prompt.contains("@alice was not"), "{prompt}");
    let warnings = json_lines(&output.stdout)
        .into_iter()
        .filter(|l| {
            l["type"] == "warning" && l["message"].as_str().unwrap_or("").contains("not inlined")
        })
        .count();
    assert_eq!(warnings, 1);
}

/// Claude Code's `commit.md` as published: `allowed-tools` lists what it
/// may run without asking.
const COMMIT: &str = "---\nallowed-tools: Bash(git add:*), Bash(git commit:*)\n\
description: Commit\n---\nStage and commit: $ARGUMENTS\n";

/// `keel exec --mode ask` (headless: a call that needs an approval is
/// declined, exit 3): what each shell or write call came to, by the
/// arguments the model sent.
fn in_ask_mode(sandbox: &Sandbox, uri: &str, prompt: &str) -> (Option<i32>, Vec<String>) {
    let output =
        sandbox.run(&Model::at("openai-chat", uri), &["exec", "--json", "--mode", "ask", prompt]);
    let declined = json_lines(&output.stdout)
        .into_iter()
        .filter(|line| line["type"] == "approval_declined")
        .map(|line| line["arguments"].as_str().unwrap_or_default().to_owned())
        .collect();
    (output.status.code(), declined)
}

fn shell_step(command: &str) -> Step {
    Step::Calls { text: None, calls: vec![call("shell", json!({ "command": command }))] }
}

/// Issue 36 (ecosystem review C5): a trusted project's `/commit` with
/// `allowed-tools: Bash(git add:*), Bash(git commit:*)` runs `git add`
/// without asking in ask mode; a tool it does not list (`write_file`) goes
/// through the normal flow (declined headless, not refused as outside the
/// command); the next prompt's `git add` is asked about again. Failed
/// before: `git add` was declined too (the list read as "all of shell",
/// which ask mode still asks about) and the write was refused as "not one
/// of the /commit command's tools".
#[tokio::test]
async fn a_commands_allowed_tools_pre_approve_its_turn_and_refuse_nothing() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    sandbox.write("b.txt", "b\n");
    sandbox.write(".claude/commands/commit.md", COMMIT);
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let steps = [
        shell_step("git add a.txt"),
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "notes.md", "content": "x"}))],
        },
        Step::Answer("staged".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let (code, declined) = in_ask_mode(&sandbox, &server.uri(), "/commit the fix");
    assert_eq!(code, Some(3), "the unlisted write needs an approval: {declined:?}");
    assert_eq!(declined.len(), 1, "only the write is declined: {declined:?}");
    assert!(declined[0].contains("notes.md"), "{declined:?}");
    let bodies = request_bodies(&server).await;
    let results = bodies[2]["messages"].to_string();
    assert!(!results.contains("is not one of"), "refused by a scope: {results}");
    let log = std::fs::read_to_string(sandbox.only_log_path()).unwrap();
    assert!(log.contains("\"turn_scope\""), "the pre-approvals were not logged");

    // The pre-approval ended with the turn.
    let server =
        scripted_model(Wire::Chat, &[shell_step("git add b.txt"), Step::Answer("ok".into())]).await;
    let (code, declined) = in_ask_mode(&sandbox, &server.uri(), "stage b.txt");
    assert_eq!(code, Some(3));
    assert_eq!(declined.len(), 1, "{declined:?}");
    assert!(declined[0].contains("git add b.txt"), "{declined:?}");
}

/// A pre-approval is an "always" answer, not a licence: the user's
/// forbidden rule on `git add` still refuses it in the command's turn.
#[tokio::test]
async fn a_forbidden_rule_wins_over_a_commands_allowed_tools() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "a\n");
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    std::fs::write(
        sandbox.home.join("rules/user.rules"),
        "prefix_rule(pattern=[\"git\", \"add\"], decision=\"forbidden\", \
         justification=\"stage by hand\")\n",
    )
    .unwrap();
    std::fs::create_dir_all(sandbox.home.join(".claude/commands")).unwrap();
    std::fs::write(sandbox.home.join(".claude/commands/commit.md"), COMMIT).unwrap();
    let server =
        scripted_model(Wire::Chat, &[shell_step("git add a.txt"), Step::Answer("no".into())]).await;
    let (code, declined) = in_ask_mode(&sandbox, &server.uri(), "/commit now");
    assert!(declined.is_empty(), "forbidden, not asked: {declined:?}");
    assert_eq!(code, Some(0));
    let bodies = request_bodies(&server).await;
    let result = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"].to_string();
    assert!(result.contains("stage by hand"), "{result}");
}
