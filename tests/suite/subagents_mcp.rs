//! Subagents calling the session's MCP tools, through the real `keel exec`
//! binary, the fault server (`tests/fixtures/mcp/fault_server.py`: `echo`
//! and `slow` annotated read-only, `add` writes a counter file) and a model
//! that answers the parent and each child from its own script: a type
//! listing `mcp__…` tools calls them through the parent's running server
//! under the same rules, a read-only type is never offered a tool that may
//! change things, a grandchild shares the same server, and a child killed
//! after an MCP call resumes with the same tools without calling again.

use serde_json::{Value, json};

use super::mcp_support::{fault_table, python, recorded, write_config};
use super::routed_model::{Reply, Route, RoutedModel, tool_names, tool_results, unfenced};
use super::subagents_e2e::{
    PARENT, agent_call, answer, calls, exec, kill_when_held, logs, of_type, parent_id, result_of,
};
use super::support::{Sandbox, json_lines, read_jsonl};
use super::wire::call;

/// A sandbox with the fault server configured as `fault` (its read-only
/// claims trusted when `trusted`), the agent type files `agents` in
/// `$KEEL_HOME/agents`, and where the server records what it receives.
fn sandbox_with(
    python: &str,
    trusted: bool,
    agents: &[(&str, &str)],
) -> (Sandbox, std::path::PathBuf) {
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("fault.jsonl");
    let trust = format!("trust_read_only_hint = {trusted}");
    write_config(&sandbox, &fault_table("fault", python, "ok", &record, &trust));
    std::fs::create_dir_all(sandbox.home.join("agents")).unwrap();
    for (name, text) in agents {
        std::fs::write(sandbox.home.join("agents").join(format!("{name}.md")), text).unwrap();
    }
    (sandbox, record)
}

/// The JSON-RPC methods the server received, and the tools it was called with.
fn received(record: &std::path::Path) -> (usize, Vec<String>) {
    let lines = recorded(record);
    let starts = lines.iter().filter(|line| line["method"] == "initialize").count();
    let called = (lines.iter())
        .filter(|line| line["method"] == "tools/call")
        .map(|line| line["params"]["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    (starts, called)
}

fn mcp_tools(body: &Value) -> Vec<String> {
    tool_names(body).into_iter().filter(|name| name.starts_with("mcp__")).collect()
}

/// A writer type from the user's folder listing two of the server's tools.
const LOOKUP: &str = "---\nname: lookup\ndescription: Looks things up\n\
tools: Read, mcp__fault__echo, mcp__fault__slow\n---\nYou are the lookup agent.\n";

#[test]
fn a_type_listing_an_mcp_tool_calls_it_through_the_parents_running_server() {
    let Some(python) = python() else { return };
    let (sandbox, record) = sandbox_with(&python, true, &[("lookup", LOOKUP)]);
    // The session's tool rules hold in the child as in the parent.
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    let forbid = "tool_rule(name = \"mcp__fault__slow\", decision = \"forbidden\", \
                  justification = \"too slow\")\n";
    std::fs::write(sandbox.home.join("rules/mcp.rules"), forbid).unwrap();
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![
                calls(vec![agent_call("lookup", "ask the server", "Ask the server.")]),
                // The server still runs after the child closed.
                calls(vec![call("mcp__fault__echo", json!({"text": "after"}))]),
                answer("done"),
            ],
        ),
        Route::system(
            "lookup",
            "You are the lookup agent",
            vec![
                calls(vec![call("mcp__fault__echo", json!({"text": "from the child"}))]),
                calls(vec![call("mcp__fault__slow", json!({}))]),
                answer("the server said: echo: from the child"),
            ],
        ),
    ]);
    let output = exec(&sandbox, &model, &["--full-auto"], "Ask the server through a subagent");
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    assert_eq!(result["status"], "completed", "{result}");

    let child = model.of("lookup");
    assert_eq!(child.len(), 3);
    assert_eq!(mcp_tools(&child[0].body), ["mcp__fault__echo", "mcp__fault__slow"]);
    // The server's answer reaches the model fenced as untrusted.
    let answered = tool_results(&child[1].body).pop().unwrap();
    assert!(answered.starts_with("<untrusted source=\"mcp:fault\">"), "{answered}");
    assert_eq!(unfenced(&answered), "echo: from the child");
    let refused = tool_results(&child[2].body).pop().unwrap();
    assert!(refused.contains("is forbidden: too slow"), "{refused}");
    let parent = model.of("parent");
    let delegated = tool_results(&parent[1].body).pop().unwrap();
    assert!(delegated.starts_with("the server said: echo: from the child"), "{delegated}");
    assert_eq!(unfenced(&tool_results(&parent[2].body).pop().unwrap()), "echo: after");

    // One server, started once for the session; the forbidden call never
    // reached it.
    let (starts, called) = received(&record);
    assert_eq!(starts, 1, "the child started no server");
    assert_eq!(called, ["echo", "echo"]);
    // The child's calls are in its own log like any call.
    let (_, children) = logs(&sandbox);
    let child_log = read_jsonl(&children[0]);
    let finished: Vec<&str> = of_type(&child_log, "tool_call_finished")
        .iter()
        .map(|line| line["result"]["output"].as_str().unwrap())
        .collect();
    assert_eq!(finished[0], "echo: from the child", "{finished:?}");
    let child_id = child_log[0]["session_id"].as_str().unwrap();
    assert!(!sandbox.home.join("logs/mcp").join(child_id).exists(), "no server log of its own");
}

