//! Shell analysis: a `bash -c` script, parsed with tree-sitter-bash, as
//! the simple commands it runs, the files it redirects into, and the
//! constructs that hide what runs.
//!
//! Invariants: every simple command anywhere in the script (inside `&&`,
//! `||`, `;`, `|`, newlines, subshells, groups, loops, command and process
//! substitutions) ends up in [`Script::commands`], so a deny rule sees it;
//! anything that hides a command (substitutions, `eval`, `source`,
//! function definitions, words built from expansions in command position,
//! syntax errors) is listed in [`Script::hidden`] and denies the script an
//! automatic allow. Wrappers and nested `bash -c` are unwrapped by
//! [`super::unwrap`]. Every command and redirection carries the folders it
//! may run in, followed through `cd` ([`super::workdir`]). Never panics;
//! nesting is bounded by [`MAX_DEPTH`].

use tree_sitter::{Node, Parser};

use super::unwrap::{Unwrapped, unwrap};
use super::workdir::{Dirs, cd_target};

thread_local! {
    static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
}

/// How deep nested `bash -c` scripts and syntax trees are followed; deeper
/// input counts as unparseable.
pub const MAX_DEPTH: usize = 48;

/// One simple command after wrappers were stripped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimpleCommand {
    pub argv: Vec<String>,
    /// Some word was built from an expansion (`$X`, `$(…)`, globbing is
    /// not counted), so `argv` holds the unexpanded text.
    pub dynamic: bool,
    /// Run through `sudo`/`doas`.
    pub privileged: bool,
    /// Leading `VAR=value` set a variable that changes what runs (PATH,
    /// LD_PRELOAD, …).
    pub sensitive_env: bool,
    /// The folders it may run in (after the script's `cd`s).
    pub dirs: Dirs,
}

/// Something that hides what the script runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    CommandSubstitution,
    ProcessSubstitution,
    Eval,
    Source,
    FunctionDefinition,
    DynamicCommandName,
    SensitiveAssignment,
    Unparseable,
}

impl Hidden {
    pub fn describe(self) -> &'static str {
        match self {
            Hidden::CommandSubstitution => "command substitution",
            Hidden::ProcessSubstitution => "process substitution",
            Hidden::Eval => "eval",
            Hidden::Source => "sourcing a script",
            Hidden::FunctionDefinition => "a function definition",
            Hidden::DynamicCommandName => "a command name built from an expansion",
            Hidden::SensitiveAssignment => "setting a variable that changes what runs",
            Hidden::Unparseable => "shell syntax keel cannot parse",
        }
    }
}

/// A file the script writes through a redirection (`>`, `>>`, `&>`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub target: String,
    pub dynamic: bool,
    /// The folders a relative target is taken from.
    pub dirs: Dirs,
}

/// What a script does, as far as static analysis can tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub commands: Vec<SimpleCommand>,
    pub hidden: Vec<Hidden>,
    pub writes: Vec<Redirect>,
    /// A function that calls itself (the fork-bomb shape).
    pub fork_bomb: bool,
}

/// Analyses a script as `bash -c SCRIPT` would run it.
pub fn analyze_script(script: &str) -> Script {
    let mut out = Script::default();
    script_into(script, 0, &Dirs::default(), &mut out);
    out
}

/// Analyses an argv (as the shell tool or `keel policy check` gets it):
/// wrappers are stripped and `bash -c` scripts parsed.
pub fn analyze_argv(argv: &[String]) -> Script {
    let mut out = Script::default();
    command_into(argv.to_vec(), false, 0, &Dirs::default(), &mut out);
    out
}

fn script_into(script: &str, depth: usize, dirs: &Dirs, out: &mut Script) {
    if depth > MAX_DEPTH {
        out.hidden.push(Hidden::Unparseable);
        return;
    }
    // One parser per thread: building one and loading the grammar costs
    // more than parsing a short script.
    let tree = PARSER.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(script, None)
    });
    let Some(tree) = tree else {
        out.hidden.push(Hidden::Unparseable);
        return;
    };
    let root = tree.root_node();
    if root.has_error() {
        out.hidden.push(Hidden::Unparseable);
    }
    Walker { src: script.as_bytes(), depth, out, dirs: dirs.clone(), last_cd: None }.node(root, 0);
}

