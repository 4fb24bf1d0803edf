//! The workflow inside the loop: phase enforcement for every call, the
//! harness tools `set_phase`, `submit_plan` and `todo_write` (answered here,
//! never by the tool runtime), and what finished calls mean for the
//! verification gate.
//!
//! Invariants: pure. A call the current phase does not allow either moves
//! the workflow implicitly along a legal edge whose gates hold (e.g. the
//! first `write_file` in `orient` enters `implement`, recorded as a
//! `phase_changed`), or is refused with the phase and the allowed moves;
//! it never runs. No implicit move leaves a phase where plans are
//! submitted: there a write is refused until the model moves on with
//! `set_phase` (and the plan gate, when a plan is required, holds). Model
//! input never panics: bad arguments become an error result. The plan's
//! path is empty here; the driver saves the plan under `.keel/plans/` and
//! fills the path in before the line is logged.

use serde::Deserialize;

use crate::plan::{
    DEFAULT_PHASE_RULES, PhaseRule, PhaseRules, PlanStatus, ToolKind, Workflow,
    is_verification_command, runs_check, tool_kind,
};
use crate::protocol::{SessionEvent, ToolCall, ToolResult, ToolSpec};
use crate::tasks::{self, Task};

/// Names of the tools answered by the loop itself.
pub const HARNESS_TOOLS: [&str; 3] = ["set_phase", "submit_plan", "todo_write"];

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
}

