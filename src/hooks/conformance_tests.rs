//! The Claude Code hook configs and scripts in `../shared/conformance/hooks`
//! run unchanged under keel's hook runner and have their documented effect.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::*;

/// The hook corpus, or `None` (the test is skipped) in a clone without the
/// shared corpus: see `crate::shared_corpus`.
fn conformance_root() -> Option<PathBuf> {
    crate::shared_corpus::locate("conformance/hooks")
}

/// Lays the hook out as its installer would: the config's scripts under
/// `.claude/hooks/`, plus a copy beside the config.
fn install(root: &Path, hook: &str, project: &Path) -> HooksConfig {
    let folder = root.join(hook);
    std::fs::create_dir_all(project.join(".claude/hooks")).unwrap();
    for entry in std::fs::read_dir(&folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        std::fs::copy(&path, project.join(".claude/hooks").join(&name)).unwrap();
        std::fs::copy(&path, project.join(&name)).unwrap();
    }
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join(format!("{hook}.json"))).unwrap(),
    )
    .unwrap();
    let source = HookSource::User { name: format!("{hook}.json"), claude: true };
    HooksConfig::from_json(source, &config["hooks"]).unwrap()
}

fn keel_tool(claude: &str) -> &str {
    match claude {
        "Bash" => "shell",
        "Write" => "write_file",
        "Read" => "read_file",
        other => other,
    }
}

#[tokio::test]
async fn every_conformance_case_has_its_documented_effect() {
    let Some(root) = conformance_root() else { return };
    let cases = std::fs::read_to_string(root.join("cases.jsonl")).unwrap();
    let mut checked = 0;
    for line in cases.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).unwrap();
        let hook = case["hook"].as_str().unwrap();
        let note = case["note"].as_str().unwrap_or("");
        let project = tempfile::tempdir().unwrap();
        let config = install(&root, hook, project.path());
        // The loader reads ./AGENTS.md: lay down the text the case expects back.
        let expected_context =
            case["expected"]["hooks_run"][0]["stdout_json"]["hookSpecificOutput"]["additionalContext"].as_str();
        if let Some(text) = expected_context.filter(|text| !text.is_empty()) {
            std::fs::write(project.path().join("AGENTS.md"), text).unwrap();
        }
        let stdin = &case["stdin"];
        let event: HookEvent = serde_json::from_value(case["event"].clone()).unwrap();
        let claude_tool = stdin["tool_name"].as_str();
        let tool = claude_tool.map(keel_tool);
        let mut input = stdin["tool_input"].clone();
        if let Some(map) = input.as_object_mut() {
            if let Some(path) = map.remove("file_path") {
                map.insert("path".into(), path);
            }
        }
        let payload = HookPayload {
            session_id: stdin["session_id"].as_str().unwrap_or("s").into(),
            transcript_path: "transcript.jsonl".into(),
            cwd: project.path().display().to_string(),
            permission_mode: crate::protocol::ApprovalMode::Ask,
            tool_use_id: None,
            tool_name: tool.map(str::to_owned),
            tool_input: (!input.is_null()).then_some(input),
            tool_response: None,
            extra: match stdin.get("source") {
                Some(source) => [("source".to_owned(), source.clone())].into_iter().collect(),
                None => serde_json::Map::new(),
            },
            path_links: crate::policy::PathLinks::default(),
        };
        let subject = tool.or(stdin["source"].as_str()).or(Some("startup"));
        let bus = HookBus::new(vec![config], true);
        let (verdict, runs) =
            bus.dispatch(event, &payload, subject, project.path(), &CancellationToken::new()).await;
        let expected = &case["expected"];
        let context = format!("{hook}: {note}: {runs:?}");
        if let Some(hooks_run) = expected["hooks_run"].as_array() {
            assert_eq!(runs.len(), hooks_run.len(), "{context}");
        }
        let expects_block = expected["exit_code"] == 2
            || expected["stdout_json"]["hookSpecificOutput"]["permissionDecision"] == "deny"
            || expected["hooks_run"].as_array().is_some_and(|runs| {
                runs.iter()
                    .any(|r| r["stdout_json"]["hookSpecificOutput"]["permissionDecision"] == "deny")
            });
        let blocked = verdict.permission == Some(outcome_permission_deny());
        assert_eq!(blocked, expects_block, "{context}");
        if let Some(first) = expected["stderr_first_line"].as_str().filter(|_| expects_block) {
            assert!(verdict.reason().starts_with(first), "{context}: {}", verdict.reason());
        }
        if let Some(context_text) =
            expected["hooks_run"][0]["stdout_json"]["hookSpecificOutput"]["additionalContext"]
                .as_str()
        {
            let got = verdict.additional_context.join("");
            assert_eq!(got, context_text, "{context}");
        }
        checked += 1;
    }
    assert_eq!(checked, 19);
}

fn outcome_permission_deny() -> outcome::Permission {
    outcome::Permission::Deny
}

#[tokio::test]
async fn a_hook_past_its_timeout_is_killed_and_does_not_block() {
    let project = tempfile::tempdir().unwrap();
    let hooks = serde_json::json!({"PreToolUse": [{"matcher": "shell", "hooks": [
        {"type": "command", "command": "sleep 30 & echo $! > child.pid; sleep 30", "timeout": 1}
    ]}]});
    let config =
        HooksConfig::from_json(HookSource::User { name: "t".into(), claude: false }, &hooks)
            .unwrap();
    let payload = HookPayload { tool_name: Some("shell".into()), ..HookPayload::default() };
    let started = std::time::Instant::now();
    let (verdict, runs) = HookBus::new(vec![config], true)
        .dispatch(
            HookEvent::PreToolUse,
            &payload,
            Some("shell"),
            project.path(),
            &CancellationToken::new(),
        )
        .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(verdict.permission, None, "a hanging hook is a non-blocking error");
    assert!(runs[0].outcome.error.as_deref().unwrap_or("").contains("timed out"));
    let pid = std::fs::read_to_string(project.path().join("child.pid")).unwrap();
    let alive = Path::new(&format!("/proc/{}", pid.trim())).exists()
        && !std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
            .unwrap_or_default()
            .contains(") Z");
    assert!(!alive, "the hook's background child survived");
}

#[tokio::test]
async fn project_hooks_do_not_run_before_trust() {
    let project = tempfile::tempdir().unwrap();
    let hooks = serde_json::json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "touch ran"}]}]});
    let source = HookSource::Project { name: ".keel/config.toml".into(), claude: false };
    let config = HooksConfig::from_json(source, &hooks).unwrap();
    let payload = HookPayload { tool_name: Some("shell".into()), ..HookPayload::default() };
    let (_, runs) = HookBus::new(vec![config.clone()], false)
        .dispatch(
            HookEvent::PreToolUse,
            &payload,
            Some("shell"),
            project.path(),
            &CancellationToken::new(),
        )
        .await;
    assert!(runs[0].skipped.is_some());
    assert!(!project.path().join("ran").exists());
    HookBus::new(vec![config], true)
        .dispatch(
            HookEvent::PreToolUse,
            &payload,
            Some("shell"),
            project.path(),
            &CancellationToken::new(),
        )
        .await;
    assert!(project.path().join("ran").exists());
}
