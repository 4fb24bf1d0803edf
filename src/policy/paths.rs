//! Path facts the policy needs: where home, the workspace and the working
//! directory are, how a word from a command names a path, which paths are
//! protected (writes ask in every mode) and which are critical (destroying
//! them is refused in every mode).
//!
//! Pure: nothing here touches the filesystem. Symlinks are facts the caller
//! supplies ([`PathLinks`], gathered by `runtime::path_facts` before a call
//! runs); without them a path is judged lexically, and every check that
//! matters looks at both spellings, the lexical and the resolved one, so a
//! link can only make a path stricter to judge.

use std::path::{Component, Path, PathBuf};

use super::links::PathLinks;
use super::secret_places::SecretPlaces;

/// The places a decision depends on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PathContext {
    pub home: PathBuf,
    pub workspace_root: PathBuf,
    pub cwd: PathBuf,
    /// Symlinks on the way to the paths judged (empty: judge lexically).
    pub links: PathLinks,
    /// Where credentials live (`secret_places`): reading one asks.
    pub secrets: SecretPlaces,
}

/// Shell start-up files: writing one runs code in every later shell.
pub const RC_FILES: [&str; 17] = [
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_aliases",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".inputrc",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
];

/// An entry whose contents make keel or the user's tools run programs
/// later, outside any sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunsLater {
    pub name: &'static str,
    pub what: &'static str,
    /// A folder (everything inside counts), else a file.
    pub folder: bool,
}

const fn runs_later(name: &'static str, folder: bool, what: &'static str) -> RunsLater {
    RunsLater { name, what, folder }
}

/// What makes keel or the user's tools run programs later, wherever it
/// appears (a nested repository's too): a write to it asks in every mode,
/// and a command's jail keeps it read-only at each workspace root
/// (`sandbox::protected` reads this list). The one list of these names.
pub const RUNS_PROGRAMS: [RunsLater; 8] = [
    runs_later(".git", true, "git's folder (hooks and config run code)"),
    runs_later(".keel", true, "keel's project folder (rules, hooks, config)"),
    runs_later(
        ".claude",
        true,
        "Claude Code's folder (settings, hooks, agents and commands run code)",
    ),
    runs_later(".mcp.json", false, "the project's MCP servers (keel starts them, unconfined)"),
    runs_later(".vscode", true, "editor settings (tasks can run on folder open)"),
    runs_later(".idea", true, "JetBrains IDE settings (run configurations and tasks run programs)"),
    runs_later(".husky", true, "git hooks managed by husky"),
    runs_later(".envrc", false, "direnv runs it on entering the folder"),
];

/// Folders that hold credentials, wherever they appear, with what they are.
const SECRET_DIRS: [(&str, &str); 3] = [
    (".ssh", "ssh keys (secrets) and config"),
    (".gnupg", "gpg keys"),
    (".direnv", "direnv's folder"),
];

/// Every protected path in words, from the lists [`protection_of`] checks
/// (what a mode's explanation names, so it is never incomplete).
pub fn protected_paths_in_words() -> String {
    let runs_later = RUNS_PROGRAMS.iter().filter(|entry| entry.name != ".envrc").map(|entry| {
        if entry.folder { format!("`{}/`", entry.name) } else { format!("`{}`", entry.name) }
    });
    let secret = SECRET_DIRS.iter().map(|(dir, _)| format!("`{dir}/`"));
    let names: Vec<String> = runs_later.chain(secret).collect();
    format!(
        "{}, `.github/workflows/`, shell start-up files (`.bashrc`, `.zshrc`, …), `.envrc` and \
         `.env` files",
        names.join(", ")
    )
}

/// Why a write to a path needs a human, whatever the mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// One of [`RUNS_PROGRAMS`], or inside it.
    RunsPrograms(RunsLater),
    /// Inside one of [`SECRET_DIRS`].
    Folder(&'static str, &'static str),
    /// `.github/workflows/`: CI runs it with the repository's secrets.
    Workflows,
    /// A shell start-up file.
    StartupFile,
    /// `.env`, `.env.*`, `*.env`: environment files hold secrets.
    EnvFile,
}

impl Protection {
    /// What the path is, for reasons (`.git/ (git's folder …)`).
    pub fn describe(self) -> String {
        match self {
            Protection::RunsPrograms(RunsLater { name, what, folder: true }) => {
                format!("inside {name}/, {what}")
            }
            Protection::RunsPrograms(RunsLater { name, what, folder: false }) => {
                format!("{name}, {what}")
            }
            Protection::Folder(name, what) => format!("inside {name}/, {what}"),
            Protection::Workflows => "a CI workflow (.github/workflows/ runs in CI)".to_owned(),
            Protection::StartupFile => "a shell start-up file (runs in every new shell)".to_owned(),
            Protection::EnvFile => "an environment file (often holds secrets)".to_owned(),
        }
    }
}

