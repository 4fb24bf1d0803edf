//! `keel acp` driven by the official ACP client SDK from npm
//! (`@agentclientprotocol/sdk`, pinned by
//! `tests/fixtures/acp-client/package-lock.json`, installed by `.ci/run`
//! into a cache folder): `tests/fixtures/acp-client/client.mjs`
//! initializes, opens a session, sends a prompt whose `write_file` asks
//! permission (answered "allow once") and reports its diff, cancels a
//! prompt while its command runs, then loads the session again from
//! keel's log and prompts it once more; `client_fs.mjs` offers `fs/*` over
//! in-memory buffers (issue 40). The model is keel's scripted mock.
//!
//! A plain clone without the package passes this (it says "skipped: …
//! not installed at …"); under `CI` a missing package fails.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use super::support::{Model, Sandbox, read_jsonl, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// Where `.ci/run` installs the SDK (`KEEL_ACP_NPM_DIR`, else the cache).
const NPM_DIR_VAR: &str = "KEEL_ACP_NPM_DIR";

/// The SDK's entry file, if it is installed and node runs.
fn sdk_entry() -> Option<PathBuf> {
    let dir = match std::env::var_os(NPM_DIR_VAR) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/keel-ci-acp"),
    };
    let entry = dir.join("node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js");
    let node = Command::new("node").arg("--version").output();
    if entry.exists() && node.is_ok_and(|out| out.status.success()) {
        return Some(entry);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the ACP client SDK (and node) not installed at {} (CI requires it: .ci/run installs it)",
        dir.display()
    );
    let _ = writeln!(
        std::io::stderr(),
        "skipped: the ACP client SDK (and node) not installed at {} (run .ci/run, or npm ci in a \
         copy of tests/fixtures/acp-client; set {NPM_DIR_VAR}; under CI=true this fails)",
        dir.display()
    );
    None
}

/// Runs the client script against `keel acp` on `model`; what it saw.
fn run_client(sandbox: &Sandbox, model: &Model, sdk: &Path) -> Value {
    run_script(sandbox, model, sdk, "client.mjs", &[])
}

/// Runs the client script `script` (with `env` besides the usual).
fn run_script(
    sandbox: &Sandbox,
    model: &Model,
    sdk: &Path,
    script: &str,
    env: &[(&str, String)],
) -> Value {
    let client =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/acp-client").join(script);
    let mut args = vec!["acp".to_owned()];
    args.extend(model.flags().iter().map(|flag| (*flag).to_owned()));
    let output = Command::new("node")
        .arg(client)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .env("OPENAI_API_KEY", "sk-keel-test-secret")
        .env("ACP_SDK", sdk)
        .env("KEEL", env!("CARGO_BIN_EXE_keel"))
        .env("KEEL_ARGS", serde_json::to_string(&args).unwrap())
        .env("ACP_CWD", &sandbox.repo)
        .envs(env.iter().map(|(name, value)| (*name, value)))
        .current_dir(&sandbox.repo)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the client failed: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!("{error}: {}\n{stderr}", String::from_utf8_lossy(&output.stdout))
    })
}

fn updates<'a>(seen: &'a Value, phase: &str) -> Vec<&'a Value> {
    seen["updates"][phase].as_array().map(|all| all.iter().collect()).unwrap_or_default()
}

fn of_kind<'a>(updates: &[&'a Value], kind: &str) -> Vec<&'a Value> {
    updates.iter().copied().filter(|u| u["sessionUpdate"] == kind).collect()
}

