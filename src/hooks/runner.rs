//! Running the hooks of an event: selection by matcher and `if` rule,
//! trust, the subprocess (through `sandbox`, stdin fed from a private temp
//! file, unconfined: the user's own command; its environment keel's minus
//! the session's filter, given with [`HookBus::with_env_filter`]), native
//! in-process hooks (`native.rs`), and the record of every run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::join_all;
use tokio_util::sync::CancellationToken;

use super::HookEvent;
use super::config::{CommandHook, HookSource, HooksConfig};
use super::native::{NativeHook, run_natives};
use super::outcome::{HookOutcome, HookVerdict, interpret};
use super::payload::{HookPayload, ToolNaming, keel_input};
use crate::sandbox::{self, CommandSpec, EnvFilter, SandboxError};

/// One hook run, for the session log.
#[derive(Debug, Clone, PartialEq)]
pub struct HookRun {
    pub event: HookEvent,
    pub command: String,
    pub source: String,
    pub duration_ms: u64,
    pub exit_code: Option<i32>,
    pub outcome: HookOutcome,
    /// Why the hook did not run (an untrusted project's hook).
    pub skipped: Option<String>,
    /// A native hook panicked (a keel bug): the caught panic, for the
    /// `internal_error` log line.
    pub panicked: Option<String>,
}

/// Every configured hook source, keel's native hooks, and whether project
/// hooks may run.
#[derive(Debug, Clone, Default)]
pub struct HookBus {
    configs: Vec<HooksConfig>,
    natives: Vec<Arc<dyn NativeHook>>,
    project_trusted: bool,
    /// What a hook's inherited environment loses (the session's `[shell]`).
    env: EnvFilter,
}

impl HookBus {
    pub fn new(configs: Vec<HooksConfig>, project_trusted: bool) -> Self {
        Self { configs, natives: Vec::new(), project_trusted, env: EnvFilter::default() }
    }

    /// The same bus, its hooks' environment filtered by `env`.
    #[must_use]
    pub fn with_env_filter(mut self, env: EnvFilter) -> Self {
        self.env = env;
        self
    }

    /// Adds a native hook; it runs before the subprocess hooks of an event.
    #[must_use]
    pub fn with_native(mut self, hook: Arc<dyn NativeHook>) -> Self {
        self.natives.push(hook);
        self
    }

    /// Adds native hooks (see [`with_native`](Self::with_native)).
    #[must_use]
    pub fn with_natives(self, hooks: impl IntoIterator<Item = Arc<dyn NativeHook>>) -> Self {
        hooks.into_iter().fold(self, Self::with_native)
    }

    /// True when no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.natives.is_empty() && self.configs.iter().all(|config| config.events.is_empty())
    }

    /// Whether any hook (trusted or not: a skipped run is recorded too)
    /// may run for `event`; callers skip building payloads otherwise.
    pub fn listens(&self, event: HookEvent) -> bool {
        self.natives.iter().any(|hook| hook.listens(event))
            || self.configs.iter().any(|config| config.events.contains_key(&event))
    }

    /// Runs every hook `event` selects, concurrently, and folds their say.
    /// `subject` is the tool name for tool events, or the event's matcher
    /// target (SessionStart's source).
    pub async fn dispatch(
        &self,
        event: HookEvent,
        payload: &HookPayload,
        subject: Option<&str>,
        project_dir: &Path,
        cancel: &CancellationToken,
    ) -> (HookVerdict, Vec<HookRun>) {
        let primary = payload.primary_argument();
        let mut runs = run_natives(&self.natives, event, payload, subject);
        let mut pending = Vec::new();
        for config in &self.configs {
            for hook in config.matching(event, subject, primary) {
                let untrusted =
                    matches!(config.source, HookSource::Project { .. }) && !self.project_trusted;
                if untrusted {
                    runs.push(skipped(event, hook, &config.source));
                    continue;
                }
                let run = HookCall { event, source: &config.source, project_dir, env: &self.env };
                pending.push(run_one(run, hook, payload, cancel));
            }
        }
        runs.extend(join_all(pending).await);
        let outcomes: Vec<HookOutcome> = runs
            .iter()
            .filter(|run| run.skipped.is_none())
            .map(|run| run.outcome.clone())
            .collect();
        (HookVerdict::fold(&outcomes), runs)
    }
}

