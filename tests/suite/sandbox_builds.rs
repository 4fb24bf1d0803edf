//! Builds still work inside the jail, through the real binary (`keel tool
//! shell`): a cargo build of a tiny crate (offline, new `target/` and
//! `Cargo.lock` at the top level), `npm install` of a local package into
//! `node_modules`, `git status`, and `python3 -m unittest`. As root, with
//! the host's toolchains; all but cargo also as `nobody` (a user
//! namespace: how most users run keel), cargo as root only (a rustup home
//! under `/root` is not `nobody`'s). Root-only, so `#[ignore]`d; `.ci/run`
//! runs them, where a missing tool fails its test (npm is not installed
//! there: `.ci/run` says it leaves that one out).

use std::path::PathBuf;
use std::process::Command;

use super::jail_fixture::{Fixture, PYTHON, User, as_root_and_nobody, require};

fn fixture_of(user: User) -> Fixture {
    require(user);
    Fixture::new(user, false)
}

as_root_and_nobody! {
    npm_installs_a_local_package_into_node_modules;
    git_status_sees_new_files;
    python_unittest_runs;
}

fn require_tool(tool: &str) {
    let found = Command::new(tool).arg("--version").output().is_ok_and(|out| out.status.success());
    assert!(found, "{tool} is not installed");
}

/// Runs `script` and asserts it succeeded; returns the output text.
fn build(fixture: &Fixture, script: &str) -> String {
    let outcome = fixture.shell(script, None);
    assert_eq!(outcome.envelope["meta"]["exit_code"], 0, "{}", outcome.text);
    outcome.text
}

/// rustup's home for the cargo proxy on `PATH` (the fixture's `HOME`
/// is not the user's).
fn rustup_home() -> PathBuf {
    std::env::var_os("RUSTUP_HOME").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".rustup")
    })
}

#[test]
#[ignore = "needs root: .ci/run runs it with --ignored"]
fn cargo_builds_a_crate_offline() {
    require_tool("cargo");
    let fixture = fixture_of(User::Root);
    std::fs::write(
        fixture.ws.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(fixture.ws.join("src")).unwrap();
    std::fs::write(fixture.ws.join("src/main.rs"), "fn main() { println!(\"tiny ran\"); }\n")
        .unwrap();
    let script = format!(
        "export RUSTUP_HOME={} CARGO_HOME=$(mktemp -d) && cargo build --offline -q && ./target/debug/tiny",
        rustup_home().display()
    );
    let text = build(&fixture, &script);
    assert!(text.contains("tiny ran"), "{text}");
    assert!(fixture.ws.join("Cargo.lock").exists());
}

fn npm_installs_a_local_package_into_node_modules(user: User) {
    require_tool("npm");
    let fixture = fixture_of(user);
    std::fs::create_dir_all(fixture.ws.join("localpkg")).unwrap();
    std::fs::write(
        fixture.ws.join("localpkg/package.json"),
        r#"{"name": "localpkg", "version": "1.0.0", "main": "index.js"}"#,
    )
    .unwrap();
    std::fs::write(fixture.ws.join("localpkg/index.js"), "module.exports = 'local works';\n")
        .unwrap();
    let script = "export npm_config_cache=$(mktemp -d) && npm init -y >/dev/null \
                  && npm install ./localpkg --offline --no-audit --no-fund \
                  && node -e \"console.log(require('localpkg'))\"";
    let text = build(&fixture, script);
    assert!(text.contains("local works"), "{text}");
    assert!(fixture.ws.join("node_modules/localpkg").exists());
    assert!(fixture.ws.join("package-lock.json").exists());
}

fn git_status_sees_new_files(user: User) {
    let fixture = fixture_of(user);
    let text = build(&fixture, "touch new.txt && git status --short");
    assert!(text.contains("?? new.txt"), "{text}");
}

fn python_unittest_runs(user: User) {
    let fixture = fixture_of(user);
    std::fs::write(
        fixture.ws.join("test_tiny.py"),
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertEqual(1 + 1, 2)\n",
    )
    .unwrap();
    let text = build(&fixture, &format!("{PYTHON} -m unittest -v 2>&1"));
    assert!(text.contains("test_ok") && text.contains("OK"), "{text}");
}
