//! The harness tools `set_phase`, `submit_plan`, `todo_write` and
//! `ask_user` (the question goes to the user, `agent/ask_user.rs`): their
//! specs (built from the session's phase rules, so a project's own phases
//! are the ones described) and their answers, given by the loop itself,
//! never by the tool runtime. Each one's arguments are a typed struct, and
//! the schema the model is offered is generated from it
//! (`protocol::schema_of`), as for every built-in tool; only `set_phase`'s
//! list of phases comes from the rules.
//!
//! Invariants: pure; model input never panics (arguments that do not parse
//! become an error result naming the field); a refusal changes nothing and
//! says why and what is allowed instead. The plan's path is empty here; `step` has the driver
//! save the plan under `.keel/plans/` (`agent/decisions.rs`) and records
//! the line with the path.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::plan::{Gate, PhaseRules};
use crate::protocol::{HarnessTool, SessionEvent, ToolCall, ToolResult, ToolSpec};
use crate::tasks::{self, Task};

use super::workflow::{PlanReview, WorkflowState, plan_event};

/// What a harness call leads to.
#[derive(Debug, Clone, PartialEq)]
pub enum HarnessOutcome {
    /// Answered: record `events`, then the result.
    Answered { events: Vec<SessionEvent>, result: ToolResult },
    /// A plan waits for the user's review (the approval path).
    Review { events: Vec<SessionEvent>, reason: String },
    /// A plan was submitted and the turn stops for an offline review.
    Stop { events: Vec<SessionEvent>, result: ToolResult },
    /// `ask_user`: the question waits for the user's answer.
    Ask { events: Vec<SessionEvent>, question: String, choices: Vec<String> },
}