impl HookBus {
    /// Runs only the native hooks of `event` (no subprocess): for input
    /// a subprocess hook already produced (`updatedInput`), which keel's
    /// own hooks must judge again without asking the others twice.
    pub fn dispatch_natives(
        &self,
        event: HookEvent,
        payload: &HookPayload,
        subject: Option<&str>,
    ) -> (HookVerdict, Vec<HookRun>) {
        let runs = run_natives(&self.natives, event, payload, subject);
        let outcomes: Vec<HookOutcome> = runs.iter().map(|run| run.outcome.clone()).collect();
        (HookVerdict::fold(&outcomes), runs)
    }
}

fn skipped(event: HookEvent, hook: &CommandHook, source: &HookSource) -> HookRun {
    HookRun {
        event,
        command: hook.command.clone(),
        source: source.name().to_owned(),
        duration_ms: 0,
        exit_code: None,
        outcome: HookOutcome::default(),
        skipped: Some("the project is not trusted; run `keel trust` to enable its hooks".into()),
        panicked: None,
    }
}

/// Where and how one hook runs.
struct HookCall<'a> {
    event: HookEvent,
    source: &'a HookSource,
    project_dir: &'a Path,
    env: &'a EnvFilter,
}

async fn run_one(
    call: HookCall<'_>,
    hook: &CommandHook,
    payload: &HookPayload,
    cancel: &CancellationToken,
) -> HookRun {
    let HookCall { event, source, project_dir, env } = call;
    let started = Instant::now();
    let naming = if source.is_claude() { ToolNaming::Claude } else { ToolNaming::Keel };
    let stdin = payload.to_json(event, naming).to_string();
    let (exit_code, mut outcome) = match spawn(hook, &stdin, project_dir, env, cancel).await {
        Ok(output) => (
            output.exit_code,
            interpret(
                output.exit_code,
                output.timed_out,
                &output.stdout.text(),
                &output.stderr.text(),
            ),
        ),
        Err(error) => (None, HookOutcome { error: Some(error), ..HookOutcome::default() }),
    };
    let tool = payload.tool_name.as_deref().unwrap_or_default();
    outcome.updated_input = outcome.updated_input.map(|input| keel_input(tool, input, naming));
    HookRun {
        event,
        command: hook.command.clone(),
        source: source.name().to_owned(),
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        exit_code,
        outcome,
        skipped: None,
        panicked: None,
    }
}

/// Runs the hook's command with `stdin` as its standard input. The input
/// goes through a private temp file that the script redirects from, so the
/// sandbox's process handling (group kill at the timeout) is reused as is.
/// The script removes the file once its stdin is open: a keel that exits
/// at once mid-hook (a second Ctrl-C or SIGTERM) leaves nothing in the
/// shared temp dir; [`StdinFile`]'s drop covers a hook that never started.
async fn spawn(
    hook: &CommandHook,
    stdin: &str,
    project_dir: &Path,
    env: &EnvFilter,
    cancel: &CancellationToken,
) -> Result<sandbox::CommandOutput, String> {
    let input = StdinFile::create(stdin).map_err(|e| format!("cannot stage hook input: {e}"))?;
    let path = input.path.display();
    let script = format!("exec < '{path}'\nrm -f -- '{path}'\n{}", hook.command);
    let spec = CommandSpec::script(script, project_dir)
        .with_filtered_env(env.clone())
        .with_timeout(hook.timeout())
        .with_env("CLAUDE_PROJECT_DIR", project_dir)
        .with_env("KEEL_PROJECT_DIR", project_dir);
    sandbox::run(&spec, cancel).await.map_err(|error| match error {
        SandboxError::Cancelled { .. } => "cancelled".to_owned(),
        SandboxError::Spawn { .. } | SandboxError::Wait { .. } => error.to_string(),
    })
}

/// A temp file holding a hook's stdin, removed on drop. Its name is ours
/// (a UUID under the temp dir), so quoting it in the script is safe.
struct StdinFile {
    path: PathBuf,
}

impl StdinFile {
    /// Created new (never through a planted file or link) and readable by
    /// the owner only: the payload can hold tool inputs (file contents,
    /// commands) and the temp dir is shared with other users.
    fn create(text: &str) -> std::io::Result<Self> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let path = std::env::temp_dir().join(format!("keel-hook-{}.json", uuid::Uuid::now_v7()));
        let mut file =
            std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path)?;
        let staged = Self { path };
        file.write_all(text.as_bytes())?;
        Ok(staged)
    }
}

impl Drop for StdinFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::StdinFile;

    #[test]
    fn a_hook_s_staged_input_is_readable_by_its_owner_only_and_removed_after() {
        let staged = StdinFile::create(r#"{"tool_input":{"content":"secret"}}"#).unwrap();
        let path = staged.path.clone();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the payload of {} is mode {mode:o}", path.display());
        drop(staged);
        assert!(!path.exists());
    }
}
