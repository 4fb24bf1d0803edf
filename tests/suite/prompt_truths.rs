//! Issue 23's "false or contradictory" items, each through the real `keel
//! exec` binary and a scripted model: what the model is told must match
//! what the harness does.

use serde_json::{Value, json};

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};
use super::workflow_e2e::{phase, results, shell};

/// What one run left behind.
pub(super) struct Run {
    pub(super) code: i32,
    pub(super) result: Value,
    pub(super) stderr: String,
    pub(super) log: Vec<Value>,
    pub(super) requests: Vec<Value>,
}

pub(super) async fn run(sandbox: &Sandbox, steps: &[Step], flags: &[&str], prompt: &str) -> Run {
    let server = scripted_model(Wire::Chat, steps).await;
    let output = sandbox
        .keel_on(&Model::chat(&server), &["exec", "--json"])
        .args(flags)
        .arg(prompt)
        .output()
        .unwrap();
    let lines = json_lines(&output.stdout);
    Run {
        code: output.status.code().unwrap_or(-1),
        result: lines.last().cloned().unwrap_or_default(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        log: sandbox.only_log(),
        requests: request_bodies(&server).await,
    }
}

pub(super) fn calls(calls: Vec<(String, String)>) -> Step {
    Step::Calls { text: None, calls }
}

pub(super) fn read(path: &str) -> Step {
    calls(vec![call("read_file", json!({"path": path}))])
}

fn edit(path: &str, old: &str, new: &str) -> Step {
    calls(vec![call("edit_file", json!({"path": path, "old_string": old, "new_string": new}))])
}

/// A Python project whose only test is a script named like one.
pub(super) fn calc_project() -> Sandbox {
    let sandbox = Sandbox::new();
    sandbox.write("calc.py", "def add(a, b):\n    return a - b\n");
    sandbox.write(
        "test_calc.py",
        "from calc import add\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n",
    );
    sandbox
}

/// Every context message the model read in `request`, joined.
pub(super) fn context_of(request: &Value) -> String {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|message| message["content"].as_str())
        .filter(|text| text.starts_with("<keel_context>"))
        .collect::<Vec<_>>()
        .join("\n")
}

// 23.1: a passing `python3 test_calc.py` verifies; delivery is allowed and
// the run is `completed` (before: refused, "in the verify phase first",
// with deliver listed as allowed, and the run ended `unverified`).
#[tokio::test]
async fn a_passing_test_script_verifies_and_the_run_completes() {
    let sandbox = calc_project();
    let steps = [
        read("calc.py"),
        edit("calc.py", "a - b", "a + b"),
        shell("python3 test_calc.py"),
        phase("deliver"),
        Step::Answer("Fixed add(); python3 test_calc.py passes.".into()),
    ];
    let run = run(&sandbox, &steps, &["--full-auto"], "fix add").await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.result["status"], "completed", "{}", run.result);
    let refused: Vec<(String, bool)> =
        results(&run.log).into_iter().filter(|(_, is_error)| *is_error).collect();
    assert!(refused.is_empty(), "{refused:?}");
}

// 23.1: a failing unlisted check counts as a failure, and the `unverified`
// result says which commands ran and why none counted; the refusal never
// offers the move it refuses.
#[tokio::test]
async fn a_failing_check_counts_and_unverified_says_what_ran() {
    let sandbox = calc_project();
    let steps = [
        read("calc.py"),
        edit("calc.py", "a - b", "a * b"),
        shell("python3 calc.py"),
        shell("python3 test_calc.py"),
        phase("deliver"),
        Step::Answer("Changed add().".into()),
    ];
    let run = run(&sandbox, &steps, &["--full-auto"], "fix add").await;
    assert_eq!(run.result["status"], "unverified", "{}", run.result);
    let why = run.result["verification"].as_str().unwrap_or_default();
    assert!(why.contains("`python3 calc.py`: not recognised as a check"), "{why}");
    assert!(why.contains("`python3 test_calc.py`: failed with exit code 1"), "{why}");
    let refusal = results(&run.log)
        .into_iter()
        .find(|(text, _)| text.starts_with("move refused"))
        .map(|(text, _)| text)
        .unwrap_or_default();
    assert!(refusal.contains("deliver needs a check that passed"), "{refusal}");
    assert!(!refusal.contains("Allowed next phases: implement, deliver"), "{refusal}");
    assert!(!refusal.contains("in the verify phase first"), "{refusal}");
}

