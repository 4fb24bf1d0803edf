//! Custom commands: saved prompts run as `/name args` (in the TUI and in
//! `keel exec "/name args"`), in the formats users already have: Claude
//! Code's `.claude/commands/*.md` and Codex's `~/.codex/prompts/*.md`.
//! Front matter (optional): `description`, `argument-hint`, `model`,
//! `allowed-tools`; the body is the prompt, with `$ARGUMENTS` and `$1`…`$9`
//! replaced by the words typed after the name ([`expand`]). `allowed-tools`
//! is read as Claude Code reads it: what the command's turn may run
//! without asking (`Bash(git add:*)`, `Bash(git status)`, `mcp__docs`:
//! `claude_permissions::preapprovals`), never a list of the only tools it
//! may use.
//!
//! Roots, lowest precedence first (a later file replaces an earlier
//! command of the same name): `~/.codex/prompts`, `~/.claude/commands`,
//! `$KEEL_HOME/commands`, then the project's `.claude/commands` and
//! `.keel/commands`, which load only once the project is trusted (listed
//! as skipped before). Subfolders group commands as in Claude Code; the
//! name is the file's stem, and `folder:stem` (Claude Code's namespaced
//! `/tools:scaffold`) names it too. keel's own slash commands (`/help`, `/mode`, …)
//! cannot be replaced; a command replaces a skill of the same name.
//!
//! Invariants: a broken file is reported by path and never stops the
//! others; expansion is pure and never panics on any input; a file's
//! `` !`cmd` `` lines are only found here ([`shell_lines`]): the session
//! runs them as the user's `!cmd`, through policy and the sandbox
//! (`runtime/custom_commands.rs`), never outside them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::agents::skipped_warning;
use super::claude_permissions::{Preapprovals, preapprovals};
use super::markdown_file::{
    DefinitionError, DefinitionProblem, MarkdownFile, markdown_files, valid_name,
};

/// keel's own slash commands (the TUI's), which a file cannot replace.
pub const RESERVED_COMMANDS: [&str; 13] = [
    "help", "mode", "plan", "compact", "tasks", "diff", "undo", "resume", "skills", "mcp", "model",
    "quit", "exit",
];

/// Longest description taken from a body's first line.
const DESCRIPTION_FROM_BODY_CHARS: usize = 80;

/// One saved prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomCommand {
    pub name: String,
    /// Its subfolders below the root, joined with `:` (`tools` for
    /// `commands/tools/scaffold.md`): Claude Code's `/tools:scaffold`.
    pub namespace: Option<String>,
    pub description: String,
    /// How the arguments are written (`[file] [focus]`), for the popup.
    pub argument_hint: Option<String>,
    /// The model its turn runs on (the session's otherwise).
    pub model: Option<String>,
    /// What its turn may run without asking (`allowed-tools`); every
    /// other call is judged as usual.
    pub preapprovals: Preapprovals,
    pub body: String,
    pub path: PathBuf,
    /// From a project folder (trusted), not the user's own: its
    /// `` !`cmd` `` lines run only where policy allows them outright.
    pub project: bool,
}

/// Every command found, and what was not loaded.
#[derive(Debug, Clone, Default)]
pub struct CommandCatalog {
    /// Sorted by name.
    pub commands: Vec<CustomCommand>,
    pub problems: Vec<DefinitionProblem>,
    /// Project files not read because the project is not trusted.
    pub skipped: Vec<PathBuf>,
}

impl CommandCatalog {
    /// The command `/name` runs; Codex's `prompts:name` spelling and
    /// Claude Code's namespaced `folder:name` (`tools:scaffold`) work too.
    pub fn find(&self, name: &str) -> Option<&CustomCommand> {
        let name = name.strip_prefix("prompts:").unwrap_or(name);
        if let Some(command) = self.commands.iter().find(|command| command.name == name) {
            return Some(command);
        }
        let (namespace, stem) = name.rsplit_once(':')?;
        self.commands
            .iter()
            .find(|command| command.name == stem && command.namespace.as_deref() == Some(namespace))
    }

