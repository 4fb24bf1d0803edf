//! `@path` imports in instruction files (Claude Code's convention), and
//! the reads behind them; [`super::instructions`] decides which files.
//!
//! A token is `@` at the start of a line or after whitespace or `(`,
//! running to whitespace, trailing `.,;:!?)"'` trimmed. It is an import only
//! when it names an existing file, so `@octocat` and `dev@example.com` stay
//! text, silently; tokens in a code span (`` `@x` ``) or a fenced block are
//! never imports. A line that is only the token is replaced by the file (a
//! `CLAUDE.md` holding `@AGENTS.md`); any other line (`See @README for…`,
//! `- @docs/git.md`) stays as written and each file follows it, fenced as
//! `<!-- @README -->` … `<!-- end of @README -->`. Imports nest at most
//! [`MAX_IMPORT_DEPTH`] hops (Claude Code's limit).
//!
//! Paths: relative ones resolve against the naming file's folder. In a
//! project file they stay in that folder's tree (no `..`) and inside the
//! workspace through every symlink, and the file is opened beneath the
//! workspace without following a link (`support::beneath`), so a link
//! swapped in after the check leads nowhere. `@~/…` and absolute paths are
//! read from the user's own files, and from a project's only once the user
//! trusts it (`keel trust`); what they import is then read as the user's.
//! Whoever names it, a secret file (`policy::secrets::is_secret_file`, as
//! named or where its links lead: `@.env`, `@~/.ssh/id_rsa`) is never read.
//! A refused import stays in the text and is said in the warnings the
//! caller takes with [`Reader::take_skipped`]; a missing one is not.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use super::instructions::{MAX_IMPORTS, MAX_INSTRUCTION_BYTES};
use crate::policy::secrets::is_secret_file;

/// How many hops `@file` imports may nest.
pub(super) const MAX_IMPORT_DEPTH: usize = 5;

/// Characters that end a sentence around a token, not part of its path.
const TRAILING_PUNCTUATION: &[char] = &['.', ',', ';', ':', '!', '?', ')', '"', '\''];

/// Whose file is being read, which decides where it may read from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scope<'a> {
    /// The user's own file: read wherever it points.
    User,
    /// A project's file: confined to the canonical workspace root.
    Project(&'a Path),
}

/// Reads instruction files and expands their imports, counting the
/// imports left and keeping the skipped ones until taken.
pub(super) struct Reader {
    home: PathBuf,
    trusted: bool,
    imports_left: usize,
    skipped: Vec<String>,
}

impl Reader {
    /// A reader for a user whose home is `home`, in a project `trusted` or not.
    pub(super) fn new(home: &Path, trusted: bool) -> Self {
        Reader { home: home.to_owned(), trusted, imports_left: MAX_IMPORTS, skipped: Vec::new() }
    }

    /// The warnings about imports not read since the last call.
    pub(super) fn take_skipped(&mut self) -> Vec<String> {
        std::mem::take(&mut self.skipped)
    }

