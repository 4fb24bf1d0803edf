//! "Allow always": choosing the command prefix to remember, refusing
//! prefixes so broad they would allow anything, and the text of the
//! `prefix_rule` appended to `.keel/rules/local.rules` (written by
//! `config::rules::append_local_rule`; this file only computes text).
//!
//! Invariants: appending the same prefix twice leaves one rule (dedupe);
//! the file always ends with a newline; the line format is Codex's, so a
//! Codex install reads it unchanged:
//! `prefix_rule(pattern=["a", "b"], decision="allow")`.

/// Why a prefix cannot become an "always" rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AmendError {
    #[error("cannot remember an empty prefix")]
    EmptyPrefix,
    #[error(
        "`{prefix}` is too broad to allow always: it would run any command; approve this once, or \
         allow a longer prefix"
    )]
    TooBroad { prefix: String },
}

/// Programs that run arbitrary code given as arguments: allowing them as a
/// bare prefix (or with `-c`/`-e`) would allow everything.
const INTERPRETERS: [&str; 26] = [
    "bash", "sh", "zsh", "dash", "ksh", "fish", "python", "python3", "python2", "node", "perl",
    "ruby", "php", "lua", "deno", "bun", "env", "xargs", "eval", "exec", "timeout", "nice", "npx",
    "bunx", "pypy", "pypy3",
];

/// Programs too general on their own (`git` covers `git push --force`).
const NEEDS_SUBCOMMAND: [&str; 16] = [
    "git", "sudo", "doas", "cargo", "npm", "pnpm", "yarn", "docker", "kubectl", "make", "go",
    "find", "uv", "poetry", "pipenv", "bundle",
];

/// Subcommands that run whatever comes next (`npm run X`, `uv run X`):
/// they need that word too.
const RUNNERS: [&str; 6] = ["run", "run-script", "exec", "x", "dlx", "tool"];

/// Checks that `prefix` may be allowed always.
pub fn check_prefix(prefix: &[String]) -> Result<(), AmendError> {
    let Some(program) = prefix.first() else { return Err(AmendError::EmptyPrefix) };
    let program = super::unwrap::base_name(program);
    let too_broad = || AmendError::TooBroad { prefix: prefix.join(" ") };
    if matches!(program, "sudo" | "doas" | "su" | "rm" | "pkexec") {
        return Err(too_broad());
    }
    let rest = &prefix[1..];
    if interpreter(program) && rest.iter().all(|word| word.starts_with('-')) {
        return Err(too_broad());
    }
    if NEEDS_SUBCOMMAND.contains(&program) && rest.is_empty() {
        return Err(too_broad());
    }
    if NEEDS_SUBCOMMAND.contains(&program) && rest.len() == 1 && RUNNERS.contains(&rest[0].as_str())
    {
        return Err(too_broad());
    }
    Ok(())
}

fn interpreter(program: &str) -> bool {
    INTERPRETERS.contains(&program) || super::interp::lang_of(program).is_some()
}

/// The prefix to offer for "allow always", narrow enough to be useful and
/// never one [`check_prefix`] refuses (`None` then: offer no "always").
/// An interpreter keeps its script or module (`python3 test_calc.py`,
/// `python3 -m pytest`, `sh x.sh`); a runner keeps what it runs (`npm run
/// test`, `uv run pytest`); otherwise the program and, when the next word
/// is a subcommand (not a flag or a path), that word too.
pub fn suggest_prefix(argv: &[String]) -> Option<Vec<String>> {
    let program = argv.first()?;
    let name = super::unwrap::base_name(program);
    if matches!(name, "env" | "xargs" | "eval" | "exec" | "timeout" | "nice" | "command") {
        // Wrappers: the command they run is what an "always" should name.
        return None;
    }
    let prefix: Vec<String> = if interpreter(name) {
        let at = argv.iter().skip(1).position(|w| !w.starts_with('-')).map(|i| i + 1)?;
        argv[..=at].to_vec()
    } else {
        let mut prefix = vec![program.clone()];
        if let Some(sub) = argv.get(1).filter(|w| plain_word(w)) {
            prefix.push(sub.clone());
            if RUNNERS.contains(&sub.as_str()) {
                prefix.push(argv.get(2).filter(|w| !w.starts_with('-'))?.clone());
            }
        }
        prefix
    };
    check_prefix(&prefix).ok().map(|()| prefix)
}

