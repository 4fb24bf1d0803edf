//! Reading configuration sources into [`ConfigFile`] layers: syntax and
//! known keys only; meaning is [`super::resolve`]'s job.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::policy::network::NetworkMode;

use super::limits::LimitsFile;
use super::provider::ProviderFile;
use super::trust::{trusted_project, untrusted_project};
use super::{CliOverrides, ConfigError, Environment, rules, validate};

/// The keys a config file may set. Unknown keys are errors (a typo should
/// not be silently ignored).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `provider = "name"` or the `[provider]` table (`super::provider`).
    pub provider: Option<ProviderFile>,
    #[serde(default, deserialize_with = "validate::model")]
    pub model: Option<String>,
    #[serde(default, deserialize_with = "validate::base_url")]
    pub base_url: Option<String>,
    #[serde(default, deserialize_with = "validate::env_name")]
    pub api_key_env: Option<String>,
    #[serde(default, deserialize_with = "validate::max_steps")]
    pub max_steps: Option<u32>,
    pub max_retries: Option<u32>,
    #[serde(default, deserialize_with = "validate::idle_timeout")]
    pub idle_timeout_secs: Option<u64>,
    /// The longest one model request may take, retries included.
    #[serde(default, deserialize_with = "validate::request_timeout")]
    pub request_timeout_secs: Option<u64>,
    /// Hooks in Claude Code's shape (event → matcher groups); kept per
    /// source in [`Layers::hook_tables`], never merged across sources.
    #[serde(default, deserialize_with = "validate::hooks")]
    pub hooks: Option<toml::Table>,
    /// Also load the `hooks` of `.claude/settings.json` files.
    pub import_claude_hooks: Option<bool>,
    /// Read the user's Claude Code and Codex setup (instruction files,
    /// rules and permissions, MCP servers); default on. User file and `-c`
    /// only: a project may not switch off the user's own denies.
    pub import_setup: Option<bool>,
    /// `[sandbox]`: user file and `-c` only (a project may not loosen it).
    pub sandbox: Option<SandboxFile>,
    /// `[verify]`: what counts as verifying a change.
    pub verify: Option<VerifyFile>,
    /// `[secrets]`: user file and `-c` only (a project may not un-protect).
    pub secrets: Option<SecretsFile>,
    /// `[shell]`: the environment of spawned commands. A project may add
    /// `env_strip` patterns but not `env_keep` (that would un-strip).
    pub shell: Option<ShellFile>,
    /// `[context]`: window and compaction threshold.
    pub context: Option<ContextFile>,
    /// The approval mode a session starts in when no flag says otherwise
    /// (`ask`, `auto`, `plan`, `explore`, `yolo`): user file and `-c` only.
    pub default_mode: Option<crate::policy::ApprovalMode>,
    /// `[limits]`: steps, spend and runaway guards (`super::limits`); a
    /// project's only tightens the user's.
    pub limits: Option<LimitsFile>,
    /// `[mcp_servers.NAME]`: MCP servers (`config::mcp`). A project's
    /// tables are kept apart and used only once it is trusted.
    pub mcp_servers: Option<super::mcp::McpServerTables>,
    /// `[undo]`: what checkpoints copy at most. User file and `-c` only (a
    /// project could switch undo off, or fill the disk).
    pub undo: Option<UndoFile>,
    /// `[agents]`: subagents' model, nesting and budget.
    pub agents: Option<AgentsFile>,
    /// `[tools]`: which tools the model is offered.
    pub tools: Option<ToolsFile>,
    /// `[security]`: what untrusted content changes (`taint`). User file
    /// and `-c` only (a project could switch the check off).
    pub security: Option<SecurityFile>,
    /// `[tui]`: notifications (`tui_settings.rs`).
    pub tui: Option<super::tui_settings::TuiFile>,
    /// `[telemetry]`: OpenTelemetry export (`telemetry.rs`). User file and
    /// `-c` only (a project could send its prompts to its own collector).
    pub telemetry: Option<super::telemetry::TelemetryFile>,
}

/// The `[security]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecurityFile {
    /// After untrusted content (a fetched page, an untrusted MCP server's
    /// answer): `"ask"` (default) before a call that could send data out,
    /// `"strict"` refuses it, `"off"`.
    #[serde(default, deserialize_with = "validate::taint")]
    pub taint: Option<crate::policy::egress::TaintMode>,
}