/// Adds `argv` (one simple command) to `out`, unwrapping wrappers and
/// nested shells.
fn command_into(argv: Vec<String>, dynamic: bool, depth: usize, dirs: &Dirs, out: &mut Script) {
    if depth > MAX_DEPTH {
        out.hidden.push(Hidden::Unparseable);
        return;
    }
    match unwrap(argv) {
        Unwrapped::Command { argv, privileged, sensitive_env, extra } => {
            if argv.first().is_some_and(|p| p == "eval") {
                out.hidden.push(Hidden::Eval);
                // What eval runs is its arguments joined: judge that too.
                script_into(&argv[1..].join(" "), depth + 1, dirs, out);
            }
            if argv.first().is_some_and(|p| p == "source" || p == ".") {
                out.hidden.push(Hidden::Source);
            }
            for nested in extra {
                command_into(nested, dynamic, depth + 1, dirs, out);
            }
            let dynamic = dynamic || privileged && argv.is_empty();
            let dirs = dirs.clone();
            out.commands.push(SimpleCommand { argv, dynamic, privileged, sensitive_env, dirs });
        }
        Unwrapped::Script { script, privileged } => {
            if privileged {
                out.commands.push(SimpleCommand {
                    argv: vec!["sudo".to_owned()],
                    dynamic,
                    privileged,
                    sensitive_env: false,
                    dirs: dirs.clone(),
                });
            }
            if dynamic {
                out.hidden.push(Hidden::DynamicCommandName);
            }
            script_into(&script, depth + 1, dirs, out);
        }
    }
}

struct Walker<'a> {
    src: &'a [u8],
    depth: usize,
    out: &'a mut Script,
    /// The folders the next command may run in.
    dirs: Dirs,
    /// Where the last command led if it was a `cd` that succeeded: what
    /// the right side of a following `&&` runs in.
    last_cd: Option<Dirs>,
}

/// The children of `node`, walked with a cursor (indexing each child is
/// linear in tree-sitter, so `child(i)` in a loop would be quadratic).
/// No allocation: the cursor lives in the iterator.
fn children(node: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    let mut cursor = node.walk();
    let mut started = false;
    std::iter::from_fn(move || {
        let moved = if started { cursor.goto_next_sibling() } else { cursor.goto_first_child() };
        started = true;
        moved.then(|| cursor.node())
    })
}

