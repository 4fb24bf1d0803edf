//! What slash commands reach in a session, and the session's side of
//! compaction (the loop decides when, in `agent::compaction`): writing the
//! summary with the model, running PreCompact and SessionStart(`compact`)
//! hooks, re-reading the project instructions, `/compact [focus]`, and
//! skill invocation (`/<skill> args`, in the TUI and in `keel exec`).
//!
//! Invariants: a compaction is recorded in the log (a `compaction` line)
//! before the next request uses the compacted history, so a resume starts
//! from the history the model saw; a failed or empty summary never fails
//! the session (the history is compacted with the preserved facts only);
//! the summary request streams nothing to the user.

use std::collections::VecDeque;

use serde_json::{Map, json};
use tokio_util::sync::CancellationToken;

use crate::agent::{Effect, Input, step};
use crate::config::agents::AgentCatalog;
use crate::config::commands::CommandCatalog;
use crate::hooks::HookEvent;
use crate::llm::LlmError;
use crate::prompts::instructions_block;
use crate::protocol::{Item, ModelRequest, PrefixSections, StreamEvent, Usage};

use super::assembly::{Found, memory_tool, prefix_sections, project_instructions};
use super::{RuntimeError, RuntimeEvent, Session};
use crate::config::discover_memory;

impl Session {
    /// Compacts the history now with a summary by the model, focused on
    /// `focus` if given. Returns whether the history was compacted (an
    /// empty session, or an interrupt, leaves it as it was).
    pub async fn compact(
        &mut self,
        focus: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<bool, RuntimeError> {
        let mut queue: VecDeque<Effect> =
            step(&mut self.state, Input::CompactRequested { focus }).into();
        let mut compacted = false;
        while let Some(effect) = queue.pop_front() {
            match effect {
                Effect::Record(event) => {
                    self.log.append(event)?;
                }
                Effect::Summarize { request, trigger, focus } => {
                    let input = self.summarize(&request, trigger, focus, cancel).await?;
                    queue.extend(step(&mut self.state, input));
                }
                Effect::Compacted { reason, method, tokens_before, tokens_after } => {
                    compacted = true;
                    let next = self
                        .after_compaction(reason, &method, tokens_before, tokens_after, cancel)
                        .await?;
                    if let Some(input) = next {
                        queue.extend(step(&mut self.state, input));
                    }
                }
                // Idle compaction asks nothing else of the driver.
                Effect::CallModel(_)
                | Effect::AskUser { .. }
                | Effect::AskRaiseLimit(_)
                | Effect::AskApproval { .. }
                | Effect::PersistRule { .. }
                | Effect::SavePlan { .. }
                | Effect::RunBatch { .. }
                | Effect::ConfirmCall { .. }
                | Effect::CheckCalls { .. }
                | Effect::Warn(_)
                | Effect::RerunUnsandboxed { .. }
                | Effect::RunPostToolHooks { .. }
                | Effect::TurnEnded { .. } => {}
            }
        }
        Ok(compacted)
    }

    /// Runs PreCompact hooks, then asks the model for the summary.
    pub(super) async fn summarize(
        &mut self,
        request: &ModelRequest,
        trigger: &'static str,
        focus: Option<String>,
        cancel: &CancellationToken,
    ) -> Result<Input, RuntimeError> {
        if !self.hooks.is_empty() {
            let extra = Map::from_iter([
                ("trigger".to_owned(), json!(trigger)),
                ("custom_instructions".to_owned(), json!(focus.clone().unwrap_or_default())),
            ]);
            let payload = self.hook_payload(extra);
            // PreCompact cannot stop a compaction (as in Claude Code): a
            // block is shown to the user, and the context must shrink.
            self.dispatch_hooks(HookEvent::PreCompact, payload, Some(trigger), cancel).await?;
        }
        self.sink.emit(RuntimeEvent::Compacting { trigger: trigger.to_owned() });
        let sink = &mut self.sink;
        // The summary's text is not shown while it streams; its retries are.
        let mut retries = |event| {
            if let StreamEvent::Retrying { attempt, max_attempts, reason, delay_ms } = event {
                let delay = std::time::Duration::from_millis(delay_ms);
                sink.emit(RuntimeEvent::Retrying { attempt, max_attempts, reason, delay });
            }
        };
        let request = self.images.loaded(request);
        let input = match self.model.stream_quietly(&request, &mut retries, cancel).await {
            Ok(response) => {
                let text: String = response.items.iter().filter_map(Item::assistant_text).collect();
                if text.trim().is_empty() {
                    let message = "the model wrote no summary".to_owned();
                    self.sink.emit(RuntimeEvent::Warning {
                        message: format!("compaction: {message}; keeping the preserved facts only"),
                    });
                    Input::SummaryFailed { message, usage: response.usage }
                } else {
                    Input::Summarized { text, usage: response.usage }
                }
            }
            Err(LlmError::Cancelled) => Input::Interrupted,
            Err(failure) => {
                let message = failure.to_string();
                self.sink.emit(RuntimeEvent::Warning {
                    message: format!(
                        "compaction: the summary failed ({message}); keeping the preserved facts only"
                    ),
                });
                Input::SummaryFailed { message, usage: Usage::default() }
            }
        };
        Ok(input)
    }

    /// Tells the front end; after a summary, re-reads the project
    /// instructions and memory notes (what changed is announced to the
    /// model, the prefix stays) and runs SessionStart hooks with source
    /// `compact`, whose context is announced too; then the loop may go on
    /// ([`Input::CompactionApplied`]).
    pub(super) async fn after_compaction(
        &mut self,
        reason: String,
        method: &str,
        tokens_before: u64,
        tokens_after: u64,
        cancel: &CancellationToken,
    ) -> Result<Option<Input>, RuntimeError> {
        self.sink.emit(RuntimeEvent::Compacted { reason, tokens_before, tokens_after });
        if method != "summary" {
            return Ok(None);
        }
        // Notes saved since the start (a problem with one was said then).
        let agents_md = project_instructions(&self.settings, &self.cwd);
        let observed = if self.subagents.role.is_some() {
            // A subagent keeps its own sections (its type's prompt, no
            // memory index, its skills): only AGENTS.md is read again.
            let prefix = &self.state.config().prefix;
            let project = instructions_block(&agents_md);
            PrefixSections { project, ..prefix.clone() }
        } else {
            let (memory, _) =
                discover_memory(&self.settings.keel_home, &self.settings.workspace_root);
            let found = Found {
                agents_md,
                skills: self.tools.skills().to_vec(),
                memory,
                agents: AgentCatalog::default(),
                commands: CommandCatalog::default(),
                warnings: Vec::new(),
                details: Vec::new(),
            };
            self.tools.set_memory(found.memory.clone());
            // The first notes of a session that started without any: the
            // tool that reads them is offered with the announcement (the
            // summary already rewrote the history; a recorded change).
            let offered = &self.state.config().tools;
            if let Some(tool) = memory_tool(self.tools.registry(), offered, &found.memory) {
                self.apply_outside_loop(Input::ToolsOffered {
                    replaced: Vec::new(),
                    offered: vec![tool],
                    reason: Some("memory notes appeared".to_owned()),
                    defer: false,
                })?;
            }
            prefix_sections(&self.settings, &found)
        };
        self.session_start_hooks("compact", cancel).await?;
        Ok(Some(Input::CompactionApplied { observed }))
    }

    /// Names and descriptions of the skills this session knows.
    pub fn skill_index(&self) -> Vec<(String, String)> {
        self.tools
            .skills()
            .iter()
            .map(|skill| (skill.meta.name.clone(), skill.meta.description.clone()))
            .collect()
    }

    /// A prompt `/<skill> args` naming a known skill becomes the skill's
    /// prompt ([`Session::skill_prompt`]); any other prompt is kept.
    pub fn expand_skill_command(&self, prompt: String) -> String {
        let Some(command) = prompt.strip_prefix('/') else { return prompt };
        let (name, args) = command.split_once(char::is_whitespace).unwrap_or((command, ""));
        self.skill_prompt(name, args).unwrap_or(prompt)
    }

    /// The user message for `/<name> args`: the skill's body followed by
    /// the user's words; `None` when no skill has that name.
    pub fn skill_prompt(&self, name: &str, args: &str) -> Option<String> {
        let skill = self.tools.skills().iter().find(|skill| skill.meta.name == name)?;
        let body = crate::skills::read_body(skill).ok()?;
        let mut prompt =
            format!("Use the skill `{name}`:\n\n<skill name=\"{name}\">\n{body}\n</skill>\n");
        if !args.trim().is_empty() {
            prompt.push('\n');
            prompt.push_str(args.trim());
            prompt.push('\n');
        }
        Some(prompt)
    }
}
