//! Which shell commands count as verification (the gate before `deliver`).
//!
//! Invariants: pure and conservative: a command counts when one of its
//! `&&`/`;`/`||`-separated parts starts with a known check command, after
//! leading `cd DIR` parts and `VAR=value` assignments. Anything else is not
//! a verification, so an `echo cargo test` never opens the gate.

/// Command prefixes that verify a change (tests and builds).
pub const VERIFICATION_COMMANDS: &[&str] = &[
    "cargo test",
    "cargo build",
    "cargo check",
    "cargo clippy",
    "cargo nextest",
    "npm test",
    "npm run test",
    "yarn test",
    "pnpm test",
    "pytest",
    "python -m pytest",
    "python3 -m pytest",
    "go test",
    "go build",
    "make test",
    "make check",
];

/// Whether `command` runs one of [`VERIFICATION_COMMANDS`] or of `extra`
/// (the configured `verify.commands`).
pub fn is_verification_command(command: &str, extra: &[String]) -> bool {
    command.split(['&', ';', '|', '\n']).map(str::trim).any(|part| {
        let words: Vec<&str> =
            part.split_whitespace().skip_while(|word| is_assignment(word)).collect();
        let part = words.join(" ");
        let known = VERIFICATION_COMMANDS.iter().copied().chain(extra.iter().map(String::as_str));
        known.filter(|known| !known.trim().is_empty()).any(|known| {
            let known = known.trim();
            part == known || part.strip_prefix(known).is_some_and(|rest| rest.starts_with(' '))
        })
    })
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_checks_count_and_lookalikes_do_not() {
        let none: &[String] = &[];
        assert!(is_verification_command("cargo test", none));
        assert!(is_verification_command("cargo test --all-targets 2>&1", none));
        assert!(is_verification_command("cd sub && RUST_LOG=1 cargo test -q", none));
        assert!(is_verification_command("pytest -x tests/", none));
        assert!(!is_verification_command("echo cargo test", none));
        assert!(!is_verification_command("cargo testify", none));
        assert!(!is_verification_command("ls", none));
        let configured = ["./ci.sh".to_owned(), " ".to_owned()];
        assert!(is_verification_command("./ci.sh --fast", &configured));
        assert!(!is_verification_command("ls", &configured), "blank entries never match");
    }
}
