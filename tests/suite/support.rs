//! Test fixtures: a temp git repo with its own KEEL_HOME, a wiremock model
//! that plays a scripted trajectory, and a way to run the real `keel`
//! binary with a cleared environment.
//!
//! The e2e vocabulary: a [`Model`] names what a run talks to (provider,
//! base URL, model name); [`Sandbox::run`] runs `keel <args…>` against it
//! in the repo (cleared environment, the sandbox's HOME and KEEL_HOME) and
//! returns its `Output` ([`json_lines`] reads a `--json` stream, and
//! [`Sandbox::only_log`] the session log, both validated against the
//! published schemas in `schemas/`); [`Sandbox::keel_on`] is the same
//! command unrun, for a test that adds stdin or env, or spawns it. The
//! provider flags go right after the subcommand words of `args`, so a
//! prompt given in `args` still comes last.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::wire::{Step, Tokens, Wire, render_with};

/// A temp git repository plus a keel home outside it.
pub struct Sandbox {
    _root: TempDir,
    pub repo: PathBuf,
    pub home: PathBuf,
    /// What `keel` runs under (e.g. `setpriv …` to run as another user).
    wrapper: Vec<String>,
}

impl Sandbox {
    pub fn new() -> Self {
        Self::in_dir(&std::env::temp_dir())
    }

    /// A sandbox whose folder is made in `parent`.
    pub fn in_dir(parent: &Path) -> Self {
        let root = tempfile::tempdir_in(parent).unwrap();
        let repo = root.path().join("repo");
        let home = root.path().join("keel-home");
        std::fs::create_dir_all(&repo).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(status.success());
        Self { _root: root, repo, home, wrapper: Vec::new() }
    }

    /// The folder holding the repository and the home.
    pub fn root(&self) -> &Path {
        self._root.path()
    }

    /// This sandbox with `keel` run under `wrapper` (`setpriv …`).
    pub fn run_under(mut self, wrapper: &[&str]) -> Self {
        self.wrapper = wrapper.iter().map(|word| (*word).to_owned()).collect();
        self
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.repo.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.repo.join(rel)).unwrap()
    }

    /// `keel` with a cleared environment, run inside the repo.
    pub fn keel(&self) -> Command {
        let mut cmd = match self.wrapper.split_first() {
            None => Command::cargo_bin("keel").unwrap(),
            Some((program, args)) => {
                let mut cmd = Command::new(program);
                cmd.args(args).arg(assert_cmd::cargo::cargo_bin("keel"));
                cmd
            }
        };
        cmd.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("KEEL_HOME", &self.home)
            .current_dir(&self.repo);
        cmd
    }

    /// `keel <args…>` talking to `model`, unrun: the provider, base URL and
    /// model flags follow `args`; add a prompt, stdin or env after.
    pub fn keel_on(&self, model: &Model, args: &[&str]) -> Command {
        let (subcommand, rest) = split_subcommand(args);
        let mut cmd = self.keel();
        cmd.args(subcommand).args(model.flags()).args(rest);
        cmd
    }

    /// Runs `keel <args…>` against `model` in the repo, to its end.
    pub fn run(&self, model: &Model, args: &[&str]) -> Output {
        self.keel_on(model, args).output().unwrap()
    }

    /// Settings for a library-level session against the mock model at
    /// `uri` (openai-chat, model `m`), as `keel` would load them here.
    pub fn settings(&self, uri: &str) -> keel::config::Settings {
        let env = keel::config::Environment {
            keel_home: self.home.clone(),
            cwd: self.repo.clone(),
            vars: std::collections::BTreeMap::from([(
                "HOME".to_owned(),
                self.home.display().to_string(),
            )]),
        };
        let overrides = keel::config::CliOverrides {
            provider: Some("openai-chat".into()),
            base_url: Some(format!("{uri}/v1")),
            model: Some("m".into()),
            ..keel::config::CliOverrides::default()
        };
        keel::config::load(&env, &overrides).unwrap()
    }

    /// Session options in the repo with `approval`, on a fixed date.
    pub fn options(&self, approval: keel::policy::ApprovalMode) -> keel::runtime::SessionOptions {
        keel::runtime::SessionOptions {
            approval,
            cwd: self.repo.clone(),
            date: "2026-11-29".into(),
            headless: true,
            script_answers: false,
        }
    }

    /// The only session log written so far.
    pub fn only_log(&self) -> Vec<Value> {
        read_jsonl(&self.only_log_path())
    }

    /// The path of the only session log written so far (a killed keel may
    /// leave its lock's `.owner` sidecar beside it).
    pub fn only_log_path(&self) -> PathBuf {
        let dir = self.home.join("sessions");
        let logs: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
            .collect();
        assert_eq!(logs.len(), 1, "expected one log in {}", dir.display());
        logs[0].clone()
    }
}

/// The model a run of keel talks to: a provider at a base URL, by name.
#[derive(Debug, Clone)]
pub struct Model {
    provider: String,
    base_url: String,
    name: String,
}

impl Model {
    /// The scripted Chat Completions model at `server`, named `m`.
    pub fn chat(server: &MockServer) -> Self {
        Self::on(Wire::Chat, server)
    }

    /// The scripted model at `server` speaking `wire`, named `m`.
    pub fn on(wire: Wire, server: &MockServer) -> Self {
        Self::at(wire.provider(), &server.uri())
    }

    /// `provider` at `uri` (its `/v1` appended), named `m`: a server that
    /// is not a [`MockServer`] (a raw socket, a port nobody listens on).
    pub fn at(provider: &str, uri: &str) -> Self {
        Self { provider: provider.to_owned(), base_url: format!("{uri}/v1"), name: "m".to_owned() }
    }

