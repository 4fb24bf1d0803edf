//! The real `keel exec` against MCP servers of our own
//! (`tests/fixtures/mcp/fault_server.py`): one that works, and ones that
//! never answer `initialize`, speak an unknown protocol, die mid-call,
//! return 10 MB, send invalid JSON, page their tool list, or are defined by
//! an untrusted project, or fail to start (said once on stderr, with the log).

use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp_support::{fault_table, gone_soon, processes_with, python, recorded, write_config};
use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

/// `keel exec --json` with `flags` against `model`.
pub(super) fn exec(
    sandbox: &Sandbox,
    model: &wiremock::MockServer,
    flags: &[&str],
    prompt: &str,
) -> Output {
    sandbox
        .keel_on(&Model::chat(model), &["exec", "--json"])
        .args(flags)
        .arg(prompt)
        .output()
        .unwrap()
}

pub(super) fn item<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["type"] == "item_completed" && l["item"]["name"] == name)
        .unwrap_or_else(|| panic!("no completed {name} in {lines:#?}"))
}

pub(super) fn statuses(lines: &[Value]) -> Vec<&Value> {
    lines.iter().filter(|l| l["type"] == "mcp_server_status").collect()
}

pub(super) fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["function"]["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

pub(super) fn calls(names: &[(&str, Value)]) -> Step {
    Step::Calls {
        text: None,
        calls: names.iter().map(|(name, args)| call(name, args.clone())).collect(),
    }
}

#[tokio::test]
async fn a_working_server_s_tools_run_end_to_end_and_its_process_ends_with_the_session() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("fault-ok.jsonl");
    let trusted = "trust_read_only_hint = true";
    write_config(&sandbox, &fault_table("fault", &python, "ok", &record, trusted));
    let model = scripted_model(
        Wire::Chat,
        &[
            calls(&[("mcp__fault__echo", json!({"text": "hi"})), ("mcp__fault__add", json!({}))]),
            Step::Answer("done".into()),
        ],
    )
    .await;
    let output = exec(&sandbox, &model, &["--yolo"], "use the server");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    assert_eq!(item(&lines, "mcp__fault__echo")["item"]["output"], "echo: hi");
    assert_eq!(item(&lines, "mcp__fault__echo")["item"]["meta"]["server"], "fault");
    assert_eq!(item(&lines, "mcp__fault__add")["item"]["output"], "added one");
    let reported = statuses(&lines);
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0]["status"], "ready");
    assert_eq!(
        reported[0]["tools"],
        json!(["mcp__fault__echo", "mcp__fault__add", "mcp__fault__slow"])
    );
    assert_eq!(std::fs::read_to_string(format!("{}.count", record.display())).unwrap(), "added\n");

    // The tools are in the first request, after keel's own (the pair that
    // stands for the deferred built-ins comes last), and every request
    // carries the same tool bytes.
    let bodies = request_bodies(&model).await;
    assert_eq!(bodies.len(), 2);
    let names = tool_names(&bodies[0]);
    assert!(names.ends_with(&["tool_search".into(), "call_tool".into()]), "{names:?}");
    assert_eq!(names[names.len() - 3], "mcp__fault__slow", "{names:?}");
    assert_eq!(names.iter().position(|n| n == "read_file"), Some(0));
    assert_eq!(bodies[0]["tools"].to_string(), bodies[1]["tools"].to_string());
    let echo = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["function"]["name"] == "mcp__fault__echo")
        .unwrap();
    assert_eq!(echo["function"]["parameters"]["required"], json!(["text"]));

    // Logged like any call: the read-only one as a read.
    let log = sandbox.only_log();
    let started: Vec<(&str, &str)> = log
        .iter()
        .filter(|l| l["type"] == "tool_call_started")
        .map(|l| (l["call"]["name"].as_str().unwrap(), l["class"].as_str().unwrap()))
        .collect();
    assert_eq!(started, [("mcp__fault__echo", "read_only"), ("mcp__fault__add", "mutating")]);
    assert!(log.iter().any(|l| l["type"] == "mcp_server_status" && l["status"] == "ready"));

    // The handshake: keel's protocol version, no capabilities it lacks.
    let received = recorded(&record);
    assert_eq!(received[0]["method"], "initialize");
    assert_eq!(received[0]["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(received[0]["params"]["clientInfo"]["name"], "keel");
    assert_eq!(received[0]["params"]["capabilities"], json!({}));
    assert_eq!(received[1]["method"], "notifications/initialized");
    assert!(gone_soon(&record.display().to_string()), "the server outlived keel");
}

#[tokio::test]
async fn policy_asks_for_tools_that_may_change_things_unless_a_rule_decides() {
    let Some(python) = python() else { return };
    let script = [
        calls(&[("mcp__fault__echo", json!({"text": "hi"})), ("mcp__fault__add", json!({}))]),
        Step::Answer("done".into()),
    ];
    let run = |rules: Option<&str>, mode: &str| {
        let python = python.clone();
        let script = script.clone();
        let rules = rules.map(str::to_owned);
        let mode = mode.to_owned();
        async move {
            let sandbox = Sandbox::new();
            let record = sandbox.home.join("record.jsonl");
            // The server's read-only claims trusted (`mcp_trust.rs`: untrusted).
            let trusted = "trust_read_only_hint = true";
            write_config(&sandbox, &fault_table("fault", &python, "ok", &record, trusted));
            if let Some(rules) = rules {
                std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
                std::fs::write(sandbox.home.join("rules/mcp.rules"), rules).unwrap();
            }
            let model = scripted_model(Wire::Chat, &script).await;
            let output = exec(&sandbox, &model, &["--mode", &mode], "go");
            let lines = json_lines(&output.stdout);
            let add = item(&lines, "mcp__fault__add")["item"].clone();
            let echo = item(&lines, "mcp__fault__echo")["item"].clone();
            let count =
                std::fs::read_to_string(format!("{}.count", record.display())).unwrap_or_default();
            (echo, add, count)
        }
    };
    // Ask and auto: the read-only tool runs, the other needs approval
    // (headless: declined, saying how to allow it).
    for mode in ["ask", "auto"] {
        let (echo, add, count) = run(None, mode).await;
        assert_eq!(echo["output"], "echo: hi", "{mode}");
        assert_eq!(add["is_error"], true, "{mode}");
        let output = add["output"].as_str().unwrap();
        assert!(
            output.contains("needs approval") && output.contains("tool_rule"),
            "{mode}: {output}"
        );
        assert_eq!(count, "", "{mode}: nothing ran");
    }
    let (_, add, count) = run(None, "yolo").await;
    assert_eq!((add["output"].as_str(), count.as_str()), (Some("added one"), "added\n"));
    let allow = "tool_rule(name = \"mcp__fault__add\", decision = \"allow\")\n";
    let (_, add, count) = run(Some(allow), "ask").await;
    assert_eq!((add["output"].as_str(), count.as_str()), (Some("added one"), "added\n"));
    let forbid =
        "tool_rule(name = \"mcp__fault__*\", decision = \"forbidden\", justification = \"no\")\n";
    let (echo, add, count) = run(Some(forbid), "yolo").await;
    assert!(echo["output"].as_str().unwrap().contains("is forbidden: no"), "{echo}");
    assert_eq!(add["is_error"], true);
    assert_eq!(count, "");
    let (_, add, _) = run(None, "plan").await;
    assert!(add["output"].as_str().unwrap().contains("plan mode is read-only"), "{add}");
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_is_reported_and_holds_nothing() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let stuck = sandbox.home.join("stuck.jsonl");
    let ok = sandbox.home.join("ok.jsonl");
    let config = fault_table("stuck", &python, "no-init", &stuck, "startup_timeout_sec = 1")
        + &fault_table("fault", &python, "ok", &ok, "");
    write_config(&sandbox, &config);
    let model = scripted_model(
        Wire::Chat,
        &[calls(&[("mcp__fault__echo", json!({"text": "x"}))]), Step::Answer("ok".into())],
    )
    .await;
    let started = Instant::now();
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the session waited {:?}",
        started.elapsed()
    );
    let lines = json_lines(&output.stdout);
    let stuck_status =
        statuses(&lines).into_iter().find(|s| s["server"] == "stuck").cloned().unwrap();
    assert_eq!(stuck_status["status"], "starting", "{stuck_status}");
    assert_eq!(item(&lines, "mcp__fault__echo")["item"]["output"], "echo: x");
    let bodies = request_bodies(&model).await;
    assert!(!tool_names(&bodies[0]).iter().any(|n| n.starts_with("mcp__stuck__")));
    assert_eq!(recorded(&stuck)[0]["method"], "initialize", "it was asked");
    assert!(gone_soon(&stuck.display().to_string()), "the stuck server outlived keel");
}

