//! The workflow inside the loop: phase enforcement for every call, the
//! guidance the model reads about the phase it is in, and what finished
//! calls mean for the verification gate. The harness tools themselves are
//! answered in `agent::harness`.
//!
//! Invariants: pure. A call the current phase does not allow either moves
//! the workflow implicitly along a legal edge whose gates hold (e.g. the
//! first `write_file` in `orient` enters `implement`, recorded as a
//! `phase_changed`), or is refused with the phase and the allowed moves;
//! it never runs. No implicit move leaves a phase where plans are
//! submitted while the plan is not approved: there a write is refused until
//! the model moves on with `set_phase` (and the plan gate, when a plan is
//! required, holds). The guidance says exactly this, naming tools (never
//! internal classes), and names the checks that open the gate.
//!
//! # Two machines
//!
//! `plan/` holds the static rules (`rules/phases.toml`, or a trusted project's `.keel/phases.toml`;
//! `require_plan = true` there requires a plan as plan mode does) and the pure `Workflow` (phase,
//! plan, the changes/verifications gate); this file enforces them inside `step`: `admit` per call,
//! the harness tools `set_phase`, `submit_plan` and `todo_write`, `observe` for the gate, and
//! `guidance` appended to every request (`WorkflowState::guidance` names tools, never classes).
//!
//! A call the phase refuses may move the workflow implicitly along a legal edge (orient → implement
//! for a typo fix, deliver → implement when more work turns up), never out of the plan phase while
//! the plan is not approved. A shell call policy proves read-only counts as a read here (`admit`'s
//! `judged_read`: the call is in a concurrent batch, i.e. its effective class is read-only, which
//! needs an enforced sandbox; see "The loop" in `agent`), so orient, plan and deliver run `git log`
//! or `ls` in place and the guidance lists "shell (read-only commands)" for them; a command that
//! may write still needs a phase allowing the shell. `deliver` is `done = true`: the next user
//! message starts over at orient. Without a required plan there is no limit on how many files
//! change. MCP tools are admitted as reads (`plan::tool_kind`: a lookup must work while planning;
//! policy, not the phase, gates them), but a call that changed workspace files counts as a write
//! for the gate (`plan::observed_kind`).
//!
//! Plan review: live through the approval path; in scripts `exec --plan-only`, then `exec resume ID
//! --approve-plan [--mode auto]` or `--reject-plan FEEDBACK` (recorded as `plan_updated`; the
//! feedback is the next prompt; the run stops again after the revision).
//!
//! # The verification gate
//!
//! A phase rule's `checks` (command prefixes) must each pass after the last change before the phase
//! is entered, up to the verification limit (then "unverified"). Which shell calls verify
//! (`plan::verify::judge`): a simple command that decides the script's exit status
//! (`plan/script_status.rs`, tree-sitter; the shell runs `set -o pipefail`, so every part of a
//! pipeline decides, the left of `||` and anything before `;` do not) and runs a test or build
//! (`plan/runners.rs`: the common ecosystems, package-runner wrappers followed), a script or file
//! named like a test, or a project check (phase `checks`, `verify.commands`, `plan::detect_checks`
//! over the root files, `plan::checks_named_in` over AGENTS.md); or a call marked `verify: true`.
//! Exit 0 passes, anything else (or a timeout) fails and counts toward the limit. Every other
//! command is noted (`Workflow::commands_since_change`) with why it did not count; refusals and the
//! exec `unverified` result (`verification`) say so. The end-to-end stories are
//! `tests/suite/workflow_e2e.rs`, `workflow_review_e2e.rs` and `prompt_truths.rs`.

use crate::plan::{
    CheckVerdict, DEFAULT_PHASE_RULES, PhaseRule, PhaseRules, PlanStatus, ToolKind, Workflow,
    judge, observed_kind, runs_check, tool_kind,
};
use crate::protocol::tool_facts::names;
use crate::protocol::{HarnessTool, SessionEvent, ToolCall, ToolMeta, ToolResult};
use crate::tasks::Task;

/// The subagent tool's name (`tools::agent`, which this layer cannot name).
pub const AGENT_TOOL: &str = names::AGENT;

