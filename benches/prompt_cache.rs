//! Prompt caching (issue 16): what keel's requests cost once each
//! provider's published caching rules are applied (`prompt_cache/bill.rs`),
//! next to the ideal (every request reads all of the previous one).
//!
//! ```sh
//! cargo bench --bench prompt_cache                  # the scripted session, all three protocols
//! cargo bench --bench prompt_cache -- --dumps DIR…  # request bodies kept by ../shared/bench
//! ```
//!
//! The scripted session runs the real `keel` binary against a mock model
//! (wiremock, the test suite's SSE shapes) in a temp git repo: a two-bug
//! fix with a 16 kB README read early, task-list updates, phase moves,
//! edits, failing then passing tests, delivery; then a second process
//! resumes the session with another request (15 requests in all). The bill
//! reads exactly the bodies keel sent, so Anthropic's figure shows whatever
//! `cache_control` breakpoints keel puts in them.
//!
//! Each protocol runs it twice: as above, and with an MCP server offering
//! 204 tools (the test suite's `fault_server.py many`, needs python3),
//! deferred behind `mcp_search`/`mcp_call`, where the session opens with a
//! search and a call of one of them (issue 42): the reveal arrives as a
//! tool result, so the bill must stay at the ideal.
//!
//! `KEEL_BIN=path` runs another keel binary (an older build, for the figure
//! before a change). On Anthropic a second row shows the same bodies with
//! the two breakpoints Anthropic documents for a conversation added (the
//! end of the system prompt, and a rolling one on the last block): what the
//! prefix allows once keel sends them.
//!
//! `--dumps` reads folders of request bodies as `../shared/bench/mockllm.py
//! --dump-dir` keeps them (`TAG-NNN-PATH.json`, one sequence per client
//! tag), e.g. the `steps20` run of keel, Claude Code and Codex.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

#[path = "prompt_cache/bill.rs"]
mod bill;
#[path = "prompt_cache/canon.rs"]
mod canon;
#[path = "../tests/suite/wire.rs"]
#[allow(dead_code)]
mod wire;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use bill::{Bill, bill};
use canon::Protocol;
use wire::{Step, Wire, call, render};

/// Plays scripted steps, one per request, in order.
struct Scripted {
    wire: Wire,
    steps: Vec<Step>,
    next: AtomicUsize,
}

impl Respond for Scripted {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let at = self.next.fetch_add(1, Ordering::SeqCst).min(self.steps.len() - 1);
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(render(self.wire, &self.steps[at], at))
    }
}

fn calls(calls: Vec<(String, String)>) -> Step {
    Step::Calls { text: None, calls }
}

fn todos(items: &[(&str, &str)]) -> Step {
    let list: Vec<Value> =
        items.iter().map(|(text, status)| json!({"text": text, "status": status})).collect();
    calls(vec![call("todo_write", json!({ "todos": list }))])
}

fn shell(command: &str) -> Step {
    calls(vec![call("shell", json!({ "command": command }))])
}

fn edit(old: &str, new: &str) -> Step {
    calls(vec![call("edit_file", json!({"path": "calc.py", "old_string": old, "new_string": new}))])
}

/// First process: fix two bugs (12 requests); second: one more request.
fn script() -> (Vec<Step>, Vec<Step>) {
    let first = vec![
        todos(&[("find both bugs", "in_progress"), ("fix add", "pending"), ("fix mul", "pending")]),
        calls(vec![
            call("read_file", json!({"path": "README.md"})),
            call("read_file", json!({"path": "calc.py"})),
        ]),
        calls(vec![call("set_phase", json!({"phase": "explore"}))]),
        calls(vec![call("read_file", json!({"path": "test_calc.py"}))]),
        todos(&[
            ("find both bugs", "completed"),
            ("fix add", "in_progress"),
            ("fix mul", "pending"),
        ]),
        edit("return a - b", "return a + b"),
        shell("python3 test_calc.py"),
        edit("return a + b + 0", "return a * b"),
        todos(&[
            ("find both bugs", "completed"),
            ("fix add", "completed"),
            ("fix mul", "completed"),
        ]),
        shell("python3 test_calc.py 2>&1 | tail -n 20"),
        calls(vec![call("set_phase", json!({"phase": "deliver"}))]),
        Step::Answer("Fixed add() and mul(); python3 test_calc.py passes.".into()),
    ];
    let second = vec![
        edit("def add(a, b):", "def add(a, b):\n    \"\"\"The sum of a and b.\"\"\""),
        shell("python3 test_calc.py"),
        Step::Answer("Added the docstring; the tests still pass.".into()),
    ];
    (first, second)
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    let status = std::process::Command::new("git").args(["init", "-q"]).current_dir(repo).status();
    assert!(status.unwrap().success());
    let paragraph = "The calculator module offers add and mul for whole numbers. It is used by \
                     the billing scripts, which sum line items and scale them by quantities; \
                     keep both functions pure and fast, and keep their names stable.\n\n";
    std::fs::write(repo.join("README.md"), format!("# calc\n\n{}", paragraph.repeat(75))).unwrap();
    std::fs::write(
        repo.join("calc.py"),
        "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b + 0\n",
    )
    .unwrap();
    std::fs::write(
        repo.join("test_calc.py"),
        "from calc import add, mul\nassert add(2, 3) == 5\nassert mul(2, 3) == 6\nprint('ok')\n",
    )
    .unwrap();
    dir
}

