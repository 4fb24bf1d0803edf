//! The runtime side of the workflow: where the session is, its plan, and
//! what changed and was verified. Each method is a pure check or update
//! the harness applies when a tool call, a move or a verification happens.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::rules::{Gate, PhaseRules, ToolKind, tool_kind, tools_of_kind};

/// Failed verifications after which delivery is allowed as "unverified".
pub const DEFAULT_MAX_VERIFY_ATTEMPTS: u32 = 3;
/// Commands kept per change for the gate's explanations.
const COMMAND_NOTES: usize = 4;
/// Longest command shown in an explanation.
const NOTE_COMMAND_CHARS: usize = 80;

/// A command run since the last change, and how the gate read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandNote {
    pub command: String,
    /// `passed`, `failed (exit 2)`, or why it did not count.
    pub outcome: String,
}

/// Where a plan stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum PlanStatus {
    /// Waiting for the user's review.
    Submitted,
    Approved,
    /// Sent back; the model revises it with the feedback.
    Rejected {
        feedback: String,
    },
}

/// The session's plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanState {
    /// Where it is saved (under `.keel/plans/`).
    pub path: String,
    pub text: String,
    /// Flattened: `"status": "rejected", "feedback": "…"` on the wire.
    #[serde(flatten)]
    pub status: PlanStatus,
    /// 1 for the first submission, +1 per revision.
    pub revision: u32,
}

/// A move the harness refused, with the moves it would accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoveRefusal {
    pub reason: String,
    pub allowed: Vec<String>,
}

impl std::fmt::Display for MoveRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.reason)?;
        if !self.allowed.is_empty() {
            write!(f, " Allowed next phases: {}.", self.allowed.join(", "))?;
        }
        Ok(())
    }
}

/// The workflow state of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workflow {
    pub phase: String,
    /// Plan mode, or the rules demand a plan.
    pub plan_required: bool,
    pub plan: Option<PlanState>,
    /// Counts file changes; a verification records the count it saw.
    pub changes: u64,
    pub verified_at: Option<u64>,
    /// Failed verifications since the last change or pass.
    pub failed_verifications: u32,
    pub max_verify_attempts: u32,
    /// Files the write tools changed (kept for a compaction's summary).
    pub changed_files: BTreeSet<String>,
    /// Commands since the last change, newest last (a few).
    #[serde(default)]
    pub commands_since_change: Vec<CommandNote>,
    /// The phase rules' check commands that passed, with the change count
    /// they passed at.
    #[serde(default)]
    pub passed_checks: BTreeMap<String, u64>,
    /// The current phase was entered at the verification limit without
    /// its checks passing.
    #[serde(default)]
    pub checks_skipped: bool,
}

impl Workflow {
    /// A workflow at the rules' start; a plan is required when the caller
    /// says so (plan mode) or the rules do.
    pub fn new(rules: &PhaseRules, plan_required: bool) -> Self {
        Self {
            phase: rules.start.clone(),
            plan_required: plan_required || rules.require_plan,
            plan: None,
            changes: 0,
            verified_at: None,
            failed_verifications: 0,
            max_verify_attempts: DEFAULT_MAX_VERIFY_ATTEMPTS,
            changed_files: BTreeSet::new(),
            commands_since_change: Vec::new(),
            passed_checks: BTreeMap::new(),
            checks_skipped: false,
        }
    }

    pub fn plan_approved(&self) -> bool {
        self.plan.as_ref().is_some_and(|plan| plan.status == PlanStatus::Approved)
    }

    /// Whether a call of `tool` may run now; the error is the reason for
    /// the model, naming the tools the phase allows.
    pub fn check_tool(&self, rules: &PhaseRules, tool: &str) -> Result<(), String> {
        self.check_call(rules, tool, tool_kind(tool))
    }

    /// [`Self::check_tool`] for a call judged as `kind` (a shell call
    /// proven read-only is a read).
    pub fn check_call(&self, rules: &PhaseRules, tool: &str, kind: ToolKind) -> Result<(), String> {
        if !rules.allows(&self.phase, kind) {
            let allowed = rules.rule(&self.phase).map(|r| r.tools.clone()).unwrap_or_default();
            let names: Vec<&str> = allowed.iter().flat_map(|kind| tools_of_kind(*kind)).collect();
            return Err(format!(
                "`{tool}` is not allowed in the {} phase, which allows {} and set_phase",
                self.phase,
                names.join(", ")
            ));
        }
        if kind == ToolKind::Write && self.plan_required && !self.plan_approved() {
            return Err("no file changes before the plan is approved: submit it with \
                        submit_plan and wait for the user's approval"
                .to_owned());
        }
        Ok(())
    }

