//! What bounds a subagent, through the real `keel exec` binary against a
//! routed model (`routed_model.rs`): a Claude agent file's disallowed tools
//! and permission mode, a command's `allowed-tools` (pre-approvals, across a
//! kill and resume too; a child keeps its type's tools), the delegation depth, the user's hooks and the secret guard, the
//! session's MCP servers (never started again), token budgets shared by
//! children. Helpers are `subagents_e2e.rs`'s.

use serde_json::{Value, json};

use super::routed_model::{Reply, Route, RoutedModel, first_user_of, tool_names, tool_results};
use super::subagents_e2e::{
    COUNTER, EXPLORE, PARENT, agent_call, answer, calls, exec, kill_when_held, logs, of_type,
    parent_id, result_of, spawn_exec,
};
use super::support::{Sandbox, read_jsonl};
use super::wire::call;

/// Claude Code's "everything but edits" agent, asking for Claude's
/// permission bypass, which keel does not grant.
const CAREFUL: &str = "---\nname: careful\ndescription: Looks, never edits\n\
disallowedTools: Write, Edit, MultiEdit\npermissionMode: bypassPermissions\n---\n\
You are the careful agent.\n";

#[test]
fn a_claude_agents_disallowed_tools_are_withheld_and_its_permission_mode_is_not_granted() {
    let sandbox = Sandbox::new();
    sandbox.write(".claude/agents/careful.md", CAREFUL);
    let trust = sandbox.keel().arg("trust").output().unwrap();
    assert!(trust.status.success(), "{}", String::from_utf8_lossy(&trust.stderr));
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("careful", "look", "Look, then note it.")]), answer("ok")],
        ),
        Route::system(
            "careful",
            "You are the careful agent",
            vec![
                calls(vec![call("write_file", json!({"path": "note.txt", "content": "x\n"}))]),
                calls(vec![call("shell", json!({"command": "echo x > note.txt"}))]),
                answer("could not write"),
            ],
        ),
    ]);
    let output = exec(&sandbox, &model, &["--full-auto"], "Look and note");
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    let careful = model.of("careful");
    assert_eq!(careful.len(), 3, "{result}");
    let offered = tool_names(&careful[0].body);
    for withheld in ["write_file", "edit_file", "apply_patch"] {
        assert!(!offered.contains(&withheld.to_owned()), "{withheld} offered: {offered:?}");
    }
    assert!(offered.contains(&"shell".to_owned()), "Bash was not withheld: {offered:?}");
    let refused = tool_results(&careful[1].body).pop().unwrap();
    assert!(refused.contains("`write_file` is not one of the careful agent's tools"), "{refused}");
    assert_eq!(sandbox.read("note.txt"), "x\n", "the shell it kept ran");
    // bypassPermissions gave it nothing: it ran in the parent's mode.
    let (_, children) = logs(&sandbox);
    assert_eq!(read_jsonl(&children[0])[0]["mode"], "auto", "the parent's mode, no more");
}

/// Issue 36: a command's `allowed-tools` pre-approve its own turn's calls
/// and narrow nothing, a child's tools included: the child gets its type's
/// tools. Before, `verify` was cut to `read_file` and made read-only.
#[test]
fn a_subagent_of_a_commands_turn_gets_its_types_tools() {
    let sandbox = Sandbox::new();
    sandbox.write("Makefile", "check:\n\ttrue\n");
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/look.md"),
        "---\ndescription: Look only\nallowed-tools: Read, Task\n---\nLook at $ARGUMENTS.\n",
    )
    .unwrap();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![agent_call("verify", "check", "Run the project's checks.")]),
                answer("looked"),
            ],
        ),
        Route::system(
            "verify",
            "You are a subagent verifying",
            vec![
                calls(vec![call("shell", json!({"command": "make check > out.txt"}))]),
                answer("could not run them"),
            ],
        ),
    ]);
    let output = exec(&sandbox, &model, &["--full-auto"], "/look the Makefile");
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    assert_eq!(first_user_of(&model.of("parent")[0].body), "Look at the Makefile.");
    let verify = model.of("verify");
    assert!(tool_names(&verify[0].body).contains(&"shell".to_owned()), "verify's own tools");
    let result = tool_results(&verify[1].body).pop().unwrap();
    assert!(!result.contains("is not one of"), "{result}");
    let (_, children) = logs(&sandbox);
    assert_eq!(read_jsonl(&children[0])[0]["mode"], "auto", "the parent's mode");
}

