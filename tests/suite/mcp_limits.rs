//! Bounds on what MCP servers put in front of the model and the user,
//! through the real binary (the fault server,
//! `tests/fixtures/mcp/fault_server.py`, where one is needed): a tool's
//! definition size, a failing server in one line with its log, no URL
//! secrets in messages, an untrusted clone's many servers in one warning.

use serde_json::{Value, json};

use super::mcp_faults::{calls, exec, statuses, tool_names};
use super::mcp_support::{fault_table, python, write_config};
use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire};

/// One tool's 4 MB schema was in every request; now it is left out, and
/// the session and `keel mcp list` say which tool, of which server, and
/// how big.
#[tokio::test]
async fn a_tool_whose_schema_is_too_big_is_not_offered_and_is_named_once() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("big.jsonl");
    write_config(&sandbox, &fault_table("big", &python, "big-schema", &record, ""));
    let script = [calls(&[("mcp__big__add", json!({}))]), Step::Answer("done".into())];
    let model = scripted_model(Wire::Chat, &script).await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let bodies = request_bodies(&model).await;
    let names = tool_names(&bodies[0]);
    assert!(names.contains(&"mcp__big__add".to_owned()), "{names:?}");
    assert!(!names.contains(&"mcp__big__big".to_owned()), "{names:?}");
    for body in &bodies {
        let size = body.to_string().len();
        assert!(size < 200 * 1024, "a request of {size} bytes");
    }
    let lines = json_lines(&output.stdout);
    let reported = statuses(&lines);
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert_eq!(reported[0]["status"], "ready");
    let warning = reported[0]["error"].as_str().unwrap_or_default();
    assert!(
        warning.contains("`big`") && warning.contains("MB") && warning.contains("16.0 KiB"),
        "{warning}"
    );
    let logged: Vec<Value> =
        sandbox.only_log().into_iter().filter(|l| l["type"] == "mcp_server_status").collect();
    assert_eq!(logged[0]["error"].as_str(), Some(warning), "{logged:?}");

    let listed = sandbox.keel().args(["mcp", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let warnings: Vec<&str> = stdout.lines().filter(|l| l.contains("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{stdout}");
    assert!(
        warnings[0].contains("MCP server `big`") && warnings[0].contains("`big` ("),
        "{stdout}"
    );
    assert!(!stdout.contains("mcp__big__big"), "{stdout}");
}

/// A server that exits before `initialize`: `keel mcp list` says so in
/// one line (exit code, its last stderr line, its log), and the log holds
/// what it wrote (it was empty when `keel mcp list` exited first).
#[tokio::test]
async fn a_server_that_exits_at_once_is_one_actionable_line_and_its_log_is_kept() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let script = "import sys; sys.stderr.write('boom: no token configured\\n'); sys.exit(3)";
    write_config(
        &sandbox,
        &format!("[mcp_servers.broken]\ncommand = {python:?}\nargs = [\"-c\", {script:?}]\n"),
    );
    let output = sandbox.keel().args(["mcp", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let line = lines[1];
    assert!(
        line.contains("exited with code 3 before answering `initialize`")
            && line.contains("boom: no token configured")
            && line.contains("stderr log: "),
        "{line}"
    );
    assert!(!line.contains("rmcp") && !line.contains("Transport"), "{line}");
    let log = line.split("stderr log: ").nth(1).unwrap().trim_end_matches(')');
    let logged = std::fs::read_to_string(log).unwrap();
    assert!(logged.contains("boom: no token configured"), "{logged:?}");
}

/// Hosted MCP URLs carry tokens in their query or userinfo: no message
/// shows them, on screen or in the session log.
#[tokio::test]
async fn an_http_server_s_url_token_never_shows_in_messages() {
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        "[mcp_servers.web]\nurl = \"http://me:PASSWORD7@127.0.0.1:9/mcp?token=SECRET123&team=x\"\n\
         startup_timeout_sec = 5\n",
    );
    let listed = sandbox.keel().args(["mcp", "list"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(stdout.contains("web  failed"), "{stdout}");
    assert!(stdout.contains("127.0.0.1:9/mcp?token=***&team=***"), "{stdout}");
    let model = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    let log = sandbox.only_log();
    let everything = format!(
        "{stdout}{}{}{log:?}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    for secret in ["SECRET123", "PASSWORD7", "team=x"] {
        assert!(!everything.contains(secret), "{secret} shown: {everything}");
    }
}

/// An untrusted clone whose `.mcp.json` lists 300 servers: one warning
/// line, not 300; none of them starts.
#[tokio::test]
async fn an_untrusted_clone_s_300_servers_are_one_warning() {
    let sandbox = Sandbox::new();
    let servers: serde_json::Map<String, Value> = (0..300)
        .map(|i| (format!("s{i}"), json!({"command": "/nonexistent/never-started"})))
        .collect();
    sandbox.write(".mcp.json", &json!({"mcpServers": servers}).to_string());
    let model = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = sandbox.run(&Model::chat(&model), &["exec", "go"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let warnings: Vec<&str> = stderr.lines().filter(|l| l.contains("mcp server")).collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("s0, s1, s10 and 297 more")
            && warnings[0].contains("300 MCP servers")
            && warnings[0].contains("keel trust"),
        "{}",
        warnings[0]
    );
}
