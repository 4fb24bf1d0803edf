//! The tool runtime through the real binary: `keel apply-patch` exit
//! statuses and messages, and `keel tool shell` not leaking secrets.

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
