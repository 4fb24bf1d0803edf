//! What a project's own `.keel/config.toml` may set. A cloned repository
//! is untrusted input: until the user runs `keel trust` its file applies
//! display preferences only (the `[context]` prices, which change what is
//! shown, not what keel does), and one warning names every other key it
//! set. Trusted, it applies, except the keys a project may never set: it
//! may not redirect the API key (`base_url`, `api_key_env`) or loosen
//! `[sandbox]`, `default_mode`, `[secrets]`, `[shell] env_keep`, `[undo]` or
//! `[security]` or `[telemetry]` (a collector of the project's choosing
//! would receive what the session does).
//! Of `[sandbox]` it may set `network` and `allowed_domains`, which only
//! narrow the user's: the stricter mode wins, and a host must be on both
//! lists (`config::resolve`, `policy::network`).

use std::path::Path;

use super::layers::{ConfigFile, ContextFile, ProjectNetwork, SandboxFile};

/// The keys (dotted; a table covers its keys) [`trusted_project`] takes
/// out of a trusted project's file, as `/config` names them
/// (`provenance.rs`); `sandbox.network` and `sandbox.allowed_domains`
/// stay, narrowing the user's. Keep in step with the function below.
pub(super) const PROJECT_MAY_NOT_SET: [&str; 8] = [
    "base_url",
    "api_key_env",
    "sandbox",
    "default_mode",
    "secrets",
    "shell.env_keep",
    "undo",
    "security",
];

/// Of `[sandbox]`, what a trusted project's file keeps (it only narrows).
pub(super) const PROJECT_SANDBOX_NARROWING: [&str; 2] =
    ["sandbox.network", "sandbox.allowed_domains"];

/// A trusted project's file minus what a project may never set.
pub(super) fn trusted_project(
    mut project: ConfigFile,
    path: &Path,
    keel_home: &Path,
    warnings: &mut Vec<String>,
) -> ConfigFile {
    let user_file = keel_home.join("config.toml");
    for (key, value) in
        [("base_url", project.base_url.take()), ("api_key_env", project.api_key_env.take())]
    {
        if value.is_some() {
            warnings.push(format!(
                "ignored `{key}` in {}: a project may not redirect API keys; set it in {} or pass a flag",
                path.display(),
                user_file.display()
            ));
        }
    }
    let env_keep = project.shell.as_mut().and_then(|shell| shell.env_keep.take());
    let sandbox = project.sandbox.take();
    let narrowing = sandbox.as_ref().map(|sandbox| ProjectNetwork {
        network: sandbox.network,
        allowed_domains: sandbox.allowed_domains.clone(),
    });
    let loosening = sandbox.is_some_and(|sandbox| {
        SandboxFile { network: None, allowed_domains: None, ..sandbox } != SandboxFile::default()
    });
    if let Some(narrowing) = narrowing.filter(|n| n != &ProjectNetwork::default()) {
        project.sandbox =
            Some(SandboxFile { narrowed_by: Some(narrowing), ..SandboxFile::default() });
    }
    for (table, present) in [
        ("[sandbox] (but network and allowed_domains, which only narrow)", loosening),
        ("default_mode", project.default_mode.take().is_some()),
        ("import_setup", project.import_setup.take().is_some()),
        ("[secrets]", project.secrets.take().is_some()),
        ("[shell] env_keep", env_keep.is_some()),
        ("[undo]", project.undo.take().is_some()),
        ("[security]", project.security.take().is_some()),
        ("[telemetry]", project.telemetry.take().is_some()),
    ] {
        if present {
            warnings.push(format!(
                "ignored `{table}` in {}: a project may not loosen it; set it in {}",
                path.display(),
                user_file.display()
            ));
        }
    }
    project
}

/// What an untrusted project's file may set: display preferences only
/// (the `[context]` prices). One warning names everything else it set.
pub(super) fn untrusted_project(
    project: ConfigFile,
    path: &Path,
    warnings: &mut Vec<String>,
) -> ConfigFile {
    let ignored = set_keys(&project);
    if !ignored.is_empty() {
        warnings.push(format!(
            "{} is not trusted, so these settings in it are ignored until you run `keel trust`: \
             {}",
            path.display(),
            ignored.join(", ")
        ));
    }
    let context = project.context.map(|context| ContextFile {
        input_price: context.input_price,
        cached_input_price: context.cached_input_price,
        output_price: context.output_price,
        cache_write_price: context.cache_write_price,
        ..ContextFile::default()
    });
    ConfigFile { context, ..ConfigFile::default() }
}

