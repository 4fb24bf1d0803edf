//! Instruction files: the user's own, then the project's from its root down
//! to the working directory, in that order (the most specific last).
//!
//! The user's files, each that exists: `~/.keel/AGENTS.md`, Claude Code's
//! user memory `~/.claude/CLAUDE.md`, Codex's `AGENTS.override.md` else
//! `AGENTS.md` in its home (`$CODEX_HOME`, else `~/.codex`). Then in each
//! folder from the workspace root to the working directory the first of
//! `AGENTS.override.md` (Codex: it replaces the folder's `AGENTS.md`),
//! `AGENTS.md`, `CLAUDE.md`, and after it Claude Code's personal
//! `CLAUDE.local.md`. A file that resolves to one already read (a
//! `CLAUDE.md -> AGENTS.md` link, `~/.claude/CLAUDE.md -> ~/.keel/AGENTS.md`)
//! is not read twice, and ends its folder's choice as the file would. The
//! total is capped at [`MAX_INSTRUCTION_BYTES`], cutting the files nearest
//! the root first. [`InstructionFile::source`] says what each file is (for
//! `keel doctor`).
//!
//! `@path` imports are expanded by [`super::instruction_imports`] (its doc
//! has the forms and the rules). A cloned repository's files are read before
//! it is trusted, so they are untrusted input: a project file that resolves,
//! through symlinks, outside the workspace is not read (it would put any
//! file the user can read into the prompt, past `read_file`'s workspace
//! check), and is opened beneath the workspace without following a link; no
//! file is read past the cap (`AGENTS.md -> /dev/zero`); and one session
//! follows at most [`MAX_IMPORTS`] imports (thousands of `@` lines
//! importing each other would otherwise be read without end). The user's
//! own files are read wherever they point.

use std::path::{Path, PathBuf};

use super::instruction_imports::{Reader, Scope};

/// Upper bound on instruction text put into the context.
pub const MAX_INSTRUCTION_BYTES: usize = 64 * 1024;
/// How many `@file` imports one discovery follows in all.
pub const MAX_IMPORTS: usize = 64;

/// One instruction file and its text (imports expanded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    pub path: PathBuf,
    pub source: InstructionSource,
    pub text: String,
    /// The imports of this file that were not read, and why (one warning
    /// line each).
    pub skipped: Vec<String>,
}

/// What kind of instruction file one is, by where it was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstructionSource {
    /// `~/.keel/AGENTS.md`.
    KeelUser,
    /// `~/.claude/CLAUDE.md`.
    ClaudeUser,
    /// `AGENTS.override.md` or `AGENTS.md` in Codex's home.
    CodexUser,
    /// A folder's `AGENTS.override.md`, `AGENTS.md` or `CLAUDE.md`.
    Project,
    /// A folder's `CLAUDE.local.md`.
    ClaudeLocal,
}

impl InstructionSource {
    /// The kind in a few words, for `keel doctor`.
    pub fn label(self) -> &'static str {
        match self {
            InstructionSource::KeelUser => "keel user instructions",
            InstructionSource::ClaudeUser => "Claude Code user memory",
            InstructionSource::CodexUser => "Codex user instructions",
            InstructionSource::Project => "project instructions",
            InstructionSource::ClaudeLocal => "Claude personal project file",
        }
    }
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
    /// Read Claude Code's and Codex's own files too (`import_setup`, on
    /// unless the user turns it off): `~/.claude/CLAUDE.md`, Codex's
    /// `AGENTS.md`, `AGENTS.override.md`, `CLAUDE.local.md`.
    pub import: bool,
}

/// Finds and reads the instruction files for a session started in `cwd`.
pub fn discover_instructions(places: &InstructionPlaces<'_>, cwd: &Path) -> Vec<InstructionFile> {
    let reader = Reader::new(places.home, places.trusted);
    let mut found = Found { reader, files: Vec::new(), seen: Vec::new() };
    let codex = places.codex_home;
    found.first_of(&[places.keel_home.join("AGENTS.md")], Scope::User, InstructionSource::KeelUser);
    if places.import {
        let claude = places.home.join(".claude/CLAUDE.md");
        found.first_of(&[claude], Scope::User, InstructionSource::ClaudeUser);
        let codex_files = [codex.join("AGENTS.override.md"), codex.join("AGENTS.md")];
        found.first_of(&codex_files, Scope::User, InstructionSource::CodexUser);
    }
    let workspace_root = places.workspace_root;
    let Ok(root) = std::fs::canonicalize(workspace_root) else { return cap_total(found.files) };
    let scope = Scope::Project(&root);
    let mut dirs: Vec<&Path> =
        cwd.ancestors().take_while(|dir| dir.starts_with(workspace_root)).collect();
    dirs.reverse();
    let names: &[&str] = if places.import {
        &["AGENTS.override.md", "AGENTS.md", "CLAUDE.md"]
    } else {
        &["AGENTS.md", "CLAUDE.md"]
    };
    for dir in dirs {
        let paths: Vec<PathBuf> = names.iter().map(|name| dir.join(name)).collect();
        found.first_of(&paths, scope, InstructionSource::Project);
        if places.import {
            found.first_of(&[dir.join("CLAUDE.local.md")], scope, InstructionSource::ClaudeLocal);
        }
    }
    cap_total(found.files)
}

/// The files read so far, and where they resolved.
struct Found {
    reader: Reader,
    files: Vec<InstructionFile>,
    /// Canonical paths of the files read, so a link to one is not read again.
    seen: Vec<PathBuf>,
}

impl Found {
    /// Reads the first of `paths` that exists with some text; one that
    /// resolves to a file already read ends the search without a read.
    fn first_of(&mut self, paths: &[PathBuf], scope: Scope<'_>, source: InstructionSource) {
        for path in paths {
            let Ok(resolved) = std::fs::canonicalize(path) else { continue };
            if self.seen.contains(&resolved) {
                return;
            }
            let Some(text) = self.reader.read(path, scope) else { continue };
            let text = self.reader.expand(&text, path, scope);
            let skipped = self.reader.take_skipped();
            if text.trim().is_empty() {
                continue;
            }
            self.seen.push(resolved);
            self.files.push(InstructionFile { path: path.clone(), source, text, skipped });
            return;
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
#[path = "instructions_tests.rs"]
mod tests;