/// The pre-approvals are logged with the turn: a turn resumed after a
/// kill in ask mode still runs what `allowed-tools` lists without asking.
#[test]
fn a_command_turn_resumed_after_a_kill_keeps_its_allowed_tools() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/look.md"),
        "---\ndescription: Look\nallowed-tools: Read, Bash(touch out.txt)\n---\nLook at $ARGUMENTS.\n",
    )
    .unwrap();
    let model = RoutedModel::start(vec![Route::system(
        "parent",
        PARENT,
        vec![
            // keel is killed while this request waits.
            Reply::Hold,
            calls(vec![call("shell", json!({"command": "touch out.txt"}))]),
            answer("looked"),
        ],
    )]);
    kill_when_held(&sandbox, &model, "/look the Makefile", "parent");

    let output = exec(&sandbox, &model, &["--mode", "ask", "resume"], &parent_id(&sandbox));
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "asked, so declined: {result}");
    let parent = model.of("parent");
    assert_eq!(parent.len(), 3);
    assert!(sandbox.repo.join("out.txt").exists(), "the resumed turn lost its pre-approval");
}

/// A command's model lasts its turn, also when that turn is resumed after
/// a kill: the resumed turn runs on it, the turns after on the session's.
#[test]
fn a_command_turn_resumed_after_a_kill_goes_back_to_the_sessions_model() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("commands")).unwrap();
    std::fs::write(
        sandbox.home.join("commands/quick.md"),
        "---\nmodel: small-model\n---\nAnswer briefly: $ARGUMENTS\n",
    )
    .unwrap();
    let model = RoutedModel::start(vec![Route::system(
        "parent",
        PARENT,
        // keel is killed while the first request waits.
        vec![Reply::Hold, answer("4"), answer("next")],
    )]);
    kill_when_held(&sandbox, &model, "/quick 2+2", "parent");
    let id = parent_id(&sandbox);
    let output = exec(&sandbox, &model, &["--full-auto", "resume"], &id);
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    let output = exec(&sandbox, &model, &["--full-auto", "resume", &id], "and now?");
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    let models: Vec<Value> =
        model.of("parent").iter().map(|request| request.body["model"].clone()).collect();
    assert_eq!(models, [json!("small-model"), json!("small-model"), json!("m")]);
}

/// A type without a `tools` list: every tool the session may give it.
const HELPER: &str =
    "---\nname: helper\ndescription: Does anything\n---\nYou are the helper agent.\n";

#[test]
fn a_subagent_delegates_further_only_when_the_depth_is_configured() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("agents")).unwrap();
    std::fs::write(sandbox.home.join("agents/helper.md"), HELPER).unwrap();
    let routes = || {
        vec![
            Route::system(
                "parent",
                PARENT,
                vec![calls(vec![agent_call("helper", "help", "Help.")]), answer("helped")],
            ),
            Route::system(
                "helper",
                "You are the helper agent",
                vec![
                    calls(vec![agent_call("explore", "look", "Look around.")]),
                    answer("delegation refused"),
                ],
            ),
            Route::system("explore", EXPLORE, vec![answer("nothing here")]),
        ]
    };
    // The default depth, 1: the session delegates, its subagents do not.
    let model = RoutedModel::start(routes());
    let output = exec(&sandbox, &model, &["--full-auto"], "Get help");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let helper = model.of("helper");
    assert!(!tool_names(&helper[0].body).contains(&"agent".to_owned()));
    let refused = tool_results(&helper[1].body).pop().unwrap();
    assert!(refused.contains("`agent` is not one of the helper agent's tools"), "{refused}");
    assert!(model.of("explore").is_empty());

    let model = RoutedModel::start(routes());
    let output = exec(&sandbox, &model, &["--full-auto", "-c", "agents.max_depth=2"], "Get help");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    assert!(tool_names(&model.of("helper")[0].body).contains(&"agent".to_owned()));
    assert_eq!(model.of("explore").len(), 1, "the grandchild ran");
    let (_, children) = logs(&sandbox);
    let depths: Vec<Value> =
        children.iter().map(|path| read_jsonl(path)[0]["parent"]["depth"].clone()).collect();
    assert!(depths.contains(&json!(2)), "{depths:?}");
}

