//! Undo: a checkpoint of the workspace before the first mutating call of
//! each turn (so changes by shell commands are covered too), recorded as a
//! `checkpoint` line, and [`undo`], which restores one and records an
//! `undo` line.
//!
//! The session's first checkpoint looks at the whole work tree (one `git
//! status` against the index kept from earlier sessions) while the
//! [`Watcher`] is set up in the background, by the jail's nested `.git`
//! search when the sandbox has one (`first_walk`: one walk for both),
//! else on its own once the look is done; once the watcher ran from
//! before a full look, later checkpoints look only at what it saw change. A
//! checkpoint that takes longer than [`SLOW_CHECKPOINT`] is announced
//! ([`RuntimeEvent::Progress`]), and so is the first one of a large
//! workspace, before it starts.
//!
//! Invariants: a checkpoint is taken at most once per turn and before any
//! mutating call of that turn runs; failing to take one (no `git`) is a
//! warning, never a reason to stop the session; undo only ever moves back
//! past checkpoints not already undone; what a checkpoint leaves out
//! (ignored files, files over the size caps) is said when it happens and
//! again by the undo that cannot restore it.

//!
//! # Files
//!
//! This file is the face of the undo store (the checkpoint before a turn's first change, `keel
//! undo`); `checkpoint.rs` the shadow repository, `shadow_seed.rs` and `shadow_triage.rs` its
//! setup and what a checkpoint saves, `notes.rs` what undo does not cover; `watch.rs` the inotify
//! watcher with `ignores.rs`; `first_walk.rs` the one walk shared with the jail's nested `.git`
//! search, `folder_cache.rs` what the last walk saw.

pub(super) mod checkpoint;
pub(super) mod first_walk;
mod folder_cache;
mod ignores;
pub(super) mod notes;
pub(super) mod shadow_seed;
mod shadow_triage;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use tokio::task::JoinHandle;

use crate::protocol::{SessionEvent, ToolCall, ToolClass};
use crate::session::{SessionError, SessionLock, SessionLog, for_each_record};

use self::checkpoint::{CheckpointError, Scope, ShadowRepo, Snapshot, UndoLimits};
use self::first_walk::OfferedWatch;
use self::notes::{NotCovered, not_covered_by, skipped_warning};
use self::watch::{Dirty, WatchError, Watcher};
use super::{RuntimeError, RuntimeEvent, Session};

/// A checkpoint slower than this is announced while it runs.
pub const SLOW_CHECKPOINT: Duration = Duration::from_millis(500);
/// Tracked files from which a workspace counts as large: its first
/// checkpoint is announced before it starts.
pub const LARGE_WORKSPACE_FILES: u32 = 10_000;

/// Checkpoint bookkeeping of a running session.
#[derive(Debug)]
pub(super) struct Checkpoints {
    shadow: ShadowRepo,
    /// The turn the last checkpoint was taken for.
    taken_for: u32,
    /// Set after the first failure, so the user is warned once.
    disabled: bool,
    limits: UndoLimits,
    watch: WatchState,
    /// Folders inside the workspace the watcher leaves alone (keel's own state).
    excluded: Vec<PathBuf>,
    /// Tells a watch still being set up that the session is over.
    stop: Arc<AtomicBool>,
    /// The watcher the jail's nested `.git` search sets up for this
    /// session (`first_walk`), until the first checkpoint claims it.
    offered: Option<OfferedWatch>,
}

#[derive(Debug)]
enum WatchState {
    /// No checkpoint yet this session.
    NotStarted,
    /// Being set up on a blocking thread (one walk of the folders), off
    /// the path of the turn.
    Starting(JoinHandle<Result<Watcher, WatchError>>),
    /// Set up; `trusted` once it ran before a full look began, so what it
    /// saw since covers everything that changed after that checkpoint.
    Running { watcher: Box<Watcher>, trusted: bool },
    /// inotify could not watch this workspace: every checkpoint looks at
    /// everything.
    Unavailable,
}

