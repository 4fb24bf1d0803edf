//! The spend ledger: what a session's money and tokens went on, from its
//! log alone (`keel cost`, the TUI's `/cost`).
//!
//! A fold over the log's records, mirroring what `LoopState::apply`
//! charges, so its totals are the `result` line's: every `model_response`
//! (its usage and `cost_usd`; a line without a cost at keel's table
//! prices), every `compaction` summary request, and each child session's
//! `subagent_finished` once per child. Records whose seq is not greater
//! than the last one folded are skipped, as the rebuild does.
//!
//! Each model request is split across the parts it carried
//! ([`Source`]): the prefix (instructions and keel's tool specs), keel's
//! context notes, the history (the user's messages, the model's text,
//! reasoning), each built-in tool (its calls and results as re-sent),
//! each MCP server (its tools' specs, calls and results), and the output.
//! What a request carried is the history as the log rebuilds it before
//! the response (`context_updated`, `user_message`, the responses, tool
//! results; a `compaction` replaces it). The rule that splits a request's
//! reported usage and cost over those parts is in [`split`]: exact where
//! the provider reports it (input, cache reads and writes, output, the
//! logged cost), estimated where it does not (the share of each part).
//! Summary requests are the `compaction` part; a subagent's whole spend is
//! its own part, with its own ledger when its log was read.
//!
//! Responses whose server reported no usage carry keel's estimate
//! (`estimated_tokens`, `estimated_cost_usd`): they are counted apart,
//! marked estimated, never in the parts (the `result` line leaves them
//! out of `usage` and `cost_usd` too).
//!
//! Invariants: pure (the caller reads the logs, the child logs included:
//! [`Ledger::child_logs`], [`Ledger::attach_child`]); never panics on a
//! log's content.

mod lines;
pub mod split;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::context::Pricing;
use crate::context::tokens;
use crate::protocol::{EventRecord, Item, SessionEvent, Usage, mcp_server_of};

pub use split::{Priced, Share};

/// Bytes per token assumed for a tool spec (JSON schemas), whose text the
/// log does not hold; only its size (`tool_bytes`).
pub const SPEC_BYTES_PER_TOKEN: u64 = 4;

/// Where a request's tokens went.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// The instructions and keel's own tool specs.
    Prefix,
    /// keel's context notes (environment, mode, phase, AGENTS.md again…).
    Context,
    /// The user's messages and the model's text and reasoning.
    History,
    /// A built-in tool: its calls' arguments and results as re-sent.
    Tool { name: String },
    /// An MCP server: its tools' specs, calls and results.
    Mcp { server: String },
    /// What the model wrote (output tokens, reasoning included).
    Output,
    /// The summary requests of compactions.
    Compaction,
    /// A subagent's whole spend.
    Subagent { session_id: String, agent: String },
}

impl Source {
    /// The part of a request that carries a call of `tool`.
    fn of_tool(tool: &str) -> Source {
        match mcp_server_of(tool) {
            Some(server) => Source::Mcp { server: server.to_owned() },
            None => Source::Tool { name: tool.to_owned() },
        }
    }
}

/// What one request was: a model response or a compaction's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestKind {
    Response,
    Compaction,
}

/// One model request and where its spend went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Request {
    pub seq: u64,
    pub turn: u32,
    pub step: u32,
    pub kind: RequestKind,
    pub model: String,
    /// As the provider reported it.
    pub usage: Usage,
    /// As logged (a line without one: at the table's prices).
    pub cost_usd: Option<f64>,
    pub priced: Priced,
    /// keel's estimate for a response whose server reported no usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimated_cost_usd: Option<f64>,
    pub parts: Vec<Part>,
}

/// One part's share of a request, or of the session.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Part {
    pub source: Source,
    /// Its display name (`mcp docs`, `tool read_file`).
    pub label: String,
    #[serde(flatten)]
    pub share: Share,
}

/// A subagent's session as its parent counts it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Child {
    pub session_id: String,
    pub agent: String,
    pub call_id: String,
    pub log_path: String,
    /// As the parent's `subagent_finished` line says (its own children
    /// included).
    pub usage: Usage,
    pub cost_usd: Option<f64>,
    /// Its own breakdown, when its log was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<Box<Ledger>>,
}

