//! A keel session's [`RuntimeEvent`]s as ACP `session/update`s: streamed
//! text and reasoning as message and thought chunks, tool calls with
//! their kind, locations and (for file changes) diffs, the task list as
//! the plan, mode changes, and warnings and errors as notices.
//!
//! Invariants: every tool call the client is shown starts once
//! (`tool_call`, `in_progress`) and ends once (`tool_call_update`,
//! `completed` or `failed`), in the order keel ran them; a response whose
//! text never streamed (a server that does not stream) still reaches the
//! client whole, once; the plan is sent only when the task list changed;
//! a diff is what the call did to the file (read before and after it ran,
//! through [`Files`]), never what the model claims. Subagents' events are
//! not forwarded: their `agent` call is the client's view of them.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, ContentBlock, ContentChunk,
    CurrentModeUpdate, Notice, NoticeSeverity, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, ToolCall as AcpToolCall, ToolCallContent, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields, UnstructuredCommandInput,
};

use super::tool_calls::{self, FileText, Files};
use crate::protocol::{Item, StreamEvent, ToolCall};
use crate::runtime::RuntimeEvent;
use crate::tasks::{Task, TaskStatus};

/// What the mapping remembers between events of one session.
#[derive(Debug, Default)]
pub struct Updates {
    /// The files each running call may change, read before it ran.
    before: HashMap<String, Vec<(String, FileText)>>,
    /// Whether the response being streamed sent text.
    streamed_text: bool,
    /// The task list the client was last sent.
    tasks: Vec<Task>,
}

impl Updates {
    /// The updates `event` makes (often none).
    pub fn of(&mut self, event: &RuntimeEvent, files: &dyn Files) -> Vec<SessionUpdate> {
        match event {
            RuntimeEvent::Stream(StreamEvent::TextDelta { delta }) => {
                self.streamed_text = true;
                vec![SessionUpdate::AgentMessageChunk(chunk(delta))]
            }
            RuntimeEvent::Stream(StreamEvent::ReasoningDelta { delta }) => {
                vec![SessionUpdate::AgentThoughtChunk(chunk(delta))]
            }
            RuntimeEvent::Stream(
                StreamEvent::ToolCallStarted { .. }
                | StreamEvent::ToolCallArgumentsDelta { .. }
                | StreamEvent::Retrying { .. },
            ) => Vec::new(),
            RuntimeEvent::ModelResponse(response) => {
                let streamed = std::mem::take(&mut self.streamed_text);
                if streamed {
                    return Vec::new();
                }
                response
                    .items
                    .iter()
                    .filter_map(|item| match item {
                        Item::Assistant { text } if !text.is_empty() => {
                            Some(SessionUpdate::AgentMessageChunk(chunk(text)))
                        }
                        Item::Assistant { .. }
                        | Item::User { .. }
                        | Item::Reasoning(_)
                        | Item::ToolCall(_)
                        | Item::ToolResult(_)
                        | Item::Context { .. } => None,
                    })
                    .collect()
            }
            RuntimeEvent::ToolCallStarted { call, .. } => {
                self.before.insert(call.call_id.clone(), tool_calls::snapshot(call, files));
                vec![SessionUpdate::ToolCall(started(call, files))]
            }
            RuntimeEvent::ToolCallFinished { call, result, .. } => {
                let before = self.before.remove(&call.call_id).unwrap_or_default();
                let mut content: Vec<ToolCallContent> = tool_calls::diffs_after(&before, files)
                    .into_iter()
                    .map(ToolCallContent::Diff)
                    .collect();
                if content.is_empty() || result.is_error {
                    content.push(text_content(&result.output));
                }
                let status = if result.is_error {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let fields = ToolCallUpdateFields::new().status(status).content(content);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    call.call_id.clone(),
                    fields,
                ))]
            }
            RuntimeEvent::WorkflowChanged { tasks, .. } => {
                if *tasks == self.tasks {
                    return Vec::new();
                }
                self.tasks.clone_from(tasks);
                vec![SessionUpdate::Plan(plan(tasks))]
            }
            RuntimeEvent::ModeChanged { mode } => {
                vec![SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str()))]
            }
            RuntimeEvent::Warning { message } => vec![notice(NoticeSeverity::Warning, message)],
            RuntimeEvent::Error { message } => vec![notice(NoticeSeverity::Error, message)],
            RuntimeEvent::Retrying { attempt, max_attempts, reason, .. } => {
                // What streamed of the failed attempt is void; the next
                // streams from the start.
                self.streamed_text = false;
                let text = format!("retrying the request ({attempt}/{max_attempts}): {reason}");
                vec![notice(NoticeSeverity::Info, &text)]
            }
            RuntimeEvent::Compacted { reason, tokens_before, tokens_after } => {
                let text = format!(
                    "the history was compacted ({reason}): ~{tokens_before} → ~{tokens_after} \
                     tokens"
                );
                vec![notice(NoticeSeverity::Info, &text)]
            }
            RuntimeEvent::TurnCompleted { unverified: Some(why), .. } => {
                vec![notice(NoticeSeverity::Warning, &format!("unverified: {why}"))]
            }
            RuntimeEvent::McpServerStatus { server, status, error: Some(error), .. } => {
                vec![notice(NoticeSeverity::Warning, &format!("MCP {server} {status}: {error}"))]
            }
            RuntimeEvent::SessionStarted { .. }
            | RuntimeEvent::ModelChanged { .. }
            | RuntimeEvent::TurnStarted { .. }
            | RuntimeEvent::InputQueued { .. }
            | RuntimeEvent::InputDelivered { .. }
            | RuntimeEvent::Compacting { .. }
            | RuntimeEvent::ApprovalDeclined(_)
            | RuntimeEvent::Progress { .. }
            | RuntimeEvent::TurnCompleted { .. }
            | RuntimeEvent::McpServerStatus { .. }
            | RuntimeEvent::ToolProgress { .. }
            | RuntimeEvent::Subagent { .. } => Vec::new(),
        }
    }
}

