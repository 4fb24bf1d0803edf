//! Codex's 23 `apply_patch` scenarios from `../shared/conformance/`: each
//! input tree is copied into a temp dir, the patch applied through the same
//! entry point the tool uses, and the tree compared byte for byte with
//! `expected/`. Plus the exit status and messages of the failure cases, and
//! keel's own scenarios in the same layout (`tests/fixtures/apply_patch/`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::*;

/// Codex's scenarios, or `None` (the test is skipped) in a clone without the
/// shared corpus: see `crate::shared_corpus`.
fn scenarios_dir() -> Option<PathBuf> {
    crate::shared_corpus::locate("conformance/apply_patch/scenarios")
}

/// Every file and directory under `root`: relative path → file bytes
/// (`None` for a directory).
fn tree(root: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    if !root.exists() {
        return found;
    }
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_owned();
            if path.is_dir() {
                found.insert(rel, None);
                stack.push(path);
            } else {
                found.insert(rel, Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    found
}

fn copy_tree(from: &Path, to: &Path) {
    for (rel, bytes) in tree(from) {
        match bytes {
            None => std::fs::create_dir_all(to.join(rel)).unwrap(),
            Some(bytes) => {
                let path = to.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, bytes).unwrap();
            }
        }
    }
}

/// Applies scenario `name` in a fresh temp dir; returns the outcome and dir.
fn run_scenario(dir: &Path) -> (Result<PatchReport, PatchError>, tempfile::TempDir) {
    let work = tempfile::tempdir().unwrap();
    copy_tree(&dir.join("input"), work.path());
    let patch = std::fs::read_to_string(dir.join("patch.txt")).unwrap();
    let ws = Workspace::from_parts(work.path(), work.path()).unwrap();
    (apply_patch_text(&ws, &FileStates::unchecked(), &patch), work)
}

#[test]
fn all_scenarios_produce_the_expected_tree() {
    let Some(scenarios) = scenarios_dir() else { return };
    let mut names: Vec<PathBuf> = std::fs::read_dir(scenarios)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    names.sort();
    assert_eq!(names.len(), 23, "expected 23 scenarios, found {names:?}");
    let mut failures = Vec::new();
    for dir in &names {
        let (outcome, work) = run_scenario(dir);
        let expected = tree(&dir.join("expected"));
        let actual = tree(work.path());
        if actual != expected {
            let name = dir.file_name().unwrap().to_string_lossy().into_owned();
            failures.push(format!(
                "{name}: outcome {outcome:?}\n  got {actual:?}\n  want {expected:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{} scenarios failed:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn own_scenarios_produce_the_expected_tree() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apply_patch");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    assert!(!dirs.is_empty());
    for dir in &dirs {
        let (outcome, work) = run_scenario(dir);
        assert!(outcome.is_ok(), "{}: {outcome:?}", dir.display());
        assert_eq!(tree(work.path()), tree(&dir.join("expected")), "{}", dir.display());
    }
}

/// The error message and kind of a scenario that must fail.
fn failure(scenarios: &Path, name: &str) -> (String, &'static str) {
    let (outcome, _work) = run_scenario(&scenarios.join(name));
    let error = ToolError::from(outcome.expect_err(name));
    (error.to_string(), error.kind())
}

#[test]
fn failure_scenarios_say_why() {
    let Some(scenarios) = scenarios_dir() else { return };
    let cases = [
        ("005_rejects_empty_patch", "invalid_patch", "contains no file operation"),
        ("006_rejects_missing_context", "patch_mismatch", "lines were not found"),
        ("007_rejects_missing_file_delete", "not_found", "missing.txt does not exist"),
        ("008_rejects_empty_update_hunk", "invalid_patch", "update of `foo.txt` has no `@@`"),
        ("009_requires_existing_file_for_update", "not_found", "missing.txt does not exist"),
        ("012_delete_directory_fails", "is_a_directory", "dir is a directory"),
        ("013_rejects_invalid_hunk_header", "invalid_patch", "`*** Frobnicate File: foo`"),
    ];
    for (name, kind, needle) in cases {
        let (message, actual_kind) = failure(&scenarios, name);
        assert_eq!(actual_kind, kind, "{name}: {message}");
        assert!(message.contains(needle), "{name}: {message}");
        assert!(message.contains("nothing was changed"), "{name}: {message}");
    }
}

#[test]
fn partial_failure_lists_what_stays_applied() {
    let Some(scenarios) = scenarios_dir() else { return };
    let (message, kind) = failure(&scenarios, "015_failure_after_partial_success_leaves_changes");
    assert_eq!(kind, "not_found");
    assert!(message.starts_with("operation 2 of the patch failed"), "{message}");
    assert!(message.ends_with("stay applied:\nA created.txt"), "{message}");
}

#[test]
fn success_reports_each_file_like_codex() {
    let Some(scenarios) = scenarios_dir() else { return };
    let (outcome, _work) = run_scenario(&scenarios.join("002_multiple_operations"));
    let report = outcome.unwrap();
    assert_eq!(report.lines(), "A nested/new.txt\nD delete.txt\nM modify.txt\n");
}

#[test]
fn paths_outside_the_workspace_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let ws = Workspace::from_parts(work.path(), work.path()).unwrap();
    let states = FileStates::unchecked();
    for path in ["../escape.txt", "/tmp/keel-escape.txt"] {
        let patch = format!("*** Begin Patch\n*** Add File: {path}\n+x\n*** End Patch\n");
        let error = ToolError::from(apply_patch_text(&ws, &states, &patch).unwrap_err());
        assert_eq!(error.kind(), "outside_workspace", "{error}");
    }
    std::fs::write(work.path().join("a.txt"), "a\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: ../moved.txt\n@@\n-a\n+b\n*** End Patch";
    let error = ToolError::from(apply_patch_text(&ws, &states, patch).unwrap_err());
    assert_eq!(error.kind(), "outside_workspace", "{error}");
    assert_eq!(std::fs::read_to_string(work.path().join("a.txt")).unwrap(), "a\n");
    assert!(!work.path().parent().unwrap().join("moved.txt").exists());
}

#[test]
fn deleting_a_symlink_removes_the_link_not_its_target() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("real.txt"), "keep\n").unwrap();
    std::os::unix::fs::symlink(work.path().join("real.txt"), work.path().join("link")).unwrap();
    let ws = Workspace::from_parts(work.path(), work.path()).unwrap();
    let patch = "*** Begin Patch\n*** Delete File: link\n*** End Patch\n";
    let report = apply_patch_text(&ws, &FileStates::unchecked(), patch).unwrap();
    assert_eq!(report.lines(), "D link\n");
    assert!(std::fs::symlink_metadata(work.path().join("link")).is_err());
    assert_eq!(std::fs::read_to_string(work.path().join("real.txt")).unwrap(), "keep\n");
}
