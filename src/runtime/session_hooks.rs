//! The session's hook bus and what it remembers between two hook runs:
//! the SessionStart hooks still to run before the first turn (`startup`,
//! `resume`), and the calls PreToolUse hooks already judged before an
//! approval prompt (with any input a hook rewrote), so the hooks are not
//! run twice for one call. Running hooks and recording them is
//! `hooks_glue.rs`.
//!
//! Invariant: a pre-judged call is taken once: its next PreToolUse check
//! uses the remembered verdict and forgets it.

use std::collections::HashMap;
use std::path::Path;

use tokio_util::sync::CancellationToken;

use crate::config::Settings;
use crate::hooks::{HookBus, HookEvent, HookPayload, HookRun, HookVerdict};

pub(super) struct SessionHooks {
    bus: HookBus,
    /// SessionStart hooks run before the first turn (`startup`/`resume`).
    pending_start: Option<&'static str>,
    /// Calls PreToolUse hooks already judged, with any rewritten input.
    prehooked: HashMap<String, Option<serde_json::Value>>,
}

impl SessionHooks {
    /// A project's own hooks run only once the user trusts it.
    pub(super) fn new(settings: &Settings, start_source: &'static str) -> Self {
        let bus = HookBus::new(settings.hooks.clone(), settings.project_trusted)
            .with_natives(settings.native_hooks.clone());
        Self::with_bus(bus, start_source)
    }

    fn with_bus(bus: HookBus, start_source: &'static str) -> Self {
        Self { bus, pending_start: Some(start_source), prehooked: HashMap::new() }
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

    /// PreToolUse hooks judged `call_id` before its approval prompt.
    pub(super) fn remember_judged(&mut self, call_id: &str, rewritten: Option<serde_json::Value>) {
        self.prehooked.insert(call_id.to_owned(), rewritten);
    }

    /// The earlier verdict on `call_id` (its rewritten input, if any),
    /// forgotten as it is taken; `None` when the hooks have not judged it.
    pub(super) fn take_judged(&mut self, call_id: &str) -> Option<Option<serde_json::Value>> {
        self.prehooked.remove(call_id)
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
    fn a_judged_call_is_taken_once_with_its_rewrite() {
        let mut hooks = hooks();
        assert_eq!(hooks.take_judged("c1"), None, "not judged yet");
        let rewrite = serde_json::json!({ "command": "ls" });
        hooks.remember_judged("c1", Some(rewrite.clone()));
        hooks.remember_judged("c2", None);
        assert_eq!(hooks.take_judged("c1"), Some(Some(rewrite)));
        assert_eq!(hooks.take_judged("c1"), None, "taken once");
        assert_eq!(hooks.take_judged("c2"), Some(None), "judged, nothing rewritten");
    }

    #[test]
    fn no_configured_hook_listens() {
        let hooks = hooks();
        assert!(hooks.is_empty());
        assert!(!hooks.listens(HookEvent::PreToolUse));
    }
}
