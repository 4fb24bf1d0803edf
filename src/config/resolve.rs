//! Turns merged configuration, flags and environment into [`Settings`].
//! Pure: reads nothing but its arguments.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::agent::{Limits, SpendLimits};
use crate::context::Pricing;
use crate::hooks::{HooksConfig, NativeHook, ProtectSecrets};
use crate::llm::{
    CacheTtl, KeyHeader, ProfileSettings, ProviderConfig, ProviderKind, ReasoningEcho, RetryPolicy,
    ServerProfile,
};
use crate::plan::PhaseRules;
use crate::policy::RuleSet;
use crate::policy::network::{NetAllowlist, parse_patterns};
use crate::policy::secret_places::SecretPlaces;
use crate::sandbox::EnvFilter;
use crate::sandbox::landlock::SandboxMode;

use super::layers::{AgentsFile, ConfigFile, SecretsFile, ShellFile, UndoFile};
use super::limits::{resolve_limits, with_project_prices};
use super::{
    CliOverrides, ConfigError, ContextFile, Environment, Layers, ProviderFile, SandboxFile,
};

/// Seconds a server may stay silent (before the first byte or between
/// two chunks) before the attempt counts as failed.
pub const DEFAULT_IDLE_TIMEOUT_SECS: u64 = 60;
/// Seconds one model request may take, retries and backoffs included.
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 600;

/// Everything a command needs to know, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    pub provider: ProviderConfig,
    pub model: String,
    /// Steps per turn, spend per session, runaway guards (`[limits]`,
    /// the top-level `max_steps`, `--max-cost`, `--max-tokens`).
    pub limits: Limits,
    /// The spend limits given as flags in this process (a resume keeps
    /// the logged ones otherwise).
    pub limit_flags: SpendLimits,
    pub keel_home: PathBuf,
    pub workspace_root: PathBuf,
    /// Things the user should know (ignored keys and the like).
    pub warnings: Vec<String>,
    /// Hook sources, user first (filled by [`super::load`]).
    pub hooks: Vec<HooksConfig>,
    /// keel's own in-process hooks (`[secrets]` → `protect_secrets`).
    pub native_hooks: Vec<Arc<dyn NativeHook>>,
    /// Where credentials live (`[secrets] paths`, the built-in stores,
    /// keel's home): reading them asks.
    pub secret_places: SecretPlaces,
    /// `[shell]`: which inherited variables spawned commands do not get.
    pub env_filter: EnvFilter,
    /// The values tool output must never show (`config::secret_values`).
    pub secret_values: super::SecretValues,
    /// `shell.max_parallel`: how many calls judged reads run at once;
    /// `None`, sized to the machine by the runtime.
    pub max_parallel: Option<usize>,
    /// The user's home folder (`$HOME`), for protected paths and hard deny.
    pub home: PathBuf,
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`): its `AGENTS.md`,
    /// `config.toml` MCP servers and `rules/` are the user's own setup.
    pub codex_home: PathBuf,
    /// Read the user's Claude Code and Codex files (`import_setup`, on by
    /// default; user file and `-c` only).
    pub import_setup: bool,
    /// The user's shell (`$SHELL`, else `bash`), named to the model in the
    /// environment snapshot.
    pub user_shell: String,
    /// Every rules file, loaded by [`super::load`] (empty after `resolve`).
    pub rules: RuleSet,
    /// What the rules took from the user's Codex and Claude Code files
    /// (`imported_rules`), for `keel doctor`.
    pub rule_imports: Vec<super::imported_rules::RuleImport>,
    /// The user trusts this workspace (`keel trust`).
    pub project_trusted: bool,
    pub sandbox: SandboxSettings,
    /// `verify.commands`: extra command prefixes that count as verification.
    pub verify_commands: Vec<String>,
    /// The project's own check commands (`cargo test`, `npm test`, …),
    /// detected from its root files by [`super::load`].
    pub detected_checks: Vec<String>,
    /// The project's `.keel/phases.toml` (trusted projects only), filled by
    /// [`super::load`]; `None`: the shipped rules.
    pub phase_rules: Option<PhaseRules>,
    /// `context.window`, else the model table's window, else unknown.
    pub context_window: Option<u64>,
    /// Window and prices: the model table overlaid by `[context]`.
    pub pricing: Pricing,
    /// `context.compact_threshold` (0.1–1.0, default 0.85).
    pub compact_threshold: f64,
    /// The server's tokenizer against keel's estimate: 1 from config,
    /// learnt from a server on this machine before the session opens
    /// (`runtime::server_window`).
    pub token_scale: crate::context::tokens::TokenScale,
    /// `default_mode`: the approval mode without a mode flag (default ask).
    pub default_mode: crate::policy::ApprovalMode,
    /// MCP servers to start and those skipped (filled by [`super::load`]).
    pub mcp: super::mcp::McpSettings,
    /// Installed Claude Code plugins (`keel plugin add`), read by `config::load`.
    pub plugins: super::plugins::Plugins,
    /// `[undo]`: checkpoint size caps.
    pub undo: UndoSettings,
    /// `[agents]`: subagents' fast model, nesting and budget.
    pub agents: AgentSettings,
    /// `[tools] edit`, resolved for the provider and model (never `Auto`).
    pub edit_tools: super::EditTools,
    /// `[tools] defer_mcp`: when MCP tools wait behind `tool_search`.
    pub defer_mcp: crate::agent::DeferMcp,
    /// `[security] taint` (default ask; `policy::egress`).
    pub taint: crate::policy::egress::TaintMode,
    /// `[tui]`: notifications.
    pub tui: super::TuiSettings,
    /// `[telemetry]` and the `OTEL_*` variables; `None`: no export.
    pub telemetry: Option<super::TelemetrySettings>,
}

/// The resolved `[undo]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UndoSettings {
    /// Files larger than this are not checkpointed.
    pub max_file_mb: u64,
    /// New content one checkpoint copies at most.
    pub max_total_mb: u64,
}

