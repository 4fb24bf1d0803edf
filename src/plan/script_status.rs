//! Which simple commands of a `bash -c` script decide its exit status, so
//! the verification gate knows whether an exit code speaks for a check.
//!
//! The shell tool runs scripts with `set -o pipefail` (see
//! `tools::shell`), so every part of a pipeline decides the status; so do
//! both sides of `&&`, the right side of `||`, the last statement of the
//! script, of a subshell and of a `{ …; }` group. A statement followed by
//! `;` or a newline and then another one does not (`cargo test; echo
//! done` exits 0 whatever the tests did), nor does the left side of `||`,
//! a negated command, a backgrounded one, or anything inside `if`, loops
//! and functions. Commands inside substitutions are not listed.
//!
//! Invariants: pure; never panics; an unparseable script yields the
//! commands it could read, none of them deciding the status (so a broken
//! parse can never open the gate).

use tree_sitter::{Node, Parser};

/// Deepest syntax tree walked; deeper parts are ignored.
const MAX_LEVEL: usize = 200;

/// One simple command of a script, words as bash would pass them (an
/// expansion keeps its source text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptCommand {
    pub argv: Vec<String>,
    /// Its failure makes the whole script fail (under `pipefail`).
    pub decides_status: bool,
}

thread_local! {
    static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
}

/// The simple commands of `script`, in source order.
pub fn script_commands(script: &str) -> Vec<ScriptCommand> {
    let tree = PARSER.with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser.set_language(&tree_sitter_bash::LANGUAGE.into()).ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(script, None)
    });
    let Some(tree) = tree else { return Vec::new() };
    let root = tree.root_node();
    let mut walker = Walker { src: script.as_bytes(), out: Vec::new() };
    walker.statements(root, !root.has_error(), 0);
    walker.out
}

struct Walker<'a> {
    src: &'a [u8],
    out: Vec<ScriptCommand>,
}

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

    /// A sequence of statements (the script, a subshell, a group): only
    /// the last one decides, and not when it is sent to the background.
    fn statements(&mut self, node: Node<'_>, decides: bool, level: usize) {
        let parts: Vec<Node<'_>> = children(node).collect();
        let last_named = parts.iter().rposition(|child| child.is_named() && !is_comment(*child));
        let backgrounded = last_named
            .and_then(|at| parts.get(at + 1))
            .is_some_and(|next| !next.is_named() && self.text(*next) == "&");
        for (at, child) in parts.iter().enumerate() {
            if child.is_named() {
                let last = Some(at) == last_named && !backgrounded;
                self.node(*child, decides && last, level + 1);
            }
        }
    }

    fn node(&mut self, node: Node<'_>, decides: bool, level: usize) {
        if level > MAX_LEVEL {
            return;
        }
        match node.kind() {
            "command" => self.command(node, decides),
            "pipeline" => {
                for child in children(node).filter(|child| child.is_named()) {
                    self.node(child, decides, level + 1);
                }
            }
            "list" => self.list(node, decides, level),
            "redirected_statement" => {
                for child in children(node).filter(|child| child.is_named()) {
                    let body = child.kind() != "file_redirect"
                        && child.kind() != "heredoc_redirect"
                        && child.kind() != "herestring_redirect";
                    self.node(child, decides && body, level + 1);
                }
            }
            "subshell" | "compound_statement" => self.statements(node, decides, level),
            _ => {
                for child in children(node).filter(|child| child.is_named()) {
                    self.node(child, false, level + 1);
                }
            }
        }
    }

    /// `a && b`: both decide; `a || b`: only `b` does.
    fn list(&mut self, node: Node<'_>, decides: bool, level: usize) {
        let parts: Vec<Node<'_>> = children(node).collect();
        for (at, child) in parts.iter().enumerate() {
            if !child.is_named() {
                continue;
            }
            let next_operator = parts
                .get(at + 1)
                .filter(|next| !next.is_named())
                .map(|next| self.text(*next))
                .unwrap_or_default();
            self.node(*child, decides && next_operator != "||", level + 1);
        }
    }

    fn command(&mut self, node: Node<'_>, decides: bool) {
        let mut argv = Vec::new();
        for child in children(node) {
            match child.kind() {
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" | "comment" => {}
                _ if child.is_named() => argv.push(self.word(child)),
                _ => {}
            }
        }
        self.out.push(ScriptCommand { argv, decides_status: decides });
    }

    fn word(&self, node: Node<'_>) -> String {
        let text = self.text(node);
        match node.kind() {
            "raw_string" => text.trim_start_matches('\'').trim_end_matches('\'').to_owned(),
            "string" => text.trim_start_matches('"').trim_end_matches('"').to_owned(),
            "command_name" | "concatenation" => {
                children(node).map(|part| self.word(part)).collect()
            }
            "word" | "number" => text.replace('\\', ""),
            _ => text,
        }
    }
}

fn is_comment(node: Node<'_>) -> bool {
    node.kind() == "comment"
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(first word, decides)` of every command of `script`.
    fn shape(script: &str) -> Vec<(String, bool)> {
        script_commands(script)
            .into_iter()
            .map(|command| (command.argv.join(" "), command.decides_status))
            .collect()
    }

    macro_rules! status {
        ($name:ident, $script:expr, [$(($argv:expr, $decides:expr)),* $(,)?]) => {
            #[test]
            fn $name() {
                let expected: Vec<(String, bool)> = vec![$(($argv.to_owned(), $decides)),*];
                assert_eq!(shape($script), expected);
            }
        };
    }

    status!(single, "cargo test", [("cargo test", true)]);
    status!(
        pipeline_with_pipefail,
        "cargo test 2>&1 | tail -n 50",
        [("cargo test", true), ("tail -n 50", true)]
    );
    status!(and_chain, "cd sub && cargo test -q", [("cd sub", true), ("cargo test -q", true)]);
    status!(or_masks_the_left, "cargo test || true", [("cargo test", false), ("true", true)]);
    status!(
        semicolon_masks_earlier,
        "cargo test; echo done",
        [("cargo test", false), ("echo done", true)]
    );
    status!(newline_masks_earlier, "pytest -x\necho $?", [("pytest -x", false), ("echo $?", true)]);
    status!(background, "npm test &", [("npm test", false)]);
    status!(negated, "! make test", [("make test", false)]);
    status!(subshell_last, "(cd a; go test ./...)", [("cd a", false), ("go test ./...", true)]);
    status!(
        group_then_pipe,
        "{ make; make test; } | cat",
        [("make", false), ("make test", true), ("cat", true)]
    );
    status!(
        if_never_decides,
        "if pytest; then echo ok; fi",
        [("pytest", false), ("echo ok", false)]
    );
    status!(
        quoted_words,
        "python3 -m 'pytest' \"tests/test_a.py\"",
        [("python3 -m pytest tests/test_a.py", true)]
    );
    status!(assignments_stay_words, "RUST_LOG=1 cargo test", [("RUST_LOG=1 cargo test", true)]);
    status!(trailing_comment, "cargo test # the suite", [("cargo test", true)]);

    #[test]
    fn a_broken_script_decides_nothing() {
        assert!(script_commands("cargo test && (").iter().all(|c| !c.decides_status));
        assert!(script_commands("").is_empty());
    }
}
