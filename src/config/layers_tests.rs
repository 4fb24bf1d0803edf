//! Tests of [`super`]: config files read, merged and their errors worded.

use super::*;

fn parse_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).unwrap();
    let error = read_file(&path).map(|_| ()).unwrap_err().to_string();
    error.replace(&path.display().to_string(), "config.toml")
}

#[test]
fn config_errors_name_file_line_and_column_whatever_the_line_ends() {
    for end in ["\n", "\r\n"] {
        let error = parse_error(&format!("model = \"m\"{end}max_steps = \"x\"{end}"));
        assert!(
            error.starts_with("config.toml:2:13: invalid config file: invalid type"),
            "{error}"
        );
    }
    // TOML has no lone-CR line ends: the error says so, on the line
    // and column an editor shows.
    let error = parse_error("model = \"m\"\rmax_steps = 5\r");
    assert!(error.starts_with("config.toml:1:12: invalid config file: carriage return"), "{error}");
    let error = parse_error("# ok\r\nmodel = \"m\"\rmax_steps = 5\r");
    assert!(error.starts_with("config.toml:2:12: "), "{error}");
    // The picture shows that line alone, the caret under the CR.
    assert!(error.ends_with("\n  |\n2 | model = \"m\"\n  |            ^"), "{error}");
    let error = parse_error("name = \"caf\u{e9}\" x\n");
    assert!(error.starts_with("config.toml:1:15: "), "{error}");
}

#[test]
fn overrides_take_toml_or_bare_strings() {
    let parsed = parse_override("max_steps=7").unwrap();
    assert_eq!(parsed.max_steps, Some(7));
    let parsed = parse_override("model=gpt-5.1-codex").unwrap();
    assert_eq!(parsed.model.as_deref(), Some("gpt-5.1-codex"));
    let parsed = parse_override("model=123").unwrap();
    assert_eq!(parsed.model.as_deref(), Some("123"), "a number can be a model name");
    let parsed = parse_override("shell.max_parallel=3").unwrap();
    assert_eq!(parsed.shell.and_then(|shell| shell.max_parallel), Some(3));
    let parsed = parse_override("tools.edit=apply_patch").unwrap();
    assert_eq!(
        parsed.tools.and_then(|tools| tools.edit),
        Some(super::super::EditTools::ApplyPatch)
    );
}

#[test]
fn out_of_range_and_empty_values_are_errors_with_a_caret() {
    for (text, needle) in [
        ("max_steps=0", "max_steps must be 1 or more"),
        ("model=", "model must be a model name"),
        ("idle_timeout_secs=0", "idle_timeout_secs must be 1 or more"),
        ("context.window=0", "context.window must be 1 or more"),
        ("shell.max_parallel=0", "shell.max_parallel must be 1 or more"),
        ("context.compact_threshold=2", "from 0.1 to 1.0"),
        ("provider=gemini", "use one of: openai, openai-chat, anthropic"),
        ("sandbox.mode=open", "use one of: read-only, workspace-write, full-access"),
        ("sandbox.network=wide", "sandbox.network is \"wide\"; it must be one of \"off\""),
        ("sandbox.allowed_domains=[\"a.*.org\"]", "a wildcard is only allowed as a leading"),
        ("sandbox.allowed_domains=[\"10.0.0.1\"]", "is an IP address"),
        ("sandbox.host_ports=[0]", "port numbers from 1 to 65535"),
        ("sandbox.hosts={\"a.example.test\"=\"nowhere\"}", "not an IP address"),
        ("hooks.anything=1", "unknown hook event `anything`; use one of: SessionStart"),
        ("api_key_env=\"$X\"", "environment variable name"),
        ("tools.edit=patch", "tools.edit is \"patch\"; it must be one of \"auto\", \"edit_file\""),
    ] {
        let error = parse_override(text).unwrap_err().to_string();
        assert!(error.contains(needle), "{text}: {error}");
        assert!(error.contains('^'), "{text}: no caret in {error}");
    }
}

#[test]
fn network_takes_a_mode_or_the_old_flag() {
    use crate::policy::network::NetworkMode;
    for (text, mode) in [
        ("sandbox.network=allowlist", NetworkMode::Allowlist),
        ("sandbox.network=true", NetworkMode::On),
        ("sandbox.network=false", NetworkMode::Off),
    ] {
        let parsed = parse_override(text).unwrap();
        assert_eq!(parsed.sandbox.and_then(|sandbox| sandbox.network), Some(mode), "{text}");
    }
}

#[test]
fn unknown_override_key_is_named() {
    let error = parse_override("modle=x").unwrap_err().to_string();
    assert!(error.contains("modle"), "{error}");
}

#[test]
fn override_without_equals_is_rejected() {
    assert!(matches!(parse_override("model"), Err(ConfigError::BadOverride { .. })));
    // Plain words for serde's type names, and no blank line at the end.
    let error = parse_override("max_steps=abc").map(|_| ()).unwrap_err().to_string();
    assert!(error.ends_with("expected a whole number"), "{error:?}");
    let error = parse_override("undo.enabled=7").map(|_| ()).unwrap_err().to_string();
    assert!(!error.contains("expected u") && !error.ends_with('\n'), "{error:?}");
}

#[test]
fn workspace_root_is_the_enclosing_git_repo() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
    assert_eq!(find_workspace_root(&dir.path().join("a/b")), dir.path());
}