    /// What the session should tell the user about loading.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings: Vec<String> = self
            .problems
            .iter()
            .map(|p| format!("command {} not loaded: {}", p.path.display(), p.error))
            .collect();
        if !self.skipped.is_empty() {
            warnings.push(skipped_warning("command", &self.skipped));
        }
        warnings
    }
}

/// Where commands are looked for, lowest precedence first; the flag says
/// whether the folder belongs to the project (needs trust).
pub fn command_roots(home: &Path, keel_home: &Path, workspace_root: &Path) -> Vec<(PathBuf, bool)> {
    vec![
        (home.join(".codex").join("prompts"), false),
        (home.join(".claude").join("commands"), false),
        (keel_home.join("commands"), false),
        (workspace_root.join(".claude").join("commands"), true),
        (workspace_root.join(".keel").join("commands"), true),
    ]
}

/// Loads every root's `*.md` (two levels of subfolders); project roots
/// only when trusted.
pub fn discover_commands(roots: &[(PathBuf, bool)], project_trusted: bool) -> CommandCatalog {
    let mut by_name: BTreeMap<String, CustomCommand> = BTreeMap::new();
    let mut catalog = CommandCatalog::default();
    for (root, project) in roots {
        let files = markdown_files(root, 2);
        if *project && !project_trusted {
            catalog.skipped.extend(files);
            continue;
        }
        for path in files {
            match load(root, &path, *project) {
                Ok(command) => {
                    by_name.insert(command.name.clone(), command);
                }
                Err(error) => catalog.problems.push(DefinitionProblem { path, error }),
            }
        }
    }
    catalog.commands = by_name.into_values().collect();
    catalog
}

pub(super) fn load(
    root: &Path,
    path: &Path,
    project: bool,
) -> Result<CustomCommand, DefinitionError> {
    let name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    if !valid_name(&name) {
        return Err(DefinitionError::BadName { name });
    }
    if RESERVED_COMMANDS.contains(&name.as_str()) {
        return Err(DefinitionError::Reserved { name });
    }
    let file = MarkdownFile::read(path)?;
    let description = file.text("description").unwrap_or_else(|| first_line(&file.body));
    let preapprovals = file.list("allowed-tools").map(|items| preapprovals(&items));
    Ok(CustomCommand {
        name,
        namespace: namespace_of(root, path),
        description,
        argument_hint: file.text("argument-hint"),
        model: file.model()?,
        preapprovals: preapprovals.unwrap_or_default(),
        body: file.body.trim().to_owned(),
        path: path.to_owned(),
        project,
    })
}

/// The subfolders between `root` and the file `path`, joined with `:`.
fn namespace_of(root: &Path, path: &Path) -> Option<String> {
    let folder = path.parent()?.strip_prefix(root).ok()?;
    let parts: Vec<String> =
        folder.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
    (!parts.is_empty()).then(|| parts.join(":"))
}

/// A body's first non-empty line, shortened, as its description.
fn first_line(body: &str) -> String {
    let line = body.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("");
    let line = line.trim_start_matches('#').trim();
    let mut text: String = line.chars().take(DESCRIPTION_FROM_BODY_CHARS).collect();
    if line.chars().count() > DESCRIPTION_FROM_BODY_CHARS {
        text.push('…');
    }
    text
}

/// The prompt `body` becomes with `args` (what was typed after the name),
/// as Claude Code expands a command: `$ARGUMENTS` is all of it (anywhere,
/// so `` !`cat $ARGUMENTS` `` works), `$ARGUMENTS[0]`… its words from 0;
/// `$1`…`$9` its words (quotes group words, as in a shell) in the body's
/// prose only, and `$$` a dollar sign there. What is not a position stays
/// as written: a `$N` in a code block or a code span (shell scripts,
/// regex replacements, SQL placeholders, `awk '{print $1}'`), one that
/// runs on into a number (`$5.0M`, `$150/hour`, `$1,000`) or a word, and
/// one past the words typed (`$5 off` with one word). The user's words
/// always reach the model: unless `$ARGUMENTS` took them all or the
/// positions placed every word, they are appended as `ARGUMENTS: …`, as
/// Claude Code does for a body that names none.
pub fn expand(body: &str, args: &str) -> Result<String, ExpansionTooLarge> {
    let args = args.trim();
    let words =
        shlex::split(args).unwrap_or_else(|| args.split_whitespace().map(str::to_owned).collect());
    let mut expander = Expander {
        out: Expansion::with_capacity(body.len() + args.len()),
        args,
        words: &words,
        whole: false,
        placed: 0,
    };
    for (piece, kind) in segments(body) {
        expander.piece(piece, kind != Piece::Text)?;
    }
    let Expander { mut out, whole, placed, .. } = expander;
    if !whole && placed < words.len() && !args.is_empty() {
        out.push("\n\nARGUMENTS: ")?;
        out.push(args)?;
    }
    Ok(out.text)
}