#[tokio::test]
async fn the_official_client_sdk_drives_a_session_through_approval_cancel_and_load() {
    let Some(sdk) = sdk_entry() else { return };
    let sandbox = Sandbox::new();
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![
                call(
                    "todo_write",
                    json!({"todos": [{"text": "write hello.txt", "status": "in_progress"}]}),
                ),
                call("write_file", json!({"path": "hello.txt", "content": "hello\n"})),
            ],
        },
        Step::Answer("I wrote hello.txt.".into()),
        Step::Calls { text: None, calls: vec![call("shell", json!({"command": "sleep 30"}))] },
        Step::Answer("Yes, still here.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let model = Model::chat(&server);
    let seen = tokio::task::spawn_blocking({
        let sdk = sdk.clone();
        move || {
            let seen = run_client(&sandbox, &model, &sdk);
            (seen, sandbox)
        }
    })
    .await
    .unwrap();
    let (seen, sandbox) = seen;

    // initialize and session/new: keel's capabilities and modes.
    assert_eq!(seen["initialize"]["protocolVersion"], 1, "{seen:#}");
    assert_eq!(seen["initialize"]["agentCapabilities"]["loadSession"], true);
    assert_eq!(seen["initialize"]["agentCapabilities"]["promptCapabilities"]["image"], true);
    assert_eq!(seen["initialize"]["agentInfo"]["name"], "keel");
    let modes = &seen["newSession"]["modes"];
    assert_eq!(modes["currentModeId"], "ask", "{modes:#}");
    assert_eq!(modes["availableModes"].as_array().unwrap().len(), 5);

    // The write asked permission with its diff, was allowed once, ran, and
    // its update carries the diff of what it did.
    let permissions = seen["permissions"].as_array().unwrap();
    let asked = permissions.iter().find(|p| p["phase"] == "first").expect("no permission asked");
    let tool_call = &asked["request"]["toolCall"];
    assert_eq!(tool_call["kind"], "edit", "{asked:#}");
    let expected_path = sandbox.repo.canonicalize().unwrap().join("hello.txt");
    let preview = &tool_call["content"][0];
    assert_eq!(preview["type"], "diff", "{tool_call:#}");
    assert_eq!(preview["path"], expected_path.display().to_string());
    assert_eq!(preview["newText"], "hello\n");
    let options: Vec<&str> = asked["request"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["optionId"].as_str().unwrap())
        .collect();
    assert!(options.contains(&"allow_once") && options.contains(&"reject_once"), "{options:?}");
    assert_eq!(sandbox.read("hello.txt"), "hello\n");
    let first = updates(&seen, "first");
    let calls: Vec<&Value> =
        of_kind(&first, "tool_call").into_iter().filter(|c| c["kind"] == "edit").collect();
    assert_eq!(calls.len(), 1, "{first:#?}");
    assert_eq!(calls[0]["locations"][0]["path"], expected_path.display().to_string());
    let write_id = &calls[0]["toolCallId"];
    let done: Vec<&Value> = of_kind(&first, "tool_call_update")
        .into_iter()
        .filter(|u| &u["toolCallId"] == write_id)
        .collect();
    assert_eq!(done.len(), 1, "{first:#?}");
    assert_eq!(done[0]["status"], "completed", "{done:#?}");
    assert_eq!(done[0]["content"][0]["type"], "diff");
    assert_eq!(done[0]["content"][0]["newText"], "hello\n");
    // todo_write's list is the editor's plan.
    let plans = of_kind(&first, "plan");
    assert_eq!(
        plans.last().map(|p| &p["entries"]),
        Some(
            &json!([{"content": "write hello.txt", "priority": "medium", "status": "in_progress"}])
        ),
        "{first:#?}"
    );
    let said: String = of_kind(&first, "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(said, "I wrote hello.txt.");

    // Cancelled while `sleep 30` ran: the turn stopped `cancelled`, the
    // command's call ended.
    let stops: Vec<(&str, &str)> = seen["stops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["phase"].as_str().unwrap(), s["stopReason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        stops,
        [("first", "end_turn"), ("cancel", "cancelled"), ("after_load", "end_turn")],
        "{seen:#}"
    );
    let cancel = updates(&seen, "cancel");
    let ended = of_kind(&cancel, "tool_call_update");
    assert_eq!(ended.len(), 1, "the sleep's call ends once: {cancel:#?}");

    // session/load replayed the conversation from keel's log, then the
    // loaded session answered a prompt.
    let load = updates(&seen, "load");
    let users: Vec<&str> = of_kind(&load, "user_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["write hello.txt", "wait for the build"], "{load:#?}");
    let replayed: Vec<&Value> = of_kind(&load, "tool_call");
    assert!(replayed.iter().any(|c| c["kind"] == "edit"), "{load:#?}");
    assert!(replayed.iter().any(|c| c["kind"] == "execute"), "{load:#?}");
    assert_eq!(of_kind(&load, "plan").len(), 1, "the task list comes back: {load:#?}");
    assert!(
        of_kind(&load, "agent_message_chunk")
            .iter()
            .any(|u| u["content"]["text"] == "I wrote hello.txt."),
        "{load:#?}"
    );
    let after: String = of_kind(&updates(&seen, "after_load"), "agent_message_chunk")
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(after, "Yes, still here.");
    assert_eq!(seen["keelExit"], 0);

    // The client's answer is in the log as the TUI's is; one log, resumed
    // once, ended twice (the load closed the first task's session).
    let log = read_jsonl(&sandbox.only_log_path());
    let approvals: Vec<&Value> = log.iter().filter(|l| l["type"] == "approval").collect();
    assert!(!approvals.is_empty(), "no approval recorded");
    assert_eq!(approvals[0]["approved"], true);
    assert_eq!(approvals[0]["scope"], "once");
    assert_eq!(log.iter().filter(|l| l["type"] == "session_resumed").count(), 1);
    // The request after the load carries the whole conversation.
    let bodies = request_bodies(&server).await;
    assert_eq!(bodies.len(), 4, "one request per step");
    let last = bodies[3]["messages"].to_string();
    assert!(last.contains("write hello.txt") && last.contains("are you still there?"), "{last}");
}

// Issue 40: a client offering `fs/*` is where keel's file tools read and
// write text; keel still judges and confines every call first.
#[tokio::test]
async fn a_client_offering_fs_is_read_and_written_through_after_keel_judged_the_call() {
    let Some(sdk) = sdk_entry() else { return };
    let sandbox = Sandbox::new();
    let repo = sandbox.repo.canonicalize().unwrap();
    std::fs::write(repo.join("notes.txt"), "saved on disk\n").unwrap();
    std::fs::write(repo.join(".env"), "TOKEN=on-disk\n").unwrap();
    std::fs::write(repo.join("other.txt"), "other on disk\n").unwrap();
    let outside = repo.parent().unwrap().join("outside.txt");
    let notes = repo.join("notes.txt").display().to_string();
    let buffers = json!({
        notes.clone(): "unsaved in the editor\n",
        repo.join("other.txt").display().to_string(): "other in the editor\n",
        repo.join(".env").display().to_string(): "TOKEN=in-the-editor\n",
        outside.display().to_string(): "outside\n",
    });
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![
                call("read_file", json!({"path": "notes.txt"})),
                call("read_file", json!({"path": "../outside.txt"})),
                call("read_file", json!({"path": ".env"})),
            ],
        },
        Step::Calls {
            text: None,
            calls: vec![call(
                "edit_file",
                json!({"path": "notes.txt", "old_string": "unsaved", "new_string": "edited"}),
            )],
        },
        Step::Calls {
            text: None,
            calls: vec![call("write_file", json!({"path": "new.txt", "content": "fresh\n"}))],
        },
        // A subagent's reads go through the editor too.
        Step::Calls {
            text: None,
            calls: vec![call(
                "agent",
                json!({"agent": "explore", "description": "look", "prompt": "read other.txt"}),
            )],
        },
        Step::Calls { text: None, calls: vec![call("read_file", json!({"path": "other.txt"}))] },
        Step::Answer("The child saw it.".into()),
        Step::Answer("Done.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let model = Model::chat(&server);
    let env = [("ACP_BUFFERS", buffers.to_string())];
    let (seen, sandbox) = tokio::task::spawn_blocking({
        let sdk = sdk.clone();
        move || (run_script(&sandbox, &model, &sdk, "client_fs.mjs", &env), sandbox)
    })
    .await
    .unwrap();
    assert_eq!(seen["stops"], json!(["end_turn"]), "{seen:#}");
    assert_eq!(seen["keelExit"], 0);

    // The model read the editor's unsaved text, asked for read_file's
    // window; the path outside and the secret one were refused before the
    // editor was asked.
    let bodies = request_bodies(&server).await;
    let after_reads = bodies[1]["messages"].to_string();
    assert!(after_reads.contains("unsaved in the editor"), "{after_reads}");
    assert!(!after_reads.contains("saved on disk"), "{after_reads}");
    assert!(!after_reads.contains("TOKEN="), "{after_reads}");
    let reads = seen["reads"].as_array().unwrap();
    let other = repo.join("other.txt").display().to_string();
    assert!(
        reads.iter().all(|r| r["path"] == notes.as_str() || r["path"] == other.as_str()),
        "only notes.txt and other.txt: {reads:#?}"
    );
    assert_eq!(reads[0], json!({"path": notes, "line": 1, "limit": 2001}), "{reads:#?}");
    assert!(reads.len() >= 2, "edit_file read the buffer too: {reads:#?}");

    // The edit applied to the buffer and was given to the editor; the new
    // file too. The disk holds the same: keel writes it after the editor
    // took it (this client never saves), so commands and undo see it.
    let writes = seen["writes"].as_array().unwrap();
    let new = repo.join("new.txt").display().to_string();
    assert_eq!(
        writes,
        &[
            json!({"path": notes, "content": "edited in the editor\n"}),
            json!({"path": new, "content": "fresh\n"}),
        ],
        "{seen:#}"
    );
    assert_eq!(sandbox.read("notes.txt"), "edited in the editor\n");
    assert_eq!(sandbox.read("new.txt"), "fresh\n");
    let after_edit = bodies[2]["messages"].to_string();
    assert!(
        after_edit.contains("-unsaved in the editor"),
        "the diff is of what was written: {after_edit}"
    );

    // The subagent read the editor's text of other.txt.
    let child = bodies[5]["messages"].to_string();
    assert!(child.contains("read other.txt"), "the child's request: {child}");
    assert!(child.contains("other in the editor"), "{child}");
    assert!(!child.contains("other on disk"), "{child}");
    assert_eq!(bodies.len(), 7, "one request per step");
}
