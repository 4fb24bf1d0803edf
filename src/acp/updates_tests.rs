use std::collections::HashMap;
use std::sync::Mutex;

use agent_client_protocol::v1::schema::{Diff, ToolKind as AcpKind};
use serde_json::{Value, json};

use super::*;
use crate::acp::tool_calls::tests::Memory;
use crate::protocol::tool_facts::names;
use crate::protocol::{ModelResponse, StopReason, ToolClass, ToolMeta, ToolResult, Usage};
use crate::tasks::TaskStatus;

/// Files that change between reads, like a workspace under a running call.
struct Changing(Mutex<HashMap<String, String>>);

impl Files for Changing {
    fn read(&self, raw: &str) -> Option<FileText> {
        let text = self.0.lock().unwrap().get(raw).cloned();
        Some(FileText { path: std::path::PathBuf::from("/w").join(raw), text })
    }
}

fn call(name: &str, args: Value) -> ToolCall {
    ToolCall {
        call_id: "call_1".into(),
        name: name.into(),
        arguments: args.to_string(),
        item_id: None,
        provider_data: None,
    }
}

fn finished(call: &ToolCall, output: &str, is_error: bool) -> RuntimeEvent {
    RuntimeEvent::ToolCallFinished {
        call: call.clone(),
        result: ToolResult {
            call_id: call.call_id.clone(),
            output: output.into(),
            is_error,
            images: Vec::new(),
        },
        meta: ToolMeta::new(),
    }
}

fn json_of(updates: &[SessionUpdate]) -> Vec<Value> {
    updates.iter().map(|update| serde_json::to_value(update).unwrap()).collect()
}

#[test]
fn streamed_text_and_reasoning_are_chunks_and_not_repeated_by_the_response() {
    let files = Memory(HashMap::new());
    let mut updates = Updates::default();
    let text =
        updates.of(&RuntimeEvent::Stream(StreamEvent::TextDelta { delta: "Hi".into() }), &files);
    let thought = RuntimeEvent::Stream(StreamEvent::ReasoningDelta { delta: "hmm".into() });
    let thought = updates.of(&thought, &files);
    assert_eq!(
        json_of(&text),
        vec![
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}})
        ]
    );
    assert_eq!(json_of(&thought)[0]["sessionUpdate"], "agent_thought_chunk");
    let response = ModelResponse {
        items: vec![Item::Assistant { text: "Hi".into() }],
        usage: Usage::default(),
        stop_reason: StopReason::EndTurn,
        response_id: None,
    };
    let event = RuntimeEvent::ModelResponse(response);
    assert!(updates.of(&event, &files).is_empty(), "streamed already");
    // A server that does not stream: the text arrives whole, once.
    let whole = updates.of(&event, &files);
    assert_eq!(json_of(&whole)[0]["content"]["text"], "Hi");
}

#[test]
fn a_write_is_a_located_edit_whose_diff_is_what_happened_on_disk() {
    let files = Changing(Mutex::new(HashMap::from([("a.txt".into(), "old\n".into())])));
    let mut updates = Updates::default();
    let write = call(names::WRITE_FILE, json!({"path": "a.txt", "content": "new\n"}));
    let start = RuntimeEvent::ToolCallStarted { call: write.clone(), class: ToolClass::Mutating };
    let started = json_of(&updates.of(&start, &files));
    assert_eq!(started[0]["sessionUpdate"], "tool_call");
    assert_eq!(started[0]["toolCallId"], "call_1");
    assert_eq!(started[0]["kind"], "edit");
    assert_eq!(started[0]["status"], "in_progress");
    assert_eq!(started[0]["locations"], json!([{"path": "/w/a.txt"}]));
    assert_eq!(started[0]["rawInput"]["path"], "a.txt");
    // The tool wrote something else than the model's arguments say (a
    // hook rewrote it): the diff shows the file.
    files.0.lock().unwrap().insert("a.txt".into(), "newer\n".into());
    let done = updates.of(&finished(&write, "overwrote a.txt", false), &files);
    let SessionUpdate::ToolCallUpdate(update) = &done[0] else { panic!("{done:?}") };
    assert_eq!(update.fields.status, Some(ToolCallStatus::Completed));
    let expected = Diff::new("/w/a.txt", "newer\n").old_text("old\n".to_owned());
    assert_eq!(update.fields.content, Some(vec![ToolCallContent::Diff(expected)]));
}

