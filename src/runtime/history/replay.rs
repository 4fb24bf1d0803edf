//! `keel replay` and `keel demo`: a recorded session re-run offline. No
//! model is called: the recorded responses are shown as they were, and
//! every tool call the recording ran is run again, in log order, in a
//! workspace the caller prepares (normally a temporary copy), and its
//! result compared with the recorded one.
//!
//! Invariants: nothing is appended to the log being replayed; calls the
//! recording did not run (declined, interrupted) are not run either; a
//! result differs when its text or error flag differs after the replay
//! workspace's path is mapped back to the recorded one (a shell result's
//! streams and exit code, not its framing, which changes between versions).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio_util::sync::CancellationToken;

use crate::display;
use crate::protocol::{SessionEvent, ToolCall, ToolMeta, ToolResult};
use crate::session::{SessionError, read_log};
use crate::tools::{AGENT_TOOL, SHELL_TOOL, ToolContext, ToolRegistry};

use crate::runtime::{EventSink, RuntimeEvent};

/// Whether a replayed result says what the recorded one said. A shell
/// result is compared by its streams and exit code: a log written by an
/// older keel frames them differently (an `exit code: 0` line, labels, a
/// final newline) for the same run.
fn same_result(tool: &str, recorded: &ToolResult, replayed: &ToolResult) -> bool {
    if recorded.is_error != replayed.is_error {
        return false;
    }
    if tool != SHELL_TOOL || recorded.is_error {
        return recorded.output == replayed.output;
    }
    let streams = |text: &str| {
        let shown = display::parse_shell(text);
        let trim = |s: String| s.strip_suffix('\n').map(str::to_owned).unwrap_or(s);
        (display::shell_exit_code(text), trim(shown.stdout), trim(shown.stderr), shown.notes)
    };
    streams(&recorded.output) == streams(&replayed.output)
}

/// A tool result that came out differently on replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    pub call: ToolCall,
    pub recorded: ToolResult,
    pub replayed: ToolResult,
}

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayReport {
    pub turns: u32,
    pub calls_run: u32,
    pub differences: Vec<Difference>,
    /// Warnings about skipped log lines.
    pub warnings: Vec<String>,
    pub final_text: Option<String>,
}

/// The first checkpoint of a log: the workspace before the session first
/// changed it, from which a replay should start.
pub fn first_checkpoint(log_path: &Path) -> Result<Option<String>, SessionError> {
    let contents = read_log(log_path)?;
    Ok(contents.records.into_iter().find_map(|record| {
        let SessionEvent::Checkpoint { commit, .. } = record.event else { return None };
        Some(commit)
    }))
}

