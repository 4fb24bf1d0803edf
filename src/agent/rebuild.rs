//! Rebuilding a [`LoopState`] from a session log, and planning how an
//! interrupted turn is reconciled before it goes on.
//!
//! [`Rebuilder`] folds records one at a time (the caller streams them from
//! disk, so a large log never sits in memory twice) through the function
//! `step` changes the state with, [`LoopState::apply`] (`apply.rs`): the
//! conversation (from the latest compaction on), turn and step counters,
//! usage and spend, the spend limits, the approval mode and model, the
//! session's lasting approvals, subagents' spend. Beside it, the fold keeps
//! what only a log tells: the facts the runtime needs ([`LogFacts`]), the
//! workflow read back from its own lines (phase, plan, tasks, and the
//! verification gate, recomputed from the results as `step` computes it
//! live), the current turn's runaway counts (observed again from the
//! results, notes taken off), and, for the last turn only, which of its
//! calls have no result yet and how far each got ([`TurnCalls`], keyed by
//! call id, not by line order: a result enters the history after its call,
//! wherever its line is).
//!
//! [`reconcile`] turns an open turn back into effects through the ordinary
//! [`step`] path: calls that were started but have no result are answered
//! "interrupted" (saying whether a file change landed, from the hashes the
//! probe reports); calls that never started are judged again, so a pending
//! approval is asked again; then the model is asked for the next step, so a
//! response cut mid-stream is asked for again. A call the damaged log
//! cannot place ([`CallProgress::Unknown`]) is never run: the runtime
//! refuses to resume ([`Rebuilt::ambiguous`]), and `reconcile` itself
//! answers it "interrupted".
//!
//! Invariants: pure (the file probe is injected); never panics on odd logs
//! (events out of place are ignored; a record whose seq is not greater
//! than the last applied one's is skipped, with a note); a call whose result is anywhere in
//! its turn is never run again; the rebuilt history gives every call one
//! result after it (a closed turn's call whose result line is unreadable
//! gets a "lost" result; a result whose call is unreadable is left out),
//! each such repair said in [`Rebuilt::notes`].

use crate::protocol::{EventRecord, PrefixSections, SessionEvent, ToolCall, ToolMeta, ToolResult};

use super::phase::{LoopPhase, Running};
use super::runaway::{Ran, without_note};
use super::schedule::Batch;
use super::state::{LoopConfig, LoopState, Opening};
use super::step::{batches, proceed};
use super::step_io::Effect;
use super::turn_calls::{CallProgress, OpenCall, TurnCalls};
use super::workflow::WorkflowSetup;
use crate::plan::{PlanState, PlanStatus};

/// What the log says about the session besides the loop state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogFacts {
    pub session_id: String,
    pub cwd: String,
    pub provider: String,
    pub model: String,
    /// The `seq` the next appended line must carry.
    pub next_seq: u64,
    /// The last turn a workspace checkpoint was recorded for (0: none).
    pub checkpointed_turn: u32,
    /// The latest recorded request prefix: its instruction sections and
    /// the digest of its tools (`None`: a log from before prefixes were
    /// recorded).
    pub prefix: Option<(PrefixSections, String)>,
    /// The sessions this one was forked from (`forked` lines, the nearest
    /// last): their kept outputs are named in the history it copied.
    pub forked_from: Vec<String>,
}

/// A turn the log started but never ended.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenTurn {
    pub turn: u32,
    /// In call order.
    pub calls: Vec<OpenCall>,
}

/// The result of a rebuild.
#[derive(Debug, Clone, PartialEq)]
pub struct Rebuilt {
    pub state: LoopState,
    pub facts: LogFacts,
    pub open_turn: Option<OpenTurn>,
    /// The open turn had no user message yet (its prompt was never
    /// recorded), so it was dropped.
    pub dropped_empty_turn: bool,
    /// Repairs of a damaged log's history, for the user.
    pub notes: Vec<String>,
}

impl Rebuilt {
    /// Calls of the open turn that the damaged log cannot place: resuming
    /// would have to guess whether they ran.
    pub fn ambiguous(&self) -> Vec<&OpenCall> {
        let calls = self.open_turn.iter().flat_map(|open| &open.calls);
        calls.filter(|call| matches!(call.progress, CallProgress::Unknown { .. })).collect()
    }
}