/// The substitution state of one expansion.
struct Expander<'a> {
    out: Expansion,
    args: &'a str,
    words: &'a [String],
    /// `$ARGUMENTS` was used: every word reached the prompt.
    whole: bool,
    /// The highest position used (`$3`: 3).
    placed: usize,
}

impl Expander<'_> {
    /// Substitutes one piece of the body; `code`: inside a code block or
    /// span, where only `$ARGUMENTS` forms are expanded.
    fn piece(&mut self, text: &str, code: bool) -> Result<(), ExpansionTooLarge> {
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            self.out.push(&rest[..at])?;
            let after = &rest[at + 1..];
            rest = match self.token(after, code) {
                Some((replacement, tail)) => {
                    self.out.push(&replacement)?;
                    tail
                }
                None => {
                    self.out.push("$")?;
                    after
                }
            };
        }
        self.out.push(rest)
    }

    /// What the `$` before `after` stands for, and the text after it;
    /// `None`: a plain dollar sign.
    fn token<'t>(&mut self, after: &'t str, code: bool) -> Option<(String, &'t str)> {
        if let Some(tail) = after.strip_prefix("ARGUMENTS") {
            if let Some((index, tail)) = bracketed_index(tail) {
                self.placed = self.placed.max(index + 1);
                return Some((self.words.get(index).cloned().unwrap_or_default(), tail));
            }
            self.whole = true;
            return Some((self.args.to_owned(), tail));
        }
        if code {
            return None;
        }
        if let Some(tail) = after.strip_prefix('$') {
            return Some(("$".to_owned(), tail));
        }
        let digit = after.chars().next()?.to_digit(10).filter(|d| *d > 0)? as usize;
        let tail = &after[1..];
        if runs_on(tail) {
            return None;
        }
        let word = self.words.get(digit - 1)?;
        self.placed = self.placed.max(digit);
        Some((word.clone(), tail))
    }
}

/// `[N]` at the start of `text` (`$ARGUMENTS[N]`), and what follows.
fn bracketed_index(text: &str) -> Option<(usize, &str)> {
    let inner = text.strip_prefix('[')?;
    let end = inner.find(']')?;
    let index = inner[..end].parse().ok()?;
    Some((index, &inner[end + 1..]))
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether a `$N` followed by `tail` is part of something else: a longer
/// number (`$150`, `$5.0M`, `$1,000`) or a word (`$1st`).
fn runs_on(tail: &str) -> bool {
    let mut chars = tail.chars();
    match chars.next() {
        Some(c) if is_word_char(c) => true,
        Some('.' | ',') => chars.next().is_some_and(|c| c.is_ascii_digit()),
        _ => false,
    }
}

/// What a piece of a body is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Text,
    /// A code span (its backticks included).
    Span,
    /// A line of a fenced block (its fences included).
    Fence,
}

/// Claude Code's `` !`cmd` `` in `text` (outside fenced blocks): where each
/// is (the `!` to the closing backtick) and its command.
pub fn shell_lines(text: &str) -> Vec<(std::ops::Range<usize>, String)> {
    let mut found = Vec::new();
    let mut at = 0;
    let mut bang = false;
    for (piece, kind) in segments(text) {
        if kind == Piece::Span && bang {
            let command = piece.trim_matches('`').trim();
            if !command.is_empty() {
                found.push((at - 1..at + piece.len(), command.to_owned()));
            }
        }
        bang = kind == Piece::Text && piece.ends_with('!');
        at += piece.len();
    }
    found
}