/// What happens when a plan that needs approval is submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanReview {
    /// Ask the user through the approval path.
    Ask,
    /// Approve it at once (`keel exec --approve-plan`).
    Approve,
    /// End the turn with the plan submitted (`keel exec --plan-only`).
    StopAfterSubmit,
}

/// The workflow part of the loop state.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowState {
    pub rules: PhaseRules,
    pub flow: Workflow,
    pub tasks: Vec<Task>,
    pub review: PlanReview,
    /// Configured `verify.commands`, besides the detected ones.
    pub verify_commands: Vec<String>,
    /// The project's own checks (`cargo test`, `make test`, …), detected
    /// from its root files; named in the guidance, and they verify.
    pub detected_checks: Vec<String>,
    /// Checks the project's AGENTS.md names (`checks_named_in`).
    pub named_checks: Vec<String>,
}

impl WorkflowState {
    pub fn new(plan_required: bool) -> Self {
        Self::with_rules(shipped_rules(), plan_required)
    }

    /// A workflow under a project's own rules (`.keel/phases.toml`).
    pub fn with_rules(rules: PhaseRules, plan_required: bool) -> Self {
        let flow = Workflow::new(&rules, plan_required);
        Self {
            rules,
            flow,
            tasks: Vec::new(),
            review: PlanReview::Ask,
            verify_commands: Vec::new(),
            detected_checks: Vec::new(),
            named_checks: Vec::new(),
        }
    }

    pub(super) fn rule(&self) -> Option<&PhaseRule> {
        self.rules.rule(&self.flow.phase)
    }

    /// The turn's work is done here (deliver): a new turn starts over.
    pub fn finished(&self) -> bool {
        self.rule().is_none_or(|rule| rule.done || rule.next.is_empty())
    }

    /// Back to the start phase for a new task; the plan requirement stays.
    pub fn restart(&mut self) -> Option<SessionEvent> {
        let from = self.flow.phase.clone();
        self.flow = Workflow::new(&self.rules, self.flow.plan_required);
        (from != self.flow.phase)
            .then(|| SessionEvent::PhaseChanged { from, to: self.flow.phase.clone() })
    }

    /// Approves a plan waiting for review (`keel exec resume ID
    /// --approve-plan`); the event to record, if there was one.
    pub fn approve_submitted(&mut self) -> Option<SessionEvent> {
        let waiting =
            self.flow.plan.as_ref().is_some_and(|plan| plan.status == PlanStatus::Submitted);
        waiting.then(|| {
            self.flow.review_plan(true, None);
            plan_event(&self.flow)
        })
    }

    /// Rejects a plan waiting for review (`keel exec resume ID
    /// --reject-plan FEEDBACK`); the event to record, if there was one. The
    /// model stays in the plan phase and reads `rejection_text`.
    pub fn reject_submitted(&mut self, feedback: &str) -> Option<SessionEvent> {
        let waiting =
            self.flow.plan.as_ref().is_some_and(|plan| plan.status == PlanStatus::Submitted);
        waiting.then(|| {
            self.flow.review_plan(false, Some(feedback.to_owned()));
            plan_event(&self.flow)
        })
    }

