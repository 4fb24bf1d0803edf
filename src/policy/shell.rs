//! Shell analysis: a `bash -c` script, parsed with tree-sitter-bash, as
//! the simple commands it runs, the files it redirects into and from, the
//! symlinks it makes, and the constructs that hide what runs.
//!
//! Invariants: every simple command anywhere in the script (inside `&&`,
//! `||`, `;`, `|`, newlines, subshells, groups, loops, command and process
//! substitutions, heredocs fed to a shell) ends up in [`Script::commands`],
//! so a deny rule sees it; anything that hides a command (substitutions,
//! `eval`, `source`, function definitions, words built from expansions in
//! command position, syntax errors) is listed in [`Script::hidden`] and
//! denies the script an automatic allow from rules or the read-only list;
//! code keel cannot read at all (a shell or interpreter reading its program
//! from a pipe, `eval "$X"`, a glob as a command name) is listed in
//! [`Script::blind`] and never runs without a human, in any mode. What one
//! command means (wrappers, nested shells, one-liners) is
//! [`super::command`]'s job. Every command and redirection carries the
//! folders it may run in, followed through `cd` ([`super::workdir`]).
//! Never panics; nesting is bounded by [`MAX_DEPTH`].

use tree_sitter::{Node, Parser};

use super::command::{Stdin, command_into};
use super::words::{ansi_c, strip_quotes, unescape_double, unescape_word};
use super::workdir::{Dirs, cd_target};

thread_local! {
    static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
}

/// How deep nested `bash -c` scripts and syntax trees are followed; deeper
/// input counts as unparseable.
pub const MAX_DEPTH: usize = 48;

/// One simple command after wrappers were stripped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
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
    /// Some variable was set for it (beyond locale and colours): its
    /// behaviour may differ from the plain command's (`LESSOPEN=…`).
    pub env_assigned: bool,
    /// A process wrapper it runs under (`setsid`, `strace`, …).
    pub wrapper: Option<String>,
    /// Its arguments also come from stdin (`xargs`).
    pub stdin_args: bool,
    /// Not written as a command but meant as one (a one-liner's
    /// `shutil.rmtree`): how reasons name it.
    pub origin: Option<String>,
    /// The folders it may run in (after the script's `cd`s).
    pub dirs: Dirs,
}

impl SimpleCommand {
    /// A plain command running in `dirs`.
    pub fn new(argv: Vec<String>, dirs: Dirs) -> Self {
        Self { argv, dirs, ..Self::default() }
    }

    /// How a reason names it: its origin, or its words quoted as a shell
    /// would need them (`python3 -c 'import x'`, not `python3 -c import x`).
    pub fn describe(&self) -> String {
        self.origin.clone().unwrap_or_else(|| quoted(&self.argv))
    }
}

/// `argv` as one shell line that splits back into the same words.
pub fn quoted(argv: &[String]) -> String {
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
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

/// A file the script writes (`>`, `>>`, `&>`, …) or reads (`<`) through a
/// redirection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    pub target: String,
    pub dynamic: bool,
    /// The folders a relative target is taken from.
    pub dirs: Dirs,
}

/// A symlink the script makes (`ln -s TARGET LINK`), as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptLink {
    pub link: String,
    pub target: String,
    pub dirs: Dirs,
}

/// What a script does, as far as static analysis can tell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    pub commands: Vec<SimpleCommand>,
    pub hidden: Vec<Hidden>,
    /// Why part of it runs code keel cannot read; never allowed without a
    /// human.
    pub blind: Vec<String>,
    pub writes: Vec<Redirect>,
    pub reads: Vec<Redirect>,
    pub links: Vec<ScriptLink>,
    /// Literal values assigned to variables earlier in the script
    /// (`X='rm -rf /'`), so `eval "$X"` can be read.
    pub vars: std::collections::BTreeMap<String, String>,
    /// A function that calls itself (the fork-bomb shape).
    pub fork_bomb: bool,
}

/// Analyses a script as `bash -c SCRIPT` would run it.
pub fn analyze_script(script: &str) -> Script {
    analyze_script_in(script, &Dirs::default())
}

/// Analyses a script started in `dirs` (a `workdir`).
pub fn analyze_script_in(script: &str, dirs: &Dirs) -> Script {
    let mut out = Script::default();
    script_into(script, 0, dirs, &mut out);
    out
}