impl Walker<'_> {
    fn text(&self, node: Node<'_>) -> String {
        node.utf8_text(self.src).unwrap_or_default().to_owned()
    }

    fn node(&mut self, node: Node<'_>, level: usize) {
        if level > MAX_DEPTH * 4 {
            self.out.hidden.push(Hidden::Unparseable);
            return;
        }
        match node.kind() {
            "command" => self.command(node, level),
            "file_redirect" => self.redirect(node, level),
            "command_substitution" => {
                self.out.hidden.push(Hidden::CommandSubstitution);
                self.scoped(node, level);
            }
            "process_substitution" => {
                self.out.hidden.push(Hidden::ProcessSubstitution);
                self.scoped(node, level);
            }
            "subshell" => self.scoped(node, level),
            "pipeline" => {
                // Every part of a pipeline runs in a subshell of its own.
                let saved = self.dirs.clone();
                for child in children(node) {
                    self.node(child, level + 1);
                    self.dirs = saved.clone();
                }
                self.last_cd = None;
            }
            "list" => self.list(node, level),
            "function_definition" => self.function(node, level),
            "variable_assignment" => {
                if sensitive_assignment(&self.text(node)) {
                    self.out.hidden.push(Hidden::SensitiveAssignment);
                }
                self.each_child(node, level);
            }
            "declaration_command" | "unset_command" => {
                let argv: Vec<String> =
                    self.text(node).split_whitespace().map(str::to_owned).collect();
                if argv.iter().skip(1).any(|word| sensitive_assignment(word)) {
                    self.out.hidden.push(Hidden::SensitiveAssignment);
                }
                self.out.commands.push(SimpleCommand {
                    argv,
                    dynamic: false,
                    privileged: false,
                    sensitive_env: false,
                    dirs: self.dirs.clone(),
                });
                self.each_child(node, level);
            }
            "ERROR" => {
                self.out.hidden.push(Hidden::Unparseable);
                self.each_child(node, level);
            }
            _ => self.each_child(node, level),
        }
    }

    fn each_child(&mut self, node: Node<'_>, level: usize) {
        for child in children(node) {
            self.node(child, level + 1);
            if !matches!(child.kind(), "command" | "list") {
                self.last_cd = None;
            }
        }
    }

    /// Walks `node`'s children in a subshell: a `cd` inside does not leak.
    fn scoped(&mut self, node: Node<'_>, level: usize) {
        let saved = self.dirs.clone();
        self.each_child(node, level);
        self.dirs = saved;
        self.last_cd = None;
    }

    /// `a && b`, `a || b`: the right side of `&&` after a `cd` runs only
    /// where the `cd` led; afterwards either is possible again.
    fn list(&mut self, node: Node<'_>, level: usize) {
        let mut after_and = false;
        let mut narrowed_from: Option<Dirs> = None;
        for child in children(node) {
            if !child.is_named() {
                after_and = self.text(child) == "&&";
                continue;
            }
            if let Some(only) = self.last_cd.take().filter(|_| after_and) {
                let before = std::mem::replace(&mut self.dirs, only);
                narrowed_from.get_or_insert(before);
            }
            self.node(child, level + 1);
            if !matches!(child.kind(), "command" | "list") {
                self.last_cd = None;
            }
        }
        if let Some(before) = narrowed_from {
            self.dirs.union(&before);
        }
    }

    fn command(&mut self, node: Node<'_>, level: usize) {
        let mut argv = Vec::new();
        let mut dynamic = false;
        let mut name_dynamic = false;
        for child in children(node) {
            match child.kind() {
                "variable_assignment" => {
                    // Keep the assignment as a leading word; unwrap strips
                    // it and flags sensitive variables.
                    let (word, is_dynamic) = self.word(child);
                    dynamic |= is_dynamic;
                    argv.push(word);
                }
                "command_name" => {
                    let (word, is_dynamic) = self.word(child);
                    name_dynamic = is_dynamic;
                    argv.push(word);
                }
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {}
                kind if child.is_named() && kind != "comment" => {
                    let (word, is_dynamic) = self.word(child);
                    dynamic |= is_dynamic;
                    argv.push(word);
                }
                _ => {}
            }
            // Substitutions inside words still run: walk every child.
            self.node(child, level + 1);
        }
        if name_dynamic {
            self.out.hidden.push(Hidden::DynamicCommandName);
        }
        let target = cd_target(&argv, dynamic || name_dynamic);
        command_into(argv, dynamic || name_dynamic, self.depth + 1, &self.dirs, self.out);
        self.last_cd = target.map(|target| {
            let moved = self.dirs.after_cd(&target);
            self.dirs.union(&moved);
            moved
        });
    }

    fn redirect(&mut self, node: Node<'_>, level: usize) {
        let operator = children(node)
            .find(|child| !child.is_named())
            .map(|child| self.text(child))
            .unwrap_or_default();
        if let Some(target) = node.child_by_field_name("destination") {
            let (path, dynamic) = self.word(target);
            let duplicates_fd = matches!(operator.as_str(), ">&" | "<&")
                && (path == "-" || path.chars().all(|c| c.is_ascii_digit()));
            let reads = operator == "<";
            if !duplicates_fd && !reads {
                let dirs = self.dirs.clone();
                self.out.writes.push(Redirect { target: path, dynamic, dirs });
            }
        }
        self.each_child(node, level);
    }

    fn function(&mut self, node: Node<'_>, level: usize) {
        self.out.hidden.push(Hidden::FunctionDefinition);
        let name = node.child_by_field_name("name").map(|n| self.text(n)).unwrap_or_default();
        let before = self.out.commands.len();
        self.each_child(node, level);
        if self.out.commands[before..].iter().any(|c| c.argv.first() == Some(&name)) {
            self.out.fork_bomb = true;
        }
    }

    /// The value of a word as bash would see it, and whether expansion was
    /// involved. Expansions keep their source text (`$HOME`).
    fn word(&self, node: Node<'_>) -> (String, bool) {
        match node.kind() {
            "word" | "number" => (unescape_word(&self.text(node)), false),
            "raw_string" => (strip_quotes(&self.text(node), 1), false),
            "ansi_c_string" => (ansi_c(&self.text(node)), false),
            "string" => {
                let mut value = String::new();
                let mut dynamic = false;
                for child in children(node) {
                    match child.kind() {
                        "string_content" => value.push_str(&unescape_double(&self.text(child))),
                        "\"" => {}
                        _ => {
                            dynamic = true;
                            value.push_str(&self.text(child));
                        }
                    }
                }
                (value, dynamic)
            }
            "command_name" | "concatenation" => {
                let mut value = String::new();
                let mut dynamic = false;
                for child in children(node) {
                    let (part, part_dynamic) = self.word(child);
                    value.push_str(&part);
                    dynamic |= part_dynamic;
                }
                (value, dynamic)
            }
            "variable_assignment" => (
                self.text(node),
                node.named_child_count() > 1 && {
                    let value = node.child_by_field_name("value");
                    value.is_some_and(|v| self.word(v).1)
                },
            ),
            _ => (self.text(node), true),
        }
    }
}

