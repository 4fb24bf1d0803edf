//! Whether one command (an argv, wrappers already stripped) runs a test
//! or a build the way people do in the common ecosystems, or a script or
//! file whose name says it tests or checks something.
//!
//! Invariants: pure; judged on the words alone (nothing is looked up on
//! disk); a package-runner wrapper (`uv run`, `poetry run`, `npx`,
//! `bundle exec`, …) is judged by the command it runs. Lookalikes do not
//! count: `echo cargo test`, `cat test_calc.py`, `cargo testify`,
//! `latest.py`.

use crate::policy::unwrap::base_name;

/// What kind of check an argv runs, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// A test runner or build tool (`cargo test`, `pytest`, `go build`, …).
    TestOrBuild,
    /// A script or file named like a test or a check (`./test.sh`,
    /// `python3 test_calc.py`, `npm run check`).
    NamedLikeATest,
}

/// Deepest nesting of package-runner wrappers followed.
const MAX_WRAPPERS: usize = 4;

/// The kind of check `argv` runs, if it runs one.
pub fn recognise(argv: &[String]) -> Option<Runner> {
    recognise_within(argv, 0)
}

fn recognise_within(argv: &[String], depth: usize) -> Option<Runner> {
    let (program, rest) = argv.split_first()?;
    if depth > MAX_WRAPPERS {
        return None;
    }
    let name = base_name(program);
    let sub = first_operand(rest);
    let build = |yes: bool| yes.then_some(Runner::TestOrBuild);
    let inner = |skip: usize| recognise_within(rest.get(skip..).unwrap_or_default(), depth + 1);
    match name {
        "cargo" => build(
            matches!(
                sub,
                Some("test" | "build" | "check" | "clippy" | "nextest" | "bench" | "miri")
            ) || (sub == Some("fmt") && rest.iter().any(|word| word == "--check")),
        ),
        "pytest" | "py.test" | "tox" | "nox" | "nose2" | "jest" | "vitest" | "mocha" | "ava"
        | "jasmine" | "karma" | "tsc" | "rspec" | "phpunit" | "pest" | "ctest" | "prove"
        | "busted" | "elm-test" | "trial" => Some(Runner::TestOrBuild),
        _ if is_python(name) => python(rest),
        "uv" | "poetry" | "pipenv" | "pdm" | "rye" | "hatch" => match sub {
            Some("run") => inner(operand_position(rest, "run")? + 1),
            Some("test") => Some(Runner::TestOrBuild),
            _ => None,
        },
        "uvx" | "pipx" | "npx" | "bunx" | "pnpx" => {
            let skip = rest.iter().take_while(|word| word.starts_with('-') || *word == "run");
            inner(skip.count())
        }
        "npm" | "pnpm" | "yarn" | "bun" => package_script(rest, depth),
        "node" | "deno" | "tsx" | "ts-node" => script_runner(name, rest),
        "go" => build(matches!(sub, Some("test" | "build" | "vet"))),
        "mvn" | "mvnw" => build(rest.iter().any(|word| {
            matches!(word.as_str(), "test" | "verify" | "package" | "install" | "compile")
                || word.ends_with(":test")
        })),
        "gradle" | "gradlew" => build(rest.iter().any(|word| {
            let task = word.rsplit(':').next().unwrap_or(word);
            matches!(task, "build" | "check" | "assemble") || task.starts_with("test")
        })),
        "dotnet" | "swift" | "zig" | "stack" | "cabal" | "dune" | "gleam" | "bazel"
        | "bazelisk" => build(matches!(sub, Some("test" | "build"))),
        "mix" => build(matches!(sub, Some("test" | "compile"))),
        "lein" | "sbt" => build(matches!(sub, Some("test" | "compile"))),
        "meson" => build(matches!(sub, Some("test" | "compile"))),
        "xcodebuild" => build(rest.iter().any(|word| word == "test" || word == "build")),
        "make" | "gmake" | "ninja" => build(!matches!(
            sub,
            Some("clean" | "distclean" | "install" | "uninstall" | "fmt" | "format" | "-t")
        )),
        "cmake" => build(rest.iter().any(|word| word == "--build")),
        "rake" => build(sub.is_none() || matches!(sub, Some("test" | "spec" | "default"))),
        "rails" => build(sub == Some("test")),
        "bundle" => match sub {
            Some("exec") => inner(operand_position(rest, "exec")? + 1),
            _ => None,
        },
        "composer" => match sub {
            Some("test") => Some(Runner::TestOrBuild),
            Some("run" | "run-script") => named(rest, "run").or_else(|| named(rest, "run-script")),
            _ => None,
        },
        "php" => match sub {
            Some("artisan") => build(rest.iter().any(|word| word == "test")),
            Some(file) => named_like_test(file).then_some(Runner::NamedLikeATest),
            None => None,
        },
        "ruby" | "perl" | "julia" | "Rscript" | "bash" | "sh" | "zsh" | "lua" => {
            let file = rest.iter().find(|word| !word.starts_with('-'))?;
            named_like_test(file).then_some(Runner::NamedLikeATest)
        }
        _ if program.contains('/') || name.contains('.') => {
            named_like_test(program).then_some(Runner::NamedLikeATest)
        }
        _ => None,
    }
}

