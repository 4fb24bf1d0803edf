//! The `keel-jail` binary: keel's sandbox launcher alone
//! (`keel-jail sandbox-exec …`, the arguments of `keel sandbox-exec`).
//!
//! Every sandboxed command is two `exec`s of the launcher (the jail's
//! launcher, then its init as PID 1 of the new namespaces), and the crate
//! forbids `unsafe`, so neither can be a `fork`. Linked from the same
//! library but with only `cli::jail_main` reachable, this binary is a
//! small fraction of keel's size: no TLS, HTTP, TUI, tree-sitter or
//! tokenizer, no async runtime, fewer pages to map and far fewer
//! relocations for the dynamic loader. keel uses it when it is installed
//! beside keel (`sandbox::jail::launcher`) and falls back to
//! `keel sandbox-exec` otherwise; the jail's code and layers are the same.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(keel::cli::jail_main())
}
