//! The paths a call names, for the caller to resolve on disk before the
//! call runs: policy is pure, so the symlinks on the way to them come back
//! as [`super::PathLinks`] (`runtime::path_facts` walks them) and the call
//! is judged again where its paths really lead.
//!
//! Invariants: pure; every path is absolute and joined to the folder it is
//! taken from (`..` kept, so the walk can apply it after a link, as the
//! kernel does); a glob contributes the folder before its first glob
//! component; at most [`MAX_QUERIES`] paths, so a huge command costs a
//! bounded walk.

use std::path::PathBuf;

use super::engine::{CallFacts, Policy};
use super::shell::analyze_script_in;
use super::words::{dynamic_part, has_glob};
use super::workdir::Dirs;
use crate::protocol::patch::{Hunk, parse};
use crate::protocol::{Operand, ToolInfo, tool_facts};

/// How many paths one call may ask to have resolved.
pub const MAX_QUERIES: usize = 64;

/// The paths `call` names, absolute, in the order found.
pub fn path_queries(policy: &Policy, call: CallFacts<'_>) -> Vec<PathBuf> {
    path_queries_described(policy, call, tool_facts::builtin(call.tool))
}

/// [`path_queries`] for a call of the tool `info` describes (`None`: not
/// a built-in tool, whose `path` is taken as its one path).
pub fn path_queries_described(
    policy: &Policy,
    call: CallFacts<'_>,
    info: Option<&ToolInfo>,
) -> Vec<PathBuf> {
    let args: serde_json::Value = serde_json::from_str(call.arguments).unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(|value| value.as_str());
    let ctx = &policy.paths;
    let mut out = Vec::new();
    let operand = |operand| info.and_then(|info| info.operand(operand));
    if let Some(script) = operand(Operand::Script) {
        {
            let mut start = ctx.clone();
            if let Some(workdir) = operand(Operand::Workdir).and_then(text) {
                out.push(ctx.joined(workdir));
                start.cwd = ctx.resolve(workdir);
            }
            let script = analyze_script_in(text(script).unwrap_or_default(), &Dirs::default());
            let words = script
                .commands
                .iter()
                .flat_map(|c| c.argv.iter().skip(1).map(move |w| (w.as_str(), &c.dirs)))
                .chain(script.writes.iter().map(|w| (w.target.as_str(), &w.dirs)))
                .chain(script.reads.iter().map(|r| (r.target.as_str(), &r.dirs)));
            for (word, dirs) in words {
                let word = word.split_once('=').map_or(word, |(_, value)| value);
                if word.is_empty() || word.starts_with('-') || dynamic_part(word).is_some() {
                    continue;
                }
                let word = if has_glob(word) { before_glob(word) } else { word };
                for dir in dirs.contexts(&start) {
                    out.push(dir.joined(word));
                }
                if out.len() >= MAX_QUERIES {
                    break;
                }
            }
        }
    } else if let Some(patch) = operand(Operand::Patch) {
        {
            for hunk in parse(text(patch).unwrap_or_default()).unwrap_or_default() {
                match hunk {
                    Hunk::Add { path, .. } | Hunk::Delete { path } => out.push(ctx.joined(&path)),
                    Hunk::Update { path, move_to, .. } => {
                        out.push(ctx.joined(&path));
                        out.extend(move_to.map(|to| ctx.joined(&to)));
                    }
                }
            }
        }
    } else {
        let named = match info {
            Some(info) => info.named_paths(&args).into_iter().map(|(path, _)| path).collect(),
            None => text("path").into_iter().collect::<Vec<_>>(),
        };
        for path in named {
            // The tools read it from the root first, else from the cwd.
            out.push(ctx.workspace_root.join(path));
            out.push(ctx.joined(path));
        }
    }
    out.dedup();
    out.truncate(MAX_QUERIES);
    out
}

/// The part of a glob word before its first component with a glob.
fn before_glob(word: &str) -> &str {
    let Some(at) = word.find(['*', '?', '[']) else { return word };
    match word[..at].rfind('/') {
        Some(slash) => &word[..slash],
        None => ".",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{ApprovalMode, PathContext, RuleSet};
    use crate::protocol::ToolClass;

    fn queries(tool: &str, args: serde_json::Value) -> Vec<String> {
        let paths = PathContext::new("/h", "/h/ws", "/h/ws");
        let policy = Policy::new(RuleSet::default(), ApprovalMode::Auto, paths);
        let arguments = args.to_string();
        let call = CallFacts { tool, class: ToolClass::Mutating, arguments: &arguments };
        path_queries(&policy, call).into_iter().map(|p| p.display().to_string()).collect()
    }

    #[test]
    fn every_path_a_call_names() {
        let shell = queries(
            "shell",
            serde_json::json!({"command": "rm -rf zz/* && cat < in > out; cp -r $X y", "workdir": "sub"}),
        );
        assert_eq!(
            shell,
            ["/h/ws/sub", "/h/ws/sub/zz", "/h/ws/sub/y", "/h/ws/sub/out", "/h/ws/sub/in"]
        );
        let patch = "*** Begin Patch\n*** Add File: a/b\n+x\n*** Update File: c\n*** Move to: ../d\n@@\n-x\n+y\n*** End Patch";
        let patched = queries("apply_patch", serde_json::json!({ "patch": patch }));
        assert_eq!(patched, ["/h/ws/a/b", "/h/ws/c", "/h/ws/../d"]);
        assert_eq!(
            queries("write_file", serde_json::json!({"path": "docs/n.txt"})),
            ["/h/ws/docs/n.txt"]
        );
    }
}
