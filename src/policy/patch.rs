//! Judging `apply_patch`: every path its headers name (`*** Add File:`,
//! `*** Delete File:`, `*** Update File:` and `*** Move to:`) is a write,
//! judged by the same path rules as `write_file`; the strictest verdict
//! wins and its reason names the header.
//!
//! Invariant: the patch is read by the parser the tool applies it with
//! (`protocol::patch`), so policy never judges a different set of paths
//! than the one written. A patch that does not parse changes nothing (the
//! tool parses all of it first), so it is judged by mode alone.

use super::engine::{Policy, Target, Verdict, by_mode, evaluate_path_ranked};
use super::rules::Access;
use super::{Allowlist, Decision};
use crate::protocol::patch::{Hunk, parse};
use crate::protocol::tool_facts::names;

/// Judges the patch `text`.
pub fn evaluate_patch(policy: &Policy, allowlist: &Allowlist, text: &str) -> Verdict {
    let Ok(hunks) = parse(text) else {
        return by_mode(policy.mode, names::APPLY_PATCH, Access::Write);
    };
    let mut strictest: Option<(Verdict, u8)> = None;
    let mut matched = Vec::new();
    for (header, path) in hunks.iter().flat_map(targets) {
        let target = if header == "Delete File" { Target::Entry } else { Target::Path };
        let (mut verdict, rank) = evaluate_path_ranked(
            policy,
            allowlist,
            names::APPLY_PATCH,
            path,
            Access::Write,
            target,
        );
        matched.extend(verdict.matched.iter().cloned());
        let name = |reason: &str| format!("`*** {header}: {path}`: {reason}");
        verdict.decision = match verdict.decision {
            Decision::Allow => Decision::Allow,
            Decision::Prompt { reason } => Decision::Prompt { reason: name(&reason) },
            Decision::Forbidden { reason } => Decision::Forbidden { reason: name(&reason) },
        };
        if strictest.as_ref().is_none_or(|(_, strictest)| rank > *strictest) {
            strictest = Some((verdict, rank));
        }
    }
    let mut verdict = strictest
        .map(|(verdict, _)| verdict)
        .unwrap_or_else(|| by_mode(policy.mode, names::APPLY_PATCH, Access::Write));
    verdict.matched = matched;
    verdict
}

/// Every (header, path) a hunk writes.
fn targets(hunk: &Hunk) -> Vec<(&'static str, &str)> {
    match hunk {
        Hunk::Add { path, .. } => vec![("Add File", path)],
        Hunk::Delete { path } => vec![("Delete File", path)],
        Hunk::Update { path, move_to, .. } => {
            let mut found = vec![("Update File", path.as_str())];
            found.extend(move_to.as_deref().map(|to| ("Move to", to)));
            found
        }
    }
}
