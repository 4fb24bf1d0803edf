//! Rewind and fork, the loop's side: which user prompts the conversation in
//! force holds ([`PromptLine`], folded from the log beside the rebuild),
//! the line a rewind goes back to ([`PromptLine::target`]), the conversation
//! as it was just before a line ([`conversation_before`]) and the lines a
//! fork copies ([`fork_lines`]). The rewind itself reaches the loop as
//! [`Input::Rewind`] (handled in `outside_inputs.rs`, recorded as
//! `rewound`).
//!
//! [`Input::Rewind`]: super::Input::Rewind
//!
//! A session's prompts form a tree: a rewind does not delete the prompts
//! after the point it goes back to, it moves the conversation's tip there,
//! and the next prompt grows a new branch. [`PromptLine`] keeps every
//! prompt once with its parent and each move of the tip with the seq of
//! the line that made it, so "the conversation just before line S" is a
//! lookup, and undoing a rewind is a rewind to just before its own line
//! (`undoes`): rewinding a rewind gives back the state before it, the
//! workspace included when the rewind took the code back.
//!
//! Invariants: pure (the runtime reads the log and restores files); the
//! log is never rewritten: a rewind is one appended `rewound` line that
//! carries the conversation from there on (as `compaction` does), so a
//! rebuild needs no second pass; the turn counter, the spend, the mode and
//! the lasting approvals go on across a rewind (money spent stays spent, a
//! `checkpoint`'s turn stays unique); the workflow (phase, plan, tasks) is
//! not rewound, and since what the model was told is read from the
//! history (`announce.rs`), a change it no longer holds is announced again.

use crate::protocol::{EventRecord, Item, RewindScope, SessionEvent};

use super::rebuild::Rebuilder;
use super::state::LoopConfig;

/// A user prompt of the conversation in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// 1-based, in the conversation in force.
    pub number: u32,
    /// The turn it started (turns count on across rewinds).
    pub turn: u32,
    /// The seq of its `turn_started` line: a rewind to it goes back to
    /// just before that line.
    pub seq: u64,
    pub text: String,
}

/// A `rewound` line as the prompt line keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewindMark {
    pub seq: u64,
    pub to_seq: u64,
    pub scope: RewindScope,
    pub checkpoint_before: Option<String>,
    /// A later `rewound` line undid this one.
    pub undone: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    parent: Option<usize>,
    turn: u32,
    seq: u64,
    text: String,
}

/// Why a rewind or a fork cannot go where it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewindError {
    #[error("there is no prompt {asked}: the conversation holds {available} prompt(s)")]
    NoSuchPrompt { asked: u32, available: usize },
    #[error("there is no rewind to undo in this session")]
    NothingToUndo,
}

/// The prompts of a session's log, as a tree with a moving tip.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptLine {
    entries: Vec<Entry>,
    /// Each move of the tip, with the seq of the line it is in force
    /// from, in seq order.
    tips: Vec<(u64, Option<usize>)>,
    /// A `turn_started` waiting for its `user_message`: its seq and turn.
    opened: Option<(u64, u32)>,
    /// The seq of the last `turn_started` without its `turn_completed`.
    open_turn: Option<u64>,
    rewinds: Vec<RewindMark>,
    next_seq: u64,
}

impl PromptLine {
    /// The prompt line of `records`.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a EventRecord>) -> Self {
        let mut line = Self::default();
        for record in records {
            line.note(record);
        }
        line
    }

    /// Folds one record.
    pub fn note(&mut self, record: &EventRecord) {
        self.next_seq = self.next_seq.max(record.seq + 1);
        match &record.event {
            SessionEvent::TurnStarted { turn } => {
                self.opened = Some((record.seq, *turn));
                self.open_turn = Some(record.seq);
            }
            SessionEvent::TurnCompleted { .. } => self.open_turn = None,
            SessionEvent::UserMessage { text, .. } => {
                let Some((seq, turn)) = self.opened.take() else { return };
                let parent = self.tip();
                self.entries.push(Entry { parent, turn, seq, text: text.clone() });
                self.tips.push((seq, Some(self.entries.len() - 1)));
            }
            SessionEvent::Rewound { to_seq, scope, checkpoint_before, undoes, .. } => {
                if scope.includes_conversation() {
                    let tip = self.tip_before(*to_seq);
                    self.tips.push((record.seq, tip));
                    self.opened = None;
                    self.open_turn = None;
                }
                if let Some(undone) = undoes {
                    self.rewinds.iter_mut().filter(|r| r.seq == *undone).for_each(|r| {
                        r.undone = true;
                    });
                }
                self.rewinds.push(RewindMark {
                    seq: record.seq,
                    to_seq: *to_seq,
                    scope: *scope,
                    checkpoint_before: checkpoint_before.clone(),
                    undone: false,
                });
            }
            _ => {}
        }
    }

    fn tip(&self) -> Option<usize> {
        self.tips.last().and_then(|(_, tip)| *tip)
    }

    /// The tip in force just before the line with `seq`.
    fn tip_before(&self, seq: u64) -> Option<usize> {
        let at = self.tips.partition_point(|(from, _)| *from < seq);
        at.checked_sub(1).and_then(|index| self.tips[index].1)
    }

    fn path_from(&self, tip: Option<usize>) -> Vec<Prompt> {
        let mut chain = Vec::new();
        let mut next = tip;
        while let Some(index) = next {
            let Some(entry) = self.entries.get(index) else { break };
            chain.push(entry);
            // Parents are always earlier entries: the walk ends.
            next = entry.parent.filter(|parent| *parent < index);
        }
        chain
            .into_iter()
            .rev()
            .zip(1u32..)
            .map(|(entry, number)| Prompt {
                number,
                turn: entry.turn,
                seq: entry.seq,
                text: entry.text.clone(),
            })
            .collect()
    }

    /// The prompts of the conversation in force, oldest first.
    pub fn prompts(&self) -> Vec<Prompt> {
        self.path_from(self.tip())
    }

    /// The prompts of the conversation as it was just before line `seq`.
    pub fn prompts_before(&self, seq: u64) -> Vec<Prompt> {
        self.path_from(self.tip_before(seq))
    }

    /// Prompt `number` of the conversation in force.
    pub fn target(&self, number: u32) -> Result<Prompt, RewindError> {
        let prompts = self.prompts();
        let available = prompts.len();
        let index = usize::try_from(number).ok().and_then(|n| n.checked_sub(1));
        index
            .and_then(|index| prompts.into_iter().nth(index))
            .ok_or(RewindError::NoSuchPrompt { asked: number, available })
    }

    /// The latest `rewound` line no later line undid (an undo is one too,
    /// so undoing twice gives the rewind back).
    pub fn last_rewind(&self) -> Result<&RewindMark, RewindError> {
        self.rewinds.iter().rev().find(|mark| !mark.undone).ok_or(RewindError::NothingToUndo)
    }

    /// Where a copy of the whole conversation stops: before the last turn
    /// when it has no end (running, or cut off by a crash), else after the
    /// last line.
    pub fn end_seq(&self) -> u64 {
        self.open_turn.unwrap_or(self.next_seq)
    }
}