// 23.2: `… | tail` keeps a failing check's status (pipefail): the gate
// does not open and the model reads the real exit code.
#[tokio::test]
async fn a_failing_check_piped_through_tail_does_not_open_the_gate() {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "helo world\n");
    sandbox.write("Makefile", "test:\n\t@echo 'test result: FAILED'; false\n");
    let steps = [
        read("hello.txt"),
        edit("hello.txt", "helo", "hello"),
        shell("make test 2>&1 | tail -n 50"),
        phase("deliver"),
        Step::Answer("Done.".into()),
    ];
    let run = run(&sandbox, &steps, &["--full-auto"], "fix the typo").await;
    let outputs = results(&run.log);
    let piped = &outputs[2].0;
    assert!(piped.starts_with("exit code: 2"), "the model reads the real status: {piped}");
    assert!(outputs[3].1, "deliver refused: {:?}", outputs[3]);
    assert_eq!(run.result["status"], "unverified", "{}", run.result);
    let shell_spec = run.requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "shell")
        .unwrap()
        .to_string();
    assert!(shell_spec.contains("pipefail"), "the description says so: {shell_spec}");
}

// 23.3: the phase guidance names tools, never internal classes, and says
// that a call of a later phase moves there; 23.6, 23.8: the schemas the
// model gets are true; the instructions' headings each have a blank line.
#[tokio::test]
async fn the_first_request_names_tools_and_has_true_schemas() {
    let sandbox = Sandbox::new();
    let run = run(&sandbox, &[Step::Answer("hi".into())], &[], "hello").await;
    let request = &run.requests[0];
    let context = context_of(request);
    assert!(context.contains("Tools here: read_file, glob, grep"), "{context}");
    // Deferred tools (behind tool_search) are named as allowed too.
    assert!(context.contains("list_dir, process_output, process_stop, web_fetch"), "{context}");
    assert!(!context.contains("Tool classes") && !context.contains("Read, Tasks"), "{context}");
    assert!(context.contains("Any other tool moves you to the first next phase"), "{context}");
    let tools = request["tools"].as_array().unwrap();
    let spec = |name: &str| {
        tools.iter().find(|tool| tool["function"]["name"] == name).unwrap()["function"].clone()
    };
    assert_eq!(spec("grep")["parameters"]["required"], json!(["pattern"]));
    assert_eq!(spec("read_file")["parameters"]["properties"]["offset"]["minimum"], 1);
    let system = request["messages"][0]["content"].as_str().unwrap();
    for (at, _) in system.match_indices("\n#") {
        assert!(system[..at].ends_with('\n'), "no blank line before heading at {at}");
    }
    assert!(!system.contains("\n\n\n"), "two blank lines somewhere");
}

// 23.4: a question is answered in orient and the turn ends cleanly, and
// the guidance no longer sends it to deliver; a model that went to
// deliver anyway can still act (the write moves it back to implement)
// instead of meeting a refusal that contradicts itself.
#[tokio::test]
async fn a_question_ends_cleanly_and_deliver_is_no_dead_end() {
    let sandbox = Sandbox::new();
    let question = run(&sandbox, &[Step::Answer("It is 42.".into())], &[], "what is x?").await;
    assert_eq!((question.code, &question.result["status"]), (0, &json!("completed")));
    let context = context_of(&question.requests[0]);
    assert!(!context.contains("straight to deliver"), "{context}");
    assert!(context.contains("To answer a question, just answer"), "{context}");

    let sandbox = Sandbox::new();
    let steps = [
        phase("deliver"),
        calls(vec![call("write_file", json!({"path": "answer.txt", "content": "42\n"}))]),
        calls(vec![call("shell", json!({"command": "grep -q 42 answer.txt", "verify": true}))]),
        phase("deliver"),
        Step::Answer("Wrote 42 to answer.txt.".into()),
    ];
    let run = run(&sandbox, &steps, &["--full-auto"], "write the answer to answer.txt").await;
    assert_eq!(sandbox.read("answer.txt"), "42\n");
    let outputs = results(&run.log);
    assert!(outputs.iter().all(|(_, is_error)| !is_error), "{outputs:?}");
    assert_eq!(run.result["status"], "completed", "{}", run.result);
}