impl Default for UndoSettings {
    fn default() -> Self {
        Self { max_file_mb: 10, max_total_mb: 200 }
    }
}

fn undo_settings(file: Option<UndoFile>) -> UndoSettings {
    let file = file.unwrap_or_default();
    let default = UndoSettings::default();
    UndoSettings {
        max_file_mb: file.max_file_mb.unwrap_or(default.max_file_mb),
        max_total_mb: file.max_total_mb.unwrap_or(default.max_total_mb),
    }
}

/// The resolved `[agents]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSettings {
    /// For agent types that ask for a fast model; `None`: the session's.
    pub fast_model: Option<String>,
    /// How deep subagents nest (1: the session delegates, they do not).
    pub max_depth: u32,
    /// Model calls a subagent may make for its task.
    pub max_steps: u32,
    /// Tokens a subagent may spend on its task (`None`: no limit).
    pub max_tokens: Option<u64>,
}

/// A subagent's model calls per task unless `[agents] max_steps` says.
pub const DEFAULT_AGENT_STEPS: u32 = 50;

impl Default for AgentSettings {
    fn default() -> Self {
        Self { fast_model: None, max_depth: 1, max_steps: DEFAULT_AGENT_STEPS, max_tokens: None }
    }
}

fn agent_settings(file: Option<AgentsFile>) -> AgentSettings {
    let file = file.unwrap_or_default();
    let defaults = AgentSettings::default();
    AgentSettings {
        fast_model: file.fast_model,
        max_depth: file.max_depth.unwrap_or(defaults.max_depth),
        max_steps: file.max_steps.unwrap_or(defaults.max_steps),
        max_tokens: file.max_tokens,
    }
}

/// Default share of the window at which compaction starts.
pub const DEFAULT_COMPACT_THRESHOLD: f64 = 0.85;

/// The table's figures for `model` with `[context]`'s overrides (checked
/// where they were written, `super::validate`).
fn pricing(model: &str, file: Option<ContextFile>, ttl: CacheTtl) -> Pricing {
    let mut table = Pricing::for_model(model);
    if ttl == CacheTtl::OneHour {
        table = table.with_one_hour_cache();
    }
    let Some(file) = file else { return table };
    Pricing {
        context_window: file.window.or(table.context_window),
        input_price: file.input_price.or(table.input_price),
        cached_input_price: file.cached_input_price.or(table.cached_input_price),
        output_price: file.output_price.or(table.output_price),
        cache_write_price: file.cache_write_price.or(table.cache_write_price),
    }
}