/// The prices a session's requests were split at, per model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPrices {
    pub model: String,
    /// US dollars per million tokens, from keel's table (`context::models`);
    /// none for a model it does not know.
    pub input: Option<f64>,
    pub cached_input: Option<f64>,
    pub cache_write: Option<f64>,
    pub output: Option<f64>,
}

/// A session's spend, by request and by part.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Ledger {
    pub session_id: String,
    pub requests: Vec<Request>,
    pub children: Vec<Child>,
    /// The whole session's parts, most expensive first.
    pub parts: Vec<Part>,
    /// Every request's usage and every child's: the `result` line's.
    pub usage: Usage,
    /// What they cost; none when any cost is unknown.
    pub cost_usd: Option<f64>,
    /// keel's estimates for responses without usage (children's included).
    pub estimated_tokens: u64,
    pub estimated_cost_usd: f64,
    pub prices: Vec<ModelPrices>,
}

impl Ledger {
    /// The ledger of the records of one log, in log order.
    pub fn from_records<'a>(records: impl IntoIterator<Item = &'a EventRecord>) -> Ledger {
        let mut fold = Fold::default();
        for record in records {
            if fold.last_seq.is_some_and(|last| record.seq <= last) {
                continue;
            }
            fold.last_seq = Some(record.seq);
            fold.record(record.seq, &record.event);
        }
        fold.finish()
    }

    /// The children whose logs the caller may read: (session id, log path).
    pub fn child_logs(&self) -> Vec<(String, String)> {
        let children = self.children.iter();
        children.map(|child| (child.session_id.clone(), child.log_path.clone())).collect()
    }

    /// Gives child `session_id` its own breakdown (from its log).
    pub fn attach_child(&mut self, session_id: &str, ledger: Ledger) {
        if let Some(child) = self.children.iter_mut().find(|child| child.session_id == session_id) {
            child.ledger = Some(Box::new(ledger));
        }
    }

    /// The session's shares summed over its parts (equal to `usage` in
    /// tokens and to `cost_usd` in dollars).
    pub fn total(&self) -> Share {
        let mut total = Share::default();
        for part in &self.parts {
            total.add(&part.share);
        }
        total
    }
}

/// One entry of the history as the fold rebuilds it.
#[derive(Debug, Clone)]
struct Carried {
    source: Source,
    tokens: u64,
}

#[derive(Debug, Default)]
struct Fold {
    last_seq: Option<u64>,
    session_id: String,
    model: String,
    turn: u32,
    instructions: u64,
    /// Estimated tokens of each offered tool's spec, by name.
    tools: BTreeMap<String, u64>,
    history: Vec<Carried>,
    /// Each call's tool, by call id.
    calls: HashMap<String, String>,
    started: HashMap<String, (String, String, String)>,
    counted_children: BTreeSet<String>,
    models: BTreeSet<String>,
    ledger: Ledger,
    unknown_cost: bool,
}

