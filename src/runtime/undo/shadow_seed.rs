//! Setting up a workspace's shadow repository so the first checkpoint
//! costs what is uncommitted, not what exists: the shadow borrows the
//! project's object store (`objects/info/alternates`) and starts from a
//! copy of the project's index, whose stat data tells git which files are
//! unchanged without reading them.
//!
//! Invariants: the project's repository is only read (its index is copied
//! bounded, regular files only, never through a symlink; git never writes
//! into an alternate); a seeded index holds no entry git would trust
//! without looking (assume-unchanged and skip-worktree bits are cleared,
//! else a restore could write stale content over a file); a project whose
//! attributes name a filter (LFS and the like: its index holds pointers,
//! not what is on disk, and keel's git runs no filter) is not seeded; any
//! failure leaves an unseeded shadow, which is correct, only slower.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::checkpoint::{CheckpointError, ShadowRepo, chunked};
use crate::runtime::files::git_dir;

/// Bytes of a project index keel copies at most.
const MAX_INDEX_BYTES: u64 = 1024 * 1024 * 1024;
/// Bytes read from one `.gitattributes` when looking for filters.
const MAX_ATTRIBUTES_BYTES: u64 = 1024 * 1024;

/// The project's own repository, as far as the shadow borrows from it.
#[derive(Debug, Clone)]
pub(in crate::runtime) struct ProjectGit {
    /// Its git dir (a linked worktree's own one).
    pub git_dir: PathBuf,
    /// The object store, shared by all its worktrees.
    pub objects: PathBuf,
}

impl ProjectGit {
    /// The repository whose work tree is `root`, if it has an object store.
    pub fn find(root: &Path) -> Option<Self> {
        let git_dir = git_dir(root)?;
        let common = match read_small(&git_dir.join("commondir")) {
            Some(text) => git_dir.join(text.trim()),
            None => git_dir.clone(),
        };
        let objects = common.join("objects");
        // An alternates line cannot hold a newline; a relative one would be
        // read from the shadow's own folder.
        let usable = objects.is_absolute()
            && !objects.as_os_str().as_encoded_bytes().contains(&b'\n')
            && std::fs::metadata(&objects).is_ok_and(|meta| meta.is_dir());
        usable.then_some(Self { git_dir, objects })
    }

    /// How many entries the project's index has (its header), if readable.
    pub fn tracked_files(&self) -> Option<u32> {
        let mut header = [0u8; 12];
        let file = open_regular(&self.git_dir.join("index"))?;
        file.take(12).read_exact(&mut header).ok()?;
        if &header[..4] != b"DIRC" {
            return None;
        }
        Some(u32::from_be_bytes([header[8], header[9], header[10], header[11]]))
    }
}

impl ShadowRepo {
    /// Creates the shadow repository if needed: no template (so no hooks),
    /// the project's objects as an alternate, its index as the start.
    pub(in crate::runtime) async fn prepare(&self) -> Result<(), CheckpointError> {
        if !self.git_dir.join("HEAD").is_file() {
            private_dirs(&self.git_dir).map_err(|source| CheckpointError::CreateDir {
                path: self.git_dir.clone(),
                source,
            })?;
            self.git(&["init", "-q", "--template="]).await?;
        }
        let Some(project) = &self.project else { return Ok(()) };
        self.link_objects(project)?;
        if !self.index_path().exists() && !self.seed_index(project).await {
            // A half-made copy must not be taken for the real thing.
            let _ = std::fs::remove_file(self.index_path());
        }
        Ok(())
    }

    /// Points the shadow at the project's object store (rewritten when the
    /// project moved it, e.g. a worktree of another clone).
    fn link_objects(&self, project: &ProjectGit) -> Result<(), CheckpointError> {
        let info = self.git_dir.join("objects/info");
        let file = info.join("alternates");
        let line = format!("{}\n", project.objects.display());
        if std::fs::read_to_string(&file).is_ok_and(|text| text == line) {
            return Ok(());
        }
        private_dirs(&info)
            .and_then(|()| crate::support::private_dir::write_private(&file, line.as_bytes()))
            .map_err(|source| CheckpointError::CreateDir { path: file, source })
    }

