//! Symlinks as facts for policy: right before a call runs, the paths it
//! names ([`policy::path_queries`]) are walked on disk and every symlink on
//! the way is recorded, so the call is judged where it really leads
//! (`docs/notes.txt -> ../.env` is `.env`; `rm -rf zz/*` after `ln -s .
//! zz` is the whole workspace). The session gathers them for every call
//! right before it runs (`Effect::CheckCalls`) and `step` judges the call
//! again with them when any were found (`agent::call_checks`); `keel tool`
//! judges with them directly.
//!
//! Invariants: reads only metadata and link targets, never file contents;
//! the workspace root and home are anchors taken as policy spells them
//! (their own ancestors are not walked, so a symlinked home does not make
//! every path look moved); a link target is recorded canonical when it
//! exists, lexically joined when it dangles; bounded by
//! [`policy::links::MAX_HOPS`] per path.

use std::path::{Component, Path, PathBuf};

use crate::policy::links::MAX_HOPS;
use crate::policy::paths::normalize;
use crate::policy::{self, CallFacts, PathContext, PathLinks, Policy};
use crate::protocol::ToolCall;

use super::Session;

/// The symlinks on the way to every path `call` names.
pub fn gather_links(policy: &Policy, call: CallFacts<'_>) -> PathLinks {
    let mut links = PathLinks::default();
    for query in policy::path_queries(policy, call) {
        walk(&policy.paths, &query, &mut links);
    }
    links
}

/// Follows `path` component by component, recording links.
fn walk(ctx: &PathContext, path: &Path, links: &mut PathLinks) {
    let anchors = [&ctx.workspace_root, &ctx.home];
    let anchor = anchors
        .iter()
        .filter(|anchor| !anchor.as_os_str().is_empty() && path.starts_with(anchor))
        .max_by_key(|anchor| anchor.components().count());
    let (mut out, rest) = match anchor {
        Some(anchor) => ((*anchor).clone(), path.strip_prefix(anchor).unwrap_or(path)),
        None => (PathBuf::from("/"), path),
    };
    let mut pending: Vec<PathBuf> = components(rest);
    pending.reverse();
    let mut hops = 0;
    while let Some(name) = pending.pop() {
        if name.as_os_str() == ".." {
            out.pop();
            continue;
        }
        let candidate = out.join(&name);
        let Ok(metadata) = std::fs::symlink_metadata(&candidate) else {
            // Missing: the rest cannot hold links yet.
            return;
        };
        if !metadata.file_type().is_symlink() {
            out = candidate;
            continue;
        }
        hops += 1;
        if hops > MAX_HOPS {
            return;
        }
        let target = target_of(ctx, &candidate);
        links.insert(candidate, target.clone());
        out = target;
    }
}

/// Where the link at `link` points: canonical if it exists (translated
/// back under the workspace root or home as policy spells them), else its
/// text joined to the link's folder.
fn target_of(ctx: &PathContext, link: &Path) -> PathBuf {
    if let Ok(canonical) = std::fs::canonicalize(link) {
        for anchor in [&ctx.workspace_root, &ctx.home] {
            if let Ok(real) = std::fs::canonicalize(anchor) {
                if let Ok(rest) = canonical.strip_prefix(&real) {
                    return anchor.join(rest);
                }
            }
        }
        return canonical;
    }
    let text = std::fs::read_link(link).unwrap_or_default();
    normalize(&link.parent().unwrap_or(Path::new("/")).join(text))
}

fn components(path: &Path) -> Vec<PathBuf> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(PathBuf::from(name)),
            Component::ParentDir => Some(PathBuf::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

impl Session {
    /// The symlinks on the way to `call`'s paths.
    pub(super) fn links_for(&self, call: &ToolCall) -> PathLinks {
        let class = self.state.class_of(&call.name);
        let facts = CallFacts { tool: &call.name, class, arguments: &call.arguments };
        gather_links(&self.state.config().policy, facts)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use serde_json::json;

    use super::*;
    use crate::policy::{ApprovalMode, RuleSet};
    use crate::protocol::ToolClass;

    #[test]
    fn links_on_the_way_are_found() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join(".env"), "K=1").unwrap();
        symlink("../.env", root.join("docs/notes.txt")).unwrap();
        symlink(".", root.join("zz")).unwrap();
        let policy = Policy::new(
            RuleSet::default(),
            ApprovalMode::Auto,
            PathContext::new("/nonexistent-home", &root, &root),
        );
        let args = json!({"path": "docs/notes.txt"}).to_string();
        let call = CallFacts { tool: "read_file", class: ToolClass::ReadOnly, arguments: &args };
        let links = gather_links(&policy, call);
        assert_eq!(links.apply(&root.join("docs/notes.txt")), root.join(".env"));
        let args = json!({"command": "rm -rf zz/*"}).to_string();
        let call = CallFacts { tool: "shell", class: ToolClass::Mutating, arguments: &args };
        let links = gather_links(&policy, call);
        assert_eq!(links.apply(&root.join("zz/src")), root.join("src"));
    }
}
