//! The harness tools `set_phase`, `submit_plan` and `todo_write`: their
//! specs (built from the session's phase rules, so a project's own phases
//! are the ones described) and their answers, given by the loop itself,
//! never by the tool runtime.
//!
//! Invariants: pure; model input never panics (bad arguments become an
//! error result); a refusal changes nothing and says why and what is
//! allowed instead. The plan's path is empty here; the driver saves the
//! plan under `.keel/plans/` and fills the path in before the line is
//! logged.

use serde::Deserialize;

use crate::plan::{Gate, PhaseRules, Workflow};
use crate::protocol::{SessionEvent, ToolCall, ToolResult, ToolSpec};
use crate::tasks::{self, Task};

use super::workflow::{PlanReview, WorkflowState};

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

/// Answers a harness call (one of [`super::HARNESS_TOOLS`]).
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
                        result: ToolResult::ok(id, tasks_text(&flow.tasks)),
                    }
                }
            },
        },
        other => refuse(format!("`{other}` is not a harness tool")),
    }
}

/// The task list as `todo_write`'s result shows it.
fn tasks_text(tasks: &[Task]) -> String {
    if tasks.is_empty() {
        return "Tasks: none.".to_owned();
    }
    format!("Tasks:\n{}", tasks::summary(tasks))
}

fn set_phase(flow: &mut WorkflowState, id: &str, phase: &str) -> HarnessOutcome {
    let from = flow.flow.phase.clone();
    if flow.rules.rule(phase).is_none() {
        let known: Vec<&str> = flow.rules.phases.keys().map(String::as_str).collect();
        let text = format!("move refused: there is no {phase} phase; phases: {}", known.join(", "));
        return HarnessOutcome::Answered {
            events: Vec::new(),
            result: ToolResult::error(id, text),
        };
    }
    match flow.flow.request_move(&flow.rules, phase) {
        Err(refusal) => HarnessOutcome::Answered {
            events: Vec::new(),
            result: ToolResult::error(id, format!("move refused: {refusal}")),
        },
        Ok(()) => {
            let purpose =
                flow.rules.rule(phase).map(|rule| rule.purpose.clone()).unwrap_or_default();
            let mut text = format!("now in the {phase} phase: {purpose}");
            if phase == "deliver" && flow.flow.delivers_unverified() {
                text.push_str(&format!(
                    " The changes were NOT verified (the verification limit was reached; {}): \
                     say so plainly.",
                    flow.flow.verification_status()
                ));
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
        let result = ToolResult::ok(
            id,
            "plan recorded and approved (no review is required): implement it; your first \
             edit moves you to implement",
        );
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
    "plan approved: implement it as approved; your first edit moves you to implement"
}

pub(super) fn plan_event(flow: &Workflow) -> SessionEvent {
    let plan = serde_json::to_value(&flow.plan).unwrap_or(serde_json::Value::Null);
    SessionEvent::PlanUpdated { plan }
}

/// The phases in the order a task meets them (breadth first from the
/// start), each with the phases that may follow it.
fn phase_map(rules: &PhaseRules) -> String {
    let mut order = vec![rules.start.clone()];
    let mut at = 0;
    while let Some(phase) = order.get(at).cloned() {
        for next in rules.rule(&phase).map(|rule| rule.next.clone()).unwrap_or_default() {
            if !order.contains(&next) {
                order.push(next);
            }
        }
        at += 1;
    }
    for phase in rules.phases.keys() {
        if !order.contains(phase) {
            order.push(phase.clone());
        }
    }
    order
        .iter()
        .map(|phase| {
            let next = rules.rule(phase).map(|rule| rule.next.join("|")).unwrap_or_default();
            if next.is_empty() { format!("{phase} (final)") } else { format!("{phase}→{next}") }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// What entering each gated phase needs, as `: deliver needs …; …`.
fn gates(rules: &PhaseRules) -> String {
    let mut needs = Vec::new();
    for (phase, rule) in &rules.phases {
        for gate in &rule.requires {
            needs.push(match gate {
                Gate::PlanApprovedWhenRequired => {
                    format!("{phase} needs an approved plan if one is required")
                }
                Gate::VerifiedAfterLastChange => {
                    format!("{phase} needs a check that passed after your last change")
                }
            });
        }
        if !rule.checks.is_empty() {
            let checks: Vec<String> = rule.checks.iter().map(|c| format!("`{c}`")).collect();
            needs.push(format!("{phase} needs {} passing", checks.join(", ")));
        }
    }
    if needs.is_empty() { String::new() } else { format!(": {}", needs.join(", ")) }
}

/// The specs of the harness tools for a session under `rules`, offered
/// with the runtime's tools.
pub fn harness_specs(rules: &PhaseRules) -> Vec<ToolSpec> {
    let phases: Vec<&str> = rules.phases.keys().map(String::as_str).collect();
    vec![
        ToolSpec {
            name: "set_phase".to_owned(),
            description: format!(
                "Move the workflow to another phase ({}). Rarely needed: a call the phase does \
                 not allow moves you on by itself when a next phase allows it. Use it to go \
                 back, or to enter a phase no call leads to. Checked{}; a refusal says why and \
                 changes nothing. Ending the turn needs no move.",
                phase_map(rules),
                gates(rules)
            ),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "phase": {
                        "type": "string",
                        "enum": phases,
                        "description": "The phase to move to."
                    },
                    "note": { "type": "string", "description": "Why, briefly." }
                },
                "required": ["phase"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "submit_plan".to_owned(),
            description: "Submit your plan (plan phase). Unless a review is required (plan \
                          mode, or the project's rules) it is approved at once. Otherwise the \
                          user approves or rejects it (a headless run may stop here); a \
                          rejection carries their feedback: revise and submit again."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "plan_markdown": {
                        "type": "string",
                        "description": "The whole plan in markdown, with the sections the plan \
                                        phase lists."
                    }
                },
                "required": ["plan_markdown"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "todo_write".to_owned(),
            description: "Keep a task list the user sees, for work of three or more steps; \
                          skip it for smaller tasks. Each call replaces the whole list: mark an \
                          item in_progress when you start it (at most one) and completed as \
                          soon as it is done."
                .to_owned(),
            parameters: serde_json::json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "description": "Every task, in order.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "id": { "type": "string", "description": "A short stable id." },
                                "text": { "type": "string", "description": "The task, briefly." },
                                "status": {
                                    "type": "string",
                                    "enum": ["pending", "in_progress", "completed"],
                                    "description": "Its state."
                                }
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
