use std::path::{Path, PathBuf};

use super::{FolderCache, nested_git_dirs};
use crate::sandbox::protected;

#[test]
fn the_search_over_kept_listings_finds_what_the_jails_own_search_finds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for nested in
        [".git/hooks", "vendor/lib/.git", "a/b/c/.git", "node_modules/x/.git", "d/target/y/.git"]
    {
        std::fs::create_dir_all(root.join(nested)).unwrap();
    }
    std::fs::create_dir_all(root.join("module")).unwrap();
    std::fs::write(root.join("module/.git"), "gitdir: ../.git/modules/m").unwrap();
    let file = root.join("state/folders");
    let mut cache = FolderCache::load(file.clone());
    assert!(cache.is_empty());
    let found = nested_git_dirs(root, &mut cache);
    let expected: Vec<PathBuf> =
        ["a/b/c/.git", "module/.git", "vendor/lib/.git"].iter().map(|p| root.join(p)).collect();
    assert_eq!(found, expected);
    assert_eq!(found, protected::nested_git_dirs(root));
    assert!(cache.read > 0);
    cache.save();
    assert!(Path::new(&file).is_file());
}
