//! Running a subagent's task and reporting it to the parent: SubagentStart
//! and SubagentStop hooks around its one turn, the child's final answer
//! (or why it stopped) with a line saying what it read, ran and changed,
//! and the `subagent_finished` line the parent records (through `step`,
//! so its spend, estimates for responses without usage included, counts
//! against the parent's limits and a rebuild sees it).
//!
//! Invariants: a child never fails its parent: a failure, an interrupt or
//! a spent budget is the call's error result; the parent records
//! `subagent_finished` before the call's result.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent::{Input, LoopState, SubagentDone, Unreported, step};
use crate::hooks::HookEvent;
use crate::protocol::{Item, SessionEvent, ToolCall, ToolMeta, ToolResult, TurnOutcome, Usage};
use crate::tools::{AGENT_TOOL, BoxFuture};

use super::Child;
use crate::protocol::tool_facts::names;
use crate::runtime::hooks_glue::MAX_STOP_CONTINUATIONS;
use crate::runtime::{DeclinedCall, RuntimeError, RuntimeEvent, Session, TurnSummary};

/// Entries of each kind listed in a result's activity line.
const ACTIVITY_ITEMS: usize = 6;

/// What a child's task came to, for the parent.
pub(in crate::runtime) struct ChildOutcome {
    pub(in crate::runtime) call: ToolCall,
    pub(in crate::runtime) session_id: String,
    pub(in crate::runtime) outcome: TurnOutcome,
    pub(in crate::runtime) result: ToolResult,
    pub(in crate::runtime) meta: ToolMeta,
    /// The whole child session's spend, its own children included: as
    /// its servers reported it, and at keel's estimate where they did not.
    pub(in crate::runtime) usage: Usage,
    pub(in crate::runtime) cost_usd: Option<f64>,
    pub(in crate::runtime) estimated: Unreported,
    pub(in crate::runtime) declined: Vec<DeclinedCall>,
}

impl Session {
    /// A child's task: SubagentStart hooks (their context joins its
    /// instructions), the task as its one turn, then SubagentStop hooks (a
    /// block sends it back to work with the reason, a few times at most).
    pub(in crate::runtime) async fn run_task(
        &mut self,
        prompt: String,
        cancel: &CancellationToken,
    ) -> Result<TurnSummary, RuntimeError> {
        self.subagent_start_hooks(cancel).await?;
        let mut prompt = prompt;
        let mut continuations = 0;
        loop {
            let queue = step(&mut self.state, Input::UserTurn { text: prompt, images: Vec::new() });
            self.sink.emit(RuntimeEvent::TurnStarted { turn: self.state.turn() });
            let summary = self.drive(queue.into(), cancel).await?;
            if summary.outcome != TurnOutcome::Completed || cancel.is_cancelled() {
                return Ok(summary);
            }
            let last = summary.final_text.clone().unwrap_or_default();
            match self.subagent_stop_hooks(continuations, &last, cancel).await? {
                Some(reason) => {
                    continuations += 1;
                    prompt = format!("A SubagentStop hook asked you to keep going: {reason}");
                }
                None => return Ok(summary),
            }
        }
    }

    /// The payload fields Claude Code gives subagent hooks: the parent's
    /// session and transcript, the subagent's id, type and transcript.
    fn subagent_payload(
        &self,
        mut extra: serde_json::Map<String, Value>,
    ) -> crate::hooks::HookPayload {
        let role = self.subagents.role.as_ref();
        extra.insert("agent_id".into(), json!(self.id));
        extra.insert("agent_type".into(), json!(role.map(|r| r.link.agent.clone())));
        extra.insert("agent_transcript_path".into(), json!(self.log.path()));
        let mut payload = self.hook_payload(extra);
        if let Some(role) = role {
            payload.session_id = role.link.session_id.clone();
            payload.transcript_path = role.parent_log.display().to_string();
        }
        payload
    }