#[tokio::test]
async fn an_unknown_protocol_version_is_refused_with_both_versions_named() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("old.jsonl");
    write_config(&sandbox, &fault_table("old", &python, "old-protocol", &record, ""));
    let output = sandbox.keel().args(["mcp", "list", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let servers: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(servers[0]["status"], "failed", "{servers}");
    let error = servers[0]["error"].as_str().unwrap();
    assert!(error.contains("1999-01-01") && error.contains("2025-11-25"), "{error}");
}

#[tokio::test]
async fn a_server_that_dies_mid_call_fails_it_clearly_and_restarts_on_the_next_call() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("dies.jsonl");
    write_config(&sandbox, &fault_table("dies", &python, "die-mid-call", &record, ""));
    let model = scripted_model(
        Wire::Chat,
        &[
            calls(&[("mcp__dies__echo", json!({"text": "1"}))]),
            calls(&[("mcp__dies__echo", json!({"text": "2"}))]),
            Step::Answer("ok".into()),
        ],
    )
    .await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let results: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] == "mcp__dies__echo")
        .collect();
    assert_eq!(results.len(), 2);
    for result in &results {
        assert_eq!(result["item"]["is_error"], true);
        let output = result["item"]["output"].as_str().unwrap();
        assert!(
            output.contains("MCP server `dies`") && output.contains("closed the connection"),
            "{output}"
        );
    }
    let initializes = recorded(&record).iter().filter(|m| m["method"] == "initialize").count();
    assert_eq!(initializes, 2, "the second call restarted it");
    let changes: Vec<&str> =
        statuses(&lines).iter().map(|s| s["status"].as_str().unwrap()).collect();
    assert_eq!(changes, ["ready", "crashed", "ready", "crashed"], "{lines:#?}");
}