/// A subcommand-like word: not a flag, a path, a file name or `K=V`.
fn plain_word(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('-')
        && !word.contains('/')
        && !word.contains('.')
        && !word.contains('=')
}

/// The "always" prefix for a shell command as the model wrote it: the
/// first command in it that is not read-only, unwrapped as policy sees it
/// (`cd x && timeout 60 python3 t.py` → `python3 t.py`).
pub fn suggest_for_shell(command: &str) -> Option<Vec<String>> {
    let script = super::shell::analyze_script(command);
    let first = script
        .commands
        .iter()
        .find(|c| !super::readonly::is_read_only(&c.argv) && c.origin.is_none())?;
    suggest_prefix(&first.argv)
}

/// The rule line for `prefix`, without the newline.
pub fn rule_line(prefix: &[String]) -> String {
    let tokens: Vec<String> =
        prefix.iter().map(|token| serde_json::Value::String(token.clone()).to_string()).collect();
    format!("prefix_rule(pattern=[{}], decision=\"allow\")", tokens.join(", "))
}

/// `existing` (the file's text, `None` if missing) with an allow rule for
/// `prefix` appended, or unchanged when the same rule is already there.
/// Only checks emptiness: the too-broad check is the caller's choice
/// ([`check_prefix`]), since Codex's conformance cases append freely.
pub fn append_rule(existing: Option<&str>, prefix: &[String]) -> Result<String, AmendError> {
    if prefix.is_empty() {
        return Err(AmendError::EmptyPrefix);
    }
    let line = rule_line(prefix);
    let mut text = existing.unwrap_or_default().to_owned();
    if text.lines().any(|existing_line| existing_line.trim() == line) {
        return Ok(text);
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&line);
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn refuses_broad_prefixes() {
        for text in ["bash", "sh -c", "python -c", "python3", "git", "sudo", "sudo ls", "env", "rm"]
        {
            assert!(check_prefix(&words(text)).is_err(), "{text}");
        }
        for text in ["git status", "cargo test", "python3 script.py", "ls", "make test"] {
            assert!(check_prefix(&words(text)).is_ok(), "{text}");
        }
        assert_eq!(check_prefix(&[]), Err(AmendError::EmptyPrefix));
    }

    #[test]
    fn suggests_program_and_subcommand() {
        let suggest = |text: &str| suggest_prefix(&words(text)).map(|p| p.join(" "));
        assert_eq!(suggest("cargo test --all").as_deref(), Some("cargo test"));
        assert_eq!(suggest("ls -la").as_deref(), Some("ls"));
        assert_eq!(suggest("python3 x.py").as_deref(), Some("python3 x.py"));
        assert_eq!(suggest("python3 test_calc.py -v").as_deref(), Some("python3 test_calc.py"));
        assert_eq!(suggest("python3 -m pytest -q").as_deref(), Some("python3 -m pytest"));
        assert_eq!(suggest("node x.js").as_deref(), Some("node x.js"));
        assert_eq!(suggest("sh x.sh").as_deref(), Some("sh x.sh"));
        assert_eq!(suggest("npm run test").as_deref(), Some("npm run test"));
        assert_eq!(suggest("npm test").as_deref(), Some("npm test"));
        assert_eq!(suggest("uv run pytest tests").as_deref(), Some("uv run pytest"));
        assert_eq!(suggest("./run_tests.sh").as_deref(), Some("./run_tests.sh"));
        for never in ["rm -f x", "sudo make", "python3", "python3 -u", "npm run", "git", "bash"] {
            assert_eq!(suggest(never), None, "{never}");
        }
    }

    #[test]
    fn suggestions_are_never_refused() {
        for text in [
            "python3 test_calc.py",
            "node x.js",
            "sh x.sh",
            "npm run test",
            "cargo test",
            "make",
            "go test ./...",
            "docker run x",
            "env A=1 python3 x.py",
            "perl -e 1",
            "pytest -q",
        ] {
            if let Some(prefix) = suggest_prefix(&words(text)) {
                assert!(check_prefix(&prefix).is_ok(), "{text}: {prefix:?}");
                assert!(words(text).starts_with(&prefix), "{text}: {prefix:?}");
            }
        }
        assert_eq!(
            suggest_for_shell("cd src && timeout 60 python3 test_calc.py"),
            Some(words("python3 test_calc.py"))
        );
        assert_eq!(suggest_for_shell("ls && rm -rf build"), None);
    }
}
