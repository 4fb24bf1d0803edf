//! Configuration: the only reader of config files. Two steps, as ripgrep's
//! low/high args: [`layers`] reads what the user wrote (TOML files, `-c`
//! overrides) checking only syntax and known keys; [`resolve`] turns the
//! merged layers, flags and environment into [`Settings`] the rest of keel
//! uses, pure and testable.
//!
//! Sources, later wins: `$KEEL_HOME/config.toml` (default `~/.keel`), the
//! project's `.keel/config.toml`, `-c key=value`, then flags; every reader
//! (hooks included) uses the same merged layers, and values are checked
//! where they are written ([`validate`]). API keys come only from
//! environment variables. A cloned repository is untrusted: until `keel
//! trust`, its config file applies display preferences only (the
//! `[context]` prices) and one warning names what it ignored; even trusted,
//! it may not redirect the API key (`base_url`, `api_key_env`) or loosen
//! `[sandbox]`, `[secrets]`, `[shell] env_keep`.
//!
//! Files: `layers.rs` (files, `-c`, the tables) and `hooks.rs` (hooks per source) with
//! `validate.rs` (values checked while parsed, so errors carry TOML's line and caret) and
//! `trust.rs` (what a project's file may set, trusted or not) → `resolve.rs` (pure) → `Settings`;
//! `telemetry.rs` (`[telemetry]` and the `OTEL_*` variables); `limits.rs` (`[limits]`, `--max-cost`/`--max-tokens` → `agent::Limits`; a project's table only
//! tightens; a cost limit without prices is an error); `instructions.rs` finds instruction files
//! (`~/.keel/AGENTS.md`, `~/.claude/CLAUDE.md`, Codex's `AGENTS[.override].md`, then root → cwd
//! `AGENTS.override.md` else `AGENTS.md` else `CLAUDE.md`, plus `CLAUDE.local.md`; a 64 KiB cap
//! trimming the root's first; a project file resolving through a symlink out of the workspace is
//! not read) and `instruction_imports.rs` expands their `@path` imports (Claude Code's forms,
//! confined to the folder for a project, `@~/` only once trusted, no secrets, 5 deep, at most 64); `memory.rs` finds memory notes (`~/.keel/memory`,
//! `.keel/memory`); `agents.rs` agent types (built-in `agents/*.md`, Claude-format files in
//! `~/.claude/agents`, `~/.keel/agents`, and after trust the project's `.claude/agents`,
//! `.keel/agents`; Claude tool names mapped) and `commands.rs` custom commands (`~/.codex/prompts`,
//! `~/.claude/commands`, `~/.keel/commands`, trusted `.claude/commands`, `.keel/commands`; `expand`
//! does `$ARGUMENTS`/`$1…$9`), both through `markdown_file.rs` (lenient front matter; the bounded
//! read is `support::bounded_read`); `rules.rs` reads rules files (built-in, `$KEEL_HOME/rules`,
//! `--rules`, the project's `.keel/rules`), the trust record, and appends "always" rules to
//! `.keel/rules/local.rules`; `mcp.rs` resolves `[mcp_servers.NAME]`, plugins', a trusted project's
//! `.mcp.json` and the user's `~/.claude.json` / Codex `config.toml` servers (read by `mcp_import.rs`) into `Settings::mcp` (servers to start, skipped ones with the reason); `mcp_edit.rs`
//! is `keel mcp add/remove`; `edit_tools.rs` is `[tools] edit` (which of `edit_file`/`apply_patch`
//! a session offers, resolved for the provider and model; `keel tool`/`keel apply-patch` keep every
//! tool); `plugins.rs` reads installed Claude Code plugins (`plugin_install.rs`: `keel plugin
//! add/remove`; `plugin_parts.rs` joins their hooks, MCP servers and commands to the loaders here,
//! as the user's own); `provider.rs` is `[provider]`; `provenance.rs` labels each configured key with the layer it
//! came from (the TUI's `/config`, secrets hidden). Adding a key: AGENTS.md, "Recipes".

