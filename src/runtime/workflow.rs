//! The session's side of the workflow: how a front end sets
//! the plan review, approves or rejects a plan waiting from an earlier run
//! (each an `Input` to `agent::step`, which decides and records), reads the
//! workflow for its report, and writes a submitted plan to its file.
//!
//! A submitted plan is saved as `.keel/plans/<session>-r<revision>.md` in
//! the workspace (`Effect::SavePlan`) before `step` records its
//! `plan_updated` line, and the line (and the state) carry that path; a
//! failed save is a warning, the plan stays in the log.
//!
//! Invariant: a plan approved here is recorded in the log before the
//! method returns, so a resume sees it. The review style is a per-process
//! flag, not logged: a resume sets it again. The plan requirement comes
//! back from the log where it matters: plan mode is logged, and a plan
//! logged unapproved (only a required one can be) keeps requiring review.

use crate::agent::{Input, PlanReview, WorkflowState, step};
use crate::plan::PlanStatus;

use super::{RuntimeError, RuntimeEvent, Session};

impl Session {
    /// Requires a plan and says how it is reviewed (`keel exec
    /// --plan-only` / `--approve-plan`).
    pub fn set_plan_review(&mut self, review: PlanReview) {
        // Nothing is recorded: the review style is per process.
        step(&mut self.state, Input::SetPlanReview { review });
    }

    /// Approves the plan waiting for review, recording it; whether there
    /// was one. As a live approval does, this leaves plan mode (read-only)
    /// for ask mode, recorded.
    pub fn approve_submitted_plan(&mut self) -> Result<bool, RuntimeError> {
        let verdict = Input::ReviewWaitingPlan { approved: true, feedback: String::new() };
        self.apply_outside_loop(verdict)
    }

    /// Rejects the plan waiting for review with `feedback`, recording it;
    /// whether there was one. The model stays in the plan phase.
    pub fn reject_submitted_plan(&mut self, feedback: &str) -> Result<bool, RuntimeError> {
        let verdict = Input::ReviewWaitingPlan { approved: false, feedback: feedback.to_owned() };
        self.apply_outside_loop(verdict)
    }

    /// The task list the model keeps with `todo_write`.
    pub fn tasks(&self) -> &[crate::tasks::Task] {
        &self.state.workflow().tasks
    }

    /// The workflow: phase, plan and the verification gate.
    pub fn workflow(&self) -> &crate::plan::Workflow {
        &self.state.workflow().flow
    }

    /// The workflow as front ends show it.
    pub(super) fn workflow_event(&self) -> RuntimeEvent {
        workflow_event(self.state.workflow())
    }

    /// Writes a newly submitted plan to its file (an `Effect::SavePlan`,
    /// see [`super::plan_store`]); its path, or `None` after a warning when
    /// it cannot be written (the plan stays in the log).
    pub(super) fn save_plan(&mut self, revision: u32, text: &str) -> Input {
        match self.plans.save(revision, text) {
            Ok(path) => Input::PlanSaved { path: Some(path.display().to_string()) },
            Err(error) => {
                let path = self.plans.path_of(revision);
                let message = format!("cannot save the plan to {}: {error}", path.display());
                self.sink.emit(RuntimeEvent::Warning { message });
                Input::PlanSaved { path: None }
            }
        }
    }
}

/// The workflow as front ends show it: phase, plan path and status, tasks.
pub(super) fn workflow_event(workflow: &WorkflowState) -> RuntimeEvent {
    let plan = workflow.flow.plan.as_ref();
    RuntimeEvent::WorkflowChanged {
        phase: workflow.flow.phase.clone(),
        plan_path: plan.map(|plan| plan.path.clone()).filter(|path| !path.is_empty()),
        plan_status: plan.map(|plan| {
            match plan.status {
                PlanStatus::Submitted => "submitted",
                PlanStatus::Approved => "approved",
                PlanStatus::Rejected { .. } => "rejected",
            }
            .to_owned()
        }),
        tasks: workflow.tasks.clone(),
    }
}
