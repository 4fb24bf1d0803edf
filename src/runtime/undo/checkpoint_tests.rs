use std::path::{Path, PathBuf};

use super::*;

fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A repository with `files` committed (each a few KB of its own bytes).
fn committed_repo(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    for n in 0..files {
        let path = dir.path().join(format!("src/m{}/f{n}.rs", n % 10));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("// file {n}\n{}", "x".repeat(4000 + n))).unwrap();
    }
    std::fs::write(dir.path().join(".gitignore"), "target/\n").unwrap();
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "start"]);
    dir
}

/// Loose objects and packs the shadow wrote into its own store.
fn own_objects(shadow: &ShadowRepo) -> usize {
    let objects = shadow.git_dir.join("objects");
    std::fs::read_dir(&objects)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().len() == 2)
        .map(|entry| std::fs::read_dir(entry.path()).unwrap().count())
        .sum()
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

#[tokio::test]
async fn restore_brings_back_changed_and_removes_created_files() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "one").unwrap();
    std::fs::write(work.path().join(".gitignore"), "build/\n").unwrap();
    let shadow = ShadowRepo::for_workspace(home.path(), work.path());
    let limits = UndoLimits::default();
    let commit = shadow.snapshot(&Scope::Everything, limits, "turn 1").await.unwrap().commit;
    std::fs::write(work.path().join("a.txt"), "two").unwrap();
    std::fs::write(work.path().join("new.txt"), "new").unwrap();
    std::fs::create_dir(work.path().join("build")).unwrap();
    std::fs::write(work.path().join("build/out"), "o").unwrap();
    let saved = shadow.restore(&commit, limits).await.unwrap().commit;
    let changed = shadow.changed_between(&saved, &commit).await.unwrap();
    assert_eq!(changed, ["a.txt", "new.txt"]);
    assert_eq!(read(work.path(), "a.txt"), "one");
    assert!(!work.path().join("new.txt").exists());
    assert!(work.path().join("build/out").exists(), "ignored files are left alone");

    let copy = tempfile::tempdir().unwrap();
    shadow.export(&commit, copy.path()).await.unwrap();
    assert_eq!(read(copy.path(), "a.txt"), "one");
    assert!(!copy.path().join(".keel-export-index").exists());
}

#[tokio::test]
async fn committed_files_are_borrowed_not_copied_and_uncommitted_work_is_kept() {
    let home = tempfile::tempdir().unwrap();
    let repo = committed_repo(300);
    let root = repo.path();
    // The user's own work in progress: one edit, one new file.
    std::fs::write(root.join("src/m1/f1.rs"), "work in progress").unwrap();
    std::fs::write(root.join("notes.md"), "todo").unwrap();
    let shadow = ShadowRepo::for_workspace(home.path(), root);
    assert!(shadow.is_new());
    assert_eq!(shadow.tracked_files(), Some(301));
    let limits = UndoLimits::default();
    let first = shadow.snapshot(&Scope::Everything, limits, "turn 1").await.unwrap();
    assert_eq!(first.saved_files, 2, "only the uncommitted files are read and saved");
    assert!(
        own_objects(&shadow) < 10,
        "the committed files' blobs stay in the project's store: {} objects copied",
        own_objects(&shadow)
    );
    assert!(!shadow.is_new());

    // The turn: edits, a deletion, a new file; then undo.
    std::fs::write(root.join("src/m1/f1.rs"), "the agent's version").unwrap();
    std::fs::write(root.join("src/m2/f2.rs"), "changed").unwrap();
    std::fs::remove_file(root.join("src/m3/f3.rs")).unwrap();
    std::fs::write(root.join("made.txt"), "new").unwrap();
    let original_f3 = git(root, &["show", "HEAD:src/m3/f3.rs"]);
    shadow.restore(&first.commit, limits).await.unwrap();
    assert_eq!(read(root, "src/m1/f1.rs"), "work in progress");
    assert_eq!(read(root, "notes.md"), "todo");
    assert_eq!(read(root, "src/m3/f3.rs"), original_f3);
    assert!(read(root, "src/m2/f2.rs").starts_with("// file 2"));
    assert!(!root.join("made.txt").exists());
    assert_eq!(git(root, &["status", "--porcelain"]), " M src/m1/f1.rs\n?? notes.md\n");
}

#[tokio::test]
async fn a_file_the_project_marked_assume_unchanged_is_still_looked_at() {
    let home = tempfile::tempdir().unwrap();
    let repo = committed_repo(3);
    let root = repo.path();
    git(root, &["update-index", "--assume-unchanged", "src/m0/f0.rs"]);
    std::fs::write(root.join("src/m0/f0.rs"), "edited, git told to look away").unwrap();
    let shadow = ShadowRepo::for_workspace(home.path(), root);
    let limits = UndoLimits::default();
    let first = shadow.snapshot(&Scope::Everything, limits, "turn 1").await.unwrap();
    std::fs::write(root.join("src/m0/f0.rs"), "the agent's version").unwrap();
    shadow.restore(&first.commit, limits).await.unwrap();
    assert_eq!(read(root, "src/m0/f0.rs"), "edited, git told to look away");
}

#[tokio::test]
async fn a_scoped_checkpoint_looks_only_at_the_paths_named() {
    let home = tempfile::tempdir().unwrap();
    let repo = committed_repo(5);
    let root = repo.path();
    let shadow = ShadowRepo::for_workspace(home.path(), root);
    let limits = UndoLimits::default();
    let first = shadow.snapshot(&Scope::Everything, limits, "turn 1").await.unwrap();
    std::fs::write(root.join("src/m1/f1.rs"), "seen").unwrap();
    std::fs::write(root.join("src/m2/f2.rs"), "not named").unwrap();
    std::fs::create_dir_all(root.join("gen/deep")).unwrap();
    std::fs::write(root.join("gen/deep/x.rs"), "new folder").unwrap();
    let scope = Scope::Paths(vec![PathBuf::from("src/m1/f1.rs"), PathBuf::from("gen")]);
    let second = shadow.snapshot(&scope, limits, "turn 2").await.unwrap();
    let changed = shadow.changed_between(&first.commit, &second.commit).await.unwrap();
    assert_eq!(changed, ["gen/deep/x.rs", "src/m1/f1.rs"]);
}