    /// What the model reads about the workflow where it stands: the phase,
    /// the tools it allows (of `offered`, the session's tools, deferred ones
    /// included), how moves
    /// happen, the phase's guidance and the checks that count. Announced
    /// as a context update whenever it changes (the task list is not
    /// here: `todo_write`'s result shows it). `judged_reads`: commands run
    /// sandboxed, so a phase that allows reads but not the shell still runs
    /// commands policy proves read-only (`admit`).
    pub fn guidance(&self, offered: &[&str], judged_reads: bool) -> String {
        let phase = &self.flow.phase;
        let mut text = format!("# Workflow\n\nPhase: {phase}.");
        if let Some(rule) = self.rule() {
            text.push_str(&format!(" {}", rule.purpose));
            // What the phase admits among the tools offered, judged as
            // `admit` judges them (`agent` and MCP tools are reads), so the
            // list is complete; MCP tools are named together.
            let admitted = |name: &str| {
                let kind = crate::plan::tool_kind(name);
                kind != ToolKind::Phase && self.rules.allows(phase, kind)
            };
            let mut names: Vec<&str> = offered
                .iter()
                .filter(|name| !name.starts_with("mcp__") && admitted(name))
                // Named by the tools they reach (`agent::deferred`).
                .filter(|name| !crate::protocol::tool_facts::DEFERRAL_TOOLS.contains(name))
                .copied()
                .collect();
            if offered.iter().any(|name| name.starts_with("mcp__") && admitted(name)) {
                names.push("the MCP tools");
            }
            let shell_reads = judged_reads
                && offered.contains(&names::SHELL)
                && rule.tools.contains(&ToolKind::Read)
                && !rule.tools.contains(&ToolKind::Shell);
            if shell_reads {
                names.push("shell (read-only commands)");
            }
            // set_phase is allowed in every phase, where it is offered (not to subagents).
            if offered.contains(&HarnessTool::SetPhase.name()) {
                names.push(HarnessTool::SetPhase.name());
            }
            let names = match names.split_last() {
                None => String::new(),
                Some((last, [])) => (*last).to_owned(),
                Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            };
            if !names.is_empty() {
                text.push_str(&format!(" Tools here: {names}."));
            }
            if !rule.next.is_empty() {
                text.push_str(&format!(
                    " Any other tool moves you to the first next phase allowing it whose \
                     conditions hold ({}); else it is refused.",
                    rule.next.join(", ")
                ));
            }
        }
        let how = crate::prompts::phase_guidance(phase);
        if !how.is_empty() {
            text.push_str(&format!("\n\n{how}"));
        }
        let checks = self.checks_guidance();
        if !checks.is_empty() {
            text.push_str(&format!("\n\n{checks}"));
        }
        // The plan phase's own guidance says it already (and so the text
        // does not change, nor is announced again, when the plan is
        // approved there).
        let planning = self.rules.allows(phase, ToolKind::Plan);
        if self.flow.plan_required && !self.flow.plan_approved() && !planning {
            text.push_str(
                "\n\nA plan is required: submit it with submit_plan and wait for its approval \
                 before changing files.",
            );
        }
        text
    }

    /// Whether `call` may run in the current phase. A call the phase does
    /// not allow moves the workflow to the first next phase that allows it
    /// and whose gates hold; the returned events record such a move.
    /// `judged_read`: policy proved this call changes nothing and it runs
    /// in the read-only jail (`schedule::effective_class`), so a shell call
    /// counts as a read (orient may run `git log`).
    pub fn admit(
        &mut self,
        call: &ToolCall,
        judged_read: bool,
    ) -> Result<Vec<SessionEvent>, String> {
        let kind = match tool_kind(&call.name) {
            ToolKind::Shell if judged_read => ToolKind::Read,
            kind => kind,
        };
        let first = match self.flow.check_call(&self.rules, &call.name, kind) {
            Ok(()) => return Ok(Vec::new()),
            Err(reason) => reason,
        };
        if self.rules.allows(&self.flow.phase, kind) {
            return Err(first);
        }
        let next = self.rule().map(|rule| rule.next.clone()).unwrap_or_default();
        if self.rules.allows(&self.flow.phase, ToolKind::Plan) && !self.flow.plan_approved() {
            // The model chose to plan: leaving that takes a set_phase, or
            // the user's approval of the plan (then the write may start
            // the implementation).
            return Err(format!(
                "{first}. Submit the plan with submit_plan, or leave with set_phase to one \
                 of: {}.",
                next.join(", ")
            ));
        }
        let mut blocked = Vec::new();
        for target in next.iter().filter(|target| self.rules.allows(target, kind)) {
            let mut moved = self.flow.clone();
            let checked = match moved.request_move(&self.rules, target) {
                Ok(()) => moved.check_call(&self.rules, &call.name, kind),
                Err(refusal) => Err(refusal.reason),
            };
            match checked {
                Ok(()) => {
                    let from = std::mem::replace(&mut self.flow, moved).phase;
                    return Ok(vec![SessionEvent::PhaseChanged { from, to: target.clone() }]);
                }
                Err(reason) => blocked.push(format!(" The {target} phase is closed: {reason}")),
            }
        }
        let moves = if next.is_empty() {
            format!(" No phase follows {}: this turn cannot use it any more.", self.flow.phase)
        } else if blocked.is_empty() {
            format!(
                " No next phase allows it (next: {}); move with set_phase to a phase that \
                 does.",
                next.join(", ")
            )
        } else {
            String::new()
        };
        Err(format!("{first}.{}{moves}", blocked.concat()))
    }