#[test]
fn a_subagents_calls_meet_the_users_hooks_and_the_secret_guard() {
    let sandbox = Sandbox::new();
    sandbox.write(".env", "API_KEY=sk-live-123\n");
    sandbox.write("a.txt", "alpha\n");
    let record = sandbox.home.join("pre.jsonl");
    let config = format!(
        "[[hooks.PreToolUse]]\nmatcher = \"Grep\"\n[[hooks.PreToolUse.hooks]]\n\
         type = \"command\"\ncommand = {:?}\n",
        format!("cat >> '{}'; echo 'no searching here' >&2; exit 2", record.display())
    );
    std::fs::write(sandbox.home.join("config.toml"), config).unwrap();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("explore", "look", "Look around.")]), answer("done")],
        ),
        Route::system(
            "explore",
            EXPLORE,
            vec![
                calls(vec![
                    call("read_file", json!({"path": ".env"})),
                    call("grep", json!({"pattern": "alpha"})),
                ]),
                answer("blocked twice"),
            ],
        ),
    ]);
    let output = exec(&sandbox, &model, &[], "Look around");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let results = tool_results(&model.of("explore")[1].body);
    assert!(!results[0].contains("sk-live-123"), "the secret reached the model: {results:?}");
    assert!(results[0].contains("protect_secrets"), "{results:?}");
    assert!(results[1].contains("no searching here"), "{results:?}");
    let payload: Value =
        serde_json::from_str(std::fs::read_to_string(&record).unwrap().trim()).unwrap();
    assert_eq!(payload["tool_name"], "grep", "keel's own hook config speaks keel's names");
}

#[test]
fn an_interrupt_mid_child_keeps_its_work_in_both_logs_and_a_resume_does_not_redo_it() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("agents")).unwrap();
    std::fs::write(sandbox.home.join("agents/counter.md"), COUNTER).unwrap();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![agent_call("counter", "count", "Run: echo run >> count.txt")]),
                answer("the counter was interrupted after one run"),
            ],
        ),
        Route::system(
            "counter",
            "You are the counter agent",
            vec![
                calls(vec![call("shell", json!({"command": "echo run >> count.txt"}))]),
                // Ctrl+C arrives while this request waits.
                Reply::Hold,
            ],
        ),
    ]);
    let running = spawn_exec(&sandbox, &model, "Count once", std::process::Stdio::piped());
    assert_eq!(model.held(), "counter");
    let pid = running.id().to_string();
    assert!(std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let output = running.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130));
    assert_eq!(result_of(&output)["status"], "interrupted");

    // The child's finished call and what it came to are on record.
    let (parents, children) = logs(&sandbox);
    let child_log = read_jsonl(&children[0]);
    assert_eq!(of_type(&child_log, "tool_call_finished").len(), 1);
    let parent_log = read_jsonl(&parents[0]);
    assert_eq!(of_type(&parent_log, "subagent_finished")[0]["outcome"], "interrupted");
    let answered = of_type(&parent_log, "tool_call_finished");
    let text = answered[0]["result"]["output"].as_str().unwrap();
    assert!(text.contains("the subagent was interrupted"), "{text}");
    assert!(text.contains("ran: echo run >> count.txt"), "what it did is kept: {text}");

    // Resumed, the parent reads that result; the child is not run again.
    let parent_id = parent_log[0]["session_id"].as_str().unwrap().to_owned();
    let output = exec(&sandbox, &model, &["--full-auto", "resume", &parent_id], "Go on");
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    assert_eq!(result["final_text"], "the counter was interrupted after one run");
    assert_eq!(model.of("counter").len(), 2, "the child asked nothing more");
    assert_eq!(sandbox.read("count.txt"), "run\n");
    let delegated = tool_results(&model.of("parent")[1].body).pop().unwrap();
    assert!(delegated.contains("ran: echo run >> count.txt"), "{delegated}");
}