#[tokio::test]
async fn a_10_mb_result_is_cut_like_shell_output() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("huge.jsonl");
    write_config(&sandbox, &fault_table("huge", &python, "huge", &record, ""));
    let model = scripted_model(
        Wire::Chat,
        &[calls(&[("mcp__huge__echo", json!({"text": "x"}))]), Step::Answer("ok".into())],
    )
    .await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let result = &item(&lines, "mcp__huge__echo")["item"];
    let text = result["output"].as_str().unwrap();
    assert!(text.len() < 31 * 1024, "{} bytes reached the model", text.len());
    assert!(text.starts_with("[output truncated: "), "{}", &text[..80]);
    assert_eq!(result["meta"]["truncated"], true);
    let bodies = request_bodies(&model).await;
    assert!(bodies[1].to_string().len() < 200 * 1024, "the request stayed small");
}

#[tokio::test]
async fn a_message_past_the_cap_fails_the_call_at_once_and_says_why() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("giant.jsonl");
    // A long timeout: the call must end because of the message, not the
    // clock (before, rmcp dropped the line and the call waited it out).
    write_config(
        &sandbox,
        &fault_table("giant", &python, "giant", &record, "tool_timeout_sec = 120"),
    );
    let model = scripted_model(
        Wire::Chat,
        &[calls(&[("mcp__giant__echo", json!({"text": "x"}))]), Step::Answer("ok".into())],
    )
    .await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let result = &item(&lines, "mcp__giant__echo")["item"];
    let text = result["output"].as_str().unwrap();
    assert!(text.contains("longer than 32 MiB"), "{text}");
    assert!(!text.contains("no answer"), "{text}");
}