/// The conversation as it was just before the line with `to_seq`: the
/// rebuild of the lines before it (the items do not depend on `config`).
pub fn conversation_before(
    config: LoopConfig,
    records: impl IntoIterator<Item = EventRecord>,
    to_seq: u64,
) -> Vec<Item> {
    let mut rebuilder = Rebuilder::new(config);
    for record in records.into_iter().take_while(|record| record.seq < to_seq) {
        rebuilder.apply(record);
    }
    rebuilder.finish().state.items
}

/// Who a fork comes from and where it was cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkPoint {
    pub session_id: String,
    pub parent_session: String,
    pub parent_log: String,
    /// The parent's prompt the fork was cut before (`None`: the whole
    /// conversation).
    pub prompt: Option<u32>,
    /// The copy holds the parent's lines before this seq.
    pub parent_seq: u64,
}

/// The lines of a fork's log: the parent's `session_started` under the new
/// id, a `forked` line, then the parent's lines before the cut, in order
/// (the writer numbers them afresh; a `rewound` line's seqs are mapped to
/// the copy's). Left out: the parent's checkpoints and undos (the fork's
/// workspace history starts at the fork), a rewind's snapshots, and
/// `session_started` lines.
pub fn fork_lines(parent: &[EventRecord], point: &ForkPoint) -> Vec<SessionEvent> {
    let copied: Vec<&EventRecord> = parent
        .iter()
        .filter(|record| record.seq < point.parent_seq)
        .filter(|record| {
            !matches!(
                record.event,
                SessionEvent::SessionStarted { .. }
                    | SessionEvent::Checkpoint { .. }
                    | SessionEvent::Undo { .. }
            )
        })
        .collect();
    // The copy's line `i` gets seq `i + 2`, after `session_started` and `forked`.
    let new_seq = |old: u64| -> u64 {
        let index = copied.partition_point(|record| record.seq < old);
        index as u64 + 2
    };
    let mut lines = Vec::with_capacity(copied.len() + 2);
    let started = parent.iter().find_map(|record| match &record.event {
        SessionEvent::SessionStarted {
            cwd, provider, model, keel_version, git_head, mode, ..
        } => Some(SessionEvent::SessionStarted {
            session_id: point.session_id.clone(),
            cwd: cwd.clone(),
            provider: provider.clone(),
            model: model.clone(),
            keel_version: keel_version.clone(),
            git_head: git_head.clone(),
            mode: *mode,
            parent: None,
        }),
        _ => None,
    });
    lines.push(started.unwrap_or_else(|| SessionEvent::SessionStarted {
        session_id: point.session_id.clone(),
        cwd: String::new(),
        provider: String::new(),
        model: String::new(),
        keel_version: String::new(),
        git_head: None,
        mode: None,
        parent: None,
    }));
    lines.push(SessionEvent::Forked {
        parent_session: point.parent_session.clone(),
        parent_log: point.parent_log.clone(),
        prompt: point.prompt,
        parent_seq: point.parent_seq,
    });
    lines.extend(copied.iter().map(|record| match &record.event {
        SessionEvent::Rewound { to_prompt, to_seq, scope, items, kept, undoes, .. } => {
            SessionEvent::Rewound {
                to_prompt: *to_prompt,
                to_seq: new_seq(*to_seq),
                scope: *scope,
                items: items.clone(),
                checkpoint_before: None,
                restored: None,
                kept: kept.clone(),
                undoes: undoes.map(new_seq),
            }
        }
        event => event.clone(),
    }));
    lines
}

#[cfg(test)]
#[path = "rewind_properties.rs"]
mod properties;
