//! The human printer: progress on stderr, compact and line-oriented. The
//! final answer is printed to stdout by [`super::run`] once the turn ends.

use std::io::Write;

use crate::protocol::{Item, ToolCall};
use crate::runtime::{EventSink, RuntimeEvent};

/// Longest argument or output preview shown for a tool call.
const PREVIEW_CHARS: usize = 160;

/// Writes progress lines to stderr.
#[derive(Debug, Default)]
pub struct HumanPrinter;

impl HumanPrinter {
    pub fn stderr() -> Self {
        Self
    }
}

impl EventSink for HumanPrinter {
    fn emit(&mut self, event: RuntimeEvent) {
        let mut err = std::io::stderr().lock();
        let _ = match event {
            RuntimeEvent::SessionStarted { session_id, log_path, provider, model, .. } => writeln!(
                err,
                "keel {} · {provider} · {model}\nsession {session_id}\nlog {}",
                env!("CARGO_PKG_VERSION"),
                log_path.display()
            ),
            RuntimeEvent::TurnStarted { .. } | RuntimeEvent::Stream(_) => Ok(()),
            RuntimeEvent::ModelResponse(response) => {
                let has_calls = response.tool_calls().next().is_some();
                let text: String = response.items.iter().filter_map(Item::assistant_text).collect();
                if has_calls && !text.trim().is_empty() {
                    writeln!(err, "{}", text.trim_end())
                } else {
                    Ok(())
                }
            }
            RuntimeEvent::ToolCallStarted { call, .. } => {
                writeln!(err, "→ {} {}", call.name, preview(&call_summary(&call)))
            }
            RuntimeEvent::ToolCallFinished { result, meta, .. } => {
                let mark = if result.is_error { "✗" } else { "✓" };
                let exit =
                    meta.get("exit_code").map(|code| format!("exit {code} · ")).unwrap_or_default();
                let first = result.output.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                writeln!(err, "  {mark} {exit}{}", preview(first))
            }
            RuntimeEvent::Compacting { trigger } => {
                writeln!(err, "compacting the context ({trigger}): the model summarizes…")
            }
            RuntimeEvent::Compacted { reason, tokens_before, tokens_after } => {
                writeln!(err, "compacted ({reason}): ~{tokens_before} → ~{tokens_after} tokens")
            }
            RuntimeEvent::ModeChanged { mode } => writeln!(err, "mode: {}", mode.as_str()),
            // The result line reports plan and tasks; phases show as tool calls.
            RuntimeEvent::WorkflowChanged { .. } => Ok(()),
            RuntimeEvent::Retrying { attempt, max_attempts, reason, delay } => writeln!(
                err,
                "retrying ({attempt}/{max_attempts}) in {:.1}s: {reason}",
                delay.as_secs_f64()
            ),
            RuntimeEvent::Warning { message } => writeln!(err, "warning: {message}"),
            RuntimeEvent::Error { message } => writeln!(err, "error: {message}"),
            // A turn that never got an answer used nothing worth a line.
            RuntimeEvent::TurnCompleted { usage, .. } if usage.total_tokens() == 0 => Ok(()),
            RuntimeEvent::TurnCompleted { usage, .. } => {
                writeln!(err, "tokens: {}", tokens_line(&usage))
            }
        };
    }
}

/// `100 in (40 cached, 10 written) · 20 out`; cache writes only when there
/// were some (Anthropic).
fn tokens_line(usage: &crate::protocol::Usage) -> String {
    let written = match usage.cache_write_tokens {
        0 => String::new(),
        n => format!(", {n} written"),
    };
    format!(
        "{} in ({} cached{written}) · {} out",
        usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
    )
}

/// The most telling argument of a call: the command, path or pattern.
fn call_summary(call: &ToolCall) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    ["command", "path", "pattern"]
        .iter()
        .find_map(|key| args.get(key).and_then(|v| v.as_str()).map(str::to_owned))
        .unwrap_or_else(|| call.arguments.clone())
}

fn preview(text: &str) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() > PREVIEW_CHARS {
        let cut: String = line.chars().take(PREVIEW_CHARS).collect();
        format!("{cut}…")
    } else {
        line.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn previews_are_one_bounded_line() {
        let long = "x".repeat(500) + "\nsecond";
        let shown = preview(&long);
        assert_eq!(shown.chars().count(), PREVIEW_CHARS + 1);
        assert!(!shown.contains('\n'));
    }

    #[test]
    fn summary_prefers_the_command() {
        let call = ToolCall {
            call_id: "c".into(),
            name: "shell".into(),
            arguments: r#"{"command":"cargo test","timeout_ms":5}"#.into(),
            item_id: None,
            provider_data: None,
        };
        assert_eq!(call_summary(&call), "cargo test");
    }
}
