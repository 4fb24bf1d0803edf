//! Snapshot tests of a subagent nested under its `agent` call: while it
//! runs (its calls, what it does now, its steps and tokens), once it has
//! answered, expanded with Ctrl+O; and its spend in the status line.

use serde_json::json;

use super::app::{Msg, update};
use super::view_tests::{app, call, ctrl, render, runtime, start_turn};
use crate::policy::ApprovalMode;
use crate::protocol::{Item, ModelResponse, StopReason, ToolClass, ToolResult, Usage};
use crate::runtime::RuntimeEvent;

fn child(event: RuntimeEvent) -> RuntimeEvent {
    RuntimeEvent::Subagent { call_id: "agent-1".into(), event: Box::new(event) }
}

fn response(calls: &[crate::protocol::ToolCall]) -> RuntimeEvent {
    let items = calls.iter().cloned().map(Item::ToolCall).collect();
    let usage = Usage { input_tokens: 1000, output_tokens: 100, ..Usage::default() };
    RuntimeEvent::ModelResponse(ModelResponse {
        items,
        usage,
        stop_reason: StopReason::ToolUse,
        response_id: None,
    })
}

/// A parent that delegated to `explore`, whose child has run `calls`
/// (all finished but the last).
fn delegated(calls: &[crate::protocol::ToolCall]) -> super::app::App {
    let mut app = app();
    start_turn(&mut app, "which port?");
    let agent = call(
        "agent-1",
        "agent",
        json!({"agent": "explore", "description": "find the port", "prompt": "Find it."}),
    );
    runtime(&mut app, response(std::slice::from_ref(&agent)));
    runtime(&mut app, RuntimeEvent::ToolCallStarted { call: agent, class: ToolClass::ReadOnly });
    runtime(
        &mut app,
        child(RuntimeEvent::SessionStarted {
            session_id: "child-1".into(),
            log_path: "/tmp/child-1.jsonl".into(),
            provider: "openai-chat".into(),
            model: "mock-model".into(),
            workspace_root: "/repo".into(),
            sandbox: crate::runtime::SandboxState::On,
            mode: ApprovalMode::Explore,
            pricing: crate::context::Pricing::for_model("mock-model"),
            limits: crate::agent::SpendLimits::default(),
        }),
    );
    for (i, step) in calls.iter().enumerate() {
        runtime(&mut app, child(response(std::slice::from_ref(step))));
        let started =
            RuntimeEvent::ToolCallStarted { call: step.clone(), class: ToolClass::ReadOnly };
        runtime(&mut app, child(started));
        if i + 1 < calls.len() {
            let result = ToolResult::ok(&step.call_id, "…");
            let meta = crate::protocol::ToolMeta::new();
            runtime(
                &mut app,
                child(RuntimeEvent::ToolCallFinished { call: step.clone(), result, meta }),
            );
        }
    }
    app
}

#[test]
fn a_running_subagent_shows_its_calls_and_what_it_does_now_under_the_call() {
    let app = delegated(&[
        call("c1", "read_file", json!({"path": "src/config.rs"})),
        call("c2", "grep", json!({"pattern": "PORT"})),
    ]);
    let screen = render(&app, 72, 16);
    // Parent 1100 + child 2 × 1100 tokens: the status line counts both.
    assert!(screen.contains("↑3000 ↓300"), "{screen}");
    insta::assert_snapshot!("subagent_running", screen);
}

#[test]
fn a_finished_subagent_keeps_its_last_calls_and_ctrl_o_shows_them_all() {
    let calls: Vec<_> = (1..=5)
        .map(|i| call(&format!("c{i}"), "read_file", json!({"path": format!("src/f{i}.rs")})))
        .collect();
    let mut app = delegated(&calls);
    let last = calls.last().unwrap().clone();
    let result = ToolResult::ok("c5", "…");
    runtime(
        &mut app,
        child(RuntimeEvent::ToolCallFinished {
            call: last,
            result,
            meta: crate::protocol::ToolMeta::new(),
        }),
    );
    let agent = call(
        "agent-1",
        "agent",
        json!({"agent": "explore", "description": "find the port", "prompt": "Find it."}),
    );
    let answer = "PORT is 8080 (src/config.rs:1).\n\n[explore subagent · 5 step(s) · 5500 tokens]";
    let result = ToolResult::ok("agent-1", answer);
    runtime(
        &mut app,
        RuntimeEvent::ToolCallFinished {
            call: agent,
            result,
            meta: crate::protocol::ToolMeta::new(),
        },
    );
    insta::assert_snapshot!("subagent_finished", render(&app, 72, 16));
    update(&mut app, ctrl('o'));
    insta::assert_snapshot!("subagent_expanded", render(&app, 72, 18));
    update(&mut app, Msg::Resize);
}