/// A writer type listing the server's writer.
const ADDER: &str = "---\nname: adder\ndescription: Adds\n\
tools: mcp__fault__add\n---\nYou are the adder.\n";

#[test]
fn a_childs_mcp_writer_is_asked_about_through_the_session_like_the_parents() {
    let Some(python) = python() else { return };
    for (flags, ran) in [(&["--full-auto"][..], false), (&["--yolo"][..], true)] {
        let (sandbox, record) = sandbox_with(&python, true, &[("adder", ADDER)]);
        let model = RoutedModel::start(vec![
            Route::system(
                "parent",
                PARENT,
                vec![calls(vec![agent_call("adder", "add", "Add one.")]), answer("done")],
            ),
            Route::system(
                "adder",
                "You are the adder",
                vec![calls(vec![call("mcp__fault__add", json!({}))]), answer("tried")],
            ),
        ]);
        let output = exec(&sandbox, &model, flags, "Add through a subagent");
        let result = result_of(&output);
        let count = std::path::Path::new(&format!("{}.count", record.display())).exists();
        assert_eq!(count, ran, "{flags:?}: {result}");
        let answer = tool_results(&model.of("adder")[1].body).pop().unwrap();
        if ran {
            assert_eq!(output.status.code(), Some(0), "{result}");
            assert_eq!(unfenced(&answer), "added one");
        } else {
            // Auto asks about an MCP writer; headless, the question is
            // declined and the run says what would allow it.
            assert_eq!(output.status.code(), Some(3), "{result}");
            assert_eq!(result["declined"][0]["name"], "mcp__fault__add", "{result}");
            let reason = result["declined"][0]["reason"].as_str().unwrap();
            assert!(reason.contains("asked by the adder subagent"), "{reason}");
            assert!(answer.contains("needs approval"), "{answer}");
        }
    }
}

/// A read-only type (`permissionMode: plan`) listing a writer among its tools.
const SCOUT: &str = "---\nname: scout\ndescription: Looks without touching\n\
tools: Read, mcp__fault__echo, mcp__fault__add\npermissionMode: plan\n---\nYou are the scout.\n";

#[test]
fn a_read_only_type_is_never_offered_an_mcp_tool_that_may_change_things() {
    let Some(python) = python() else { return };
    for trusted in [true, false] {
        let (sandbox, record) = sandbox_with(&python, trusted, &[("scout", SCOUT)]);
        let model = RoutedModel::start(vec![
            Route::system(
                "parent",
                PARENT,
                vec![calls(vec![agent_call("scout", "look", "Look.")]), answer("done")],
            ),
            Route::system(
                "scout",
                "You are the scout",
                vec![calls(vec![call("mcp__fault__add", json!({}))]), answer("could not add")],
            ),
        ]);
        // Even under the widest parent mode.
        let output = exec(&sandbox, &model, &["--yolo"], "Scout");
        assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
        let child = model.of("scout");
        // Trusted, `echo` is a read and offered; untrusted, nothing is.
        let expected: &[&str] = if trusted { &["mcp__fault__echo"] } else { &[] };
        assert_eq!(mcp_tools(&child[0].body), expected, "trusted: {trusted}");
        let refused = tool_results(&child[1].body).pop().unwrap();
        assert!(
            refused.contains("`mcp__fault__add` is not one of the read-only scout agent's tools"),
            "{refused}"
        );
        let (_, called) = received(&record);
        assert!(called.is_empty(), "nothing reached the server: {called:?}");
        assert!(!std::path::Path::new(&format!("{}.count", record.display())).exists());
        // The user hears why the type goes without the tool.
        let warned = json_lines(&output.stdout).into_iter().any(|line| {
            line["type"] == "warning"
                && line["message"].as_str().is_some_and(|m| {
                    m.starts_with("agent `scout` runs without: ")
                        && m.contains("mcp__fault__add may change things")
                })
        });
        assert!(warned, "{}", String::from_utf8_lossy(&output.stdout));
    }
}

