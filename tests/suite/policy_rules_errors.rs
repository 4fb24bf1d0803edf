//! Issue 14: a rules or config file keel cannot use says exactly where and
//! why, through the real binary: 30 000 nested `[` in a cloned project's
//! rules file is an error, not a stack overflow at start; a rule error
//! points at the argument's line and column, also in a file with lone-CR
//! line ends; a config error is `file:line:column`; an OS error is said
//! once.

use super::support::{Model, Sandbox, json_lines};

fn policy_check(sandbox: &Sandbox) -> (Option<i32>, String) {
    let output = sandbox.keel().args(["policy", "check", "--", "ls"]).output().unwrap();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn deeply_nested_lists_are_an_error_not_a_crash_at_start() {
    let sandbox = Sandbox::new();
    let deep = format!("prefix_rule(pattern = {}\n", "[".repeat(30_000));
    sandbox.write(".keel/rules/deep.rules", &deep);
    let (code, stderr) = policy_check(&sandbox);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("deep.rules:1:"), "{stderr}");
    assert!(stderr.contains("nested more than 32 deep"), "{stderr}");
    // `keel exec` reads the same rules at start: its result line says why.
    let output =
        sandbox.run(&Model::at("openai-chat", "http://127.0.0.1:9"), &["exec", "--json", "hi"]);
    assert_eq!(output.status.code(), Some(2));
    let result = json_lines(&output.stdout).pop().unwrap();
    assert!(result["error"].as_str().unwrap().contains("nested more than 32 deep"), "{result}");
}

/// `keel trust` in a repository whose rules file is broken says at once
/// that keel still will not start there, and the error stops claiming the
/// file was "read before trust" once it is trusted (before: "trusted …:
/// its rules' allows … now apply", then the same start error as before).
#[test]
fn trust_with_a_broken_rules_file_says_keel_will_not_start() {
    let sandbox = Sandbox::new();
    sandbox.write(".keel/rules/x.rules", "prefix_rule(pattern=[\"echo\"], decision=\"alow\")\n");
    let output = sandbox.keel().arg("trust").output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("warning: keel will not start here yet: "), "{stderr}");
    assert!(stderr.contains("x.rules:1:") && stderr.contains("unknown decision"), "{stderr}");
    let (code, stderr) = policy_check(&sandbox);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("fix or remove") && !stderr.contains("before trust"), "{stderr}");
}

#[test]
fn a_rule_error_points_at_its_argument_whatever_the_line_ends() {
    for end in ["\n", "\r\n", "\r"] {
        let sandbox = Sandbox::new();
        let text = format!(
            "# mine{end}prefix_rule({end}    pattern = [\"ls\"],{end}    decision = \"nope\",{end}){end}"
        );
        sandbox.write(".keel/rules/mine.rules", &text);
        let (code, stderr) = policy_check(&sandbox);
        assert_eq!(code, Some(2), "{end:?}: {stderr}");
        assert!(
            stderr.contains("mine.rules:4:5: invalid rule: unknown decision"),
            "{end:?}: {stderr}"
        );
    }
}

#[test]
fn config_errors_are_file_line_column_and_os_errors_are_said_once() {
    let sandbox = Sandbox::new();
    let exec = |sandbox: &Sandbox| {
        let output = sandbox.run(&Model::at("openai-chat", "http://127.0.0.1:9"), &["exec", "hi"]);
        (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    // Old Mac line ends: TOML refuses them, at the first one.
    std::fs::write(sandbox.home.join("config.toml"), "model = \"m\"\rmax_steps = 3\r").unwrap();
    let (code, stderr) = exec(&sandbox);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("config.toml:1:12: invalid config file: carriage return"), "{stderr}");
    std::fs::write(sandbox.home.join("config.toml"), "model = \"m\"\r\nmax_steps = \"x\"\r\n")
        .unwrap();
    let (_, stderr) = exec(&sandbox);
    assert!(stderr.contains("config.toml:2:13: invalid config file: invalid type"), "{stderr}");

    std::fs::remove_file(sandbox.home.join("config.toml")).unwrap();
    std::fs::create_dir(sandbox.home.join("config.toml")).unwrap();
    let (code, stderr) = exec(&sandbox);
    assert_eq!(code, Some(2), "{stderr}");
    assert_eq!(stderr.matches("os error 21").count(), 1, "{stderr}");
}
