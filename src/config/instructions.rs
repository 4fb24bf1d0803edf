//! Project instructions: `~/.keel/AGENTS.md`, then every `AGENTS.md` from
//! the project root down to the working directory (a folder without one
//! falls back to `CLAUDE.md`), root first.
//!
//! A line that is only `@relative/path` imports that file in place (Claude
//! Code's convention, e.g. a `CLAUDE.md` holding `@AGENTS.md`); imports are
//! confined to the folder tree of the file that names them and nest at
//! most [`MAX_IMPORT_DEPTH`] deep. The total is capped at
//! [`MAX_INSTRUCTION_BYTES`], cutting the files nearest the root last.
//!
//! A cloned repository's files are read before it is trusted, so they are
//! untrusted input: a project file (or an import) that resolves, through
//! symlinks, outside the workspace is not read (it would put any file the
//! user can read into the prompt, past `read_file`'s workspace check); no
//! file is read past the cap (`AGENTS.md -> /dev/zero`); and one session
//! follows at most [`MAX_IMPORTS`] imports (thousands of `@` lines
//! importing each other would otherwise be read without end).
//!
//! Trusted or not, an import never brings in a file `read_file` would
//! refuse: a secret file (`policy::secrets::is_secret_file`, the check
//! `protect_secrets` makes: `@.env`, `@deploy/prod.pem`) or one outside the
//! confining folder; a project file is opened beneath the workspace without
//! following a symlink (`support::beneath`), so a link swapped in after the
//! check leads nowhere. A skipped import stays in the text as written and is
//! said in [`InstructionFile::skipped`] (the session's warnings).

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::policy::secrets::is_secret_file;

/// Upper bound on instruction text put into the context.
pub const MAX_INSTRUCTION_BYTES: usize = 64 * 1024;
/// How deep `@file` imports may nest.
const MAX_IMPORT_DEPTH: usize = 3;
/// How many `@file` imports one discovery follows in all.
pub const MAX_IMPORTS: usize = 64;

/// One instruction file and its text (imports expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    pub path: PathBuf,
    pub text: String,
    /// The imports of this file that were not read, and why (one warning
    /// line each).
    pub skipped: Vec<String>,
}

/// Where files may be read from, and the imports still allowed.
struct Reader {
    /// The canonical folder every file must resolve into (`None`: the
    /// user's own file, read wherever it points).
    confine: Option<PathBuf>,
    imports_left: usize,
    /// Imports skipped since the last file was finished.
    skipped: Vec<String>,
}