    /// While implementing or verifying: what counts as a check (this
    /// project's named ones first); and which checks a next phase needs.
    fn checks_guidance(&self) -> String {
        let quoted = |checks: &[String]| {
            checks.iter().map(|check| format!("`{check}`")).collect::<Vec<_>>().join(", ")
        };
        let mut text = String::new();
        let checks = self.checks();
        if ["implement", "verify"].contains(&self.flow.phase.as_str()) {
            let project = if checks.is_empty() {
                "This project names no check: run its tests as it runs them, or write a quick \
                 check."
                    .to_owned()
            } else {
                format!("This project's checks: {}.", quoted(&checks))
            };
            text.push_str(&format!(
                "{project} A shell call is a check when it runs a test or build (`cargo \
                 test`, `pytest`, `npm test`, `make`, …), a script named like a test \
                 (`test_x.py`, `x_test.go`, `./run-tests.sh`, …), a project check, or any command you mark \
                 `verify: true`. It passes on exit 0 and fails otherwise (a failure counts \
                 toward the attempts), in any phase; delivering needs one to pass after your \
                 last change."
            ));
        }
        let next = self.rule().map(|rule| rule.next.clone()).unwrap_or_default();
        for phase in next {
            let needed = self.rules.rule(&phase).map(|r| r.checks.clone()).unwrap_or_default();
            if !needed.is_empty() {
                let list = quoted(&needed);
                let space = if text.is_empty() { "" } else { " " };
                text.push_str(&format!(
                    "{space}Entering {phase} needs {list} to pass after the last change."
                ));
            }
        }
        text
    }

    /// The phase rules' checks (every phase's), e.g. `cargo clippy`.
    fn rule_checks(&self) -> impl Iterator<Item = &String> {
        self.rules.phases.values().flat_map(|rule| &rule.checks)
    }

    /// The phase rules' checks, the configured ones, the detected ones,
    /// then those AGENTS.md names, without repeats.
    pub fn checks(&self) -> Vec<String> {
        let mut checks: Vec<String> = Vec::new();
        let all = self
            .rule_checks()
            .chain(&self.verify_commands)
            .chain(&self.detected_checks)
            .chain(&self.named_checks);
        for check in all {
            if !check.trim().is_empty() && !checks.contains(check) {
                checks.push(check.clone());
            }
        }
        checks
    }

    /// What a finished call means for the gate: a successful change counts
    /// as a change, a check as a verification (passing on exit 0, failing
    /// otherwise), and every other command is noted with why it did not
    /// count, for the refusal and the `unverified` result.
    pub fn observe(&mut self, call: &ToolCall, result: &ToolResult, meta: &ToolMeta) {
        if meta.is_denied() {
            return;
        }
        if call.name == AGENT_TOOL {
            return self.observe_subagent(meta);
        }
        let changed = meta.changed();
        match observed_kind(&call.name, changed) {
            ToolKind::Shell => self.observe_command(call, result, meta, changed == Some(true)),
            ToolKind::Write if !result.is_error => {
                if changed != Some(false) {
                    self.flow.record_change(path_argument(call).as_deref());
                }
            }
            ToolKind::Write
            | ToolKind::Read
            | ToolKind::Plan
            | ToolKind::Tasks
            | ToolKind::Phase => {}
        }
    }

    /// A subagent's task, as its result's metadata reports it: files it
    /// changed count as a change here, and checks it ran after its last
    /// change as a verification (passed only if every one passed).
    fn observe_subagent(&mut self, meta: &ToolMeta) {
        if meta.changed() == Some(true) {
            self.flow.record_change(None);
        }
        if let Some(passed) = meta.get("verified").and_then(serde_json::Value::as_bool) {
            self.flow.record_verification(passed);
        }
    }

