//! Subagents (issue 20) through the real `keel exec` binary, against a
//! model that answers the parent session and each subagent from its own
//! script (`routed_model.rs`): delegation and its narrowed powers,
//! parallel read-only children, a SIGKILL mid-child and the resume, a
//! Claude Code agent file, and the SubagentStart/SubagentStop hooks.
//! What bounds a child (an agent file's tools, a command's, the depth,
//! hooks, MCP servers, budgets) is in `subagents_bounds.rs`.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::routed_model::{
    Reply, Route, RoutedModel, context_of, first_user_of, system_of, tool_names, tool_results,
};
use super::support::{Sandbox, json_lines, read_jsonl};
use super::wire::{Step, call};

/// The parent's system prompt starts with keel's core rules.
pub(super) const PARENT: &str = "You are keel, a coding agent";
/// The built-in explore type's prompt.
pub(super) const EXPLORE: &str = "You are a subagent exploring a codebase";

pub(super) fn agent_call(agent: &str, description: &str, prompt: &str) -> (String, String) {
    call("agent", json!({"agent": agent, "description": description, "prompt": prompt}))
}

pub(super) fn calls(list: Vec<(String, String)>) -> Reply {
    Reply::Step(Step::Calls { text: None, calls: list })
}

pub(super) fn answer(text: &str) -> Reply {
    Reply::Step(Step::Answer(text.into()))
}