    /// The text of `path` when it resolves inside `scope`, at most one
    /// byte past the cap (so the caller still sees it is too long); `None`
    /// for a file that is missing, not UTF-8, or elsewhere.
    pub(super) fn read(&self, path: &Path, scope: Scope<'_>) -> Option<String> {
        let resolved = std::fs::canonicalize(path).ok()?;
        let file = match scope {
            Scope::Project(root) if !resolved.starts_with(root) => return None,
            // The checked path, no link followed on the way to it.
            Scope::Project(root) => crate::support::beneath::open_beneath(root, &resolved).ok()?,
            Scope::User => std::fs::File::open(&resolved).ok()?,
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

    /// `text`, read from `file`, with its imports expanded.
    pub(super) fn expand(&mut self, text: &str, file: &Path, scope: Scope<'_>) -> String {
        self.expand_at(text, file, scope, 0)
    }

    fn expand_at(&mut self, text: &str, file: &Path, scope: Scope<'_>, depth: usize) -> String {
        let mut out = String::with_capacity(text.len());
        let mut fence = None;
        for line in text.split_inclusive('\n') {
            if out.len() > MAX_INSTRUCTION_BYTES {
                break;
            }
            let in_code = toggles_fence(line, &mut fence) || fence.is_some();
            let found =
                if in_code || depth >= MAX_IMPORT_DEPTH { Vec::new() } else { tokens(line) };
            let whole = line.trim();
            if let [token] = found[..]
                && whole.starts_with('@')
                && !whole.contains(char::is_whitespace)
            {
                let imported = self.import(file, token, scope, depth);
                push_line(&mut out, imported.as_deref().unwrap_or(line));
                continue;
            }
            push_line(&mut out, line);
            let mut done: Vec<&str> = Vec::new();
            for token in found {
                if done.contains(&token) {
                    continue;
                }
                done.push(token);
                if let Some(text) = self.import(file, token, scope, depth) {
                    push_line(&mut out, &format!("<!-- @{token} -->\n"));
                    push_line(&mut out, &text);
                    push_line(&mut out, &format!("<!-- end of @{token} -->\n"));
                }
            }
        }
        out
    }

    /// The text `token` (named in `file`) imports, expanded, if it names a
    /// file this scope may read and imports are left.
    fn import(
        &mut self,
        file: &Path,
        token: &str,
        scope: Scope<'_>,
        depth: usize,
    ) -> Option<String> {
        let base = file.parent().unwrap_or(Path::new("."));
        let (path, outside) = match token.strip_prefix("~/") {
            Some(rest) => (self.home.join(rest), true),
            None if Path::new(token).is_absolute() => (PathBuf::from(token), true),
            None => (base.join(token), false),
        };
        if !std::fs::metadata(&path).is_ok_and(|meta| meta.is_file()) {
            // A mention (`@octocat`), not a file: the text says it as is.
            return None;
        }
        let named = format!("instruction import `@{token}` in {} not read", file.display());
        let root = match scope {
            Scope::Project(root) => Some(root),
            Scope::User => None,
        };
        if outside && root.is_some() && !self.trusted {
            self.skipped.push(format!(
                "{named}: a project's files import from outside it only once the project is \
                 trusted; trust the project with `keel trust` to read it"
            ));
            return None;
        }
        if !outside && root.is_some() && !stays_below(token) {
            self.skipped
                .push(format!("{named}: imports stay inside the folder of the file naming them"));
            return None;
        }
        if self.imports_left == 0 {
            return None;
        }
        self.imports_left -= 1;
        let scope = if outside { Scope::User } else { scope };
        if let Some(why) = refused(&path, scope) {
            self.skipped.push(format!("{named}: {why}"));
            return None;
        }
        let text = self.read(&path, scope)?;
        Some(self.expand_at(&text, &path, scope, depth + 1))
    }
}

/// Why `read_file` would refuse the import at `path` (as named or where
/// its links lead), if it would.
fn refused(path: &Path, scope: Scope<'_>) -> Option<String> {
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
    match (scope, resolved) {
        (Scope::Project(root), Some(resolved)) if !resolved.starts_with(root) => Some(format!(
            "it leads outside the workspace (to {}), where read_file does not read",
            resolved.display()
        )),
        _ => None,
    }
}

/// Whether the relative path `rel` stays below its folder (no `..`).
fn stays_below(rel: &str) -> bool {
    Path::new(rel).components().all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
}

/// Appends `text`, ending it with a newline.
fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
}

/// Whether `line` opens or closes a fenced code block (```` ``` ```` or
/// `~~~`), updating `fence` (the open block's fence character).
fn toggles_fence(line: &str, fence: &mut Option<char>) -> bool {
    let start = line.trim_start();
    let marker = ['`', '~'].into_iter().find(|c| start.starts_with(&c.to_string().repeat(3)));
    match (*fence, marker) {
        (None, Some(c)) => *fence = Some(c),
        (Some(open), Some(c)) if open == c => *fence = None,
        _ => return false,
    }
    true
}

/// The `@` tokens of `line` outside code spans, without the `@` and the
/// punctuation after them.
fn tokens(line: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let mut at = 0;
    let mut before: Option<char> = None;
    while let Some(c) = line[at..].chars().next() {
        if c == '`' {
            let run = line[at..].len() - line[at..].trim_start_matches('`').len();
            at = closing_backticks(line, at + run, run).unwrap_or(at + run);
        } else if c == '@' && before.is_none_or(|b| b.is_whitespace() || b == '(') {
            let rest = &line[at + 1..];
            let len = rest.find(char::is_whitespace).unwrap_or(rest.len());
            let token = rest[..len].trim_end_matches(TRAILING_PUNCTUATION);
            if !token.is_empty() {
                found.push(token);
            }
            at += 1 + len;
        } else {
            at += c.len_utf8();
        }
        before = Some(c);
    }
    found
}

/// Where the code span opened by `run` backticks ends: just past the next
/// run of exactly as many at or after `from` (`None`: the span is not
/// closed on this line, so the backticks are text).
fn closing_backticks(line: &str, from: usize, run: usize) -> Option<usize> {
    let mut at = from;
    while let Some(offset) = line[at..].find('`') {
        let start = at + offset;
        let len = line[start..].len() - line[start..].trim_start_matches('`').len();
        if len == run {
            return Some(start + len);
        }
        at = start + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_at_words_outside_code_spans_without_trailing_punctuation() {
        let line = "See @README, (@docs/a.md) and @b.md. Mail dev@example.com; `@c` ``x @d`` @e!\n";
        assert_eq!(tokens(line), ["README", "docs/a.md", "b.md", "e"]);
        assert_eq!(tokens("an `unclosed @span\n"), ["span"]);
        assert_eq!(tokens("@ alone, @@twice\n"), ["@twice"]);
    }

    #[test]
    fn an_inline_import_follows_its_line_between_markers() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README"), "README BODY").unwrap();
        let file = dir.path().join("CLAUDE.md");
        let mut reader = Reader::new(dir.path(), false);
        let text = reader.expand("See @README now.\n@README\n", &file, Scope::User);
        assert_eq!(
            text,
            "See @README now.\n<!-- @README -->\nREADME BODY\n<!-- end of @README -->\n\
             README BODY\n"
        );
    }
}