// Unknown fields are ignored (no `deny_unknown_fields`): a model that adds
// one still gets its call answered.
#[derive(Deserialize, JsonSchema)]
pub(super) struct SetPhaseArgs {
    /// The phase to move to.
    phase: String,
    // No `note`: keel never acted on it, and the model says why in its
    // text. Older calls that carry one still parse (unknown fields are
    // ignored).
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct SubmitPlanArgs {
    /// The plan in markdown, with the plan phase's sections.
    plan_markdown: String,
}

#[derive(Deserialize, JsonSchema)]
pub(super) struct AskUserArgs {
    /// The question.
    question: String,
    /// Answers to offer (the user may answer otherwise).
    #[serde(default)]
    #[schemars(length(max = 9))]
    choices: Vec<String>,
}

/// Most choices a question may offer.
pub const MAX_CHOICES: usize = 9;

#[derive(Deserialize, JsonSchema)]
pub(super) struct TodoArgs {
    /// Every task, in order.
    todos: Vec<Task>,
}

/// Answers a harness call (one [`HarnessTool`]).
pub fn answer(flow: &mut WorkflowState, call: &ToolCall) -> HarnessOutcome {
    let id = call.call_id.as_str();
    let refuse = |text: String| HarnessOutcome::Answered {
        events: Vec::new(),
        result: ToolResult::error(id, text),
    };
    let Some(tool) = call.harness_tool() else {
        return refuse(format!("`{}` is not a harness tool", call.name));
    };
    match tool {
        HarnessTool::SetPhase => match parse::<SetPhaseArgs>(tool, call) {
            Err(error) => refuse(error),
            Ok(SetPhaseArgs { phase, .. }) => set_phase(flow, id, &phase),
        },
        HarnessTool::SubmitPlan => match parse::<SubmitPlanArgs>(tool, call) {
            Err(error) => refuse(error),
            Ok(args) if args.plan_markdown.trim().is_empty() => {
                refuse("the plan is empty; pass it as plan_markdown".to_owned())
            }
            Ok(args) => submit_plan(flow, call, args.plan_markdown),
        },
        HarnessTool::AskUser => match parse::<AskUserArgs>(tool, call) {
            Err(error) => refuse(error),
            Ok(args) if args.question.trim().is_empty() => {
                refuse("the question is empty; pass it as question".to_owned())
            }
            Ok(args) if args.choices.len() > MAX_CHOICES => {
                refuse(format!("at most {MAX_CHOICES} choices; ask a narrower question"))
            }
            Ok(AskUserArgs { question, choices }) => HarnessOutcome::Ask {
                events: Vec::new(),
                question,
                choices: choices.into_iter().filter(|c| !c.trim().is_empty()).collect(),
            },
        },
        HarnessTool::TodoWrite => match parse::<TodoArgs>(tool, call) {
            Err(error) => refuse(error),
            Ok(TodoArgs { mut todos }) => {
                tasks::number(&mut todos);
                if let Err(error) = tasks::validate(&todos) {
                    return refuse(format!("task list refused: {error}"));
                }
                flow.tasks = todos;
                let task = serde_json::json!({ "tasks": flow.tasks });
                HarnessOutcome::Answered {
                    events: vec![SessionEvent::TaskUpdated { task }],
                    result: ToolResult::ok(id, tasks_text(&flow.tasks)),
                }
            }
        },
    }
}

/// The call's arguments as `Args`, or what the model reads when they do not
/// fit. A `null` field is an absent one (strict tool calling sends `null`
/// for each optional field left out: `protocol::strict_schema`).
fn parse<Args: serde::de::DeserializeOwned>(
    tool: HarnessTool,
    call: &ToolCall,
) -> Result<Args, String> {
    let invalid = |error: serde_json::Error| format!("invalid {} arguments: {error}", tool.name());
    let mut arguments: serde_json::Value =
        serde_json::from_str(&call.arguments).map_err(invalid)?;
    crate::protocol::strict_schema::nulls_as_absent(&mut arguments);
    serde_json::from_value(arguments).map_err(invalid)
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
    let mut events = match flow.admit(call, false) {
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

/// How a headless run's approver starts its answer to `submit_plan`: no
/// one reviewed the plan, so the model is told to stop, not to revise.
pub const PLAN_NOT_REVIEWABLE: &str = "this headless run cannot review plans";

/// What the model reads when the user rejects its plan, live (the
/// `submit_plan` result) or in a later run (the next prompt); a plan no one
/// could review gets one instruction, to stop (its feedback says so).
pub fn rejection_text(feedback: &str) -> String {
    if feedback.starts_with(PLAN_NOT_REVIEWABLE) {
        return format!("plan not reviewed: {feedback}.");
    }
    format!("plan rejected: {feedback}. Revise it and submit it again.")
}

fn approved_text() -> &'static str {
    "plan approved: implement it as approved; your first edit moves you to implement"
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

const SUBMIT_PLAN: &str = "Submit your plan: approved at once unless a review is required (plan \
mode, or the project's rules), then the user approves or rejects it with feedback.";

const ASK_USER: &str = "Ask the user a question, optionally with choices, and wait for the \
answer. Only for a decision you cannot make from the code or the task.";
const TODO_WRITE: &str = "A task list the user sees, for work of three or more steps. Each call \
replaces the list: one item in_progress at a time, completed as soon as it is done.";

/// `set_phase`'s description: the gates of `rules`. The moves allowed
/// from each phase are not repeated here: the workflow's announcement of
/// the phase names them (and the `phase` enum the phases).
fn set_phase_description(rules: &PhaseRules) -> String {
    format!(
        "Move the workflow to another phase. Rarely needed: a call the phase does not allow \
         moves you on by itself, and ending the turn needs none; use it to go back or to a \
         phase no call leads to. \
         Checked{}; a refusal says why.",
        gates(rules)
    )
}

/// The specs of the harness tools for a session under `rules`, offered
/// with the runtime's tools.
pub fn harness_specs(rules: &PhaseRules) -> Vec<ToolSpec> {
    HarnessTool::ALL.into_iter().map(|tool| harness_spec(tool, rules)).collect()
}

/// What the model is offered for `tool` under `rules`: its name, what it
/// does, and the schema of its argument type (its class is
/// [`HarnessTool::class`]). `set_phase`'s `phase` lists the rules' phases.
pub fn harness_spec(tool: HarnessTool, rules: &PhaseRules) -> ToolSpec {
    match tool {
        HarnessTool::SetPhase => {
            let mut spec =
                ToolSpec::typed::<SetPhaseArgs>(tool.name(), &set_phase_description(rules));
            let phases: Vec<&str> = rules.phases.keys().map(String::as_str).collect();
            if let Some(phase) = spec.parameters["properties"]["phase"].as_object_mut() {
                phase.insert("enum".to_owned(), serde_json::json!(phases));
            }
            spec
        }
        HarnessTool::SubmitPlan => ToolSpec::typed::<SubmitPlanArgs>(tool.name(), SUBMIT_PLAN),
        HarnessTool::TodoWrite => ToolSpec::typed::<TodoArgs>(tool.name(), TODO_WRITE),
        HarnessTool::AskUser => ToolSpec::typed::<AskUserArgs>(tool.name(), ASK_USER),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// An argument object filling every property the schema offers.
    fn example(schema: &serde_json::Value) -> serde_json::Value {
        match schema["type"].as_str() {
            Some("object") => {
                let properties = schema["properties"].as_object().cloned().unwrap_or_default();
                properties.iter().map(|(key, property)| (key.clone(), example(property))).collect()
            }
            Some("array") => json!([example(&schema["items"])]),
            _ if schema.get("enum").is_some() => schema["enum"][0].clone(),
            Some("string") => json!("x"),
            other => panic!("no example for {other:?}: {schema}"),
        }
    }

    // Issue 32.7: a plan no one could review gets one instruction (stop),
    // not "stop" and then "revise it and submit it again".
    #[test]
    fn an_unreviewable_plan_is_told_to_stop_only() {
        let text = rejection_text(&format!("{PLAN_NOT_REVIEWABLE}: stop here"));
        assert!(text.contains("stop here") && !text.contains("submit it again"), "{text}");
        assert!(rejection_text("too broad").ends_with("Revise it and submit it again."));
    }

    #[test]
    fn every_harness_spec_accepts_an_example_of_its_own_schema() {
        for spec in harness_specs(&super::super::shipped_rules()) {
            let tool = HarnessTool::parse(&spec.name).unwrap();
            let args = example(&spec.parameters);
            let call = ToolCall::new("c", &spec.name, args.to_string());
            let parsed = match tool {
                HarnessTool::SetPhase => parse::<SetPhaseArgs>(tool, &call).map(|_| ()),
                HarnessTool::SubmitPlan => parse::<SubmitPlanArgs>(tool, &call).map(|_| ()),
                HarnessTool::TodoWrite => parse::<TodoArgs>(tool, &call).map(|_| ()),
                HarnessTool::AskUser => parse::<AskUserArgs>(tool, &call).map(|_| ()),
            };
            assert_eq!(parsed, Ok(()), "{}: {args}", spec.name);
            let required = spec.parameters["required"].as_array().unwrap();
            for key in required {
                let mut missing = args.clone();
                missing.as_object_mut().unwrap().remove(key.as_str().unwrap());
                let call = ToolCall::new("c", &spec.name, missing.to_string());
                let refused = match tool {
                    HarnessTool::SetPhase => parse::<SetPhaseArgs>(tool, &call).is_err(),
                    HarnessTool::SubmitPlan => parse::<SubmitPlanArgs>(tool, &call).is_err(),
                    HarnessTool::TodoWrite => parse::<TodoArgs>(tool, &call).is_err(),
                    HarnessTool::AskUser => parse::<AskUserArgs>(tool, &call).is_err(),
                };
                assert!(refused, "{}: `{key}` is required but not needed", spec.name);
            }
        }
    }

    // Strict tool calling sends `null` for every optional field left out.
    #[test]
    fn every_harness_spec_takes_null_for_its_optional_fields() {
        for spec in harness_specs(&super::super::shipped_rules()) {
            let tool = HarnessTool::parse(&spec.name).unwrap();
            let mut args = example(&spec.parameters);
            let required = spec.parameters["required"].as_array().cloned().unwrap_or_default();
            for (key, value) in args.as_object_mut().unwrap() {
                if !required.contains(&json!(key)) {
                    *value = serde_json::Value::Null;
                }
            }
            let call = ToolCall::new("c", &spec.name, args.to_string());
            let parsed = match tool {
                HarnessTool::SetPhase => parse::<SetPhaseArgs>(tool, &call).map(|_| ()),
                HarnessTool::SubmitPlan => parse::<SubmitPlanArgs>(tool, &call).map(|_| ()),
                HarnessTool::TodoWrite => parse::<TodoArgs>(tool, &call).map(|_| ()),
                HarnessTool::AskUser => parse::<AskUserArgs>(tool, &call).map(|_| ()),
            };
            assert_eq!(parsed, Ok(()), "{}: {args}", spec.name);
        }
    }

    #[test]
    fn the_schemas_say_what_the_tools_need() {
        let specs = harness_specs(&super::super::shipped_rules());
        let names: Vec<&str> = specs.iter().map(|spec| spec.name.as_str()).collect();
        assert_eq!(names, ["set_phase", "submit_plan", "todo_write", "ask_user"]);
        assert_eq!(specs[3].parameters["required"], json!(["question"]));
        assert_eq!(specs[3].parameters["properties"]["choices"]["maxItems"], MAX_CHOICES);
        assert_eq!(specs[0].parameters["required"], json!(["phase"]));
        assert!(specs[0].parameters["properties"].get("note").is_none(), "never acted on");
        let older =
            ToolCall::new("c", "set_phase", json!({"phase": "plan", "note": "n"}).to_string());
        assert!(parse::<SetPhaseArgs>(HarnessTool::SetPhase, &older).is_ok(), "a logged call");
        assert_eq!(specs[1].parameters["required"], json!(["plan_markdown"]));
        let item = &specs[2].parameters["properties"]["todos"]["items"];
        assert_eq!(item["required"], json!(["text", "status"]));
        assert!(item["properties"].get("id").is_none(), "keel numbers the tasks");
        assert_eq!(
            item["properties"]["status"]["enum"],
            json!(["pending", "in_progress", "completed"])
        );
    }
}