impl Checkpoints {
    /// `taken_for` is the last turn the log already has a checkpoint for,
    /// so a resumed turn keeps the checkpoint taken at its start.
    pub fn new(
        keel_home: &Path,
        workspace_root: &Path,
        taken_for: u32,
        limits: UndoLimits,
    ) -> Self {
        Self {
            shadow: ShadowRepo::for_workspace(keel_home, workspace_root),
            taken_for,
            disabled: false,
            limits,
            watch: WatchState::NotStarted,
            excluded: vec![keel_home.to_owned()],
            stop: Arc::new(AtomicBool::new(false)),
            offered: None,
        }
    }

    /// The same bookkeeping, its first checkpoint taking the watcher the
    /// jail's nested `.git` search sets up (`first_walk`).
    pub(super) fn with_offered_watch(mut self, offered: Option<OfferedWatch>) -> Self {
        self.offered = offered;
        self
    }

    /// The watcher, once set up (the session's first checkpoint starts it).
    pub fn watcher(&mut self) -> Option<&mut Watcher> {
        self.settle();
        match &mut self.watch {
            WatchState::Running { watcher, .. } => Some(watcher),
            WatchState::NotStarted | WatchState::Starting(_) | WatchState::Unavailable => None,
        }
    }

    /// Takes the result of a watch whose setup finished.
    fn settle(&mut self) {
        let WatchState::Starting(handle) = &mut self.watch else { return };
        let Some(started) = handle.now_or_never() else { return };
        self.watch = match started {
            Ok(Ok(watcher)) => {
                tracing::debug!(folders = watcher.folders(), "watching the workspace for changes");
                WatchState::Running { watcher: Box::new(watcher), trusted: false }
            }
            Ok(Err(error)) => {
                tracing::info!(%error, "no watcher: every checkpoint looks at the whole tree");
                WatchState::Unavailable
            }
            Err(_) => WatchState::Unavailable,
        };
    }

    /// Takes a checkpoint: what the watcher saw change, once it is
    /// trusted; else the whole work tree. The first time, the watcher
    /// comes from the walk of the jail's nested `.git` search, which
    /// [`Session::checkpoint_before`] starts alongside this look (the first
    /// writing command waits for that search anyway); without one it
    /// starts once the look is done (on two cores a walk of its own
    /// beside `git status` made the first checkpoint of a 58 000-file
    /// repository wait for both). Either way it is trusted only from the
    /// next full look on.
    async fn take(&mut self, message: &str) -> Result<Snapshot, CheckpointError> {
        self.settle();
        let start_watch = matches!(self.watch, WatchState::NotStarted);
        let scope = match &mut self.watch {
            WatchState::Running { watcher, trusted: true } => match watcher.take_dirty() {
                Dirty::Paths(paths) => Scope::Paths(paths),
                Dirty::Everything => Scope::Everything,
            },
            WatchState::Running { watcher, trusted } => {
                // Running before this look begins: trusted from now on.
                watcher.take_dirty();
                *trusted = true;
                Scope::Everything
            }
            WatchState::NotStarted | WatchState::Starting(_) | WatchState::Unavailable => {
                Scope::Everything
            }
        };
        // The jail's nested `.git` search, started alongside this look,
        // sets the watcher up too (`first_walk`); else it starts here.
        let work_tree = &self.shadow.work_tree;
        let offered = if start_watch {
            self.offered.take().and_then(|offered| offered.claim(work_tree))
        } else {
            None
        };
        let snapshot = self.shadow.snapshot(&scope, self.limits, message).await;
        if start_watch {
            let root = self.shadow.work_tree.clone();
            let excluded = self.excluded.clone();
            let stop = self.stop.clone();
            let start = move || Watcher::start(&root, &excluded, &stop);
            self.watch = WatchState::Starting(match offered {
                Some(offered) => tokio::spawn(async move {
                    match offered.await {
                        Ok(started) => started,
                        // That walk will never report: a walk of our own.
                        Err(_) => tokio::task::spawn_blocking(start)
                            .await
                            .unwrap_or(Err(WatchError::Stopped)),
                    }
                }),
                None => tokio::task::spawn_blocking(start),
            });
        }
        snapshot
    }
}

