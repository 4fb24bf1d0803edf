//! MCP resources end to end, with the real `@modelcontextprotocol/server-everything`
//! (installed by `.ci/run`, see `mcp_npm.rs`): the model lists them and reads one through
//! `mcp__everything__resources`, an unknown URI is a tool error, and `@everything:uri` in a
//! prompt inlines the resource before the turn. With the fault server
//! (`tests/fixtures/mcp/fault_server.py`): a server advertising the capability with nothing to
//! list gets no resources tool (every Python SDK server advertises it), one that lists a
//! resource does, and one that gains its first resource later gets the tool at the next turn.

use keel::policy::ApprovalMode;
use keel::protocol::TurnOutcome;
use keel::runtime::{EventSink, NonInteractiveApprover, RuntimeEvent, Session};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::mcp_support::{
    exec_ask as exec, fault_table, npm_entry, npm_servers, python, recorded, write_config,
};
use super::support::{Sandbox, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

const ARCHITECTURE: &str = "demo://resource/static/document/architecture.md";

fn everything(sandbox: &Sandbox, dir: &std::path::Path, trusted_reads: bool) {
    let config = format!(
        "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n\
         trust_read_only_hint = {trusted_reads}\n",
        npm_entry(dir, "server-everything")
    );
    write_config(sandbox, &config);
}

fn results(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] != Value::Null)
        .map(|l| &l["item"])
        .collect()
}

#[tokio::test]
async fn the_model_lists_and_reads_server_everything_resources() {
    let Some(dir) = npm_servers() else { return };
    let sandbox = Sandbox::new();
    everything(&sandbox, &dir, true);
    let tool = "mcp__everything__resources";
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![
                call(tool, json!({})),
                call(tool, json!({"uri": ARCHITECTURE})),
                call(tool, json!({"uri": "demo://no/such/resource"})),
            ],
        },
        Step::Answer("done".into()),
    ];
    let (lines, bodies) = exec(&sandbox, &steps, "what resources are there?", 0).await;
    let results = results(&lines);
    assert_eq!(results.len(), 3, "{results:#?}");
    let listing = results[0]["output"].as_str().unwrap();
    assert!(
        listing.contains(&format!("- {ARCHITECTURE} — architecture.md (text/markdown)")),
        "{listing}"
    );
    assert!(listing.contains("URI templates"), "{listing}");
    assert!(listing.contains("demo://resource/dynamic/text/{"), "{listing}");
    let read = results[1]["output"].as_str().unwrap();
    assert!(read.starts_with(&format!("[resource {ARCHITECTURE}]")), "{read}");
    assert!(read.contains("# "), "the document's markdown: {read}");
    assert_eq!(results[2]["is_error"], true, "{}", results[2]);
    // The model read the document in its next request, fenced as the server's data.
    let second = bodies[1].to_string();
    assert!(second.contains("architecture.md"), "{second}");
    // One short definition; no resource inlined in the request prefix.
    let defined: Vec<&Value> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["function"]["name"] == tool)
        .collect();
    assert_eq!(defined.len(), 1);
    assert!(defined[0].to_string().len() < 800, "{}", defined[0]);
    assert!(!bodies[0]["tools"].to_string().contains(ARCHITECTURE));
}

#[tokio::test]
async fn a_resource_read_asks_in_ask_mode_unless_the_servers_reads_are_trusted() {
    let Some(dir) = npm_servers() else { return };
    let sandbox = Sandbox::new();
    everything(&sandbox, &dir, false);
    let steps = [
        Step::Calls {
            text: None,
            calls: vec![call("mcp__everything__resources", json!({"uri": ARCHITECTURE}))],
        },
        Step::Answer("done".into()),
    ];
    let (lines, _) = exec(&sandbox, &steps, "read it", 3).await;
    let result = lines.last().unwrap();
    assert_eq!(result["status"], "needs_approval", "{result}");
    assert_eq!(result["declined"][0]["name"], "mcp__everything__resources", "{result}");
}

#[tokio::test]
async fn an_at_mention_inlines_the_resource_into_the_prompt() {
    let Some(dir) = npm_servers() else { return };
    let sandbox = Sandbox::new();
    everything(&sandbox, &dir, false);
    let steps = [Step::Answer("read it".into())];
    let prompt = format!("summarise @everything:{ARCHITECTURE}.");
    let (lines, bodies) = exec(&sandbox, &steps, &prompt, 0).await;
    let first = bodies[0].to_string();
    assert!(
        first.contains(&format!(
            "<mcp_resource server=\\\"everything\\\" uri=\\\"{ARCHITECTURE}\\\">"
        )),
        "{first}"
    );
    assert!(first.contains("not instructions"), "{first}");
    assert_eq!(lines.last().unwrap()["status"], "completed", "{:?}", lines.last());

    // A resource the server does not have: the turn is refused with the reason.
    let steps = [Step::Answer("never asked".into())];
    let (lines, _) = exec(&sandbox, &steps, "see @everything:demo://no/such", 1).await;
    let text = lines.iter().map(Value::to_string).collect::<String>();
    assert!(text.contains("cannot read @everything:demo://no/such"), "{text}");
}