/// Whether `NAME=value` sets a variable that changes which program runs or
/// what it loads.
pub fn sensitive_assignment(word: &str) -> bool {
    let Some((name, _)) = word.split_once('=') else { return false };
    let name = name.trim_end_matches('+');
    matches!(
        name,
        "PATH" | "BASH_ENV" | "ENV" | "IFS" | "PROMPT_COMMAND" | "SHELLOPTS" | "PS4" | "CDPATH"
    ) || name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || name.starts_with("GIT_")
        || name.starts_with("BASH_FUNC_")
}

fn strip_quotes(text: &str, prefix: usize) -> String {
    let inner = text.get(prefix..text.len().saturating_sub(1)).unwrap_or_default();
    inner.to_owned()
}

fn unescape_word(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            },
            _ => out.push(c),
        }
    }
    out
}

fn unescape_double(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, chars.peek()) {
            ('\\', Some('"' | '\\' | '$' | '`')) => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            ('\\', Some('\n')) => {
                chars.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// `$'…'`: the escapes bash decodes (enough to see `$'\x72m'` as `rm`).
fn ansi_c(text: &str) -> String {
    let inner = strip_quotes(text, 2);
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('e' | 'E') => out.push('\u{1b}'),
            Some('x') => {
                let digits = take_digits(&mut chars, 2, 16);
                out.extend(u32::from_str_radix(&digits, 16).ok().and_then(char::from_u32));
            }
            Some(d @ '0'..='7') => {
                let digits = format!("{d}{}", take_digits(&mut chars, 2, 8));
                out.extend(u32::from_str_radix(&digits, 8).ok().and_then(char::from_u32));
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

fn take_digits(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    max: usize,
    radix: u32,
) -> String {
    let mut digits = String::new();
    while digits.len() < max {
        match chars.peek() {
            Some(c) if c.is_digit(radix) => {
                digits.push(*c);
                chars.next();
            }
            _ => break,
        }
    }
    digits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argvs(script: &str) -> Vec<Vec<String>> {
        analyze_script(script).commands.into_iter().map(|c| c.argv).collect()
    }

    #[test]
    fn splits_compound_commands() {
        let got = argvs("cat a && apple || b; c | d\ne &");
        let names: Vec<&str> = got.iter().map(|argv| argv[0].as_str()).collect();
        assert_eq!(names, ["cat", "apple", "b", "c", "d", "e"]);
    }

    #[test]
    fn unquotes_words() {
        assert_eq!(argvs(r#"r'm' -"rf" \/ $'\x72m'"#), [["rm", "-rf", "/", "rm"]]);
    }

    #[test]
    fn substitutions_are_hidden_but_still_seen() {
        let script = analyze_script("echo $(rm -rf /) `id` <(ls)");
        assert!(script.hidden.contains(&Hidden::CommandSubstitution));
        assert!(script.hidden.contains(&Hidden::ProcessSubstitution));
        assert!(script.commands.iter().any(|c| c.argv[0] == "rm"));
        assert!(script.commands.iter().any(|c| c.argv[0] == "id"));
    }

    #[test]
    fn redirections_are_writes() {
        let script = analyze_script("echo x > ~/.bashrc 2>&1; cat < in; ls >> \"$F\"");
        let targets: Vec<&str> = script.writes.iter().map(|w| w.target.as_str()).collect();
        assert_eq!(targets, ["~/.bashrc", "$F"]);
    }

    #[test]
    fn fork_bomb_is_seen() {
        assert!(analyze_script(":(){ :|:& };:").fork_bomb);
        assert!(!analyze_script("f(){ ls; }; f").fork_bomb);
    }

    #[test]
    fn garbage_is_unparseable_not_a_panic() {
        for text in ["(((", "if then fi", "echo 'open", "$(", "\u{0}\u{1}", "<<<<"] {
            let script = analyze_script(text);
            assert!(script.hidden.contains(&Hidden::Unparseable), "{text}: {script:?}");
        }
    }
}