// 23.5: the implement guidance no longer asks for a re-read before each
// edit, and two edits in a row without one work.
#[tokio::test]
async fn edits_in_a_row_need_no_re_read_and_the_guidance_says_so() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "one two\n");
    let steps = [
        read("a.txt"),
        edit("a.txt", "one", "1"),
        edit("a.txt", "two", "2"),
        Step::Answer("Done.".into()),
    ];
    let run = run(&sandbox, &steps, &["--full-auto"], "number them").await;
    assert_eq!(sandbox.read("a.txt"), "1 2\n");
    let context = context_of(run.requests.last().unwrap());
    assert!(context.contains("Phase: implement."), "{context}");
    assert!(!context.contains("re-read a file before editing"), "{context}");
    assert!(context.contains("no need to read it again"), "{context}");
}

// 23.8: `set_phase` describes the project's own phases; without a required
// plan there is no hidden file limit (a fourth file is written, also
// through apply_patch).
#[tokio::test]
async fn set_phase_follows_project_rules_and_no_hidden_file_limit() {
    let sandbox = Sandbox::new();
    sandbox.write(
        ".keel/phases.toml",
        "start = \"triage\"\n[phases.triage]\npurpose = \"Look.\"\ntools = [\"read\"]\n\
         next = [\"fix\"]\n[phases.fix]\npurpose = \"Change it.\"\ntools = [\"read\", \"write\", \
         \"shell\"]\nnext = []\n",
    );
    let trusted = sandbox.keel().arg("trust").output().unwrap();
    assert!(trusted.status.success(), "{}", String::from_utf8_lossy(&trusted.stderr));
    let write = |path: &str| call("write_file", json!({"path": path, "content": "x\n"}));
    let patch = "*** Begin Patch\n*** Add File: e.txt\n+x\n*** End Patch";
    let steps = [
        // set_phase waits behind tool_search, which shows its schema.
        calls(vec![call("tool_search", json!({"query": "set_phase"}))]),
        phase("fix"),
        calls(vec![write("a.txt")]),
        calls(vec![write("b.txt")]),
        calls(vec![write("c.txt")]),
        calls(vec![write("d.txt")]),
        calls(vec![call("apply_patch", json!({"patch": patch}))]),
        Step::Answer("Five files.".into()),
    ];
    let run = run(&sandbox, &steps, &["--full-auto"], "make five files").await;
    let outputs = results(&run.log);
    let found = &outputs[0].0;
    let description = found.lines().nth(1).unwrap();
    assert!(found.starts_with("set_phase\n"), "{found}");
    let schema: Value = serde_json::from_str(
        found.lines().find_map(|line| line.strip_prefix("input schema: ")).unwrap(),
    )
    .unwrap();
    assert_eq!(schema["properties"]["phase"]["enum"], json!(["fix", "triage"]));
    // The moves from here are the phase announcement's, not repeated in the tool.
    let context = context_of(&run.requests[0]);
    assert!(context.contains("Phase: triage.") && context.contains("(fix)"), "{context}");
    assert!(!description.contains("orient"), "{description}");
    for file in ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"] {
        assert_eq!(sandbox.read(file), "x\n", "{file}");
    }
    assert!(outputs.iter().all(|(_, is_error)| !is_error), "{outputs:?}");
}

// 17.2: a command the project's AGENTS.md names as its check counts as
// verification though keel would not recognise it by itself; the same run
// without that line ends `unverified`, naming the command.
#[tokio::test]
async fn a_check_named_in_agents_md_opens_the_gate() {
    for named in [true, false] {
        let sandbox = Sandbox::new();
        sandbox.write("hello.txt", "helo world\n");
        sandbox.write("ci/gate", "#!/bin/sh\ngrep -q hello hello.txt\n");
        let made = std::process::Command::new("chmod")
            .args(["+x", "ci/gate"])
            .current_dir(&sandbox.repo)
            .status()
            .unwrap();
        assert!(made.success());
        if named {
            sandbox.write(
                "AGENTS.md",
                "# Project\n\nOur CI runs `./ci/gate`: run it before you finish.\n",
            );
        }
        let steps = [
            read("hello.txt"),
            edit("hello.txt", "helo", "hello"),
            shell("./ci/gate"),
            phase("deliver"),
            Step::Answer("Fixed the typo; ./ci/gate passes.".into()),
        ];
        let run = run(&sandbox, &steps, &["--full-auto"], "fix the typo").await;
        let outputs = results(&run.log);
        // The gate exited 0 and printed nothing: no exit line, no output.
        assert_eq!(outputs[2], ("(no output)".to_owned(), false));
        if named {
            assert_eq!(run.result["status"], "completed", "{}", run.result);
        } else {
            assert_eq!(run.result["status"], "unverified", "{}", run.result);
            let why = run.result["verification"].as_str().unwrap_or_default();
            assert!(why.contains("`./ci/gate`: not recognised as a check"), "{why}");
        }
    }
}

