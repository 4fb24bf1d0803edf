//! Where tests find the shared conformance corpus and bench mock (`../shared`
//! beside the checkout, or `KEEL_SHARED_DIR`).
//!
//! Invariant: a plain clone of the repository passes its tests. Without the
//! corpus a test that needs it says "skipped: corpus not found at …" and
//! passes, except under `CI` (set by CI runners), where a missing corpus is a
//! failure: CI must run every conformance case.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The corpus path `rel` (e.g. `conformance/sse`) if it exists. `None` (after
/// saying so on stderr) when it is missing outside CI; panics under CI.
pub fn locate(rel: &str) -> Option<PathBuf> {
    let root = match std::env::var_os("KEEL_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"),
    };
    let path = root.join(rel);
    if path.exists() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "shared corpus not found at {} (CI requires it; set KEEL_SHARED_DIR if it lives elsewhere)",
        path.display()
    );
    // Straight to the stderr handle, not `eprintln!`: the test harness
    // captures the macros, and a skip must be visible in a plain run.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: corpus not found at {} (set KEEL_SHARED_DIR; under CI=true this fails)",
        path.display()
    );
    None
}