/// Folds log records into a loop state.
#[derive(Debug)]
pub struct Rebuilder {
    state: LoopState,
    facts: LogFacts,
    turn_open: bool,
    turn_has_prompt: bool,
    /// The current turn's calls.
    calls: TurnCalls,
    notes: Vec<String>,
    /// The seq of the last record applied (`None`: none yet).
    last_seq: Option<u64>,
}

impl Rebuilder {
    pub fn new(config: LoopConfig) -> Self {
        Self {
            state: LoopState::open(config, Opening::default()),
            facts: LogFacts::default(),
            turn_open: false,
            turn_has_prompt: false,
            calls: TurnCalls::default(),
            notes: Vec::new(),
            last_seq: None,
        }
    }

    /// Uses a project's phase rules, `verify.commands` and detected checks
    /// (as the live session did) before any record is folded.
    pub fn configure_workflow(&mut self, setup: WorkflowSetup) {
        setup.apply(&mut self.state.workflow);
    }

    /// Whether a record with `seq` would be applied: only one whose seq is
    /// greater than the last applied one's. A log is written with rising
    /// seqs, so a lower or equal one is a copied or misplaced line (applying
    /// a repeated response would make its started calls look new, and run
    /// them again); the caller skips what it tracks of such a record too.
    pub fn admits(&self, seq: u64) -> bool {
        self.last_seq.is_none_or(|last| seq > last)
    }