    fn observe_command(
        &mut self,
        call: &ToolCall,
        result: &ToolResult,
        meta: &ToolMeta,
        changed: bool,
    ) {
        let command = string_argument(call, "command").unwrap_or_default();
        let marked = bool_argument(call, "verify");
        let exit = meta.exit_code();
        let timed_out = meta.timed_out();
        match judge(&command, &self.checks(), marked) {
            CheckVerdict::Check { what } if exit.is_some() || timed_out => {
                let passed = exit == Some(0) && !result.is_error;
                let ran: Vec<String> = self
                    .rule_checks()
                    .filter(|check| runs_check(&command, check))
                    .cloned()
                    .collect();
                for check in ran {
                    self.flow.record_check(&check, passed);
                }
                self.flow.record_verification(passed);
                let outcome = match exit {
                    _ if passed => format!("passed ({what})"),
                    Some(code) => format!("failed with exit code {code} ({what})"),
                    None => format!("timed out ({what})"),
                };
                self.flow.note_command(&command, outcome);
            }
            // Started but never finished (cancelled): it says nothing.
            CheckVerdict::Check { .. } => {}
            CheckVerdict::Hidden { what } if !changed => self.flow.note_command(
                &command,
                format!(
                    "{what}, but a later part of the command decides its exit code (after \
                     `;`, `||` or `!`): run the check on its own or join with `&&`"
                ),
            ),
            CheckVerdict::NotACheck if !changed => self.flow.note_command(
                &command,
                "not recognised as a check (mark the call with `verify: true` if it checks \
                 the change)"
                    .to_owned(),
            ),
            CheckVerdict::Hidden { .. } | CheckVerdict::NotACheck => {
                self.flow.record_change(None);
            }
        }
    }
}

pub(super) fn string_argument(call: &ToolCall, key: &str) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    args.get(key).and_then(serde_json::Value::as_str).map(str::to_owned)
}

fn bool_argument(call: &ToolCall, key: &str) -> bool {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    args.get(key).and_then(serde_json::Value::as_bool) == Some(true)
}

fn path_argument(call: &ToolCall) -> Option<String> {
    string_argument(call, "path")
}

/// The shipped rules; a permissive single phase if they ever fail to
/// parse (a unit test keeps them parsing).
pub fn shipped_rules() -> PhaseRules {
    PhaseRules::parse(DEFAULT_PHASE_RULES).unwrap_or_else(|_| {
        let all =
            vec![ToolKind::Read, ToolKind::Write, ToolKind::Shell, ToolKind::Plan, ToolKind::Tasks];
        let rule = PhaseRule {
            purpose: "Do the task.".to_owned(),
            tools: all,
            next: Vec::new(),
            skippable: false,
            done: true,
            requires: Vec::new(),
            checks: Vec::new(),
        };
        PhaseRules {
            start: "work".to_owned(),
            require_plan: false,
            phases: [("work".to_owned(), rule)].into(),
        }
    })
}

pub(super) fn plan_event(flow: &Workflow) -> SessionEvent {
    let plan = serde_json::to_value(&flow.plan).unwrap_or(serde_json::Value::Null);
    SessionEvent::PlanUpdated { plan }
}

/// How a session's workflow is set up from its settings: a project's
/// phase rules and the check commands it configures, detects and names.
/// Start and resume apply the same setup.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkflowSetup {
    pub rules: Option<PhaseRules>,
    pub verify_commands: Vec<String>,
    pub detected_checks: Vec<String>,
    pub named_checks: Vec<String>,
}

impl WorkflowSetup {
    /// Sets `workflow` up (rules first, keeping the plan requirement).
    pub fn apply(self, workflow: &mut WorkflowState) {
        if let Some(rules) = self.rules {
            let plan_required = workflow.flow.plan_required;
            *workflow = WorkflowState::with_rules(rules, plan_required);
        }
        workflow.verify_commands = self.verify_commands;
        workflow.detected_checks = self.detected_checks;
        workflow.named_checks = self.named_checks;
    }
}
