//! What an attacher is shown of a [`RuntimeEvent`], as a wire line
//! (`attach_wire.rs`), and the transcript so far cut into lines.
//!
//! Invariants: every string is bounded here ([`MAX_OUTPUT`] for a tool's
//! output, [`MAX_TEXT`] for a message, the transcript's tail
//! [`MAX_TRANSCRIPT`] in chunks of [`CHUNK`]), so a line always fits
//! `MAX_HOST_LINE`; an approval's text is never cut (it travels in its own
//! line, built by `attach_host.rs`). Events an attacher has no use for
//! (stream deltas, MCP status, …) map to nothing.

use crate::protocol::{Delivery, ToolCall};

use super::RuntimeEvent;
use super::attach_wire::HostLine;

/// A tool's output shown to an attacher, at most.
pub const MAX_OUTPUT: usize = 2000;
/// A message (assistant text, a prompt, a notice), at most.
pub const MAX_TEXT: usize = 64 << 10;
/// How much of the transcript so far an attacher gets (its end).
pub const MAX_TRANSCRIPT: usize = 256 << 10;
/// One transcript line, at most.
pub const CHUNK: usize = 32 << 10;

/// The line `event` becomes, if any.
pub fn line_of(event: &RuntimeEvent) -> Option<HostLine> {
    Some(match event {
        RuntimeEvent::TurnStarted { turn } => HostLine::TurnStarted { turn: *turn },
        RuntimeEvent::InputQueued { id, text, mode } => HostLine::Queued {
            id: *id,
            text: cut(text, MAX_TEXT),
            steer: matches!(mode, Delivery::Steer),
        },
        RuntimeEvent::InputDelivered { text, .. } => HostLine::User { text: cut(text, MAX_TEXT) },
        RuntimeEvent::ModelResponse(response) => {
            let text = response.text();
            if text.trim().is_empty() {
                return None;
            }
            HostLine::Assistant { text: cut(&text, MAX_TEXT) }
        }
        RuntimeEvent::ToolCallStarted { call, .. } => HostLine::ToolStarted {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            text: summary(call),
        },
        RuntimeEvent::ToolCallFinished { call, result, .. } => HostLine::ToolFinished {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            ok: !result.is_error,
            output: cut(&result.output, MAX_OUTPUT),
        },
        RuntimeEvent::Warning { message } => notice("warning", message),
        RuntimeEvent::Error { message } => notice("error", message),
        RuntimeEvent::Progress { message } => notice("info", message),
        RuntimeEvent::ApprovalDeclined(declined) => {
            notice("warning", &format!("{} was declined: {}", declined.call.name, declined.reason))
        }
        RuntimeEvent::TurnCompleted { turn, outcome, .. } => {
            HostLine::TurnEnded { turn: *turn, outcome: outcome.as_str().to_owned() }
        }
        RuntimeEvent::SessionStarted { .. }
        | RuntimeEvent::ModelChanged { .. }
        | RuntimeEvent::ModeChanged { .. }
        | RuntimeEvent::WorkflowChanged { .. }
        | RuntimeEvent::Stream(_)
        | RuntimeEvent::Compacting { .. }
        | RuntimeEvent::Compacted { .. }
        | RuntimeEvent::Retrying { .. }
        | RuntimeEvent::McpServerStatus { .. }
        | RuntimeEvent::ToolProgress { .. }
        | RuntimeEvent::Subagent { .. } => return None,
    })
}

fn notice(level: &str, text: &str) -> HostLine {
    HostLine::Notice { level: level.to_owned(), text: cut(text, MAX_TEXT) }
}

/// A running call in one short line.
fn summary(call: &ToolCall) -> String {
    let text = crate::display::approval_text(call);
    let first = text.lines().next().unwrap_or_default();
    cut(first, 200)
}

/// `text` cut to at most `max` bytes on a char boundary, saying so.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

/// The transcript (Markdown) as lines: its last [`MAX_TRANSCRIPT`] bytes
/// (with a note when the start is left out), in chunks of [`CHUNK`].
pub fn transcript_lines(markdown: &str, session_id: &str) -> Vec<HostLine> {
    let mut start = markdown.len().saturating_sub(MAX_TRANSCRIPT);
    while !markdown.is_char_boundary(start) {
        start += 1;
    }
    let mut lines = Vec::new();
    if start > 0 {
        let text = format!("[the transcript's first {start} bytes: keel export {session_id}]\n");
        lines.push(HostLine::Transcript { text });
    }
    let mut rest = &markdown[start..];
    while !rest.is_empty() {
        let mut end = rest.len().min(CHUNK);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        lines.push(HostLine::Transcript { text: rest[..end].to_owned() });
        rest = &rest[end..];
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::attach_wire::{MAX_HOST_LINE, encode};

    #[test]
    fn every_line_fits_the_wire_however_large_its_source() {
        let huge = "é".repeat(MAX_HOST_LINE);
        let call = ToolCall {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: serde_json::json!({ "command": huge }).to_string(),
            item_id: None,
            provider_data: None,
        };
        let result = crate::protocol::ToolResult::ok("c", huge.clone());
        let events = [
            RuntimeEvent::ToolCallStarted {
                call: call.clone(),
                class: crate::protocol::ToolClass::Mutating,
            },
            RuntimeEvent::ToolCallFinished { call, result, meta: Default::default() },
            RuntimeEvent::Warning { message: huge.clone() },
        ];
        for event in &events {
            let line = line_of(event).unwrap();
            assert!(encode(&line).len() < MAX_HOST_LINE / 8, "{:.80}", encode(&line));
        }
        let lines = transcript_lines(&huge, "s1");
        assert!(
            matches!(&lines[0], HostLine::Transcript { text } if text.contains("keel export s1"))
        );
        let total: usize = lines.iter().map(|line| encode(line).len()).sum();
        assert!(total < MAX_TRANSCRIPT + 4096 && lines.len() > 2);
        assert!(lines.iter().all(|line| encode(line).len() <= CHUNK + 64));
    }
}