/// Analyses an argv (as the shell tool or `keel policy check` gets it):
/// wrappers are stripped and `bash -c` scripts parsed.
pub fn analyze_argv(argv: &[String]) -> Script {
    let mut out = Script::default();
    command_into(argv.to_vec(), false, 0, &Dirs::default(), &Stdin::Closed, &mut out);
    out
}

pub(super) fn script_into(script: &str, depth: usize, dirs: &Dirs, out: &mut Script) {
    script_into_fed(script, depth, dirs, &Stdin::Closed, out);
}

/// [`script_into`] for a script whose shell reads `stdin` (`… | bash -c
/// 'sh'`): its commands read it too, so a shell among them that reads its
/// program from stdin is judged by what feeds it.
pub(super) fn script_into_fed(
    script: &str,
    depth: usize,
    dirs: &Dirs,
    stdin: &Stdin,
    out: &mut Script,
) {
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
    let mut walker = Walker {
        src: script.as_bytes(),
        depth,
        out,
        dirs: dirs.clone(),
        last_cd: None,
        stdin: stdin.clone(),
    };
    walker.node(root, 0);
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
    /// What the next command reads on stdin.
    stdin: Stdin,
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
            "redirected_statement" => self.redirected(node, level),
            "command_substitution" => {
                self.out.hidden.push(Hidden::CommandSubstitution);
                self.scoped(node, level);
            }
            "process_substitution" => {
                self.out.hidden.push(Hidden::ProcessSubstitution);
                self.scoped(node, level);
            }
            "subshell" => self.scoped(node, level),
            "pipeline" => self.pipeline(node, level),
            "list" => self.list(node, level),
            "function_definition" => self.function(node, level),
            "variable_assignment" => {
                let text = self.text(node);
                if sensitive_assignment(&text) {
                    self.out.hidden.push(Hidden::SensitiveAssignment);
                }
                self.out.blind.extend(super::program_source::unseen_start_up(&text));
                self.remember(node);
                self.each_child(node, level);
            }
            "declaration_command" | "unset_command" => {
                let argv: Vec<String> =
                    self.text(node).split_whitespace().map(str::to_owned).collect();
                if argv.iter().skip(1).any(|word| sensitive_assignment(word)) {
                    self.out.hidden.push(Hidden::SensitiveAssignment);
                }
                let unseen =
                    argv.iter().skip(1).filter_map(|w| super::program_source::unseen_start_up(w));
                self.out.blind.extend(unseen);
                self.out.commands.push(SimpleCommand::new(argv, self.dirs.clone()));
                self.each_child(node, level);
            }
            "ERROR" => {
                self.out.hidden.push(Hidden::Unparseable);
                self.each_child(node, level);
            }
            _ => self.each_child(node, level),
        }
    }

    /// `NAME=literal` at statement level: its value, for `eval "$NAME"`.
    fn remember(&mut self, node: Node<'_>) {
        let name = node.child_by_field_name("name").map(|n| self.text(n));
        let value = node.child_by_field_name("value").map(|v| self.word(v));
        match (name, value) {
            (Some(name), Some((value, false))) => {
                self.out.vars.insert(name, value);
            }
            (Some(name), None) => {
                self.out.vars.insert(name, String::new());
            }
            (Some(name), Some((_, true))) => {
                self.out.vars.remove(&name);
            }
            (None, _) => {}
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
        let stdin = std::mem::take(&mut self.stdin);
        self.each_child(node, level);
        self.dirs = saved;
        self.stdin = stdin;
        self.last_cd = None;
    }

    /// Every part of a pipeline runs in a subshell of its own; all but the
    /// first read the previous one's output.
    fn pipeline(&mut self, node: Node<'_>, level: usize) {
        let saved = self.dirs.clone();
        let outer = self.stdin.clone();
        let mut first = true;
        for child in children(node) {
            if !child.is_named() {
                continue;
            }
            self.stdin = if first { outer.clone() } else { Stdin::Pipe };
            first = false;
            self.node(child, level + 1);
            self.dirs = saved.clone();
        }
        self.stdin = outer;
        self.last_cd = None;
    }

    /// `BODY < file`, `BODY <<EOF … EOF`, `BODY <<< word`: the body reads
    /// that on stdin.
    fn redirected(&mut self, node: Node<'_>, level: usize) {
        let outer = self.stdin.clone();
        for child in children(node) {
            if let Some(stdin) = self.stdin_of(child) {
                self.stdin = stdin;
            }
        }
        for child in children(node) {
            self.node(child, level + 1);
            if !matches!(child.kind(), "command" | "list") {
                self.last_cd = None;
            }
        }
        self.stdin = outer;
    }

    /// What a redirection feeds to stdin, if it does.
    fn stdin_of(&self, node: Node<'_>) -> Option<Stdin> {
        match node.kind() {
            "heredoc_redirect" => {
                let body = children(node).find(|c| c.kind() == "heredoc_body");
                let dynamic = body.is_some_and(|b| {
                    children(b).any(|part| part.is_named() && part.kind() != "heredoc_content")
                });
                let text = body.map(|b| self.text(b)).unwrap_or_default();
                Some(Stdin::Text { body: text, dynamic })
            }
            "herestring_redirect" => {
                let word = children(node).find(|c| c.is_named())?;
                let (body, dynamic) = self.word(word);
                Some(Stdin::Text { body, dynamic })
            }
            "file_redirect" => {
                let operator = children(node).find(|c| !c.is_named()).map(|c| self.text(c))?;
                (operator == "<").then_some(Stdin::File)
            }
            _ => None,
        }
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
        let mut stdin = self.stdin.clone();
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
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" => {
                    if let Some(fed) = self.stdin_of(child) {
                        stdin = fed;
                    }
                }
                kind if child.is_named() && kind != "comment" => {
                    let (word, is_dynamic) = self.word(child);
                    dynamic |= is_dynamic;
                    argv.push(word);
                }
                _ => {}
            }
            // Substitutions inside words still run: walk every child.
            let saved = std::mem::take(&mut self.stdin);
            self.node(child, level + 1);
            self.stdin = saved;
        }
        if name_dynamic {
            self.out.hidden.push(Hidden::DynamicCommandName);
            self.out.blind.push(format!(
                "`{}` is a command name built at run time",
                argv.iter().find(|w| !w.contains('=')).map_or("", String::as_str)
            ));
        }
        if dynamic || name_dynamic {
            // `a=rm; $a -rf /`: with the script's literal variables put in,
            // the command is judged as it will run.
            if let Some(known) = super::command::substitute(&self.text(node), self.out) {
                let dirs = self.dirs.clone();
                super::shell::script_into(&known, self.depth + 1, &dirs, self.out);
            }
        }
        let target = cd_target(&argv, dynamic || name_dynamic);
        command_into(argv, dynamic || name_dynamic, self.depth + 1, &self.dirs, &stdin, self.out);
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
            let dirs = self.dirs.clone();
            if operator == "<" {
                self.out.reads.push(Redirect { target: path, dynamic, dirs });
            } else if !duplicates_fd {
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
            "variable_assignment" => {
                // `NAME=value` with the value decoded like any word, so
                // `GIT_SSH_COMMAND='rm -rf ~'` is seen without its quotes.
                let name = node.child_by_field_name("name").map(|n| self.text(n));
                let text = self.text(node);
                let operator = match &name {
                    Some(name) if text.starts_with(&format!("{name}+=")) => "+=",
                    Some(_) | None => "=",
                };
                match (name, node.child_by_field_name("value")) {
                    (Some(name), Some(value)) => {
                        let (value, dynamic) = self.word(value);
                        (format!("{name}{operator}{value}"), dynamic)
                    }
                    (Some(name), None) => (format!("{name}{operator}"), false),
                    (None, _) => (text, false),
                }
            }
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
        "PATH"
            | "BASH_ENV"
            | "ENV"
            | "IFS"
            | "PROMPT_COMMAND"
            | "SHELLOPTS"
            | "PS4"
            | "CDPATH"
            | "HOME"
            | "ZDOTDIR"
            | "LESSOPEN"
            | "LESSCLOSE"
            | "PAGER"
            | "MANPAGER"
            | "EDITOR"
            | "VISUAL"
            | "BROWSER"
            | "RIPGREP_CONFIG_PATH"
            | "PYTHONPATH"
            | "PYTHONSTARTUP"
            | "PYTHONHOME"
            | "NODE_OPTIONS"
            | "NODE_PATH"
            | "PERL5OPT"
            | "PERL5LIB"
            | "RUBYOPT"
            | "RUBYLIB"
            | "SSH_ASKPASS"
            | "SUDO_ASKPASS"
            | "RSYNC_RSH"
    ) || name.starts_with("LD_")
        || name.starts_with("DYLD_")
        || name.starts_with("GIT_")
        || name.starts_with("BASH_FUNC_")
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