#[test]
fn a_subagent_starts_none_of_the_sessions_mcp_servers_again() {
    let Some(python) = super::mcp_support::python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("fault-ok.jsonl");
    super::mcp_support::write_config(
        &sandbox,
        &super::mcp_support::fault_table("fault", &python, "ok", &record, ""),
    );
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("explore", "look", "Look around.")]), answer("done")],
        ),
        Route::system("explore", EXPLORE, vec![answer("nothing here")]),
    ]);
    let output = exec(&sandbox, &model, &[], "Look around");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(tool_names(&model.of("parent")[0].body).iter().any(|t| t.starts_with("mcp__fault__")));
    let child_tools = tool_names(&model.of("explore")[0].body);
    assert!(!child_tools.iter().any(|t| t.starts_with("mcp__")), "{child_tools:?}");
    let starts = super::mcp_support::recorded(&record)
        .into_iter()
        .filter(|line| line["method"] == "initialize")
        .count();
    assert_eq!(starts, 1, "the server started once, for the session");
    // Nor did the child begin to start one (a server's log folder is made
    // as it is spawned).
    let (_, children) = logs(&sandbox);
    let child_id = read_jsonl(&children[0])[0]["session_id"].as_str().unwrap().to_owned();
    let child_logs = sandbox.home.join("logs/mcp").join(&child_id);
    assert!(!child_logs.exists(), "{} exists", child_logs.display());
}

/// `[agents] max_tokens` is checked before each of a child's requests, as
/// the session's limits are: a request whose projection would cross it is
/// never sent (it used to be checked after each response, so a child could
/// overshoot by one whole request).
#[test]
fn a_childs_token_budget_stops_the_request_that_would_cross_it() {
    let sandbox = Sandbox::new();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("explore", "look", "Look around.")]), answer("ok")],
        ),
        Route::system("explore", EXPLORE, vec![answer("nothing here")]),
    ]);
    // The child's first request alone (its prompt and tools, ~1k output
    // expected) is projected at several thousand tokens.
    let output = exec(&sandbox, &model, &["--full-auto", "-c", "agents.max_tokens=2000"], "Look");
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    assert!(model.of("explore").is_empty(), "the crossing request reached the model");
    let parent = model.of("parent");
    let result = tool_results(&parent[1].body).pop().unwrap();
    assert!(result.contains("[agents] max_tokens") && result.contains("2000"), "{result}");
    let (_, children) = logs(&sandbox);
    let child = read_jsonl(&children[0]);
    let set = of_type(&child, "limits_set");
    assert_eq!(set[0]["max_tokens"], 2000, "{set:?}");
    assert_eq!(of_type(&child, "budget_exceeded")[0]["limit"], "tokens");
}

/// Children running side by side share what is left of the session's
/// spend limits: each gets an equal share, so together they cannot spend
/// past it (each used to get the whole rest).
#[test]
fn children_side_by_side_share_what_is_left_of_the_limit() {
    let sandbox = Sandbox::new();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![
                    agent_call("explore", "look a", "task A: look"),
                    agent_call("explore", "look b", "task B: look"),
                ]),
                answer("both looked"),
            ],
        ),
        Route::first_user("child-a", "task A", vec![answer("a done")]),
        Route::first_user("child-b", "task B", vec![answer("b done")]),
    ]);
    let output = exec(&sandbox, &model, &["--full-auto", "--max-tokens", "100000"], "Look twice");
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    let (parents, children) = logs(&sandbox);
    let parent = read_jsonl(&parents[0]);
    let spent: u64 = of_type(&parent, "model_response")
        .iter()
        .take(1)
        .map(|line| {
            let usage = &line["response"]["usage"];
            usage["input_tokens"].as_u64().unwrap() + usage["output_tokens"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(children.len(), 2);
    let limits: Vec<u64> = children
        .iter()
        .map(|path| of_type(&read_jsonl(path), "limits_set")[0]["max_tokens"].as_u64().unwrap())
        .collect();
    let left = 100_000 - spent;
    assert_eq!(limits, [left / 2, left / 2], "an equal share of the {left} tokens left each");
}
