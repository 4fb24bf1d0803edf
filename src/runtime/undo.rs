//! Undo: a checkpoint of the workspace before the first mutating call of
//! each turn (so changes by shell commands are covered too), recorded as a
//! `checkpoint` line, and [`undo`], which restores one and records an
//! `undo` line.
//!
//! Invariants: a checkpoint is taken at most once per turn and before any
//! mutating call of that turn runs; failing to take one (no `git`) is a
//! warning, never a reason to stop the session; undo only ever moves back
//! past checkpoints not already undone.

use std::path::{Path, PathBuf};

use crate::protocol::{SessionEvent, ToolCall, ToolClass};
use crate::session::{SessionError, SessionLock, SessionLog, for_each_record};

use super::checkpoint::{CheckpointError, ShadowRepo};
use super::{RuntimeError, RuntimeEvent, Session};

/// Checkpoint bookkeeping of a running session.
#[derive(Debug, Clone)]
pub(super) struct Checkpoints {
    shadow: ShadowRepo,
    /// The turn the last checkpoint was taken for.
    taken_for: u32,
    /// Set after the first failure, so the user is warned once.
    disabled: bool,
}

impl Checkpoints {
    /// `taken_for` is the last turn the log already has a checkpoint for,
    /// so a resumed turn keeps the checkpoint taken at its start.
    pub fn new(keel_home: &Path, workspace_root: &Path, taken_for: u32) -> Self {
        Self {
            shadow: ShadowRepo::for_workspace(keel_home, workspace_root),
            taken_for,
            disabled: false,
        }
    }
}

impl Session {
    /// Takes this turn's checkpoint if `calls` may change files and none
    /// was taken yet.
    pub(super) async fn checkpoint_before(
        &mut self,
        calls: &[ToolCall],
    ) -> Result<(), RuntimeError> {
        let turn = self.state.turn;
        let mutating =
            calls.iter().any(|call| self.tools.class_of(&call.name) == ToolClass::Mutating);
        if !mutating || self.checkpoints.disabled || self.checkpoints.taken_for == turn {
            return Ok(());
        }
        self.checkpoints.taken_for = turn;
        match self.checkpoints.shadow.snapshot(&format!("before turn {turn}")).await {
            Ok(commit) => {
                self.log.append(SessionEvent::Checkpoint { turn, commit })?;
            }
            Err(error) => {
                self.checkpoints.disabled = true;
                self.sink.emit(RuntimeEvent::Warning {
                    message: format!("undo is unavailable for this session: {error}"),
                });
            }
        }
        Ok(())
    }
}

/// Why `keel undo` could not restore.
#[derive(Debug, thiserror::Error)]
pub enum UndoError {
    #[error(transparent)]
    Log(#[from] SessionError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("nothing to undo: {available} checkpointed turn(s) left in {log}, {turns} asked")]
    NotEnough { available: usize, turns: usize, log: PathBuf },
}

/// What an undo restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UndoReport {
    /// The workspace is now as it was before this turn.
    pub turn: u32,
    pub commit: String,
    /// A snapshot of the state just before the undo.
    pub saved_as: String,
    /// The workspace-relative paths the undo changed back (restored,
    /// or removed because the turns created them).
    pub files: Vec<String>,
}

impl UndoReport {
    /// `restored calc.py, notes.txt (2 files) to before turn 3`: what a
    /// user checks after an undo (`keel undo`, the TUI's `/undo`).
    pub fn summary(&self) -> String {
        const LISTED: usize = 10;
        let files = match self.files.len() {
            0 => "no files (nothing had changed since)".to_owned(),
            1 => format!("{} (1 file)", self.files[0]),
            n if n <= LISTED => format!("{} ({n} files)", self.files.join(", ")),
            n => format!("{}, … ({n} files)", self.files[..LISTED].join(", ")),
        };
        format!("restored {files} to before turn {}", self.turn)
    }
}

/// Restores the workspace to before the `turns`-th latest turn (of those
/// not undone yet) that changed files, and records it in the log.
pub async fn undo(
    keel_home: &Path,
    workspace_root: &Path,
    log_path: &Path,
    turns: usize,
) -> Result<UndoReport, UndoError> {
    // Locked first: nothing is restored under a session that is still live.
    let lock = SessionLock::acquire(log_path)?;
    let ((turn, commit), next_seq) = undoable(log_path, turns)?;
    let shadow = ShadowRepo::for_workspace(keel_home, workspace_root);
    let saved_as = shadow.restore(&commit).await?;
    let files = shadow.changed_between(&saved_as, &commit).await?;
    let mut log = SessionLog::append_to(lock, next_seq)?;
    log.append(SessionEvent::Undo { turn, commit: commit.clone() })?;
    Ok(UndoReport { turn, commit, saved_as, files })
}

impl Session {
    /// [`undo`] for a running session (the TUI's `/undo`): the same
    /// restore, recorded through the session's own log writer (a second
    /// writer on the same file would repeat sequence numbers).
    pub async fn undo_turns(&mut self, turns: usize) -> Result<UndoReport, UndoError> {
        let ((turn, commit), _) = undoable(self.log.path(), turns)?;
        let saved_as = self.checkpoints.shadow.restore(&commit).await?;
        let files = self.checkpoints.shadow.changed_between(&saved_as, &commit).await?;
        self.log.append(SessionEvent::Undo { turn, commit: commit.clone() })?;
        Ok(UndoReport { turn, commit, saved_as, files })
    }
}

/// The checkpoint to restore for `turns` and the log's next sequence number.
fn undoable(log_path: &Path, turns: usize) -> Result<((u32, String), u64), UndoError> {
    let mut checkpoints: Vec<(u32, String)> = Vec::new();
    let mut next_seq = 0;
    for_each_record(log_path, |record| {
        next_seq = record.seq + 1;
        if let SessionEvent::Checkpoint { turn, commit } = record.event {
            checkpoints.push((turn, commit));
        } else if let SessionEvent::Undo { turn, .. } = record.event {
            // Undone turns, and any after them, cannot be undone again.
            checkpoints.retain(|(t, _)| *t < turn);
        }
    })?;
    let available = checkpoints.len();
    let index = available.checked_sub(turns.max(1)).ok_or(UndoError::NotEnough {
        available,
        turns,
        log: log_path.to_owned(),
    })?;
    Ok((checkpoints.swap_remove(index), next_seq))
}