    async fn subagent_start_hooks(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<(), RuntimeError> {
        if !self.hooks.listens(HookEvent::SubagentStart) {
            return Ok(());
        }
        let agent = self.subagents.role.as_ref().map(|r| r.link.agent.clone());
        let payload = self.subagent_payload(serde_json::Map::new());
        let verdict = self
            .dispatch_hooks(HookEvent::SubagentStart, payload, agent.as_deref(), cancel)
            .await?;
        // Announced in the history with the task, like SessionStart's: the
        // prefix stays as recorded.
        self.apply_outside_loop(Input::HookContext { context: verdict.additional_context })?;
        Ok(())
    }

    /// `Some(reason)` sends the child back to work.
    async fn subagent_stop_hooks(
        &mut self,
        continuations: u32,
        last_message: &str,
        cancel: &CancellationToken,
    ) -> Result<Option<String>, RuntimeError> {
        if !self.hooks.listens(HookEvent::SubagentStop) {
            return Ok(None);
        }
        let agent = self.subagents.role.as_ref().map(|r| r.link.agent.clone());
        let extra = serde_json::Map::from_iter([
            ("stop_hook_active".to_owned(), json!(continuations > 0)),
            ("last_assistant_message".to_owned(), json!(last_message)),
        ]);
        let payload = self.subagent_payload(extra);
        let verdict =
            self.dispatch_hooks(HookEvent::SubagentStop, payload, agent.as_deref(), cancel).await?;
        let again = verdict.permission == Some(crate::hooks::Permission::Deny)
            && continuations < MAX_STOP_CONTINUATIONS;
        Ok(again.then(|| verdict.reason()))
    }

    /// Records what a child's task came to in this (the parent's) log and
    /// totals; the call's result is recorded by the loop after this.
    pub(in crate::runtime) fn note_child_outcome(
        &mut self,
        outcome: &mut ChildOutcome,
    ) -> Result<(), RuntimeError> {
        // The parent's spend limits count it from its next request on.
        self.apply_outside_loop(Input::SubagentFinished(SubagentDone {
            call_id: outcome.call.call_id.clone(),
            session_id: outcome.session_id.clone(),
            outcome: outcome.outcome,
            usage: outcome.usage,
            cost_usd: outcome.cost_usd,
            estimated: outcome.estimated,
        }))?;
        self.subagents.declined.append(&mut outcome.declined);
        Ok(())
    }
}

impl Child {
    /// Runs the task (or finishes a resumed one) and closes the child's
    /// log; never fails: a failure is the call's error result. Boxed with
    /// its type named: a child runs sessions that run children.
    pub(in crate::runtime) fn run(mut self) -> BoxFuture<'static, ChildOutcome> {
        Box::pin(async move {
            let summary = match self.prompt.take() {
                Some(prompt) => self.session.run_task(prompt, &self.cancel).await.map(Some),
                None => self.session.continue_turn(&self.cancel).await,
            };
            let closed = self.session.log.append(SessionEvent::SessionEnded {
                reason: "the subagent's task ended".to_owned(),
            });
            let home = &self.session.settings.keel_home;
            let _ = crate::session::index_session(home, self.session.log.path());
            let summary = summary.and_then(|summary| closed.map(|_| summary).map_err(Into::into));
            self.outcome(summary)
        })
    }

    fn outcome(self, summary: Result<Option<TurnSummary>, RuntimeError>) -> ChildOutcome {
        let session = &self.session;
        // Its own token budget is one of its spend limits; the tighter one
        // is named when a request would cross it.
        let budget = session.settings.agents.max_tokens;
        let own_budget =
            budget.is_some() && session.state.config().limits.spend.max_tokens == budget;
        let (outcome, text, declined) = match summary {
            Ok(Some(summary)) => {
                let text = match (summary.outcome, &summary.error) {
                    (TurnOutcome::BudgetExceeded, _) if own_budget => ending_text(
                        &summary.final_text,
                        &format!(
                            "the subagent stopped: its next request would have crossed its \
                             token budget ({} tokens, [agents] max_tokens)",
                            budget.unwrap_or_default()
                        ),
                    ),
                    (TurnOutcome::Completed, _) => summary
                        .final_text
                        .clone()
                        .unwrap_or_else(|| "(the subagent gave no answer)".to_owned()),
                    (TurnOutcome::Cut, _) => ending_text(
                        &summary.final_text,
                        "the subagent's answer was cut off at the output limit: it is incomplete",
                    ),
                    (TurnOutcome::MaxSteps, _) => ending_text(
                        &summary.final_text,
                        &format!(
                            "the subagent stopped at its step limit of {} before finishing \
                             ([agents] max_steps)",
                            session.state.config().limits.max_steps
                        ),
                    ),
                    (TurnOutcome::Interrupted, _) => {
                        ending_text(&summary.final_text, "the subagent was interrupted")
                    }
                    (TurnOutcome::BudgetExceeded, _) => ending_text(
                        &summary.final_text,
                        "the subagent stopped: its next request would have crossed the \
                         session's spend limit (--max-cost, --max-tokens)",
                    ),
                    (TurnOutcome::Stuck, _) => ending_text(
                        &summary.final_text,
                        "the subagent stopped: it kept repeating a call or failing with one tool",
                    ),
                    (TurnOutcome::Failed, error) => ending_text(
                        &summary.final_text,
                        &format!(
                            "the subagent failed: {}",
                            error.as_deref().unwrap_or("its turn ended with an error")
                        ),
                    ),
                };
                (summary.outcome, text, summary.declined)
            }
            // A resumed child whose task had ended: its answer stands.
            Ok(None) => (
                TurnOutcome::Completed,
                session.last_assistant_text().unwrap_or_else(|| "(no answer)".to_owned()),
                Vec::new(),
            ),
            Err(error) => {
                (TurnOutcome::Failed, format!("the subagent failed: {error}"), Vec::new())
            }
        };
        // The parent's summary lists them with its own: say whose they are.
        let declined = declined
            .into_iter()
            .map(|mut entry| {
                entry.reason = format!("{} (asked by the {} subagent)", entry.reason, self.agent);
                entry
            })
            .collect();
        let usage = session.session_usage();
        let cost_usd = session.cost_usd();
        let mut text = text;
        text.push_str(&format!("\n\n{}", activity_line(&self.agent, session, &usage)));
        let failed = outcome != TurnOutcome::Completed;
        let result = if failed {
            ToolResult::error(&self.call.call_id, text)
        } else {
            ToolResult::ok(&self.call.call_id, text)
        };
        let mut meta = ToolMeta::new()
            .with("agent", json!(self.agent))
            .with("session_id", json!(session.id))
            .with("log_path", json!(session.log.path()))
            .with("outcome", json!(outcome))
            .with("steps", json!(session.state.step()))
            .with("tokens", json!(usage.total_tokens()));
        if let Some(passed) = last_verification(&session.state) {
            meta.insert("verified", json!(passed));
        }
        ChildOutcome {
            session_id: session.id.clone(),
            call: self.call,
            outcome,
            result,
            meta,
            usage,
            cost_usd,
            estimated: session.state.estimated(),
            declined,
        }
    }
}