pub(super) fn exec(
    sandbox: &Sandbox,
    model: &RoutedModel,
    flags: &[&str],
    prompt: &str,
) -> std::process::Output {
    sandbox
        .keel()
        .args(["exec", "--json", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", model.uri)])
        .args(flags)
        .arg(prompt)
        .output()
        .unwrap()
}

/// `keel exec --json --full-auto PROMPT` started as a process of its own,
/// to be killed or interrupted mid-run.
pub(super) fn spawn_exec(
    sandbox: &Sandbox,
    model: &RoutedModel,
    prompt: &str,
    stdout: std::process::Stdio,
) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", model.uri), prompt])
        .stdout(stdout)
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// Runs `keel exec PROMPT` until `route`'s request is held, then SIGKILLs it.
pub(super) fn kill_when_held(sandbox: &Sandbox, model: &RoutedModel, prompt: &str, route: &str) {
    let mut running = spawn_exec(sandbox, model, prompt, std::process::Stdio::null());
    assert_eq!(model.held(), route);
    running.kill().unwrap(); // SIGKILL
    running.wait().unwrap();
}

/// The id of the (only) parent session.
pub(super) fn parent_id(sandbox: &Sandbox) -> String {
    let (parents, _) = logs(sandbox);
    read_jsonl(&parents[0])[0]["session_id"].as_str().unwrap().to_owned()
}

pub(super) fn result_of(output: &std::process::Output) -> Value {
    let lines = json_lines(&output.stdout);
    lines.last().cloned().unwrap()
}

/// Every session log, by whether it belongs to a subagent.
pub(super) fn logs(sandbox: &Sandbox) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(sandbox.home.join("sessions"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    paths.into_iter().partition(|path| read_jsonl(path)[0]["parent"].is_null())
}

pub(super) fn of_type<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter().filter(|line| line["type"] == kind).collect()
}

#[test]
fn explore_reads_is_refused_an_edit_and_its_finding_reaches_the_parent() {
    let sandbox = Sandbox::new();
    sandbox.write("src/config.rs", "pub const PORT: u16 = 8080;\n");
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![agent_call(
                    "explore",
                    "find the port",
                    "Find the port the server uses.",
                )]),
                answer("The server listens on 8080."),
            ],
        ),
        Route::system(
            "explore",
            EXPLORE,
            vec![
                calls(vec![call("read_file", json!({"path": "src/config.rs"}))]),
                calls(vec![call(
                    "edit_file",
                    json!({"path": "src/config.rs", "old_string": "8080", "new_string": "9090"}),
                )]),
                answer("PORT is 8080 (src/config.rs:1)."),
            ],
        ),
    ]);
    // Prices per million tokens, so the cost can be checked to count the child.
    let prices = [
        "-c",
        "context.input_price=1.0",
        "-c",
        "context.cached_input_price=1.0",
        "-c",
        "context.output_price=2.0",
    ];
    let flags: Vec<&str> = ["--full-auto"].into_iter().chain(prices).collect();
    let output = exec(&sandbox, &model, &flags, "Which port does the server use?");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let result = result_of(&output);
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["final_text"], "The server listens on 8080.");
    // Parent: 2 responses, child: 3, each 120 tokens in the script.
    assert_eq!(result["usage"]["total_tokens"], 600, "children's usage counts: {result}");
    // 500 input and 100 output tokens in all; the parent alone: 200 and 40.
    let cost = result["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0007).abs() < 1e-9, "children's cost counts: {result}");

    // The child worked in a fresh context, with read-only tools only.
    let child = model.of("explore");
    assert_eq!(child.len(), 3);
    assert!(system_of(&child[0].body).contains("# Working as a subagent"));
    assert!(!system_of(&child[0].body).contains(PARENT), "not the parent's prompt");
    assert_eq!(first_user_of(&child[0].body), "Find the port the server uses.");
    // Issue 32.6: a child has no phases, and nothing it reads says it has.
    assert!(!child[0].body.to_string().contains("set_phase"), "a child is told of set_phase");
    let offered = tool_names(&child[0].body);
    assert!(offered.contains(&"read_file".to_owned()), "{offered:?}");
    for absent in ["edit_file", "write_file", "apply_patch", "agent", "submit_plan"] {
        assert!(!offered.contains(&absent.to_owned()), "{absent} offered: {offered:?}");
    }
    // The edit was refused (the type is read-only) and nothing changed.
    let refused = tool_results(&child[2].body).pop().unwrap();
    assert!(refused.contains("not one of the read-only explore agent's tools"), "{refused}");
    assert_eq!(sandbox.read("src/config.rs"), "pub const PORT: u16 = 8080;\n");

    // The parent read the child's answer and what it did as the result.
    let parent = model.of("parent");
    let delegated = tool_results(&parent[1].body).pop().unwrap();
    assert!(delegated.starts_with("PORT is 8080 (src/config.rs:1)."), "{delegated}");
    assert!(delegated.contains("read: src/config.rs"), "{delegated}");
    assert!(!delegated.contains("changed:"), "the refused edit changed nothing: {delegated}");
    assert!(delegated.contains("explore subagent · 3 step(s)"), "{delegated}");
    let offered = tool_names(&parent[0].body);
    assert!(offered.contains(&"agent".to_owned()));
    let description = parent[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "agent")
        .unwrap()["function"]["description"]
        .to_string();
    for listed in ["- explore (read-only):", "- review (read-only):", "- verify:"] {
        assert!(description.contains(listed), "{listed} not in {description}");
    }

    // `--json`: the child's events carry `parent`, the agent call's id.
    let lines = json_lines(&output.stdout);
    let agent_started =
        lines.iter().find(|l| l["type"] == "item_started" && l["item"]["name"] == "agent").unwrap();
    let call_id = agent_started["item"]["call_id"].clone();
    let child_lines: Vec<&Value> = lines.iter().filter(|l| l["parent"] == call_id).collect();
    let child_types: Vec<&str> = child_lines.iter().map(|l| l["type"].as_str().unwrap()).collect();
    assert_eq!(child_types.first(), Some(&"session_started"), "{child_types:?}");
    assert_eq!(child_types.last(), Some(&"turn_completed"), "{child_types:?}");
    assert!(child_lines.iter().any(|l| l["item"]["name"] == "read_file"));
    let agent_done = lines
        .iter()
        .position(|l| l["type"] == "item_completed" && l["item"]["name"] == "agent")
        .unwrap();
    let last_child = lines.iter().rposition(|l| l["parent"] == call_id).unwrap();
    assert!(last_child < agent_done, "the child's events come before its result");

    // Logs: the parent links the child, whose log names its parent.
    let (parents, children) = logs(&sandbox);
    let (parent_log, child_log) = (read_jsonl(&parents[0]), read_jsonl(&children[0]));
    let started = of_type(&parent_log, "subagent_started")[0];
    assert_eq!(started["call_id"], call_id);
    assert_eq!(started["agent"], "explore");
    assert_eq!(Path::new(started["log_path"].as_str().unwrap()), children[0]);
    let finished = of_type(&parent_log, "subagent_finished")[0];
    assert_eq!(finished["outcome"], "completed");
    assert_eq!(finished["usage"]["input_tokens"], 300);
    assert_eq!(child_log[0]["parent"]["session_id"], parent_log[0]["session_id"]);
    assert_eq!(child_log[0]["mode"], "explore", "a read-only type runs read-only");
    assert_eq!(child_log.last().unwrap()["type"], "session_ended");
    // Its instructions are its type's, recorded like a session's and the
    // same bytes in each of its requests; its environment is announced in
    // its history.
    let system = system_of(&child[0].body);
    assert!(child.iter().all(|request| system_of(&request.body) == system), "prefix held");
    let recorded = of_type(&child_log, "prompt_prefix");
    assert_eq!(recorded.len(), 1);
    let core = recorded[0]["sections"]["core"].as_str().unwrap();
    assert!(core.starts_with("You are a subagent exploring"), "{core}");
    assert!(!system.contains("# Environment"), "the environment is not in the prefix");
    let announced = context_of(&child[0].body).concat();
    assert!(announced.contains("# Environment"), "{announced}");
    assert!(announced.contains(&sandbox.repo.display().to_string()), "{announced}");

    // `keel sessions` shows the child under its parent.
    let listing = sandbox.keel().args(["sessions"]).output().unwrap();
    let table = String::from_utf8_lossy(&listing.stdout);
    let rows: Vec<&str> = table.lines().collect();
    let child_id = child_log[0]["session_id"].as_str().unwrap();
    let parent_id = parent_log[0]["session_id"].as_str().unwrap();
    let parent_row = rows.iter().position(|r| r.starts_with(parent_id)).unwrap();
    assert!(rows[parent_row + 1].contains(child_id), "{table}");
    assert!(rows[parent_row + 1].contains("└ explore"), "{table}");
    // `--last` means the parent, never a subagent.
    let last = sandbox
        .keel()
        .args(["exec", "--json", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", model.uri), "resume", "--last"])
        .output()
        .unwrap();
    assert_eq!(
        result_of(&last)["session_id"],
        parent_id,
        "{}",
        String::from_utf8_lossy(&last.stdout)
    );
}

#[test]
fn two_read_only_children_run_at_the_same_time() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\n");
    sandbox.write("b.txt", "beta\n");
    // Each child's first answer waits until the other child has asked:
    // run one after the other, the first would wait forever (and fail).
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![
                    agent_call("explore", "read a", "task A: read a.txt"),
                    agent_call("explore", "read b", "task B: read b.txt"),
                ]),
                answer("both read"),
            ],
        ),
        Route::first_user(
            "child-a",
            "task A",
            vec![
                Reply::After(
                    "child-b",
                    Step::Calls {
                        text: None,
                        calls: vec![call("read_file", json!({"path": "a.txt"}))],
                    },
                ),
                answer("a.txt says alpha"),
            ],
        ),
        Route::first_user(
            "child-b",
            "task B",
            vec![
                Reply::After(
                    "child-a",
                    Step::Calls {
                        text: None,
                        calls: vec![call("read_file", json!({"path": "b.txt"}))],
                    },
                ),
                answer("b.txt says beta"),
            ],
        ),
    ]);
    let output = exec(&sandbox, &model, &[], "Read both files");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let (a, b) = (model.of("child-a"), model.of("child-b"));
    assert_eq!((a.len(), b.len()), (2, 2));
    // Interleaved: each child's first request came before the other's second.
    assert!(a[0].at < b[1].at && b[0].at < a[1].at);
    let gap = a[0].at.max(b[0].at) - a[0].at.min(b[0].at);
    eprintln!("first requests of the two children {} ms apart", gap.as_millis());
    let results = tool_results(&model.of("parent")[1].body);
    assert!(results[0].starts_with("a.txt says alpha"), "{results:?}");
    assert!(results[1].starts_with("b.txt says beta"), "results in call order: {results:?}");
}