/// The resolved `[sandbox]` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// The network mode and allowed host names (a trusted project's
    /// narrowing included).
    pub network: NetAllowlist,
    /// `[sandbox] hosts`: names keel's proxy resolves itself.
    pub hosts: BTreeMap<String, IpAddr>,
    /// `[sandbox] host_ports`: host loopback ports bridged into the jail.
    pub host_ports: Vec<u16>,
    /// Refuse to run commands unsandboxed.
    pub required: bool,
    pub writable_roots: Vec<PathBuf>,
    /// Keep `.git`/`.keel` read-only for commands (default true).
    pub protect_vcs: bool,
    /// The credential stores commands cannot read (the secret places but
    /// keel's own home, whose skills' scripts commands run).
    pub hidden: Vec<PathBuf>,
}

impl SandboxSettings {
    /// With the credential stores of `places` hidden from commands.
    fn hiding(mut self, places: &SecretPlaces, keel_home: &Path) -> Self {
        self.hidden = places
            .paths()
            .filter(|path| !keel_home.starts_with(path) && !path.starts_with(keel_home))
            .map(Path::to_path_buf)
            .collect();
        self
    }
}

impl Default for SandboxSettings {
    /// What an absent `[sandbox]` table means.
    fn default() -> Self {
        SandboxSettings {
            mode: SandboxMode::default(),
            network: NetAllowlist::default(),
            hosts: BTreeMap::new(),
            host_ports: Vec::new(),
            required: false,
            writable_roots: Vec::new(),
            protect_vcs: true,
            hidden: Vec::new(),
        }
    }
}

fn sandbox_settings(file: Option<SandboxFile>) -> Result<SandboxSettings, ConfigError> {
    let file = file.unwrap_or_default();
    let mode = match file.mode {
        Some(text) => SandboxMode::parse(&text).ok_or(ConfigError::InvalidValue {
            key: "sandbox.mode",
            value: text,
            message: "use read-only, workspace-write or full-access".to_owned(),
        })?,
        None => SandboxMode::default(),
    };
    let patterns = |texts: Option<Vec<String>>, key: &'static str| {
        parse_patterns(&texts.unwrap_or_default()).map_err(|error| ConfigError::InvalidValue {
            key,
            value: String::new(),
            message: error.to_string(),
        })
    };
    let narrowed = file.narrowed_by.unwrap_or_default();
    let user_mode = file.network.unwrap_or_default();
    let network = NetAllowlist {
        mode: narrowed.network.map_or(user_mode, |project| project.min(user_mode)),
        user: patterns(file.allowed_domains, "sandbox.allowed_domains")?,
        project: match narrowed.allowed_domains {
            Some(texts) => Some(patterns(Some(texts), "sandbox.allowed_domains")?),
            None => None,
        },
    };
    Ok(SandboxSettings {
        mode,
        network,
        hosts: file.hosts.unwrap_or_default(),
        host_ports: file.host_ports.unwrap_or_default(),
        required: file.required.unwrap_or(false),
        protect_vcs: file.protect_vcs.unwrap_or(true),
        writable_roots: file
            .writable_roots
            .unwrap_or_default()
            .into_iter()
            .map(PathBuf::from)
            .collect(),
        hidden: Vec::new(),
    })
}

/// The native hooks the `[secrets]` table asks for (on by default).
fn native_hooks(
    file: Option<&SecretsFile>,
    places: &SecretPlaces,
    home: &Path,
    keel_home: &Path,
) -> Result<Vec<Arc<dyn NativeHook>>, ConfigError> {
    let file = file.cloned().unwrap_or_default();
    if !file.protect_files.unwrap_or(true) {
        return Ok(Vec::new());
    }
    let hook = ProtectSecrets::new(&file.allow_files.unwrap_or_default())
        .map_err(ConfigError::Secrets)?
        .with_places(places.clone(), home.to_path_buf())
        // Inside keel's home, a secret place; read_file keeps to its session's.
        .with_kept_outputs(crate::session::outputs_dir(keel_home));
    Ok(vec![Arc::new(hook)])
}