    /// Applies one record; one [`Self::admits`] refuses is skipped, said in
    /// [`Rebuilt::notes`].
    pub fn apply(&mut self, record: EventRecord) {
        if let Some(last) = self.last_seq.filter(|_| !self.admits(record.seq)) {
            self.notes.push(format!(
                "a line with seq {} after seq {last} (a repeated or misplaced line) was skipped",
                record.seq
            ));
            return;
        }
        self.last_seq = Some(record.seq);
        self.facts.next_seq = self.facts.next_seq.max(record.seq + 1);
        match record.event {
            SessionEvent::SessionStarted { session_id, cwd, provider, model, mode, .. } => {
                self.facts = LogFacts { session_id, cwd, provider, model, ..self.facts.clone() };
                if let Some(mode) = mode {
                    self.state.apply(&SessionEvent::ModeChanged { mode });
                }
            }
            SessionEvent::ModelChanged { ref model, .. } => {
                // The prefix break `/model` made is this line; a resume on
                // the same model makes none.
                self.facts.model.clone_from(model);
                self.state.apply(&record.event);
            }
            SessionEvent::PromptPrefix { ref sections, ref tools_digest, .. } => {
                self.facts.prefix = Some((sections.clone(), tools_digest.clone()));
                self.state.apply(&record.event);
            }
            SessionEvent::SessionResumed { provider, model, .. } => {
                self.facts.provider = provider;
                self.facts.model = model;
                self.calls.resumed();
            }
            SessionEvent::TurnStarted { .. } => {
                self.start_turn();
                self.state.apply(&record.event);
            }
            SessionEvent::UserMessage { .. } => {
                self.turn_has_prompt = true;
                self.state.apply(&record.event);
            }
            SessionEvent::ModelResponse { ref response, .. } => {
                let state = &self.state;
                self.calls.asked(response.tool_calls().map(|call| state.real_call(call)));
                self.state.apply(&record.event);
                for (call, result, meta) in self.calls.take_matched_early() {
                    self.answer(&call, result, meta);
                }
            }
            SessionEvent::ToolCallStarted { call, .. } => self.calls.started(call.call_id),
            SessionEvent::FileBefore { call_id, path, before } => {
                self.calls.file_before(call_id, path, before);
            }
            SessionEvent::FileChanged { call_id, path, after, .. } => {
                self.calls.file_changed(call_id, path, after);
            }
            SessionEvent::ToolCallFinished { result, meta } => {
                if let Some((call, result, meta)) = self.calls.finished(result, meta) {
                    self.answer(&call, result, meta);
                }
            }
            SessionEvent::PhaseChanged { to, .. } => {
                let workflow = &mut self.state.workflow;
                workflow.flow.enter(&workflow.rules, &to);
            }
            SessionEvent::PlanUpdated { plan } => {
                let plan: Option<PlanState> = serde_json::from_value(plan).ok();
                // Only a required plan is ever logged unapproved (others are
                // approved as they are submitted): the requirement holds.
                if plan.as_ref().is_some_and(|plan| plan.status != PlanStatus::Approved) {
                    self.state.workflow.flow.plan_required = true;
                }
                self.state.workflow.flow.plan = plan;
            }
            SessionEvent::TaskUpdated { task } => {
                let list = task.get("tasks").cloned().unwrap_or_default();
                if let Ok(tasks) = serde_json::from_value(list) {
                    self.state.workflow.tasks = tasks;
                }
            }
            SessionEvent::TurnCompleted { .. } => {
                self.state.apply(&record.event);
                self.end_turn();
            }
            SessionEvent::Checkpoint { turn, .. } => self.facts.checkpointed_turn = turn,
            SessionEvent::Forked { parent_session, .. } => {
                self.facts.forked_from.push(parent_session);
            }
            SessionEvent::Rewound { items: Some(_), .. } => {
                // A turn the log left open is no longer in the conversation:
                // its calls are neither answered nor continued.
                self.turn_open = false;
                self.calls = TurnCalls::default();
                self.state.apply(&record.event);
            }
            SessionEvent::ModeChanged { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::InputQueued { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::Compaction { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::SubagentFinished { .. } => self.state.apply(&record.event),
            SessionEvent::PolicyDecision { .. }
            | SessionEvent::SubagentStarted { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::Rewound { items: None, .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::SessionEnded { .. } => {}
        }
    }

    /// A line of the log that could not be read, where it was (see
    /// [`TurnCalls`] for what damage makes a call's progress unknown).
    pub fn unreadable(&mut self, line: u64, torn: bool) {
        self.calls.unreadable(line, torn);
    }

    /// A turn starts: the last one's ledger is closed; the counters are
    /// `apply`'s.
    fn start_turn(&mut self) {
        self.end_turn();
        // As live (`step::start_turn`): a finished workflow restarts when a
        // turn starts (not on a move out of deliver within a turn, which
        // keeps the plan); its lines are written after `turn_started`.
        if self.state.workflow.finished() {
            self.state.workflow.restart();
        }
        self.turn_open = true;
        self.turn_has_prompt = false;
    }

    /// Closes the current turn's ledger. A live turn ends only once every
    /// call has its result, so a call still without one lost its result
    /// line: it gets a "lost" result, and a result whose call is unreadable
    /// is left out, so the history stays one result per call.
    fn end_turn(&mut self) {
        self.turn_open = false;
        let calls = std::mem::take(&mut self.calls);
        for open in calls.open_calls() {
            let text = "the result of this call was lost: its line in the session log is \
                        unreadable, so whether it ran is not known; check before relying on it";
            self.notes.push(format!(
                "the result of call {} ({}) is unreadable in the log; the model is told it was lost",
                open.call.call_id, open.call.name
            ));
            let result = ToolResult::error(&open.call.call_id, text);
            let meta = ToolMeta::new();
            self.state.apply(&SessionEvent::ToolCallFinished { result, meta });
        }
        self.calls = calls.leftovers();
    }

    /// Results no call claimed, said once the whole log is read.
    fn note_orphans(&mut self) {
        for result in self.calls.orphans() {
            self.notes.push(format!(
                "the log has a result for call {} but not the call (its line is unreadable); \
                 the result is left out of the conversation",
                result.call_id
            ));
        }
    }

    /// Adds `result` after its `call` to the history, observed as `step`
    /// observed it live: by the workflow, and (calls that ran or were
    /// denied) by the runaway guard, each seeing the result without the
    /// guard's own note.
    fn answer(&mut self, call: &ToolCall, result: ToolResult, meta: ToolMeta) {
        let original = without_note(&result, &meta);
        let started = self.calls.has_started(&call.call_id);
        // Live, the workflow observes only calls that ran (a batch's
        // results); one answered "not run" never reached it.
        if started {
            self.state.workflow.observe(call, &original, &meta);
        }
        let ran = if started { Some(Ran::Yes) } else { meta.is_denied().then_some(Ran::Denied) };
        if let Some(ran) = ran {
            let limits = self.state.config.limits.runaway;
            self.state.runaway.observe(&limits, self.state.step, call, &original, ran);
        }
        self.state.apply(&SessionEvent::ToolCallFinished { result, meta });
    }

    /// The rebuilt state, idle, and the open turn if there is one.
    pub fn finish(mut self) -> Rebuilt {
        self.state.phase = LoopPhase::Idle;
        let mut dropped_empty_turn = false;
        let open_turn = if !self.turn_open {
            // Pre-approvals logged for a turn that never started.
            self.state.turn_approvals = None;
            self.end_turn();
            None
        } else if !self.turn_has_prompt {
            dropped_empty_turn = true;
            self.state.turn_approvals = None;
            self.state.turn = self.state.turn.saturating_sub(1);
            self.end_turn();
            None
        } else {
            Some(OpenTurn { turn: self.state.turn, calls: self.calls.open_calls() })
        };
        self.note_orphans();
        let notes = self.notes;
        Rebuilt { state: self.state, facts: self.facts, open_turn, dropped_empty_turn, notes }
    }
}

/// The current hash of a file (`None`: missing), as the driver sees it now.
pub trait FileProbe {
    fn hash(&self, path: &str) -> Option<String>;
}

/// Continues `open` from a rebuilt, idle `state`: answers started calls
/// "interrupted", re-judges calls that never started, and then lets the
/// loop ask the model again. Returns the effects to carry out, the first
/// ones being the records of the synthetic results, then the policy
/// decisions on the calls judged again.
pub fn reconcile(state: &mut LoopState, open: &OpenTurn, probe: &dyn FileProbe) -> Vec<Effect> {
    // A call that may have run is answered, never run again.
    let (started, waiting): (Vec<&OpenCall>, Vec<&OpenCall>) =
        open.calls.iter().partition(|call| call.progress != CallProgress::NotStarted);
    let results: Vec<(ToolResult, ToolMeta)> = started
        .iter()
        .map(|open_call| {
            let text = interrupted_text(open_call, probe);
            let meta = ToolMeta::new().with("reconciled", true);
            (ToolResult::error(&open_call.call.call_id, text), meta)
        })
        .collect();
    let waiting = waiting.iter().map(|open_call| open_call.call.clone()).collect();
    let calls = started.iter().map(|open_call| open_call.call.clone()).collect();
    let mut decisions = Vec::new();
    state.pending = std::iter::once(Batch::Run { calls, concurrent: false })
        .chain(batches(state, waiting, &mut decisions))
        .collect();
    state.phase = LoopPhase::Execute(Running::default());
    let mut effects = Vec::new();
    let next = super::batch_finish::on_reconciled(state, results, &mut effects);
    proceed(state, next, &mut effects);
    // After the interrupted results, before anything is run or asked.
    let answered = effects
        .iter()
        .take_while(|e| matches!(e, Effect::Record(SessionEvent::ToolCallFinished { .. })))
        .count();
    effects.splice(answered..answered, decisions);
    effects
}

/// What the model reads for a call that was started but has no result.
fn interrupted_text(open: &OpenCall, probe: &dyn FileProbe) -> String {
    let head = "interrupted: keel stopped before this call's result was recorded.";
    if let CallProgress::Unknown { damaged_line } = open.progress {
        return format!(
            "{head} Line {damaged_line} of the session log is unreadable, so whether it ran is \
             not known; check before calling it again."
        );
    }
    if open.files.is_empty() {
        return format!(
            "{head} It may or may not have taken effect; check before calling it again."
        );
    }
    let mut text = head.to_owned();
    for note in &open.files {
        let now = probe.hash(&note.path);
        if now == note.before {
            text.push_str(&format!(
                " The change did not land: {} is as it was before the call.",
                note.path
            ));
        } else {
            text.push_str(&format!(
                " The change landed: {} changed since the call started.",
                note.path
            ));
        }
    }
    text
}