#[tokio::test]
async fn invalid_json_from_a_server_ends_the_call_at_its_timeout_with_a_clear_error() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("bad.jsonl");
    write_config(
        &sandbox,
        &fault_table("bad", &python, "bad-json", &record, "tool_timeout_sec = 1"),
    );
    let model = scripted_model(
        Wire::Chat,
        &[calls(&[("mcp__bad__echo", json!({"text": "x"}))]), Step::Answer("ok".into())],
    )
    .await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let result = &item(&lines, "mcp__bad__echo")["item"];
    assert_eq!(result["is_error"], true);
    assert!(
        result["output"].as_str().unwrap().contains("no answer for `echo` within 1 s"),
        "{result}"
    );
    assert_eq!(result["meta"]["kind"], "timeout");
    let cancelled = recorded(&record).iter().any(|m| m["method"] == "notifications/cancelled");
    assert!(cancelled, "the timed-out request was cancelled");
}

#[tokio::test]
async fn paged_tool_lists_are_followed() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("paged.jsonl");
    write_config(
        &sandbox,
        &fault_table("paged", &python, "paged", &record, "disabled_tools = [\"p1\"]"),
    );
    let output = sandbox.keel().args(["mcp", "get", "paged", "--json"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let server: Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> =
        server["tools"].as_array().unwrap().iter().map(|t| t["tool"].as_str().unwrap()).collect();
    assert_eq!(names, ["echo", "add", "slow", "p0", "p2"], "{server}");
    let lists = recorded(&record).iter().filter(|m| m["method"] == "tools/list").count();
    assert_eq!(lists, 3);
}

#[tokio::test]
async fn an_untrusted_project_s_servers_never_start() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let marker = sandbox.repo.join("never-started.jsonl");
    let mcp_json = json!({"mcpServers": {"repo": {
        "command": python, "args": [super::mcp_support::fault_script(), "ok", marker.display().to_string()]
    }}});
    sandbox.write(".mcp.json", &mcp_json.to_string());
    let model = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let reported = statuses(&lines);
    assert_eq!(reported.len(), 1);
    assert_eq!(reported[0]["status"], "skipped");
    assert!(reported[0]["error"].as_str().unwrap().contains("keel trust"), "{}", reported[0]);
    let listed = sandbox.keel().args(["mcp", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("repo  skipped"));
    assert!(!marker.exists(), "the untrusted server was started");
    assert!(processes_with(&marker.display().to_string()).is_empty());

    // Once trusted, it starts.
    sandbox.keel().arg("trust").output().unwrap();
    let listed = sandbox.keel().args(["mcp", "list", "--json"]).output().unwrap();
    let servers: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(servers[0]["status"], "ready", "{servers}");
    assert!(marker.exists());
}

/// The user's Claude Code and Codex servers (`~/.claude.json`, user and
/// this project's local scope; `~/.codex/config.toml` among Codex's other
/// keys) are listed by `keel mcp list` with the file each came from
/// (issue 36).
#[test]
fn mcp_list_shows_the_users_claude_and_codex_servers_with_their_origins() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let script = super::mcp_support::fault_script();
    let server = json!({"command": python, "args": [script, "ok"]});
    let repo = sandbox.repo.display().to_string();
    let claude = json!({"numStartups": 3, "mcpServers": {"claude-user": server},
        "projects": {repo: {"history": [], "mcpServers": {"claude-local": server}}}});
    std::fs::write(sandbox.home.join(".claude.json"), claude.to_string()).unwrap();
    let codex = format!(
        "model = \"gpt-5-codex\"\napproval_policy = \"on-request\"\n[profiles.fast]\nmodel = \"m\"\n\
         [agents.reviewer]\ndescription = \"r\"\n[mcp_servers.codex-one]\ncommand = {python:?}\n\
         args = [{script:?}, \"ok\"]\n"
    );
    std::fs::create_dir_all(sandbox.home.join(".codex")).unwrap();
    std::fs::write(sandbox.home.join(".codex/config.toml"), codex).unwrap();
    let listed = sandbox.keel().args(["mcp", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.status.success(), "{text}{}", String::from_utf8_lossy(&listed.stderr));
    let claude_path = sandbox.home.join(".claude.json").display().to_string();
    let codex_path = sandbox.home.join(".codex/config.toml").display().to_string();
    for (name, origin) in [
        ("claude-local", format!("({claude_path}, local scope")),
        ("claude-user", format!("({claude_path})")),
        ("codex-one", format!("({codex_path})")),
    ] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name}  ready")))
            .unwrap_or_else(|| panic!("{name} not ready in: {text}"));
        assert!(line.contains(&origin), "{line}");
    }
}

