//! Which shell commands count as verification (the gate before
//! `deliver`), and which check commands a project offers
//! ([`detect_checks`], [`checks_named_in`]).
//!
//! A shell call verifies when one of the simple commands that decide its
//! exit status ([`super::script_status`]) runs a test or a build the way
//! people do ([`super::runners`]), a script named like a test, or one of
//! the project's checks (its phase rules, `[verify] commands`, the
//! detected ones, those named in AGENTS.md); or when the model marked the
//! call with `verify: true`. It passes on exit 0 and fails otherwise, so a
//! failing check counts as a failure wherever it runs. A check whose
//! status something later hides (`cargo test; echo done`) counts neither
//! way, and [`judge`] says why.
//!
//! Invariants: pure and conservative: `echo cargo test` or `cat
//! test_x.py` never open the gate; an unparseable script verifies only
//! when marked. Detection reads only the contents it is given (the caller
//! reads the files named in [`CHECK_FILES`] at the workspace root) and
//! never fails: a file it cannot make sense of suggests nothing.

use crate::policy::unwrap::{Unwrapped, unwrap};

use super::runners::{Runner, recognise};
use super::script_status::{ScriptCommand, script_commands};

/// How one shell call bears on the verification gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckVerdict {
    /// It runs a check whose status is the call's exit code: exit 0
    /// passes, anything else fails. `what` names it for the model.
    Check { what: String },
    /// It runs a check, but a later part of the command decides the exit
    /// code, so the result says nothing about it.
    Hidden { what: String },
    /// Nothing in it is recognised as a check.
    NotACheck,
}

/// Deepest `bash -c` nesting followed.
const MAX_NESTING: usize = 4;

/// How `command` (a `bash -c` script) bears on the gate. `project_checks`
/// are command prefixes that count; `marked` is the model's `verify` flag.
pub fn judge(command: &str, project_checks: &[String], marked: bool) -> CheckVerdict {
    if marked {
        return CheckVerdict::Check { what: "marked as the check (`verify: true`)".to_owned() };
    }
    let mut found = Vec::new();
    collect(command, true, project_checks, 0, &mut found);
    if let Some((what, _)) = found.iter().find(|(_, decides)| *decides) {
        return CheckVerdict::Check { what: what.clone() };
    }
    match found.into_iter().next() {
        Some((what, _)) => CheckVerdict::Hidden { what },
        None => CheckVerdict::NotACheck,
    }
}

/// Whether a call counts as verification at all (passing or failing).
pub fn is_verification_command(command: &str, project_checks: &[String]) -> bool {
    matches!(judge(command, project_checks, false), CheckVerdict::Check { .. })
}

/// Every recognised check of `script` with whether it decides the status.
fn collect(
    script: &str,
    decides: bool,
    project_checks: &[String],
    depth: usize,
    found: &mut Vec<(String, bool)>,
) {
    if depth > MAX_NESTING {
        return;
    }
    for ScriptCommand { argv, decides_status } in script_commands(script) {
        let decides = decides && decides_status;
        match unwrap(argv) {
            Unwrapped::Command { argv, .. } => {
                if let Some(what) = describe(&argv, project_checks) {
                    found.push((what, decides));
                }
            }
            Unwrapped::Script { script, .. } => {
                collect(&script, decides, project_checks, depth + 1, found);
            }
        }
    }
}

/// What check `argv` runs, for the model; `None` when it runs none.
fn describe(argv: &[String], project_checks: &[String]) -> Option<String> {
    let line = argv.join(" ");
    if let Some(check) = project_checks.iter().find(|check| starts_with_words(&line, check)) {
        return Some(format!("the project's check `{}`", check.trim()));
    }
    let shown: String = line.chars().take(60).collect();
    match recognise(argv)? {
        Runner::TestOrBuild => Some(format!("a test or build command (`{shown}`)")),
        Runner::NamedLikeATest => Some(format!("a script named like a test (`{shown}`)")),
    }
}

/// Whether `command` runs `check` (a command prefix, e.g. `cargo clippy`)
/// in a part that decides its exit status; a blank check matches nothing.
pub fn runs_check(command: &str, check: &str) -> bool {
    let mut found = Vec::new();
    collect(command, true, std::slice::from_ref(&check.to_owned()), 0, &mut found);
    !check.trim().is_empty()
        && found.iter().any(|(what, decides)| *decides && what.starts_with("the project's"))
}

fn starts_with_words(line: &str, prefix: &str) -> bool {
    let prefix = prefix.split_whitespace().collect::<Vec<_>>().join(" ");
    !prefix.is_empty()
        && (line == prefix || line.strip_prefix(&prefix).is_some_and(|rest| rest.starts_with(' ')))
}