impl Drop for Checkpoints {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Checkpoints {
    /// No checkpoints (a subagent: its parent's checkpoint covers it).
    pub(super) fn disable(&mut self) {
        self.disabled = true;
    }

    /// The shadow repository and its caps, unless checkpoints are off
    /// (a rewind restores through them).
    pub(super) fn restorer(&self) -> Option<(&ShadowRepo, UndoLimits)> {
        (!self.disabled).then_some((&self.shadow, self.limits))
    }
}

impl Session {
    /// Takes this turn's checkpoint if `calls` may change files and none
    /// was taken yet.
    pub(super) async fn checkpoint_before(
        &mut self,
        calls: &[ToolCall],
    ) -> Result<(), RuntimeError> {
        let turn = self.state.turn();
        let mutating =
            calls.iter().any(|call| self.state.class_of_call(call) == ToolClass::Mutating);
        if !mutating || self.checkpoints.disabled || self.checkpoints.taken_for == turn {
            return Ok(());
        }
        self.checkpoints.taken_for = turn;
        // The jail's nested `.git` search runs alongside the checkpoint.
        self.tools.jail().start_nested_search();
        let started = Instant::now();
        let mut announced = self.announce_first_checkpoint();
        let message = format!("before turn {turn}");
        let result = {
            let taking = self.checkpoints.take(&message);
            tokio::pin!(taking);
            tokio::select! {
                result = &mut taking => result,
                () = tokio::time::sleep(SLOW_CHECKPOINT) => {
                    if !announced {
                        self.sink.emit(RuntimeEvent::Progress {
                            message: "taking the undo checkpoint of the workspace…".to_owned(),
                        });
                        announced = true;
                    }
                    taking.await
                }
            }
        };
        match result {
            Ok(snapshot) => {
                if announced {
                    self.sink.emit(RuntimeEvent::Progress {
                        message: format!(
                            "undo checkpoint taken in {:.1} s ({} new or changed files saved)",
                            started.elapsed().as_secs_f64(),
                            snapshot.saved_files
                        ),
                    });
                }
                if let Some(message) = skipped_warning(&snapshot.skipped, self.checkpoints.limits) {
                    self.sink.emit(RuntimeEvent::Warning { message });
                }
                self.log.append(SessionEvent::Checkpoint { turn, commit: snapshot.commit })?;
            }
            Err(error) => {
                self.checkpoints.disabled = true;
                // It may have stopped half-way: the next session starts afresh.
                self.checkpoints.shadow.reset_index();
                self.sink.emit(RuntimeEvent::Warning {
                    message: format!("undo is unavailable for this session: {error}"),
                });
            }
        }
        Ok(())
    }