/// Claude Code's `@path` file references in `text`'s prose (not in code):
/// an `@` at the start or after a space or `(`, then a path with a `.` or
/// a `/` in it (`@src/lib.rs`, `@notes.md`; not `@user`, not a mail
/// address), trailing punctuation left out; each once, in order.
pub fn file_mentions(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for (piece, kind) in segments(text) {
        if kind != Piece::Text {
            continue;
        }
        let mut previous = ' ';
        for (at, c) in piece.char_indices() {
            if c == '@' && (previous.is_whitespace() || previous == '(') {
                let rest = &piece[at + 1..];
                let end = rest.find(|c: char| c.is_whitespace() || "()[]<>,;\"'`".contains(c));
                let path = rest[..end.unwrap_or(rest.len())].trim_end_matches(['.', ':', '!', '?']);
                let pathlike = path.contains(['.', '/']) && !path.contains("://");
                if pathlike && !path.starts_with('@') && !found.iter().any(|p| p == path) {
                    found.push(path.to_owned());
                }
            }
            previous = c;
        }
    }
    found
}

/// The body cut into pieces, each marked whether it is code: a fenced
/// block (between lines opening with ```` ``` ```` or `~~~`, the fences
/// included) or a span between equal runs of backticks on one line.
fn segments(body: &str) -> Vec<(&str, Piece)> {
    let mut pieces = Vec::new();
    let mut fence: Option<&str> = None;
    for line in body.split_inclusive('\n') {
        let marker = fence_marker(line);
        match (fence, marker) {
            (Some(open), Some(close)) if close.starts_with(open) => {
                fence = None;
                pieces.push((line, Piece::Fence));
            }
            (Some(_), _) => pieces.push((line, Piece::Fence)),
            (None, Some(open)) => {
                fence = Some(open);
                pieces.push((line, Piece::Fence));
            }
            (None, None) => spans(line, &mut pieces),
        }
    }
    pieces
}

/// The run of backticks or tildes a fence line opens with (up to three
/// spaces of indent), if it is one.
fn fence_marker(line: &str) -> Option<&str> {
    let trimmed = line.trim_start_matches(' ');
    if line.len() - trimmed.len() > 3 {
        return None;
    }
    let mark = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let run = trimmed.len() - trimmed.trim_start_matches(mark).len();
    (run >= 3).then(|| &trimmed[..run])
}

/// `line` cut at its code spans (a run of backticks to the next run of
/// the same length; an unclosed run is text).
fn spans<'a>(line: &'a str, pieces: &mut Vec<(&'a str, Piece)>) {
    let mut start = 0;
    let mut at = 0;
    while let Some(found) = line[at..].find('`') {
        let open = at + found;
        let run = line[open..].len() - line[open..].trim_start_matches('`').len();
        let Some(close) = closing_run(&line[open + run..], run) else {
            at = open + run;
            continue;
        };
        let end = open + run + close + run;
        pieces.push((&line[start..open], Piece::Text));
        pieces.push((&line[open..end], Piece::Span));
        start = end;
        at = end;
    }
    pieces.push((&line[start..], Piece::Text));
}

/// Where in `text` a run of exactly `run` backticks starts.
fn closing_run(text: &str, run: usize) -> Option<usize> {
    let mut at = 0;
    while let Some(found) = text[at..].find('`') {
        let begin = at + found;
        let len = text[begin..].len() - text[begin..].trim_start_matches('`').len();
        if len == run {
            return Some(begin);
        }
        at = begin + len;
    }
    None
}

/// The most a command's prompt may grow to with its arguments in. The
/// growth is multiplicative (every `$ARGUMENTS` repeats them), so a
/// 256 KiB body and a long argument could otherwise ask for gigabytes
/// before anything checks the prompt against the model's window.
pub const MAX_EXPANDED_BYTES: usize = 1 << 20;

/// A command's prompt would pass [`MAX_EXPANDED_BYTES`] once expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("with these arguments the command's prompt would pass {} KiB", limit_bytes / 1024)]
pub struct ExpansionTooLarge {
    pub limit_bytes: usize,
}

