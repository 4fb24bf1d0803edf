//! Architecture check, the state half (issue 30), on the code that ships:
//! - no sandbox state is process-wide (a mutable `static` in the files
//!   that hold a session's sandbox), apart from the named exceptions;
//! - docs/design.md §2 lists exactly the loop states `agent::LoopPhase` has;
//! - the loop-state fields a log restores are written only in
//!   `LoopState::apply` (src/agent/apply.rs), so live and rebuilt state
//!   cannot drift.
//!
//! The source reading (what ships, comments and literals blanked) is
//! `layers.rs`'s.

use std::path::Path;

use super::layers::{code_only, module_of, shipped_sources, src_dir};

/// Files that hold a session's sandbox: its jail, the nested `.git`
/// search, the unsandboxed re-run (issue 30).
const SANDBOX_STATE_FILES: [&str; 4] = [
    "runtime/undo/first_walk.rs",
    "runtime/sandboxing.rs",
    "runtime/execute.rs",
    "runtime/tool_runner.rs",
];

/// The `static` items of `code` whose type can change at run time (a
/// lock, a cell, an atomic), outside comments.
fn mutable_statics(code: &str) -> Vec<String> {
    const MUTABLE: [&str; 6] = ["Mutex", "RwLock", "OnceLock", "LazyLock", "Cell", "Atomic"];
    let mut found = Vec::new();
    for (at, _) in code.match_indices("static ") {
        let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
        let before = &code[line_start..at];
        if before.trim_start().starts_with("//") || before.ends_with('\'') {
            continue;
        }
        let item = &code[at..];
        let item = &item[..item.find(['=', ';']).unwrap_or(item.len())];
        if MUTABLE.iter().any(|word| item.contains(word)) {
            found.push(item.trim().to_owned());
        }
    }
    found
}

#[test]
fn no_sandbox_state_is_process_wide() {
    let src = src_dir();
    let mut violations = Vec::new();
    for (file, code) in shipped_sources() {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if module_of(&src, &file) != "sandbox" && !SANDBOX_STATE_FILES.contains(&rel.as_str()) {
            continue;
        }
        violations.extend(mutable_statics(&code).into_iter().map(|item| format!("{rel}: {item}")));
    }
    assert!(
        violations.is_empty(),
        "a session's sandbox is a value (sandbox::CommandJail in its ToolContext), never a \
         process-wide slot:\n{}",
        violations.join("\n")
    );
}

#[test]
fn mutable_statics_are_found_and_constants_are_not() {
    let code = "static SLOT: std::sync::RwLock<Option<X>> = RwLock::new(None);\n\
                // static COMMENTED: Mutex<()> = Mutex::new(());\n\
                const NAMES: [&'static str; 1] = [\"x\"];\n\
                static TABLE: [&str; 1] = [\"Mutex\"];\n\
                pub static ONCE: OnceLock<u8> = OnceLock::new();";
    assert_eq!(
        mutable_statics(code),
        ["static SLOT: std::sync::RwLock<Option<X>>", "static ONCE: OnceLock<u8>"]
    );
}

/// The loop states docs/design.md §2 lists (its `- \`Name\`:` bullets).
fn design_loop_states() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/design.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let section = text.split("## 2.").nth(1).expect("docs/design.md has a §2");
    let section = section.split("\n## ").next().unwrap_or(section);
    section
        .lines()
        .filter_map(|line| line.strip_prefix("- `")?.split_once("`:").map(|(name, _)| name))
        .map(str::to_owned)
        .collect()
}

/// The variants of `agent::LoopPhase`, from its source.
fn loop_phase_variants() -> Vec<String> {
    let path = src_dir().join("agent/phase.rs");
    let code = code_only(&std::fs::read_to_string(&path).unwrap());
    let body = code.split("pub enum LoopPhase {").nth(1).expect("phase.rs defines LoopPhase");
    let mut depth = 0usize;
    let mut variants = Vec::new();
    let mut at_start = true;
    for (at, c) in body.char_indices() {
        match c {
            '{' | '(' => depth += 1,
            '}' | ')' if depth == 0 => break,
            '}' | ')' => depth -= 1,
            ',' if depth == 0 => at_start = true,
            c if at_start && depth == 0 && c.is_alphabetic() => {
                let name: String =
                    body[at..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                variants.push(name);
                at_start = false;
            }
            _ => {}
        }
    }
    variants
}

#[test]
fn the_design_lists_the_loop_states_there_are() {
    let listed = design_loop_states();
    let variants = loop_phase_variants();
    assert!(variants.len() >= 9 && variants.contains(&"Idle".to_owned()), "{variants:?}");
    assert_eq!(listed, variants, "docs/design.md §2 against agent::LoopPhase");
}

/// Writes to the loop state that `LoopState::apply` owns (src/agent/apply.rs).
const APPLIED_WRITES: [&str; 22] = [
    "state.items.push(",
    "state.items.extend(",
    "state.items = ",
    "state.turn_usage.add(",
    "state.session_usage.add(",
    "state.session_cost_usd = ",
    "state.allowlist.extend(",
    "state.config.policy.mode = ",
    "state.turn_approvals = ",
    "state.unreported.add(",
    "state.logged_limits = ",
    "state.config.limits.spend = ",
    "state.turn_model = ",
    "state.turn_model.clone_from(",
    "state.largest_output_tokens = ",
    "state.failed_check = ",
    "state.delegated.usage.add(",
    "state.delegated.cost_usd += ",
    "state.delegated.estimated.add(",
    "state.turn = ",
    "state.step = ",
    "state.reported_context = ",
];

/// Writes of those fields elsewhere, each with why it is not an event.
const APPLIED_WRITE_EXCEPTIONS: [(&str, &str, &str); 3] = [
    (
        "step.rs",
        "state.step += ",
        "a step is counted when its request is made; its model_response line carries the number",
    ),
    (
        "rebuild.rs",
        "state.turn_approvals = ",
        "pre-approvals logged for a turn that never started (or was dropped) end with the fold",
    ),
    (
        "rebuild.rs",
        "state.turn = ",
        "a turn the log opened without its prompt is dropped when the fold ends",
    ),
];

#[test]
fn the_state_a_log_restores_changes_only_in_apply() {
    let dir = src_dir().join("agent");
    let mut violations = Vec::new();
    for (file, text) in shipped_sources() {
        if file.parent() != Some(dir.as_path()) || file.ends_with("apply.rs") {
            continue;
        }
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        let code = code_only(&text);
        for write in APPLIED_WRITES.iter().chain(APPLIED_WRITE_EXCEPTIONS.iter().map(|e| &e.1)) {
            let excepted = APPLIED_WRITE_EXCEPTIONS
                .iter()
                .any(|(file, allowed, _)| *file == name && allowed == write);
            if !excepted && code.contains(write) {
                violations.push(format!(
                    "src/agent/{name} writes `{write}`: emit the event (agent::apply) instead"
                ));
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}