/// A type without a `tools` list: every tool, MCP ones included.
const RELAY: &str = "---\nname: relay\ndescription: Passes work on\n---\nYou are the relay.\n";

#[test]
fn a_grandchild_calls_the_same_running_server() {
    let Some(python) = python() else { return };
    let (sandbox, record) = sandbox_with(&python, true, &[("relay", RELAY), ("lookup", LOOKUP)]);
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("relay", "relay", "Pass it on.")]), answer("done")],
        ),
        Route::system(
            "relay",
            "You are the relay",
            vec![calls(vec![agent_call("lookup", "ask", "Ask the server.")]), answer("relayed")],
        ),
        Route::system(
            "lookup",
            "You are the lookup agent",
            vec![
                calls(vec![call("mcp__fault__echo", json!({"text": "deep"}))]),
                answer("echo: deep"),
            ],
        ),
    ]);
    let output = exec(&sandbox, &model, &["--full-auto", "-c", "agents.max_depth=2"], "Relay");
    assert_eq!(output.status.code(), Some(0), "{}", result_of(&output));
    // No list: the relay inherits every tool of the session's server.
    let relay = model.of("relay");
    assert_eq!(
        mcp_tools(&relay[0].body),
        ["mcp__fault__echo", "mcp__fault__add", "mcp__fault__slow"]
    );
    let lookup = model.of("lookup");
    assert_eq!(unfenced(&tool_results(&lookup[1].body).pop().unwrap()), "echo: deep");
    assert!(tool_results(&relay[1].body).pop().unwrap().starts_with("echo: deep"));
    let (starts, called) = received(&record);
    assert_eq!((starts, called), (1, vec!["echo".to_owned()]), "one server for three sessions");
}

/// A writer type that calls `echo`, then waits.
const ECHOER: &str = "---\nname: echoer\ndescription: Echoes\n\
tools: mcp__fault__echo\n---\nYou are the echoer.\n";

#[test]
fn a_child_killed_after_an_mcp_call_resumes_with_the_same_tools_and_calls_nothing_again() {
    let Some(python) = python() else { return };
    let (sandbox, record) = sandbox_with(&python, true, &[("echoer", ECHOER)]);
    let model = RoutedModel::start(vec![
        Route::system(
            "parent",
            PARENT,
            vec![calls(vec![agent_call("echoer", "echo", "Echo a.")]), answer("echoed")],
        ),
        Route::system(
            "echoer",
            "You are the echoer",
            vec![
                calls(vec![call("mcp__fault__echo", json!({"text": "a"}))]),
                // keel is killed while this request waits.
                Reply::Hold,
                answer("the server said echo: a"),
            ],
        ),
    ]);
    kill_when_held(&sandbox, &model, "Echo through a subagent", "echoer");
    let output = exec(&sandbox, &model, &["--full-auto", "resume"], &parent_id(&sandbox));
    let result = result_of(&output);
    assert_eq!(output.status.code(), Some(0), "{result}");
    assert_eq!(result["final_text"], "echoed");
    let child = model.of("echoer");
    assert_eq!(child.len(), 3);
    assert_eq!(mcp_tools(&child[0].body), ["mcp__fault__echo"]);
    assert_eq!(child[2].body["tools"], child[0].body["tools"], "the same tools after the resume");
    let results: Vec<String> = tool_results(&child[2].body).iter().map(|r| unfenced(r)).collect();
    assert_eq!(results, ["echo: a"]);
    let delegated = tool_results(&model.of("parent")[1].body).pop().unwrap();
    assert!(delegated.starts_with("the server said echo: a"), "{delegated}");
    // Each keel process started the server once; the call ran once.
    let (starts, called) = received(&record);
    assert_eq!((starts, called), (2, vec!["echo".to_owned()]));
    let (_, children) = logs(&sandbox);
    let child_log = read_jsonl(&children[0]);
    assert_eq!(of_type(&child_log, "prompt_prefix").len(), 1, "no prefix break");
}
