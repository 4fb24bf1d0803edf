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
}

impl Faults {
    pub fn from_env() -> Self {
        let read = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse().ok());
        Self {
            crash_after: read("KEEL_TEST_CRASH_AFTER_SEQ"),
            crash_in: read("KEEL_TEST_CRASH_IN_SEQ"),
            fail_at: read("KEEL_TEST_FAIL_WRITE_AT_SEQ"),
            term_after: read("KEEL_TEST_TERM_AFTER_SEQ"),
        }
    }

    #[cfg(test)]
    pub fn from_parts(
        crash_after: Option<u64>,
        crash_in: Option<u64>,
        fail_at: Option<u64>,
    ) -> Self {
        Self { crash_after, crash_in, fail_at, term_after: None }
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
        if self.crash_after == Some(seq) {
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
