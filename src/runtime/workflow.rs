//! The session's side of the workflow (issue 6): how a front end sets
//! the plan review, approves or rejects a plan waiting from an earlier run,
//! and reads the workflow for its report. The rules themselves are enforced in
//! `agent::step`; this file only exposes and records.
//!
//! A submitted plan is saved as `.keel/plans/<session>-r<revision>.md` in
//! the workspace before its `plan_updated` line is written, and the line
//! (and the state) carry that path; a failed save is a warning, the plan
//! stays in the log.
//!
//! Invariant: a plan approved here is recorded in the log before the
//! method returns, so a resume sees it. The review style is a per-process
//! flag, not logged: a resume sets it again. The plan requirement comes
//! back from the log where it matters: plan mode is logged, and a plan
//! logged unapproved (only a required one can be) keeps requiring review.

use crate::agent::{PlanReview, WorkflowState};
use crate::plan::PlanStatus;
use crate::policy::ApprovalMode;
use crate::protocol::SessionEvent;

use super::{RuntimeError, RuntimeEvent, Session};

impl Session {
    /// Requires a plan and says how it is reviewed (`keel exec
    /// --plan-only` / `--approve-plan`).
    pub fn set_plan_review(&mut self, review: PlanReview) {
        self.state.workflow.flow.plan_required = true;
        self.state.workflow.review = review;
    }

    /// Approves the plan waiting for review, recording it; whether there
    /// was one. As a live approval does, this leaves plan mode (read-only)
    /// for ask mode, recorded.
    pub fn approve_submitted_plan(&mut self) -> Result<bool, RuntimeError> {
        match self.state.workflow.approve_submitted() {
            Some(event) => {
                self.log.append(event)?;
                if self.state.config.policy.mode == ApprovalMode::Plan {
                    self.set_approval_mode(ApprovalMode::Ask);
                }
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Rejects the plan waiting for review with `feedback`, recording it;
    /// whether there was one. The model stays in the plan phase.
    pub fn reject_submitted_plan(&mut self, feedback: &str) -> Result<bool, RuntimeError> {
        match self.state.workflow.reject_submitted(feedback) {
            Some(event) => {
                self.log.append(event)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// The plan as approved is the plan file's text: the user may have
    /// edited it during the review (the TUI's `$EDITOR`, or any editor),
    /// so the state (and the approval's `plan_updated` line, compactions
    /// and resumes after it) takes the file's text when it differs.
    pub(super) fn adopt_edited_plan(&mut self) {
        let Some(plan) = self.state.workflow.flow.plan.as_mut() else { return };
        if plan.path.is_empty() {
            return;
        }
        match std::fs::read_to_string(&plan.path) {
            Ok(text) if !text.trim().is_empty() && text != plan.text => plan.text = text,
            Ok(_) => {}
            Err(error) => self.sink.emit(RuntimeEvent::Warning {
                message: format!("cannot read the plan file {}: {error}", plan.path),
            }),
        }
    }

    /// The task list the model keeps with `todo_write`.
    pub fn tasks(&self) -> &[crate::tasks::Task] {
        &self.state.workflow.tasks
    }

    /// The workflow: phase, plan and the verification gate.
    pub fn workflow(&self) -> &crate::plan::Workflow {
        &self.state.workflow.flow
    }

    /// The workflow as front ends show it.
    pub(super) fn workflow_event(&self) -> RuntimeEvent {
        workflow_event(&self.state.workflow)
    }

    /// The mode chosen with a plan approval, once the plan is approved:
    /// set, logged and shown. A failed log write is said (the writer is
    /// then poisoned, so the turn stops at its next record).
    pub(super) fn apply_plan_mode(&mut self) {
        let Some(mode) = self.approver.take_plan_mode() else { return };
        if !self.state.workflow.flow.plan_approved() || self.state.config.policy.mode == mode {
            return;
        }
        self.state.config.policy.mode = mode;
        let logged = self.log.append(SessionEvent::ModeChanged { mode });
        if let Err(error) = logged {
            self.sink.emit(RuntimeEvent::Error { message: error.to_string() });
        }
        self.sink.emit(RuntimeEvent::ModeChanged { mode });
    }

    /// Saves a newly submitted plan and fills its path into `event` (a
    /// `plan_updated` line) and the state; other events pass unchanged.
    pub(super) fn save_plan(&mut self, event: SessionEvent) -> SessionEvent {
        let SessionEvent::PlanUpdated { mut plan } = event else { return event };
        let known = self.state.workflow.flow.plan.as_ref().map(|p| p.path.clone());
        let unsaved = plan["path"].as_str().is_none_or(str::is_empty);
        if plan["status"] == "submitted" && unsaved {
            let revision = plan["revision"].as_u64().unwrap_or(1);
            let path = self
                .workspace_root
                .join(".keel")
                .join("plans")
                .join(format!("{}-r{revision}.md", self.id));
            let text = plan["text"].as_str().unwrap_or_default().to_owned();
            let saved = path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, text));
            match saved {
                Ok(()) => {
                    let shown = path.display().to_string();
                    plan["path"] = serde_json::Value::from(shown.clone());
                    if let Some(state) = self.state.workflow.flow.plan.as_mut() {
                        state.path = shown;
                    }
                }
                Err(error) => {
                    let message = format!("cannot save the plan to {}: {error}", path.display());
                    self.sink.emit(RuntimeEvent::Warning { message });
                }
            }
        } else if let Some(path) = known.filter(|path| unsaved && !path.is_empty()) {
            plan["path"] = serde_json::Value::from(path);
        }
        SessionEvent::PlanUpdated { plan }
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
