//! The session's side of the workflow (issue 6): how a front end sets
//! the plan review, approves a plan waiting from an earlier run, and reads
//! the workflow for its report. The rules themselves are enforced in
//! `agent::step`; this file only exposes and records.
//!
//! Invariant: a plan approved here is recorded in the log before the
//! method returns, so a resume sees it. The plan requirement and review
//! style are per-process flags, not logged: a resume sets them again.

use crate::agent::PlanReview;

use super::{RuntimeError, Session};

impl Session {
    /// Requires a plan and says how it is reviewed (`keel exec
    /// --plan-only` / `--approve-plan`).
    pub fn set_plan_review(&mut self, review: PlanReview) {
        self.state.workflow.flow.plan_required = true;
        self.state.workflow.review = review;
    }

    /// Approves the plan waiting for review, recording it; whether there
    /// was one.
    pub fn approve_submitted_plan(&mut self) -> Result<bool, RuntimeError> {
        match self.state.workflow.approve_submitted() {
            Some(event) => {
                self.log.append(event)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The workflow: phase, plan and the verification gate.
    pub fn workflow(&self) -> &crate::plan::Workflow {
        &self.state.workflow.flow
    }
}
