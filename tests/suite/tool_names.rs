//! A built-in tool's name is spelled in one place: the table of tool facts
//! (`src/protocol/tool_facts.rs`). Shipped code elsewhere asks a
//! `ToolInfo` or compares against a `tool_facts::names` constant, so
//! adding or renaming a tool cannot leave a stale copy behind. Test code
//! (test modules, `*_tests.rs`) is cut out as in `layers.rs`; prompts'
//! `.md` files are text and not looked at.

use std::collections::BTreeMap;

use keel::protocol::tool_facts::BUILTIN;

use super::layers::{shipped_sources, skip_literal, src_dir};

/// The file that spells the names.
const TABLE: &str = "protocol/tool_facts.rs";

/// Literals that are a tool's name by coincidence, each with what it is.
const NOT_TOOLS: &[(&str, &str, &str)] = &[
    ("policy/readonly.rs", "grep", "the `grep` command, on the read-only list"),
    ("policy/content_reads.rs", "grep", "the `grep` command, a reader that may walk folders"),
    ("policy/wrappers.rs", "grep", "the `grep` command, which runs nothing it is given"),
    ("policy/git.rs", "grep", "`git grep`"),
    ("policy/rule_args.rs", "glob", "the `glob` argument of a path rule"),
    ("agent/state.rs", "agent", "the `agent` tool's `agent` argument (the type to start)"),
    ("display/shell_output.rs", "agent", "the `agent` tool's `agent` argument"),
    ("runtime/subagent/run.rs", "agent", "the `agent` argument and the result's `agent` detail"),
    ("export/atif.rs", "agent", "ATIF's step source (`user`, `agent`, `system`), not the tool"),
];

/// Every string literal of `code` (plain and raw), by content.
fn string_literals(code: &str) -> Vec<&str> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(end) = skip_literal(bytes, at) else {
            at += 1;
            continue;
        };
        let rest = &code[at..end];
        let body = if let Some(inner) = rest.strip_prefix('"') {
            inner.strip_suffix('"')
        } else if rest.starts_with('r') || rest.starts_with("br") {
            let hashes = rest.trim_start_matches('b').trim_start_matches('r');
            let quote = hashes.trim_start_matches('#');
            let n = hashes.len() - quote.len();
            quote
                .strip_prefix('"')
                .and_then(|inner| inner.strip_suffix(&format!("\"{}", "#".repeat(n))))
        } else {
            None
        };
        found.extend(body);
        at = end.max(at + 1);
    }
    found
}

/// (file, name) → how often a tool's name is a string literal there.
fn literals_outside_the_table() -> BTreeMap<(String, &'static str), usize> {
    let src = src_dir();
    let mut counts = BTreeMap::new();
    for (file, code) in shipped_sources() {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
        if rel == TABLE || rel.ends_with("_tests.rs") {
            continue;
        }
        for literal in string_literals(&code) {
            let Some(info) = BUILTIN.iter().find(|info| info.name == literal) else { continue };
            if NOT_TOOLS.iter().any(|(path, name, _)| *path == rel && *name == info.name) {
                continue;
            }
            *counts.entry((rel.clone(), info.name)).or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn tool_names_are_spelled_only_in_the_table_of_tool_facts() {
    let found = literals_outside_the_table();
    let lines: Vec<String> = found
        .iter()
        .map(|((file, name), count)| {
            format!("src/{file}: \"{name}\" ×{count}; use tool_facts::names or a ToolInfo")
        })
        .collect();
    assert!(lines.is_empty(), "{}", lines.join("\n"));
}

#[test]
fn every_named_coincidence_is_still_there() {
    let src = src_dir();
    let sources = shipped_sources();
    for (path, name, why) in NOT_TOOLS {
        let code = sources
            .iter()
            .find(|(file, _)| file.strip_prefix(&src).unwrap().to_string_lossy() == *path)
            .map(|(_, code)| code.as_str())
            .unwrap_or_default();
        assert!(
            string_literals(code).contains(name),
            "src/{path} no longer spells \"{name}\" ({why}): drop it from NOT_TOOLS"
        );
    }
}

#[test]
fn string_literals_are_found_plain_and_raw() {
    let code = "let a = \"shell\"; let b = r#\"grep\"#; let c = 'x'; // \"glob\"\n";
    assert_eq!(string_literals(code), ["shell", "grep"]);
}