/// A text chunk of a message.
pub fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::from(text.to_owned()))
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text.to_owned()))
}

/// A call as it starts: title, kind, locations, its arguments.
pub fn started(call: &ToolCall, files: &dyn Files) -> AcpToolCall {
    AcpToolCall::new(call.call_id.clone(), tool_calls::title(call))
        .kind(tool_calls::kind(call))
        .status(ToolCallStatus::InProgress)
        .locations(tool_calls::locations(call, files))
        .raw_input(tool_calls::arguments(call))
}

/// The fields of the call a permission request asks about: the full
/// approval text (every argument, escaped) and the diff it would make.
pub fn asked(call: &ToolCall, reason: &str, files: &dyn Files) -> ToolCallUpdateFields {
    let mut content: Vec<ToolCallContent> =
        tool_calls::preview(call, files).into_iter().map(ToolCallContent::Diff).collect();
    let text = crate::display::approval_text(call);
    content.push(text_content(&format!("{text}\n\nkeel asks because: {reason}")));
    ToolCallUpdateFields::new()
        .title(tool_calls::title(call))
        .kind(tool_calls::kind(call))
        .status(ToolCallStatus::Pending)
        .locations(tool_calls::locations(call, files))
        .raw_input(tool_calls::arguments(call))
        .content(content)
}

/// keel's task list as the ACP plan.
pub fn plan(tasks: &[Task]) -> Plan {
    Plan::new(
        tasks
            .iter()
            .map(|task| {
                let status = match task.status {
                    TaskStatus::Pending => PlanEntryStatus::Pending,
                    TaskStatus::InProgress => PlanEntryStatus::InProgress,
                    TaskStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(task.text.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// keel's custom commands (name, argument hint, description) as the
/// client's slash commands (`/name args` in a prompt runs one); none when
/// there are none.
pub fn commands(index: &[(String, String, String)]) -> Option<SessionUpdate> {
    if index.is_empty() {
        return None;
    }
    let commands = index
        .iter()
        .map(|(name, hint, description)| {
            let command = AvailableCommand::new(name.clone(), description.clone());
            if hint.is_empty() {
                command
            } else {
                let input = UnstructuredCommandInput::new(hint.clone());
                command.input(AvailableCommandInput::Unstructured(input))
            }
        })
        .collect();
    Some(SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(commands)))
}

fn notice(severity: NoticeSeverity, text: &str) -> SessionUpdate {
    SessionUpdate::Notice(Notice::new(severity, text.to_owned()))
}

#[cfg(test)]
#[path = "updates_tests.rs"]
mod tests;