pub mod agents;
pub mod claude_permissions;
pub mod commands;
mod edit_tools;
#[cfg(test)]
mod fuzz_tests;
mod hooks;
pub mod imported_rules;
mod instruction_imports;
mod instructions;
mod layers;
mod limits;
pub mod markdown_file;
pub mod mcp;
pub mod mcp_edit;
mod mcp_import;
pub mod mcp_pin;
mod memory;
mod plugin_install;
pub mod plugin_parts;
pub mod plugins;
mod provenance;
mod provider;
mod resolve;
pub mod rules;
mod secret_values;
mod telemetry;
mod trust;
mod tui_settings;
mod validate;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use edit_tools::{EDIT_TOOLS, EditTools};
pub use hooks::load_hooks;
pub use instructions::{
    InstructionFile, InstructionPlaces, InstructionSource, MAX_INSTRUCTION_BYTES,
    discover_instructions,
};
pub use layers::{
    ConfigFile, ContextFile, HookOrigin, HookTable, Layers, SandboxFile, find_workspace_root,
    read_layers,
};
pub use limits::{DEFAULT_MAX_STEPS, LimitsFile};
pub use memory::{MemoryProblem, discover_memory};
pub use plugin_install::{add_plugin, list_plugins, remove_plugin};
pub use provenance::{ConfigValue, config_sources};
pub use provider::ProviderFile;
pub use resolve::{
    AgentSettings, DEFAULT_AGENT_STEPS, LocalSettings, SandboxSettings, Settings, UndoSettings,
    resolve, resolve_local,
};
pub use secret_values::SecretValues;
pub use telemetry::{TelemetryFile, TelemetrySettings};
pub use tui_settings::{Notify, TuiSettings};

/// Why configuration could not be loaded. Every message says what to fix.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A syntax or type error at a known place (lines counted as an
    /// editor counts them: LF, CRLF or a lone CR; columns in characters),
    /// with the line and a caret under the place.
    #[error("{}:{line}:{column}: invalid config file: {message}\n{snippet}", path.display())]
    ParseAt { path: PathBuf, line: usize, column: usize, message: String, snippet: String },
    #[error("{message}")]
    Telemetry { message: String },
    #[error("invalid override `-c {text}`: {message}")]
    BadOverride { text: String, message: String },
    #[error("unknown provider `{name}`; use one of: openai, openai-chat, anthropic")]
    UnknownProvider { name: String },
    #[error("{value} is not a valid {key}: {message}")]
    InvalidValue { key: &'static str, value: String, message: String },
    #[error(
        "no model provider configured. Do one of:\n  \
         export OPENAI_API_KEY=…       (OpenAI, Responses API)\n  \
         export ANTHROPIC_API_KEY=…    (Anthropic Messages API)\n  \
         keel --provider openai-chat --base-url http://127.0.0.1:11434/v1 --model MODEL\n  \
         (any OpenAI-compatible server: Ollama, vLLM, LM Studio, OpenRouter; `keel exec` takes \
         the same flags)\n\
         or set provider, model and base_url in {config_path}\n\
         To see keel work first, without a key: keel demo"
    )]
    NoProvider { config_path: PathBuf },
    #[error(
        "the {provider} provider needs an API key: set ${env_var}, or point --base-url at a \
         server that needs none"
    )]
    MissingApiKey { provider: &'static str, env_var: String },
    #[error(
        "the {provider} provider needs a model: pass --model NAME or set `model` in {config_path}"
    )]
    MissingModel { provider: &'static str, config_path: PathBuf },
    #[error(
        "a cost limit (--max-cost or limits.max_cost_usd) needs the prices of `{model}`, which \
         keel does not know: set `input_price` and `output_price` under `[context]` in \
         {config_path} (US dollars per million tokens; `cached_input_price` and \
         `cache_write_price` too if the provider bills cache reads and writes apart), or pass \
         -c context.input_price=… -c context.output_price=…; --max-tokens needs no prices"
    )]
    UnpricedCostLimit { model: String, config_path: PathBuf },
    #[error("cannot determine the working directory: {source}")]
    Cwd { source: std::io::Error },
    #[error("cannot find a home folder for keel: set KEEL_HOME or HOME")]
    NoHome,
    #[error(transparent)]
    Rules(#[from] rules::RulesFileError),
    #[error("{0} (in $KEEL_HOME/config.toml or -c)")]
    Secrets(#[source] crate::hooks::HookConfigError),
}

/// The process environment keel reads, injected so tests are deterministic.
#[derive(Debug, Clone)]
pub struct Environment {
    /// `$KEEL_HOME`, or `~/.keel`.
    pub keel_home: PathBuf,
    pub cwd: PathBuf,
    pub vars: BTreeMap<String, String>,
}

impl Environment {
    /// Reads the real process environment.
    pub fn from_process() -> Result<Self, ConfigError> {
        let vars: BTreeMap<String, String> = std::env::vars().collect();
        let keel_home = match (vars.get("KEEL_HOME"), vars.get("HOME")) {
            (Some(home), _) if !home.is_empty() => PathBuf::from(home),
            (_, Some(home)) if !home.is_empty() => PathBuf::from(home).join(".keel"),
            _ => return Err(ConfigError::NoHome),
        };
        let cwd = std::env::current_dir().map_err(|source| ConfigError::Cwd { source })?;
        Ok(Self { keel_home, cwd, vars })
    }

    /// The user's home folder (`$HOME`; `/` when unset).
    pub fn user_home(&self) -> PathBuf {
        self.var("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from)
    }

    /// Codex's home: `$CODEX_HOME`, else `~/.codex` (Codex's own rule).
    pub fn codex_home(&self) -> PathBuf {
        self.var("CODEX_HOME").map_or_else(|| self.user_home().join(".codex"), PathBuf::from)
    }

    /// A non-empty environment variable.
    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|value| !value.is_empty())
    }
}

