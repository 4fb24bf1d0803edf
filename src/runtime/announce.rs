//! How a running [`Session`] tells its front end what it recorded: tool
//! calls as they start and finish (denied and interrupted ones exactly like
//! the ones that ran, each with the call the model made under its real
//! name), mode, model, queue, phase, plan and task changes. Every other
//! record is the log's alone.

use crate::protocol::{Item, SessionEvent, ToolCall};

use super::{RuntimeEvent, Session};

impl Session {
    /// Tells the front end about tool calls as they are recorded, so denied
    /// and interrupted calls show up exactly like the ones that ran; and
    /// about mode, phase, plan and task changes.
    pub(super) fn announce(&mut self, event: SessionEvent) {
        match event {
            SessionEvent::ToolCallStarted { call, class } => {
                self.sink.emit(RuntimeEvent::ToolCallStarted { call, class });
            }
            SessionEvent::ToolCallFinished { result, meta } => {
                let call = self.find_call(&result.call_id);
                self.sink.emit(RuntimeEvent::ToolCallFinished { call, result, meta });
            }
            SessionEvent::ModeChanged { mode } => {
                self.sink.emit(RuntimeEvent::ModeChanged { mode });
            }
            SessionEvent::InputQueued { id, text, mode, .. } => {
                self.sink.emit(RuntimeEvent::InputQueued { id, text, mode });
            }
            SessionEvent::UserMessage { text, queued: Some(id), .. } => {
                self.sink.emit(RuntimeEvent::InputDelivered { id, text });
            }
            SessionEvent::ModelChanged { model, .. } => {
                let pricing = self.state.config().pricing;
                self.sink.emit(RuntimeEvent::ModelChanged { model, pricing });
            }
            SessionEvent::PhaseChanged { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. } => {
                let event = self.workflow_event();
                self.sink.emit(event);
            }
            SessionEvent::SessionStarted { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::SessionResumed { .. }
            | SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::UserMessage { queued: None, .. }
            | SessionEvent::TurnStarted { .. }
            | SessionEvent::ModelResponse { .. }
            | SessionEvent::PolicyDecision { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::Compaction { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::SubagentFinished { .. }
            | SessionEvent::TurnCompleted { .. }
            | SessionEvent::SessionEnded { .. } => {}
        }
    }

    fn find_call(&self, call_id: &str) -> ToolCall {
        self.state
            .items()
            .iter()
            .rev()
            .find_map(|item| match item {
                Item::ToolCall(call) if call.call_id == call_id => Some(self.state.real_call(call)),
                Item::User { .. }
                | Item::Assistant { .. }
                | Item::Reasoning(_)
                | Item::ToolCall(_)
                | Item::ToolResult(_)
                | Item::Context { .. } => None,
            })
            .unwrap_or_else(|| ToolCall {
                call_id: call_id.to_owned(),
                name: String::new(),
                arguments: String::new(),
                item_id: None,
                provider_data: None,
            })
    }
}
