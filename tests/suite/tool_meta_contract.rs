//! The tool-result metadata (`protocol::ToolMeta`) as scripts and the log
//! see it, pinned byte for byte: one scripted session calls every built-in
//! tool (successes and failures), calls policy refuses and the loop's own
//! harness tools; the snapshot holds each `tool_call_finished` log line and
//! each `--json` `item_completed` line of a tool call, exactly as written
//! (key order included), with only times, temp paths and the built-in
//! skill's text replaced. (A sandbox violation's `kind` depends on the
//! host having the jail; its place is pinned by `protocol::tool_meta`'s
//! unit test.)

use serde_json::json;

use super::support::{Model, Sandbox, scripted_model};
use super::wire::{Step, Wire, call};

fn steps() -> Vec<Step> {
    let calls = |calls: Vec<(String, String)>| Step::Calls { text: None, calls };
    vec![
        calls(vec![
            call("read_file", json!({"path": "a.txt"})),
            call("list_dir", json!({})),
            call("glob", json!({"pattern": "*.txt"})),
            call("grep", json!({"pattern": "alpha"})),
            call("load_skill", json!({"name": "review"})),
        ]),
        calls(vec![call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
        )]),
        calls(vec![call("write_file", json!({"path": "new.txt", "content": "new\n"}))]),
        calls(vec![call(
            "apply_patch",
            json!({"patch": "*** Begin Patch\n*** Add File: added.txt\n+added\n*** End Patch\n"}),
        )]),
        calls(vec![call("shell", json!({"command": "echo hi"}))]),
        calls(vec![call("shell", json!({"command": "echo oops >&2; exit 3"}))]),
        calls(vec![call("shell", json!({"command": "echo x > .git/keel-probe"}))]),
        calls(vec![call("shell", json!({"command": "sleep 5", "timeout_ms": 200}))]),
        calls(vec![
            call("read_file", json!({"path": "missing.txt"})),
            call("read_memory", json!({"name": "nothing"})),
        ]),
        calls(vec![call("frobnicate", json!({}))]),
        calls(vec![call("edit_file", json!({"path": "a.txt"}))]),
        calls(vec![call("shell", json!({"command": "rm -rf /"}))]),
        calls(vec![call(
            "todo_write",
            json!({"todos": [{"text": "pin the meta", "status": "doing"}]}),
        )]),
        // Claude Code's TodoWrite fields (`content`, `activeForm`) work too.
        calls(vec![call(
            "todo_write",
            json!({"todos": [{"content": "pin the meta", "status": "in_progress", "activeForm": "Pinning"}]}),
        )]),
        Step::Answer("done".into()),
    ]
}

/// Replaces what differs between runs (times, the sandbox's folders) and
/// what is not metadata and changes on its own (the built-in skill's text).
fn normalized(line: &str, sandbox: &Sandbox) -> String {
    let line = line
        .replace(&sandbox.repo.display().to_string(), "<repo>")
        .replace(&sandbox.home.display().to_string(), "<home>");
    let line = regex::Regex::new(r##""output":"# Skill: review(?:[^"\\]|\\.)*""##)
        .unwrap()
        .replace_all(&line, r#""output":"<the review skill>""#)
        .into_owned();
    let line = regex::Regex::new(r#""duration_ms":\d+"#)
        .unwrap()
        .replace_all(&line, r#""duration_ms":N"#)
        .into_owned();
    regex::Regex::new(r#""ts":"[^"]*""#).unwrap().replace_all(&line, r#""ts":"T""#).into_owned()
}

/// The `tool_call_finished` lines of the log and the tool calls' `--json`
/// `item_completed` lines of one `keel exec --json` run.
async fn run(sandbox: &Sandbox, steps: &[Step], flags: &[&str]) -> String {
    let server = scripted_model(Wire::Chat, steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json"])
        .args(flags)
        .arg("touch every tool")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut snapshot = String::from("# log: tool_call_finished\n");
    let logs = std::fs::read_dir(sandbox.home.join("sessions")).unwrap();
    let mut logs: Vec<_> = logs.flatten().map(|entry| entry.path()).collect();
    logs.retain(|path| path.extension().is_some_and(|e| e == "jsonl"));
    logs.sort_by_key(|path| std::fs::metadata(path).and_then(|m| m.modified()).ok());
    let log = std::fs::read_to_string(logs.last().unwrap()).unwrap();
    for line in log.lines().filter(|line| line.contains(r#""type":"tool_call_finished""#)) {
        snapshot.push_str(&normalized(line, sandbox));
        snapshot.push('\n');
    }
    snapshot.push_str("\n# --json: item_completed tool calls\n");
    for line in stdout
        .lines()
        .filter(|line| line.contains(r#""type":"item_completed""#) && line.contains("tool_call"))
    {
        snapshot.push_str(&normalized(line, sandbox));
        snapshot.push('\n');
    }
    snapshot
}

#[tokio::test]
async fn tool_meta_in_the_log_and_json_is_pinned() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "alpha\n");
    insta::assert_snapshot!("every_tool", run(&sandbox, &steps(), &["--full-auto"]).await);
    // The workflow refuses a write while a plan is required (`phase` kept).
    let plan_only = vec![
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "b.txt", "content": "b"}))],
        },
        Step::Answer("no plan".into()),
    ];
    let sandbox = Sandbox::new();
    insta::assert_snapshot!("workflow_refusal", run(&sandbox, &plan_only, &["--plan-only"]).await);
}