/// A writer type from the user's own folder: it counts its runs.
pub(super) const COUNTER: &str = "---\nname: counter\ndescription: Appends a line to count.txt\n\
tools: Bash\n---\nYou are the counter agent. Run the command you are given.\n";

#[test]
fn a_child_killed_mid_task_is_resumed_without_running_its_finished_calls_again() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("agents")).unwrap();
    std::fs::write(sandbox.home.join("agents/counter.md"), COUNTER).unwrap();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![agent_call("counter", "count", "Run: echo run >> count.txt")]),
                answer("counted once"),
            ],
        ),
        Route::system(
            "counter",
            "You are the counter agent",
            vec![
                calls(vec![call("shell", json!({"command": "echo run >> count.txt"}))]),
                // keel is killed while this request waits.
                Reply::Hold,
                answer("count.txt has one more line"),
            ],
        ),
    ]);
    kill_when_held(&sandbox, &model, "Count once", "counter");
    assert_eq!(sandbox.read("count.txt"), "run\n");

    let output = exec(&sandbox, &model, &["--full-auto", "resume"], &parent_id(&sandbox));
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    assert_eq!(result["final_text"], "counted once");
    assert_eq!(sandbox.read("count.txt"), "run\n", "the child's finished call ran once");
    // The resumed child asked the model again and finished its task.
    let child = model.of("counter");
    assert_eq!(child.len(), 3);
    assert_eq!(tool_results(&child[2].body)[0], "(no output)", "{:?}", child[2].body);
    let delegated = tool_results(&model.of("parent")[1].body).pop().unwrap();
    assert!(delegated.starts_with("count.txt has one more line"), "{delegated}");
    let (parents, children) = logs(&sandbox);
    assert_eq!((parents.len(), children.len()), (1, 1), "the same child log was continued");
    let child_log = read_jsonl(&children[0]);
    assert_eq!(of_type(&child_log, "session_resumed").len(), 1);
    assert_eq!(of_type(&child_log, "tool_call_started").len(), 1, "nothing ran twice");
    // The resumed child sends the prefix it recorded (no break), and its
    // history only grew since the request keel was killed during.
    assert_eq!(of_type(&child_log, "prompt_prefix").len(), 1, "no prefix break");
    assert_eq!(system_of(&child[2].body), system_of(&child[0].body));
    assert_eq!(child[2].body["tools"], child[0].body["tools"]);
    let before = child[1].body["messages"].as_array().unwrap();
    let after = child[2].body["messages"].as_array().unwrap();
    assert_eq!(&after[..before.len()], &before[..], "the resumed child's history only grew");
    let parent_log = read_jsonl(&parents[0]);
    assert_eq!(of_type(&parent_log, "subagent_started").len(), 1);
    assert_eq!(of_type(&parent_log, "subagent_finished").len(), 1);
}