fn is_python(name: &str) -> bool {
    name == "python"
        || name.strip_prefix("python").is_some_and(|version| {
            version.chars().all(|c| c.is_ascii_digit() || c == '.') && !version.is_empty()
        })
        || name.starts_with("pypy")
}

/// `python -m pytest|unittest|…`, or `python FILE` with a test-like name.
fn python(rest: &[String]) -> Option<Runner> {
    if let Some(at) = rest.iter().position(|word| word == "-m") {
        let module = rest.get(at + 1)?;
        let known = ["pytest", "unittest", "tox", "nox", "nose2", "doctest", "mypy", "compileall"];
        if known.contains(&module.as_str()) {
            return Some(Runner::TestOrBuild);
        }
        return named_like_test(&module.replace('.', "/")).then_some(Runner::NamedLikeATest);
    }
    if rest.iter().any(|word| word == "-c") {
        return None;
    }
    let file = rest.iter().find(|word| !word.starts_with('-'))?;
    named_like_test(file).then_some(Runner::NamedLikeATest)
}

/// `npm test`, `npm run test:unit`, `yarn build`, `bun test`, `pnpm exec
/// vitest`, …: the built-in test command, or a script named like a check.
fn package_script(rest: &[String], depth: usize) -> Option<Runner> {
    let sub = first_operand(rest)?;
    match sub {
        "test" | "t" | "tst" => Some(Runner::TestOrBuild),
        "run" | "run-script" => named(rest, sub),
        "exec" | "dlx" | "x" => {
            let at = operand_position(rest, sub)? + 1;
            recognise_within(rest.get(at..).unwrap_or_default(), depth + 1)
        }
        script => script_named_like_check(script).then_some(Runner::NamedLikeATest),
    }
}

/// `node --test`, `deno test|check`, `node test.js`.
fn script_runner(name: &str, rest: &[String]) -> Option<Runner> {
    if rest.iter().any(|word| word == "--test") {
        return Some(Runner::TestOrBuild);
    }
    let sub = first_operand(rest)?;
    if name == "deno" && matches!(sub, "test" | "check" | "compile") {
        return Some(Runner::TestOrBuild);
    }
    let file = if name == "deno" && sub == "run" {
        rest.iter().skip_while(|word| *word != "run").skip(1).find(|word| !word.starts_with('-'))?
    } else {
        sub
    };
    named_like_test(file).then_some(Runner::NamedLikeATest)
}

/// The script after `keyword` (`npm run NAME`), if named like a check.
fn named(rest: &[String], keyword: &str) -> Option<Runner> {
    let at = operand_position(rest, keyword)?;
    let script = rest.iter().skip(at + 1).find(|word| !word.starts_with('-'))?;
    script_named_like_check(script).then_some(Runner::NamedLikeATest)
}

/// The first word that is not an option (`cargo +nightly test` → `test`).
fn first_operand(rest: &[String]) -> Option<&str> {
    rest.iter().map(String::as_str).find(|word| !word.starts_with('-') && !word.starts_with('+'))
}

fn operand_position(rest: &[String], operand: &str) -> Option<usize> {
    rest.iter().position(|word| word == operand)
}

/// A package script such as `test`, `test:unit`, `check`, `build`,
/// `typecheck`, `e2e`, `ci`.
fn script_named_like_check(script: &str) -> bool {
    script.to_ascii_lowercase().split([':', '.', '-', '_']).any(|token| {
        token.starts_with("test")
            || matches!(
                token,
                "check"
                    | "checks"
                    | "typecheck"
                    | "spec"
                    | "specs"
                    | "build"
                    | "verify"
                    | "ci"
                    | "e2e"
                    | "unit"
            )
    })
}