    /// Says so before the first checkpoint of a large workspace; returns
    /// whether it did.
    fn announce_first_checkpoint(&mut self) -> bool {
        let shadow = &self.checkpoints.shadow;
        if !shadow.is_new() {
            return false;
        }
        let message = match shadow.tracked_files() {
            Some(tracked) if tracked >= LARGE_WORKSPACE_FILES => format!(
                "taking the first undo checkpoint of this workspace ({tracked} tracked files): \
                 committed files are borrowed from the project's git, only uncommitted ones are \
                 saved; later checkpoints look only at what changed"
            ),
            Some(_) => return false,
            None => format!(
                "taking the first undo checkpoint of this folder (not a git repository: every \
                 file not ignored is saved, up to {} MB)",
                self.checkpoints.limits.max_total_bytes / (1024 * 1024)
            ),
        };
        self.sink.emit(RuntimeEvent::Progress { message });
        true
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
    /// Files the undone turns changed that no checkpoint covers (ignored,
    /// or over the size caps): left as they are.
    pub not_covered: Vec<NotCovered>,
}

impl UndoReport {
    /// `restored calc.py, notes.txt (2 files) to before turn 3`: what a
    /// user checks after an undo (`keel undo`, the TUI's `/undo`), then a
    /// line for what it could not restore.
    pub fn summary(&self) -> String {
        const LISTED: usize = 10;
        let files = match self.files.len() {
            0 => "no files (nothing had changed since)".to_owned(),
            1 => format!("{} (1 file)", self.files[0]),
            n if n <= LISTED => format!("{} ({n} files)", self.files.join(", ")),
            n => format!("{}, … ({n} files)", self.files[..LISTED].join(", ")),
        };
        let mut summary = format!("restored {files} to before turn {}", self.turn);
        if let Some(line) = self::notes::not_covered_line(&self.not_covered) {
            summary.push('\n');
            summary.push_str(&line);
        }
        summary
    }
}

/// Restores the workspace to before the `turns`-th latest turn (of those
/// not undone yet) that changed files, and records it in the log.
pub async fn undo(
    keel_home: &Path,
    workspace_root: &Path,
    log_path: &Path,
    turns: usize,
    limits: UndoLimits,
) -> Result<UndoReport, UndoError> {
    // Locked first: nothing is restored under a session that is still live.
    let lock = SessionLock::acquire(log_path)?;
    let (target, next_seq) = undoable(log_path, turns)?;
    let shadow = ShadowRepo::for_workspace(keel_home, workspace_root);
    let report = restore(&shadow, workspace_root, log_path, target, limits).await?;
    let mut log = SessionLog::append_to(lock, next_seq)?;
    log.append(SessionEvent::Undo { turn: report.turn, commit: report.commit.clone() })?;
    Ok(report)
}

impl Session {
    /// [`undo`] for a running session (the TUI's `/undo`): the same
    /// restore, recorded through the session's own log writer (a second
    /// writer on the same file would repeat sequence numbers).
    pub async fn undo_turns(&mut self, turns: usize) -> Result<UndoReport, UndoError> {
        let (target, _) = undoable(self.log.path(), turns)?;
        let checkpoints = &self.checkpoints;
        let report = restore(
            &checkpoints.shadow,
            &self.workspace_root,
            self.log.path(),
            target,
            checkpoints.limits,
        )
        .await?;
        self.log.append(SessionEvent::Undo { turn: report.turn, commit: report.commit.clone() })?;
        Ok(report)
    }
}

async fn restore(
    shadow: &ShadowRepo,
    root: &Path,
    log_path: &Path,
    (turn, commit): (u32, String),
    limits: UndoLimits,
) -> Result<UndoReport, UndoError> {
    let saved = shadow.restore(&commit, limits).await?;
    let files = shadow.changed_between(&saved.commit, &commit).await?;
    let not_covered = not_covered_by(root, log_path, turn, limits)?;
    Ok(UndoReport { turn, commit, saved_as: saved.commit, files, not_covered })
}

/// The checkpoint to restore for `turns` and the log's next sequence number.
fn undoable(log_path: &Path, turns: usize) -> Result<((u32, String), u64), UndoError> {
    let mut checkpoints: Vec<(u64, u32, String)> = Vec::new();
    let mut next_seq = 0;
    for_each_record(log_path, |record| {
        next_seq = record.seq + 1;
        match record.event {
            SessionEvent::Checkpoint { turn, commit } => {
                checkpoints.push((record.seq, turn, commit));
            }
            // Undone turns, and any after them, cannot be undone again.
            SessionEvent::Undo { turn, .. } => checkpoints.retain(|(_, t, _)| *t < turn),
            // Nor the turns a rewind took the code back from.
            SessionEvent::Rewound { to_seq, restored: Some(_), .. } => {
                checkpoints.retain(|(seq, _, _)| *seq < to_seq);
            }
            _ => {}
        }
    })?;
    let mut checkpoints: Vec<(u32, String)> =
        checkpoints.into_iter().map(|(_, turn, commit)| (turn, commit)).collect();
    let available = checkpoints.len();
    let index = available.checked_sub(turns.max(1)).ok_or(UndoError::NotEnough {
        available,
        turns,
        log: log_path.to_owned(),
    })?;
    Ok((checkpoints.swap_remove(index), next_seq))
}