/// The `[tools]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    /// The file-editing tool offered (`auto`, `edit_file`, `apply_patch`,
    /// `both`; `super::EditTools`).
    #[serde(default, deserialize_with = "validate::edit_tools")]
    pub edit: Option<super::EditTools>,
    /// When MCP tools are kept out of the request behind `tool_search`
    /// (`auto`, `always`, `never`; `agent::DeferMcp`).
    #[serde(default, deserialize_with = "validate::defer_mcp")]
    pub defer_mcp: Option<crate::agent::DeferMcp>,
}

/// The `[undo]` table: size caps of checkpoints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UndoFile {
    /// Files larger than this many MB are not checkpointed (default 10).
    #[serde(default, deserialize_with = "validate::undo_max_file_mb")]
    pub max_file_mb: Option<u64>,
    /// New content one checkpoint copies at most, in MB (default 200).
    #[serde(default, deserialize_with = "validate::undo_max_total_mb")]
    pub max_total_mb: Option<u64>,
}

/// The `[agents]` table (subagents, issue 20).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsFile {
    /// The model of agent types that ask for a fast one (`explore`, and
    /// `model: fast` or `haiku` in a definition); unset: the session's.
    #[serde(default, deserialize_with = "validate::fast_model")]
    pub fast_model: Option<String>,
    /// How deep subagents nest: 1 (the default) lets the session delegate
    /// but not its subagents; 0 turns the `agent` tool off.
    #[serde(default, deserialize_with = "validate::max_depth")]
    pub max_depth: Option<u32>,
    /// Model calls a subagent may make for its task.
    #[serde(default, deserialize_with = "validate::agent_steps")]
    pub max_steps: Option<u32>,
    /// Tokens (input and output) a subagent may spend on its task.
    #[serde(default, deserialize_with = "validate::agent_tokens")]
    pub max_tokens: Option<u64>,
}

/// The `[shell]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellFile {
    /// Variable name patterns stripped from commands' environment, on top
    /// of the built-in ones (`*_API_KEY`, `*_TOKEN`, …). Layers add up.
    pub env_strip: Option<Vec<String>>,
    /// Patterns passed through even when stripped (user config only).
    pub env_keep: Option<Vec<String>>,
    /// How many calls judged reads run at once (default: sized to the
    /// machine, `runtime::max_parallel`).
    #[serde(default, deserialize_with = "validate::max_parallel")]
    pub max_parallel: Option<usize>,
}

/// The `[secrets]` table: the `protect_secrets` native hook.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretsFile {
    /// Keep secret files out of the model's context (default true).
    pub protect_files: Option<bool>,
    /// Globs of files the model may read anyway.
    pub allow_files: Option<Vec<String>>,
    /// More folders or files that hold credentials (`~/…` or absolute),
    /// beside the built-in stores (`policy::secret_places`).
    pub paths: Option<Vec<String>>,
}

/// The `[context]` table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ContextFile {
    /// The model's context window in tokens (overrides keel's table; the
    /// only source for models keel does not know).
    #[serde(default, deserialize_with = "validate::window")]
    pub window: Option<u64>,
    /// Fraction of the window at which the history is compacted before a
    /// request (default 0.85).
    #[serde(default, deserialize_with = "validate::threshold")]
    pub compact_threshold: Option<f64>,
    /// US dollars per million tokens for the session's model (override
    /// keel's table, or price a model it does not know). A project's only
    /// raise prices (they count toward a cost limit), trusted or not; see
    /// `super::limits::with_project_prices`.
    #[serde(default, deserialize_with = "validate::input_price")]
    pub input_price: Option<f64>,
    /// Cache reads.
    #[serde(default, deserialize_with = "validate::cached_price")]
    pub cached_input_price: Option<f64>,
    #[serde(default, deserialize_with = "validate::output_price")]
    pub output_price: Option<f64>,
    /// Cache writes (Anthropic).
    #[serde(default, deserialize_with = "validate::cache_write_price")]
    pub cache_write_price: Option<f64>,
}

/// The `[verify]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyFile {
    /// Command prefixes that verify a change, besides the detected ones
    /// (`cargo test`, `npm test`, `pytest`, `go test`, `make test`, …).
    #[serde(default, deserialize_with = "validate::commands")]
    pub commands: Option<Vec<String>>,
}

