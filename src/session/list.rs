//! Finding sessions: summaries for `keel sessions`, an id prefix or
//! "the newest of this folder" to a log path for resume.
//!
//! Invariant: a log that cannot be read is left out of a listing (with a
//! warning), never a reason to fail the whole listing.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::protocol::{SessionEvent, TurnOutcome};

use super::lock::{LockHolder, holder as lock_holder};
use super::{SessionError, for_each_record};

/// One session as `keel sessions` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    pub id: String,
    pub path: PathBuf,
    /// Where keel was started (`session_started.cwd`).
    pub folder: String,
    pub started: String,
    pub last_activity: String,
    /// How the last turn ended: `completed`, `failed`, `interrupted`,
    /// `max_steps`, `budget_exceeded`, `stuck`; `running` (a turn without
    /// its end, its keel alive), `crashed` (a turn without its end, no keel
    /// holds the log), or `empty` (no turn: opened and left).
    pub status: String,
    /// The keel process appending to the log right now, if one is
    /// (`keel sessions` shows it; a resume of it is refused).
    pub live: Option<LockHolder>,
    pub first_prompt: Option<String>,
    pub provider: String,
    pub model: String,
    /// A subagent's session: the id of the session that started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// A subagent's session: its agent type.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// Summarises the log at `path`.
pub fn summarize(path: &Path) -> Result<SessionSummary, SessionError> {
    let id = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let mut summary = SessionSummary {
        id,
        path: path.to_owned(),
        folder: String::new(),
        started: String::new(),
        last_activity: String::new(),
        status: "empty".to_owned(),
        live: None,
        first_prompt: None,
        provider: String::new(),
        model: String::new(),
        parent: None,
        agent: None,
    };
    for_each_record(path, |record| {
        if summary.started.is_empty() {
            summary.started.clone_from(&record.ts);
        }
        summary.last_activity = record.ts;
        note(&mut summary, record.event);
    })?;
    summary.live = lock_holder(path);
    if summary.status == OPEN_TURN {
        summary.status = if summary.live.is_some() { "running" } else { "crashed" }.to_owned();
    }
    Ok(summary)
}

/// What `note` calls a turn without its end, until the lock tells
/// `running` from `crashed`.
const OPEN_TURN: &str = "open turn";

fn note(summary: &mut SessionSummary, event: SessionEvent) {
    match event {
        SessionEvent::SessionStarted { session_id, cwd, provider, model, parent, .. } => {
            summary.id = session_id;
            summary.folder = cwd;
            summary.provider = provider;
            summary.model = model;
            if let Some(parent) = parent {
                summary.parent = Some(parent.session_id);
                summary.agent = Some(parent.agent);
            }
        }
        SessionEvent::SessionResumed { provider, model, .. } => {
            summary.provider = provider;
            summary.model = model;
        }
        SessionEvent::UserMessage { text, .. } => {
            summary.first_prompt.get_or_insert(text);
        }
        SessionEvent::TurnStarted { .. } => summary.status = OPEN_TURN.to_owned(),
        SessionEvent::TurnCompleted { outcome, .. } => summary.status = outcome_name(outcome),
        // Ending the session says nothing about its work: the last turn's
        // outcome (an interrupt, a failure) stays what the listing shows.
        SessionEvent::SessionEnded { .. }
        | SessionEvent::InputQueued { .. }
        | SessionEvent::ModelResponse { .. }
        | SessionEvent::PolicyDecision { .. }
        | SessionEvent::Approval { .. }
        | SessionEvent::AlwaysRemoved { .. }
        | SessionEvent::McpServerStatus { .. }
        | SessionEvent::ToolsChanged { .. }
        | SessionEvent::ToolCallStarted { .. }
        | SessionEvent::FileBefore { .. }
        | SessionEvent::FileChanged { .. }
        | SessionEvent::ToolCallFinished { .. }
        | SessionEvent::PromptPrefix { .. }
        | SessionEvent::ContextUpdated { .. }
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
        | SessionEvent::SubagentFinished { .. } => {}
    }
}

fn outcome_name(outcome: TurnOutcome) -> String {
    outcome.as_str().to_owned()
}

/// Every session in `dir`, newest first (ids are UUIDv7, so by start time),
/// plus a warning per log that could not be read.
pub fn list_sessions(dir: &Path) -> (Vec<SessionSummary>, Vec<String>) {
    let mut sessions = Vec::new();
    let mut warnings = Vec::new();
    for path in log_paths(dir) {
        match summarize(&path) {
            Ok(summary) => sessions.push(summary),
            Err(error) => warnings.push(error.to_string()),
        }
    }
    sessions.sort_by(|a, b| (&b.started, &b.id).cmp(&(&a.started, &a.id)));
    (sessions, warnings)
}

pub(super) fn log_paths(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    paths.sort();
    paths
}