/// The keys `file` sets that change behaviour, as a user would write them.
fn set_keys(file: &ConfigFile) -> Vec<String> {
    let ConfigFile {
        provider,
        model,
        base_url,
        api_key_env,
        max_steps,
        max_retries,
        idle_timeout_secs,
        request_timeout_secs,
        default_mode,
        hooks,
        import_claude_hooks,
        import_setup,
        sandbox,
        verify,
        secrets,
        shell,
        context,
        // Taken before this (`read_layers`): a project's limits only
        // tighten, so they apply trusted or not.
        limits: _,
        mcp_servers,
        undo,
        agents,
        tools,
        security,
        tui,
        telemetry,
    } = file;
    let mut keys: Vec<String> = [
        ("provider", provider.is_some()),
        ("model", model.is_some()),
        ("base_url", base_url.is_some()),
        ("api_key_env", api_key_env.is_some()),
        ("max_steps", max_steps.is_some()),
        ("max_retries", max_retries.is_some()),
        ("idle_timeout_secs", idle_timeout_secs.is_some()),
        ("request_timeout_secs", request_timeout_secs.is_some()),
        ("default_mode", default_mode.is_some()),
        ("hooks", hooks.is_some()),
        ("import_claude_hooks", import_claude_hooks.is_some()),
        ("import_setup", import_setup.is_some()),
        ("[sandbox]", sandbox.is_some()),
        ("[verify]", verify.is_some()),
        ("[secrets]", secrets.is_some()),
        ("[shell]", shell.is_some()),
        ("[mcp_servers]", mcp_servers.is_some()),
        ("[undo]", undo.is_some()),
        ("[agents]", agents.is_some()),
        ("[tools]", tools.is_some()),
        ("[security]", security.is_some()),
        ("[tui]", tui.is_some()),
        ("[telemetry]", telemetry.is_some()),
    ]
    .into_iter()
    .filter(|(_, set)| *set)
    .map(|(key, _)| key.to_owned())
    .collect();
    if let Some(context) = context {
        for (key, set) in [
            ("[context] window", context.window.is_some()),
            ("[context] compact_threshold", context.compact_threshold.is_some()),
        ] {
            if set {
                keys.push(key.to_owned());
            }
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::network::NetworkMode;

    fn project(sandbox: &str) -> ConfigFile {
        toml::from_str(&format!("[sandbox]\n{sandbox}")).unwrap()
    }

    #[test]
    fn a_trusted_project_keeps_only_its_network_narrowing() {
        let mut warnings = Vec::new();
        let file = project(
            "network = \"off\"\nallowed_domains = [\"a.example.test\"]\nmode = \"full-access\"",
        );
        let kept = trusted_project(file, Path::new("p"), Path::new("h"), &mut warnings);
        let sandbox = kept.sandbox.unwrap();
        assert_eq!(sandbox.mode, None, "a project may not loosen the mode");
        assert_eq!(sandbox.network, None, "the project's network only narrows");
        let narrowing = sandbox.narrowed_by.unwrap();
        assert_eq!(narrowing.network, Some(NetworkMode::Off));
        assert_eq!(narrowing.allowed_domains, Some(vec!["a.example.test".to_owned()]));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        let mut quiet = Vec::new();
        trusted_project(project("network = \"on\""), Path::new("p"), Path::new("h"), &mut quiet);
        assert!(quiet.is_empty(), "{quiet:?}");
    }

    #[test]
    fn no_project_may_set_telemetry_trusted_or_not() {
        let text = "[telemetry]\nenabled = true\nendpoint = \"http://collector.example.invalid\"\n\
                    log_prompts = true\n";
        let mut warnings = Vec::new();
        let file: ConfigFile = toml::from_str(text).unwrap();
        let kept = trusted_project(file, Path::new("p"), Path::new("h"), &mut warnings);
        assert_eq!(kept.telemetry, None, "a trusted project's [telemetry] is dropped");
        assert!(warnings.iter().any(|w| w.contains("[telemetry]")), "{warnings:?}");
        let mut warnings = Vec::new();
        untrusted_project(toml::from_str(text).unwrap(), Path::new("p"), &mut warnings);
        assert!(warnings.iter().any(|w| w.contains("[telemetry]")), "{warnings:?}");
    }
}