    /// `provider` at exactly `base_url`, named `m`.
    pub fn with_base_url(provider: &str, base_url: &str) -> Self {
        Self { provider: provider.to_owned(), base_url: base_url.to_owned(), name: "m".to_owned() }
    }

    /// The same model under another name.
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// `--provider … --base-url … --model …`.
    pub fn flags(&self) -> [&str; 6] {
        ["--provider", &self.provider, "--base-url", &self.base_url, "--model", &self.name]
    }
}

/// Where the provider flags go in `args`: after the subcommand words
/// (`exec`, `exec resume`), before the first flag or prompt.
fn split_subcommand<'a>(args: &'a [&'a str]) -> (&'a [&'a str], &'a [&'a str]) {
    let words = match args {
        ["exec", "resume", ..] => 2,
        ["exec" | "resume" | "mcp-server", ..] => 1,
        _ => 0,
    };
    args.split_at(words)
}

/// Reads a JSONL file. A session log (a file in a `sessions` folder)
/// must follow the published schema line by line
/// (`schemas/session-event.schema.json`, `contract.rs`).
pub fn read_jsonl(path: &Path) -> Vec<Value> {
    let is_log = path.parent().and_then(Path::file_name).is_some_and(|name| name == "sessions");
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if is_log {
                super::contract::validate_log_line(&value);
            }
            value
        })
        .collect()
}

/// One line of `--json` stdout, which must follow the published schema
/// (`schemas/exec-event.schema.json`, `contract.rs`).
pub fn exec_line(line: &str) -> Value {
    let value: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    assert!(value["type"].is_string(), "no type: {line}");
    super::contract::validate_exec_line(&value);
    value
}

/// Parses stdout of `--json`: every line must be a JSON object with a
/// type, valid against the published schema ([`exec_line`]).
pub fn json_lines(stdout: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(stdout);
    text.lines().map(exec_line).collect()
}

pub fn types(lines: &[Value]) -> Vec<String> {
    lines.iter().map(|v| v["type"].as_str().unwrap_or("").to_owned()).collect()
}

/// Answers successive requests with successive scripted SSE bodies.
struct Scripted {
    bodies: Vec<String>,
    next: AtomicUsize,
}

impl Respond for Scripted {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, Ordering::SeqCst).min(self.bodies.len() - 1);
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(self.bodies[index].clone())
    }
}

/// A mock model for `wire` playing `steps` in order.
pub async fn scripted_model(wire: Wire, steps: &[Step]) -> MockServer {
    scripted_model_with(wire, steps, Tokens::default()).await
}

/// [`scripted_model`] whose every response reports `tokens` as its usage.
pub async fn scripted_model_with(wire: Wire, steps: &[Step], tokens: Tokens) -> MockServer {
    let server = MockServer::start().await;
    let bodies = steps.iter().enumerate().map(|(i, s)| render_with(wire, s, i, tokens)).collect();
    Mock::given(method("POST"))
        .and(path(wire.path()))
        .respond_with(Scripted { bodies, next: AtomicUsize::new(0) })
        .mount(&server)
        .await;
    server
}

/// Answers each request with the step `next` makes of its index and body:
/// a script whose next call depends on what keel sent (a path only the
/// run knows).
struct Reacting<F> {
    wire: Wire,
    next: F,
    count: AtomicUsize,
}

impl<F: Fn(usize, &Value) -> Step + Send + Sync + 'static> Respond for Reacting<F> {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let index = self.count.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let step = (self.next)(index, &body);
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(render_with(self.wire, &step, index, Tokens::default()))
    }
}

/// A mock model for `wire` whose `index`-th answer is `next(index, body)`,
/// `body` the request it answers.
pub async fn reacting_model(
    wire: Wire,
    next: impl Fn(usize, &Value) -> Step + Send + Sync + 'static,
) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(wire.path()))
        .respond_with(Reacting { wire, next, count: AtomicUsize::new(0) })
        .mount(&server)
        .await;
    server
}

/// A Chat Completions mock playing `steps` whose tool calls carry no id
/// (as some local servers send them; keel names them by position).
pub async fn scripted_chat_without_call_ids(steps: &[Step]) -> MockServer {
    scripted_chat_edited(steps, |i, mut body| {
        for n in 0..16 {
            body = body.replace(&format!("\"id\":\"call_{i}_{n}\","), "");
        }
        assert!(!body.contains("\"id\":\"call_"), "{body}");
        body
    })
    .await
}

/// A Chat Completions mock playing `steps` whose responses report no
/// usage at all, as some Ollama and llama.cpp versions and proxies do.
pub async fn scripted_chat_without_usage(steps: &[Step]) -> MockServer {
    scripted_chat_edited(steps, |_, body| {
        body.split_inclusive("\n\n").filter(|event| !event.contains("\"usage\"")).collect()
    })
    .await
}

/// A Chat Completions mock playing `steps`, each body (with its index)
/// changed by `edit`.
async fn scripted_chat_edited(
    steps: &[Step],
    edit: impl Fn(usize, String) -> String,
) -> MockServer {
    let server = MockServer::start().await;
    let bodies = steps
        .iter()
        .enumerate()
        .map(|(i, step)| edit(i, render_with(Wire::Chat, step, i, Tokens::default())))
        .collect();
    Mock::given(method("POST"))
        .and(path(Wire::Chat.path()))
        .respond_with(Scripted { bodies, next: AtomicUsize::new(0) })
        .mount(&server)
        .await;
    server
}

/// Bodies of the requests the model received, parsed.
pub async fn request_bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}