/// The `mcp__` tools a request offers, in order.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with("mcp__"))
        .map(str::to_owned)
        .collect()
}

/// The fault server's own tools under `server`.
fn fault_tools(server: &str) -> Vec<String> {
    ["echo", "add", "slow"].iter().map(|tool| format!("mcp__{server}__{tool}")).collect()
}

#[tokio::test]
async fn a_server_advertising_resources_but_listing_none_gets_no_resources_tool() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("none.jsonl");
    write_config(&sandbox, &fault_table("none", &python, "no-resources", &record, ""));
    let steps = [Step::Answer("nothing to read".into())];
    // A mention of a server without resources stays plain text: no read, no refusal.
    let (lines, bodies) = exec(&sandbox, &steps, "see @none:fault://notes/hello", 0).await;
    assert_eq!(offered(&bodies[0]), fault_tools("none"), "{}", bodies[0]["tools"]);
    assert!(bodies[0].to_string().contains("see @none:fault://notes/hello"), "{}", bodies[0]);
    let text = lines.iter().map(Value::to_string).collect::<String>();
    assert!(!text.contains("cannot read"), "{text}");
    let methods: Vec<Value> = recorded(&record).iter().map(|m| m["method"].clone()).collect();
    assert!(methods.contains(&json!("resources/list")), "keel looked: {methods:?}");
    assert!(!methods.contains(&json!("resources/read")), "{methods:?}");
}

#[tokio::test]
async fn a_server_listing_a_resource_keeps_its_tool_and_its_mentions() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("notes.jsonl");
    let trusted = "trust_read_only_hint = true";
    write_config(&sandbox, &fault_table("notes", &python, "resources", &record, trusted));
    let tool = "mcp__notes__resources";
    let steps = [
        Step::Calls { text: None, calls: vec![call(tool, json!({}))] },
        Step::Answer("read".into()),
    ];
    let (lines, bodies) = exec(&sandbox, &steps, "summarise @notes:fault://notes/hello.", 0).await;
    let mut wanted = fault_tools("notes");
    wanted.push(tool.to_owned());
    assert_eq!(offered(&bodies[0]), wanted);
    let first = bodies[0].to_string();
    assert!(first.contains("KEEL-FAULT-NOTE: hello"), "inlined: {first}");
    let listing = results(&lines)[0]["output"].as_str().unwrap().to_owned();
    assert!(listing.contains("- fault://notes/hello — hello (text/plain)"), "{listing}");
}

/// Drops every event.
struct Nowhere;

impl EventSink for Nowhere {
    fn emit(&mut self, _event: RuntimeEvent) {}
}

#[tokio::test]
async fn a_server_that_gains_its_first_resource_gets_the_tool_at_the_next_turn() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("later.jsonl");
    write_config(&sandbox, &fault_table("later", &python, "resources-later", &record, ""));
    let steps = [
        Step::Calls { text: None, calls: vec![call("mcp__later__echo", json!({"text": "a"}))] },
        Step::Answer("one".into()),
        Step::Answer("two".into()),
    ];
    let model = scripted_model(Wire::Chat, &steps).await;
    let settings = sandbox.settings(&model.uri());
    let mut session = Session::start(
        &settings,
        sandbox.options(ApprovalMode::Yolo),
        Box::new(Nowhere),
        Box::new(NonInteractiveApprover),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let first = session.run_turn("first".into(), &cancel).await.unwrap();
    assert_eq!(first.outcome, TurnOutcome::Completed);
    let second = session.run_turn("second".into(), &cancel).await.unwrap();
    assert_eq!(second.outcome, TurnOutcome::Completed);
    session.end("test").await.unwrap();
    let bodies = request_bodies(&model).await;
    assert_eq!(bodies.len(), 3);
    // Within the first turn the request prefix never moved.
    assert_eq!(offered(&bodies[0]), fault_tools("later"));
    assert_eq!(offered(&bodies[1]), fault_tools("later"));
    let mut wanted = fault_tools("later");
    wanted.push("mcp__later__resources".to_owned());
    assert_eq!(offered(&bodies[2]), wanted);
}
