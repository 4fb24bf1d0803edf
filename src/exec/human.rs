//! The human printer: progress on stderr, compact and line-oriented. The
//! final answer is printed to stdout by [`super::run`] once the turn ends.
//!
//! Each call is `→ tool summary`, then `✓` with its first output line, or
//! `✗` (red on a terminal) with why it failed (`exit 1`, a signal, a
//! timeout, a tool error, a declined approval) and the last lines of its
//! stderr (else stdout). Reads that run together show every `→` line
//! first; a result not right under its own `→` line is headed
//! `← tool summary`, so each mark names its call. Shell output is shown
//! without the framing the model reads. Invariant: everything that came from the model or a tool
//! goes through [`display::for_terminal`] before it is written.

use std::collections::HashSet;
use std::io::{IsTerminal, Write};

use crate::display::{self, call_summary, for_terminal};
use crate::protocol::tool_facts::names;
use crate::protocol::{Item, ToolCall};
use crate::runtime::{EventSink, RuntimeEvent};

/// Longest argument or output preview shown for a tool call.
const PREVIEW_CHARS: usize = 160;
/// Lines of output shown under a failed call.
const FAILURE_TAIL_LINES: usize = 5;

/// Writes progress lines to stderr.
#[derive(Debug, Default)]
pub struct HumanPrinter {
    /// ANSI colour for the marks (stderr is a terminal, `NO_COLOR` unset).
    color: bool,
    /// Calls whose `→` line was written.
    announced: HashSet<String>,
    /// The call whose `→` line is the last line written, if one is.
    last_announced: Option<String>,
    /// Calls reported as declined (their "not run" result adds nothing).
    declined: HashSet<String>,
    /// Leave out the `workdir` and `log` lines (`keel demo` deletes both).
    hide_paths: bool,
}

impl HumanPrinter {
    pub fn stderr() -> Self {
        let no_color = std::env::var("NO_COLOR").is_ok_and(|value| !value.is_empty());
        Self { color: std::io::stderr().is_terminal() && !no_color, ..Self::default() }
    }

    /// For a replay in temporary folders: no `workdir` or `log` line
    /// naming paths that are gone when it ends.
    pub fn without_paths(mut self) -> Self {
        self.hide_paths = true;
        self
    }

    /// The lines for one event (tests read them without a terminal).
    pub fn lines(&mut self, event: RuntimeEvent) -> Vec<String> {
        self.lines_of("", event)
    }