    /// Moves to `target` if the rules allow it from here and its gates hold.
    pub fn request_move(&mut self, rules: &PhaseRules, target: &str) -> Result<(), MoveRefusal> {
        if target == self.phase {
            return Ok(());
        }
        let allowed = rules.rule(&self.phase).map(|r| r.next.clone()).unwrap_or_default();
        if !allowed.iter().any(|next| next == target) {
            return Err(MoveRefusal {
                reason: format!("cannot move from {} to {target}.", self.phase),
                allowed,
            });
        }
        // The refused target is not one of the moves to suggest.
        let others: Vec<String> = allowed.into_iter().filter(|next| next != target).collect();
        let gates = rules.rule(target).map(|r| r.requires.clone()).unwrap_or_default();
        for gate in gates {
            if let Err(reason) = self.check_gate(gate, target) {
                return Err(MoveRefusal { reason, allowed: others });
            }
        }
        let missing = self.missing_checks(rules, target);
        if !missing.is_empty() && !self.out_of_attempts() {
            let reason = format!(
                "entering {target} needs {} to pass after the last change: run {} (in any \
                 phase), then move again.",
                missing.join(", "),
                if missing.len() == 1 { "it" } else { "them" }
            );
            return Err(MoveRefusal { reason, allowed: others });
        }
        self.enter(rules, target);
        Ok(())
    }

    /// Enters `target` with no gate checked (a move already recorded, as
    /// a rebuild replays it); notes whether its checks were skipped.
    pub fn enter(&mut self, rules: &PhaseRules, target: &str) {
        self.checks_skipped = !self.missing_checks(rules, target).is_empty();
        self.phase = target.to_owned();
    }

    /// The checks of `target` that did not pass after the last change,
    /// quoted for the model.
    fn missing_checks(&self, rules: &PhaseRules, target: &str) -> Vec<String> {
        let checks = rules.rule(target).map(|r| r.checks.clone()).unwrap_or_default();
        checks
            .iter()
            .filter(|check| !self.check_passed(check))
            .map(|check| format!("`{check}`"))
            .collect()
    }

    fn check_gate(&self, gate: Gate, target: &str) -> Result<(), String> {
        match gate {
            Gate::PlanApprovedWhenRequired if self.plan_required && !self.plan_approved() => {
                Err("a plan is required and not yet approved: submit it with submit_plan.".into())
            }
            Gate::VerifiedAfterLastChange
                if self.needs_verification() && !self.out_of_attempts() =>
            {
                Err(format!(
                    "{target} needs a check that passed after the last change, and files \
                     changed after the last passing one ({}). Run a check that covers the \
                     change (a check counts in any phase), then move again.",
                    self.verification_status()
                ))
            }
            Gate::PlanApprovedWhenRequired | Gate::VerifiedAfterLastChange => Ok(()),
        }
    }

    /// Nothing changed, or `check` passed after the last change.
    fn check_passed(&self, check: &str) -> bool {
        self.changes == 0 || self.passed_checks.get(check) == Some(&self.changes)
    }

    /// A run of one of the phase rules' checks finished.
    pub fn record_check(&mut self, check: &str, passed: bool) {
        if passed {
            self.passed_checks.insert(check.to_owned(), self.changes);
        } else {
            self.passed_checks.remove(check);
        }
    }

    /// What ran since the last change and how the gate read it, for
    /// refusals and the `unverified` result.
    pub fn verification_status(&self) -> String {
        if self.commands_since_change.is_empty() {
            return "no check ran after the last change".to_owned();
        }
        let notes: Vec<String> = self
            .commands_since_change
            .iter()
            .map(|note| format!("`{}`: {}", note.command, note.outcome))
            .collect();
        format!("since the last change: {}", notes.join("; "))
    }

    /// A shell command finished; `outcome` is how the gate read it.
    pub fn note_command(&mut self, command: &str, outcome: String) {
        let one_line = command.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut shown: String = one_line.chars().take(NOTE_COMMAND_CHARS).collect();
        if shown.len() < one_line.len() {
            shown.push('…');
        }
        if self.commands_since_change.len() >= COMMAND_NOTES {
            self.commands_since_change.remove(0);
        }
        self.commands_since_change.push(CommandNote { command: shown, outcome });
    }

