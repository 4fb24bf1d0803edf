//! Rewind, the session's side: [`Session::rewind`] takes a running (or
//! just resumed) session back to before one of its prompts, or undoes the
//! last rewind, for the conversation, the workspace or both; the loop's
//! side (the prompt line, the `rewound` line, the rebuild) is
//! `agent/rewind.rs`.
//!
//! The workspace goes back to the state before the first change after the
//! point rewound to: the first snapshot the log holds from that point on
//! (a turn's `checkpoint`, taken before its first change, shell commands'
//! included; or the snapshot an earlier rewind took before it restored).
//! None means keel changed nothing since, and nothing is restored. The
//! state just before the rewind is snapshotted first and named in the
//! line (`checkpoint_before`), so undoing the rewind restores it.
//!
//! The user's own later edits are left alone: a file the restore would
//! change whose modification time falls after the point rewound to and
//! outside every keel turn since (and outside the minute before each
//! rewind or undo since, while it restored files) was changed by someone
//! else between turns; it keeps its content and is named in the line's
//! `kept` and the report. What this cannot tell: an edit made while a
//! turn ran counts as keel's, and a deletion has no time (a file deleted
//! between turns comes back).
//!
//! Invariants: only while the session is idle (a `Session` runs one turn
//! at a time, through `&mut self`); the log is read, never rewritten; the
//! line is recorded through `step` (`Input::Rewind`) after the workspace
//! was restored, and nothing is restored when the point cannot be found.

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::agent::{Input, Prompt, PromptLine, Rewind, RewindError, conversation_before};
use crate::protocol::{EventRecord, RewindScope, SessionEvent};
use crate::session::{SessionError, read_log};

use crate::runtime::undo::checkpoint::{CheckpointError, ShadowRepo, UndoLimits};
use crate::runtime::{RuntimeError, RuntimeEvent, Session};

/// How long before its line a restore (a rewind's, an undo's) may have
/// written files: their times count as keel's.
const RESTORE_WINDOW: Duration = Duration::from_secs(60);
/// Slack for file-time granularity around keel's turns.
const SLACK: Duration = Duration::from_secs(1);

/// Where a rewind goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RewindTarget {
    /// Before this prompt of the conversation in force (1-based).
    Prompt(u32),
    /// Undo the latest rewind not undone yet (its scope).
    UndoLast,
}

/// Why a rewind did not happen.
#[derive(Debug, thiserror::Error)]
pub enum RewindFailure {
    #[error(transparent)]
    Target(#[from] RewindError),
    #[error(transparent)]
    Log(#[from] SessionError),
    #[error("cannot restore the workspace: {0}")]
    Checkpoint(#[from] CheckpointError),
    #[error("cannot restore the workspace: checkpoints are unavailable in this session")]
    NoCheckpoints,
    #[error("cannot record the rewind: {0}")]
    Record(#[from] RuntimeError),
}

/// What a rewind did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindReport {
    /// The number the next prompt has.
    pub to_prompt: u32,
    pub scope: RewindScope,
    /// The prompt rewound to (to edit and send again); none for an undo.
    pub prompt: Option<String>,
    /// Workspace-relative paths the restore changed back.
    pub files: Vec<String>,
    /// Files left as they were: the user's own later edits.
    pub kept: Vec<String>,
    /// This rewind undid an earlier one.
    pub undid: bool,
}

impl RewindReport {
    /// One line for the user: what went back, what was kept.
    pub fn summary(&self) -> String {
        let what = if self.undid { "undid the last rewind" } else { "rewound" };
        let mut text = format!(
            "{what} ({}): the conversation goes on at prompt {}",
            self.scope.as_str(),
            self.to_prompt
        );
        if self.scope.includes_code() {
            text.push_str(&match self.files.len() {
                0 => "; no file needed restoring".to_owned(),
                n => format!("; restored {n} file(s): {}", listed(&self.files)),
            });
        }
        if !self.kept.is_empty() {
            text.push_str(&format!(
                "; kept your own later edits to {} (undo the rewind to get keel's back)",
                listed(&self.kept)
            ));
        }
        text
    }
}

fn listed(paths: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut text = paths.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(", … ({} in all)", paths.len()));
    }
    text
}

/// What the log says a rewind needs.
struct LogView {
    records: Vec<EventRecord>,
    line: PromptLine,
}

impl LogView {
    fn read(path: &Path) -> Result<Self, SessionError> {
        let records = read_log(path)?.records;
        let line = PromptLine::of(&records);
        Ok(Self { records, line })
    }

    /// The first workspace snapshot from `seq` on: the state before the
    /// first change after that point.
    fn snapshot_from(&self, seq: u64) -> Option<String> {
        self.records.iter().filter(|record| record.seq >= seq).find_map(|record| {
            match &record.event {
                SessionEvent::Checkpoint { commit, .. } => Some(commit.clone()),
                SessionEvent::Rewound { checkpoint_before, .. } => checkpoint_before.clone(),
                _ => None,
            }
        })
    }