impl Fold {
    fn record(&mut self, seq: u64, event: &SessionEvent) {
        match event {
            SessionEvent::SessionStarted { session_id, model, .. } => {
                self.session_id.clone_from(session_id);
                self.model.clone_from(model);
            }
            SessionEvent::SessionResumed { model, .. }
            | SessionEvent::ModelChanged { model, .. } => {
                self.model.clone_from(model);
            }
            SessionEvent::PromptPrefix { sections, tool_bytes, .. } => {
                self.instructions = tokens::count(&sections.text());
                if !tool_bytes.is_empty() {
                    self.tools = spec_tokens(tool_bytes);
                }
            }
            SessionEvent::ToolsChanged { added, removed, tool_bytes, .. } => {
                for name in removed.iter().chain(added) {
                    self.tools.remove(name);
                }
                self.tools.extend(spec_tokens(tool_bytes));
            }
            SessionEvent::ContextUpdated { parts } => {
                let text = crate::prompts::context_message(parts);
                let tokens = tokens::count(&text) + tokens::PER_ITEM_OVERHEAD;
                self.history.push(Carried { source: Source::Context, tokens });
            }
            SessionEvent::UserMessage { text, images, .. } => {
                self.carry(&Item::User { text: text.clone(), images: images.clone() });
            }
            SessionEvent::TurnStarted { turn } => self.turn = *turn,
            SessionEvent::ToolCallStarted { call, .. } => {
                self.calls.insert(call.call_id.clone(), call.name.clone());
            }
            SessionEvent::ModelResponse {
                step,
                response,
                cost_usd,
                estimated_tokens,
                estimated_cost_usd,
            } => {
                let segments = self.segments();
                let pricing = Pricing::for_model(&self.model);
                let logged = cost_usd.or_else(|| pricing.cost_usd(&response.usage));
                let (parts, priced) = split::split(&segments, &response.usage, &pricing, logged);
                self.push_request(Request {
                    seq,
                    turn: self.turn,
                    step: *step,
                    kind: RequestKind::Response,
                    model: self.model.clone(),
                    usage: response.usage,
                    cost_usd: logged,
                    priced,
                    estimated_tokens: *estimated_tokens,
                    estimated_cost_usd: *estimated_cost_usd,
                    parts: labelled(parts),
                });
                for item in &response.items {
                    self.carry(item);
                }
            }
            SessionEvent::ToolCallFinished { result, .. } => {
                self.carry(&Item::ToolResult(result.clone()));
            }
            SessionEvent::Compaction { items, usage, cost_usd, .. } => {
                if let Some(usage) = usage {
                    self.charge_compaction(seq, usage, *cost_usd);
                }
                self.history.clear();
                for item in items {
                    self.carry(item);
                }
            }
            // A rewound conversation is what later requests carry; spend
            // is not rewound.
            SessionEvent::Rewound { items: Some(items), .. } => {
                self.history.clear();
                for item in items {
                    self.carry(item);
                }
            }
            SessionEvent::Rewound { items: None, .. }
            | SessionEvent::Forked { .. }
            | SessionEvent::InputQueued { .. } => {}
            SessionEvent::SubagentStarted { call_id, session_id, log_path, agent, .. } => {
                let link = (call_id.clone(), log_path.clone(), agent.clone());
                self.started.insert(session_id.clone(), link);
            }
            SessionEvent::SubagentFinished {
                call_id,
                session_id,
                usage,
                cost_usd,
                estimated_tokens,
                estimated_cost_usd,
                ..
            } => {
                if !self.counted_children.insert(session_id.clone()) {
                    return;
                }
                let (_, log_path, agent) =
                    self.started.get(session_id).cloned().unwrap_or_default();
                self.ledger.usage.add(usage);
                self.add_cost(*cost_usd);
                self.ledger.estimated_tokens += estimated_tokens.unwrap_or(0);
                self.ledger.estimated_cost_usd += estimated_cost_usd.unwrap_or(0.0);
                self.ledger.children.push(Child {
                    session_id: session_id.clone(),
                    agent,
                    call_id: call_id.clone(),
                    log_path,
                    usage: *usage,
                    cost_usd: *cost_usd,
                    ledger: None,
                });
            }
            SessionEvent::PolicyDecision { .. }
            | SessionEvent::Approval { .. }
            | SessionEvent::AlwaysRemoved { .. }
            | SessionEvent::FileBefore { .. }
            | SessionEvent::FileChanged { .. }
            | SessionEvent::Checkpoint { .. }
            | SessionEvent::Undo { .. }
            | SessionEvent::ModeChanged { .. }
            | SessionEvent::TurnScope { .. }
            | SessionEvent::PhaseChanged { .. }
            | SessionEvent::PlanUpdated { .. }
            | SessionEvent::TaskUpdated { .. }
            | SessionEvent::LimitsSet { .. }
            | SessionEvent::BudgetExceeded { .. }
            | SessionEvent::ModelError { .. }
            | SessionEvent::Error { .. }
            | SessionEvent::InternalError { .. }
            | SessionEvent::NetworkAccess { .. }
            | SessionEvent::HookRan { .. }
            | SessionEvent::TurnCompleted { .. }
            | SessionEvent::SessionEnded { .. }
            | SessionEvent::McpServerStatus { .. } => {}
        }
    }

    /// Adds an item to the history, under the part that carries it.
    fn carry(&mut self, item: &Item) {
        let source = match item {
            Item::ToolCall(call) => {
                self.calls.insert(call.call_id.clone(), call.name.clone());
                Source::of_tool(&call.name)
            }
            Item::ToolResult(result) => match self.calls.get(&result.call_id) {
                Some(tool) => Source::of_tool(tool),
                None => Source::History,
            },
            Item::Context { .. } => Source::Context,
            Item::User { .. } | Item::Assistant { .. } | Item::Reasoning(_) => Source::History,
        };
        self.history.push(Carried { source, tokens: tokens::estimate_item(item) });
    }

