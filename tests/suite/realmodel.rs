//! keel against a real small model on a real local server (issue 33):
//! llama-cpp-python's OpenAI-compatible server with SmolLM2-135M-Instruct,
//! both installed by `scripts/realmodel-setup.sh` (pinned, built once and
//! cached under `$KEEL_REALMODEL_HOME`, default `~/.cache/keel-realmodel`).
//! Each test starts its own server on a free 127.0.0.1 port and stops it.
//!
//! - hello works: a greeting ends `completed` with the model's answer;
//! - a change request to a server that drops the tools ends with the honest
//!   status (`no_tool_call`, the file untouched, the server's flag named),
//!   or, if the model did call a tool, not with that status;
//! - a window too small for keel's instructions fails with the numbers.
//!
//! The build takes 11–20 minutes on 2 cores, more than CI's whole budget,
//! so `.ci/run` does not install it: there these tests (run with
//! `--ignored`) print why they skip and pass. Ignored by default because
//! a 135M model on 2 cores takes 10–60 s an answer.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::support::{Sandbox, json_lines};

/// The installed server's Python and the model file, or why not.
fn installed() -> Result<(PathBuf, PathBuf), String> {
    let home = std::env::var_os("KEEL_REALMODEL_HOME")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/keel-realmodel"))
        })
        .ok_or("no HOME")?;
    let python = home.join("venv/bin/python");
    let model = home.join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if python.is_file() && model.is_file() {
        Ok((python, model))
    } else {
        Err(format!(
            "skipped: llama-cpp-python and SmolLM2 are not installed under {} \
             (run scripts/realmodel-setup.sh, 11-20 min)",
            home.display()
        ))
    }
}

/// A running llama-cpp-python server; stopped when dropped.
struct Server {
    child: Child,
    base_url: String,
}

impl Server {
    /// Starts one with a window of `n_ctx` tokens and waits until uvicorn
    /// says it listens (its own log line, no polling).
    fn start(python: &PathBuf, model: &PathBuf, n_ctx: u32) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = Command::new(python)
            .args(["-m", "llama_cpp.server", "--model"])
            .arg(model)
            .args(["--model_alias", "smollm2", "--host", "127.0.0.1", "--logits_all", "false"])
            .args(["--n_ctx", &n_ctx.to_string(), "--port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let mut seen = Vec::new();
        for line in stderr.lines() {
            let line = line.unwrap();
            if line.contains("Uvicorn running on") {
                return Self { child, base_url: format!("http://127.0.0.1:{port}/v1") };
            }
            seen.push(line);
        }
        let _ = child.wait();
        panic!("the server ended before it listened:\n{}", seen.join("\n"));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `keel exec --json PROMPT` against `server`: the result line, stderr, exit.
fn exec(sandbox: &Sandbox, server: &Server, prompt: &str) -> (Value, String, Option<i32>) {
    let output = sandbox
        .keel()
        .args(["exec", "--json", "--provider", "openai-chat", "--model", "smollm2"])
        .args(["--base-url", &server.base_url, prompt])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let lines = json_lines(&output.stdout);
    let result = lines.into_iter().rev().find(|l| l["type"] == "result");
    let result = result.unwrap_or_else(|| panic!("no result line: {stderr}"));
    (result, stderr, output.status.code())
}

macro_rules! installed_or_skip {
    () => {
        match installed() {
            Ok(found) => found,
            Err(why) => {
                println!("{why}");
                return;
            }
        }
    };
}

#[test]
#[ignore = "a real model: run with --ignored after scripts/realmodel-setup.sh"]
fn hello_to_a_real_small_model_completes_with_its_answer() {
    let (python, model) = installed_or_skip!();
    let server = Server::start(&python, &model, 8192);
    let sandbox = Sandbox::new();
    let (result, stderr, code) = exec(&sandbox, &server, "Say hello in one short sentence.");
    assert_eq!(code, Some(0), "{result}\n{stderr}");
    assert_eq!(result["status"], "completed", "{result}");
    assert!(!result["final_text"].as_str().unwrap_or("").trim().is_empty(), "{result}");
}

#[test]
#[ignore = "a real model: run with --ignored after scripts/realmodel-setup.sh"]
fn a_change_request_the_server_drops_the_tools_of_ends_with_the_honest_status() {
    let (python, model) = installed_or_skip!();
    let server = Server::start(&python, &model, 8192);
    let sandbox = Sandbox::new();
    let calc = "def add(a, b):\n    return a - b\n";
    std::fs::write(sandbox.repo.join("calc.py"), calc).unwrap();
    std::fs::write(
        sandbox.repo.join("test_calc.py"),
        "from calc import add\nassert add(2, 3) == 5\n",
    )
    .unwrap();
    let (result, stderr, code) =
        exec(&sandbox, &server, "fix add() in calc.py so that test_calc.py passes");
    let log = std::fs::read_to_string(result["log_path"].as_str().unwrap()).unwrap();
    let called = log.lines().any(|l| l.contains("\"tool_call_started\""));
    if called {
        // The model wrote a call keel could read: whatever came of it, the
        // run does not say no tool was called.
        assert_ne!(result["status"], "no_tool_call", "{result}");
    } else {
        assert_eq!(code, Some(0), "{result}\n{stderr}");
        assert_eq!(result["status"], "no_tool_call", "{result}");
        assert_eq!(sandbox.read("calc.py"), calc, "nothing was changed");
        let error = result["error"].as_str().unwrap_or("");
        assert!(error.contains("nothing was read, run or changed"), "{error}");
        assert!(error.contains("--chat_format chatml-function-calling"), "{error}");
    }
}

#[test]
#[ignore = "a real model: run with --ignored after scripts/realmodel-setup.sh"]
fn a_window_too_small_for_keels_instructions_fails_with_the_numbers() {
    let (python, model) = installed_or_skip!();
    let server = Server::start(&python, &model, 512);
    let sandbox = Sandbox::new();
    let (result, stderr, code) = exec(&sandbox, &server, "Say hello in one short sentence.");
    assert_eq!(code, Some(1), "{result}\n{stderr}");
    assert_eq!(result["status"], "failed", "{result}");
    let error = result["error"].as_str().unwrap_or("");
    assert!(error.contains("maximum context length is 512 tokens"), "the server's: {error}");
    assert!(error.contains("the window is 512 tokens"), "keel's: {error}");
    assert!(error.contains("instructions and tools alone are about"), "{error}");
    assert!(error.contains("--ctx-size"), "what to do: {error}");
}

#[test]
#[ignore = "a real model: run with --ignored after scripts/realmodel-setup.sh"]
fn the_server_s_tokenizer_counts_for_the_session() {
    let (python, model) = installed_or_skip!();
    let server = Server::start(&python, &model, 512);
    let sandbox = Sandbox::new();
    let output = sandbox
        .keel()
        .args(["exec", "--provider", "openai-chat", "--model", "smollm2"])
        .args(["--base-url", &server.base_url, "-c", "provider.probe=true"])
        .args(["-c", "context.window=512", "Say hello."])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // llama-cpp-python 0.3.36 counted 2945 tokens where keel's o200k_base
    // estimate is 2620 (x1.12, 3.7 bytes a token; measured 2026-12-03).
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with(
                "warning: the server's tokenizer (llama-cpp-python's /extras/tokenize/count) counts"
            ) && l.contains("keel counts this session's tokens as the server does (x1.")),
        "{stderr}"
    );
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot fit the 512-token window of smollm2"), "refused: {stderr}");
}
