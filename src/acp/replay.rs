//! A loaded session's conversation, replayed to the client as the
//! `session/update`s it would have seen live (ACP's `session/load`): the
//! user's messages, the model's answers, each tool call and its result,
//! then the task list as the plan.
//!
//! Invariants: the replay comes from the history keel rebuilt from its
//! own log (`Session::history`), in order, each call before its result;
//! keel's context notes (what changed in the environment) and hidden
//! reasoning are not the conversation and are left out; results are the
//! text the model read (already masked when it was recorded).

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionUpdate, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};

use super::tool_calls::Files;
use super::updates::{chunk, plan, started};
use crate::protocol::Item;
use crate::tasks::Task;

/// The updates that replay `history` and show `tasks`.
pub fn replay(history: &[Item], tasks: &[Task], files: &dyn Files) -> Vec<SessionUpdate> {
    let mut updates: Vec<SessionUpdate> = history
        .iter()
        .filter_map(|item| match item {
            Item::User { text, images } => {
                let mut text = text.clone();
                for image in images {
                    text.push_str(&format!("\n[{}]", image.label()));
                }
                Some(SessionUpdate::UserMessageChunk(chunk(&text)))
            }
            Item::Assistant { text } if !text.is_empty() => {
                Some(SessionUpdate::AgentMessageChunk(chunk(text)))
            }
            Item::ToolCall(call) => {
                Some(SessionUpdate::ToolCall(started(call, files).status(ToolCallStatus::Pending)))
            }
            Item::ToolResult(result) => {
                let status = if result.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let content = ToolCallContent::from(ContentBlock::from(result.output.clone()));
                let fields = ToolCallUpdateFields::new().status(status).content(vec![content]);
                Some(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    result.call_id.clone(),
                    fields,
                )))
            }
            Item::Assistant { .. } | Item::Reasoning(_) | Item::Context { .. } => None,
        })
        .collect();
    if !tasks.is_empty() {
        updates.push(SessionUpdate::Plan(plan(tasks)));
    }
    updates
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::acp::tool_calls::tests::Memory;
    use crate::protocol::{ContextPart, ToolCall, ToolResult};

    #[test]
    fn the_conversation_is_replayed_in_order_without_keels_own_notes() {
        let call = ToolCall {
            call_id: "c1".into(),
            name: "read_file".into(),
            arguments: json!({"path": "a.txt"}).to_string(),
            item_id: None,
            provider_data: None,
        };
        let history = vec![
            Item::Context { text: "environment: …".into(), parts: Vec::<ContextPart>::new() },
            Item::User { text: "read a.txt".into(), images: Vec::new() },
            Item::ToolCall(call),
            Item::ToolResult(ToolResult {
                call_id: "c1".into(),
                output: "hello".into(),
                is_error: false,
                images: Vec::new(),
            }),
            Item::Assistant { text: "It says hello.".into() },
        ];
        let tasks = vec![Task {
            id: "1".into(),
            text: "say hello".into(),
            status: crate::tasks::TaskStatus::Completed,
        }];
        let updates: Vec<serde_json::Value> = replay(&history, &tasks, &Memory(HashMap::new()))
            .iter()
            .map(|update| serde_json::to_value(update).unwrap())
            .collect();
        let kinds: Vec<&str> =
            updates.iter().map(|u| u["sessionUpdate"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk", "plan"]
        );
        assert_eq!(updates[0]["content"]["text"], "read a.txt");
        assert_eq!(updates[1]["kind"], "read");
        assert_eq!(updates[2]["status"], "completed");
        assert_eq!(updates[3]["content"]["text"], "It says hello.");
        assert_eq!(updates[4]["entries"][0]["content"], "say hello");
    }
}
