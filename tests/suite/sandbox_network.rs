//! The jail's network (issue 31), through the real binary (`keel tool
//! shell … --mode auto --yes`, as root and as `nobody`, with the fixture
//! of the adversarial corpus):
//!
//! - network off (the default): a private network namespace with only
//!   loopback, so a server and its client in one command work, a test
//!   binding `127.0.0.1:0` passes, and nothing reaches a non-loopback
//!   address or a listener on the host's own loopback; such a failure is
//!   reported to the model as the sandbox's, naming `[sandbox] network`;
//! - network allowlist: a fake package index (a Python HTTP server on the
//!   host's 127.0.0.1) under a made-up name that `[sandbox] hosts` maps
//!   for keel's proxy: `pip install --index-url http://pkgs.example.test:
//!   PORT/simple` succeeds with the name listed and fails with keel's
//!   deny otherwise; raw IPs, a connection around the proxy, DNS to
//!   another resolver, IPv6 and UDP fail;
//! - `host_ports` bridges one host loopback port in, and only that one;
//! - a timeout with the network closed says so (and how to open it).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use super::jail_fixture::{Fixture, Outcome, PYTHON, User, as_root_and_nobody, require};

const VIOLATION: &str = "[keel] sandbox violation";

/// A Python HTTP server on the host's 127.0.0.1 serving `dir`, with its port.
struct HostServer {
    child: Child,
    port: u16,
}

impl HostServer {
    fn serve(dir: &Path) -> Self {
        let mut child = Command::new(PYTHON)
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line
            .split_whitespace()
            .skip_while(|word| *word != "port")
            .nth(1)
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        Self { child, port }
    }
}

impl Drop for HostServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn said(outcome: &Outcome, phrase: &str) {
    assert!(outcome.text.contains(phrase), "`{phrase}` not in: {}", outcome.text);
}

fn exit_code(outcome: &Outcome) -> i64 {
    outcome.envelope["meta"]["exit_code"].as_i64().unwrap_or(-1)
}

as_root_and_nobody! {
    a_server_and_its_client_work_in_one_command;
    a_test_binding_port_zero_passes;
    other_addresses_and_the_host_loopback_are_the_sandbox_s;
    pip_installs_from_an_allowed_index_only;
    the_allowlist_has_no_other_way_out;
    a_listed_host_port_is_bridged_in;
    a_timeout_with_the_network_closed_says_it_is_closed;
}

fn a_server_and_its_client_work_in_one_command(user: User) {
    require(user);
    let mut fixture = Fixture::new(user, false);
    let outcome = fixture.shell(
        "mkdir -p site && echo served-in-jail > site/marker.txt && cd site && \
         ({py} -m http.server 8000 --bind 127.0.0.1 >/dev/null 2>&1 &) && \
         for i in $(seq 100); do curl -sf -o /dev/null http://127.0.0.1:8000/ && break; sleep 0.05; done; \
         curl -sS http://127.0.0.1:8000/marker.txt",
        None,
    );
    fixture.assert_contained(&outcome);
    assert_eq!(exit_code(&outcome), 0, "{}", outcome.text);
    said(&outcome, "served-in-jail");
}

fn a_test_binding_port_zero_passes(user: User) {
    require(user);
    let mut fixture = Fixture::new(user, false);
    std::fs::write(
        fixture.ws.join("test_port.py"),
        "import socket, unittest\n\
         class Loopback(unittest.TestCase):\n\
         \x20   def test_bind_zero(self):\n\
         \x20       for family, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):\n\
         \x20           server = socket.socket(family)\n\
         \x20           server.bind((host, 0))\n\
         \x20           server.listen()\n\
         \x20           client = socket.create_connection(server.getsockname()[:2])\n\
         \x20           conn, _ = server.accept()\n\
         \x20           client.sendall(b'ping')\n\
         \x20           self.assertEqual(conn.recv(4), b'ping')\n\
         unittest.main()\n",
    )
    .unwrap();
    let outcome = fixture.shell("{py} test_port.py", None);
    fixture.assert_contained(&outcome);
    assert_eq!(exit_code(&outcome), 0, "{}", outcome.text);
    said(&outcome, "OK");
}

fn other_addresses_and_the_host_loopback_are_the_sandbox_s(user: User) {
    require(user);
    for script in [
        // TEST-NET-1: never a real host.
        "curl -sS -m 5 http://192.0.2.1/",
        // The fixture's listener on the host's own loopback.
        "curl -sS -m 5 http://127.0.0.1:{tcp}/",
        "curl -sS -m 5 http://pkgs.example.test/",
    ] {
        let mut fixture = Fixture::new(user, false);
        let outcome = fixture.shell(script, None);
        fixture.assert_contained(&outcome);
        assert_ne!(exit_code(&outcome), 0, "{script}: {}", outcome.text);
        assert_eq!(outcome.envelope["meta"]["kind"], "sandbox_violation", "{}", outcome.text);
        said(&outcome, VIOLATION);
        said(&outcome, "[sandbox] network = \"allowlist\"");
    }
}

