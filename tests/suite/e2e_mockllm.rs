//! `keel exec` against the shared scripted mock LLM (`../shared/bench/mockllm.py`), over all
//! three wire protocols: the same server the benchmarks use.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::support::{Sandbox, json_lines};

struct MockLlm {
    child: Child,
    port: u16,
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shared bench mock, or `None` (the test is skipped) in a clone without
/// `../shared`: see `src/shared_corpus.rs`.
fn mockllm_script() -> Option<PathBuf> {
    super::shared_corpus::locate("bench/mockllm.py")
}

/// Starts the mock on a free loopback port and waits for its "listening" line.
fn start_mock(script: &Path) -> MockLlm {
    let mut child = Command::new("python3")
        .arg(script)
        .args(["--port", "0", "--max-seconds", "120"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("python3 is needed to run the shared mock LLM");
    let stderr = child.stderr.take().unwrap();
    let mut line = String::new();
    BufReader::new(stderr).read_line(&mut line).unwrap();
    let port = line
        .trim()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected mock banner: {line}"));
    MockLlm { child, port }
}

fn run_scenario(script: &Path, provider: &str, scenario: &str) -> Vec<serde_json::Value> {
    let mock = start_mock(script);
    let sandbox = Sandbox::new();
    let base_url = format!("http://127.0.0.1:{}/mock/{scenario}/keel/v1", mock.port);
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--full-auto", "--provider", provider])
        .args(["--base-url", &base_url, "--model", "mock-model", "Run the benchmark task."])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{provider}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    json_lines(&output.stdout)
}

fn check_steps5(provider: &str) {
    let Some(script) = mockllm_script() else { return };
    let lines = run_scenario(&script, provider, "steps5");
    let shells: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] == "shell")
        .collect();
    assert_eq!(shells.len(), 5, "{provider}: {lines:?}");
    for (k, shell) in shells.iter().enumerate() {
        let output = shell["item"]["output"].as_str().unwrap();
        assert!(output.contains(&format!("step-{}", k + 1)), "{provider}: {output}");
    }
    assert_eq!(lines.last().unwrap()["status"], "completed");
}

#[test]
fn mockllm_steps5_over_responses() {
    check_steps5("openai");
}

#[test]
fn mockllm_steps5_over_chat_completions() {
    check_steps5("openai-chat");
}

#[test]
fn mockllm_steps5_over_anthropic_messages() {
    check_steps5("anthropic");
}
