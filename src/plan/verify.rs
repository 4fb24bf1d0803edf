//! Which shell commands count as verification (the gate before `deliver`),
//! and which check commands a project offers ([`detect_checks`]).
//!
//! Invariants: pure and conservative: a command counts when one of its
//! `&&`/`;`/`||`-separated parts starts with a known check command, after
//! leading `cd DIR` parts and `VAR=value` assignments. Anything else is not
//! a verification, so an `echo cargo test` never opens the gate. Detection
//! reads only the contents it is given (the caller reads the files named
//! in [`CHECK_FILES`] at the workspace root) and never fails: a file it
//! cannot make sense of suggests nothing.

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
    let known = VERIFICATION_COMMANDS.iter().copied().chain(extra.iter().map(String::as_str));
    known.into_iter().any(|check| runs_check(command, check))
}

/// Whether `command` runs `check` (a command prefix), by the same reading
/// as [`is_verification_command`]; a blank check matches nothing.
pub fn runs_check(command: &str, check: &str) -> bool {
    let check = check.trim();
    !check.is_empty()
        && command.split(['&', ';', '|', '\n']).map(str::trim).any(|part| {
            let words: Vec<&str> =
                part.split_whitespace().skip_while(|word| is_assignment(word)).collect();
            let part = words.join(" ");
            part == check || part.strip_prefix(check).is_some_and(|rest| rest.starts_with(' '))
        })
}

/// Files at the workspace root that say how a project is checked.
pub const CHECK_FILES: &[&str] = &[
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "pytest.ini",
    "go.mod",
    "Makefile",
    "makefile",
    "GNUmakefile",
];

/// What `npm init` writes as the test script: no tests at all.
const NPM_PLACEHOLDER_TEST: &str = "no test specified";

/// The project's check commands, from the root files among
/// [`CHECK_FILES`] (name, contents): `cargo test` for Cargo.toml, `npm
/// test` for a package.json with a real `scripts.test`, `pytest` for
/// pyproject.toml or pytest.ini, `go test ./...` for go.mod, `make test`
/// for a Makefile with a `test` target. In that order, without repeats.
pub fn detect_checks(files: &[(String, String)]) -> Vec<String> {
    let has = |name: &str| files.iter().any(|(file, _)| file == name);
    let mut checks = Vec::new();
    if has("Cargo.toml") {
        checks.push("cargo test");
    }
    if files.iter().any(|(file, text)| file == "package.json" && has_npm_test(text)) {
        checks.push("npm test");
    }
    if has("pyproject.toml") || has("pytest.ini") {
        checks.push("pytest");
    }
    if has("go.mod") {
        checks.push("go test ./...");
    }
    let makefiles = ["Makefile", "makefile", "GNUmakefile"];
    if files.iter().any(|(file, text)| makefiles.contains(&file.as_str()) && has_make_test(text)) {
        checks.push("make test");
    }
    checks.into_iter().map(str::to_owned).collect()
}

fn has_npm_test(package_json: &str) -> bool {
    let Ok(package) = serde_json::from_str::<serde_json::Value>(package_json) else {
        return false;
    };
    package["scripts"]["test"]
        .as_str()
        .is_some_and(|script| !script.trim().is_empty() && !script.contains(NPM_PLACEHOLDER_TEST))
}

/// A rule line naming `test` among its targets (`test:`, `lint test :`),
/// not a variable assignment (`test := 1`), a recipe line or a comment.
fn has_make_test(makefile: &str) -> bool {
    makefile.lines().any(|line| {
        if line.starts_with('\t') || line.trim_start().starts_with('#') {
            return false;
        }
        let Some((targets, rest)) = line.split_once(':') else { return false };
        !rest.starts_with('=') && targets.split_whitespace().any(|target| target == "test")
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

    fn detect(files: &[(&str, &str)]) -> Vec<String> {
        let files: Vec<(String, String)> =
            files.iter().map(|(name, text)| ((*name).to_owned(), (*text).to_owned())).collect();
        detect_checks(&files)
    }

    macro_rules! detects {
        ($name:ident, $files:expr, $expected:expr) => {
            #[test]
            fn $name() {
                let expected: &[&str] = &$expected;
                assert_eq!(detect(&$files), expected);
            }
        };
    }

    detects!(cargo, [("Cargo.toml", "[package]\nname = \"x\"\n")], ["cargo test"]);
    detects!(npm_with_tests, [("package.json", r#"{"scripts":{"test":"jest"}}"#)], ["npm test"]);
    detects!(
        npm_placeholder,
        [("package.json", r#"{"scripts":{"test":"echo \"Error: no test specified\" && exit 1"}}"#)],
        []
    );
    detects!(npm_without_tests, [("package.json", r#"{"scripts":{"build":"tsc"}}"#)], []);
    detects!(npm_broken_json, [("package.json", "{ not json")], []);
    detects!(pyproject, [("pyproject.toml", "[project]\nname = \"x\"\n")], ["pytest"]);
    detects!(
        pytest_ini_and_pyproject_once,
        [("pytest.ini", ""), ("pyproject.toml", "")],
        ["pytest"]
    );
    detects!(go, [("go.mod", "module x\n")], ["go test ./..."]);
    detects!(make_test, [("Makefile", "build:\n\tcc x.c\ntest: build\n\t./x\n")], ["make test"]);
    detects!(
        make_test_among_targets,
        [("makefile", ".PHONY: lint test\nlint test :\n\ttrue\n")],
        ["make test"]
    );
    detects!(
        make_without_test,
        [("Makefile", "test := 1\n# test: later\nall:\n\techo test: no\ntests:\n\ttrue\n")],
        []
    );
    detects!(
        several_in_order,
        [("Makefile", "test:\n\tcargo test\n"), ("go.mod", ""), ("Cargo.toml", "")],
        ["cargo test", "go test ./...", "make test"]
    );
    detects!(nothing_known, [("README.md", "test:")], []);

    #[test]
    fn detected_checks_count_as_verification() {
        let none: &[String] = &[];
        let files =
            [("go.mod", ""), ("Makefile", "test:\n"), ("Cargo.toml", ""), ("pytest.ini", "")];
        for check in detect(&files) {
            assert!(is_verification_command(&check, none), "{check}");
        }
    }

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
