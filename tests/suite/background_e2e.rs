//! Background processes through the real `keel exec --json` (issue 31,
//! scope 4): `shell` with `background: true` leaves a server running in
//! the session's jail, `process_output` reads it, `process_stop` ends it;
//! a turn never waits for a live one; nothing survives the session, even
//! `kill -9` of keel; a resumed session tells the model they are gone. The
//! server test also runs as root and as `nobody` (root-only, `#[ignore]`d).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::jail_fixture::{User, as_root_and_nobody, hand_over, require, sandbox_of};
use super::support::{Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

fn calls(calls: Vec<(String, String)>) -> Step {
    Step::Calls { text: None, calls }
}

fn background(command: &str) -> (String, String) {
    call("shell", json!({"command": command, "background": true}))
}

/// `keel exec --json --full-auto` against `server`, with the system's
/// python first on `PATH`.
fn exec(sandbox: &Sandbox, server: &wiremock::MockServer) -> assert_cmd::Command {
    let mut cmd = sandbox.keel();
    cmd.env("PATH", format!("/usr/bin:/bin:{}", std::env::var("PATH").unwrap_or_default()))
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri())]);
    cmd
}

/// The `item_completed` line of the `n`th call named `name`.
fn completed<'l>(lines: &'l [Value], name: &str, n: usize) -> &'l Value {
    lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] == name)
        .nth(n)
        .unwrap_or_else(|| panic!("no item_completed #{n} of {name}"))
}

/// Processes on this host whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            let zombie = stat.rsplit(')').next()?.trim_start().starts_with('Z');
            (!zombie && String::from_utf8_lossy(&cmdline).contains(marker)).then_some(pid)
        })
        .collect()
}

