//! Native hooks: hooks keel runs in process, next to the subprocess ones.
//!
//! They go through the same [`HookBus`](super::HookBus) dispatch, return the
//! same [`HookOutcome`] (folded into the same verdict with the strictest
//! permission winning) and pass the same [`guard`](super::guard): a native
//! hook can tighten a decision, never loosen one. A native hook is plain
//! synchronous code on the caller's task, so it must be cheap and must not
//! block (no I/O beyond what its doc says).
//!
//! Recording: a native hook runs on every event it subscribes to, so a run
//! that had no say (no permission, context, message or error) is not
//! recorded; every run that did say something is a `hook_ran` event like a
//! subprocess run, with source `native` and the hook's name as command.
//!
//! The workflow's phase gate is not a native hook: it is a rule of the pure
//! step (`plan/`), judged before any hook sees a call.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use super::HookEvent;
use super::outcome::{HookOutcome, Permission};
use super::payload::HookPayload;
use super::runner::HookRun;
use crate::support::panic_guard::{self, CaughtPanic};

/// The source name native runs are recorded under.
pub const NATIVE_SOURCE: &str = "native";

/// A hook keel itself runs, in process.
pub trait NativeHook: Send + Sync + fmt::Debug {
    /// A stable name for the log (`protect_secrets`).
    fn name(&self) -> &'static str;

    /// Whether the hook wants `event` at all (checked before a payload is
    /// built, so it must be cheap).
    fn listens(&self, event: HookEvent) -> bool;

    /// Whether the hook wants `event` for `subject` (the tool name of tool
    /// events, the matcher target of others).
    fn subscribes(&self, event: HookEvent, _subject: Option<&str>) -> bool {
        self.listens(event)
    }

    /// The hook's say on one event.
    fn run(&self, event: HookEvent, payload: &HookPayload) -> HookOutcome;
}

/// Runs every native hook that subscribes to `event`; returns the runs
/// that had a say.
pub(super) fn run_natives(
    natives: &[Arc<dyn NativeHook>],
    event: HookEvent,
    payload: &HookPayload,
    subject: Option<&str>,
) -> Vec<HookRun> {
    natives
        .iter()
        .filter(|hook| hook.subscribes(event, subject))
        .filter_map(|hook| {
            let started = Instant::now();
            let run = || {
                panic_guard::inject_for_test(hook.name());
                hook.run(event, payload)
            };
            let (outcome, panicked) = match panic_guard::catch(run) {
                Ok(outcome) => (outcome, None),
                Err(panic) => (failed_closed(hook.name(), event, &panic), Some(panic.to_string())),
            };
            (outcome != HookOutcome::default()).then(|| HookRun {
                event,
                command: hook.name().to_owned(),
                source: NATIVE_SOURCE.to_owned(),
                duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                exit_code: None,
                outcome,
                skipped: None,
                panicked,
            })
        })
        .collect()
}

/// What a native hook that panicked says: an error, and for a tool call a
/// denial (a guard that broke must not let the call through unjudged).
fn failed_closed(name: &str, event: HookEvent, panic: &CaughtPanic) -> HookOutcome {
    let error = format!("internal error in keel's {name} hook (a bug; please report it): {panic}");
    let permission = (event == HookEvent::PreToolUse).then_some(Permission::Deny);
    let reason = permission.map(|_| {
        // Not "ask the user": nobody can answer in a headless run.
        format!(
            "the {name} hook failed, so the call was not run; try another way, or say so in your \
             answer"
        )
    });
    HookOutcome { permission, reason, error: Some(error), ..HookOutcome::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hooks::{HookBus, HookVerdict, Permission, guard};
    use crate::policy::Decision;
    use tokio_util::sync::CancellationToken;

    // Issue 32.9: a guard that broke denies the call, and the model is not
    // sent to ask the user (nobody can answer a headless run).
    #[test]
    fn a_failed_hook_does_not_send_the_model_to_ask_the_user() {
        let panic = CaughtPanic { message: "boom".into(), location: None };
        let outcome = failed_closed("protect_secrets", HookEvent::PreToolUse, &panic);
        assert_eq!(outcome.permission, Some(Permission::Deny));
        let reason = outcome.reason.unwrap();
        assert!(reason.contains("the protect_secrets hook failed, so the call was not run"));
        assert!(!reason.contains("ask the user"), "{reason}");
        assert!(reason.contains("say so in your answer"), "{reason}");
    }

    /// Says `permission` on every PreToolUse of `shell`.
    #[derive(Debug)]
    struct Fixed(Permission);

    impl NativeHook for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn listens(&self, event: HookEvent) -> bool {
            event == HookEvent::PreToolUse
        }
        fn subscribes(&self, event: HookEvent, subject: Option<&str>) -> bool {
            self.listens(event) && subject == Some("shell")
        }
        fn run(&self, _event: HookEvent, _payload: &HookPayload) -> HookOutcome {
            HookOutcome {
                permission: Some(self.0),
                reason: Some("fixed says so".into()),
                ..HookOutcome::default()
            }
        }
    }

    async fn dispatch(bus: &HookBus, tool: &str) -> (HookVerdict, Vec<HookRun>) {
        let payload = HookPayload { tool_name: Some(tool.into()), ..HookPayload::default() };
        let dir = std::env::temp_dir();
        bus.dispatch(HookEvent::PreToolUse, &payload, Some(tool), &dir, &CancellationToken::new())
            .await
    }

    #[tokio::test]
    async fn a_native_hook_is_dispatched_and_recorded_like_a_subprocess_hook() {
        let bus = HookBus::default().with_native(Arc::new(Fixed(Permission::Deny)));
        assert!(!bus.is_empty());
        assert!(bus.listens(HookEvent::PreToolUse) && !bus.listens(HookEvent::Stop));
        let (verdict, runs) = dispatch(&bus, "shell").await;
        assert_eq!(verdict.permission, Some(Permission::Deny));
        assert_eq!(runs.len(), 1);
        assert_eq!((runs[0].source.as_str(), runs[0].command.as_str()), ("native", "fixed"));
        assert_eq!(
            guard(Decision::Allow, &verdict).decision,
            Decision::Forbidden { reason: "fixed says so".into() }
        );
        let (verdict, runs) = dispatch(&bus, "read_file").await;
        assert_eq!((verdict.permission, runs.len()), (None, 0), "not subscribed");
    }

    #[tokio::test]
    async fn a_native_allow_cannot_loosen_policy() {
        let bus = HookBus::default().with_native(Arc::new(Fixed(Permission::Allow)));
        let (verdict, _) = dispatch(&bus, "shell").await;
        let forbidden = Decision::Forbidden { reason: "rule".into() };
        let tightened = guard(forbidden.clone(), &verdict);
        assert_eq!(tightened.decision, forbidden);
        assert!(tightened.refused_loosening.is_some());
    }
}
