//! A session log folded into a [`Transcript`]: the turns in order, each
//! with its prompt, the model's answers and reasoning, every tool call
//! with policy's decision, the user's approval, the files it changed and
//! its result, and what else happened on the way (mode and model
//! changes, compactions, undo, errors, subagents); the session's usage
//! and cost. This is `keel export --format json` (its schema:
//! `schemas/export.schema.json`, from [`Transcript`]'s `JsonSchema`).
//!
//! Invariants: pure, one pass over the records, never fails on what a
//! log holds (a result without its call becomes a call of its own, a
//! record before any prompt a turn 0); every string passes the caller's
//! masking in [`super::mask_transcript`] before anything is rendered.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::display::{call_summary, outcome};
use crate::protocol::{EventRecord, Item, ReasoningItem, SessionEvent, ToolCall, Usage};

/// The export's format version; a change that removes or renames a field
/// raises it.
pub const EXPORT_SCHEMA_VERSION: u32 = 1;

/// A whole session, as exported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Transcript {
    /// The export format's version (1); raised when a field is removed
    /// or renamed.
    pub schema_version: u32,
    pub session_id: String,
    /// The wire protocol (`openai`, `openai-chat`, `anthropic`).
    pub provider: String,
    /// The model the session started with (changes are notes).
    pub model: String,
    /// The folder the session worked in.
    pub cwd: String,
    pub keel_version: String,
    /// The first line's timestamp (RFC 3339, UTC).
    pub started_at: String,
    /// The session that started this one, for a subagent's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    pub turns: Vec<Turn>,
    /// Everything the session's model requests used (its subagents' own
    /// logs hold theirs; their cost is in `cost_usd`).
    pub usage: TokenUsage,
    /// What the session cost in US dollars, subagents included; none when
    /// a response's price was unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// One user turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Turn {
    /// The turn's number in the log (0: what came before the first).
    pub number: u32,
    /// The user's prompt (empty for turn 0).
    pub prompt: String,
    pub started_at: String,
    pub entries: Vec<Entry>,
    /// `completed`, `failed`, `interrupted`, …; none for a turn the log
    /// does not see end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<TokenUsage>,
}

/// Tokens, as the servers reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TokenUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cached_input_tokens: u64,
    pub reasoning_tokens: u64,
}

impl TokenUsage {
    fn add(&mut self, usage: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(usage.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(usage.output_tokens);
        self.cached_input_tokens =
            self.cached_input_tokens.saturating_add(usage.cached_input_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(usage.reasoning_tokens);
    }

    fn of(usage: &Usage) -> Self {
        let mut total = Self::default();
        total.add(usage);
        total
    }
}

/// One thing in a turn, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Entry {
    /// Text the model showed.
    Answer { text: String },
    /// Reasoning the model let keel see (summaries, thinking).
    Reasoning { text: String },
    /// A tool call and everything about it.
    ToolCall(Box<CallEntry>),
    /// Something else that happened (`what`: `mode`, `model`, `phase`,
    /// `compaction`, `undo`, `error`, `subagent`, `resume`, `budget`).
    Note { what: String, text: String },
}

/// A tool call: what was asked, how it was judged and what came back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CallEntry {
    pub call_id: String,
    pub name: String,
    /// One line: the command, the path or the pattern.
    pub summary: String,
    /// The arguments as the model sent them (a string when not JSON).
    pub arguments: Value,
    /// Policy's decision: `allow`, `prompt` or `forbidden`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The user's answer, when asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalEntry>,
    /// Files the call changed, from the session's folder (`.`: a
    /// command changed something in it, seen by the folder's fingerprint).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_changed: Vec<String>,
    /// None: the log has no result (the session died while it ran).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<CallResult>,
}