/// Where credentials live: the built-in stores under `home`, the user's
/// `[secrets] paths` (`~/…` or absolute; another entry is named in a
/// warning and skipped) and keel's own home.
fn secret_places(
    file: Option<&SecretsFile>,
    home: &Path,
    keel_home: &Path,
    workspace_root: &Path,
    warnings: &mut Vec<String>,
) -> SecretPlaces {
    let mut places = SecretPlaces::for_home(home);
    let extra = file.and_then(|file| file.paths.as_deref()).unwrap_or_default();
    for entry in extra {
        let path = match entry.strip_prefix("~/") {
            Some(rest) => home.join(rest),
            None => PathBuf::from(entry),
        };
        if !places.add(&path, "listed in [secrets] paths", home, workspace_root)
            && places.holding(&path).is_none()
        {
            warnings.push(format!(
                "[secrets] paths: `{entry}` is skipped (an entry is `~/…` or absolute, and not \
                 home, `/` or a folder holding the workspace)"
            ));
        }
    }
    places.add(&keel_home.join(""), "keel's own config, logs and state", home, workspace_root);
    places
}

/// The `[provider]` table's values, checked.
fn profile_settings(
    file: &ProviderFile,
    kind: ProviderKind,
) -> Result<ProfileSettings, ConfigError> {
    fn check<T>(
        key: &'static str,
        value: Option<&String>,
        parse: impl Fn(&str) -> Option<T>,
        valid: &str,
    ) -> Result<Option<T>, ConfigError> {
        let Some(value) = value else { return Ok(None) };
        parse(value).map(Some).ok_or_else(|| ConfigError::InvalidValue {
            key,
            value: value.clone(),
            message: format!("use one of: {valid}"),
        })
    }
    Ok(ProfileSettings {
        reasoning_echo: check(
            "provider.reasoning_echo",
            file.reasoning_echo.as_ref(),
            ReasoningEcho::parse,
            "auto, off, deepseek, always",
        )?
        .flatten(),
        prompt_cache_key: file.prompt_cache_key,
        cache_ttl: check("provider.cache_ttl", file.cache_ttl.as_ref(), CacheTtl::parse, "5m, 1h")?,
        key_header: check(
            "provider.api_key_header",
            file.api_key_header.as_ref(),
            KeyHeader::parse,
            "bearer, api-key",
        )?,
        max_output_tokens: file.max_output_tokens,
        unstreamed: unstreamed(file.stream, kind)?,
        images: file.images,
        probe: file.probe,
        strict_tools: file.strict_tools.unwrap_or(false),
    })
}

/// `[provider] stream = false`, where keel can read the unstreamed answer.
fn unstreamed(stream: Option<bool>, kind: ProviderKind) -> Result<bool, ConfigError> {
    match (stream, kind) {
        (Some(false), ProviderKind::OpenAiChat) => Ok(true),
        (Some(false), ProviderKind::OpenAiResponses | ProviderKind::Anthropic) => {
            Err(ConfigError::InvalidValue {
                key: "provider.stream",
                value: "false".to_owned(),
                message: format!(
                    "keel reads unstreamed answers only from Chat Completions (openai-chat), \
                     not from `{}`; remove the setting or use provider `openai-chat`",
                    kind.cli_name()
                ),
            })
        }
        (Some(true) | None, _) => Ok(false),
    }
}