/// Replays the log at `log_path` with tools running in `workspace`,
/// showing it through `sink`.
pub async fn replay(
    log_path: &Path,
    workspace: &Path,
    sink: &mut dyn EventSink,
) -> Result<ReplayReport, SessionError> {
    let contents = read_log(log_path)?;
    let tools = ToolRegistry::builtin();
    let ctx =
        ToolContext::new(workspace.to_owned(), workspace.to_owned(), CancellationToken::new());
    let mut report = ReplayReport { warnings: contents.warnings, ..ReplayReport::default() };
    let mut recorded_root = String::new();
    let mut calls: BTreeMap<String, ToolCall> = BTreeMap::new();
    let mut replayed: BTreeMap<String, (ToolResult, ToolMeta)> = BTreeMap::new();
    for record in contents.records {
        match record.event {
            SessionEvent::SessionStarted { session_id, cwd, provider, model, mode, .. } => {
                recorded_root = cwd;
                sink.emit(RuntimeEvent::SessionStarted {
                    session_id,
                    log_path: log_path.to_owned(),
                    provider: format!("replay of {provider}"),
                    pricing: crate::context::Pricing::for_model(&model),
                    model,
                    workspace_root: workspace.to_owned(),
                    // Replayed tools run without the session confinement.
                    sandbox: crate::runtime::SandboxState::Off,
                    mode: mode.unwrap_or_default(),
                    limits: crate::agent::SpendLimits::default(),
                });
            }
            SessionEvent::TurnStarted { turn } => {
                report.turns += 1;
                sink.emit(RuntimeEvent::TurnStarted { turn });
            }
            SessionEvent::ModelResponse { response, .. } => {
                let text = response.text();
                if !text.is_empty() {
                    report.final_text = Some(text);
                }
                for call in response.tool_calls() {
                    calls.insert(call.call_id.clone(), call.clone());
                }
                sink.emit(RuntimeEvent::ModelResponse(response));
            }
            // A subagent needs a model: its recorded answer is shown.
            SessionEvent::ToolCallStarted { call, class } if call.name == AGENT_TOOL => {
                sink.emit(RuntimeEvent::ToolCallStarted { call, class });
            }
            SessionEvent::ToolCallStarted { call, class } => {
                sink.emit(RuntimeEvent::ToolCallStarted { call: call.clone(), class });
                let outcome = tools.run_call(&call, &ctx).await;
                report.calls_run += 1;
                replayed.insert(call.call_id.clone(), outcome);
            }
            SessionEvent::ToolCallFinished { result, meta } => {
                let call = calls.get(&result.call_id).cloned().unwrap_or_else(|| ToolCall {
                    call_id: result.call_id.clone(),
                    name: String::new(),
                    arguments: String::new(),
                    item_id: None,
                    provider_data: None,
                });
                let (shown, meta) = match replayed.remove(&result.call_id) {
                    Some((mut again, meta)) => {
                        again.output = again
                            .output
                            .replace(workspace.display().to_string().as_str(), &recorded_root);
                        if !same_result(&call.name, &result, &again) {
                            report.differences.push(Difference {
                                call: call.clone(),
                                recorded: result.clone(),
                                replayed: again.clone(),
                            });
                        }
                        (again, meta)
                    }
                    None => (result, meta),
                };
                sink.emit(RuntimeEvent::ToolCallFinished { call, result: shown, meta });
            }
            SessionEvent::TurnCompleted { turn, outcome, usage } => {
                sink.emit(RuntimeEvent::TurnCompleted {
                    turn,
                    outcome,
                    final_text: report.final_text.clone(),
                    usage,
                    unverified: None,
                });
            }
            SessionEvent::SessionResumed { .. }
            | SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::UserMessage { .. }
            | SessionEvent::InputQueued { .. }
            | SessionEvent::PolicyDecision { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::ModeChanged { .. }
            | SessionEvent::ModelChanged { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::PhaseChanged { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            | SessionEvent::Compaction { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::SubagentFinished { .. }
            | SessionEvent::SessionEnded { .. } => {}
        }
    }
    Ok(report)
}

/// Copies the files of `root` that `.gitignore` keeps (never `.git`) into
/// `dest`.
pub fn copy_workspace(root: &Path, dest: &Path) -> std::io::Result<u64> {
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build();
    let mut copied = 0;
    for entry in walk.flatten() {
        let Ok(rel) = entry.path().strip_prefix(root) else { continue };
        let target: PathBuf = dest.join(rel);
        match entry.file_type() {
            Some(kind) if kind.is_dir() => std::fs::create_dir_all(&target)?,
            Some(kind) if kind.is_file() => {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::copy(entry.path(), &target)?;
                copied += 1;
            }
            Some(_) | None => {}
        }
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(output: &str, is_error: bool) -> ToolResult {
        ToolResult { call_id: "c".into(), output: output.into(), is_error, images: Vec::new() }
    }

    #[test]
    fn a_shell_result_framed_by_an_older_keel_is_the_same_run() {
        let now = result("Hello, world!", false);
        for older in ["Hello, world!\n", "exit code: 0\n--- stdout ---\nHello, world!\n"] {
            assert!(same_result(SHELL_TOOL, &result(older, false), &now), "{older}");
        }
        assert!(!same_result(SHELL_TOOL, &result("Hello, world!\n", false), &result("Hi", false)));
        let failed = result("exit code: 1\nHello, world!", false);
        assert!(!same_result(SHELL_TOOL, &result("Hello, world!\n", false), &failed));
        assert!(!same_result(SHELL_TOOL, &now, &result("Hello, world!", true)));
    }

    #[test]
    fn other_results_compare_as_text() {
        assert!(same_result("read_file", &result("a\n", false), &result("a\n", false)));
        assert!(!same_result("read_file", &result("a\n", false), &result("a", false)));
    }
}