impl WorkflowState {
    pub fn new(plan_required: bool) -> Self {
        Self::with_rules(default_rules(), plan_required)
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
        }
    }

    fn rule(&self) -> Option<&PhaseRule> {
        self.rules.rule(&self.flow.phase)
    }

    /// The phase has nowhere to go (deliver): a new turn starts over.
    pub fn finished(&self) -> bool {
        self.rule().is_none_or(|rule| rule.next.is_empty())
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
    /// model stays in the plan phase and reads [`rejection_text`].
    pub fn reject_submitted(&mut self, feedback: &str) -> Option<SessionEvent> {
        let waiting =
            self.flow.plan.as_ref().is_some_and(|plan| plan.status == PlanStatus::Submitted);
        waiting.then(|| {
            self.flow.review_plan(false, Some(feedback.to_owned()));
            plan_event(&self.flow)
        })
    }

    /// The lines appended to the instructions of every request.
    pub fn guidance(&self) -> String {
        let phase = &self.flow.phase;
        let mut text = format!("\n\n# Workflow\n\nCurrent phase: {phase}.");
        if let Some(rule) = self.rule() {
            text.push_str(&format!(" {}", rule.purpose));
            let kinds: Vec<String> = rule.tools.iter().map(|k| format!("{k:?}")).collect();
            text.push_str(&format!(" Tool classes allowed: {}.", kinds.join(", ")));
            if !rule.next.is_empty() {
                text.push_str(&format!(" Move with set_phase to: {}.", rule.next.join(", ")));
            }
        }
        let how = crate::prompts::phase_guidance(phase);
        if !how.is_empty() {
            text.push_str(&format!("\n\n{how}"));
        }
        text.push_str(&self.checks_guidance());
        if self.flow.plan_required && !self.flow.plan_approved() {
            text.push_str(" A plan is required: submit it with submit_plan before changing files.");
        }
        if !self.tasks.is_empty() {
            text.push_str(&format!("\n\nTasks:\n{}", tasks::summary(&self.tasks)));
        }
        text
    }

    /// Whether `call` may run in the current phase. A call the phase does
    /// not allow moves the workflow to the first next phase that allows it
    /// and whose gates hold; the returned events record such a move.
    pub fn admit(&mut self, call: &ToolCall) -> Result<Vec<SessionEvent>, String> {
        let path = path_argument(call);
        let first = match self.flow.check_tool(&self.rules, &call.name, path.as_deref()) {
            Ok(()) => return Ok(Vec::new()),
            Err(reason) => reason,
        };
        let kind = tool_kind(&call.name);
        if self.rules.allows(&self.flow.phase, kind) {
            return Err(first);
        }
        let next = self.rule().map(|rule| rule.next.clone()).unwrap_or_default();
        if self.rules.allows(&self.flow.phase, ToolKind::Plan) && !self.flow.plan_approved() {
            // The model chose to plan: leaving that takes a set_phase, or
            // the user's approval of the plan (then the write may start
            // the implementation).
            return Err(format!("{first}. Allowed next phases: {}.", next.join(", ")));
        }
        let mut blocked = Vec::new();
        for target in next.iter().filter(|target| self.rules.allows(target, kind)) {
            let mut moved = self.flow.clone();
            let checked = match moved.request_move(&self.rules, target) {
                Ok(()) => moved.check_tool(&self.rules, &call.name, path.as_deref()),
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
            format!(" The {} phase is final.", self.flow.phase)
        } else {
            format!(" Allowed next phases: {}.", next.join(", "))
        };
        Err(format!("{first}.{}{moves}", blocked.concat()))
    }

    /// While implementing or verifying: the checks to run; and which
    /// checks a next phase needs.
    fn checks_guidance(&self) -> String {
        let quoted = |checks: &[String]| {
            checks.iter().map(|check| format!("`{check}`")).collect::<Vec<_>>().join(", ")
        };
        let mut text = String::new();
        let checks = self.checks();
        if ["implement", "verify"].contains(&self.flow.phase.as_str()) && !checks.is_empty() {
            text.push_str(&format!(
                " This project's checks: {}; run them in the verify phase after changing files \
                 (deliver needs one to pass after the last change).",
                quoted(&checks)
            ));
        }
        let next = self.rule().map(|rule| rule.next.clone()).unwrap_or_default();
        for phase in next {
            let needed = self.rules.rule(&phase).map(|r| r.checks.clone()).unwrap_or_default();
            if !needed.is_empty() {
                let list = quoted(&needed);
                text.push_str(&format!(
                    " Entering {phase} needs {list} to pass after the last change."
                ));
            }
        }
        text
    }

    /// The phase rules' checks (every phase's), e.g. `cargo clippy`.
    fn rule_checks(&self) -> impl Iterator<Item = &String> {
        self.rules.phases.values().flat_map(|rule| &rule.checks)
    }

    /// The phase rules' checks, the configured ones, then the detected
    /// ones, without repeats.
    pub fn checks(&self) -> Vec<String> {
        let mut checks: Vec<String> = Vec::new();
        let all = self.rule_checks().chain(&self.verify_commands).chain(&self.detected_checks);
        for check in all {
            if !check.trim().is_empty() && !checks.contains(check) {
                checks.push(check.clone());
            }
        }
        checks
    }

    /// What a finished call means for the gate: a successful change counts
    /// as a change, a verification command as a verification.
    pub fn observe(&mut self, call: &ToolCall, result: &ToolResult, meta: &serde_json::Value) {
        if meta.get("kind").and_then(serde_json::Value::as_str) == Some("denied") {
            return;
        }
        match tool_kind(&call.name) {
            ToolKind::Shell => {
                let command = string_argument(call, "command").unwrap_or_default();
                let exit = meta.get("exit_code").and_then(serde_json::Value::as_i64);
                if is_verification_command(&command, &self.checks()) {
                    if let Some(code) = exit {
                        let passed = code == 0 && !result.is_error;
                        let ran: Vec<String> = self
                            .rule_checks()
                            .filter(|check| runs_check(&command, check))
                            .cloned()
                            .collect();
                        for check in ran {
                            self.flow.record_check(&check, passed);
                        }
                        self.flow.record_verification(passed);
                    }
                } else if meta.get("changed").and_then(serde_json::Value::as_bool) == Some(true) {
                    self.flow.record_change(None);
                }
            }
            ToolKind::Write if !result.is_error => {
                if meta.get("changed").and_then(serde_json::Value::as_bool) != Some(false) {
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
}

/// What a harness call leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum HarnessOutcome {
    /// Answered: record `events`, then the result.
    Answered { events: Vec<SessionEvent>, result: ToolResult },
    /// A plan waits for the user's review (the approval path).
    Review { events: Vec<SessionEvent>, reason: String },
    /// A plan was submitted and the turn stops for an offline review.
    Stop { events: Vec<SessionEvent>, result: ToolResult },
}

/// `note` (in the schema) is for the model's own account; unknown fields
/// are ignored, so it needs no field here.
#[derive(Deserialize)]
struct SetPhaseArgs {
    phase: String,
}

#[derive(Deserialize)]
struct SubmitPlanArgs {
    plan_markdown: String,
}

#[derive(Deserialize)]
struct TodoArgs {
    todos: Vec<Task>,
}

/// Answers a harness call (one of [`HARNESS_TOOLS`]).
pub fn answer(flow: &mut WorkflowState, call: &ToolCall) -> HarnessOutcome {
    let id = call.call_id.as_str();
    let refuse = |text: String| HarnessOutcome::Answered {
        events: Vec::new(),
        result: ToolResult::error(id, text),
    };
    match call.name.as_str() {
        "set_phase" => match serde_json::from_str::<SetPhaseArgs>(&call.arguments) {
            Err(error) => refuse(format!("invalid set_phase arguments: {error}")),
            Ok(SetPhaseArgs { phase }) => set_phase(flow, id, &phase),
        },
        "submit_plan" => match serde_json::from_str::<SubmitPlanArgs>(&call.arguments) {
            Err(error) => refuse(format!("invalid submit_plan arguments: {error}")),
            Ok(args) if args.plan_markdown.trim().is_empty() => {
                refuse("the plan is empty; pass it as plan_markdown".to_owned())
            }
            Ok(args) => submit_plan(flow, call, args.plan_markdown),
        },
        "todo_write" => match serde_json::from_str::<TodoArgs>(&call.arguments) {
            Err(error) => refuse(format!("invalid todo_write arguments: {error}")),
            Ok(args) => match tasks::validate(&args.todos) {
                Err(error) => refuse(format!("task list refused: {error}")),
                Ok(()) => {
                    flow.tasks = args.todos;
                    let task = serde_json::json!({ "tasks": flow.tasks });
                    HarnessOutcome::Answered {
                        events: vec![SessionEvent::TaskUpdated { task }],
                        result: ToolResult::ok(id, tasks::summary(&flow.tasks)),
                    }
                }
            },
        },
        other => refuse(format!("`{other}` is not a harness tool")),
    }
}

fn set_phase(flow: &mut WorkflowState, id: &str, phase: &str) -> HarnessOutcome {
    let from = flow.flow.phase.clone();
    match flow.flow.request_move(&flow.rules, phase) {
        Err(refusal) => HarnessOutcome::Answered {
            events: Vec::new(),
            result: ToolResult::error(id, format!("move refused: {refusal}")),
        },
        Ok(()) => {
            let purpose = flow.rule().map(|rule| rule.purpose.clone()).unwrap_or_default();
            let mut text = format!("now in the {phase} phase: {purpose}");
            if phase == "deliver" && flow.flow.delivers_unverified() {
                text.push_str(
                    " The changes were NOT verified (the verification limit was reached): say so plainly.",
                );
            }
            let events = if from == phase {
                Vec::new()
            } else {
                vec![SessionEvent::PhaseChanged { from, to: phase.to_owned() }]
            };
            HarnessOutcome::Answered { events, result: ToolResult::ok(id, text) }
        }
    }
}

fn submit_plan(flow: &mut WorkflowState, call: &ToolCall, text: String) -> HarnessOutcome {
    let id = call.call_id.as_str();
    let mut events = match flow.admit(call) {
        Ok(events) => events,
        Err(reason) => {
            return HarnessOutcome::Answered {
                events: Vec::new(),
                result: ToolResult::error(id, reason),
            };
        }
    };
    flow.flow.submit_plan(String::new(), text.clone());
    if !flow.flow.plan_required {
        flow.flow.review_plan(true, None);
    }
    events.push(plan_event(&flow.flow));
    if !flow.flow.plan_required {
        let result = ToolResult::ok(id, "plan recorded; no review is required, go ahead");
        return HarnessOutcome::Answered { events, result };
    }
    match flow.review {
        PlanReview::Ask => {
            HarnessOutcome::Review { events, reason: format!("review this plan:\n\n{text}") }
        }
        PlanReview::Approve => {
            flow.flow.review_plan(true, None);
            events.push(plan_event(&flow.flow));
            HarnessOutcome::Answered { events, result: ToolResult::ok(id, approved_text()) }
        }
        PlanReview::StopAfterSubmit => {
            let result = ToolResult::ok(id, "plan submitted; the user reviews it later");
            HarnessOutcome::Stop { events, result }
        }
    }
}

/// The user's answer on a plan under review.
pub fn review(
    flow: &mut WorkflowState,
    call_id: &str,
    approved: bool,
    note: Option<String>,
) -> (SessionEvent, ToolResult) {
    flow.flow.review_plan(approved, note.clone());
    let result = if approved {
        // A note on an approval (e.g. "the user edited the plan file")
        // reaches the model with the approval.
        match note.filter(|note| !note.trim().is_empty()) {
            Some(note) => {
                ToolResult::ok(call_id, format!("{} Note from the user: {note}", approved_text()))
            }
            None => ToolResult::ok(call_id, approved_text()),
        }
    } else {
        let feedback = note.unwrap_or_else(|| "no feedback given".to_owned());
        ToolResult::error(call_id, rejection_text(&feedback))
    };
    (plan_event(&flow.flow), result)
}

/// What the model reads when the user rejects its plan, live (the
/// `submit_plan` result) or in a later run (the next prompt).
pub fn rejection_text(feedback: &str) -> String {
    format!("plan rejected: {feedback}. Revise it and submit it again.")
}

fn approved_text() -> &'static str {
    "plan approved: move to implement with set_phase and follow it"
}

fn plan_event(flow: &Workflow) -> SessionEvent {
    let plan = serde_json::to_value(&flow.plan).unwrap_or(serde_json::Value::Null);
    SessionEvent::PlanUpdated { plan }
}

fn string_argument(call: &ToolCall, key: &str) -> Option<String> {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
    args.get(key).and_then(serde_json::Value::as_str).map(str::to_owned)
}

fn path_argument(call: &ToolCall) -> Option<String> {
    string_argument(call, "path")
}

/// The shipped rules; a permissive single phase if they ever fail to
/// parse (a unit test keeps them parsing).
fn default_rules() -> PhaseRules {
    PhaseRules::parse(DEFAULT_PHASE_RULES).unwrap_or_else(|_| {
        let all =
            vec![ToolKind::Read, ToolKind::Write, ToolKind::Shell, ToolKind::Plan, ToolKind::Tasks];
        let rule = PhaseRule {
            purpose: "Do the task.".to_owned(),
            tools: all,
            next: Vec::new(),
            skippable: false,
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

/// The specs of the harness tools, offered with the runtime's tools.
pub fn harness_specs() -> Vec<ToolSpec> {
    let phases = "orient, explore, plan, implement, verify, deliver";
    vec![
        ToolSpec {
            name: "set_phase".to_owned(),
            description: format!(
                "Move the workflow to another phase ({phases}). The harness checks the move: \
                 deliver needs a passing verification (e.g. the tests) after the last change, \
                 implement needs an approved plan when one is required. A refusal lists the \
                 allowed moves."
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "phase": { "type": "string", "description": "the phase to move to" },
                    "note": { "type": "string", "description": "why, in one sentence" }
                },
                "required": ["phase"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "submit_plan".to_owned(),
            description: "Submit the plan for review (plan phase): markdown with context, steps, \
                          risks and rollback, verification, and what stays untouched."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": { "plan_markdown": { "type": "string" } },
                "required": ["plan_markdown"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "todo_write".to_owned(),
            description: "Replace the task list: items with id, text and status (pending, \
                          in_progress, completed); at most one in progress."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": { "type": "string" },
                                "text": { "type": "string" },
                                "status": { "type": "string", "enum": ["pending", "in_progress", "completed"] }
                            },
                            "required": ["id", "text", "status"],
                            "additionalProperties": false
                        }
                    }
                },
                "required": ["todos"],
                "additionalProperties": false
            }),
        },
    ]
}
