//! Issue 17 item 7, through the real binary: every `-c key=value` goes
//! through the same merged settings every reader uses (hooks and the
//! Claude import included), and unknown keys, unknown hook events and
//! out-of-range or empty values are errors that name what is valid, with
//! the line and a caret, for `-c` as for config files. The errors are
//! pinned whole (`transcript`): a changed word or a lost line fails.

use super::canary::stderr;
use super::support::{Model, Sandbox, scripted_model};
use super::transcript;
use super::wire::{Step, Wire};

/// `keel exec` with `-c` overrides against a model that answers at once.
async fn exec_with(sandbox: &Sandbox, set: &[&str]) -> std::process::Output {
    let server = scripted_model(Wire::Chat, &[Step::Answer("ok".into())]).await;
    let mut command = sandbox.keel_on(&Model::chat(&server), &["exec"]);
    for text in set {
        command.args(["-c", text]);
    }
    command.arg("go").output().unwrap()
}

/// The whole output of a run that must be a usage error (exit 2), for a
/// snapshot.
fn usage_error(output: &std::process::Output, sandbox: &Sandbox) -> String {
    assert_eq!(output.status.code(), Some(2), "{}", stderr(output));
    transcript::of(output, sandbox)
}

#[tokio::test]
async fn zero_steps_is_an_error_not_one_step() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["max_steps=0"]).await;
    insta::assert_snapshot!(usage_error(&output, &sandbox));
}

#[tokio::test]
async fn an_empty_model_is_an_error() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["model="]).await;
    insta::assert_snapshot!(usage_error(&output, &sandbox));
}

#[tokio::test]
async fn an_unknown_key_names_the_valid_ones() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["max_stpes=3"]).await;
    insta::assert_snapshot!("top_level_key", usage_error(&output, &sandbox));
    let output = exec_with(&sandbox, &["sandbox.mdoe=read-only"]).await;
    insta::assert_snapshot!("table_key", usage_error(&output, &sandbox));
}

#[tokio::test]
async fn an_unknown_hook_event_is_an_error_naming_the_events() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["hooks.anything=1"]).await;
    insta::assert_snapshot!(usage_error(&output, &sandbox));
}

#[tokio::test]
async fn out_of_range_values_name_the_range() {
    let sandbox = Sandbox::new();
    let mut all = String::new();
    for set in [
        "context.compact_threshold=0",
        "context.window=0",
        "idle_timeout_secs=0",
        "sandbox.mode=open",
        "provider=gemini",
    ] {
        let output = exec_with(&sandbox, &[set]).await;
        all += &format!("# -c {set}\n{}\n", usage_error(&output, &sandbox));
    }
    insta::assert_snapshot!(all);
}

#[tokio::test]
async fn a_bad_value_in_a_config_file_points_at_its_line() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.join("config.toml"), "model = \"m\"\n\nmax_steps = 0\n").unwrap();
    let output = exec_with(&sandbox, &[]).await;
    insta::assert_snapshot!(usage_error(&output, &sandbox));
}

#[tokio::test]
async fn hooks_given_with_c_run() {
    let sandbox = Sandbox::new();
    let marker = sandbox.repo.join("stop-ran");
    let hook = format!(
        "hooks.Stop=[{{hooks=[{{type=\"command\",command=\"touch {}\"}}]}}]",
        marker.display()
    );
    let output = exec_with(&sandbox, &[&hook]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(marker.exists(), "the -c hook did not run");
}

#[tokio::test]
async fn import_claude_hooks_given_with_c_imports() {
    let sandbox = Sandbox::new();
    let marker = sandbox.repo.join("claude-stop-ran");
    let claude_dir = sandbox.home.parent().unwrap().join(".claude");
    std::fs::create_dir_all(&claude_dir).unwrap();
    let settings = serde_json::json!({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": format!("touch {}", marker.display())}
    ]}]}});
    std::fs::write(claude_dir.join("settings.json"), settings.to_string()).unwrap();
    let output = exec_with(&sandbox, &[]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!marker.exists(), "not imported unless asked");
    let output = exec_with(&sandbox, &["import_claude_hooks=true"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(marker.exists(), "-c import_claude_hooks=true had no effect");
}
