//! `policy::evaluate` on a five-command compound shell script, parsing
//! included (JSON arguments, tree-sitter-bash, unwrapping, hard deny, rules,
//! read-only list). Target: under 50 µs per evaluation.
//!
//! Run: `cargo bench --bench policy_eval` (release profile).
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use keel::policy::{
    Allowlist, ApprovalMode, CallFacts, PathContext, Policy, default_rules, evaluate,
};
use keel::protocol::ToolClass;

const SCRIPT: &str =
    "ls -la src && git status | head -n 20; rg -n TODO src || cargo build --release";
const ROUNDS: u32 = 20_000;
/// Under `cargo test --all-targets` (no `--bench` flag) the bench only
/// proves it runs.
const SMOKE_ROUNDS: u32 = 10;

fn main() {
    let paths = PathContext::new("/home/user", "/home/user/proj", "/home/user/proj");
    let policy = Policy::new(default_rules().unwrap(), ApprovalMode::Ask, paths);
    let allowlist = Allowlist::default();
    let arguments = serde_json::json!({ "command": SCRIPT }).to_string();
    let call = CallFacts { tool: "shell", class: ToolClass::Mutating, arguments: &arguments };
    let rounds = if std::env::args().any(|a| a == "--bench") { ROUNDS } else { SMOKE_ROUNDS };
    for _ in 0..rounds / 20 {
        black_box(evaluate(&policy, &allowlist, black_box(call)));
    }
    let started = Instant::now();
    for _ in 0..rounds {
        black_box(evaluate(&policy, &allowlist, black_box(call)));
    }
    let per_eval = started.elapsed() / rounds;
    println!("policy::evaluate, 5-command script: {per_eval:?} per evaluation ({rounds} rounds)");
}