/// What the command line says about configuration.
#[derive(Debug, Clone, Default)]
pub struct CliOverrides {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// `-c key=value` pairs, in order.
    pub set: Vec<String>,
    /// Extra rules files (`--rules FILE`), loaded after the user's.
    pub rules_files: Vec<PathBuf>,
    /// `--max-cost`, `--max-tokens`: win over `[limits]`, and over the
    /// limits a resumed session logged.
    pub limits: crate::agent::SpendLimits,
}

/// Loads and resolves configuration for a command run in `env.cwd`.
pub fn load(env: &Environment, cli: &CliOverrides) -> Result<Settings, ConfigError> {
    let layers = read_layers(env, cli)?;
    let hook_tables = layers.hook_tables.clone();
    let import_claude = layers.merged.import_claude_hooks.unwrap_or(false);
    let mut mcp_sources = mcp_sources(env, &layers);
    let plugins = plugins::load_installed(&env.keel_home);
    let mut settings = resolve(env, cli, layers)?;
    settings.hooks = load_hooks(
        &settings.keel_home,
        &settings.workspace_root,
        &hook_tables,
        import_claude,
        settings.project_trusted,
        &mut settings.warnings,
    )?;
    plugin_parts::add_hooks(&plugins, &mut settings.hooks, &mut settings.warnings);
    let loaded = rules::load_rules(&rules::RulePlaces {
        keel_home: &env.keel_home,
        codex_home: &settings.codex_home,
        home: &settings.home,
        workspace_root: &settings.workspace_root,
        extra: &cli.rules_files,
        import: settings.import_setup,
    })?;
    settings.warnings.extend(imported_rules::import_warnings(&loaded.imports));
    settings.rules = loaded.rules;
    settings.rule_imports = loaded.imports;
    let server_notes =
        plugin_parts::add_servers(env, &plugins, &mut mcp_sources, &settings.env_filter);
    settings.warnings.extend(server_notes);
    let mcp_trust = project_mcp_trust(env, &settings.workspace_root, settings.project_trusted)?;
    if mcp_trust == mcp::McpTrust::Changed {
        settings.warnings.push(format!(
            "the MCP servers of this project (.mcp.json, .keel/config.toml) changed since you \
             trusted it, so none of them is started: check them, then run `keel trust` in {} to \
             start them",
            settings.workspace_root.display()
        ));
    }
    settings.mcp = mcp::resolve_mcp(
        env,
        mcp_sources,
        &settings.workspace_root,
        mcp_trust,
        &settings.env_filter,
    );
    settings.warnings.extend(settings.mcp.rename_notes());
    settings
        .warnings
        .extend(markdown_file::grouped("plugins not loaded", plugins.problems.clone()));
    settings.plugins = plugins;
    load_phase_rules(&mut settings);
    settings.detected_checks = detect_project_checks(&settings.workspace_root);
    Ok(settings)
}