/// Waits (bounded) until `done` holds.
fn wait_until(what: &str, limit: Duration, done: impl Fn() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A marker unique to this test run, for finding its processes.
fn marker(name: &str) -> String {
    format!("keelbg{name}{}", std::process::id())
}

/// The server test: a python http server on a free port, polled, stopped.
async fn serve_poll_stop(network: bool) {
    let sandbox = Sandbox::new();
    let steps = [
        // Named per variant: the two variants run at once, and the check
        // below looks at every process of the machine.
        calls(vec![background(&format!(
            "exec -a keelbg-srv-{network} python3 -m http.server 0 --bind 127.0.0.1"
        ))]),
        calls(vec![call("process_output", json!({"id": 1, "wait_ms": 200}))]),
        calls(vec![call("process_stop", json!({"id": 1}))]),
        Step::Answer("The server ran and is stopped.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let mut cmd = exec(&sandbox, &server);
    if network {
        cmd.args(["-c", "sandbox.network=true"]);
    }
    let output = cmd.arg("serve the folder").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);

    let started = &completed(&lines, "shell", 0)["item"];
    assert_eq!(started["is_error"], false, "{started}");
    assert_eq!(started["meta"]["background"]["status"], "running", "{started}");
    assert_eq!(started["meta"]["background"]["id"], 1);
    let text = started["output"].as_str().unwrap_or_default();
    assert!(text.contains("Serving HTTP on 127.0.0.1 port"), "{text}");
    let launcher = started["meta"]["background"]["pid"].as_u64().unwrap();

    let polled = &completed(&lines, "process_output", 0)["item"];
    assert_eq!(polled["meta"]["background"]["status"], "running", "{polled}");
    assert!(polled["output"].as_str().unwrap_or_default().contains("is running."), "{polled}");

    let stopped = &completed(&lines, "process_stop", 0)["item"];
    assert_eq!(stopped["meta"]["background"]["status"], "stopped", "{stopped}");
    assert!(stopped["output"].as_str().unwrap_or_default().contains("is stopped"), "{stopped}");
    assert!(!Path::new(&format!("/proc/{launcher}")).exists(), "the jail's launcher survived");
    assert!(processes_with(&format!("keelbg-srv-{network}")).is_empty(), "the server survived");
    assert_eq!(lines.last().unwrap()["status"], "completed");
}

/// With the network on, the jail lets a server bind on the host's loopback.
#[tokio::test]
async fn a_server_started_in_the_background_is_polled_and_stopped() {
    serve_poll_stop(true).await;
}

/// With default settings (network off) the jail refuses every inet socket
/// until the jail has a loopback of its own.
#[tokio::test]
async fn a_server_started_in_the_background_with_default_settings() {
    serve_poll_stop(false).await;
}

#[tokio::test]
async fn a_turn_ends_promptly_with_a_live_process_and_the_session_end_stops_it() {
    let sandbox = Sandbox::new();
    let marker = marker("turn");
    let steps = [
        calls(vec![background(&format!("exec -a {marker} sleep 1000"))]),
        Step::Answer("Left it running.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let began = Instant::now();
    let output = exec(&sandbox, &server).arg("start it").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(began.elapsed() < Duration::from_secs(20), "took {:?}", began.elapsed());
    let lines = json_lines(&output.stdout);
    assert_eq!(completed(&lines, "shell", 0)["item"]["meta"]["background"]["status"], "running");
    assert_eq!(lines.last().unwrap()["final_text"], "Left it running.");
    assert!(processes_with(&marker).is_empty(), "the background process outlived keel");
}

#[tokio::test]
async fn kill_9_of_keel_leaves_no_process_and_the_resume_says_it_is_gone() {
    let sandbox = Sandbox::new();
    let marker = marker("kill");
    let command = format!("exec -a {marker} sleep 1000");
    // One on a terminal too: it dies with keel alike.
    let on_terminal = json!({"command": format!("exec -a {marker}-pty sleep 1000"),
        "background": true, "pty": true});
    let steps = [
        calls(vec![background(&command), call("shell", on_terminal)]),
        // Keel is busy here when it is killed.
        calls(vec![call("shell", json!({"command": "sleep 60"}))]),
        Step::Answer("Resumed.".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let mut keel = std::process::Command::new(assert_cmd::cargo::cargo_bin("keel"));
    keel.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &sandbox.home)
        .env("KEEL_HOME", &sandbox.home)
        .current_dir(&sandbox.repo)
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri()), "start it"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = keel.spawn().unwrap();
    let busy = || {
        let Ok(dir) = std::fs::read_dir(sandbox.home.join("sessions")) else { return false };
        dir.filter_map(Result::ok).any(|entry| {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            text.contains("sleep 60") && text.contains("\"tool_call_started\"")
        })
    };
    wait_until("the second call started", Duration::from_secs(60), || {
        // The launchers' command lines hold the markers too.
        let on_terminal = processes_with(&format!("{marker}-pty")).len();
        busy() && on_terminal > 0 && processes_with(&marker).len() > on_terminal
    });
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    wait_until("the background process died with keel", Duration::from_secs(10), || {
        processes_with(&marker).is_empty()
    });
    // The session's network namespace keeper and every launcher too.
    wait_until("every process of the session died with keel", Duration::from_secs(10), || {
        processes_in(&sandbox.repo).is_empty()
    });

    let output = exec(&sandbox, &server).args(["resume", "--last"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let bodies = request_bodies(&server).await;
    let first_after = serde_json::to_string(&bodies[2]).unwrap();
    assert!(first_after.contains("# Background processes"), "{first_after}");
    assert!(first_after.contains("are gone"), "{first_after}");
    // Both calls are read-only commands (`sleep`), so they start side by
    // side and either may get id 1.
    let listed = |id: u32| first_after.contains(&format!("- {id}: `{command}`"));
    assert!(listed(1) || listed(2), "{first_after}");
    let before = serde_json::to_string(&bodies[1]).unwrap();
    assert!(!before.contains("# Background processes"), "said only after the resume");
}

/// Processes on this host working in `dir` (keel, its namespace keeper,
/// the jails' launchers and commands all start there).
fn processes_in(dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
            cwd.starts_with(&dir).then_some(pid)
        })
        .collect()
}

/// With the network on, and with default settings: then the calls share
/// the session's network namespace (a namespace per command would leave
/// the second call's `curl` nothing to reach).
#[tokio::test]
async fn a_second_call_reaches_the_background_server_over_loopback() {
    second_call_reaches_the_server(true).await;
}

#[tokio::test]
async fn a_second_call_reaches_the_background_server_with_default_settings() {
    second_call_reaches_the_server(false).await;
}

async fn second_call_reaches_the_server(network: bool) {
    let sandbox = Sandbox::new();
    sandbox.write("hello.txt", "hello from the server\n");
    second_call_reaches_the_server_in(&sandbox, network).await;
}

as_root_and_nobody! {
    a_second_call_reaches_the_background_server_in_the_jail;
}

/// The default settings' server test with keel run as `user` (as `nobody`
/// the jail is built in a user namespace, as most users run keel).
fn a_second_call_reaches_the_background_server_in_the_jail(user: User) {
    require(user);
    let sandbox = sandbox_of(user);
    sandbox.write("hello.txt", "hello from the server\n");
    hand_over(user, &sandbox);
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(second_call_reaches_the_server_in(&sandbox, false));
}

/// Serves `hello.txt` of `sandbox` in the background, fetches it from a
/// second call, stops the server; nothing of the session outlives keel.
async fn second_call_reaches_the_server_in(sandbox: &Sandbox, network: bool) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let serve = format!("python3 -m http.server {port} --bind 127.0.0.1");
    let fetch = format!(
        "curl -s --retry 20 --retry-connrefused --retry-delay 0 http://127.0.0.1:{port}/hello.txt"
    );
    let steps = [
        calls(vec![background(&serve)]),
        calls(vec![call("shell", json!({"command": fetch}))]),
        calls(vec![call("process_stop", json!({"id": 1}))]),
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let mut cmd = exec(sandbox, &server);
    if network {
        cmd.args(["-c", "sandbox.network=true"]);
    }
    let output = cmd.arg("serve and fetch").output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let lines = json_lines(&output.stdout);
    let fetched = &completed(&lines, "shell", 1)["item"];
    assert!(
        fetched["output"].as_str().unwrap_or_default().contains("hello from the server"),
        "{fetched}"
    );
    wait_until("nothing of the session outlived keel", Duration::from_secs(10), || {
        processes_in(&sandbox.repo).is_empty()
    });
}

/// Issue 31 scope 4: `pty: true` gives the command a terminal in the jail:
/// a REPL answers what `process_write` typed, a program sees a terminal
/// (its controlling one too) where without `pty` it sees none, and
/// `process_stop` ends it; `pty` without `background` is refused.
#[tokio::test]
async fn a_repl_started_with_a_terminal_answers_and_sees_a_tty() {
    let sandbox = Sandbox::new();
    let checks = "test -t 0 && echo stdin-tty || echo stdin-pipe; \
                  (exec 3</dev/tty) 2>/dev/null && echo has-ctty || echo no-ctty";
    let on_terminal =
        |command: &str| call("shell", json!({"command": command, "background": true, "pty": true}));
    let steps = [
        calls(vec![on_terminal("exec python3 -i -q")]),
        calls(vec![call(
            "process_write",
            json!({"id": 1, "input": "print(6*7)\n", "wait_ms": 5000}),
        )]),
        calls(vec![call("process_output", json!({"id": 1, "wait_ms": 2000}))]),
        calls(vec![call("process_stop", json!({"id": 1}))]),
        calls(vec![on_terminal(checks)]),
        calls(vec![background(checks)]),
        calls(vec![call("shell", json!({"command": "true", "pty": true}))]),
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = exec(&sandbox, &server).arg("talk to python").output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let lines = json_lines(&output.stdout);
    let text = |name: &str, n: usize| {
        completed(&lines, name, n)["item"]["output"].as_str().unwrap_or_default().to_owned()
    };
    let started = &completed(&lines, "shell", 0)["item"];
    assert_eq!(started["meta"]["background"]["status"], "running", "{started}");
    assert!(text("shell", 0).contains("types on its terminal"), "{}", text("shell", 0));
    // Each result opens with the process's status line and ends trimmed,
    // and the terminal's text may be cut anywhere between the two reads
    // (even inside the echo: "p" then "rint(6*7)"), so the two bodies are
    // compared without their line breaks: the echo, then the answer.
    let body = |result: String| {
        let lines = result.lines().filter(|line| !line.starts_with("background process "));
        lines.collect::<String>()
    };
    let answered = body(text("process_write", 0)) + &body(text("process_output", 0));
    assert!(answered.contains("print(6*7)42"), "echoed, then answered: {answered}");
    assert!(!answered.contains('\u{1b}') && !answered.contains('\r'), "{answered:?}");
    let stopped = &completed(&lines, "process_stop", 0)["item"];
    assert_eq!(stopped["meta"]["background"]["status"], "stopped", "{stopped}");
    let launcher = started["meta"]["background"]["pid"].as_u64().unwrap();
    assert!(!Path::new(&format!("/proc/{launcher}")).exists(), "the jail's launcher survived");
    assert!(text("shell", 1).contains("stdin-tty\nhas-ctty"), "{}", text("shell", 1));
    assert!(text("shell", 2).contains("stdin-pipe\nno-ctty"), "{}", text("shell", 2));
    let refused = &completed(&lines, "shell", 3)["item"];
    assert_eq!(refused["is_error"], true, "{refused}");
    assert!(text("shell", 3).contains("`pty` needs `background: true`"), "{refused}");
    wait_until("nothing of the session outlived keel", Duration::from_secs(10), || {
        processes_in(&sandbox.repo).is_empty()
    });
}

/// With full access and the network on the sandbox is off: the command
/// runs unconfined under `keel sandbox-exec --terminal-stage`, which makes
/// the terminal its controlling one; the kill ladder on its group still
/// ends it.
#[tokio::test]
async fn an_unconfined_command_on_a_terminal_has_it_as_its_controlling_one() {
    let sandbox = Sandbox::new();
    let marker = marker("inplace");
    let checks = format!(
        "test -t 0 && echo stdin-tty; (exec 3</dev/tty) && echo has-ctty; exec -a {marker} sleep 1000"
    );
    let steps = [
        calls(vec![call("shell", json!({"command": checks, "background": true, "pty": true}))]),
        calls(vec![call("process_stop", json!({"id": 1}))]),
        Step::Answer("done".into()),
    ];
    let server = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--yolo", "--provider", "openai-chat", "--model", "m"])
        .args(["--base-url", &format!("{}/v1", server.uri())])
        .args(["-c", "sandbox.mode=\"full-access\"", "-c", "sandbox.network=true"])
        .arg("check it")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stdout));
    let lines = json_lines(&output.stdout);
    let started = &completed(&lines, "shell", 0)["item"];
    let text = started["output"].as_str().unwrap_or_default();
    assert!(text.contains("stdin-tty\nhas-ctty"), "{started}");
    let stopped = &completed(&lines, "process_stop", 0)["item"];
    assert_eq!(stopped["meta"]["background"]["status"], "stopped", "{stopped}");
    assert!(processes_with(&marker).is_empty(), "the command survived its stop");
}