#[test]
fn a_failed_call_says_why_and_changes_nothing_shown() {
    let files = Memory(HashMap::from([("a.txt".into(), "same\n".into())]));
    let mut updates = Updates::default();
    let edit =
        call(names::EDIT_FILE, json!({"path": "a.txt", "old_string": "x", "new_string": "y"}));
    updates.of(
        &RuntimeEvent::ToolCallStarted { call: edit.clone(), class: ToolClass::Mutating },
        &files,
    );
    let done = json_of(&updates.of(&finished(&edit, "old_string not found", true), &files));
    assert_eq!(done[0]["status"], "failed");
    assert_eq!(
        done[0]["content"],
        json!([{"type": "content", "content": {"type": "text", "text": "old_string not found"}}])
    );
    let shell = call(names::SHELL, json!({"command": "cargo test"}));
    let start = json_of(&updates.of(
        &RuntimeEvent::ToolCallStarted { call: shell.clone(), class: ToolClass::Mutating },
        &files,
    ));
    assert_eq!(
        (start[0]["kind"].as_str(), start[0]["title"].as_str()),
        (Some("execute"), Some("cargo test"))
    );
    let done = json_of(&updates.of(&finished(&shell, "ok: 3 passed", false), &files));
    assert_eq!(done[0]["content"][0]["content"]["text"], "ok: 3 passed");
}

#[test]
fn the_task_list_is_the_plan_sent_when_it_changes() {
    let files = Memory(HashMap::new());
    let mut updates = Updates::default();
    let tasks = vec![
        Task { id: "1".into(), text: "read the code".into(), status: TaskStatus::Completed },
        Task { id: "2".into(), text: "fix the bug".into(), status: TaskStatus::InProgress },
    ];
    let event = |tasks: Vec<Task>| RuntimeEvent::WorkflowChanged {
        phase: "implement".into(),
        plan_path: None,
        plan_status: None,
        tasks,
    };
    assert!(updates.of(&event(Vec::new()), &files).is_empty(), "no tasks yet: nothing new");
    let sent = json_of(&updates.of(&event(tasks.clone()), &files));
    assert_eq!(
        sent,
        vec![json!({"sessionUpdate": "plan", "entries": [
            {"content": "read the code", "priority": "medium", "status": "completed"},
            {"content": "fix the bug", "priority": "medium", "status": "in_progress"},
        ]})]
    );
    assert!(updates.of(&event(tasks), &files).is_empty(), "unchanged: not sent again");
}

#[test]
fn a_mode_change_and_a_warning_reach_the_client() {
    let files = Memory(HashMap::new());
    let mut updates = Updates::default();
    let mode =
        updates.of(&RuntimeEvent::ModeChanged { mode: crate::policy::ApprovalMode::Auto }, &files);
    assert_eq!(
        json_of(&mode),
        vec![json!({"sessionUpdate": "current_mode_update", "currentModeId": "auto"})]
    );
    let warning = updates.of(&RuntimeEvent::Warning { message: "careful".into() }, &files);
    assert_eq!(json_of(&warning)[0]["severity"], "warning");
}

#[test]
fn a_permission_request_carries_the_whole_call_and_the_diff_it_would_make() {
    let files = Memory(HashMap::from([("a.txt".into(), "one\n".into())]));
    let write = call(names::WRITE_FILE, json!({"path": "a.txt", "content": "two\n"}));
    let fields = asked(&write, "writes a file", &files);
    assert_eq!(fields.kind, Some(AcpKind::Edit));
    assert_eq!(fields.status, Some(ToolCallStatus::Pending));
    let content = fields.content.unwrap();
    assert_eq!(
        content[0],
        ToolCallContent::Diff(Diff::new("/w/a.txt", "two\n").old_text("one\n".to_owned()))
    );
    let text = serde_json::to_value(&content[1]).unwrap();
    let text = text["content"]["text"].as_str().unwrap().to_owned();
    assert!(text.contains(&crate::display::approval_text(&write)), "{text}");
    assert!(text.contains("writes a file"), "{text}");
}

#[test]
fn custom_commands_are_the_clients_slash_commands() {
    assert!(commands(&[]).is_none());
    let index = vec![
        ("review".to_owned(), "[files]".to_owned(), "review the change".to_owned()),
        ("ship".to_owned(), String::new(), "commit and push".to_owned()),
    ];
    let update = serde_json::to_value(commands(&index).unwrap()).unwrap();
    assert_eq!(update["sessionUpdate"], "available_commands_update");
    assert_eq!(
        update["availableCommands"],
        json!([
            {"name": "review", "description": "review the change", "input": {"hint": "[files]"}},
            {"name": "ship", "description": "commit and push"},
        ])
    );
}
