use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use super::{Dirty, Watcher};

fn paths(list: &[&str]) -> Dirty {
    Dirty::Paths(list.iter().map(PathBuf::from).collect())
}

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(root.join("target/debug")).unwrap();
    std::fs::create_dir_all(root.join(".git/objects")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "fn a() {}").unwrap();
    dir
}

#[test]
fn changes_in_watched_folders_are_dirty_and_ignored_ones_only_noted() {
    let dir = workspace();
    let root = dir.path();
    let mut watcher = Watcher::start(root, &[], &AtomicBool::new(false)).unwrap();
    assert_eq!(watcher.folders(), 3, "root, src and src/deep; not target or .git");
    assert_eq!(watcher.take_dirty(), paths(&[]));

    std::fs::write(root.join("src/lib.rs"), "fn b() {}").unwrap();
    std::fs::write(root.join("src/deep/new.rs"), "").unwrap();
    std::fs::write(root.join("build.log"), "noise").unwrap();
    std::fs::write(root.join("target/debug/out"), "o").unwrap();
    std::fs::write(root.join(".git/objects/x"), "o").unwrap();
    std::fs::remove_file(root.join("src/deep/new.rs")).unwrap();
    assert_eq!(watcher.take_dirty(), paths(&["src/deep/new.rs", "src/lib.rs"]));
    assert_eq!(watcher.take_ignored(), [PathBuf::from("build.log")]);
    assert_eq!(watcher.take_dirty(), paths(&[]), "taking empties the set");
}

#[test]
fn a_new_folder_is_dirty_as_a_whole_and_watched_from_then_on() {
    let dir = workspace();
    let root = dir.path();
    let mut watcher = Watcher::start(root, &[], &AtomicBool::new(false)).unwrap();
    std::fs::create_dir_all(root.join("gen/a")).unwrap();
    std::fs::write(root.join("gen/a/made.rs"), "").unwrap();
    assert_eq!(watcher.take_dirty(), paths(&["gen"]));
    std::fs::write(root.join("gen/a/later.rs"), "").unwrap();
    assert_eq!(watcher.take_dirty(), paths(&["gen/a/later.rs"]));
}

#[test]
fn marks_tell_whether_anything_changed_in_between() {
    let dir = workspace();
    let root = dir.path();
    let mut watcher = Watcher::start(root, &[], &AtomicBool::new(false)).unwrap();
    let mark = watcher.mark();
    std::fs::write(root.join("debug.log"), "ignored").unwrap();
    assert!(!watcher.changed_since(mark), "an ignored file is no change");
    std::fs::write(root.join("src/lib.rs"), "changed").unwrap();
    assert!(watcher.changed_since(mark));
}

#[test]
fn excluded_folders_and_gitignore_edits() {
    let dir = workspace();
    let root = dir.path();
    std::fs::create_dir_all(root.join("state/shadow")).unwrap();
    let mut watcher = Watcher::start(root, &[root.join("state")], &AtomicBool::new(false)).unwrap();
    std::fs::write(root.join("state/shadow/index"), "x").unwrap();
    std::fs::write(root.join("state/log"), "x").unwrap();
    assert_eq!(watcher.take_dirty(), paths(&[]));
    std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
    assert_eq!(watcher.take_dirty(), Dirty::Everything, "what is ignored changed");
    assert_eq!(watcher.take_dirty(), paths(&[]));
}

#[test]
fn a_deleted_folder_is_dirty() {
    let dir = workspace();
    let root = dir.path();
    let mut watcher = Watcher::start(root, &[], &AtomicBool::new(false)).unwrap();
    std::fs::remove_dir_all(root.join("src")).unwrap();
    let Dirty::Paths(dirty) = watcher.take_dirty() else { panic!("no overflow expected") };
    assert!(dirty.contains(&PathBuf::from("src")), "{dirty:?}");
    assert!(dirty.iter().all(|path| path.starts_with(Path::new("src"))), "{dirty:?}");
}

#[test]
fn a_stopped_start_gives_up() {
    let dir = workspace();
    let stop = AtomicBool::new(true);
    assert!(matches!(Watcher::start(dir.path(), &[], &stop), Err(super::WatchError::Stopped)));
}

#[test]
fn the_first_walk_finds_the_nested_git_folders_the_jails_search_finds() {
    let dir = workspace();
    let root = dir.path();
    std::fs::write(root.join(".gitignore"), "target/\n*.log\nbuild/\n").unwrap();
    // Watched, ignored (read only for the search), skipped by the
    // search, and keel's own state, which neither looks into.
    for nested in [
        "vendor/lib/.git",
        "src/deep/sub/.git",
        "build/dep/.git",
        "build/node_modules/x/.git",
        "state/repo/.git",
    ] {
        std::fs::create_dir_all(root.join(nested)).unwrap();
    }
    std::fs::create_dir_all(root.join("module")).unwrap();
    std::fs::write(root.join("module/.git"), "gitdir: ../.git/modules/m").unwrap();
    let excluded = [root.join("state")];
    let (watcher, nested) =
        Watcher::start_finding_nested(root, &excluded, None, &AtomicBool::new(false)).unwrap();
    let expected: Vec<PathBuf> =
        ["build/dep/.git", "module/.git", "src/deep/sub/.git", "vendor/lib/.git"]
            .iter()
            .map(|path| root.join(path))
            .collect();
    assert_eq!(nested, expected);
    let mut searched = crate::sandbox::protected::nested_git_dirs(root);
    searched.retain(|path| !path.starts_with(root.join("state")));
    assert_eq!(nested, searched, "the same as the jail's own search");
    assert!(
        !watcher.folders.values().any(|folder| folder.starts_with("build")),
        "build/ is ignored"
    );
    assert!(watcher.first_walk.is_none());
}