    /// The lines for one event of `source` (`""`: this session, else the
    /// chain of `agent` calls its subagent runs for).
    fn lines_of(&mut self, source: &str, event: RuntimeEvent) -> Vec<String> {
        let mut out = Vec::new();
        let starts_a_call = matches!(event, RuntimeEvent::ToolCallStarted { .. });
        match event {
            RuntimeEvent::SessionStarted {
                session_id,
                log_path,
                provider,
                model,
                workspace_root,
                sandbox,
                mode,
                pricing: _,
                limits,
            } => {
                let mut limit = String::new();
                if let Some(max) = limits.max_cost_usd {
                    limit.push_str(&format!(" · limit {}", crate::agent::usd(max)));
                }
                if let Some(max) = limits.max_tokens {
                    limit.push_str(&format!(" · limit {max} tokens"));
                }
                out.push(format!(
                    "keel {} · {provider} · {model} · {} mode · sandbox {}{limit}",
                    env!("CARGO_PKG_VERSION"),
                    mode.as_str(),
                    sandbox.as_str()
                ));
                if !self.hide_paths {
                    out.push(format!("workdir {}", workspace_root.display()));
                }
                out.push(format!("session {session_id}"));
                if !self.hide_paths {
                    out.push(format!("log {}", log_path.display()));
                }
            }
            RuntimeEvent::TurnStarted { .. } | RuntimeEvent::Stream(_) => {}
            RuntimeEvent::InputQueued { id, text, mode } => {
                out.push(format!("queued input {id} ({}): {}", mode.name(), for_terminal(&text)));
            }
            RuntimeEvent::InputDelivered { id, .. } => out.push(format!("delivered input {id}")),
            RuntimeEvent::ModelResponse(response) => {
                let has_calls = response.tool_calls().next().is_some();
                let text: String = response.items.iter().filter_map(Item::assistant_text).collect();
                if has_calls && !text.trim().is_empty() {
                    out.push(for_terminal(text.trim_end()).into_owned());
                }
            }
            RuntimeEvent::ToolCallStarted { call, .. } => self.announce(source, &call, &mut out),
            RuntimeEvent::ToolCallFinished { call, result, meta } => {
                if self.declined.contains(&format!("{source}/{}", call.call_id)) {
                    return out;
                }
                self.announce(source, &call, &mut out);
                let key = format!("{source}/{}", call.call_id);
                if self.last_announced.take().as_deref() != Some(key.as_str()) {
                    out.push(format!("← {}", self.summary(&call)));
                }
                let outcome = display::outcome(result.is_error, &meta);
                let shown = if call.name == names::SHELL {
                    display::parse_shell(&result.output)
                } else {
                    display::ShellText { stdout: result.output.clone(), ..Default::default() }
                };
                if outcome.failed {
                    let status = outcome.status.unwrap_or_else(|| "failed".to_owned());
                    out.push(format!("  {} {status}", self.mark(false)));
                    for line in shown.tail(FAILURE_TAIL_LINES) {
                        out.push(format!("    {}", preview(&for_terminal(line))));
                    }
                } else {
                    let first = shown.combined();
                    let first =
                        first.lines().find(|l| !l.trim().is_empty()).unwrap_or("(no output)");
                    out.push(format!("  {} {}", self.mark(true), preview(&for_terminal(first))));
                }
            }
            RuntimeEvent::ApprovalDeclined(declined) => {
                self.announce(source, &declined.call, &mut out);
                self.declined.insert(format!("{source}/{}", declined.call.call_id));
                out.push(format!(
                    "  {} not run: needs approval ({})",
                    self.mark(false),
                    for_terminal(&declined.reason)
                ));
                out.push(format!("    allow with: {}", for_terminal(&declined.allow_with)));
            }
            RuntimeEvent::Compacting { trigger } => {
                out.push(format!("compacting the context ({trigger}): the model summarizes…"));
            }
            RuntimeEvent::Compacted { reason, tokens_before, tokens_after } => {
                out.push(format!(
                    "compacted ({reason}): ~{tokens_before} → ~{tokens_after} tokens"
                ));
            }
            RuntimeEvent::ModeChanged { mode } => out.push(format!("mode: {}", mode.as_str())),
            // The result line names no model; a command's switch is its own.
            RuntimeEvent::ModelChanged { .. } => {}
            // The result line reports plan and tasks; phases show as tool calls.
            RuntimeEvent::WorkflowChanged { .. } => {}
            RuntimeEvent::Progress { message } => out.push(for_terminal(&message).into_owned()),
            RuntimeEvent::Warning { message } => {
                out.push(format!("warning: {}", for_terminal(&message)));
            }
            RuntimeEvent::Error { message } => {
                out.push(format!("error: {}", for_terminal(&message)))
            }
            RuntimeEvent::Retrying { attempt, max_attempts, reason, delay } => out.push(format!(
                "retrying ({attempt}/{max_attempts}) in {:.1}s: {}",
                delay.as_secs_f64(),
                for_terminal(&reason)
            )),
            RuntimeEvent::McpServerStatus { server, status, tools, error, log, prompts: _ } => {
                let log =
                    log.map(|log| format!(" (its log: {})", log.display())).unwrap_or_default();
                let error = error.map(|e| format!(": {}", for_terminal(&e))).unwrap_or_default();
                out.push(match status.as_str() {
                    "ready" if !error.is_empty() => {
                        format!("warning: mcp: {server} ready ({} tools){error}", tools.len())
                    }
                    "ready" => format!("mcp: {server} ready ({} tools)", tools.len()),
                    _ => format!("warning: mcp server {server} {status}{error}{log}"),
                });
            }
            RuntimeEvent::ToolProgress { progress, total, message, .. } => {
                let of = total.map(|total| format!("/{total}")).unwrap_or_default();
                let message = message.map(|m| format!(" {}", for_terminal(&m))).unwrap_or_default();
                out.push(format!("  … {progress}{of}{message}"));
            }
            // A turn that never got an answer used nothing worth a line.
            RuntimeEvent::TurnCompleted { usage, .. } if usage.total_tokens() == 0 => {}
            RuntimeEvent::TurnCompleted { usage, .. } => {
                out.push(format!("tokens: {}", tokens_line(&usage)))
            }
            // A subagent's progress, indented under its `agent` call.
            RuntimeEvent::Subagent { call_id, event } => {
                let inner = match *event {
                    RuntimeEvent::SessionStarted { session_id, model, mode, .. } => {
                        vec![format!("subagent {session_id} · {model} · {} mode", mode.as_str())]
                    }
                    event => self.lines_of(&format!("{source}/{call_id}"), event),
                };
                out.extend(inner.into_iter().map(|line| format!("  │ {line}")));
            }
        }
        if !starts_a_call && !out.is_empty() {
            self.last_announced = None;
        }
        out
    }