/// A Claude Code agent file, as found in the wild.
const SCOUT: &str = "---\nname: scout\ndescription: Finds where things are. Use proactively.\n\
tools: Read, Grep\nmodel: sonnet\n---\n\nYou are the scout. Report paths only.\n";

#[test]
fn a_claude_agent_file_is_honoured_once_the_project_is_trusted() {
    let sandbox = Sandbox::new();
    sandbox.write(".claude/agents/scout.md", SCOUT);
    let parent = |answer_text: &'static str| {
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![agent_call("scout", "find main", "Where is main?")]),
                answer(answer_text),
            ],
        )
    };
    // Untrusted: the type is not offered and a call to it is refused.
    let model = RoutedModel::start(vec![parent("no scout")]);
    let output = exec(&sandbox, &model, &[], "Find main");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("project agent definition(s) not loaded until you trust"), "{stdout}");
    let refused = tool_results(&model.of("parent")[1].body).pop().unwrap();
    assert!(refused.contains("there is no agent type `scout`"), "{refused}");

    let trust = sandbox.keel().arg("trust").output().unwrap();
    assert!(trust.status.success(), "{}", String::from_utf8_lossy(&trust.stderr));
    let model = RoutedModel::start(vec![
        parent("main is in src/main.rs"),
        Route::system(
            "scout",
            "You are the scout",
            vec![calls(vec![call("shell", json!({"command": "ls"}))]), answer("src/main.rs")],
        ),
    ]);
    let output = exec(&sandbox, &model, &["--full-auto"], "Find main");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let scout = model.of("scout");
    assert_eq!(tool_names(&scout[0].body), ["read_file", "grep"], "its `tools` list, mapped");
    assert_eq!(scout[0].body["model"], "m", "`sonnet` inherits the session's model");
    let refused = tool_results(&scout[1].body).pop().unwrap();
    assert!(
        refused.contains("`shell` is not one of the read-only scout agent's tools"),
        "{refused}"
    );
    let description = model.of("parent")[0].body["tools"].to_string();
    assert!(description.contains("- scout (read-only): Finds where things are."), "{description}");
}