#[tokio::test]
async fn files_over_the_caps_are_left_out_and_left_alone_by_a_restore() {
    let home = tempfile::tempdir().unwrap();
    let repo = committed_repo(2);
    let root = repo.path();
    let limits = UndoLimits { max_file_bytes: 1000, max_total_bytes: 1_000_000 };
    let shadow = ShadowRepo::for_workspace(home.path(), root);
    std::fs::write(root.join("big.bin"), vec![7u8; 5000]).unwrap();
    // A tracked file grown past the cap: its old version must not come back.
    std::fs::write(root.join("src/m0/f0.rs"), "y".repeat(5000)).unwrap();
    let first = shadow.snapshot(&Scope::Everything, limits, "turn 1").await.unwrap();
    let skipped: Vec<&str> = first.skipped.iter().map(|s| s.path.as_str()).collect();
    assert_eq!(skipped, ["src/m0/f0.rs", "big.bin"], "tracked changes first, as git lists them");
    std::fs::write(root.join("big.bin"), vec![8u8; 6000]).unwrap();
    std::fs::write(root.join("src/m0/f0.rs"), "z".repeat(6000)).unwrap();
    std::fs::write(root.join("src/m1/f1.rs"), "covered").unwrap();
    shadow.restore(&first.commit, limits).await.unwrap();
    assert_eq!(std::fs::read(root.join("big.bin")).unwrap(), vec![8u8; 6000]);
    assert_eq!(read(root, "src/m0/f0.rs"), "z".repeat(6000));
    assert!(read(root, "src/m1/f1.rs").starts_with("// file 1"));
}

#[test]
fn long_path_lists_are_split_to_fit_command_lines() {
    let paths: Vec<String> = (0..5000).map(|n| format!("{}/{n}", "d".repeat(60))).collect();
    let chunks = chunked(&paths);
    assert!(chunks.len() > 1);
    assert_eq!(chunks.iter().map(Vec::len).sum::<usize>(), paths.len());
    for chunk in &chunks {
        assert!(chunk.iter().map(|p| p.len() + 1).sum::<usize>() <= ARGS_BYTES);
    }
    assert!(chunked::<String>(&[]).is_empty());
}

/// Issue 34: the undo store holds copies of the workspace's files; under
/// umask 022 git and keel created them 0644 (only KEEL_HOME's 0700 kept
/// others out). Every file and folder is now the owner's only.
#[tokio::test]
async fn the_undo_store_is_owner_only_file_by_file() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let work = committed_repo(3);
    std::fs::write(work.path().join("new.txt"), "secret-ish").unwrap();
    let shadow = ShadowRepo::for_workspace(home.path(), work.path());
    let limits = UndoLimits::default();
    shadow.snapshot(&Scope::Everything, limits, "turn 1").await.unwrap();
    std::fs::write(work.path().join("new.txt"), "changed").unwrap();
    shadow.snapshot(&Scope::Everything, limits, "turn 2").await.unwrap();
    let mut open = Vec::new();
    let mut stack = vec![shadow.git_dir.clone()];
    while let Some(path) = stack.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.permissions().mode() & 0o077 != 0 {
            open.push(format!("{:o} {}", meta.permissions().mode() & 0o777, path.display()));
        }
        if meta.is_dir() {
            stack.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    assert!(open.is_empty(), "readable by others:\n{}", open.join("\n"));
}

/// Git compares a folder's cached listing (the untracked cache) by whole
/// seconds: a folder changed within the second its listing was cached
/// looks unchanged once an index written in a later second makes the
/// cache look settled. The rewind property found it (a file a turn made in
/// a new folder stayed after the rewind); a restore must still see, and
/// remove, what was made there.
#[tokio::test]
async fn a_restore_removes_a_file_made_within_the_second_its_folder_was_listed() {
    let home = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("a.txt"), "a").unwrap();
    let shadow = ShadowRepo::for_workspace(home.path(), work.path());
    let limits = UndoLimits::default();
    shadow.snapshot(&Scope::Everything, limits, "start").await.unwrap();
    std::fs::create_dir_all(work.path().join("n/m")).unwrap();
    std::fs::write(work.path().join("n/m/g.txt"), "g").unwrap();
    let target = shadow.snapshot(&Scope::Everything, limits, "turn 1").await.unwrap().commit;
    // Within the same second: a new folder in `n` (its time put back as
    // the same second's), then the index rewritten a second later.
    let folder = work.path().join("n");
    let listed = std::fs::metadata(&folder).unwrap().modified().unwrap();
    std::fs::create_dir(folder.join("k2")).unwrap();
    std::fs::write(folder.join("k2/h.txt"), "h").unwrap();
    std::fs::File::open(&folder).unwrap().set_modified(listed).unwrap();
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
    let index = std::fs::File::options().write(true).open(shadow.index_path()).unwrap();
    index.set_modified(later).unwrap();

    let saved = shadow.restore(&target, limits).await.unwrap().commit;
    assert!(!work.path().join("n/k2/h.txt").exists(), "the file made since is removed");
    let changed = shadow.changed_between(&saved, &target).await.unwrap();
    assert_eq!(changed, ["n/k2/h.txt"]);
}