/// Why a session could not be picked.
#[derive(Debug, thiserror::Error)]
pub enum FindError {
    #[error("no session id starts with `{prefix}` in {dir}; `keel sessions` lists them")]
    NoMatch { prefix: String, dir: PathBuf },
    #[error("`{prefix}` matches {count} sessions ({examples}); give more of the id")]
    Ambiguous { prefix: String, count: usize, examples: String },
    #[error("no session was started in {folder}; `keel sessions` lists all of them")]
    NoneHere { folder: String },
}

/// The log whose id starts with `prefix` (a path to a log works too).
pub fn find_by_prefix(dir: &Path, prefix: &str) -> Result<PathBuf, FindError> {
    let as_path = Path::new(prefix);
    if prefix.ends_with(".jsonl") && as_path.is_file() {
        return Ok(as_path.to_owned());
    }
    let matches: Vec<PathBuf> = log_paths(dir)
        .into_iter()
        .filter(|path| path.file_stem().is_some_and(|s| s.to_string_lossy().starts_with(prefix)))
        .collect();
    match matches.as_slice() {
        [] => Err(FindError::NoMatch { prefix: prefix.to_owned(), dir: dir.to_owned() }),
        [only] => Ok(only.clone()),
        many => Err(FindError::Ambiguous {
            prefix: prefix.to_owned(),
            count: many.len(),
            examples: many
                .iter()
                .take(3)
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

/// The newest session started in `folder` (a subagent's session is part
/// of its parent's, never "the last session").
pub fn newest_in_folder(dir: &Path, folder: &Path) -> Result<PathBuf, FindError> {
    newest_first_in_folder(dir, folder)
        .next()
        .ok_or_else(|| FindError::NoneHere { folder: folder.display().to_string() })
}

/// The sessions started in `folder` (not subagents'), newest first by
/// file name (UUIDv7), reading only each log's first line, lazily.
pub fn newest_first_in_folder(dir: &Path, folder: &Path) -> impl Iterator<Item = PathBuf> {
    let folder = folder.display().to_string();
    let mut paths = log_paths(dir);
    paths.reverse();
    paths.into_iter().filter(move |path| {
        first_event(path).is_some_and(|first| first.cwd == folder && first.parent.is_none())
    })
}

/// The folder the session was started in (read from its first line).
pub fn logged_cwd(path: &Path) -> Option<String> {
    first_event(path).map(|first| first.cwd)
}

/// Provider and model the session started with (read from its first line).
pub fn logged_model(path: &Path) -> Option<(String, String)> {
    first_event(path).map(|first| (first.provider, first.model))
}

/// The parent of a subagent's session (read from its first line).
pub fn logged_parent(path: &Path) -> Option<crate::protocol::ParentLink> {
    first_event(path).and_then(|first| first.parent)
}

/// What a log's `session_started` line says.
struct FirstEvent {
    cwd: String,
    provider: String,
    model: String,
    parent: Option<crate::protocol::ParentLink>,
}

fn first_event(path: &Path) -> Option<FirstEvent> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file).read_line(&mut first).ok()?;
    let record: crate::protocol::EventRecord = serde_json::from_str(&first).ok()?;
    let SessionEvent::SessionStarted { cwd, provider, model, parent, .. } = record.event else {
        return None;
    };
    Some(FirstEvent { cwd, provider, model, parent })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Usage;
    use crate::session::SessionLog;

    fn log_with(dir: &Path, id: &str, events: Vec<SessionEvent>) -> PathBuf {
        let mut log = SessionLog::create(dir, id).unwrap();
        let start = SessionEvent::SessionStarted {
            session_id: id.into(),
            cwd: "/repo".into(),
            provider: "openai".into(),
            model: "m".into(),
            keel_version: "0".into(),
            git_head: None,
            mode: None,
            parent: None,
        };
        log.append(start).unwrap();
        for event in events {
            log.append(event).unwrap();
        }
        log.path().to_owned()
    }

    #[test]
    fn ending_the_session_keeps_the_last_turns_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_with(
            dir.path(),
            "s1",
            vec![
                SessionEvent::UserMessage { text: "go".into(), images: Vec::new(), queued: None },
                SessionEvent::TurnStarted { turn: 1 },
                SessionEvent::TurnCompleted {
                    turn: 1,
                    outcome: TurnOutcome::Interrupted,
                    usage: Usage::default(),
                },
                SessionEvent::SessionEnded { reason: "quit".into() },
            ],
        );
        assert_eq!(summarize(&path).unwrap().status, "interrupted");
        let empty =
            log_with(dir.path(), "s2", vec![SessionEvent::SessionEnded { reason: "quit".into() }]);
        let summary = summarize(&empty).unwrap();
        assert_eq!((summary.status.as_str(), summary.first_prompt), ("empty", None));
    }
}
