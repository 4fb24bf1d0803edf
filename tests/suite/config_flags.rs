//! Issue 17 item 7, through the real binary: every `-c key=value` goes
//! through the same merged settings every reader uses (hooks and the
//! Claude import included), and unknown keys, unknown hook events and
//! out-of-range or empty values are errors that name what is valid, with
//! the line and a caret, for `-c` as for config files.

use super::canary::stderr;
use super::support::{Model, Sandbox, scripted_model};
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

fn assert_usage_error(output: &std::process::Output, needles: &[&str]) {
    let text = stderr(output);
    assert_eq!(output.status.code(), Some(2), "{text}");
    for needle in needles {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
}

#[tokio::test]
async fn zero_steps_is_an_error_not_one_step() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["max_steps=0"]).await;
    assert_usage_error(&output, &["-c max_steps=0", "max_steps must be 1 or more", "^"]);
}

#[tokio::test]
async fn an_empty_model_is_an_error() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["model="]).await;
    assert_usage_error(&output, &["-c model=", "model must be a model name"]);
}

#[tokio::test]
async fn an_unknown_key_names_the_valid_ones() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["max_stpes=3"]).await;
    assert_usage_error(&output, &["unknown field `max_stpes`", "`max_steps`", "`model`"]);
    let output = exec_with(&sandbox, &["sandbox.mdoe=read-only"]).await;
    assert_usage_error(&output, &["unknown field `mdoe`", "`mode`"]);
}

#[tokio::test]
async fn an_unknown_hook_event_is_an_error_naming_the_events() {
    let sandbox = Sandbox::new();
    let output = exec_with(&sandbox, &["hooks.anything=1"]).await;
    assert_usage_error(
        &output,
        &["unknown hook event `anything`", "SessionStart", "PreToolUse", "Stop"],
    );
}

#[tokio::test]
async fn out_of_range_values_name_the_range() {
    let sandbox = Sandbox::new();
    for (set, needle) in [
        ("context.compact_threshold=0", "from 0.1 to 1.0"),
        ("context.window=0", "context.window must be 1 or more"),
        ("idle_timeout_secs=0", "idle_timeout_secs must be 1 or more"),
        ("sandbox.mode=open", "read-only, workspace-write, full-access"),
        ("provider=gemini", "openai, openai-chat, anthropic"),
    ] {
        let output = exec_with(&sandbox, &[set]).await;
        assert_usage_error(&output, &[needle]);
    }
}

#[tokio::test]
async fn a_bad_value_in_a_config_file_points_at_its_line() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.home.join("config.toml"), "model = \"m\"\n\nmax_steps = 0\n").unwrap();
    let output = exec_with(&sandbox, &[]).await;
    assert_usage_error(
        &output,
        &["config.toml:3:13: ", "max_steps = 0", "^", "max_steps must be 1 or more"],
    );
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
