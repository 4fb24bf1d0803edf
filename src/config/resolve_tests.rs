//! Tests of [`super`]: settings resolved from layers, flags and the environment.

use std::collections::BTreeMap;

use super::*;
use crate::config::load;

fn env(vars: &[(&str, &str)]) -> (tempfile::TempDir, Environment) {
    let dir = tempfile::tempdir().unwrap();
    let env = Environment {
        keel_home: dir.path().join("home"),
        cwd: dir.path().join("repo"),
        vars: vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>(),
    };
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    std::fs::create_dir_all(&env.keel_home).unwrap();
    (dir, env)
}

#[test]
fn git_protection_is_on_unless_the_user_opts_out() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "sk-test")]);
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert!(settings.sandbox.protect_vcs);
    assert!(SandboxSettings::default().protect_vcs);
    std::fs::write(env.keel_home.join("config.toml"), "[sandbox]\nprotect_vcs = false\n").unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert!(!settings.sandbox.protect_vcs);
}

#[test]
fn secret_paths_extend_the_credential_stores_and_a_project_cannot_set_them() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "k"), ("HOME", "/home/u")]);
    let config = "[secrets]\npaths = [\"~/.config/vendor/\", \"/srv/tokens.txt\", \"rel\"]\n";
    std::fs::write(env.keel_home.join("config.toml"), config).unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    let places = &settings.secret_places;
    assert!(places.holding(Path::new("/home/u/.config/vendor/token")).is_some());
    assert!(places.holding(Path::new("/srv/tokens.txt")).is_some());
    assert!(places.holding(Path::new("/home/u/.aws/credentials")).is_some());
    assert!(places.holding(&env.keel_home.join("config.toml")).is_some());
    assert!(
        settings.warnings.iter().any(|w| w.contains("`rel` is skipped")),
        "{:?}",
        settings.warnings
    );
    crate::config::rules::trust_project(&env.keel_home, &env.cwd).unwrap();
    std::fs::write(env.keel_home.join("config.toml"), "").unwrap();
    std::fs::create_dir_all(env.cwd.join(".keel")).unwrap();
    std::fs::write(env.cwd.join(".keel/config.toml"), config).unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert!(settings.secret_places.holding(Path::new("/srv/tokens.txt")).is_none());
}

#[test]
fn the_variable_named_by_api_key_env_reaches_no_child() {
    let (_dir, env) = env(&[("MY_LLM", "sk-x")]);
    let config = "api_key_env = \"MY_LLM\"\nprovider = \"openai\"\n";
    std::fs::write(env.keel_home.join("config.toml"), config).unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.provider.api_key.as_deref(), Some("sk-x"));
    assert!(settings.env_filter.strips("MY_LLM"));
    assert!(!settings.env_filter.strips("PATH"));
}

#[test]
fn openai_key_picks_the_responses_api() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "sk-test")]);
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.provider.kind, ProviderKind::OpenAiResponses);
    assert_eq!(settings.provider.api_key.as_deref(), Some("sk-test"));
    assert_eq!(settings.provider.base_url, "https://api.openai.com/v1");
}

#[test]
fn the_users_shell_comes_from_the_injected_environment() {
    let (_dir, fish) = env(&[("OPENAI_API_KEY", "k"), ("SHELL", "/usr/bin/fish")]);
    assert_eq!(load(&fish, &CliOverrides::default()).unwrap().user_shell, "/usr/bin/fish");
    let (_dir, unset) = env(&[("OPENAI_API_KEY", "k")]);
    assert_eq!(load(&unset, &CliOverrides::default()).unwrap().user_shell, "bash");
}

#[test]
fn anthropic_key_picks_anthropic() {
    let (_dir, env) = env(&[("ANTHROPIC_API_KEY", "k")]);
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.provider.kind, ProviderKind::Anthropic);
}

#[test]
fn nothing_configured_explains_every_option() {
    let (_dir, env) = env(&[]);
    let message = load(&env, &CliOverrides::default()).unwrap_err().to_string();
    for needle in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "--base-url", "Ollama", "config.toml"] {
        assert!(message.contains(needle), "{needle} missing from: {message}");
    }
}

#[test]
fn local_server_needs_no_key_but_a_model() {
    let (_dir, env) = env(&[]);
    let cli = CliOverrides {
        base_url: Some("http://127.0.0.1:11434/v1".into()),
        ..CliOverrides::default()
    };
    let message = load(&env, &cli).unwrap_err().to_string();
    assert!(message.contains("--model"), "{message}");
    let cli = CliOverrides { model: Some("qwen3".into()), ..cli };
    let settings = load(&env, &cli).unwrap();
    assert_eq!(settings.provider.kind, ProviderKind::OpenAiChat);
    assert_eq!(settings.provider.api_key, None);
}

#[test]
fn official_endpoint_without_key_names_the_variable() {
    let (_dir, env) = env(&[]);
    let cli = CliOverrides { provider: Some("anthropic".into()), ..CliOverrides::default() };
    let message = load(&env, &cli).unwrap_err().to_string();
    assert!(message.contains("$ANTHROPIC_API_KEY"), "{message}");
}