/// A command that waits on a network it cannot reach never finishes: its
/// timeout says the network is closed and how the user opens it, not only
/// "raise timeout_ms"; with the network on the advice is the usual one.
fn a_timeout_with_the_network_closed_says_it_is_closed(user: User) {
    require(user);
    let fixture = Fixture::new(user, false);
    let closed = fixture.shell_timing_out("sleep 30", None, 300);
    assert_eq!(closed.envelope["meta"]["timed_out"], true, "{}", closed.text);
    said(&closed, "the network is off for commands");
    said(&closed, "[sandbox] network = \"allowlist\"");
    said(&closed, "raise timeout_ms only if it needs no network");
    let open = Fixture::configured(user, false, "[sandbox]\nnetwork = \"on\"\n");
    let outcome = open.shell_timing_out("sleep 30", None, 300);
    said(&outcome, "raise timeout_ms or run something that finishes sooner");
    assert!(!outcome.text.contains("network is off"), "{}", outcome.text);
}

/// A one-wheel index in `/simple/keelpkg/`, as pip's simple API reads it.
fn package_index(dir: &Path) {
    let script = r#"
import os, zipfile
os.makedirs("simple/keelpkg", exist_ok=True)
name = "keelpkg-1.0-py3-none-any.whl"
with zipfile.ZipFile("simple/keelpkg/" + name, "w") as wheel:
    wheel.writestr("keelpkg/__init__.py", "ANSWER = 42\n")
    info = "keelpkg-1.0.dist-info/"
    wheel.writestr(info + "METADATA", "Metadata-Version: 2.1\nName: keelpkg\nVersion: 1.0\n")
    wheel.writestr(info + "WHEEL", "Wheel-Version: 1.0\nGenerator: keel-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    wheel.writestr(info + "RECORD", "keelpkg/__init__.py,,\n" + info + "METADATA,,\n" + info + "WHEEL,,\n" + info + "RECORD,,\n")
with open("simple/keelpkg/index.html", "w") as page:
    page.write('<html><body><a href="%s">%s</a></body></html>\n' % (name, name))
with open("simple/index.html", "w") as page:
    page.write('<html><body><a href="keelpkg/">keelpkg</a></body></html>\n')
"#;
    let status = Command::new(PYTHON).args(["-c", script]).current_dir(dir).status().unwrap();
    assert!(status.success());
}

/// A fixture whose keel allows `allowed` and maps both made-up names to
/// the host's 127.0.0.1 for its proxy.
fn allowlist(user: User, allowed: &[&str]) -> Fixture {
    let allowed: Vec<String> = allowed.iter().map(|name| format!("\"{name}\"")).collect();
    Fixture::configured(
        user,
        false,
        &format!(
            "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [{}]\n\
             hosts = {{ \"pkgs.example.test\" = \"127.0.0.1\", \"other.example.test\" = \"127.0.0.1\" }}\n",
            allowed.join(", ")
        ),
    )
}

const PIP: &str = "{py} -m pip install --no-cache-dir --disable-pip-version-check --no-deps \
                   --retries 0 --timeout 10 --target ./site --trusted-host {name} \
                   --index-url http://{name}:{port}/simple keelpkg";

fn pip_installs_from_an_allowed_index_only(user: User) {
    require(user);
    let index = tempfile::tempdir().unwrap();
    package_index(index.path());
    let server = HostServer::serve(index.path());
    let port = server.port.to_string();

    let mut fixture = allowlist(user, &["pkgs.example.test"]);
    let pip = PIP.replace("{port}", &port);
    let installed =
        fixture.shell(&format!("{} && ls site", pip.replace("{name}", "pkgs.example.test")), None);
    fixture.assert_contained(&installed);
    assert_eq!(exit_code(&installed), 0, "{}", installed.text);
    said(&installed, "keelpkg");
    assert!(fixture.ws.join("site/keelpkg/__init__.py").exists(), "{}", installed.text);

    let denied = fixture.shell(&pip.replace("{name}", "other.example.test"), None);
    fixture.assert_contained(&denied);
    assert_ne!(exit_code(&denied), 0, "{}", denied.text);
    said(&denied, VIOLATION);
    said(&denied, "allowed_domains");
}

fn the_allowlist_has_no_other_way_out(user: User) {
    require(user);
    let index = tempfile::tempdir().unwrap();
    std::fs::write(index.path().join("index.html"), "index-reached\n").unwrap();
    let server = HostServer::serve(index.path());
    let mut fixture = allowlist(user, &["pkgs.example.test"]);
    let port = server.port;
    let reached = fixture.shell(&format!("curl -sS -m 5 http://pkgs.example.test:{port}/"), None);
    assert_eq!(exit_code(&reached), 0, "the allowed name must work: {}", reached.text);
    said(&reached, "index-reached");
    for (script, reason) in [
        // A raw IP through the proxy.
        (
            format!("curl -sS -f -m 5 --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{port}/"),
            "403",
        ),
        (
            format!("curl -sS -m 5 -p --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{port}/"),
            "403",
        ),
        // Around the proxy: the name does not resolve, addresses lead nowhere.
        (format!("curl -sS -m 5 --noproxy '*' http://pkgs.example.test:{port}/"), "resolve host"),
        (format!("curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/"), "Couldn't connect"),
        ("curl -sS -m 5 --noproxy '*' http://192.0.2.1/".to_owned(), "Couldn't connect"),
        // DNS to another resolver, UDP, IPv6.
        (
            "{py} -c \"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); \
             s.sendto(b'q', ('192.0.2.53', 53))\""
                .to_owned(),
            "Network is unreachable",
        ),
        (
            "{py} -c \"import socket; socket.create_connection(('2001:db8::1', 80), timeout=5)\""
                .to_owned(),
            "Network is unreachable",
        ),
    ] {
        let outcome = fixture.shell(&script, None);
        fixture.assert_contained(&outcome);
        assert_ne!(exit_code(&outcome), 0, "{script}: {}", outcome.text);
        said(&outcome, reason);
        said(&outcome, VIOLATION);
    }
}

fn a_listed_host_port_is_bridged_in(user: User) {
    require(user);
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("index.html"), "database-stand-in\n").unwrap();
    let server = HostServer::serve(served.path());
    let config = format!("[sandbox]\nhost_ports = [{}]\n", server.port);
    let mut fixture = Fixture::configured(user, false, &config);
    let bridged = fixture.shell(&format!("curl -sS -m 5 http://127.0.0.1:{}/", server.port), None);
    assert_eq!(exit_code(&bridged), 0, "{}", bridged.text);
    said(&bridged, "database-stand-in");
    // Any other host port stays out of reach.
    let other = fixture.shell("curl -sS -m 5 http://127.0.0.1:{tcp}/", None);
    fixture.assert_contained(&other);
    assert_ne!(exit_code(&other), 0, "{}", other.text);
}