#[test]
fn add_and_remove_edit_the_user_config() {
    let sandbox = Sandbox::new();
    let config = sandbox.home.join("config.toml");
    std::fs::write(&config, "# mine\nmax_steps = 7\n").unwrap();
    let added = sandbox
        .keel()
        .args(["mcp", "add", "docs", "--env", "TOKEN=t", "--", "npx", "-y", "docs-server"])
        .output()
        .unwrap();
    assert_eq!(added.status.code(), Some(0), "{}", String::from_utf8_lossy(&added.stderr));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("# mine\nmax_steps = 7\n"), "{text}");
    assert!(
        text.contains("[mcp_servers.docs]") && text.contains("args = [\"-y\", \"docs-server\"]"),
        "{text}"
    );
    let added = sandbox
        .keel()
        .args([
            "mcp",
            "add",
            "web",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--bearer-token-env-var",
            "WEB_TOKEN",
            "--trust-read-only-hint",
        ])
        .output()
        .unwrap();
    assert_eq!(added.status.code(), Some(0), "{}", String::from_utf8_lossy(&added.stderr));
    let text = std::fs::read_to_string(&config).unwrap();
    let web = &text[text.find("[mcp_servers.web]").unwrap()..];
    assert!(web.contains("trust_read_only_hint = true"), "{text}");
    let docs = &text[..text.find("[mcp_servers.web]").unwrap()];
    assert!(!docs.contains("trust_read_only_hint"), "off unless asked: {text}");
    let twice =
        sandbox.keel().args(["mcp", "add", "web", "--url", "http://x/mcp"]).output().unwrap();
    assert_ne!(twice.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&twice.stderr).contains("already in"));
    let removed = sandbox.keel().args(["mcp", "remove", "docs"]).output().unwrap();
    assert_eq!(removed.status.code(), Some(0));
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("docs") && text.contains("[mcp_servers.web]"), "{text}");
    let missing = sandbox.keel().args(["mcp", "remove", "docs"]).output().unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no MCP server named `docs`"));
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_said_once_on_stderr_with_its_log() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let script = "import sys; sys.stderr.write('boom: no token configured\\n'); sys.exit(3)";
    write_config(
        &sandbox,
        &format!("[mcp_servers.broken]\ncommand = {python:?}\nargs = [\"-c\", {script:?}]\n"),
    );
    let model = scripted_model(Wire::Chat, &[Step::Answer("fine without it".into())]).await;
    let output = sandbox.run(&Model::chat(&model), &["exec", "go"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "fine without it\n");
    let warnings: Vec<&str> =
        stderr.lines().filter(|line| line.starts_with("warning: mcp server broken")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("broken failed"), "{stderr}");
    let log = warnings[0].split("(its log: ").nth(1).unwrap().trim_end_matches(')');
    let logged = std::fs::read_to_string(log).unwrap();
    assert!(logged.contains("boom: no token configured"), "{logged}");
}

/// A server's tool descriptions are its own text: `keel mcp list` and
/// `keel mcp get` print them without the control sequences they carry
/// (retitling the window, setting the clipboard, clearing the screen).
#[tokio::test]
async fn a_server_s_control_sequences_never_reach_the_terminal_of_keel_mcp_list() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("escapes.jsonl");
    write_config(&sandbox, &fault_table("esc", &python, "escapes", &record, ""));
    for args in [&["mcp", "list"][..], &["mcp", "get", "esc"]] {
        let output = sandbox.keel().args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        assert!(stdout.contains("Echoes the text back"), "{args:?}: {stdout}");
        assert!(!stdout.contains('\x1b') && !stdout.contains('\x07'), "{args:?}: {stdout:?}");
    }
}
