//! MCP costs, measured in the same run against their baselines:
//!
//! 1. session start with 3 stdio servers: time from `Session::start` to the
//!    first model request (the mock model notes when it arrives), against
//!    the same session with no servers, and against starting the 3 servers
//!    one after another (what parallel start saves);
//! 2. per-call overhead of an MCP `echo` against a built-in tool
//!    (`read_file` of a one-line file), both through `ToolRegistry::run_call`;
//! 3. whether the tool list of the first request is byte-stable: the same
//!    servers give the same tool bytes in two sessions, and every request
//!    of a session carries the same tool bytes.
//!
//! Servers: `@modelcontextprotocol/server-everything` from the npm cache
//! `.ci/run` fills (`KEEL_MCP_NPM_DIR`, default `~/.cache/keel-ci-mcp`), else
//! keel's Python fault server (`tests/fixtures/mcp`); the output says which.
//!
//! Run: `cargo bench --bench mcp`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use keel::config::mcp::{McpOrigin, McpServerConfig, McpSettings, McpTransport};
use keel::config::{CliOverrides, Environment};
use keel::mcp::McpHub;
use keel::policy::ApprovalMode;
use keel::protocol::ToolCall;
use keel::runtime::{EventSink, NonInteractiveApprover, RuntimeEvent, Session, SessionOptions};
use keel::sandbox::EnvFilter;
use keel::tools::{ToolContext, ToolRegistry};
use tokio_util::sync::CancellationToken;
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const ROUNDS: usize = 5;
const CALLS: usize = 300;

/// The server command: (program, args, label).
fn server_command() -> (String, Vec<String>, &'static str) {
    let dir = std::env::var_os("KEEL_MCP_NPM_DIR").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/keel-ci-mcp")
    });
    let everything = dir.join("node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    if everything.exists() {
        let args = vec![everything.display().to_string(), "stdio".to_owned()];
        return ("node".to_owned(), args, "server-everything (node)");
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/fault_server.py");
    ("python3".to_owned(), vec![script.display().to_string(), "ok".to_owned()], "fault_server.py")
}