/// Where a session's instruction files are looked for (from `Settings`).
#[derive(Debug, Clone, Copy)]
pub struct InstructionPlaces<'a> {
    /// `~/.keel` (or `$KEEL_HOME`).
    pub keel_home: &'a Path,
    /// The user's home: `~/.claude/CLAUDE.md` and `@~/…` imports.
    pub home: &'a Path,
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`).
    pub codex_home: &'a Path,
    pub workspace_root: &'a Path,
    /// The user trusts the project (`keel trust`): its files may import
    /// `@~/…` and absolute paths.
    pub trusted: bool,
}

/// Finds and reads the instruction files for a session started in `cwd`.
pub fn discover_instructions(places: &InstructionPlaces<'_>, cwd: &Path) -> Vec<InstructionFile> {
    let workspace_root = places.workspace_root;
    let mut files = Vec::new();
    let mut reader = Reader { confine: None, imports_left: MAX_IMPORTS, skipped: Vec::new() };
    let user = places.keel_home.join("AGENTS.md");
    if let Some(file) = reader.instruction(&user) {
        files.push(file);
    }
    let Ok(root) = std::fs::canonicalize(workspace_root) else { return cap_total(files) };
    reader.confine = Some(root);
    let mut dirs: Vec<&Path> =
        cwd.ancestors().take_while(|dir| dir.starts_with(workspace_root)).collect();
    dirs.reverse();
    for dir in dirs {
        let found =
            ["AGENTS.md", "CLAUDE.md"].iter().find_map(|name| reader.instruction(&dir.join(name)));
        files.extend(found);
    }
    cap_total(files)
}

impl Reader {
    fn instruction(&mut self, path: &Path) -> Option<InstructionFile> {
        let text = self.read(path)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let text = self.expand_imports(&text, base, 0);
        let skipped = std::mem::take(&mut self.skipped);
        if text.trim().is_empty() {
            return None;
        }
        Some(InstructionFile { path: path.to_owned(), text, skipped })
    }

    /// The text of `path` when it resolves inside the confining folder, at
    /// most one byte past the cap (so [`cap_total`] still sees it is too
    /// long); `None` for a file that is missing, not UTF-8, or elsewhere.
    fn read(&self, path: &Path) -> Option<String> {
        let resolved = std::fs::canonicalize(path).ok()?;
        let file = match &self.confine {
            Some(root) if !resolved.starts_with(root) => return None,
            // The checked path, no link followed on the way to it.
            Some(root) => crate::support::beneath::open_beneath(root, &resolved).ok()?,
            None => std::fs::File::open(&resolved).ok()?,
        };
        let mut bytes = Vec::new();
        let limit = u64::try_from(MAX_INSTRUCTION_BYTES + 1).unwrap_or(u64::MAX);
        file.take(limit).read_to_end(&mut bytes).ok()?;
        match String::from_utf8(bytes) {
            Ok(text) => Some(text),
            // Cut inside a character at the limit: keep what is whole.
            Err(error) if error.utf8_error().error_len().is_none() => {
                let valid = error.utf8_error().valid_up_to();
                let mut bytes = error.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).ok()
            }
            Err(_) => None,
        }
    }

    fn expand_imports(&mut self, text: &str, base: &Path, depth: usize) -> String {
        let mut out = String::with_capacity(text.len());
        for line in text.split_inclusive('\n') {
            if out.len() > MAX_INSTRUCTION_BYTES {
                break;
            }
            let imported = line
                .trim()
                .strip_prefix('@')
                .filter(|rel| depth < MAX_IMPORT_DEPTH && !rel.is_empty() && !rel.contains(' '))
                .and_then(|rel| self.import(base, rel, depth));
            match imported {
                Some(text) => {
                    out.push_str(&text);
                    if !text.ends_with('\n') {
                        out.push('\n');
                    }
                }
                None => out.push_str(line),
            }
        }
        out
    }

    /// Reads `base/rel` if it stays inside `base` (no `..`, no absolute
    /// path) and imports are left.
    fn import(&mut self, base: &Path, rel: &str, depth: usize) -> Option<String> {
        let rel_path = Path::new(rel);
        let confined = rel_path.components().all(|part| {
            matches!(part, std::path::Component::Normal(_) | std::path::Component::CurDir)
        });
        if !confined {
            self.skipped.push(format!(
                "instruction import `@{rel}` in {} not read: imports stay inside the folder of \
                 the file naming them",
                base.display()
            ));
            return None;
        }
        if self.imports_left == 0 {
            return None;
        }
        self.imports_left -= 1;
        let path = base.join(rel_path);
        if let Some(why) = self.refused(&path) {
            self.skipped
                .push(format!("instruction import `@{rel}` in {} not read: {why}", base.display()));
            return None;
        }
        let text = self.read(&path)?;
        Some(self.expand_imports(&text, path.parent().unwrap_or(base), depth + 1))
    }
}

impl Reader {
    /// Why `read_file` would refuse the import at `path` (as named or where
    /// its links lead), if it would.
    fn refused(&self, path: &Path) -> Option<String> {
        let resolved = std::fs::canonicalize(path).ok();
        let secret = std::iter::once(path)
            .chain(resolved.as_deref())
            .find(|candidate| is_secret_file(&candidate.to_string_lossy()));
        if let Some(secret) = secret {
            return Some(format!(
                "{} looks like a secret file (keys, tokens, passwords), which read_file refuses",
                secret.display()
            ));
        }
        match (&self.confine, resolved) {
            (Some(root), Some(resolved)) if !resolved.starts_with(root) => Some(format!(
                "it leads outside the workspace (to {}), where read_file does not read",
                resolved.display()
            )),
            _ => None,
        }
    }
}

/// Keeps the total under the cap: the files closest to the working
/// directory are the most specific, so the root's are trimmed first.
fn cap_total(mut files: Vec<InstructionFile>) -> Vec<InstructionFile> {
    let mut budget = MAX_INSTRUCTION_BYTES;
    for file in files.iter_mut().rev() {
        if file.text.len() > budget {
            let mut cut = budget;
            while !file.text.is_char_boundary(cut) {
                cut -= 1;
            }
            file.text.truncate(cut);
            file.text.push_str("\n[… truncated: instruction files exceed 64 KiB]\n");
        }
        budget = budget.saturating_sub(file.text.len());
    }
    files.retain(|file| !file.text.trim().is_empty());
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The real AGENTS.md files, or `None` (the test is skipped) in a clone
    /// without the shared corpus: see `crate::shared_corpus`.
    fn corpus() -> Option<PathBuf> {
        crate::shared_corpus::locate("conformance/agents_md")
    }

    /// Discovery for a user whose home (and `~/.keel`, `~/.codex`) is
    /// `home`, in an untrusted project at `root`.
    fn discover(home: &Path, root: &Path, cwd: &Path) -> Vec<InstructionFile> {
        let keel_home = home.join(".keel");
        let codex_home = home.join(".codex");
        let places = InstructionPlaces {
            keel_home: &keel_home,
            home,
            codex_home: &codex_home,
            workspace_root: root,
            trusted: false,
        };
        discover_instructions(&places, cwd)
    }

    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }

    #[test]
    fn every_conformance_agents_md_is_picked_up_root_first_in_a_nested_layout() {
        let Some(corpus) = corpus() else { return };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let sources = [
            ("", "openai__codex/AGENTS.md"),
            ("a", "openai__openai-python/AGENTS.md"),
            ("a/b", "pydantic__pydantic-ai/AGENTS.md"),
            ("a/b/c", "vercel__ai/AGENTS.md"),
            ("a/b/c/d", "astral-sh__uv/AGENTS.md"),
            (
                "a/b/c/d/codex-rs/tui/src/bottom_pane",
                "openai__codex/codex-rs/tui/src/bottom_pane/AGENTS.md",
            ),
        ];
        for (sub, src) in sources {
            copy(&corpus.join(src), &root.join(sub).join("AGENTS.md"));
        }
        let cwd = root.join("a/b/c/d/codex-rs/tui/src/bottom_pane");
        let home = dir.path().join("home");
        let found = discover(&home, &root, &cwd);
        assert_eq!(found.len(), sources.len());
        for (file, (sub, src)) in found.iter().zip(sources) {
            assert_eq!(file.path, root.join(sub).join("AGENTS.md"));
            let original = std::fs::read_to_string(corpus.join(src)).unwrap();
            let head: String = original.chars().take(200).collect();
            assert!(file.text.starts_with(&head) || file.text.contains("truncated"), "{src}");
        }
        let total: usize = found.iter().map(|f| f.text.len()).sum();
        assert!(total <= MAX_INSTRUCTION_BYTES + 200);
    }

    #[test]
    fn claude_md_import_stub_brings_in_agents_md() {
        let Some(corpus) = corpus() else { return };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        copy(&corpus.join("astral-sh__uv/CLAUDE.md"), &root.join("sub/CLAUDE.md"));
        copy(&corpus.join("astral-sh__uv/AGENTS.md"), &root.join("sub/notes/AGENTS.md"));
        std::fs::write(root.join("sub/CLAUDE.md"), "@notes/AGENTS.md\n").unwrap();
        let found = discover(&dir.path().join("h"), &root, &root.join("sub"));
        assert_eq!(found.len(), 1);
        assert!(
            found[0].text.contains("ALWAYS") || found[0].text.contains("NEVER"),
            "{}",
            found[0].text
        );
    }

    #[test]
    fn an_import_of_a_secret_file_is_not_read_and_is_said() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("deploy")).unwrap();
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join(".env"), "OPENAI_API_KEY=sk-env\n").unwrap();
        std::fs::write(root.join("deploy/prod.pem"), "-----BEGIN PRIVATE KEY-----\n").unwrap();
        std::os::unix::fs::symlink(root.join(".env"), root.join("notes.md")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "be brief\n@.env\n@notes.md\n").unwrap();
        std::fs::write(root.join("sub/CLAUDE.md"), "@../deploy/prod.pem\n@prod.pem\n").unwrap();
        std::os::unix::fs::symlink(root.join("deploy/prod.pem"), root.join("sub/prod.pem"))
            .unwrap();
        let found = discover(&dir.path().join("h"), &root, &root.join("sub"));
        let text: String = found.iter().map(|file| file.text.as_str()).collect();
        assert!(text.contains("be brief"), "{text}");
        assert!(!text.contains("sk-env") && !text.contains("PRIVATE KEY"), "{text}");
        let skipped: Vec<&String> = found.iter().flat_map(|file| &file.skipped).collect();
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(skipped[0].contains("`@.env`") && skipped[0].contains("secret"), "{skipped:?}");
        assert!(skipped[1].contains("`@notes.md`"), "a link to .env is .env: {skipped:?}");
        assert!(skipped[2].contains("`@../deploy/prod.pem`"), "{skipped:?}");
        assert!(skipped[3].contains("`@prod.pem`") && skipped[3].contains("secret"));
    }

    #[test]
    fn agents_md_wins_over_claude_md_in_one_folder_and_imports_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(root.join("AGENTS.md"), "use tabs\n@../secret.txt\n").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "ignored\n").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "TOP SECRET").unwrap();
        let found = discover(&dir.path().join("h"), &root, &root);
        assert_eq!(found.len(), 1);
        assert!(found[0].text.contains("use tabs"));
        assert!(!found[0].text.contains("TOP SECRET"));
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_not_read_as_a_file_or_an_import() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(dir.path().join("secret.txt"), "TOP SECRET\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("notes.md")).unwrap();
        std::fs::write(root.join("inside.md"), "inside notes\n").unwrap();
        std::os::unix::fs::symlink(root.join("inside.md"), root.join("linked.md")).unwrap();
        std::fs::write(root.join("CLAUDE.md"), "use tabs\n@notes.md\n@linked.md\n").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("sub/AGENTS.md"))
            .unwrap();
        let found = discover(&dir.path().join("h"), &root, &root.join("sub"));
        let text: String = found.iter().map(|file| file.text.as_str()).collect();
        assert!(!text.contains("TOP SECRET"), "{text}");
        assert!(text.contains("use tabs") && text.contains("inside notes"), "{text}");
    }

    #[test]
    fn imports_importing_imports_stop_after_max_imports() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(&root).unwrap();
        for (file, next) in [("AGENTS.md", "a.md"), ("a.md", "b.md"), ("b.md", "c.md")] {
            std::fs::write(root.join(file), format!("@{next}\n").repeat(60)).unwrap();
        }
        std::fs::write(root.join("c.md"), "x\n").unwrap();
        let found = discover(&dir.path().join("h"), &root, &root);
        let read = found[0].text.lines().filter(|line| *line == "x").count();
        assert!(read <= MAX_IMPORTS, "{read} imports of c.md followed (60^3 asked for)");
    }
}
