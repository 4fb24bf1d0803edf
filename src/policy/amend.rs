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
const INTERPRETERS: [&str; 22] = [
    "bash", "sh", "zsh", "dash", "ksh", "fish", "python", "python3", "python2", "node", "perl",
    "ruby", "php", "lua", "deno", "bun", "env", "xargs", "eval", "exec", "timeout", "nice",
];

/// Programs too general on their own (`git` covers `git push --force`).
const NEEDS_SUBCOMMAND: [&str; 12] = [
    "git", "sudo", "doas", "cargo", "npm", "pnpm", "yarn", "docker", "kubectl", "make", "go",
    "find",
];

/// Checks that `prefix` may be allowed always.
pub fn check_prefix(prefix: &[String]) -> Result<(), AmendError> {
    let Some(program) = prefix.first() else { return Err(AmendError::EmptyPrefix) };
    let program = super::unwrap::base_name(program);
    let too_broad = || AmendError::TooBroad { prefix: prefix.join(" ") };
    if matches!(program, "sudo" | "doas" | "su" | "rm") {
        return Err(too_broad());
    }
    let rest = &prefix[1..];
    if INTERPRETERS.contains(&program) {
        let only_flags = rest.iter().all(|word| word.starts_with('-'));
        if only_flags {
            return Err(too_broad());
        }
    }
    if NEEDS_SUBCOMMAND.contains(&program) && rest.is_empty() {
        return Err(too_broad());
    }
    Ok(())
}

/// The prefix to offer for "allow always": the program and, when the next
/// word is a subcommand (not a flag or a path), that word too.
pub fn suggest_prefix(argv: &[String]) -> Vec<String> {
    let mut prefix: Vec<String> = argv.iter().take(1).cloned().collect();
    if let Some(sub) = argv
        .get(1)
        .filter(|w| !w.starts_with('-') && !w.contains('/') && !w.contains('.') && !w.contains('='))
    {
        prefix.push(sub.clone());
    }
    prefix
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
        assert_eq!(suggest_prefix(&words("cargo test --all")), words("cargo test"));
        assert_eq!(suggest_prefix(&words("ls -la")), words("ls"));
        assert_eq!(suggest_prefix(&words("python3 x.py")), words("python3"));
    }
}