/// The steps that find and call a deferred MCP tool (issue 42), before
/// the rest of the session.
fn reveal() -> Vec<Step> {
    vec![
        calls(vec![call("mcp_search", json!({"query": "forecast city"}))]),
        calls(vec![call(
            "mcp_call",
            json!({"tool": "mcp__many__weather", "arguments": {"city": "Oslo"}}),
        )]),
    ]
}

/// `$KEEL_HOME/config.toml` with the test suite's fault server offering
/// 204 tools (`tests/fixtures/mcp/fault_server.py many`): deferred.
fn many_tools_config(home: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fault_server.py");
    let record = home.join("many.jsonl");
    let table = format!(
        "[mcp_servers.many]\ncommand = \"python3\"\nargs = [{:?}, \"many\", {:?}]\n",
        script.display().to_string(),
        record.display().to_string()
    );
    std::fs::write(home.join("config.toml"), table).unwrap();
}

/// Runs the scripted session on `wire` (with `mcp`: 204 deferred MCP tools
/// and a search and call of one first); the bodies keel sent, in order.
async fn scripted_session(wire: Wire, mcp: bool) -> Vec<Value> {
    let dir = project();
    let repo = dir.path();
    let home = tempfile::tempdir().unwrap();
    let (first, second) = script();
    if mcp {
        many_tools_config(home.path());
    }
    let opening = if mcp { reveal() } else { Vec::new() };
    let steps: Vec<Step> = opening.into_iter().chain(first).chain(second).collect();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Scripted { wire, steps, next: AtomicUsize::new(0) })
        .mount(&server)
        .await;
    let base = format!("{}/v1", server.uri());
    let keel = |args: &[&str]| {
        let binary =
            std::env::var("KEEL_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_keel").into());
        let output = std::process::Command::new(binary)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("KEEL_HOME", home.path())
            .current_dir(repo)
            .args(["exec", "--json", "--full-auto", "--provider", wire.provider()])
            .args(["--model", "mock-model", "--base-url", &base])
            .args(args)
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    };
    keel(&["Fix the two bugs in calc.py."]);
    keel(&["--last", "Add a docstring to add()."]);
    let received = server.received_requests().await.unwrap_or_default();
    let bodies: Vec<Value> =
        received.iter().map(|request| serde_json::from_slice(&request.body).unwrap()).collect();
    if let Ok(dir) = std::env::var("PROMPT_CACHE_DUMP") {
        // Kept as ../shared/bench names them, for `--dumps`.
        std::fs::create_dir_all(&dir).unwrap();
        let path = wire.path().trim_start_matches('/').replace('/', "_");
        for (n, body) in bodies.iter().enumerate() {
            let file = Path::new(&dir).join(format!("keel-{n:03}-POST_{path}.json"));
            std::fs::write(file, body.to_string()).unwrap();
        }
    }
    bodies
}

/// `body` with a breakpoint at the end of the system prompt and on the
/// last content block of the last message (any others removed).
fn with_breakpoints(body: &Value) -> Value {
    let mut body = body.clone();
    let marker = json!({"type": "ephemeral"});
    let system = match body["system"].take() {
        Value::String(text) => json!([{"type": "text", "text": text}]),
        Value::Array(parts) => Value::Array(parts),
        _ => json!([]),
    };
    body["system"] = system;
    if let Some(last) = body["system"].as_array_mut().and_then(|parts| parts.last_mut()) {
        last["cache_control"] = marker.clone();
    }
    let last_message = body["messages"].as_array_mut().and_then(|messages| messages.last_mut());
    if let Some(message) = last_message {
        if let Value::String(text) = &message["content"] {
            message["content"] = json!([{"type": "text", "text": text}]);
        }
        if let Some(block) = message["content"].as_array_mut().and_then(|b| b.last_mut()) {
            block["cache_control"] = marker;
        }
    }
    body
}