    /// When keel itself wrote files from `seq` on: its turns, and the
    /// restores of rewinds and undos; and the time of the line at `seq`.
    fn keel_times(&self, seq: u64) -> (Option<SystemTime>, Vec<(SystemTime, SystemTime)>) {
        let at = |record: &EventRecord| humantime::parse_rfc3339_weak(&record.ts).ok();
        let from = self.records.iter().find(|record| record.seq >= seq).and_then(at);
        let mut spans = Vec::new();
        let mut turn_start = None;
        for record in self.records.iter().filter(|record| record.seq >= seq) {
            let Some(time) = at(record) else { continue };
            match &record.event {
                SessionEvent::TurnStarted { .. } => turn_start = Some(time),
                SessionEvent::TurnCompleted { .. } => {
                    if let Some(start) = turn_start.take() {
                        spans.push((start, time));
                    }
                }
                SessionEvent::Rewound { .. } | SessionEvent::Undo { .. } => {
                    spans.push((time.checked_sub(RESTORE_WINDOW).unwrap_or(time), time));
                }
                _ => {}
            }
        }
        if let Some(start) = turn_start {
            // A turn without its end (a crash): keel's until now.
            spans.push((start, SystemTime::now()));
        }
        (from, spans)
    }
}

/// Whether the file at `path` was last changed outside keel's times: after
/// `from` and in none of `spans`.
fn changed_by_someone_else(
    root: &Path,
    path: &str,
    from: Option<SystemTime>,
    spans: &[(SystemTime, SystemTime)],
) -> bool {
    let Ok(file) = crate::support::beneath::open_beneath(root, Path::new(path)) else {
        return false;
    };
    let Ok(modified) = file.metadata().and_then(|meta| meta.modified()) else { return false };
    let after_point = from.is_none_or(|from| modified > from + SLACK);
    let in_keel_time = spans.iter().any(|(start, end)| {
        let start = start.checked_sub(SLACK).unwrap_or(*start);
        modified >= start && modified <= *end + SLACK
    });
    after_point && !in_keel_time
}

/// The workspace restored to `target`, except the user's later edits.
struct CodeRestore {
    before: String,
    files: Vec<String>,
    kept: Vec<String>,
}

async fn restore_code(
    shadow: &ShadowRepo,
    root: &Path,
    target: &str,
    (from, spans): (Option<SystemTime>, Vec<(SystemTime, SystemTime)>),
    limits: UndoLimits,
) -> Result<CodeRestore, CheckpointError> {
    let before = shadow.snapshot_fresh(limits, "before rewind").await?;
    let changed = shadow.changed_between(&before.commit, target).await?;
    let (kept, files): (Vec<String>, Vec<String>) =
        changed.into_iter().partition(|path| changed_by_someone_else(root, path, from, &spans));
    shadow.restore(target, limits).await?;
    for chunk in crate::runtime::undo::checkpoint::chunked(&kept) {
        let mut args = vec!["--literal-pathspecs", "checkout", before.commit.as_str(), "--"];
        args.extend(chunk);
        shadow.git(&args).await?;
    }
    Ok(CodeRestore { before: before.commit, files, kept })
}

impl Session {
    /// The prompts of the conversation in force (the TUI's rewind list).
    pub fn prompts(&self) -> Result<Vec<Prompt>, SessionError> {
        Ok(LogView::read(self.log.path())?.line.prompts())
    }

    /// Rewinds the session (see the module doc); the conversation resumes
    /// at the prompt rewound to, which the caller may send again, edited.
    pub async fn rewind(
        &mut self,
        target: RewindTarget,
        scope: RewindScope,
    ) -> Result<RewindReport, RewindFailure> {
        let view = LogView::read(self.log.path())?;
        let (to_seq, to_prompt, prompt, scope, undoes) = match target {
            RewindTarget::Prompt(number) => {
                let prompt = view.line.target(number)?;
                (prompt.seq, number, Some(prompt.text), scope, None)
            }
            RewindTarget::UndoLast => {
                let mark = view.line.last_rewind()?;
                let next = view.line.prompts_before(mark.seq).len() + 1;
                let next = u32::try_from(next).unwrap_or(u32::MAX);
                (mark.seq, next, None, mark.scope, Some(mark.seq))
            }
        };
        let mut code = None;
        let mut restored = None;
        if scope.includes_code() {
            let (shadow, limits) =
                self.checkpoints.restorer().ok_or(RewindFailure::NoCheckpoints)?;
            if let Some(commit) = view.snapshot_from(to_seq) {
                let times = view.keel_times(to_seq);
                let root = &self.workspace_root;
                code = Some(restore_code(shadow, root, &commit, times, limits).await?);
                restored = Some(commit);
            }
        }
        let items = scope
            .includes_conversation()
            .then(|| conversation_before(self.state.config().clone(), view.records, to_seq));
        let (checkpoint_before, files, kept) = match code {
            Some(CodeRestore { before, files, kept }) => (Some(before), files, kept),
            None => (None, Vec::new(), Vec::new()),
        };
        let rewind = Rewind {
            to_prompt,
            to_seq,
            scope,
            items,
            checkpoint_before,
            restored,
            kept: kept.clone(),
            undoes,
        };
        self.apply_outside_loop(Input::Rewind(rewind))?;
        if scope.includes_conversation() {
            // The conversation no longer holds a turn the log left open.
            self.open_turn = None;
        }
        let report =
            RewindReport { to_prompt, scope, prompt, files, kept, undid: undoes.is_some() };
        self.sink.emit(RuntimeEvent::Progress { message: report.summary() });
        Ok(report)
    }
}
