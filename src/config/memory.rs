//! Finding memory notes: `~/.keel/memory/*.md` (the user's), then the
//! project's `.keel/memory/*.md`. A project note with the same name as a
//! user note wins (it is more specific).
//!
//! Invariants: a note that cannot be read or parsed is reported with its
//! path and the others still load; files are read once per session start
//! (the index is small; bodies are read again by `read_memory`); a note and
//! its `memory` folder are opened without following a symlink, here and in
//! `read_memory` (`support::beneath`).

use std::path::{Path, PathBuf};

use crate::context::memory::{MemoryError, MemoryMeta, MemoryNote, parse_memory};

/// Most notes read from one folder.
const MAX_NOTES_PER_FOLDER: usize = 200;

/// A note that did not load, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryProblem {
    pub path: PathBuf,
    pub error: String,
}

/// The notes for a session in `workspace_root`, sorted by name.
pub fn discover_memory(
    keel_home: &Path,
    workspace_root: &Path,
) -> (Vec<MemoryNote>, Vec<MemoryProblem>) {
    let mut notes: Vec<MemoryNote> = Vec::new();
    let mut problems = Vec::new();
    for folder in [keel_home.join("memory"), workspace_root.join(".keel").join("memory")] {
        for (path, result) in read_folder(&folder) {
            match result {
                Ok(meta) => {
                    notes.retain(|note| note.meta.name != meta.name);
                    notes.push(MemoryNote { meta, path });
                }
                Err(error) => problems.push(MemoryProblem { path, error }),
            }
        }
    }
    notes.sort_by(|a, b| a.meta.name.cmp(&b.meta.name));
    (notes, problems)
}

/// A note's text, opened beneath the folder above its `memory` folder
/// without following a symlink (`support::beneath`), as `read_memory` reads
/// it again later: a note or folder swapped for a link leads nowhere.
fn read_note(path: &Path) -> Result<String, crate::support::bounded_read::BoundedReadError> {
    let root = crate::support::beneath::root_above(path, 2);
    crate::support::bounded_read::read_bounded_beneath(root, path)
}

fn read_folder(folder: &Path) -> Vec<(PathBuf, Result<MemoryMeta, String>)> {
    let Ok(entries) = std::fs::read_dir(folder) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
        .collect();
    paths.sort();
    paths.truncate(MAX_NOTES_PER_FOLDER);
    paths
        .into_iter()
        .map(|path| {
            let stem =
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
            let parsed = read_note(&path).map_err(|error| error.to_string()).and_then(|text| {
                parse_memory(&text, &stem).map_err(|e: MemoryError| e.to_string())
            });
            (path, parsed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_and_project_notes_load_and_a_broken_one_is_reported() {
        let home = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let user = home.path().join("memory");
        let project = repo.path().join(".keel").join("memory");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(user.join("style.md"), "---\ndescription: user style\n---\nterse\n")
            .unwrap();
        std::fs::write(user.join("shared.md"), "---\ndescription: from user\n---\n").unwrap();
        std::fs::write(project.join("shared.md"), "---\ndescription: from project\n---\n").unwrap();
        std::fs::write(project.join("broken.md"), "no front matter").unwrap();
        let (notes, problems) = discover_memory(home.path(), repo.path());
        let names: Vec<(&str, &str)> =
            notes.iter().map(|n| (n.meta.name.as_str(), n.meta.description.as_str())).collect();
        assert_eq!(names, vec![("shared", "from project"), ("style", "user style")]);
        assert_eq!(problems.len(), 1);
        assert!(problems[0].path.ends_with("broken.md"));
        assert!(problems[0].error.contains("front matter"));
    }
}
