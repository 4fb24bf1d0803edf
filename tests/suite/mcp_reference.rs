//! More of the public reference MCP servers from the npm registry (pinned by
//! `tests/fixtures/mcp-npm/package-lock.json`, installed by `.ci/run`; see `mcp_npm.rs`), each
//! listed and called through `keel exec` with a scripted model:
//! `@modelcontextprotocol/server-memory` (a knowledge graph in a file the config names) and
//! `@modelcontextprotocol/server-sequential-thinking`.

use serde_json::{Value, json};

use super::mcp_support::{npm_package, write_config};
use super::support::{Model, Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire, call};

async fn exec_yolo(sandbox: &Sandbox, calls: Vec<(&str, Value)>) -> (Vec<Value>, Vec<Value>) {
    let calls = calls.into_iter().map(|(name, args)| call(name, args)).collect();
    let steps = [Step::Calls { text: None, calls }, Step::Answer("done".into())];
    let model = scripted_model(Wire::Chat, &steps).await;
    let output = sandbox
        .keel()
        .env("OPENAI_API_KEY", "sk-keel-test-secret")
        .arg("exec")
        .args(Model::chat(&model).flags())
        .args(["--json", "--mode", "yolo"])
        .arg("go")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    (json_lines(&output.stdout), request_bodies(&model).await)
}

fn offered(body: &Value, prefix: &str) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .filter(|n| n.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

fn outputs(lines: &[Value]) -> Vec<&Value> {
    lines
        .iter()
        .filter(|l| l["type"] == "item_completed" && l["item"]["name"] != Value::Null)
        .map(|l| &l["item"])
        .collect()
}

#[tokio::test]
async fn server_memory_keeps_an_entity_and_reads_it_back() {
    let Some(entry) = npm_package("server-memory") else { return };
    let sandbox = Sandbox::new();
    let memory = sandbox.home.join("memory.jsonl");
    let config = format!(
        "[mcp_servers.memory]\ncommand = \"node\"\nargs = [{entry:?}]\n\
         env = {{ MEMORY_FILE_PATH = {:?} }}\n",
        memory.display().to_string()
    );
    write_config(&sandbox, &config);
    let entity =
        json!({"name": "keel", "entityType": "project", "observations": ["written in Rust"]});
    let (lines, bodies) =
        exec_yolo(&sandbox, vec![("mcp__memory__create_entities", json!({"entities": [entity]}))])
            .await;
    let tools = offered(&bodies[0], "mcp__memory__");
    for tool in ["create_entities", "read_graph", "search_nodes", "add_observations"] {
        assert!(tools.contains(&format!("mcp__memory__{tool}")), "{tools:?}");
    }
    let results = outputs(&lines);
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert!(std::fs::read_to_string(&memory).unwrap().contains("written in Rust"));

    // A second session reads what the first kept.
    let (lines, _) =
        exec_yolo(&sandbox, vec![("mcp__memory__search_nodes", json!({"query": "keel"}))]).await;
    let found = outputs(&lines)[0]["output"].as_str().unwrap().to_owned();
    assert!(found.contains("written in Rust"), "{found}");
}

#[tokio::test]
async fn server_sequential_thinking_records_a_thought() {
    let Some(entry) = npm_package("server-sequential-thinking") else { return };
    let sandbox = Sandbox::new();
    write_config(
        &sandbox,
        &format!("[mcp_servers.thinking]\ncommand = \"node\"\nargs = [{entry:?}]\n"),
    );
    let thought = json!({
        "thought": "first, list the servers",
        "nextThoughtNeeded": true,
        "thoughtNumber": 1,
        "totalThoughts": 2
    });
    let (lines, bodies) =
        exec_yolo(&sandbox, vec![("mcp__thinking__sequentialthinking", thought)]).await;
    assert_eq!(offered(&bodies[0], "mcp__thinking__"), ["mcp__thinking__sequentialthinking"]);
    let result = outputs(&lines)[0];
    assert_eq!(result["is_error"], false, "{result}");
    let output = result["output"].as_str().unwrap();
    assert!(
        output.contains("\"thoughtNumber\": 1") || output.contains("\"thoughtNumber\":1"),
        "{output}"
    );
    assert!(output.contains("totalThoughts"), "{output}");
}