/// Every tool name of keel's that `text` mentions as a word (`agent` is
/// left out: it is an English word the prompt uses as one).
fn tool_names_in(text: &str) -> Vec<&'static str> {
    let names = [
        "read_file",
        "write_file",
        "edit_file",
        "apply_patch",
        "shell",
        "glob",
        "grep",
        "list_dir",
        "load_skill",
        "read_memory",
        "set_phase",
        "submit_plan",
        "todo_write",
    ];
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    names
        .into_iter()
        .filter(|name| {
            text.match_indices(name).any(|(at, _)| {
                let before = text[..at].chars().next_back().is_none_or(|c| !word(c));
                let after = text[at + name.len()..].chars().next().is_none_or(|c| !word(c));
                before && after
            })
        })
        .collect()
}

// Issue 16: `[tools] edit` offers one edit tool or both; whichever it is,
// the first request (instructions, context, every tool's description)
// names no tool that is not offered.
#[tokio::test]
async fn every_tool_the_first_request_names_is_offered_under_each_edit_setting() {
    for (setting, edit_tools) in [
        ("auto", &["edit_file", "apply_patch"][..]),
        ("both", &["edit_file", "apply_patch"][..]),
        ("edit_file", &["edit_file"][..]),
        ("apply_patch", &["apply_patch"][..]),
    ] {
        let sandbox = Sandbox::new();
        let flag = format!("tools.edit=\"{setting}\"");
        let run = run(&sandbox, &[Step::Answer("hi".into())], &["-c", &flag], "hello").await;
        assert_eq!(run.code, 0, "{setting}: {}", run.stderr);
        let request = &run.requests[0];
        let mut offered: Vec<&str> = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["function"]["name"].as_str().unwrap())
            .collect();
        // The deferred ones, named in tool_search's description as `name (…)`.
        let search = request["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|tool| tool["function"]["name"] == "tool_search")
            .unwrap()["function"]["description"]
            .as_str()
            .unwrap();
        let deferred: Vec<&str> = search
            .split(" (")
            .filter_map(|before| before.rsplit([' ', ',', ':']).next())
            .filter(|name| !name.is_empty())
            .collect();
        for tool in ["edit_file", "apply_patch"] {
            assert_eq!(offered.contains(&tool), edit_tools.contains(&tool), "{setting}: {tool}");
        }
        let text = request.to_string().replace("\\n", " ");
        offered.extend(deferred);
        for name in tool_names_in(&text) {
            assert!(offered.contains(&name), "{setting}: `{name}` named but not offered");
        }
    }
}

// Issue 16: a session that edited with `apply_patch` resumes under a
// setting offering only `edit_file`: its history keeps the call and its
// result, and the next edit uses the tool offered.
#[tokio::test]
async fn a_session_that_used_the_other_edit_tool_resumes() {
    let sandbox = calc_project();
    let patch = "*** Begin Patch\n*** Update File: calc.py\n@@\n def add(a, b):\n-    return a - b\n+    return a + b\n*** End Patch\n";
    let steps = [
        read("calc.py"),
        calls(vec![call("apply_patch", json!({"patch": patch}))]),
        Step::Answer("Fixed.".into()),
    ];
    let first =
        run(&sandbox, &steps, &["--full-auto", "-c", "tools.edit=\"apply_patch\""], "fix add")
            .await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(sandbox.read("calc.py"), "def add(a, b):\n    return a + b\n");
    let server = scripted_model(
        Wire::Chat,
        &[read("calc.py"), edit("calc.py", "def add", "def plus"), Step::Answer("Renamed.".into())],
    )
    .await;
    let output = sandbox.run(
        &Model::chat(&server),
        &["exec", "resume", "--last", "--full-auto", "-c", "tools.edit=\"edit_file\"", "rename it"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(sandbox.read("calc.py"), "def plus(a, b):\n    return a + b\n");
    let requests = request_bodies(&server).await;
    let first = requests[0].to_string();
    assert!(first.contains("\"name\":\"apply_patch\""), "the history keeps the call: {first}");
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap())
        .collect();
    assert!(offered.contains(&"edit_file") && !offered.contains(&"apply_patch"), "{offered:?}");
}