/// The child's last words with why it stopped.
fn ending_text(final_text: &Option<String>, why: &str) -> String {
    match final_text {
        Some(text) if !text.trim().is_empty() => format!("{text}\n\n[{why}]"),
        Some(_) | None => format!("[{why}]"),
    }
}

/// Whether the checks a child ran last passed (`None`: it ran none): the
/// parent's workflow counts it as a verification.
fn last_verification(state: &LoopState) -> Option<bool> {
    let flow = &state.workflow().flow;
    let ran = flow.verified_at.is_some() || flow.failed_verifications > 0;
    ran.then(|| flow.verified_at == Some(flow.changes) && flow.failed_verifications == 0)
}

/// `[explore subagent · 3 steps · 4200 tokens · read: a.rs, b.rs · ran: git log]`:
/// what the child did, from its history (calls that failed or were
/// refused are left out).
fn activity_line(agent: &str, session: &Session, usage: &Usage) -> String {
    let failed: BTreeSet<&str> = session
        .state
        .items()
        .iter()
        .filter_map(|item| match item {
            Item::ToolResult(result) if result.is_error => Some(result.call_id.as_str()),
            Item::ToolResult(_)
            | Item::User { .. }
            | Item::Assistant { .. }
            | Item::Reasoning(_)
            | Item::Context { .. }
            | Item::ToolCall(_) => None,
        })
        .collect();
    let mut read = Vec::new();
    let mut ran = Vec::new();
    let mut changed = Vec::new();
    for item in session.state.items() {
        let Item::ToolCall(call) = item else { continue };
        if failed.contains(call.call_id.as_str()) {
            continue;
        }
        let args: Value = serde_json::from_str(&call.arguments).unwrap_or_default();
        let arg = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
        let (list, entry) = match call.name.as_str() {
            names::READ_FILE | names::LIST_DIR => (&mut read, arg("path")),
            names::GREP | names::GLOB => (&mut read, arg("pattern")),
            names::SHELL => (&mut ran, arg("command").map(|c| shorten(&c, 40))),
            names::WRITE_FILE | names::EDIT_FILE => (&mut changed, arg("path")),
            names::APPLY_PATCH => (&mut changed, Some("a patch".to_owned())),
            AGENT_TOOL => (&mut ran, arg("agent").map(|a| format!("agent {a}"))),
            _ => continue,
        };
        if let Some(entry) = entry.filter(|e| !list.contains(e)) {
            list.push(entry);
        }
    }
    let mut parts = vec![
        format!("{agent} subagent"),
        format!("{} step(s)", session.state.step().max(u32::from(session.state.turn() > 0))),
        format!("{} tokens", usage.total_tokens()),
    ];
    for (label, list) in [("read", read), ("ran", ran), ("changed", changed)] {
        if list.is_empty() {
            continue;
        }
        let more = list.len().saturating_sub(ACTIVITY_ITEMS);
        let mut shown = list.into_iter().take(ACTIVITY_ITEMS).collect::<Vec<_>>().join(", ");
        if more > 0 {
            shown.push_str(&format!(" (+{more})"));
        }
        parts.push(format!("{label}: {shown}"));
    }
    format!("[{}; its log: {}]", parts.join(" · "), session.log.path().display())
}

fn shorten(text: &str, chars: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= chars && !text.contains('\n') {
        return line.to_owned();
    }
    format!("{}…", line.chars().take(chars).collect::<String>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_command_is_shortened_to_its_first_line() {
        assert_eq!(shorten("git log", 40), "git log");
        assert_eq!(shorten("cargo test\nsecond", 40), "cargo test…");
        assert_eq!(shorten(&"x".repeat(50), 4), "xxxx…");
    }
}
