//! The tool runtime through the real binary: `keel apply-patch` exit
//! statuses and messages, `keel tool shell` not leaking secrets, and `keel
//! tool` judging calls by policy in its `--mode`.

use serde_json::Value;

use super::support::Sandbox;

const PATCH: &str = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+uno\n\
*** Add File: sub/b.txt\n+new\n*** End Patch\n";

#[test]
fn apply_patch_applies_in_the_current_folder() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "one\ntwo\n");
    let out = sandbox.keel().args(["apply-patch", PATCH]).assert().success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert_eq!(stdout, "Success. Updated the following files:\nM a.txt\nA sub/b.txt\n");
    assert_eq!(sandbox.read("a.txt"), "uno\ntwo\n");
    assert_eq!(sandbox.read("sub/b.txt"), "new\n");
}

#[test]
fn apply_patch_reads_stdin_and_fails_with_status_1() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "two\n");
    let out = sandbox.keel().args(["apply-patch", "-"]).write_stdin(PATCH).assert().code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("operation 1 of the patch failed"), "{stderr}");
    assert!(stderr.contains("-one") || stderr.contains("one"), "{stderr}");
    assert!(stderr.contains("nothing was changed"), "{stderr}");
    assert_eq!(sandbox.read("a.txt"), "two\n");
    let garbage = sandbox.keel().args(["apply-patch", "hello"]).assert().code(1);
    let stderr = String::from_utf8_lossy(&garbage.get_output().stderr).into_owned();
    assert!(stderr.contains("*** Begin Patch"), "{stderr}");
}

#[test]
fn shell_children_do_not_see_secrets() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .keel()
        .env("OPENAI_API_KEY", "sk-leak")
        .env("GITHUB_TOKEN", "ghp-leak")
        .env("DB_PASSWORD", "hunter2")
        .env("KEEL_HARMLESS", "visible")
        .args(["tool", "shell", r#"{"command":"env"}"#])
        .assert()
        .success();
    let envelope: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let output = envelope["output"].as_str().unwrap_or_default();
    assert!(output.contains("KEEL_HARMLESS=visible"), "{output}");
    for secret in ["sk-leak", "ghp-leak", "hunter2"] {
        assert!(!output.contains(secret), "{secret} leaked: {output}");
    }
    assert!(envelope["meta"]["duration_ms"].is_u64(), "{envelope}");
}

/// Runs `keel tool ARGS…` and returns its exit code and envelope.
fn tool(sandbox: &Sandbox, args: &[&str]) -> (Option<i32>, Value) {
    let out = sandbox.keel().arg("tool").args(args).output().unwrap();
    let envelope = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), envelope)
}

#[test]
fn keel_tool_refuses_a_forbidden_command_with_the_rules_justification() {
    let sandbox = Sandbox::new();
    std::fs::create_dir_all(sandbox.home.join("rules")).unwrap();
    std::fs::write(
        sandbox.home.join("rules/team.rules"),
        "prefix_rule(pattern=[\"git\", \"push\", \"--force\"], decision=\"forbidden\", \
         justification=\"force pushes rewrite shared history\")\n",
    )
    .unwrap();
    let command = r#"{"command":"git push --force origin main"}"#;
    for mode in ["ask", "yolo"] {
        let (code, envelope) = tool(&sandbox, &["shell", command, "--mode", mode, "--yes"]);
        assert_eq!(code, Some(1), "{envelope}");
        let error = envelope["error"].as_str().unwrap();
        assert!(error.contains("force pushes rewrite shared history"), "{mode}: {error}");
        assert_eq!(envelope["meta"]["kind"], "denied");
        assert_eq!(envelope["meta"]["decision"], "forbidden");
        let rules = envelope["meta"]["matched_rules"].as_array().unwrap();
        assert!(rules.iter().any(|r| r["source"].as_str().unwrap().contains("team.rules")));
    }
}

#[test]
fn keel_tool_runs_read_only_calls_and_refuses_what_needs_approval_without_yes() {
    let sandbox = Sandbox::new();
    sandbox.write("a.txt", "hello\n");
    let (code, envelope) = tool(&sandbox, &["shell", r#"{"command":"cat a.txt"}"#]);
    assert_eq!(code, Some(0), "{envelope}");
    assert!(envelope["output"].as_str().unwrap().contains("hello"));
    let write = r#"{"path":"b.txt","content":"x"}"#;
    let (code, envelope) = tool(&sandbox, &["write_file", write]);
    assert_eq!(code, Some(1), "{envelope}");
    assert!(envelope["error"].as_str().unwrap().contains("--yes"), "{envelope}");
    assert!(!sandbox.repo.join("b.txt").exists());
    let (code, envelope) = tool(&sandbox, &["write_file", write, "--mode", "plan", "--yes"]);
    assert_eq!((code, envelope["meta"]["decision"].as_str()), (Some(1), Some("forbidden")));
    let (code, _) = tool(&sandbox, &["write_file", write, "--mode", "auto"]);
    assert_eq!(code, Some(0));
    assert_eq!(sandbox.read("b.txt"), "x");
}

#[test]
fn the_stripped_environment_is_configured_by_the_user_only() {
    let sandbox = Sandbox::new();
    std::fs::write(
        sandbox.home.join("config.toml"),
        "[shell]\nenv_strip = [\"CORP_*\"]\nenv_keep = [\"GH_TOKEN\"]\n",
    )
    .unwrap();
    // A (trusted) project may strip more, never pass a secret through.
    sandbox.write(
        ".keel/config.toml",
        "[shell]\nenv_strip = [\"PROJECT_STRIPPED\"]\nenv_keep = [\"*\"]\n",
    );
    assert!(sandbox.keel().arg("trust").output().unwrap().status.success());
    let out = sandbox
        .keel()
        .env("GH_TOKEN", "gh-kept")
        .env("GITHUB_TOKEN", "ghp-leak")
        .env("CORP_SSO", "corp-leak")
        .env("PROJECT_STRIPPED", "project-leak")
        .env("KEEL_HARMLESS", "visible")
        .args(["tool", "shell", r#"{"command":"env"}"#])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[shell] env_keep"), "the ignored key is said: {stderr}");
    let envelope: Value = serde_json::from_slice(&out.stdout).unwrap();
    let output = envelope["output"].as_str().unwrap_or_default();
    assert!(output.contains("GH_TOKEN=gh-kept"), "env_keep passes it: {output}");
    assert!(output.contains("KEEL_HARMLESS=visible"), "{output}");
    for secret in ["ghp-leak", "corp-leak", "project-leak"] {
        assert!(!output.contains(secret), "{secret} leaked: {output}");
    }
}
