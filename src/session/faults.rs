//! Test hooks for crash and disk-full tests, read from the environment in
//! this one place and inert unless set.
//!
//! - `KEEL_TEST_CRASH_AFTER_SEQ=N`: right after line `N` is written and
//!   flushed, the process kills itself with SIGKILL (a crash between events).
//! - `KEEL_TEST_CRASH_IN_SEQ=N`: line `N` is written only half, then
//!   SIGKILL (a crash in the middle of a write: a torn last line).
//! - `KEEL_TEST_FAIL_WRITE_AT_SEQ=N`: writing line `N` (and any later one)
//!   fails with "no space left on device", as a full disk would.
//! - `KEEL_TEST_TERM_AFTER_SEQ=N`: right after line `N` is written, the
//!   process sends itself SIGTERM (a `timeout` or systemd stop between
//!   events; keel's signal handling then ends the turn).
//! - `KEEL_TEST_CRASH_AFTER_FIRST_LINE_OF_LOG=N`: right after the first
//!   line of the `N`th log this process creates (1: the session's own, 2:
//!   its first subagent's) is written, SIGKILL (a crash as a child starts).
//!   The only process-wide state here: a count of the logs created, kept
//!   only while the variable is set.
//!
//! Invariant: with none of these variables set, [`Faults::from_env`] is
//! `Faults::default()` and every check below is a no-op.

/// Which fault to inject, if any.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Faults {
    crash_after: Option<u64>,
    crash_in: Option<u64>,
    fail_at: Option<u64>,
    term_after: Option<u64>,
    crash_after_first_line_of: Option<u64>,
    /// Which log this process created this one as (1 for the first), when
    /// `crash_after_first_line_of` is set.
    created_as: Option<u64>,
}

/// The logs this process created, counted only for
/// `KEEL_TEST_CRASH_AFTER_FIRST_LINE_OF_LOG`.
static CREATED_LOGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Faults {
    pub fn from_env() -> Self {
        let read = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse().ok());
        Self {
            crash_after: read("KEEL_TEST_CRASH_AFTER_SEQ"),
            crash_in: read("KEEL_TEST_CRASH_IN_SEQ"),
            fail_at: read("KEEL_TEST_FAIL_WRITE_AT_SEQ"),
            term_after: read("KEEL_TEST_TERM_AFTER_SEQ"),
            crash_after_first_line_of: read("KEEL_TEST_CRASH_AFTER_FIRST_LINE_OF_LOG"),
            created_as: None,
        }
    }

    /// These faults for a log this process has just created.
    pub fn for_created_log(self) -> Self {
        if self.crash_after_first_line_of.is_none() {
            return self;
        }
        let ordinal = CREATED_LOGS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Self { created_as: Some(ordinal), ..self }
    }

    #[cfg(test)]
    pub fn from_parts(
        crash_after: Option<u64>,
        crash_in: Option<u64>,
        fail_at: Option<u64>,
    ) -> Self {
        Self { crash_after, crash_in, fail_at, ..Self::default() }
    }

    /// An injected write error for line `seq`, if one is due.
    pub fn write_error(&self, seq: u64) -> Option<std::io::Error> {
        match self.fail_at {
            Some(at) if seq >= at => Some(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left on device (injected by KEEL_TEST_FAIL_WRITE_AT_SEQ)",
            )),
            Some(_) | None => None,
        }
    }

    /// Whether line `seq` is to be torn (written half, then SIGKILL).
    pub fn tears(&self, seq: u64) -> bool {
        self.crash_in == Some(seq)
    }

    /// Kills the process if a crash is due after line `seq`, or sends it
    /// SIGTERM if a stop is.
    pub fn after_write(&self, seq: u64) {
        let first_of_due =
            self.created_as.is_some_and(|n| Some(n) == self.crash_after_first_line_of);
        if self.crash_after == Some(seq) || (seq == 0 && first_of_due) {
            kill_self();
        }
        if self.term_after == Some(seq) {
            use rustix::process::{Signal, getpid, kill_process};
            let _ = kill_process(getpid(), Signal::TERM);
        }
    }
}

/// SIGKILL to ourselves: no destructors, no flushing, like a power cut for
/// everything not yet handed to the kernel.
pub fn kill_self() {
    let _ = rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_is_inert() {
        let faults = Faults::default();
        assert!(faults.write_error(0).is_none());
        assert!(!faults.tears(0));
        faults.after_write(0);
    }

    #[test]
    fn write_failure_holds_from_its_seq_on() {
        let faults = Faults { fail_at: Some(3), ..Faults::default() };
        assert!(faults.write_error(2).is_none());
        assert!(faults.write_error(3).is_some());
        assert!(faults.write_error(9).is_some());
    }
}