/// Programs that check nothing, never taken from AGENTS.md as a check.
const NOT_CHECKS: &[&str] = &[
    "true", ":", "echo", "printf", "exit", "cat", "ls", "cd", "git", "export", "source", "rm",
    "cp", "mv", "mkdir", "touch", "sleep",
];

/// Longest command taken from AGENTS.md.
const NAMED_CHECK_CHARS: usize = 200;

/// The check commands an AGENTS.md names: code spans (`` `make test` ``)
/// on lines that speak of tests, checks, builds, linting or CI, and the
/// lines of a fenced block right after such a line or heading. Commands
/// of programs that check nothing (`echo`, `true`, `git`…) are left out.
pub fn checks_named_in(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut push = |candidate: &str| {
        let candidate = candidate.trim().trim_start_matches("$ ").trim();
        let program = candidate.split_whitespace().next().unwrap_or("");
        let usable = !candidate.is_empty()
            && candidate.len() <= NAMED_CHECK_CHARS
            && !NOT_CHECKS.contains(&program)
            && !program.starts_with('#')
            && program
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric() || ".~/".contains(c));
        if usable && !found.iter().any(|known| known == candidate) {
            found.push(candidate.to_owned());
        }
    };
    let mut in_fence = false;
    let mut fence_counts = false;
    let mut last_speaks = false;
    for line in text.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence_counts = !in_fence && last_speaks;
            in_fence = !in_fence;
            last_speaks = false;
            continue;
        }
        if in_fence {
            if fence_counts {
                push(trimmed);
            }
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        last_speaks = speaks_of_checks(trimmed);
        if last_speaks {
            for span in trimmed.split('`').skip(1).step_by(2) {
                push(span);
            }
        }
    }
    found
}

fn speaks_of_checks(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.split(|c: char| !c.is_ascii_alphanumeric()).any(|word| {
        word.starts_with("test")
            || word.starts_with("check")
            || word.starts_with("verif")
            || word.starts_with("lint")
            || word.starts_with("build")
            || word == "ci"
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

    fn verdict(command: &str, checks: &[&str]) -> CheckVerdict {
        let checks: Vec<String> = checks.iter().map(|c| (*c).to_owned()).collect();
        judge(command, &checks, false)
    }

    fn counts(command: &str) -> bool {
        matches!(verdict(command, &[]), CheckVerdict::Check { .. })
    }

    #[test]
    fn real_checks_count_and_lookalikes_do_not() {
        assert!(counts("cargo test"));
        assert!(counts("cargo test --all-targets 2>&1"));
        assert!(counts("cd sub && RUST_LOG=1 cargo test -q"));
        assert!(counts("pytest -x tests/"));
        assert!(counts("python3 test_calc.py"));
        assert!(counts("timeout 300 npm test"));
        assert!(counts("bash -c 'cd app && go test ./...'"));
        assert!(!counts("echo cargo test"));
        assert!(!counts("cargo testify"));
        assert!(!counts("ls"));
        assert!(!counts("python3 calc.py"));
    }

    #[test]
    fn a_pipeline_counts_because_the_shell_runs_with_pipefail() {
        assert!(counts("cargo test 2>&1 | tail -n 50"));
    }

    #[test]
    fn a_check_whose_status_is_hidden_says_so() {
        for command in ["cargo test; echo done", "pytest || true", "! make test"] {
            let verdict = verdict(command, &[]);
            assert!(matches!(verdict, CheckVerdict::Hidden { .. }), "{command}: {verdict:?}");
        }
    }

    #[test]
    fn project_checks_count_by_their_words() {
        let checks = ["./ci.sh", " "];
        assert!(
            matches!(verdict("./ci.sh --fast", &checks), CheckVerdict::Check { what } if what.contains("`./ci.sh`"))
        );
        assert_eq!(verdict("ls", &checks), CheckVerdict::NotACheck, "blank entries never match");
        assert!(runs_check("cd x && cargo clippy -- -D warnings", "cargo clippy"));
        assert!(!runs_check("cargo clippy; true", "cargo clippy"));
        assert!(!runs_check("cargo clippy", " "));
    }

    #[test]
    fn the_verify_flag_counts_whatever_ran() {
        assert!(matches!(judge("./exercise.sh", &[], true), CheckVerdict::Check { .. }));
    }

    #[test]
    fn agents_md_names_its_checks() {
        let text = "# Project\n\nRun `cargo test` before you say done.\n\
                    Use `git status` to look around; run `echo ok` to check.\n\
                    The style is `snake_case`.\n\n## Testing\n\n```sh\n$ make check\n# comment\n```\n\n\
                    ```\ncargo build --release\n```\n";
        assert_eq!(checks_named_in(text), ["cargo test", "make check"]);
    }
}
