//! Deferred MCP tools (issue 42): a server offering hundreds of tools
//! adds two small tools to the request, not hundreds of definitions; the
//! model finds a tool with `tool_search` and calls it with `call_tool`; the
//! call is judged, run and logged by its real name, and the request
//! prefix (instructions and tools) never changes.

use serde_json::{Value, json};

use super::mcp_faults::{calls, exec, item};
use super::mcp_support::{fault_table, python, recorded, write_config};
use super::support::{Sandbox, json_lines, request_bodies, scripted_model};
use super::wire::{Step, Wire};

fn tools_bytes(body: &Value) -> usize {
    body["tools"].to_string().len()
}

#[tokio::test]
async fn two_hundred_tools_cost_the_request_under_2_kb_and_any_one_is_found_and_called() {
    let Some(python) = python() else { return };
    // The same first request with no server, for the size comparison.
    let plain = Sandbox::new();
    let model = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&plain, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let without = request_bodies(&model).await.remove(0);

    let sandbox = Sandbox::new();
    let record = sandbox.home.join("many.jsonl");
    write_config(&sandbox, &fault_table("many", &python, "many", &record, ""));
    let model = scripted_model(
        Wire::Chat,
        &[
            calls(&[("tool_search", json!({"query": "forecast city"}))]),
            calls(&[(
                "call_tool",
                json!({"tool": "mcp__many__weather", "arguments": {"city": "Oslo"}}),
            )]),
            Step::Answer("Sunny in Oslo.".into()),
        ],
    )
    .await;
    let output = exec(&sandbox, &model, &["--yolo"], "what is the weather in Oslo?");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let bodies = request_bodies(&model).await;
    let grown = serde_json::to_string(&bodies[0]).unwrap().len() as i64
        - serde_json::to_string(&without).unwrap().len() as i64;
    assert!(grown <= 2048, "204 MCP tools grew the first request by {grown} bytes");
    assert!(!bodies[0].to_string().contains("warehouse 17"), "no definition in the request");
    // The prefix never changes: every request offers the same tools.
    for body in &bodies[1..] {
        assert_eq!(body["tools"], bodies[0]["tools"], "the tool list was rewritten");
    }
    assert!(tools_bytes(&bodies[0]) < tools_bytes(&without) + 2048);

    let lines = json_lines(&output.stdout);
    let found = item(&lines, "tool_search")["item"]["output"].as_str().unwrap().to_owned();
    assert!(found.starts_with("mcp__many__weather\n"), "{found}");
    assert!(found.contains("input schema: {"), "{found}");
    // The call went out under the tool's own name, with its arguments.
    let called = item(&lines, "mcp__many__weather");
    assert!(called["item"]["output"].as_str().unwrap().contains("forecast for Oslo"), "{called}");
    let sent: Vec<Value> =
        recorded(&record).into_iter().filter(|m| m["method"] == "tools/call").collect();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["params"]["name"], "weather");
    assert_eq!(sent[0]["params"]["arguments"], json!({"city": "Oslo"}));
    // The history sends back what the model wrote.
    let history = bodies[2].to_string();
    assert!(history.contains("call_tool"), "{history}");
}

#[tokio::test]
async fn a_call_through_call_tool_is_judged_by_the_real_tool_s_name() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("many.jsonl");
    // `add` may change things: policy asks in ask mode, and a headless
    // run refuses it, under its real name, never as `call_tool`.
    write_config(&sandbox, &fault_table("many", &python, "many", &record, ""));
    let model = scripted_model(
        Wire::Chat,
        &[
            calls(&[("call_tool", json!({"tool": "mcp__many__add", "arguments": {}}))]),
            calls(&[("call_tool", json!({"tool": "shell", "arguments": {"command": "touch x"}}))]),
            Step::Answer("done".into()),
        ],
    )
    .await;
    let output = exec(&sandbox, &model, &[], "add one");
    let lines = json_lines(&output.stdout);
    let add = &item(&lines, "mcp__many__add")["item"];
    assert_eq!(add["is_error"], true, "{add}");
    let said = add["output"].as_str().unwrap();
    assert!(said.contains("needs approval") && said.contains("mcp__many__add"), "{said}");
    assert!(!recorded(&record).iter().any(|m| m["method"] == "tools/call"), "it never ran");
    // A built-in tool in the request is never reached through call_tool.
    let refused = item(&lines, "call_tool");
    assert!(
        refused["item"]["output"]
            .as_str()
            .unwrap()
            .contains("`shell` is not a tool behind call_tool"),
        "{refused}"
    );
    assert!(!sandbox.repo.join("x").exists());
}

#[tokio::test]
async fn never_keeps_every_definition_in_the_request() {
    let Some(python) = python() else { return };
    let sandbox = Sandbox::new();
    let record = sandbox.home.join("many.jsonl");
    let table = fault_table("many", &python, "many", &record, "");
    write_config(&sandbox, &format!("[tools]\ndefer_mcp = \"never\"\n\n{table}"));
    let model = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let output = exec(&sandbox, &model, &["--yolo"], "go");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let body = request_bodies(&model).await.remove(0);
    assert!(body.to_string().contains("warehouse 17"));
    // tool_search stands for the deferred built-ins only.
    assert!(!body.to_string().contains("tools of MCP servers"), "{body}");
}
