//! The ledger of one turn's tool calls while a log is folded back
//! ([`super::Rebuilder`]): which calls the turn's responses asked for, which
//! have a result, which started, what files they were about to change, and
//! where the log is damaged.
//!
//! Keyed by call id, not by line order: a result counts wherever
//! it is in the turn, even before its call's `model_response` line (a log
//! damaged out of order), and a `file_before`/`file_changed` line proves a
//! call started even when its `tool_call_started` line is unreadable. A
//! provider may reuse an id within a turn, so ids are counted: the n-th
//! result of an id answers its n-th call.
//!
//! A call without result or start is "not started" only when no unreadable
//! line follows its response (that line could have been its start or its
//! result): then its progress is unknown, and the resume refuses to guess.
//! A torn last line is not such damage (the writer died while writing it,
//! so nothing after it ran), nor is a line a later resume already read past
//! (it is followed by that resume's `session_resumed`).
//!
//! Invariants: pure; never panics on any order of lines; linear in the
//! turn's lines (calls are indexed by id, a turn may hold thousands).

use std::collections::{BTreeMap, HashMap};

use crate::protocol::{ToolCall, ToolMeta, ToolResult};

/// One turn's calls, as far as the log tells.
#[derive(Debug, Default)]
pub(super) struct TurnCalls {
    /// Every call of the turn's responses, in response order.
    calls: Vec<ToolCall>,
    /// Where each id's calls are in `calls`.
    by_id: HashMap<String, Vec<usize>>,
    /// Results matched to a call, by id.
    answered: BTreeMap<String, usize>,
    /// Results read before any call of their id: held until the call shows
    /// up, so the history keeps each result after its call.
    early: Vec<(ToolResult, ToolMeta)>,
    started: BTreeMap<String, usize>,
    files: BTreeMap<String, Vec<FileNote>>,
    /// Unreadable lines not read past by a later resume: their line number
    /// and how many calls the turn had asked for when they were written.
    damage: Vec<(u64, usize)>,
}

impl TurnCalls {
    /// The calls of one response.
    pub(super) fn asked(&mut self, calls: impl Iterator<Item = ToolCall>) {
        for call in calls {
            self.by_id.entry(call.call_id.clone()).or_default().push(self.calls.len());
            self.calls.push(call);
        }
    }

    /// Results that were waiting for the calls of the latest response, now
    /// matched: to be added to the history after the response.
    pub(super) fn take_matched_early(&mut self) -> Vec<(ToolCall, ToolResult, ToolMeta)> {
        let early = std::mem::take(&mut self.early);
        let mut matched = Vec::new();
        for (result, meta) in early {
            match self.answer(&result.call_id) {
                Some(call) => matched.push((call, result, meta)),
                None => self.early.push((result, meta)),
            }
        }
        matched
    }

    /// A result line: its call if one is waiting for it (the result goes
    /// into the history now), else `None` (held until its call shows up).
    pub(super) fn finished(
        &mut self,
        result: ToolResult,
        meta: ToolMeta,
    ) -> Option<(ToolCall, ToolResult, ToolMeta)> {
        match self.answer(&result.call_id) {
            Some(call) => Some((call, result, meta)),
            None => {
                self.early.push((result, meta));
                None
            }
        }
    }

    /// Counts one more result for `call_id`, if a call of that id is still
    /// waiting for one; returns that call.
    fn answer(&mut self, call_id: &str) -> Option<ToolCall> {
        let positions = self.by_id.get(call_id)?;
        let answered = self.answered.entry(call_id.to_owned()).or_default();
        let position = *positions.get(*answered)?;
        *answered += 1;
        self.calls.get(position).cloned()
    }

    /// Whether a call of this id is known to have started (it ran, as far
    /// as the runaway guard is concerned).
    pub(super) fn has_started(&self, call_id: &str) -> bool {
        self.started.contains_key(call_id) || self.files.contains_key(call_id)
    }

    pub(super) fn started(&mut self, call_id: String) {
        *self.started.entry(call_id).or_default() += 1;
    }

    pub(super) fn file_before(&mut self, call_id: String, path: String, before: Option<String>) {
        self.files.entry(call_id).or_default().push(FileNote { path, before, after: None });
    }

    pub(super) fn file_changed(&mut self, call_id: String, path: String, after: Option<String>) {
        let notes = self.files.entry(call_id).or_default();
        match notes.iter_mut().find(|note| note.path == path) {
            Some(note) => note.after = Some(after),
            // Its `file_before` is unreadable: the change ran all the same.
            None => notes.push(FileNote { path, before: None, after: Some(after) }),
        }
    }

    /// An unreadable line in this turn (a torn last line is not damage).
    pub(super) fn unreadable(&mut self, line: u64, torn: bool) {
        if !torn {
            self.damage.push((line, self.calls.len()));
        }
    }

    /// A resume read the log up to here and recorded what it decided after
    /// this point: the damage before it is settled.
    pub(super) fn resumed(&mut self) {
        self.damage.clear();
    }

    /// Calls without a result, in call order, with how far each got.
    pub(super) fn open_calls(&self) -> Vec<OpenCall> {
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        let mut open = Vec::new();
        for (index, call) in self.calls.iter().enumerate() {
            let nth = seen.entry(call.call_id.as_str()).or_default();
            *nth += 1;
            if *nth <= self.answered.get(&call.call_id).copied().unwrap_or(0) {
                continue;
            }
            let files = self.files.get(&call.call_id).cloned().unwrap_or_default();
            let started = *nth <= self.started.get(&call.call_id).copied().unwrap_or(0);
            let progress = if started || !files.is_empty() {
                CallProgress::Started
            } else {
                match self.damage.iter().find(|(_, calls_then)| *calls_then > index) {
                    Some((line, _)) => CallProgress::Unknown { damaged_line: *line },
                    None => CallProgress::NotStarted,
                }
            };
            open.push(OpenCall { call: call.clone(), progress, files });
        }
        open
    }

    /// Results whose call never showed up (its response line is
    /// unreadable): they cannot join the history without their call.
    pub(super) fn orphans(&self) -> impl Iterator<Item = &ToolResult> {
        self.early.iter().map(|(result, _)| result)
    }

    /// What this closed turn knows about calls it never asked for (their
    /// response is unreadable or out of place in a later turn): results,
    /// starts and file notes, carried into the next turn's ledger so a
    /// call of that id later in the log is answered by them, never run.
    pub(super) fn leftovers(self) -> Self {
        let asked = |id: &String| self.by_id.contains_key(id);
        let started = self.started.iter().filter(|(id, _)| !asked(id));
        let files = self.files.iter().filter(|(id, _)| !asked(id));
        Self {
            started: started.map(|(id, n)| (id.clone(), *n)).collect(),
            files: files.map(|(id, notes)| (id.clone(), notes.clone())).collect(),
            early: self.early,
            ..Self::default()
        }
    }
}

/// A file a started call was about to change, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct FileNote {
    pub path: String,
    pub before: Option<String>,
    /// Recorded after the call ran, if it got that far.
    pub after: Option<Option<String>>,
}

/// How far a call without a result got, as far as the log tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallProgress {
    /// Nothing says it started, and no damage could hide it: it never ran.
    NotStarted,
    /// `tool_call_started` (or one of its file lines) was recorded: it may
    /// have run.
    Started,
    /// An unreadable line after its response could have been its start or
    /// its result: whether it ran cannot be told.
    Unknown { damaged_line: u64 },
}

/// A call of the open turn that has no result in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenCall {
    pub call: ToolCall,
    pub progress: CallProgress,
    pub files: Vec<FileNote>,
}
