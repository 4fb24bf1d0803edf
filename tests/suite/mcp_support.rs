//! What MCP tests need: the fault server (`tests/fixtures/mcp/fault_server.py`,
//! needs python3), the npm servers and the PyPI servers' venv `.ci/run`
//! installs into cache folders, config writers, and a process-table check.
//!
//! Like the shared corpus (`src/shared_corpus.rs`): a plain clone without
//! the npm packages, the venv (or python3) passes, saying "skipped: … not
//! installed at …"; under `CI` a missing one is a failure.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire};

/// The versions `.ci/run` installs (tests/fixtures/mcp-npm/package.json).
pub const NPM_DIR_VAR: &str = "KEEL_MCP_NPM_DIR";

fn skip_or_fail(what: &str, at: &Path, how: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{what} not installed at {} (CI requires it: {how})",
        at.display()
    );
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {what} not installed at {} ({how}; under CI=true this fails)",
        at.display()
    );
}

/// The folder holding `node_modules/@modelcontextprotocol/…`, if the npm
/// servers are installed and node runs.
pub fn npm_servers() -> Option<PathBuf> {
    let dir = match std::env::var_os(NPM_DIR_VAR) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/keel-ci-mcp"),
    };
    let everything = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let node = std::process::Command::new("node").arg("--version").output();
    if !everything.exists() || !node.is_ok_and(|out| out.status.success()) {
        skip_or_fail(
            "the npm MCP servers (and node)",
            &dir,
            &format!(
                "run .ci/run, or npm ci in a copy of tests/fixtures/mcp-npm; set {NPM_DIR_VAR}"
            ),
        );
        return None;
    }
    Some(dir)
}

/// The venv `.ci/run` builds from tests/fixtures/mcp-pypi/requirements.txt.
pub const PYPI_DIR_VAR: &str = "KEEL_MCP_PYPI_DIR";

/// The venv holding `bin/mcp-server-time`, `bin/mcp-server-git` and
/// FastMCP, if it is installed.
pub fn pypi_servers() -> Option<PathBuf> {
    let dir = match std::env::var_os(PYPI_DIR_VAR) {
        Some(dir) => PathBuf::from(dir),
        None => {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/keel-ci-mcp-pypi")
        }
    };
    let wanted = ["bin/python", "bin/mcp-server-time", "bin/mcp-server-git", "bin/fastmcp"];
    if !wanted.iter().all(|file| dir.join(file).exists()) {
        skip_or_fail(
            "the PyPI MCP servers (mcp-server-time, mcp-server-git, fastmcp)",
            &dir,
            &format!(
                "run .ci/run, or pip install --no-deps --require-hashes -r \
                 tests/fixtures/mcp-pypi/requirements.txt into a venv; set {PYPI_DIR_VAR}"
            ),
        );
        return None;
    }
    Some(dir)
}

/// The entry point of an npm server package (`server-everything`, …).
pub fn npm_entry(dir: &Path, package: &str) -> String {
    dir.join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
        .display()
        .to_string()
}

/// The entry of one npm MCP server (`server-memory`), if it and node are
/// installed; else skipped (failed under `CI`) with a message naming it.
pub fn npm_package(package: &str) -> Option<String> {
    let dir = npm_servers()?;
    let entry = npm_entry(&dir, package);
    if !Path::new(&entry).exists() {
        skip_or_fail(
            &format!("@modelcontextprotocol/{package}"),
            &dir,
            "run .ci/run: tests/fixtures/mcp-npm/package-lock.json pins it",
        );
        return None;
    }
    Some(entry)
}

/// The real python3 interpreter (not a pyenv shim, which needs the
/// user's HOME), if there is one.
pub fn python() -> Option<String> {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output();
    match out {
        Ok(out) if out.status.success() => {
            Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
        }
        _ => {
            skip_or_fail("python3", Path::new("PATH"), "the fault server is a Python script");
            None
        }
    }
}

/// The fault server script.
pub fn fault_script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp/fault_server.py")
        .display()
        .to_string()
}

/// A `[mcp_servers.NAME]` table running the fault server in `mode`,
/// recording what it receives in `record`, with `extra` lines appended.
pub fn fault_table(name: &str, python: &str, mode: &str, record: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = {python:?}\nargs = [{script:?}, {mode:?}, {record:?}]\n{extra}\n",
        script = fault_script(),
        record = record.display().to_string(),
    )
}

/// Writes `$KEEL_HOME/config.toml`.
pub fn write_config(sandbox: &Sandbox, text: &str) {
    std::fs::write(sandbox.home.join("config.toml"), text).unwrap();
}

/// The JSON lines a fault server recorded (empty if it never started).
pub fn recorded(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Whether every process whose command line contains `marker` is gone
/// within a few seconds: a process SIGKILLed as keel exits still needs the
/// kernel to run it to its end, which a loaded machine can delay.
pub fn gone_soon(marker: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !processes_with(marker).is_empty() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

/// Processes whose command line contains `marker`.
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let zombie = stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z'));
        if cmdline.contains(marker) && !zombie {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// Runs `keel exec --json` in ask mode against a scripted model of `steps`;
/// `code` is the exit status wanted (3 when a call was declined for want of
/// an approval). The events and the request bodies.
pub async fn exec_ask(
    sandbox: &Sandbox,
    steps: &[Step],
    prompt: &str,
    code: i32,
) -> (Vec<Value>, Vec<Value>) {
    let model = scripted_model(Wire::Chat, steps).await;
    let output = sandbox
        .keel()
        .env("OPENAI_API_KEY", "sk-keel-test-secret")
        .arg("exec")
        .args(Model::chat(&model).flags())
        .args(["--json", "--mode", "ask"])
        .arg(prompt)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "stderr: {stderr}");
    (json_lines(&output.stdout), request_bodies(&model).await)
}