/// The `[sandbox]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxFile {
    /// `read-only`, `workspace-write` (default) or `full-access`.
    #[serde(default, deserialize_with = "validate::sandbox_mode")]
    pub mode: Option<String>,
    /// `"off"` (default: loopback only), `"allowlist"` (loopback and
    /// keel's proxy for `allowed_domains`) or `"on"`; `true`/`false` as
    /// before mean on/off.
    #[serde(default, deserialize_with = "validate::network")]
    pub network: Option<NetworkMode>,
    /// Host names the allowlist proxy lets through: exact names and
    /// `*.suffix`.
    #[serde(default, deserialize_with = "validate::allowed_domains")]
    pub allowed_domains: Option<Vec<String>>,
    /// Host loopback ports bridged into the jail (a database the tests need).
    #[serde(default, deserialize_with = "validate::host_ports")]
    pub host_ports: Option<Vec<u16>>,
    /// Names the proxy resolves to these addresses itself (a registry
    /// mirror on the LAN; a test's local index).
    #[serde(default, deserialize_with = "validate::hosts")]
    pub hosts: Option<std::collections::BTreeMap<String, std::net::IpAddr>>,
    /// A trusted project's network settings, which only narrow the
    /// user's (never read from a file: `super::trust` moves them here).
    #[serde(skip)]
    pub narrowed_by: Option<ProjectNetwork>,
    /// Refuse to run commands when the sandbox cannot be enforced.
    pub required: Option<bool>,
    /// Extra writable folders.
    pub writable_roots: Option<Vec<String>>,
    /// Keep `.git`/`.keel` read-only for commands (default true; see
    /// `sandbox::landlock`).
    pub protect_vcs: Option<bool>,
}

/// What a trusted project's `[sandbox]` may say: less network.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectNetwork {
    pub network: Option<NetworkMode>,
    pub allowed_domains: Option<Vec<String>>,
}

impl SandboxFile {
    fn overlay(&mut self, other: SandboxFile) {
        let SandboxFile {
            mode,
            network,
            allowed_domains,
            host_ports,
            hosts,
            narrowed_by,
            required,
            writable_roots,
            protect_vcs,
        } = other;
        self.mode = mode.or(self.mode.take());
        self.network = network.or(self.network);
        self.allowed_domains = allowed_domains.or(self.allowed_domains.take());
        self.host_ports = host_ports.or(self.host_ports.take());
        self.hosts = hosts.or(self.hosts.take());
        self.narrowed_by = narrowed_by.or(self.narrowed_by.take());
        self.required = required.or(self.required);
        self.writable_roots = writable_roots.or(self.writable_roots.take());
        self.protect_vcs = protect_vcs.or(self.protect_vcs);
    }
}

