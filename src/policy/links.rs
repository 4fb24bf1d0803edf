//! Symlinks as facts: the links a caller found on disk along the paths a
//! call names (`runtime::path_facts` gathers them right before the call
//! runs), or that a script creates itself (`ln -s . zz`), so a path is
//! judged where it really leads: `docs/notes.txt -> ../.env` is `.env`,
//! `zz/*` after `ln -s . zz` is everything in the workspace.
//!
//! Invariants: pure (the caller did the reading); applying links never
//! loops (a bound of [`MAX_HOPS`], as the kernel's); with no links a path
//! is only normalised, so the lexical judgement is unchanged.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// How many links one path may pass through (Linux allows 40).
pub const MAX_HOPS: usize = 40;

/// Link path (absolute, as policy spells it) → where it points (absolute).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PathLinks(BTreeMap<PathBuf, PathBuf>);

impl PathLinks {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Records that `link` points to `target` (both absolute).
    pub fn insert(&mut self, link: PathBuf, target: PathBuf) {
        self.0.insert(link, target);
    }

    /// Every link, for messages and logs.
    pub fn iter(&self) -> impl Iterator<Item = (&Path, &Path)> {
        self.0.iter().map(|(link, target)| (link.as_path(), target.as_path()))
    }

    /// `path` (absolute, `..` allowed) with every known link on its way
    /// replaced by its target and `..` applied after the link, as the
    /// kernel walks it. Past [`MAX_HOPS`] the path is returned as far as
    /// it was followed.
    pub fn apply(&self, path: &Path) -> PathBuf {
        let mut pending: Vec<PathBuf> = Vec::new();
        push_components(&mut pending, path);
        let mut out = PathBuf::from("/");
        let mut hops = 0;
        while let Some(name) = pending.pop() {
            if name.as_os_str() == ".." {
                out.pop();
                continue;
            }
            out.push(&name);
            let Some(target) = self.0.get(&out).filter(|_| hops < MAX_HOPS) else { continue };
            hops += 1;
            out = PathBuf::from("/");
            push_components(&mut pending, target);
        }
        out
    }
}

/// Pushes `path`'s components onto the stack so the first pops first.
fn push_components(stack: &mut Vec<PathBuf>, path: &Path) {
    let names: Vec<PathBuf> = path
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(PathBuf::from(name)),
            Component::ParentDir => Some(PathBuf::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    stack.extend(names.into_iter().rev());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(pairs: &[(&str, &str)]) -> PathLinks {
        let mut links = PathLinks::default();
        for (link, target) in pairs {
            links.insert(PathBuf::from(link), PathBuf::from(target));
        }
        links
    }

    #[test]
    fn a_link_on_the_way_is_followed_and_dotdot_applies_after_it() {
        let l = links(&[("/ws/docs/notes.txt", "/ws/.env"), ("/ws/zz", "/ws")]);
        assert_eq!(l.apply(Path::new("/ws/docs/notes.txt")), Path::new("/ws/.env"));
        assert_eq!(l.apply(Path::new("/ws/zz/zz/src")), Path::new("/ws/src"));
        assert_eq!(l.apply(Path::new("/ws/zz/..")), Path::new("/"));
        assert_eq!(l.apply(Path::new("/ws/a/../zz")), Path::new("/ws"));
    }

    #[test]
    fn loops_stop() {
        let l = links(&[("/a", "/b"), ("/b", "/a")]);
        let _ = l.apply(Path::new("/a/x"));
        assert_eq!(PathLinks::default().apply(Path::new("/x/./y/../z")), Path::new("/x/z"));
    }
}