    fn needs_verification(&self) -> bool {
        self.changes > 0 && self.verified_at != Some(self.changes)
    }

    fn out_of_attempts(&self) -> bool {
        self.failed_verifications >= self.max_verify_attempts
    }

    /// Delivery happens without a passing verification after the changes
    /// (or the current phase was entered without its checks passing).
    pub fn delivers_unverified(&self) -> bool {
        self.needs_verification() || self.checks_skipped
    }

    /// A file changed (a write tool, or a command that changed files).
    pub fn record_change(&mut self, path: Option<&str>) {
        self.changes += 1;
        self.failed_verifications = 0;
        self.commands_since_change.clear();
        if let Some(path) = path {
            self.changed_files.insert(path.to_owned());
        }
    }

    /// A verification command finished.
    pub fn record_verification(&mut self, passed: bool) {
        if passed {
            self.verified_at = Some(self.changes);
            self.failed_verifications = 0;
        } else {
            self.failed_verifications += 1;
        }
    }

    /// The model submitted a (new revision of the) plan.
    pub fn submit_plan(&mut self, path: String, text: String) {
        let revision = self.plan.as_ref().map_or(1, |plan| plan.revision + 1);
        self.plan = Some(PlanState { path, text, status: PlanStatus::Submitted, revision });
    }