impl ConfigFile {
    /// Overlays `other` on `self`: every key `other` sets wins.
    fn overlay(&mut self, other: ConfigFile) {
        let ConfigFile {
            provider,
            model,
            base_url,
            api_key_env,
            max_steps,
            max_retries,
            idle_timeout_secs,
            request_timeout_secs,
            hooks: _,
            import_claude_hooks,
            import_setup,
            sandbox,
            verify,
            secrets,
            shell,
            context,
            default_mode,
            limits,
            mcp_servers,
            undo,
            agents,
            tools,
            security,
            tui,
            telemetry,
        } = other;
        if let Some(telemetry) = telemetry {
            self.telemetry.get_or_insert_with(Default::default).overlay(telemetry);
        }
        if let Some(SecurityFile { taint }) = security {
            let mine = self.security.get_or_insert_with(SecurityFile::default);
            mine.taint = taint.or(mine.taint);
        }
        if let Some(tui) = tui {
            self.tui.get_or_insert_with(Default::default).overlay(tui);
        }
        if let Some(ToolsFile { edit, defer_mcp }) = tools {
            let mine = self.tools.get_or_insert_with(ToolsFile::default);
            mine.edit = edit.or(mine.edit);
            mine.defer_mcp = defer_mcp.or(mine.defer_mcp);
        }
        self.default_mode = default_mode.or(self.default_mode);
        if let Some(limits) = limits {
            self.limits.get_or_insert_with(LimitsFile::default).overlay(limits);
        }
        super::mcp::overlay_servers(&mut self.mcp_servers, mcp_servers);
        if let Some(UndoFile { max_file_mb, max_total_mb }) = undo {
            let mine = self.undo.get_or_insert_with(UndoFile::default);
            mine.max_file_mb = max_file_mb.or(mine.max_file_mb);
            mine.max_total_mb = max_total_mb.or(mine.max_total_mb);
        }
        if let Some(AgentsFile { fast_model, max_depth, max_steps, max_tokens }) = agents {
            let mine = self.agents.get_or_insert_with(AgentsFile::default);
            mine.fast_model = fast_model.or(mine.fast_model.take());
            mine.max_depth = max_depth.or(mine.max_depth);
            mine.max_steps = max_steps.or(mine.max_steps);
            mine.max_tokens = max_tokens.or(mine.max_tokens);
        }
        if let Some(ShellFile { env_strip, env_keep, max_parallel }) = shell {
            let mine = self.shell.get_or_insert_with(ShellFile::default);
            if let Some(patterns) = env_strip {
                mine.env_strip.get_or_insert_with(Vec::new).extend(patterns);
            }
            mine.env_keep = env_keep.or(mine.env_keep.take());
            mine.max_parallel = max_parallel.or(mine.max_parallel);
        }
        if let Some(SecretsFile { protect_files, allow_files, paths }) = secrets {
            let mine = self.secrets.get_or_insert_with(SecretsFile::default);
            mine.protect_files = protect_files.or(mine.protect_files);
            mine.allow_files = allow_files.or(mine.allow_files.take());
            if let Some(paths) = paths {
                mine.paths.get_or_insert_with(Vec::new).extend(paths);
            }
        }
        if let Some(ContextFile {
            window,
            compact_threshold,
            input_price,
            cached_input_price,
            output_price,
            cache_write_price,
        }) = context
        {
            let mine = self.context.get_or_insert_with(ContextFile::default);
            mine.window = window.or(mine.window);
            mine.compact_threshold = compact_threshold.or(mine.compact_threshold);
            mine.input_price = input_price.or(mine.input_price);
            mine.cached_input_price = cached_input_price.or(mine.cached_input_price);
            mine.output_price = output_price.or(mine.output_price);
            mine.cache_write_price = cache_write_price.or(mine.cache_write_price);
        }
        if let Some(VerifyFile { commands }) = verify {
            let mine = self.verify.get_or_insert_with(VerifyFile::default);
            mine.commands = commands.or(mine.commands.take());
        }
        if let Some(sandbox) = sandbox {
            self.sandbox.get_or_insert_with(SandboxFile::default).overlay(sandbox);
        }
        match (&mut self.provider, provider) {
            (Some(mine), Some(theirs)) => mine.overlay(theirs),
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        self.model = model.or(self.model.take());
        self.base_url = base_url.or(self.base_url.take());
        self.api_key_env = api_key_env.or(self.api_key_env.take());
        self.max_steps = max_steps.or(self.max_steps);
        self.max_retries = max_retries.or(self.max_retries);
        self.idle_timeout_secs = idle_timeout_secs.or(self.idle_timeout_secs);
        self.request_timeout_secs = request_timeout_secs.or(self.request_timeout_secs);
        self.import_claude_hooks = import_claude_hooks.or(self.import_claude_hooks);
        self.import_setup = import_setup.or(self.import_setup);
    }
}

/// The merged configuration and what was ignored along the way.
#[derive(Debug, Clone, Default)]
pub struct Layers {
    pub merged: ConfigFile,
    pub warnings: Vec<String>,
    pub workspace_root: PathBuf,
    /// The user trusts this workspace (`keel trust`): its config applies.
    pub project_trusted: bool,
    /// Each source's `[hooks]` table, user file first, then the project's,
    /// then every `-c hooks.…` in order.
    pub hook_tables: Vec<HookTable>,
    /// The project file's `[context]` prices (not in `merged`).
    pub project_prices: Option<ContextFile>,
    /// The project's `[mcp_servers]` (started only once it is trusted).
    pub project_mcp_servers: super::mcp::McpServerTables,
}

/// Moves the prices out of `context`, leaving its window and threshold.
fn take_prices(context: &mut ContextFile) -> ContextFile {
    ContextFile {
        input_price: context.input_price.take(),
        cached_input_price: context.cached_input_price.take(),
        output_price: context.output_price.take(),
        cache_write_price: context.cache_write_price.take(),
        ..ContextFile::default()
    }
}

/// One source's `[hooks]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct HookTable {
    pub origin: HookOrigin,
    pub table: toml::Table,
}