    /// Copies the project's index in and makes it safe to trust; false
    /// when it cannot be used (the shadow then starts empty).
    async fn seed_index(&self, project: &ProjectGit) -> bool {
        let Some(mut source) = open_regular(&project.git_dir.join("index")) else { return false };
        let modified = source.metadata().and_then(|meta| meta.modified());
        let mut bytes = Vec::new();
        if (&mut source).take(MAX_INDEX_BYTES).read_to_end(&mut bytes).is_err() {
            return false;
        }
        // The copy keeps the original's time: git compares file times with
        // it to catch changes made in the same second as the index.
        let copied = crate::support::private_dir::write_private(&self.index_path(), &bytes)
            .and_then(|()| {
                std::fs::File::options()
                    .write(true)
                    .open(self.index_path())?
                    .set_modified(modified?)
            });
        if copied.is_err() {
            return false;
        }
        // git reads the copy (a split index, whose shared part stays
        // behind, fails here and the shadow starts unseeded).
        let Ok(facts) = self.facts_from_git().await else { return false };
        let filters = facts.attributes.iter().map(|path| self.work_tree.join(path));
        if filters
            .chain([project.git_dir.join("info/attributes")])
            .any(|path| mentions_filter(&path))
        {
            return false;
        }
        self.clear_trust_bits(&facts.trusted_without_looking).await.is_ok()
    }

    /// What the copied index says, read by git itself (`ls-files -v`:
    /// about 30 ms for 58 000 entries, once per workspace).
    async fn facts_from_git(&self) -> Result<IndexFacts, CheckpointError> {
        let listed = self.git(&["ls-files", "-z", "-v"]).await?;
        let mut facts = IndexFacts::default();
        for line in listed.split('\0') {
            let Some((tag, path)) = line.split_once(' ') else { continue };
            if tag.chars().any(|c| c.is_ascii_lowercase()) || tag == "S" {
                facts.trusted_without_looking.push(path.to_owned());
            }
            if path == ".gitattributes" || path.ends_with("/.gitattributes") {
                facts.attributes.push(path.to_owned());
            }
        }
        Ok(facts)
    }

    /// Clears assume-unchanged and skip-worktree bits on `paths`, and
    /// rewrites the index as version 4 (paths prefix-compressed: about
    /// half the size) with git's untracked cache.
    async fn clear_trust_bits(&self, paths: &[String]) -> Result<(), CheckpointError> {
        let rewrite = ["update-index", "--index-version", "4", "--untracked-cache"];
        let chunks = chunked(paths);
        if chunks.is_empty() {
            return self.git(&rewrite).await.map(drop);
        }
        for (n, chunk) in chunks.into_iter().enumerate() {
            let mut args: Vec<&str> = if n == 0 { rewrite.to_vec() } else { vec!["update-index"] };
            args.extend(["--no-assume-unchanged", "--no-skip-worktree", "--"]);
            args.extend(chunk);
            self.git(&args).await?;
        }
        Ok(())
    }
}

/// What a project's index says, as far as seeding the shadow goes.
#[derive(Debug, Default, PartialEq, Eq)]
struct IndexFacts {
    /// Paths with assume-unchanged or skip-worktree set.
    trusted_without_looking: Vec<String>,
    /// Tracked `.gitattributes` files (they may name filters).
    attributes: Vec<String>,
}

/// A regular file opened for reading without following a symlink or
/// blocking on a FIFO.
pub(in crate::runtime) fn open_regular(path: &Path) -> Option<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let file = std::fs::File::from(rustix::fs::open(path, flags, Mode::empty()).ok()?);
    file.metadata().ok()?.is_file().then_some(file)
}

fn read_small(path: &Path) -> Option<String> {
    let mut text = String::new();
    open_regular(path)?.take(4096).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Whether an attributes file assigns a filter driver (`filter=NAME`).
fn mentions_filter(path: &Path) -> bool {
    let Some(file) = open_regular(path) else { return false };
    let mut text = Vec::new();
    if file.take(MAX_ATTRIBUTES_BYTES).read_to_end(&mut text).is_err() {
        return true;
    }
    String::from_utf8_lossy(&text)
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .any(|line| line.split_whitespace().skip(1).any(|attr| attr.starts_with("filter=")))
}

/// `path` and its missing parents, created 0700 (below KEEL_HOME).
fn private_dirs(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_found_in_attributes_lines_not_comments() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".gitattributes");
        std::fs::write(&file, "# *.bin filter=lfs\n*.rs text eol=lf\n").unwrap();
        assert!(!mentions_filter(&file));
        std::fs::write(&file, "*.psd filter=lfs diff=lfs merge=lfs -text\n").unwrap();
        assert!(mentions_filter(&file));
    }

    #[test]
    fn the_index_header_counts_tracked_files() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let status =
                std::process::Command::new("git").args(args).current_dir(dir.path()).status();
            assert!(status.unwrap().success());
        };
        git(&["init", "-q"]);
        std::fs::write(dir.path().join("a"), "a").unwrap();
        std::fs::write(dir.path().join("b"), "b").unwrap();
        git(&["add", "a", "b"]);
        let project = ProjectGit::find(dir.path()).unwrap();
        assert_eq!(project.tracked_files(), Some(2));
        assert!(project.objects.ends_with(".git/objects"));
    }
}