fn protocol_of(wire: Wire) -> Protocol {
    match wire {
        Wire::Responses => Protocol::Responses,
        Wire::Chat => Protocol::Chat,
        Wire::Anthropic => Protocol::Anthropic,
    }
}

fn header() {
    println!(
        "| client | protocol | requests | input tokens | cache reads | cache writes | billed | ratio | ideal | gap |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
}

fn row(client: &str, protocol: Protocol, bill: &Bill) {
    let gap = bill.ratio() - bill.ideal_ratio();
    println!(
        "| {client} | {} | {} | {} | {} | {} | {:.0} | {:.3} | {:.3} | {gap:+.3} |",
        protocol.name(),
        bill.requests,
        bill.input,
        bill.read,
        bill.written,
        bill.billed,
        bill.ratio(),
        bill.ideal_ratio(),
    );
    if bill.over_breakpoints > 0 {
        println!("  ({} requests carried more than 4 breakpoints)", bill.over_breakpoints);
    }
}

fn count(text: &str) -> u64 {
    keel::context::tokens::count(text)
}

async fn scripted() {
    println!(
        "Scripted session (two processes, 15 requests; 17 with the reveal), keel {}:\n",
        env!("CARGO_PKG_VERSION")
    );
    header();
    for wire in [Wire::Responses, Wire::Chat, Wire::Anthropic] {
        let bodies = scripted_session(wire, false).await;
        let protocol = protocol_of(wire);
        row("keel", protocol, &bill(protocol, &bodies, &count));
        // 204 MCP tools, deferred: a search and a call reveal one.
        let revealed = scripted_session(wire, true).await;
        row("keel, 204 MCP tools, a reveal", protocol, &bill(protocol, &revealed, &count));
        let grown = revealed[0].to_string().len() as i64 - bodies[0].to_string().len() as i64;
        println!("  (first request {grown:+} bytes over the one without MCP tools)");
        let breakpoints = bodies.iter().any(|body| body.to_string().contains("cache_control"));
        if protocol == Protocol::Anthropic {
            if !breakpoints {
                println!(
                    "  (keel sent no cache_control breakpoint: nothing is cached on Anthropic)"
                );
            }
            let marked: Vec<Value> = bodies.iter().map(with_breakpoints).collect();
            row("keel + 2 breakpoints (simulated)", protocol, &bill(protocol, &marked, &count));
        }
    }
}

/// One client's requests on one protocol, numbered as dumped.
type Sequence = (Protocol, Vec<(u32, Value)>);

/// `TAG-NNN-PATH.json` → (tag, number, protocol).
fn dump_name(path: &Path) -> Option<(String, u32, Protocol)> {
    let name = path.file_name()?.to_str()?.strip_suffix(".json")?;
    // `TAG-NNN-METHOD_path`: the tag may hold dashes (`codex-native`).
    let mut parts = name.rsplitn(3, '-');
    let protocol = Protocol::from_path(parts.next()?)?;
    let number = parts.next()?.parse().ok()?;
    let tag = parts.next()?.to_owned();
    Some((tag, number, protocol))
}

fn dumps(dirs: &[PathBuf]) {
    header();
    for dir in dirs {
        let mut groups: BTreeMap<(String, &'static str), Sequence> = BTreeMap::new();
        for entry in std::fs::read_dir(dir).expect("a dump folder") {
            let path = entry.unwrap().path();
            let Some((tag, number, protocol)) = dump_name(&path) else { continue };
            let Ok(body) = serde_json::from_slice::<Value>(&std::fs::read(&path).unwrap()) else {
                continue;
            };
            let group = groups.entry((tag, protocol.name())).or_insert((protocol, Vec::new()));
            group.1.push((number, body));
        }
        for ((tag, _), (protocol, mut bodies)) in groups {
            bodies.sort_by_key(|(number, _)| *number);
            let bodies: Vec<Value> = bodies.into_iter().map(|(_, body)| body).collect();
            let label = format!("{tag} ({})", dir.display());
            row(&label, protocol, &bill(protocol, &bodies, &count));
            let breakpoints = bodies.iter().any(|body| body.to_string().contains("cache_control"));
            if protocol == Protocol::Anthropic && !breakpoints {
                let marked: Vec<Value> = bodies.iter().map(with_breakpoints).collect();
                let label = format!("{label} + 2 breakpoints (simulated)");
                row(&label, protocol, &bill(protocol, &marked, &count));
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|arg| arg != "--bench").collect();
    match args.iter().position(|arg| arg == "--dumps") {
        Some(at) => dumps(&args[at + 1..].iter().map(PathBuf::from).collect::<Vec<_>>()),
        None => scripted().await,
    }
}