/// Why destroying a path destroys too much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Critical {
    Root,
    SystemFolder,
    Home,
    Workspace,
    /// A folder that holds home or the workspace.
    Ancestor,
}

impl Critical {
    pub fn describe(self) -> &'static str {
        match self {
            Critical::Root => "the root folder",
            Critical::SystemFolder => "a system folder",
            Critical::Home => "the home folder",
            Critical::Workspace => "the workspace root",
            Critical::Ancestor => "a folder holding the home folder or the workspace",
        }
    }
}

/// Top-level system folders.
const SYSTEM: [&str; 16] = [
    "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/opt", "/proc", "/root",
    "/sbin", "/srv", "/sys", "/usr", "/var",
];

impl PathContext {
    pub fn new(
        home: impl Into<PathBuf>,
        workspace_root: impl Into<PathBuf>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        let home = home.into();
        Self {
            secrets: SecretPlaces::for_home(&home),
            home,
            workspace_root: workspace_root.into(),
            cwd: cwd.into(),
            links: PathLinks::default(),
        }
    }

    /// `word` with `~`, `$HOME` and `${HOME}` expanded, joined to the cwd
    /// (`..` kept).
    pub fn joined(&self, word: &str) -> PathBuf {
        self.joined_in(&self.cwd, word)
    }

    /// `word` expanded and joined to `base`.
    fn joined_in(&self, base: &Path, word: &str) -> PathBuf {
        let home = self.home.to_string_lossy();
        let expanded = if word == "~" || word == "$HOME" || word == "${HOME}" {
            home.to_string()
        } else if let Some(rest) =
            ["~/", "$HOME/", "${HOME}/"].iter().find_map(|prefix| word.strip_prefix(prefix))
        {
            format!("{home}/{rest}")
        } else {
            word.to_owned()
        };
        base.join(expanded)
    }

    /// A file tool's `path` as the tools read it first: from the workspace
    /// root (`tools::paths`; they fall back to the cwd's reading when only
    /// that names something, so policy judges both).
    pub fn resolve_from_root(&self, word: &str) -> PathBuf {
        normalize(&self.joined_in(&self.workspace_root, word))
    }

    /// Every place a file tool's `path` may lead: read from the workspace
    /// root and from the cwd, each lexically and through the known links.
    pub fn file_locations(&self, word: &str) -> Vec<PathBuf> {
        let mut out = Vec::with_capacity(2);
        let root_joined = self.joined_in(&self.workspace_root, word);
        out.push(normalize(&root_joined));
        if !self.links.is_empty() {
            out.push(self.links.apply(&root_joined));
        }
        out.extend(self.locations(word));
        let mut unique = Vec::with_capacity(out.len());
        for path in out {
            if !unique.contains(&path) {
                unique.push(path);
            }
        }
        unique
    }

    /// A word from a command (`~/x`, `$HOME/x`, `../x`, `/x`) as an
    /// absolute, lexically normalised path.
    pub fn resolve(&self, word: &str) -> PathBuf {
        normalize(&self.joined(word))
    }

    /// Where `word` really leads: the known symlinks on its way followed.
    pub fn resolve_physical(&self, word: &str) -> PathBuf {
        if self.links.is_empty() {
            return self.resolve(word);
        }
        self.links.apply(&self.joined(word))
    }

    /// The lexical path of `word`, and the resolved one when a link makes
    /// it differ: every check that protects looks at each.
    pub fn locations(&self, word: &str) -> Vec<PathBuf> {
        let lexical = self.resolve(word);
        if self.links.is_empty() {
            return vec![lexical];
        }
        let physical = self.links.apply(&self.joined(word));
        if physical == lexical { vec![lexical] } else { vec![lexical, physical] }
    }

    /// Like [`Self::file_locations`] for the directory entry itself: links
    /// followed on the way but not in the last component (deleting a
    /// symlink removes the link, not what it points to).
    pub fn entry_locations(&self, word: &str) -> Vec<PathBuf> {
        let trimmed = word.trim_end_matches('/');
        let (parent, name) = match trimmed.rsplit_once('/') {
            Some((parent, name)) => (if parent.is_empty() { "/" } else { parent }, name),
            None => (".", trimmed),
        };
        if name.is_empty() || name == "." || name == ".." {
            return self.file_locations(word);
        }
        let mut out: Vec<PathBuf> = Vec::new();
        for dir in self.file_locations(parent) {
            let entry = dir.join(name);
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
        out
    }

    /// The path relative to the workspace root (`/`-separated), or `None`
    /// when it lies outside.
    pub fn in_workspace(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.workspace_root).ok()?;
        Some(rel.to_string_lossy().replace('\\', "/"))
    }

    /// Whether a write to `path` needs a human, and why.
    pub fn protection(&self, path: &Path) -> Option<Protection> {
        protection_of(path)
    }