fn settings(servers: usize) -> McpSettings {
    let (command, args, _) = server_command();
    McpSettings {
        servers: (0..servers)
            .map(|index| McpServerConfig {
                name: format!("s{index}"),
                origin: McpOrigin::User,
                transport: McpTransport::Stdio {
                    command: command.clone(),
                    args: args.clone(),
                    env: Vec::new(),
                    cwd: None,
                },
                startup_timeout: Duration::from_secs(30),
                tool_timeout: Duration::from_secs(30),
                enabled_tools: None,
                disabled_tools: Vec::new(),
                trust_read_only_hint: true,
                trust_content: false,
            })
            .collect(),
        skipped: Vec::new(),
        renamed: Vec::new(),
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn percentile(mut values: Vec<f64>, p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// Answers every request with a final text and notes when the first came.
struct FirstRequest(Arc<Mutex<Option<Instant>>>, Arc<Mutex<Vec<serde_json::Value>>>);

impl Respond for FirstRequest {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.0.lock().unwrap().get_or_insert_with(Instant::now);
        self.1.lock().unwrap().push(serde_json::from_slice(&request.body).unwrap_or_default());
        let body = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"ok\"}}]}\n\n\
                    data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
                    data: [DONE]\n\n";
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(body)
    }
}

struct Quiet;

impl EventSink for Quiet {
    fn emit(&mut self, _: RuntimeEvent) {}
}

/// Seconds from `Session::start` to the first model request, and the
/// request bodies of a two-turn session.
async fn time_to_first_request(servers: usize) -> (f64, Vec<serde_json::Value>) {
    let root = tempfile::tempdir().unwrap();
    let (home, repo) = (root.path().join("home"), root.path().join("repo"));
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    // No sandbox probe: it would start this binary as `keel sandbox-exec`.
    std::fs::write(home.join("config.toml"), "[sandbox]\nmode = \"full-access\"\nnetwork = true\n")
        .unwrap();
    let model = MockServer::start().await;
    let first = Arc::new(Mutex::new(None));
    let bodies = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(FirstRequest(first.clone(), bodies.clone()))
        .mount(&model)
        .await;
    let env = Environment {
        keel_home: home.clone(),
        cwd: repo.clone(),
        vars: [("HOME".to_owned(), home.display().to_string())].into(),
    };
    let overrides = CliOverrides {
        provider: Some("openai-chat".into()),
        base_url: Some(format!("{}/v1", model.uri())),
        model: Some("m".into()),
        ..CliOverrides::default()
    };
    let mut config = keel::config::load(&env, &overrides).unwrap();
    config.mcp = settings(servers);
    let options = SessionOptions {
        approval: ApprovalMode::Ask,
        cwd: repo,
        date: "2026-12-01".into(),
        headless: true,
        script_answers: false,
    };
    let started = Instant::now();
    let mut session =
        Session::start(&config, options, Box::new(Quiet), Box::new(NonInteractiveApprover))
            .unwrap();
    let cancel = CancellationToken::new();
    session.run_turn("hello".into(), &cancel).await.unwrap();
    let first_at = first.lock().unwrap().expect("no request");
    session.run_turn("again".into(), &cancel).await.unwrap();
    session.end("bench").await.unwrap();
    let bodies = bodies.lock().unwrap().clone();
    ((first_at - started).as_secs_f64(), bodies)
}

async fn sequential_start(servers: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    for index in 0..servers {
        let mut one = settings(servers);
        one.servers = vec![one.servers.remove(index)];
        let hub = McpHub::start(&one, dir.path(), &EnvFilter::default(), dir.path());
        hub.wait_started().await;
        hub.shutdown().await;
    }
    started.elapsed().as_secs_f64()
}

async fn per_call() -> (Vec<f64>, Vec<f64>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("one.txt"), "one line\n").unwrap();
    let hub = McpHub::start(&settings(1), dir.path(), &EnvFilter::default(), dir.path());
    hub.wait_started().await;
    let defs = hub.tool_defs();
    let mut registry = ToolRegistry::builtin();
    registry.extend(hub.tools(&defs));
    let echo_args = if defs
        .iter()
        .any(|d| d.remote == "echo" && d.parameters.to_string().contains("message"))
    {
        r#"{"message":"hi"}"#
    } else {
        r#"{"text":"hi"}"#
    };
    let ctx =
        ToolContext::new(dir.path().to_owned(), dir.path().to_owned(), CancellationToken::new());
    let timed = |name: &str, arguments: &str| {
        let call = ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
            item_id: None,
            provider_data: None,
        };
        let registry = &registry;
        let ctx = &ctx;
        async move {
            let mut samples = Vec::with_capacity(CALLS);
            for _ in 0..CALLS {
                let started = Instant::now();
                let (result, _) = registry.run_call(&call, ctx).await;
                assert!(!result.is_error, "{}", result.output);
                samples.push(started.elapsed().as_secs_f64());
            }
            samples
        }
    };
    let mcp = timed("mcp__s0__echo", echo_args).await;
    let builtin = timed("read_file", r#"{"path":"one.txt"}"#).await;
    hub.shutdown().await;
    (mcp, builtin)
}

fn main() {
    // A session started here may run its own executable as the sandbox
    // launcher; this binary is not keel, so such a run must do nothing.
    if std::env::args().nth(1).as_deref() == Some("sandbox-exec") {
        std::process::exit(2);
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (_, _, label) = server_command();
    println!("servers: {label}");
    runtime.block_on(async {
        let mut none = Vec::new();
        let mut three = Vec::new();
        let mut sequential = Vec::new();
        let mut bodies_of_three = Vec::new();
        for _ in 0..ROUNDS {
            none.push(time_to_first_request(0).await.0);
            let (seconds, bodies) = time_to_first_request(3).await;
            three.push(seconds);
            bodies_of_three.push(bodies);
            sequential.push(sequential_start(3).await);
        }
        println!(
            "time to first request: no servers {:.1} ms · 3 stdio servers {:.1} ms (started one \
             after another they take {:.1} ms); medians of {ROUNDS}",
            median(none) * 1e3,
            median(three) * 1e3,
            median(sequential) * 1e3
        );
        let tools: Vec<String> = bodies_of_three
            .iter()
            .flat_map(|bodies| bodies.iter().map(|body| body["tools"].to_string()))
            .collect();
        let stable = tools.windows(2).all(|pair| pair[0] == pair[1]);
        let mcp_tools = bodies_of_three[0][0]["tools"]
            .as_array()
            .map_or(0, |tools| tools.iter().filter(|t| t["function"]["name"].as_str().unwrap_or("").starts_with("mcp__")).count());
        println!(
            "tool list of {} requests ({} MCP tools): byte-identical across requests and sessions: {}",
            tools.len(),
            mcp_tools,
            if stable { "yes" } else { "NO" }
        );
        let (mcp, builtin) = per_call().await;
        println!(
            "per call through ToolRegistry::run_call ({CALLS} calls): MCP echo median {:.0} µs \
             (p90 {:.0}) · built-in read_file median {:.0} µs (p90 {:.0})",
            median(mcp.clone()) * 1e6,
            percentile(mcp, 0.9) * 1e6,
            median(builtin.clone()) * 1e6,
            percentile(builtin, 0.9) * 1e6
        );
    });
}
