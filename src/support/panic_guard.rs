//! Panic isolation at the tool and hook boundary: a bug in one tool or
//! native hook becomes an error the model reads (and an `internal_error`
//! log line, written by the runtime), never the end of the session.
//!
//! keel builds with `panic = "unwind"` (release too) so that a panic can
//! be caught here; see `benches/README.md` for what unwinding costs.
//! [`catch`] runs a closure and [`Guarded`] polls a future with the panic
//! caught; both mark the thread as guarded while the code runs, so the
//! process-wide hook ([`install_hook`]) keeps a caught panic quiet (it is
//! reported through the error instead) and only records where it happened.
//! A panic anywhere else still reaches the previous hook (the default
//! message, the TUI's terminal restore).
//!
//! Test hook: `KEEL_TEST_PANIC_IN=NAME[,NAME…]` makes the tools and native
//! hooks of those names panic inside their guard ([`inject_for_test`]),
//! read once, inert unless set (as `session/faults.rs`).
//!
//! Invariant: the guard depth is per thread and restored on every exit
//! path, unwinding included, so a caught panic never leaves a thread marked.
//!
//! Where the guards sit: `ToolRegistry::run_call` polls each tool in [`Guarded`]; blocking tool
//! work is caught on its blocking thread (`tools::args::blocking`); native hooks run in [`catch`]
//! (`hooks/native.rs`). A caught panic is a `ToolError::Internal` result the model reads, an
//! `internal_error` log line and a warning; a native PreToolUse hook that panics denies the call
//! (fail closed: a guard that broke must not let the call through unjudged). `install_hook` is
//! installed from `main`. A test here keeps the release profile unwinding.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Once, OnceLock};
use std::task::{Context, Poll};

thread_local! {
    /// How many guarded regions this thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Where the last guarded panic of this thread happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// A caught panic: its message and where it was raised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaughtPanic {
    pub message: String,
    /// `file:line:column`, when the hook saw it.
    pub location: Option<String>,
}

impl std::fmt::Display for CaughtPanic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.location {
            Some(location) => write!(f, "panicked at {location}: {}", self.message),
            None => write!(f, "panicked: {}", self.message),
        }
    }
}

/// Whether the current thread is inside a guarded region (the TUI's panic
/// hook must not restore the terminal for a panic that is caught).
pub fn is_guarded() -> bool {
    DEPTH.with(|depth| depth.get() > 0)
}

/// Installs the process-wide hook once: quiet for guarded panics (their
/// location is kept for the report), the previous hook for all others.
pub fn install_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if is_guarded() {
                let location = info.location().map(ToString::to_string);
                LOCATION.with(|slot| *slot.borrow_mut() = location);
                return;
            }
            previous(info);
        }));
    });
}

/// Runs `work`, turning a panic into a [`CaughtPanic`].
pub fn catch<T>(work: impl FnOnce() -> T) -> Result<T, CaughtPanic> {
    let _depth = DepthGuard::enter();
    catch_unwind(AssertUnwindSafe(work)).map_err(caught)
}

/// Panics if `KEEL_TEST_PANIC_IN` names `name` (see the module doc).
pub fn inject_for_test(name: &str) {
    static NAMES: OnceLock<Vec<String>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let value = std::env::var("KEEL_TEST_PANIC_IN").unwrap_or_default();
        value.split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect()
    });
    if names.iter().any(|n| n == name) {
        panic!("injected by KEEL_TEST_PANIC_IN ({name})");
    }
}

/// A future polled with panics caught: its output, or the panic.
pub struct Guarded<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Guarded<F> {
    pub fn new(future: F) -> Self {
        Self { inner: Box::pin(future) }
    }
}

impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, CaughtPanic>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let _depth = DepthGuard::enter();
        let inner = &mut self.inner;
        match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(caught(payload))),
        }
    }
}

fn caught(payload: Box<dyn std::any::Any + Send>) -> CaughtPanic {
    let message = payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_owned());
    let location = LOCATION.with(|slot| slot.borrow_mut().take());
    CaughtPanic { message, location }
}

/// Marks the thread guarded until dropped (also while unwinding).
struct DepthGuard;

impl DepthGuard {
    fn enter() -> Self {
        DEPTH.with(|depth| depth.set(depth.get() + 1));
        Self
    }
}

impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|depth| depth.set(depth.get().saturating_sub(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caught_panic_reports_its_message_and_location() {
        install_hook();
        let caught = catch(|| -> u32 { panic!("boom {}", 7) }).unwrap_err();
        assert_eq!(caught.message, "boom 7");
        let location = caught.location.unwrap_or_default();
        assert!(location.contains("panic_guard.rs"), "{location}");
        assert!(!is_guarded(), "the depth is restored after unwinding");
        assert_eq!(catch(|| 3), Ok(3));
    }

    #[tokio::test]
    async fn a_panicking_future_becomes_an_error() {
        let outcome = Guarded::new(async {
            tokio::task::yield_now().await;
            if outcome_is_a_panic() {
                panic!("later");
            }
            1u8
        })
        .await;
        let caught = outcome.unwrap_err();
        assert_eq!(caught.message, "later");
        assert!(!is_guarded());
        assert_eq!(Guarded::new(async { 5 }).await, Ok(5));
    }

    fn outcome_is_a_panic() -> bool {
        true
    }

    /// With `panic = "abort"` nothing here could catch a panic: the release
    /// binary would die with the session (issue 14).
    #[test]
    fn the_release_profile_unwinds() {
        let manifest = include_str!("../../Cargo.toml");
        let release = manifest.split("[profile.release]").nth(1).unwrap_or_default();
        let release = release.split("\n[").next().unwrap_or_default();
        assert!(release.contains("panic = \"unwind\""), "{release}");
    }
}