/// The user's answer on a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalEntry {
    pub approved: bool,
    /// `once`, `session` or `always`.
    pub scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a call returned to the model.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CallResult {
    pub output: String,
    pub is_error: bool,
    /// How it ended when not plainly (`exit 1`, `timed out after …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// Folds `records` into a transcript.
pub fn transcript(records: &[EventRecord]) -> Transcript {
    let mut fold = Fold::default();
    for record in records {
        fold.record(record);
    }
    fold.finish()
}

#[derive(Default)]
struct Fold {
    out: Transcript,
    /// Where each call's entry is: (turn index, entry index).
    calls: HashMap<String, (usize, usize)>,
    cost: f64,
    cost_known: bool,
    cost_missing: bool,
}

impl Fold {
    fn record(&mut self, record: &EventRecord) {
        if self.out.started_at.is_empty() {
            self.out.started_at = record.ts.clone();
        }
        match &record.event {
            SessionEvent::SessionStarted {
                session_id,
                cwd,
                provider,
                model,
                keel_version,
                parent,
                ..
            } => {
                if self.out.session_id.is_empty() {
                    self.out.session_id = session_id.clone();
                    self.out.cwd = cwd.clone();
                    self.out.provider = provider.clone();
                    self.out.model = model.clone();
                    self.out.keel_version = keel_version.clone();
                    self.out.parent_session = parent.as_ref().map(|link| link.session_id.clone());
                }
            }
            SessionEvent::SessionResumed { model, keel_version, .. } => {
                self.note("resume", format!("resumed with {model} (keel {keel_version})"));
            }
            SessionEvent::TurnStarted { turn } => self.out.turns.push(Turn {
                number: *turn,
                started_at: record.ts.clone(),
                ..Turn::default()
            }),
            SessionEvent::UserMessage { text, .. } => self.prompt(text, &record.ts),
            SessionEvent::ModelResponse { response, cost_usd, .. } => {
                self.out.usage.add(&response.usage);
                self.charge(*cost_usd);
                for item in &response.items {
                    self.item(item);
                }
            }
            SessionEvent::PolicyDecision { call_id, decision, reason, .. } => {
                if let Some(call) = self.call_mut(call_id) {
                    call.decision = Some(decision.clone());
                    call.reason = reason.clone();
                }
            }
            SessionEvent::Approval { call_id, approved, scope, note, .. } => {
                let scope = serde_json::to_value(scope)
                    .ok()
                    .and_then(|value| value.as_str().map(str::to_owned))
                    .unwrap_or_default();
                if let Some(call) = self.call_mut(call_id) {
                    call.approval =
                        Some(ApprovalEntry { approved: *approved, scope, note: note.clone() });
                }
            }
            SessionEvent::ToolCallStarted { call, .. } => {
                if !self.calls.contains_key(&call.call_id) {
                    self.call(call);
                }
            }
            SessionEvent::FileChanged { call_id, path, before, after } if before != after => {
                let shown = relative(path, &self.out.cwd);
                if let Some(call) = self.call_mut(call_id) {
                    if !call.files_changed.contains(&shown) {
                        call.files_changed.push(shown);
                    }
                }
            }
            // Hashed and unchanged.
            SessionEvent::FileChanged { .. } => {}
            SessionEvent::ToolCallFinished { result, meta } => {
                if !self.calls.contains_key(&result.call_id) {
                    let call = ToolCall::new(&result.call_id, "unknown", "{}");
                    self.call(&call);
                }
                let status = outcome(result.is_error, meta).status;
                if let Some(call) = self.call_mut(&result.call_id) {
                    call.result = Some(CallResult {
                        output: result.output.clone(),
                        is_error: result.is_error,
                        status,
                    });
                }
            }
            SessionEvent::TurnCompleted { turn, outcome, usage } => {
                let last = self.turn();
                if last.number == *turn || last.outcome.is_none() {
                    last.outcome = Some(outcome.as_str().to_owned());
                    last.usage = Some(TokenUsage::of(usage));
                }
            }
            SessionEvent::Compaction {
                reason,
                method,
                tokens_before,
                tokens_after,
                usage,
                cost_usd,
                ..
            } => {
                if let Some(usage) = usage {
                    self.out.usage.add(usage);
                    self.charge(*cost_usd);
                }
                self.note(
                    "compaction",
                    format!("history compacted ({reason}, {method}): {tokens_before} → {tokens_after} tokens"),
                );
            }
            SessionEvent::ModeChanged { mode } => {
                self.note("mode", format!("approval mode: {}", mode.as_str()));
            }
            SessionEvent::Rewound { to_prompt, scope, .. } => {
                let scope = serde_json::to_value(scope)
                    .ok()
                    .and_then(|value| value.as_str().map(str::to_owned))
                    .unwrap_or_default();
                self.note("rewind", format!("rewound to before prompt {to_prompt} ({scope})"));
            }
            // Shown where it was delivered, as its `user_message`.
            SessionEvent::InputQueued { .. } => {}
            SessionEvent::AlwaysRemoved { prefix, path, tool, .. } => {
                let what = match (prefix, path, tool) {
                    (Some(prefix), _, _) => prefix.join(" "),
                    (None, Some(path), _) => format!("write {path}"),
                    (None, None, Some(tool)) => format!("tool {tool}"),
                    (None, None, None) => String::new(),
                };
                self.note("permissions", format!("removed the \"always\" answer `{what}`"));
            }
            SessionEvent::Forked { parent_session, prompt, .. } => {
                let point = prompt.map_or_else(
                    || "its whole conversation".to_owned(),
                    |prompt| format!("before its prompt {prompt}"),
                );
                self.note("fork", format!("forked from session {parent_session}, {point}"));
            }
            SessionEvent::ModelChanged { model, .. } => {
                self.note("model", format!("model: {model}"))
            }
            SessionEvent::PhaseChanged { from, to } => {
                self.note("phase", format!("phase: {from} → {to}"))
            }
            SessionEvent::Undo { turn, .. } => {
                self.note("undo", format!("workspace restored to before turn {turn}"));
            }
            SessionEvent::BudgetExceeded { limit, .. } => {
                self.note("budget", format!("stopped at the {limit} limit"));
            }
            SessionEvent::ModelError { message } | SessionEvent::Error { message } => {
                self.note("error", message.clone());
            }
            SessionEvent::InternalError { name, source, message, .. } => {
                self.note("error", format!("internal error in the {name} {source}: {message}"));
            }
            SessionEvent::SubagentStarted { agent, description, session_id, .. } => {
                self.note("subagent", format!("{agent} · {description} (session {session_id})"));
            }
            SessionEvent::SubagentFinished { session_id, outcome, cost_usd, .. } => {
                self.charge(*cost_usd);
                self.note("subagent", format!("session {session_id}: {}", outcome.as_str()));
            }
            SessionEvent::PromptPrefix { .. }
            | SessionEvent::ContextUpdated { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::SessionEnded { .. }
            | SessionEvent::McpServerStatus { .. }
            | SessionEvent::ToolsChanged { .. } => {}
        }
    }

    fn finish(mut self) -> Transcript {
        self.out.schema_version = EXPORT_SCHEMA_VERSION;
        self.out.cost_usd = (self.cost_known && !self.cost_missing).then_some(self.cost);
        self.out
    }

    /// A response's or a child's cost; one unknown makes the total unknown.
    fn charge(&mut self, cost: Option<f64>) {
        match cost {
            Some(cost) => {
                self.cost += cost;
                self.cost_known = true;
            }
            None => self.cost_missing = true,
        }
    }

    fn prompt(&mut self, text: &str, ts: &str) {
        match self.out.turns.last_mut() {
            Some(turn) if turn.prompt.is_empty() && turn.entries.is_empty() && turn.number > 0 => {
                turn.prompt = text.to_owned();
            }
            last => {
                let number = last.map_or(1, |turn| turn.number + 1);
                let started_at = ts.to_owned();
                self.out.turns.push(Turn {
                    number,
                    prompt: text.to_owned(),
                    started_at,
                    ..Turn::default()
                });
            }
        }
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Assistant { text } if !text.trim().is_empty() => {
                self.push(Entry::Answer { text: text.clone() });
            }
            Item::Reasoning(reasoning) => {
                let text = reasoning_text(reasoning);
                if !text.trim().is_empty() {
                    self.push(Entry::Reasoning { text });
                }
            }
            Item::ToolCall(call) => self.call(call),
            Item::Assistant { .. }
            | Item::User { .. }
            | Item::ToolResult(_)
            | Item::Context { .. } => {}
        }
    }

    fn call(&mut self, call: &ToolCall) {
        let arguments = serde_json::from_str(&call.arguments)
            .unwrap_or_else(|_| Value::String(call.arguments.clone()));
        let entry = CallEntry {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            summary: call_summary(call),
            arguments,
            ..CallEntry::default()
        };
        let at = self.push(Entry::ToolCall(Box::new(entry)));
        self.calls.insert(call.call_id.clone(), at);
    }

    fn call_mut(&mut self, call_id: &str) -> Option<&mut CallEntry> {
        let (turn, entry) = *self.calls.get(call_id)?;
        match self.out.turns.get_mut(turn)?.entries.get_mut(entry)? {
            Entry::ToolCall(call) => Some(call.as_mut()),
            Entry::Answer { .. } | Entry::Reasoning { .. } | Entry::Note { .. } => None,
        }
    }

    fn note(&mut self, what: &str, text: String) {
        self.push(Entry::Note { what: what.to_owned(), text });
    }

    /// Adds `entry` to the current turn; where it is.
    fn push(&mut self, entry: Entry) -> (usize, usize) {
        let turn = self.turn();
        turn.entries.push(entry);
        let entry = turn.entries.len() - 1;
        (self.out.turns.len() - 1, entry)
    }

    /// The current turn (turn 0 before the first prompt).
    fn turn(&mut self) -> &mut Turn {
        if self.out.turns.is_empty() {
            self.out.turns.push(Turn::default());
        }
        let last = self.out.turns.len() - 1;
        &mut self.out.turns[last]
    }
}

/// `path` from the session's folder (`.` for the folder itself: a
/// command's change of the workspace, seen by its fingerprint).
fn relative(path: &str, cwd: &str) -> String {
    if path == cwd {
        return ".".to_owned();
    }
    let cwd = cwd.trim_end_matches('/');
    match path.strip_prefix(cwd).and_then(|rest| rest.strip_prefix('/')) {
        Some(rest) if !cwd.is_empty() => rest.to_owned(),
        Some(_) | None => path.to_owned(),
    }
}

/// The readable text of a reasoning item (none for opaque ones).
pub(super) fn reasoning_text(reasoning: &ReasoningItem) -> String {
    match reasoning {
        ReasoningItem::OpenAi { summary, content, .. } => {
            if summary.is_empty() {
                content.join("\n")
            } else {
                summary.join("\n")
            }
        }
        ReasoningItem::AnthropicThinking { thinking, .. } => thinking.clone(),
        ReasoningItem::Chat { text, .. } => text.clone(),
        ReasoningItem::AnthropicRedacted { .. } => String::new(),
    }
}