    fn announce(&mut self, source: &str, call: &ToolCall, out: &mut Vec<String>) {
        let key = format!("{source}/{}", call.call_id);
        if self.announced.insert(key.clone()) {
            out.push(format!("→ {}", self.summary(call)));
            self.last_announced = Some(key);
        }
    }

    fn summary(&self, call: &ToolCall) -> String {
        // Escaped, not stripped: a bidi override would reorder the line.
        let summary = display::escape_visibly(&call_summary(call)).into_owned();
        format!("{} {}", display::escape_visibly(&call.name), preview(&summary))
    }

    fn mark(&self, ok: bool) -> &'static str {
        match (ok, self.color) {
            (true, false) => "✓",
            (false, false) => "✗",
            (true, true) => "\x1b[32m✓\x1b[0m",
            (false, true) => "\x1b[1;31m✗\x1b[0m",
        }
    }
}

impl EventSink for HumanPrinter {
    fn emit(&mut self, event: RuntimeEvent) {
        let lines = self.lines(event);
        if lines.is_empty() {
            return;
        }
        let mut err = std::io::stderr().lock();
        for line in lines {
            let _ = writeln!(err, "{line}");
        }
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
    use serde_json::json;

    use super::*;
    use crate::protocol::ToolResult;
    use crate::runtime::DeclinedCall;

    fn shell(id: &str, command: &str) -> ToolCall {
        ToolCall {
            call_id: id.into(),
            name: "shell".into(),
            arguments: json!({ "command": command }).to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    fn finished(
        call: ToolCall,
        output: &str,
        is_error: bool,
        meta: serde_json::Value,
    ) -> RuntimeEvent {
        let meta = crate::protocol::ToolMeta::details(meta);
        let result = ToolResult {
            call_id: call.call_id.clone(),
            output: output.into(),
            is_error,
            images: Vec::new(),
        };
        RuntimeEvent::ToolCallFinished { call, result, meta }
    }

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

    #[test]
    fn a_failed_command_is_a_cross_with_its_stderr_tail() {
        let mut printer = HumanPrinter::default();
        let call = shell("c1", "cat f1.txt");
        let mut lines = printer.lines(RuntimeEvent::ToolCallStarted {
            call: call.clone(),
            class: crate::protocol::ToolClass::Mutating,
        });
        let output = "exit code: 1\n--- stderr ---\ncat: f1.txt: No such file or directory\n";
        lines.extend(printer.lines(finished(call, output, false, json!({"exit_code": 1}))));
        assert_eq!(
            lines,
            ["→ shell cat f1.txt", "  ✗ exit 1", "    cat: f1.txt: No such file or directory"]
        );
    }

    #[test]
    fn reads_run_together_start_first_and_each_result_names_its_call() {
        let mut printer = HumanPrinter::default();
        let calls: Vec<ToolCall> =
            (1..=3).map(|n| shell(&format!("c{n}"), &format!("sleep 1 && cat f{n}.txt"))).collect();
        let mut lines = Vec::new();
        for call in &calls {
            let class = crate::protocol::ToolClass::ReadOnly;
            lines
                .extend(printer.lines(RuntimeEvent::ToolCallStarted { call: call.clone(), class }));
        }
        for (n, call) in calls.iter().enumerate() {
            let output = format!("exit code: 0\n--- stdout ---\nfile {}\n", n + 1);
            lines.extend(printer.lines(finished(call.clone(), &output, false, json!({}))));
        }
        assert_eq!(
            lines,
            [
                "→ shell sleep 1 && cat f1.txt",
                "→ shell sleep 1 && cat f2.txt",
                "→ shell sleep 1 && cat f3.txt",
                "← shell sleep 1 && cat f1.txt",
                "  ✓ file 1",
                "← shell sleep 1 && cat f2.txt",
                "  ✓ file 2",
                "← shell sleep 1 && cat f3.txt",
                "  ✓ file 3",
            ]
        );
    }

    #[test]
    fn a_passing_command_shows_output_without_framing() {
        let mut printer = HumanPrinter::default();
        let output = "exit code: 0\n--- stdout ---\nstep-1\n";
        let lines = printer.lines(finished(
            shell("c", "echo step-1"),
            output,
            false,
            json!({"exit_code": 0}),
        ));
        assert_eq!(lines, ["→ shell echo step-1", "  ✓ step-1"]);
    }

    #[test]
    fn a_silent_command_says_it_printed_nothing() {
        let mut printer = HumanPrinter::default();
        let lines = printer.lines(finished(
            shell("c", "echo new > made.txt"),
            "(no output)",
            false,
            json!({"exit_code": 0}),
        ));
        assert_eq!(lines, ["→ shell echo new > made.txt", "  ✓ (no output)"]);
    }

    #[test]
    fn a_declined_call_names_what_allows_it_in_full() {
        let mut printer = HumanPrinter::default();
        let call = shell("c", "python3 test_calc.py");
        let allow_with = format!("--full-auto, or {}", "r".repeat(300));
        let lines = printer.lines(RuntimeEvent::ApprovalDeclined(DeclinedCall {
            call: call.clone(),
            reason: "not known to be safe".into(),
            allow_with: allow_with.clone(),
        }));
        assert_eq!(lines[0], "→ shell python3 test_calc.py");
        assert_eq!(lines[2], format!("    allow with: {allow_with}"));
        let again = printer.lines(finished(call, "not run: …", true, json!({})));
        assert!(again.is_empty(), "{again:?}");
    }

    #[test]
    fn control_sequences_never_reach_the_terminal() {
        let mut printer = HumanPrinter::default();
        let output = "exit code: 0\n--- stdout ---\n\x1b]52;c;cm0=\x07\x1b[2Jhi\n";
        let lines = printer.lines(finished(
            shell("c", "printf '\x1b[2J'"),
            output,
            false,
            json!({"exit_code": 0}),
        ));
        assert!(lines.iter().all(|l| !l.contains('\x1b')), "{lines:?}");
        assert_eq!(lines[1], "  ✓ hi");
    }

    #[test]
    fn a_subagents_calls_are_indented_and_do_not_clash_with_the_parents_ids() {
        let mut printer = HumanPrinter::default();
        let same_id = shell("c", "ls");
        assert_eq!(
            printer.lines(RuntimeEvent::ToolCallStarted {
                call: same_id.clone(),
                class: crate::protocol::ToolClass::Mutating
            }),
            ["→ shell ls"]
        );
        let nested = RuntimeEvent::Subagent {
            call_id: "agent-1".into(),
            event: Box::new(RuntimeEvent::Subagent {
                call_id: "agent-2".into(),
                event: Box::new(RuntimeEvent::ToolCallStarted {
                    call: same_id,
                    class: crate::protocol::ToolClass::Mutating,
                }),
            }),
        };
        assert_eq!(printer.lines(nested), ["  │   │ → shell ls"]);
    }
}