    /// Whether a write to `path` needs a human (see [`Self::protection`]).
    pub fn is_protected(&self, path: &Path) -> bool {
        self.protection(path).is_some()
    }

    /// The protection of `word` in either of its [`Self::locations`].
    pub fn word_protection(&self, word: &str) -> Option<(PathBuf, Protection)> {
        self.locations(word)
            .into_iter()
            .find_map(|path| self.protection(&path).map(|protection| (path, protection)))
    }

    /// Whether destroying `path` destroys the system, the home folder or
    /// the workspace: `/`, a top-level system folder, home or an ancestor
    /// of it, the workspace root or an ancestor of it.
    pub fn critical(&self, path: &Path) -> Option<Critical> {
        if path == Path::new("/") {
            Some(Critical::Root)
        } else if path == self.home {
            Some(Critical::Home)
        } else if path == self.workspace_root {
            Some(Critical::Workspace)
        } else if SYSTEM.iter().any(|dir| path == Path::new(dir)) {
            Some(Critical::SystemFolder)
        } else if self.home.starts_with(path) || self.workspace_root.starts_with(path) {
            Some(Critical::Ancestor)
        } else {
            None
        }
    }

    /// See [`Self::critical`].
    pub fn is_critical(&self, path: &Path) -> bool {
        self.critical(path).is_some()
    }

    /// Every critical path: what a glob is tested against.
    pub fn critical_paths(&self) -> Vec<PathBuf> {
        let mut paths: Vec<PathBuf> = SYSTEM.iter().map(PathBuf::from).collect();
        for anchor in [&self.home, &self.workspace_root] {
            paths.extend(anchor.ancestors().map(Path::to_path_buf));
        }
        paths.sort();
        paths.dedup();
        paths
    }
}

fn protection_of(path: &Path) -> Option<Protection> {
    let names: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => name.to_str(),
            Component::RootDir
            | Component::CurDir
            | Component::ParentDir
            | Component::Prefix(_) => None,
        })
        .collect();
    for (at, name) in names.iter().enumerate() {
        if let Some(entry) = RUNS_PROGRAMS.iter().find(|entry| entry.name == *name) {
            return Some(Protection::RunsPrograms(*entry));
        }
        if let Some((dir, what)) = SECRET_DIRS.iter().find(|(dir, _)| dir == name) {
            return Some(Protection::Folder(dir, what));
        }
        if *name == ".github" && names.get(at + 1) == Some(&"workflows") {
            return Some(Protection::Workflows);
        }
    }
    let last = names.last()?;
    if RC_FILES.contains(last) {
        return Some(Protection::StartupFile);
    }
    if *last == ".env" || last.starts_with(".env.") || last.ends_with(".env") {
        return Some(Protection::EnvFile);
    }
    None
}

/// Removes `.` and `..` without touching the filesystem; `..` never climbs
/// above the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PathContext {
        PathContext::new("/home/u", "/home/u/ws", "/home/u/ws/src")
    }

    #[test]
    fn resolves_home_and_parents() {
        assert_eq!(ctx().resolve("~/.ssh/id"), Path::new("/home/u/.ssh/id"));
        assert_eq!(ctx().resolve("$HOME"), Path::new("/home/u"));
        assert_eq!(ctx().resolve("../../../../x"), Path::new("/x"));
        assert_eq!(ctx().resolve("a/./b"), Path::new("/home/u/ws/src/a/b"));
    }

    #[test]
    fn critical_and_protected() {
        let c = ctx();
        assert!(c.is_critical(&c.resolve("..")));
        assert!(c.is_critical(&c.resolve("/")));
        assert!(!c.is_critical(&c.resolve("target")));
        for protected in [
            "../.git/hooks/pre-commit",
            "~/.bashrc",
            "vendor/lib/.git/config",
            "../.claude/settings.json",
            "../.vscode/tasks.json",
            "../.github/workflows/ci.yml",
            "../.envrc",
            "deploy/prod.env",
            "../.env.local",
            "../.keel/rules/x.rules",
            "../.mcp.json",
            "vendor/lib/.mcp.json",
            "../.claude/agents/reviewer.md",
            "../.husky/pre-commit",
        ] {
            assert!(c.is_protected(&c.resolve(protected)), "{protected}");
        }
        for open in ["main.rs", "../.github/ISSUE_TEMPLATE.md", "environment.rs", "../docs/env"] {
            assert!(!c.is_protected(&c.resolve(open)), "{open}");
        }
    }

    #[test]
    fn a_link_makes_a_word_protected_where_it_leads() {
        let mut c = ctx();
        c.links.insert("/home/u/ws/docs/notes.txt".into(), "/home/u/ws/.env".into());
        let (path, protection) = c.word_protection("../docs/notes.txt").unwrap();
        assert_eq!(
            (path.as_path(), protection),
            (Path::new("/home/u/ws/.env"), Protection::EnvFile)
        );
    }
}
