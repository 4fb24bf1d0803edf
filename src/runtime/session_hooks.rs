//! The session's hook bus and what it remembers between two hook runs:
//! the SessionStart hooks still to run before the first turn (`startup`,
//! `resume`). Running hooks and recording them is `hooks_glue.rs`; what a
//! PreToolUse verdict leads to (and the verdict kept from before a call's
//! approval) is `step`'s (`agent::call_checks`, `agent::approval_hooks`).
//!
//! Invariant: SessionStart runs once per process.

use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::hooks::{HookBus, HookEvent, HookPayload, HookRun, HookVerdict};

pub(super) struct SessionHooks {
    bus: HookBus,
    /// SessionStart hooks run before the first turn (`startup`/`resume`).
    pending_start: Option<&'static str>,
}

impl SessionHooks {
    /// A project's own hooks run only once the user trusts it.
    pub(super) fn new(settings: &Settings, start_source: &'static str) -> Self {
        let bus = HookBus::new(settings.hooks.clone(), settings.project_trusted)
            .with_natives(settings.native_hooks.clone())
            .with_env_filter(settings.env_filter.clone());
        Self::with_bus(bus, start_source)
    }

    fn with_bus(bus: HookBus, start_source: &'static str) -> Self {
        Self { bus, pending_start: Some(start_source) }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.bus.is_empty()
    }

    pub(super) fn listens(&self, event: HookEvent) -> bool {
        self.bus.listens(event)
    }

    pub(super) async fn dispatch(
        &self,
        event: HookEvent,
        payload: &HookPayload,
        subject: Option<&str>,
        project_dir: &Path,
        cancel: &CancellationToken,
    ) -> (HookVerdict, Vec<HookRun>) {
        self.bus.dispatch(event, payload, subject, project_dir, cancel).await
    }

    pub(super) fn dispatch_natives(
        &self,
        event: HookEvent,
        payload: &HookPayload,
        subject: Option<&str>,
    ) -> (HookVerdict, Vec<HookRun>) {
        self.bus.dispatch_natives(event, payload, subject)
    }

    /// The SessionStart source, the first time only.
    pub(super) fn take_session_start(&mut self) -> Option<&'static str> {
        self.pending_start.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks() -> SessionHooks {
        SessionHooks::with_bus(HookBus::new(Vec::new(), false), "resume")
    }

    #[test]
    fn session_start_runs_once_with_its_source() {
        let mut hooks = hooks();
        assert_eq!(hooks.take_session_start(), Some("resume"));
        assert_eq!(hooks.take_session_start(), None);
    }

    #[test]
    fn no_configured_hook_listens() {
        let hooks = hooks();
        assert!(hooks.is_empty());
        assert!(!hooks.listens(HookEvent::PreToolUse));
    }
}