    /// The parts of the next request with their weights, in request
    /// order: tools, instructions, history.
    fn segments(&self) -> Vec<(Source, u64)> {
        let tools = self.tools.iter().map(|(name, tokens)| {
            let source = match mcp_server_of(name) {
                Some(_) => Source::of_tool(name),
                None => Source::Prefix,
            };
            (source, *tokens)
        });
        let mut segments: Vec<(Source, u64)> = tools.collect();
        segments.push((Source::Prefix, self.instructions));
        segments
            .extend(self.history.iter().map(|carried| (carried.source.clone(), carried.tokens)));
        segments
    }

    fn charge_compaction(&mut self, seq: u64, usage: &Usage, cost_usd: Option<f64>) {
        let pricing = Pricing::for_model(&self.model);
        let cost = cost_usd.or_else(|| pricing.cost_usd(usage));
        let priced = match cost {
            Some(_) if pricing.is_priced() => Priced::Table,
            Some(_) => Priced::ByTokens,
            None => Priced::Unknown,
        };
        let share = Share::whole(usage, cost.unwrap_or(0.0));
        self.push_request(Request {
            seq,
            turn: self.turn,
            step: 0,
            kind: RequestKind::Compaction,
            model: self.model.clone(),
            usage: *usage,
            cost_usd: cost,
            priced,
            estimated_tokens: None,
            estimated_cost_usd: None,
            parts: labelled(vec![(Source::Compaction, share)]),
        });
    }

    fn push_request(&mut self, request: Request) {
        self.models.insert(request.model.clone());
        self.ledger.usage.add(&request.usage);
        self.add_cost(request.cost_usd);
        self.ledger.estimated_tokens += request.estimated_tokens.unwrap_or(0);
        self.ledger.estimated_cost_usd += request.estimated_cost_usd.unwrap_or(0.0);
        self.ledger.requests.push(request);
    }

    fn add_cost(&mut self, cost: Option<f64>) {
        match cost {
            Some(cost) => *self.ledger.cost_usd.get_or_insert(0.0) += cost,
            None => self.unknown_cost = true,
        }
    }

    fn finish(mut self) -> Ledger {
        let mut totals: BTreeMap<Source, Share> = BTreeMap::new();
        for part in self.ledger.requests.iter().flat_map(|request| &request.parts) {
            totals.entry(part.source.clone()).or_default().add(&part.share);
        }
        for child in &self.ledger.children {
            let source = Source::Subagent {
                session_id: child.session_id.clone(),
                agent: child.agent.clone(),
            };
            let share = Share::whole(&child.usage, child.cost_usd.unwrap_or(0.0));
            totals.entry(source).or_default().add(&share);
        }
        let mut parts = labelled(totals.into_iter().collect());
        parts.sort_by(|a, b| {
            b.share
                .cost_usd
                .total_cmp(&a.share.cost_usd)
                .then(b.share.tokens().cmp(&a.share.tokens()))
        });
        self.ledger.parts = parts;
        self.ledger.session_id = self.session_id;
        self.ledger.cost_usd = match self.unknown_cost {
            true => None,
            false => Some(self.ledger.cost_usd.unwrap_or(0.0)),
        };
        self.ledger.prices = self.models.iter().map(|model| prices_of(model)).collect();
        self.ledger
    }
}

fn spec_tokens(bytes: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let tokens = |bytes: u64| bytes.div_ceil(SPEC_BYTES_PER_TOKEN);
    bytes.iter().map(|(name, bytes)| (name.clone(), tokens(*bytes))).collect()
}

fn labelled(parts: Vec<(Source, Share)>) -> Vec<Part> {
    let part =
        |(source, share): (Source, Share)| Part { label: lines::label(&source), source, share };
    parts.into_iter().map(part).collect()
}

fn prices_of(model: &str) -> ModelPrices {
    let pricing = Pricing::for_model(model);
    ModelPrices {
        model: model.to_owned(),
        input: pricing.input_price,
        cached_input: pricing.cached_input_price,
        cache_write: pricing.cache_write_price,
        output: pricing.output_price,
    }
}

#[cfg(test)]
mod tests;
