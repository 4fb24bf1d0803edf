//! A scripted Chat Completions model for the benches that drive the real
//! `keel` binary (`soak`, `fleet`): each session asks it through a base
//! URL of its own, `{uri}/s/{ID}/v1`, and gets `steps` shell calls
//! (`echo step-K`, one per response) and then an answer. Steps are counted
//! per session by the mock itself (requests seen), not from the history,
//! so a compaction (answered with a short summary) does not restart them.
//! Each response's usage reports the request's size as its prompt
//! (`chat_sse::prompt_tokens_of`), so keel's window fills and it compacts
//! as it would against a real server.
//! Also: the fixture repository and the `keel exec` command line of the
//! shared bench. Included by `#[path]` beside `chat_sse.rs` (the bench
//! declares both); not a bench of its own.

#![allow(dead_code)]

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;
use wiremock::{Request, Respond, ResponseTemplate};

use super::chat_sse::{answer, prompt_tokens_of, tool_calls};

/// The mock (see the module doc); clones share their counts.
#[derive(Clone)]
pub struct ChatMock {
    steps: u64,
    /// Step requests seen per session id.
    seen: Arc<Mutex<HashMap<String, u64>>>,
    /// The largest request body seen, in bytes.
    largest_request: Arc<AtomicUsize>,
}

impl ChatMock {
    pub fn new(steps: u64) -> Self {
        Self { steps, seen: Arc::default(), largest_request: Arc::default() }
    }

    /// The largest request body seen so far, in bytes.
    pub fn largest_request(&self) -> usize {
        self.largest_request.load(Ordering::Relaxed)
    }

    /// Shell steps answered so far, all sessions together.
    pub fn steps_done(&self) -> u64 {
        let seen = self.seen.lock().map(|seen| seen.values().map(|n| n.min(&self.steps)).sum());
        seen.unwrap_or(0)
    }
}

/// The base URL of session `id` on a mock server at `uri`.
pub fn base_url(uri: &str, id: usize) -> String {
    format!("{uri}/s/{id}/v1")
}

impl Respond for ChatMock {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        let prompt_tokens = prompt_tokens_of(request.body.len());
        self.largest_request.fetch_max(request.body.len(), Ordering::Relaxed);
        let sse = if body.contains("You are compacting") {
            answer("## Goal and success criteria\nRun the benchmark steps.\n", prompt_tokens)
        } else {
            let id = request.url.path().split('/').nth(2).unwrap_or("").to_owned();
            let step = match self.seen.lock() {
                Ok(mut seen) => {
                    let n = seen.entry(id).or_insert(0);
                    *n += 1;
                    *n
                }
                Err(_) => u64::MAX,
            };
            if step <= self.steps {
                shell_call(step, prompt_tokens)
            } else {
                answer("Done: ran the shell steps.", prompt_tokens)
            }
        };
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(sse)
    }
}

fn shell_call(step: u64, prompt_tokens: u64) -> String {
    let args = json!({"command": format!("echo step-{step}")});
    tool_calls(&[("shell", args)], step, prompt_tokens)
}

/// `keel exec` as the shared bench runs it, in `repo` with `home`.
pub fn keel_exec(repo: &std::path::Path, home: &std::path::Path, url: &str, steps: u64) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_keel"));
    command
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home)
        .env("KEEL_HOME", home.join(".keel"))
        .env("LANG", "C.UTF-8")
        .env("OPENAI_API_KEY", "sk-mock-not-a-key")
        .current_dir(repo)
        .stdin(Stdio::null())
        .args(["exec", "--json", "--full-auto", "--provider", "openai-chat", "--model"])
        .args(["mock-model", "--base-url", url, "-c"])
        .arg(format!("max_steps={}", steps + 10))
        .arg("Run the benchmark task.");
    command
}

/// A fresh git repository like the shared bench's (`make_pool`).
pub fn fixture(dir: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).map_err(|e| e.to_string())?;
    std::fs::write(repo.join("README.md"), "# bench fixture\n").map_err(|e| e.to_string())?;
    for k in 1..=8 {
        std::fs::write(repo.join(format!("f{k}.txt")), format!("file {k}\n"))
            .map_err(|e| e.to_string())?;
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
            .args(args)
            .current_dir(&repo)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if !(git(&["init", "-q"]) && git(&["add", "-A"]) && git(&["commit", "-qm", "fixture"])) {
        return Err("git failed to make the fixture".into());
    }
    Ok(repo)
}

/// A process's figures from `/proc/PID/status` (KiB) and `/proc/PID/stat`.
pub mod procfs {
    /// A `/proc/PID/status` field in KiB (`VmRSS`, `VmHWM`), or a count
    /// (`Threads`); `None` once the process is gone.
    pub fn status_field(pid: u32, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status.lines().find_map(|line| {
            line.strip_prefix(field)?.strip_prefix(':')?.split_whitespace().next()?.parse().ok()
        })
    }

    /// CPU seconds (user + system) of `pid` itself, and of its reaped
    /// children (`cutime + cstime`), from `/proc/PID/stat` at 100 Hz.
    pub fn cpu_seconds(pid: &str) -> Option<(f64, f64)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let fields: Vec<u64> = stat
            .rsplit_once(')')?
            .1
            .split_whitespace()
            .skip(11)
            .take(4)
            .map(|field| field.parse().unwrap_or(0))
            .collect();
        let ticks = |a: usize, b: usize| -> Option<f64> {
            Some((fields.get(a)? + fields.get(b)?) as f64 / 100.0)
        };
        Some((ticks(0, 1)?, ticks(2, 3)?))
    }

    /// Open file descriptors of `pid`.
    pub fn open_fds(pid: u32) -> usize {
        std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
    }
}