/// Resolves provider, model and limits.
pub fn resolve(
    env: &Environment,
    cli: &CliOverrides,
    layers: Layers,
) -> Result<Settings, ConfigError> {
    let Layers {
        merged,
        mut warnings,
        workspace_root,
        project_trusted,
        hook_tables: _,
        project_mcp_servers: _,
        project_prices,
    } = layers;
    let config_path = env.keel_home.join("config.toml");
    let base_url = cli.base_url.clone().or(merged.base_url);
    let provider_file = merged.provider.unwrap_or_default();
    let kind = match cli.provider.as_deref().or(provider_file.name.as_deref()) {
        Some(name) => ProviderKind::from_cli_name(name)
            .ok_or_else(|| ConfigError::UnknownProvider { name: name.to_owned() })?,
        None => detect_provider(env, base_url.is_some())
            .ok_or_else(|| ConfigError::NoProvider { config_path: config_path.clone() })?,
    };
    let api_key_env = merged.api_key_env.unwrap_or_else(|| kind.default_api_key_env().to_owned());
    let api_key = env.var(&api_key_env).map(str::to_owned);
    if api_key.is_none() && base_url.is_none() {
        return Err(ConfigError::MissingApiKey { provider: kind.cli_name(), env_var: api_key_env });
    }
    let base_url = base_url.unwrap_or_else(|| kind.default_base_url().to_owned());
    validate_base_url(&base_url)?;
    let model = match cli.model.clone().or(merged.model) {
        Some(model) => model,
        None => default_model(kind)
            .map(str::to_owned)
            .ok_or(ConfigError::MissingModel { provider: kind.cli_name(), config_path })?,
    };
    let retry = RetryPolicy {
        max_retries: merged.max_retries.unwrap_or(RetryPolicy::default().max_retries),
        ..RetryPolicy::default()
    };
    let idle_timeout =
        Duration::from_secs(merged.idle_timeout_secs.unwrap_or(DEFAULT_IDLE_TIMEOUT_SECS));
    let request_timeout =
        Duration::from_secs(merged.request_timeout_secs.unwrap_or(DEFAULT_REQUEST_TIMEOUT_SECS));
    let profile =
        ServerProfile::detect(kind, &base_url, &model, profile_settings(&provider_file, kind)?);
    let cost_limited = cli.limits.max_cost_usd.is_some()
        || merged.limits.is_some_and(|limits| limits.max_cost_usd.is_some());
    let pricing = with_project_prices(
        pricing(&model, merged.context, profile.cache_ttl),
        project_prices,
        cost_limited,
    );
    let limits = resolve_limits(
        merged.limits,
        merged.max_steps,
        cli.limits,
        &pricing,
        &model,
        &env.keel_home.join("config.toml"),
    )?;
    let home = env.user_home();
    let secret_places = secret_places(
        merged.secrets.as_ref(),
        &home,
        &env.keel_home,
        &workspace_root,
        &mut warnings,
    );
    let sandbox = sandbox_settings(merged.sandbox)?.hiding(&secret_places, &env.keel_home);
    let child_env = env_filter(merged.shell.as_ref(), Some(&api_key_env));
    let secret_values =
        super::secret_values::secret_values(env, &child_env, &api_key_env, merged.secrets.as_ref());
    Ok(Settings {
        secret_values,
        provider: ProviderConfig {
            kind,
            base_url,
            api_key,
            api_key_env,
            retry,
            idle_timeout,
            request_timeout,
            profile,
        },
        limits,
        limit_flags: cli.limits,
        keel_home: env.keel_home.clone(),
        workspace_root,
        warnings,
        hooks: Vec::new(),
        native_hooks: native_hooks(merged.secrets.as_ref(), &secret_places, &home, &env.keel_home)?,
        secret_places,
        env_filter: child_env,
        max_parallel: merged.shell.as_ref().and_then(|shell| shell.max_parallel),
        codex_home: env.codex_home(),
        import_setup: merged.import_setup.unwrap_or(true),
        home,
        user_shell: env.var("SHELL").unwrap_or("bash").to_owned(),
        rules: RuleSet::default(),
        rule_imports: Vec::new(),
        project_trusted,
        sandbox,
        verify_commands: merged.verify.and_then(|verify| verify.commands).unwrap_or_default(),
        detected_checks: Vec::new(),
        phase_rules: None,
        context_window: pricing.context_window,
        pricing,
        compact_threshold: merged
            .context
            .and_then(|context| context.compact_threshold)
            .unwrap_or(DEFAULT_COMPACT_THRESHOLD),
        token_scale: crate::context::tokens::TokenScale::IDENTITY,
        default_mode: merged.default_mode.unwrap_or_default(),
        mcp: super::mcp::McpSettings::default(),
        plugins: super::plugins::Plugins::default(),
        undo: undo_settings(merged.undo),
        agents: agent_settings(merged.agents),
        defer_mcp: merged.tools.as_ref().and_then(|tools| tools.defer_mcp).unwrap_or_default(),
        taint: merged.security.and_then(|security| security.taint).unwrap_or_default(),
        tui: super::tui_settings::resolve(merged.tui),
        telemetry: super::telemetry::resolve(merged.telemetry, &env.vars)
            .map_err(|error| ConfigError::Telemetry { message: error.to_string() })?,
        edit_tools: merged
            .tools
            .and_then(|tools| tools.edit)
            .unwrap_or_default()
            .resolve(kind, &model),
        model,
    })
}