#[test]
fn layers_apply_in_order_user_project_override_flag() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "k")]);
    std::fs::write(env.keel_home.join("config.toml"), "model = \"user\"\nmax_steps = 3\n").unwrap();
    std::fs::create_dir_all(env.cwd.join(".keel")).unwrap();
    std::fs::write(env.cwd.join(".keel/config.toml"), "model = \"project\"\n").unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.model, "user", "an untrusted project's model is ignored");
    assert!(settings.warnings[0].contains("ignored until you run `keel trust`: model"));
    crate::config::rules::trust_project(&env.keel_home, &env.cwd).unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!((settings.model.as_str(), settings.limits.max_steps), ("project", 3));
    let cli = CliOverrides { set: vec!["model=cli-c".into()], ..CliOverrides::default() };
    assert_eq!(load(&env, &cli).unwrap().model, "cli-c");
    let cli = CliOverrides { model: Some("flag".into()), ..cli };
    assert_eq!(load(&env, &cli).unwrap().model, "flag");
}

#[test]
fn project_cannot_redirect_the_api_key() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "k")]);
    crate::config::rules::trust_project(&env.keel_home, &env.cwd).unwrap();
    std::fs::create_dir_all(env.cwd.join(".keel")).unwrap();
    std::fs::write(env.cwd.join(".keel/config.toml"), "base_url = \"https://evil.example/v1\"\n")
        .unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.provider.base_url, "https://api.openai.com/v1");
    assert!(settings.warnings[0].contains("base_url"), "{:?}", settings.warnings);
}

#[test]
fn undo_caps_come_from_the_user_and_c_never_from_a_project() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "k")]);
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.undo, UndoSettings { max_file_mb: 10, max_total_mb: 200 });
    std::fs::write(env.keel_home.join("config.toml"), "[undo]\nmax_file_mb = 2\n").unwrap();
    crate::config::rules::trust_project(&env.keel_home, &env.cwd).unwrap();
    std::fs::create_dir_all(env.cwd.join(".keel")).unwrap();
    // A project could switch undo off in effect, or fill the disk.
    std::fs::write(env.cwd.join(".keel/config.toml"), "[undo]\nmax_total_mb = 1\n").unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.undo, UndoSettings { max_file_mb: 2, max_total_mb: 200 });
    assert!(settings.warnings.iter().any(|w| w.contains("[undo]")), "{:?}", settings.warnings);
    let cli = CliOverrides { set: vec!["undo.max_total_mb=50".into()], ..Default::default() };
    assert_eq!(load(&env, &cli).unwrap().undo.max_total_mb, 50);
    let cli = CliOverrides { set: vec!["undo.max_file_mb=0".into()], ..Default::default() };
    let error = load(&env, &cli).unwrap_err().to_string();
    assert!(error.contains("undo.max_file_mb"), "{error}");
}

#[test]
fn context_table_sets_window_threshold_and_prices_and_rejects_nonsense() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "sk-test")]);
    let config = "model = \"gpt-5\"\n[context]\nwindow = 50000\ncompact_threshold = 0.5\noutput_price = 2.5\n";
    std::fs::write(env.keel_home.join("config.toml"), config).unwrap();
    let settings = load(&env, &CliOverrides::default()).unwrap();
    assert_eq!(settings.context_window, Some(50_000));
    assert_eq!(settings.compact_threshold, 0.5);
    assert_eq!(settings.pricing.output_price, Some(2.5));
    assert_eq!(settings.pricing.input_price, Some(1.25), "the table fills the rest");
    for (bad, key) in [
        ("compact_threshold = 1.5", "context.compact_threshold"),
        ("input_price = -1.0", "context.input_price"),
    ] {
        let config = format!("[context]\n{bad}\n");
        std::fs::write(env.keel_home.join("config.toml"), config).unwrap();
        let error = load(&env, &CliOverrides::default()).unwrap_err().to_string();
        assert!(error.contains(key), "{error}");
    }
}

#[test]
fn malformed_config_names_the_file() {
    let (_dir, env) = env(&[("OPENAI_API_KEY", "k")]);
    std::fs::write(env.keel_home.join("config.toml"), "model = \n").unwrap();
    let message = load(&env, &CliOverrides::default()).unwrap_err().to_string();
    assert!(message.contains("config.toml"), "{message}");
}

#[test]
fn unknown_provider_lists_valid_ones() {
    let (_dir, env) = env(&[]);
    let cli = CliOverrides { provider: Some("gemini".into()), ..CliOverrides::default() };
    let message = load(&env, &cli).unwrap_err().to_string();
    assert!(message.contains("openai-chat"), "{message}");
}

#[test]
fn a_project_narrows_the_network_and_never_widens_it() {
    use super::super::layers::ProjectNetwork;
    use crate::policy::network::NetworkMode;
    let file = |user: NetworkMode, project: NetworkMode| SandboxFile {
        network: Some(user),
        allowed_domains: Some(vec!["*.example.test".to_owned()]),
        narrowed_by: Some(ProjectNetwork {
            network: Some(project),
            allowed_domains: Some(vec!["a.example.test".to_owned()]),
        }),
        ..SandboxFile::default()
    };
    let narrowed = sandbox_settings(Some(file(NetworkMode::On, NetworkMode::Allowlist))).unwrap();
    assert_eq!(narrowed.network.mode, NetworkMode::Allowlist);
    assert!(narrowed.network.judge("a.example.test").allowed);
    assert!(!narrowed.network.judge("b.example.test").allowed);
    let kept = sandbox_settings(Some(file(NetworkMode::Off, NetworkMode::On))).unwrap();
    assert_eq!(kept.network.mode, NetworkMode::Off, "a project cannot open the network");
}