#[test]
fn hooks_see_the_subagent_start_and_stop() {
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("hooks.jsonl");
    let hook = |event: &str, answer: &str| {
        let command =
            format!("cat >> '{}'; echo >> '{}'; {answer}", record.display(), record.display());
        format!(
            "[[hooks.{event}]]\nmatcher = \"explore\"\n[[hooks.{event}.hooks]]\n\
             type = \"command\"\ncommand = {command:?}\n"
        )
    };
    let context = r#"echo '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"marker-from-the-start-hook"}}'"#;
    let config = format!("{}{}", hook("SubagentStart", context), hook("SubagentStop", "true"));
    std::fs::write(sandbox.home.join("config.toml"), config).unwrap();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("explore", "look", "Look around.")]), answer("done")],
        ),
        Route::system("explore", EXPLORE, vec![answer("nothing here")]),
    ]);
    let output = exec(&sandbox, &model, &[], "Look around");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let payloads: Vec<Value> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let events: Vec<&str> =
        payloads.iter().map(|p| p["hook_event_name"].as_str().unwrap()).collect();
    assert_eq!(events, ["SubagentStart", "SubagentStop"]);
    let (_, children) = logs(&sandbox);
    let (parents, _) = logs(&sandbox);
    let parent_id = read_jsonl(&parents[0])[0]["session_id"].clone();
    for payload in &payloads {
        assert_eq!(payload["agent_type"], "explore");
        assert_eq!(payload["session_id"], parent_id, "the parent's session, as Claude Code");
        assert_eq!(Path::new(payload["agent_transcript_path"].as_str().unwrap()), children[0]);
    }
    assert_eq!(payloads[1]["last_assistant_message"], "nothing here");
    // In the child's history as keel's context, the prefix untouched.
    let first = &model.of("explore")[0].body;
    let context = context_of(first).concat();
    assert!(
        context.contains("marker-from-the-start-hook"),
        "SubagentStart context reaches the child: {context}"
    );
    assert!(!system_of(first).contains("marker-from-the-start-hook"));
}

/// A sandbox whose `counter` agent type runs `echo`, which a rule makes
/// ask, and a model whose parent delegates one count to it: a question
/// a headless child cannot put to anyone.
pub(super) fn counter_that_must_ask() -> (Sandbox, RoutedModel) {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("agents")).unwrap();
    std::fs::write(sandbox.home.join("agents/counter.md"), COUNTER).unwrap();
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    std::fs::write(
        sandbox.home.join("rules/ask.rules"),
        "prefix_rule(pattern=[\"echo\"], decision=\"prompt\")\n",
    )
    .unwrap();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("counter", "count", "Run: echo run")]), answer("done")],
        ),
        Route::system(
            "counter",
            "You are the counter agent",
            vec![
                calls(vec![call("shell", json!({"command": "echo run >> count.txt"}))]),
                answer("it was declined"),
            ],
        ),
    ]);
    (sandbox, model)
}

#[test]
fn a_call_a_headless_child_could_not_ask_about_makes_the_run_need_approval() {
    let (sandbox, model) = counter_that_must_ask();
    let output = exec(&sandbox, &model, &["--full-auto"], "Count");
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(3), "{result}");
    assert_eq!(result["status"], "needs_approval");
    assert_eq!(result["declined"][0]["name"], "shell", "{result}");
    assert!(
        result["declined"][0]["reason"].as_str().unwrap().contains("asked by the counter subagent")
    );
    assert!(!sandbox.repo.join("count.txt").exists());
}