    /// The user's answer on the submitted plan.
    pub fn review_plan(&mut self, approved: bool, feedback: Option<String>) {
        if let Some(plan) = &mut self.plan {
            plan.status = if approved {
                PlanStatus::Approved
            } else {
                PlanStatus::Rejected { feedback: feedback.unwrap_or_default() }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::DEFAULT_PHASE_RULES;

    fn rules() -> PhaseRules {
        PhaseRules::parse(DEFAULT_PHASE_RULES).unwrap()
    }

    #[test]
    fn a_typo_fix_goes_orient_implement_verify_deliver_without_a_plan() {
        let rules = rules();
        let mut flow = Workflow::new(&rules, false);
        flow.request_move(&rules, "implement").unwrap();
        flow.check_tool(&rules, "edit_file").unwrap();
        flow.record_change(Some("README.md"));
        let refusal = flow.request_move(&rules, "deliver").unwrap_err();
        assert!(refusal.allowed.contains(&"verify".to_owned()), "{refusal}");
        flow.request_move(&rules, "verify").unwrap();
        flow.record_verification(true);
        flow.request_move(&rules, "deliver").unwrap();
        assert!(!flow.delivers_unverified());
    }

    #[test]
    fn plan_mode_refuses_writes_until_the_plan_is_approved() {
        let rules = rules();
        let mut flow = Workflow::new(&rules, true);
        flow.request_move(&rules, "plan").unwrap();
        assert!(flow.check_tool(&rules, "write_file").is_err(), "plan phase has no writes");
        assert!(flow.request_move(&rules, "implement").is_err(), "gate: plan not approved");
        flow.submit_plan(".keel/plans/1.md".into(), "steps".into());
        flow.review_plan(false, Some("smaller".into()));
        assert!(flow.request_move(&rules, "implement").is_err());
        flow.submit_plan(".keel/plans/1.md".into(), "smaller steps".into());
        assert_eq!(flow.plan.as_ref().unwrap().revision, 2);
        flow.review_plan(true, None);
        flow.request_move(&rules, "implement").unwrap();
        flow.check_tool(&rules, "write_file").unwrap();
    }

    #[test]
    fn rules_that_require_a_plan_refuse_writes_until_it_is_approved() {
        let text = DEFAULT_PHASE_RULES.replace("require_plan = false", "require_plan = true");
        let rules = PhaseRules::parse(&text).unwrap();
        let mut flow = Workflow::new(&rules, false);
        assert!(flow.plan_required);
        assert!(flow.request_move(&rules, "implement").is_err(), "gate: no approved plan");
        flow.submit_plan(".keel/plans/1.md".into(), "steps".into());
        flow.review_plan(true, None);
        flow.request_move(&rules, "implement").unwrap();
        flow.check_tool(&rules, "write_file").unwrap();
    }

    #[test]
    fn a_phases_checks_must_pass_after_the_last_change_until_the_limit() {
        let text = DEFAULT_PHASE_RULES.replace(
            "requires = [\"verified_after_last_change\"]",
            "requires = [\"verified_after_last_change\"]\nchecks = [\"cargo clippy\"]",
        );
        let rules = PhaseRules::parse(&text).unwrap();
        assert_eq!(rules.rule("deliver").unwrap().checks, ["cargo clippy"]);
        let mut flow = Workflow::new(&rules, false);
        flow.request_move(&rules, "implement").unwrap();
        flow.record_change(Some("a.rs"));
        flow.request_move(&rules, "verify").unwrap();
        flow.record_verification(true);
        let refusal = flow.request_move(&rules, "deliver").unwrap_err();
        assert!(refusal.reason.contains("`cargo clippy`"), "{refusal}");
        flow.record_check("cargo clippy", true);
        flow.record_change(Some("a.rs"));
        flow.record_verification(true);
        assert!(flow.request_move(&rules, "deliver").is_err(), "the pass was before the change");
        flow.record_check("cargo clippy", true);
        flow.request_move(&rules, "deliver").unwrap();
        assert!(!flow.delivers_unverified());
    }

    #[test]
    fn at_the_limit_a_phase_is_entered_without_its_checks_but_unverified() {
        let text = DEFAULT_PHASE_RULES.replace(
            "requires = [\"verified_after_last_change\"]",
            "requires = [\"verified_after_last_change\"]\nchecks = [\"cargo clippy\"]",
        );
        let rules = PhaseRules::parse(&text).unwrap();
        let mut flow = Workflow::new(&rules, false);
        flow.request_move(&rules, "implement").unwrap();
        flow.record_change(Some("a.rs"));
        flow.request_move(&rules, "verify").unwrap();
        flow.record_verification(true);
        for _ in 0..DEFAULT_MAX_VERIFY_ATTEMPTS {
            flow.record_check("cargo clippy", false);
            flow.record_verification(false);
        }
        flow.request_move(&rules, "deliver").unwrap();
        assert!(flow.delivers_unverified(), "entered without its checks: unverified");
    }

    #[test]
    fn after_the_retry_limit_delivery_is_allowed_but_unverified() {
        let rules = rules();
        let mut flow = Workflow::new(&rules, false);
        flow.request_move(&rules, "implement").unwrap();
        flow.record_change(Some("a.rs"));
        flow.request_move(&rules, "verify").unwrap();
        for _ in 0..DEFAULT_MAX_VERIFY_ATTEMPTS {
            assert!(flow.request_move(&rules, "deliver").is_err());
            flow.record_verification(false);
        }
        flow.request_move(&rules, "deliver").unwrap();
        assert!(flow.delivers_unverified());
    }

    #[test]
    fn changes_without_a_plan_are_not_capped_when_none_is_required() {
        let rules = rules();
        let mut flow = Workflow::new(&rules, false);
        flow.request_move(&rules, "implement").unwrap();
        for file in ["a", "b", "c", "d", "e"] {
            flow.check_tool(&rules, "write_file").unwrap();
            flow.record_change(Some(file));
        }
    }

    #[test]
    fn a_refused_delivery_never_offers_delivery_and_says_what_ran() {
        let rules = rules();
        let mut flow = Workflow::new(&rules, false);
        flow.request_move(&rules, "implement").unwrap();
        flow.record_change(Some("a.py"));
        flow.note_command("python3 run.py", "not recognised as a check".to_owned());
        flow.request_move(&rules, "verify").unwrap();
        let refusal = flow.request_move(&rules, "deliver").unwrap_err();
        assert_eq!(refusal.allowed, ["implement"], "{refusal}");
        assert!(refusal.reason.contains("`python3 run.py`: not recognised"), "{refusal}");
        assert!(!refusal.reason.contains("verify phase first"), "{refusal}");
    }

    #[test]
    fn deliver_leads_back_to_implement() {
        let rules = rules();
        let mut flow = Workflow::new(&rules, false);
        flow.request_move(&rules, "deliver").unwrap();
        flow.request_move(&rules, "implement").unwrap();
        let refusal = flow.check_tool(&rules, "shell").and(flow.check_tool(&rules, "grep"));
        assert!(refusal.is_ok(), "{refusal:?}");
    }

    #[test]
    fn illegal_moves_list_the_legal_ones() {
        let rules = rules();
        let mut flow = Workflow::new(&rules, false);
        let refusal = flow.request_move(&rules, "verify").unwrap_err();
        assert!(refusal.to_string().contains("explore, plan, implement, deliver"), "{refusal}");
    }
}