/// Loads what running tools without a model needs: no provider or API key
/// is required (`keel tool`).
pub fn load_local(env: &Environment, cli: &CliOverrides) -> Result<LocalSettings, ConfigError> {
    let layers = read_layers(env, cli)?;
    let mut settings = resolve_local(env, layers)?;
    settings.rules = rules::load_rules(&rules::RulePlaces {
        keel_home: &env.keel_home,
        codex_home: &settings.codex_home,
        home: &settings.home,
        workspace_root: &settings.workspace_root,
        extra: &cli.rules_files,
        import: settings.import_setup,
    })?
    .rules;
    Ok(settings)
}

/// Loads only the MCP servers (`keel mcp`): no provider or API key needed.
pub fn load_mcp(env: &Environment, cli: &CliOverrides) -> Result<mcp::McpSettings, ConfigError> {
    let layers = read_layers(env, cli)?;
    let mut sources = mcp_sources(env, &layers);
    let strip = resolve::env_filter_of(&layers.merged);
    let plugins = plugins::load_installed(&env.keel_home);
    // `keel mcp` reports servers, not start-up notes.
    let _ = plugin_parts::add_servers(env, &plugins, &mut sources, &strip);
    let trust = project_mcp_trust(env, &layers.workspace_root, layers.project_trusted)?;
    Ok(mcp::resolve_mcp(env, sources, &layers.workspace_root, trust, &strip))
}

/// Whether the project's MCP servers may start (`mcp_pin`).
fn project_mcp_trust(
    env: &Environment,
    workspace_root: &std::path::Path,
    project_trusted: bool,
) -> Result<mcp::McpTrust, ConfigError> {
    if !project_trusted {
        return Ok(mcp::McpTrust::Untrusted);
    }
    Ok(rules::mcp_trust(&env.keel_home, workspace_root)?)
}

fn mcp_sources(env: &Environment, layers: &Layers) -> mcp::McpSources {
    // `import_setup = false`: keel's own servers only.
    let import = layers.merged.import_setup.unwrap_or(true);
    let home = env.var("HOME").map(PathBuf::from).filter(|_| import);
    let codex_home = match &home {
        Some(_) => Some(env.codex_home()),
        None => env.var("CODEX_HOME").map(PathBuf::from).filter(|_| import),
    };
    mcp::McpSources {
        user: layers.merged.mcp_servers.clone().unwrap_or_default(),
        plugins: Vec::new(),
        project: layers.project_mcp_servers.clone(),
        project_config_path: layers.workspace_root.join(".keel").join("config.toml"),
        claude_json: home.map(|home| home.join(".claude.json")),
        codex_config: codex_home.map(|dir| dir.join("config.toml")),
    }
}

/// Bytes read from each root file for check detection; a manifest larger
/// than this is cut (detection then sees what fits).
const MAX_CHECK_FILE_BYTES: u64 = 256 * 1024;

/// The check commands of the project at `root`, from the files of
/// [`crate::plan::CHECK_FILES`] there (unreadable ones count as absent).
fn detect_project_checks(root: &std::path::Path) -> Vec<String> {
    use std::io::Read;
    let files: Vec<(String, String)> = crate::plan::CHECK_FILES
        .iter()
        .filter_map(|name| {
            let file = std::fs::File::open(root.join(name)).ok()?;
            let mut bytes = Vec::new();
            file.take(MAX_CHECK_FILE_BYTES).read_to_end(&mut bytes).ok()?;
            Some(((*name).to_owned(), String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect();
    crate::plan::detect_checks(&files)
}

/// A trusted project's `.keel/phases.toml` replaces the shipped phase
/// rules. An untrusted project's file, or one that does not parse, is
/// ignored with a warning (the shipped rules apply).
fn load_phase_rules(settings: &mut Settings) {
    let path = settings.workspace_root.join(".keel").join("phases.toml");
    let Ok(text) = std::fs::read_to_string(&path) else { return };
    if !settings.project_trusted {
        settings.warnings.push(format!(
            "{} is ignored until you trust this project (`keel trust`)",
            path.display()
        ));
        return;
    }
    match crate::plan::PhaseRules::parse(&text) {
        Ok(rules) => settings.phase_rules = Some(rules),
        Err(error) => settings
            .warnings
            .push(format!("{} is ignored: {error}; the shipped rules apply", path.display())),
    }
}