/// Where a `[hooks]` table was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOrigin {
    UserFile(PathBuf),
    ProjectFile(PathBuf),
    /// `-c hooks.EVENT=…` (the user's, like their file).
    Override(String),
}

/// Reads the user file, the project file and the `-c` overrides. An
/// untrusted project's file applies only display preferences (the
/// `[context]` prices); everything else it sets is named in one warning,
/// and a file that does not parse is a warning too, since none of it
/// would apply. After `keel trust` it applies, except what a project may
/// never set (`base_url`, `api_key_env`, `[sandbox]`, `[secrets]`,
/// `[shell] env_keep`).
pub fn read_layers(env: &Environment, cli: &CliOverrides) -> Result<Layers, ConfigError> {
    let workspace_root = find_workspace_root(&env.cwd);
    let project_trusted = rules::is_trusted(&env.keel_home, &workspace_root)?;
    let mut layers =
        Layers { workspace_root: workspace_root.clone(), project_trusted, ..Layers::default() };
    let user_path = env.keel_home.join("config.toml");
    if let Some(mut user) = read_file(&user_path)? {
        if let Some(table) = user.hooks.take() {
            layers.hook_tables.push(HookTable { origin: HookOrigin::UserFile(user_path), table });
        }
        layers.merged.overlay(user);
    }
    let project_path = workspace_root.join(".keel").join("config.toml");
    let project = match read_file(&project_path) {
        Ok(project) => project,
        Err(error) if !project_trusted => {
            layers.warnings.push(format!(
                "{} is ignored until you trust this project (`keel trust`); it also has an \
                 error: {error}",
                project_path.display()
            ));
            None
        }
        Err(error) => return Err(error),
    };
    if let Some(mut project) = project {
        // Kept apart either way: a project's servers wait for trust
        // (`config::mcp` lists them as skipped until then).
        layers.project_mcp_servers = project.mcp_servers.take().unwrap_or_default();
        if let Some(table) = project.hooks.take() {
            // Loaded either way: hooks wait for trust when they would run.
            let origin = HookOrigin::ProjectFile(project_path.clone());
            layers.hook_tables.push(HookTable { origin, table });
        }
        // Limits only tighten, so a project's apply trusted or not.
        if let Some(limits) = project.limits.take() {
            layers.merged.limits.get_or_insert_with(LimitsFile::default).tighten(limits);
        }
        let mut kept = if project_trusted {
            trusted_project(project, &project_path, &env.keel_home, &mut layers.warnings)
        } else {
            untrusted_project(project, &project_path, &mut layers.warnings)
        };
        // Kept apart: prices count toward a cost limit, so a project's may
        // only raise them (`limits::with_project_prices`).
        layers.project_prices = kept.context.as_mut().map(take_prices);
        layers.merged.overlay(kept);
    }
    for text in &cli.set {
        let mut parsed = parse_override(text)?;
        if let Some(table) = parsed.hooks.take() {
            let origin = HookOrigin::Override(text.clone());
            layers.hook_tables.push(HookTable { origin, table });
        }
        layers.merged.overlay(parsed);
    }
    Ok(layers)
}

/// The nearest ancestor of `cwd` holding `.git`, else `cwd` itself.
pub fn find_workspace_root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).unwrap_or(cwd).to_path_buf()
}

pub(super) fn read_file(path: &Path) -> Result<Option<ConfigFile>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ConfigError::Read { path: path.to_owned(), source }),
    };
    toml::from_str(&text).map(Some).map_err(|error| toml_error(path, &text, &error))
}