/// The prompt being built, refusing to pass [`MAX_EXPANDED_BYTES`].
struct Expansion {
    text: String,
}

impl Expansion {
    fn with_capacity(capacity: usize) -> Self {
        Self { text: String::with_capacity(capacity.min(MAX_EXPANDED_BYTES)) }
    }

    fn push(&mut self, piece: &str) -> Result<(), ExpansionTooLarge> {
        if self.text.len() + piece.len() > MAX_EXPANDED_BYTES {
            return Err(ExpansionTooLarge { limit_bytes: MAX_EXPANDED_BYTES });
        }
        self.text.push_str(piece);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(body: &str, args: &str) -> String {
        expand(body, args).unwrap()
    }

    /// Every `$ARGUMENTS` repeats the arguments: the expansion stops at
    /// its bound instead of asking for gigabytes (a 256 KiB body of them
    /// times a 100 KiB argument is 2.5 GB).
    #[test]
    fn an_expansion_past_its_bound_is_refused_before_it_is_built() {
        let body = "$ARGUMENTS".repeat(25_000);
        let args = "x".repeat(100 * 1024);
        assert_eq!(
            expand(&body, &args),
            Err(ExpansionTooLarge { limit_bytes: MAX_EXPANDED_BYTES })
        );
        let fits = "x".repeat(MAX_EXPANDED_BYTES - 10);
        assert_eq!(expanded("$ARGUMENTS", &fits).len(), fits.len());
    }

    #[test]
    fn arguments_and_positions_are_substituted() {
        assert_eq!(expanded("Fix $ARGUMENTS now", "the login bug"), "Fix the login bug now");
        assert_eq!(
            expanded("Review PR #$1 with priority $2 ($3)", "456 \"very high\""),
            "Review PR #456 with priority very high ($3)"
        );
        assert_eq!(expanded("costs $$5 and $x", ""), "costs $5 and $x");
        assert_eq!(expanded("Summarise.", "src/lib.rs"), "Summarise.\n\nARGUMENTS: src/lib.rs");
        assert_eq!(expanded("Summarise.", "  "), "Summarise.");
        assert_eq!(expanded("$", "a"), "$\n\nARGUMENTS: a");
        assert_eq!(expanded("$ARGUMENTS", "unbalanced \"quote"), "unbalanced \"quote");
    }

    /// Issue 36: `$N` in prices, code and regexes is not a position, and
    /// a body whose only `$N` are those still gets the user's words. main
    /// gave "We raised .0M at fix50/hour. Use sed s/(a)/fix/." and dropped
    /// "the budget".
    #[test]
    fn dollars_that_are_not_positions_stay_and_the_words_still_arrive() {
        assert_eq!(
            expanded("We raised $5.0M at $150/hour, $1,000 each. Use `sed s/(a)/$1/`.", "fix it"),
            "We raised $5.0M at $150/hour, $1,000 each. Use `sed s/(a)/$1/`.\n\nARGUMENTS: fix it"
        );
        assert_eq!(expanded("Take $5 off for $1", "alice"), "Take $5 off for alice");
        assert_eq!(expanded("$1 and $2", "a b c"), "a and b\n\nARGUMENTS: a b c");
        let sql = "Migrate $ARGUMENTS:\n```sql\nWHERE id > $1 LIMIT $2\n```\n";
        assert_eq!(expanded(sql, "users"), "Migrate users:\n```sql\nWHERE id > $1 LIMIT $2\n```\n");
        assert_eq!(
            expanded("First: $ARGUMENTS[0], then $ARGUMENTS[1].", "a \"b c\""),
            "First: a, then b c."
        );
        assert_eq!(expanded("`` a`$1`b ``: $1", "x"), "`` a`$1`b ``: x");
    }

    /// Real published files: `$N` only in shell code and `!` lines, prices
    /// in prose. Each keeps its text and gets the user's words.
    #[test]
    fn real_command_files_keep_their_code_and_prices() {
        let fixture = |name: &str| {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/claude/commands")
                .join(name);
            MarkdownFile::read(&path).unwrap().body
        };
        let worktrees = fixture("create-worktrees.md");
        let out = expanded(&worktrees, "feature-x");
        assert!(out.contains("awk '{print $1}'"), "{out}");
        assert!(out.ends_with("\n\nARGUMENTS: feature-x"), "the words were lost");
        let tests = fixture("generate-test-cases.md");
        let out = expanded(&tests, "src/lib.rs");
        assert!(out.contains("awk '{print $1}' ||"), "a `!` line's awk was changed");
        assert!(out.contains("intelligent coverage: **src/lib.rs**"), "{out}");
        let debt = fixture("tech-debt.md");
        let out = expanded(&debt, "payments");
        assert!(out.contains("240 hours × $150/hour = $36,000"), "a price was changed");
    }

    #[test]
    fn shell_lines_are_found_outside_fenced_blocks() {
        let text = "Status: !`git status --short`\nNot `ls` nor !``a`b``.\n```\n!`rm x`\n```\n";
        let found = shell_lines(text);
        let commands: Vec<&str> = found.iter().map(|(_, c)| c.as_str()).collect();
        assert_eq!(commands, ["git status --short", "a`b"]);
        assert_eq!(&text[found[0].0.clone()], "!`git status --short`");
    }

    #[test]
    fn file_mentions_are_paths_in_prose() {
        let text = "Read @notes.md and (@src/lib.rs). Ask @alice, mail a@b.io, see \
                    https://x.io/@y.\n`@not/this.md` @notes.md\n```\n@nor/this.md\n```\n";
        assert_eq!(file_mentions(text), ["notes.md", "src/lib.rs"]);
    }

    #[test]
    fn claude_and_codex_folders_load_with_precedence_and_trust() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("codex/fix.md", "---\ndescription: codex fix\n---\nFix $1");
        write("claude/frontend/component.md", "# Make a component\n\nNamed $ARGUMENTS.");
        write(
            "claude/commit.md",
            "---\nallowed-tools: Bash(git add:*), Bash(git status), Read, mcp__docs\n\
             argument-hint: [msg]\n\
             description: Commit\nmodel: small-model\n---\nCommit with $ARGUMENTS",
        );
        write("project/fix.md", "---\ndescription: project fix\n---\nFix it: $ARGUMENTS");
        write("project/help.md", "Not allowed.");
        let roots = |root: &str| (dir.path().join(root), root == "project");
        let all = [roots("codex"), roots("claude"), roots("project")];
        let untrusted = discover_commands(&all, false);
        assert_eq!(untrusted.find("fix").unwrap().description, "codex fix");
        assert_eq!(untrusted.find("prompts:fix").unwrap().description, "codex fix");
        assert_eq!(untrusted.skipped.len(), 2);
        assert!(untrusted.warnings().iter().any(|w| w.contains("keel trust")));
        let component = untrusted.find("component").unwrap();
        assert_eq!(component.description, "Make a component");
        // Claude Code's namespaced spelling (issue 36: it went to the model as text).
        assert_eq!(untrusted.find("frontend:component").unwrap().path, component.path);
        assert!(untrusted.find("backend:component").is_none());
        let commit = untrusted.find("commit").unwrap();
        // Issue 36: pre-approvals, as Claude Code reads them (main gave
        // the narrowing ["shell", "read_file"]: every command, nothing else).
        let words = |list: &[&str]| list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        assert_eq!(commit.preapprovals.prefixes, [words(&["git", "add"])]);
        assert_eq!(commit.preapprovals.commands, [words(&["git", "status"])]);
        assert_eq!(commit.preapprovals.tools, ["mcp__docs__*"]);
        assert!(commit.preapprovals.ignored.is_empty(), "{:?}", commit.preapprovals);
        assert_eq!(commit.argument_hint.as_deref(), Some("[msg]"));
        assert_eq!(commit.model.as_deref(), Some("small-model"));
        let trusted = discover_commands(&all, true);
        assert_eq!(trusted.find("fix").unwrap().description, "project fix");
        assert!(trusted.find("help").is_none());
        assert!(matches!(trusted.problems[0].error, DefinitionError::Reserved { .. }));
    }
}