/// A file or script whose path says it tests or checks: `test_calc.py`,
/// `calc_test.go`, `tests/run.py`, `./run-tests.sh`, `spec/x_spec.rb`,
/// `scripts/check.sh`; not `latest.py` or `contest.rs`.
pub fn named_like_test(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let mut components: Vec<&str> = lower.split('/').filter(|part| !part.is_empty()).collect();
    let Some(file) = components.pop() else { return false };
    let in_test_folder = components.iter().any(|dir| matches!(*dir, "test" | "tests" | "spec"));
    let stem = file.split('.').next().unwrap_or(file);
    let named = stem.split(['_', '-', '.']).any(|token| {
        token.starts_with("test")
            || token.ends_with("tests")
            || matches!(token, "spec" | "specs" | "check" | "checks" | "verify")
    });
    named || in_test_folder && file.contains('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(command: &str) -> Vec<String> {
        command.split_whitespace().map(str::to_owned).collect()
    }

    macro_rules! runner {
        ($name:ident, $command:expr, $expected:expr) => {
            #[test]
            fn $name() {
                assert_eq!(recognise(&words($command)), $expected, "{}", $command);
            }
        };
    }

    use Runner::{NamedLikeATest as Named, TestOrBuild as Build};

    runner!(cargo_test, "cargo test --all-targets", Some(Build));
    runner!(cargo_toolchain, "cargo +nightly clippy -- -D warnings", Some(Build));
    runner!(cargo_fmt_check, "cargo fmt --all -- --check", Some(Build));
    runner!(cargo_fmt_writes, "cargo fmt", None);
    runner!(cargo_testify, "cargo testify", None);
    runner!(pytest, "pytest -x tests/", Some(Build));
    runner!(python_m_pytest, "python3 -m pytest -q", Some(Build));
    runner!(python_m_unittest, "python -m unittest discover", Some(Build));
    runner!(python_versioned, "python3.12 -m pytest", Some(Build));
    runner!(python_test_file, "python3 test_calc.py", Some(Named));
    runner!(python_file_in_tests, "python tests/integration.py", Some(Named));
    runner!(python_other_file, "python3 calc.py", None);
    runner!(python_latest, "python3 latest.py", None);
    runner!(python_inline, "python3 -c print(1)", None);
    runner!(uv_run_pytest, "uv run pytest", Some(Build));
    runner!(poetry_run, "poetry run python -m pytest", Some(Build));
    runner!(tox, "tox -e py312", Some(Build));
    runner!(nox, "nox -s tests", Some(Build));
    runner!(hatch_test, "hatch test", Some(Build));
    runner!(npm_test, "npm test", Some(Build));
    runner!(npm_run_test_unit, "npm run test:unit", Some(Named));
    runner!(npm_run_lint, "npm run lint", None);
    runner!(pnpm_build, "pnpm build", Some(Named));
    runner!(yarn_test, "yarn test", Some(Build));
    runner!(bun_test, "bun test", Some(Build));
    runner!(npx_vitest, "npx vitest run", Some(Build));
    runner!(npx_jest, "npx --yes jest", Some(Build));
    runner!(pnpm_exec, "pnpm exec vitest", Some(Build));
    runner!(deno_test, "deno test -A", Some(Build));
    runner!(node_test_flag, "node --test", Some(Build));
    runner!(node_test_file, "node test.js", Some(Named));
    runner!(node_app, "node server.js", None);
    runner!(go_test, "go test ./...", Some(Build));
    runner!(go_run, "go run .", None);
    runner!(mvn_verify, "mvn -q verify", Some(Build));
    runner!(mvnw, "./mvnw test", Some(Build));
    runner!(gradle_check, "./gradlew :app:check", Some(Build));
    runner!(gradle_test_task, "gradle testDebugUnitTest", Some(Build));
    runner!(dotnet_test, "dotnet test", Some(Build));
    runner!(rspec, "bundle exec rspec spec/a_spec.rb", Some(Build));
    runner!(rake, "rake", Some(Build));
    runner!(ruby_test_file, "ruby -Itest test/calc_test.rb", Some(Named));
    runner!(phpunit, "vendor/bin/phpunit", Some(Build));
    runner!(artisan, "php artisan test", Some(Build));
    runner!(composer, "composer test", Some(Build));
    runner!(mix, "mix test", Some(Build));
    runner!(swift, "swift build", Some(Build));
    runner!(ctest, "ctest --output-on-failure", Some(Build));
    runner!(make_default, "make", Some(Build));
    runner!(make_test, "make -j4 test", Some(Build));
    runner!(make_clean, "make clean", None);
    runner!(ninja, "ninja -C build", Some(Build));
    runner!(cmake_build, "cmake --build build", Some(Build));
    runner!(cmake_configure, "cmake -S . -B build", None);
    runner!(test_script, "./test.sh", Some(Named));
    runner!(run_tests_script, "scripts/run-tests", Some(Named));
    runner!(check_script, "bash scripts/check.sh", Some(Named));
    runner!(echo, "echo cargo test", None);
    runner!(cat, "cat test_calc.py", None);
    runner!(ls, "ls tests", None);
}