/// A session's deny: `keel exec` against a scripted model whose shell
/// call asks for a host not on the list; the log holds the proxy's
/// `network_access` deny with that call's id, before the call's result,
/// which the model reads as the sandbox's.
#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn a_session_logs_each_allow_and_deny_with_the_call_id() {
    use super::support::{Model, Sandbox, scripted_model};
    use super::wire::{Step, Wire, call};
    require(User::Root);
    let served = tempfile::tempdir().unwrap();
    std::fs::write(served.path().join("index.html"), "index-reached\n").unwrap();
    let server = HostServer::serve(served.path());
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.join("config.toml"),
        "[sandbox]\nnetwork = \"allowlist\"\nallowed_domains = [\"pkgs.example.test\"]\n\
         hosts = { \"pkgs.example.test\" = \"127.0.0.1\", \"other.example.test\" = \"127.0.0.1\" }\n",
    )
    .unwrap();
    let port = server.port;
    let command = format!(
        "curl -sS -m 5 http://pkgs.example.test:{port}/ && curl -sS -p -m 5 http://other.example.test:{port}/"
    );
    let steps = vec![
        Step::Calls {
            text: None,
            calls: vec![call("shell", serde_json::json!({"command": command}))],
        },
        Step::Answer("done".into()),
    ];
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime.block_on(scripted_model(Wire::Chat, &steps));
    let output = sandbox.run(
        &Model::on(Wire::Chat, &model).named("mock-model"),
        &["exec", "--json", "--full-auto", "fetch the index"],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let log = sandbox.only_log();
    let call_id = log
        .iter()
        .find(|line| line["type"] == "tool_call_started")
        .and_then(|line| line["call"]["call_id"].as_str())
        .unwrap()
        .to_owned();
    let accesses: Vec<&serde_json::Value> =
        log.iter().filter(|line| line["type"] == "network_access").collect();
    assert_eq!(accesses.len(), 2, "{log:#?}");
    assert_eq!(accesses[0]["host"], "pkgs.example.test");
    assert_eq!(accesses[0]["allowed"], true);
    assert_eq!(accesses[1]["host"], "other.example.test");
    assert_eq!(accesses[1]["allowed"], false);
    assert_eq!(accesses[1]["port"], port);
    for access in &accesses {
        assert_eq!(access["call_id"], call_id.as_str(), "{access}");
    }
    let position = |kind: &str| log.iter().position(|line| line["type"] == kind).unwrap();
    assert!(position("network_access") < position("tool_call_finished"));
    let finished = &log[position("tool_call_finished")];
    assert_eq!(finished["meta"]["kind"], "sandbox_violation", "{finished}");
    let text = finished["result"]["output"].as_str().unwrap_or_default();
    assert!(text.contains("allowed_domains"), "{text}");
}