/// What running tools without a model needs (`keel tool`): no provider,
/// no API key, so it loads where [`resolve`] would refuse.
#[derive(Debug, Clone)]
pub struct LocalSettings {
    pub keel_home: PathBuf,
    pub workspace_root: PathBuf,
    pub home: PathBuf,
    /// Codex's home, as [`Settings::codex_home`].
    pub codex_home: PathBuf,
    /// As [`Settings::import_setup`].
    pub import_setup: bool,
    pub warnings: Vec<String>,
    /// Every rules file, loaded by [`super::load_local`].
    pub rules: RuleSet,
    pub project_trusted: bool,
    pub sandbox: SandboxSettings,
    pub env_filter: EnvFilter,
    /// The values output must never show, as a session knows them.
    pub secret_values: super::SecretValues,
    /// keel's own in-process hooks (`protect_secrets`), as a session has.
    pub native_hooks: Vec<Arc<dyn NativeHook>>,
    /// Where credentials live, as a session has.
    pub secret_places: SecretPlaces,
    pub undo: UndoSettings,
}

/// Resolves the model-free part of the configuration.
pub fn resolve_local(env: &Environment, layers: Layers) -> Result<LocalSettings, ConfigError> {
    let Layers {
        merged,
        mut warnings,
        workspace_root,
        project_trusted,
        hook_tables: _,
        project_mcp_servers: _,
        project_prices: _,
    } = layers;
    let home = env.user_home();
    let secret_places = secret_places(
        merged.secrets.as_ref(),
        &home,
        &env.keel_home,
        &workspace_root,
        &mut warnings,
    );
    let sandbox = sandbox_settings(merged.sandbox.clone())?.hiding(&secret_places, &env.keel_home);
    let env_filter = env_filter_of(&merged);
    let api_key_env = merged.api_key_env.clone().unwrap_or_default();
    let secret_values = super::secret_values::secret_values(
        env,
        &env_filter,
        &api_key_env,
        merged.secrets.as_ref(),
    );
    Ok(LocalSettings {
        secret_values,
        keel_home: env.keel_home.clone(),
        workspace_root,
        warnings,
        rules: RuleSet::default(),
        project_trusted,
        env_filter,
        native_hooks: native_hooks(merged.secrets.as_ref(), &secret_places, &home, &env.keel_home)?,
        secret_places,
        codex_home: env.codex_home(),
        import_setup: merged.import_setup.unwrap_or(true),
        home,
        sandbox,
        undo: undo_settings(merged.undo),
    })
}

/// The `[shell]` table's environment filter (built-in patterns always on),
/// stripping `api_key_env` too: the provider's key reaches no child
/// whatever it is called.
fn env_filter(file: Option<&ShellFile>, api_key_env: Option<&str>) -> EnvFilter {
    let mut strip = file.and_then(|f| f.env_strip.clone()).unwrap_or_default();
    strip.extend(api_key_env.map(str::to_owned));
    let keep = file.and_then(|f| f.env_keep.as_deref()).unwrap_or_default();
    EnvFilter::new(&strip, keep)
}

/// The environment filter a session of `merged` gets ([`env_filter`]).
pub(super) fn env_filter_of(merged: &ConfigFile) -> EnvFilter {
    env_filter(merged.shell.as_ref(), merged.api_key_env.as_deref())
}

/// With no provider named: a key in the environment picks one; a base URL
/// alone means a local OpenAI-compatible server.
fn detect_provider(env: &Environment, has_base_url: bool) -> Option<ProviderKind> {
    if env.var("OPENAI_API_KEY").is_some() {
        Some(ProviderKind::OpenAiResponses)
    } else if env.var("ANTHROPIC_API_KEY").is_some() {
        Some(ProviderKind::Anthropic)
    } else if has_base_url {
        Some(ProviderKind::OpenAiChat)
    } else {
        None
    }
}

fn default_model(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::OpenAiResponses => Some("gpt-5.1"),
        ProviderKind::Anthropic => Some("claude-sonnet-4-5"),
        // Local servers name their models as they like.
        ProviderKind::OpenAiChat => None,
    }
}

fn validate_base_url(url: &str) -> Result<(), ConfigError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(ConfigError::InvalidValue {
            key: "base_url",
            value: url.to_owned(),
            message: "it must start with http:// or https://".to_owned(),
        })
    }
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;