/// A TOML error as `file:line:column: message`, where the parser says it is.
pub(super) fn toml_error(path: &Path, text: &str, error: &toml::de::Error) -> ConfigError {
    let Some(span) = error.span() else {
        return ConfigError::Parse { path: path.to_owned(), message: error.to_string() };
    };
    // "Carriage return must be followed by newline" points past the CR;
    // the CR is what the user must fix.
    let after_lone_cr = span.start > 0
        && text.as_bytes().get(span.start - 1) == Some(&b'\r')
        && text.as_bytes().get(span.start) != Some(&b'\n');
    let at = if after_lone_cr { span.start - 1 } else { span.start };
    let (line, column) = line_and_column(text, at);
    let message = plain_types(error.message().trim());
    let width = span.end.saturating_sub(span.start).max(1);
    let snippet = caret_snippet(text, at, line, column, width);
    ConfigError::ParseAt { path: path.to_owned(), line, column, message, snippet }
}

/// serde's names of Rust types in a message ("expected u32") in the words
/// a config file's author uses.
fn plain_types(message: &str) -> String {
    let mut plain = message.to_owned();
    for (rust, words) in [
        ("expected u8", "expected a whole number"),
        ("expected u16", "expected a whole number"),
        ("expected u32", "expected a whole number"),
        ("expected u64", "expected a whole number"),
        ("expected usize", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected i64", "expected a whole number"),
        ("expected f32", "expected a number"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected a list, e.g. [\"a\", \"b\"]"),
        ("expected a boolean", "expected true or false"),
    ] {
        if let Some(at) = plain.find(rust) {
            // Only a whole word: `u32` is not the start of `u320`.
            let end = at + rust.len();
            if !plain[end..].starts_with(|c: char| c.is_ascii_alphanumeric()) {
                plain.replace_range(at..end, words);
            }
        }
    }
    plain
}

/// TOML's picture of an error, lines counted as [`line_and_column`] does:
/// the line, and carets under the bad part.
fn caret_snippet(text: &str, at: usize, line: usize, column: usize, width: usize) -> String {
    let start =
        text.get(..at).map_or(0, |before| before.rfind(['\n', '\r']).map_or(0, |end| end + 1));
    let rest = text.get(start..).unwrap_or_default();
    let shown = rest.split(['\n', '\r']).next().unwrap_or_default();
    let number = line.to_string();
    let pad = " ".repeat(number.len());
    let carets = "^".repeat(width.min(shown.chars().count().saturating_sub(column - 1)).max(1));
    format!("{pad} |\n{number} | {shown}\n{pad} | {}{carets}", " ".repeat(column - 1))
}

/// The 1-based line and column (in characters) of byte `offset` of
/// `text`; LF, CRLF and a lone CR each end a line (TOML refuses a lone CR,
/// and the error about it must still point where the editor shows it).
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let mut line = 1;
    let mut line_start = 0;
    let bytes = text.as_bytes();
    for (at, byte) in before.bytes().enumerate() {
        let ends_line = match byte {
            b'\n' => true,
            b'\r' => bytes.get(at + 1) != Some(&b'\n'),
            _ => false,
        };
        if ends_line {
            line += 1;
            line_start = at + 1;
        }
    }
    (line, before[line_start..].chars().count() + 1)
}

/// Parses `key=value`; the value is TOML (`max_steps=5`) or, failing
/// that, a bare string (`model=gpt-5`). Errors show the override as TOML
/// with a caret at the bad part, as config file errors do.
fn parse_override(text: &str) -> Result<ConfigFile, ConfigError> {
    let bad = |message: String| ConfigError::BadOverride { text: text.to_owned(), message };
    let Some((key, value)) = text.split_once('=') else {
        return Err(bad("expected key=value".to_owned()));
    };
    let key = key.trim();
    let value = value.trim();
    let as_toml = format!("{key} = {value}");
    let as_string = format!("{key} = {}", toml::Value::String(value.to_owned()));
    let typed = toml::from_str::<ConfigFile>(&as_toml);
    let typed_error = match typed {
        Ok(parsed) => return Ok(parsed),
        // Valid TOML that does not fit (a range, an unknown key) is the
        // error to show; a value that is not TOML may still be a string.
        Err(error) => as_toml.parse::<toml::Table>().is_ok().then_some(error),
    };
    match (toml::from_str::<ConfigFile>(&as_string), typed_error) {
        (Ok(parsed), _) => Ok(parsed),
        (Err(_), Some(error)) | (Err(error), None) => {
            Err(bad(plain_types(error.to_string().trim_end())))
        }
    }
}

#[cfg(test)]
#[path = "layers_tests.rs"]
mod tests;
