//! The jail a session's commands run in, as a value ([`CommandJail`]):
//! the confinement (none when commands run unconfined: no sandbox on this
//! kernel, full-access with network, or the user's unsandboxed re-run),
//! the environment filter of the model's commands, and the nested `.git`
//! search whose paths join the confinement's read-only ones before the
//! first command that can write.
//!
//! Invariants:
//! - nothing here is process-wide: a session holds its jail (behind an
//!   `Arc` in every `ToolContext` it builds, shared with its subagents),
//!   so two sessions of one process (`keel mcp-server`) confine their
//!   commands each by its own, and an unsandboxed re-run is a jail
//!   without confinement ([`CommandJail::without_confinement`]), never a
//!   setting lifted and restored around an `.await`;
//! - a writing command never starts before the nested search has
//!   settled; the search runs at most once per jail (held across the
//!   wait, so a second command waits too); a read needs no carve-out
//!   (nothing is writable for it) and never waits;
//! - after a confined command, the protected folders it created are
//!   removed and the command fails ([`protected::Sweep`]);
//! - a command judged a read runs every git it starts with the programs
//!   a repository can name switched off ([`git_write::neutral_config_env`]),
//!   the driver programs (textconv, filters, diff and merge drivers) its
//!   own config names too; a recognised git write gets the same drivers
//!   off, a required filter left required (it fails rather than storing
//!   unfiltered content).
//! - with the network off or allowlist, every confined command of the
//!   jail (reads, writes, git, background) joins one network namespace,
//!   the session's ([`SessionNetwork`], started with the first of them
//!   and ended with the jail), so a server one call starts is reached
//!   from the next; without it (the keeper failed) each command gets a
//!   private namespace of its own.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::jail::shared_net::SharedNetwork;
use super::landlock::Confinement;
use super::netproxy::{NetLog, NetProxy};
use super::session_net::SessionNetwork;
use super::{CommandOutput, CommandSpec, EnvFilter, SandboxError, git_write, process, protected};

/// A search for more read-only paths (the workspace's nested `.git`).
type Search = Box<dyn FnOnce() -> Vec<PathBuf> + Send>;

/// What a command may change, which picks its jail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandAccess {
    /// Judged read-only, running alongside other reads: nothing writable
    /// ([`Confinement::for_reads`]).
    Reads,
    /// The session's jail: the workspace and the temp folders writable,
    /// the carve-outs read-only.
    Writes,
    /// The session's jail, and `.git` writable but for what makes git
    /// run programs: a recognised git command only
    /// ([`CallJail::run_git`]).
    GitWrites,
}

/// The session's jail (see the module doc).
pub struct CommandJail {
    confinement: Option<Confinement>,
    env: EnvFilter,
    nested: tokio::sync::Mutex<NestedGit>,
    /// The session's network namespace, once a command needed it
    /// (`None` inside: its keeper could not be started).
    network: tokio::sync::OnceCell<Option<SessionNetwork>>,
    /// The session's allowlist proxy and host-port bridges, whose sockets
    /// `confinement.bridges` names; they live as long as the jail.
    proxy: Option<Arc<NetProxy>>,
    /// What the proxy and `web_fetch` judged, until the log takes it.
    net_log: NetLog,
}

/// Where the nested `.git` search stands. It reads every folder of the
/// workspace, so a session start does not wait for it (issue 21): it
/// starts with the first undo checkpoint ([`CommandJail::start_nested_search`])
/// or the first confined command that can write, which waits for it.
enum NestedGit {
    NotStarted(Search),
    Running(tokio::sync::oneshot::Receiver<Vec<PathBuf>>),
    Settled(Vec<PathBuf>),
}

impl std::fmt::Debug for CommandJail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandJail")
            .field("confinement", &self.confinement)
            .field("env", &self.env)
            .finish_non_exhaustive()
    }
}

impl Default for CommandJail {
    /// Unconfined, with the built-in environment filter.
    fn default() -> Self {
        Self::unconfined(EnvFilter::default())
    }
}

impl CommandJail {
    /// Commands confined by `confinement` (none: unconfined), their
    /// environment filtered by `env`.
    pub fn new(confinement: Option<Confinement>, env: EnvFilter) -> Self {
        Self {
            confinement,
            env,
            nested: tokio::sync::Mutex::new(NestedGit::Settled(Vec::new())),
            network: tokio::sync::OnceCell::new(),
            proxy: None,
            net_log: NetLog::default(),
        }
    }

    /// The same jail, holding the session's `proxy` (whose bridges its
    /// confinement names) and recording judgements in `net_log`.
    #[must_use]
    pub fn with_network(mut self, proxy: Option<NetProxy>, net_log: NetLog) -> Self {
        self.proxy = proxy.map(Arc::new);
        self.net_log = net_log;
        self
    }

    /// The session's network judgements (the proxy's and `web_fetch`'s),
    /// waiting for the log.
    pub fn net_log(&self) -> &NetLog {
        &self.net_log
    }

    /// Commands run unconfined, their environment filtered by `env`.
    pub fn unconfined(env: EnvFilter) -> Self {
        Self::new(None, env)
    }

    /// The same environment filter with no confinement: the user's
    /// approved re-run outside the sandbox. The nested search stays with
    /// this jail, for the commands after the re-run.
    pub fn without_confinement(&self) -> Self {
        Self::unconfined(self.env.clone()).with_network(None, self.net_log.clone())
    }

    /// The same jail, whose writing commands also keep read-only what
    /// `search` finds (run once, before the first of them).
    #[must_use]
    pub fn with_nested_search(
        mut self,
        search: impl FnOnce() -> Vec<PathBuf> + Send + 'static,
    ) -> Self {
        self.nested = tokio::sync::Mutex::new(NestedGit::NotStarted(Box::new(search)));
        self
    }

    /// The confinement as configured (before the nested search adds to
    /// it); `None` when commands run unconfined.
    pub fn confinement(&self) -> Option<&Confinement> {
        self.confinement.as_ref()
    }

    /// What the model's commands' inherited environment loses.
    pub fn env_filter(&self) -> &EnvFilter {
        &self.env
    }

    /// Starts the nested search on a thread of its own, if it has not
    /// started: a writing command is coming (its checkpoint is being
    /// taken), and the search runs alongside.
    pub fn start_nested_search(&self) {
        let Ok(mut nested) = self.nested.try_lock() else { return };
        if !matches!(&*nested, NestedGit::NotStarted(_)) {
            return;
        }
        let (found, receiver) = tokio::sync::oneshot::channel();
        if let NestedGit::NotStarted(search) =
            std::mem::replace(&mut *nested, NestedGit::Running(receiver))
        {
            std::thread::spawn(move || {
                let _ = found.send(search());
            });
        }
    }

    /// What the nested search found, waiting for it (and running it when
    /// it has not started). A search that died leaves what it would have
    /// found writable, as a search past its folder limit does.
    async fn nested_read_only(&self) -> Vec<PathBuf> {
        let mut nested = self.nested.lock().await;
        let found = match std::mem::replace(&mut *nested, NestedGit::Settled(Vec::new())) {
            NestedGit::Settled(found) => found,
            NestedGit::NotStarted(search) => {
                tokio::task::spawn_blocking(search).await.unwrap_or_default()
            }
            NestedGit::Running(receiver) => receiver.await.unwrap_or_default(),
        };
        *nested = NestedGit::Settled(found.clone());
        found
    }

    /// The confinement a command with `access` gets (the nested search
    /// settled first for one that can write); `None`: unconfined.
    pub async fn confinement_for(&self, access: CommandAccess) -> Option<Confinement> {
        let base = self.confinement.as_ref()?;
        let mut confinement = match access {
            CommandAccess::Reads => base.for_reads(),
            CommandAccess::Writes | CommandAccess::GitWrites => {
                let mut confinement = base.clone();
                confinement.read_only.extend(self.nested_read_only().await);
                confinement.git_write = access == CommandAccess::GitWrites;
                confinement
            }
        };
        if confinement.network.is_closed() {
            confinement.shared_network = self.session_network(base).await;
        }
        Some(confinement)
    }

    /// The session's network namespace, its keeper started on the first
    /// call (once: a keeper that failed is not retried, and its commands
    /// get namespaces of their own, said by their launchers).
    async fn session_network(&self, base: &Confinement) -> Option<SharedNetwork> {
        let network = self
            .network
            .get_or_init(|| async {
                let (launcher, bridges) = (base.launcher.clone(), base.bridges.clone());
                let started =
                    tokio::task::spawn_blocking(move || SessionNetwork::start(&launcher, &bridges))
                        .await;
                match started {
                    Ok(Ok(network)) => Some(network),
                    Ok(Err(error)) => {
                        tracing::warn!(%error, "no shared network namespace for the session");
                        None
                    }
                    Err(_) => None,
                }
            })
            .await;
        network.as_ref().map(SessionNetwork::shared)
    }

    /// Runs the model's command `spec` in this jail: its environment
    /// filtered, confined as `access` says (see [`super::run`] for the
    /// rest), the protected folders it created removed after it.
    pub async fn run(
        &self,
        spec: CommandSpec,
        access: CommandAccess,
        cancel: &CancellationToken,
    ) -> Result<CommandOutput, SandboxError> {
        let mut spec = spec.with_filtered_env(self.env.clone());
        if access == CommandAccess::Reads {
            // Only a command that names git can start one (it was judged
            // a read: no script of its own runs).
            let drivers = if spec.display().contains("git") {
                driver_overrides(&spec.cwd, git_write::RequiredFilters::Relax).await
            } else {
                Vec::new()
            };
            spec = git_write::config_env_with(&drivers)
                .into_iter()
                .fold(spec, |spec, (key, value)| spec.with_env(key, value));
        }
        match self.confinement_for(access).await {
            Some(confinement) => run_confined(spec, &confinement, cancel).await,
            None => process::run(&spec, cancel).await,
        }
    }

    /// This jail for one command of `access`.
    pub fn for_call(&self, access: CommandAccess) -> CallJail<'_> {
        CallJail { jail: self, access }
    }
}

/// The jail of one call: a session's [`CommandJail`] and the access the
/// call was judged to need (`ToolContext::command_jail`). What a tool
/// that spawns the model's commands asks.
#[derive(Debug, Clone, Copy)]
pub struct CallJail<'a> {
    jail: &'a CommandJail,
    access: CommandAccess,
}

impl CallJail<'_> {
    /// What the call may change.
    pub fn access(&self) -> CommandAccess {
        self.access
    }

    /// The confinement of this call's commands (`None`: unconfined).
    pub async fn confinement(&self) -> Option<Confinement> {
        self.jail.confinement_for(self.access).await
    }

    /// What the call's commands' inherited environment loses.
    pub fn env_filter(&self) -> &EnvFilter {
        self.jail.env_filter()
    }

    /// Runs `spec` in the call's jail ([`CommandJail::run`]).
    pub async fn run(
        &self,
        spec: CommandSpec,
        cancel: &CancellationToken,
    ) -> Result<CommandOutput, SandboxError> {
        self.jail.run(spec, self.access, cancel).await
    }

    /// Runs a recognised git command (`policy::git_write`), whose words
    /// are `argv`, as the neutralised git of [`git_write`] in a jail
    /// whose `.git` is writable but for what makes git run programs.
    /// `script` is how the command runs otherwise, and does: for a read,
    /// unconfined, or when no git lies outside the writable roots.
    pub async fn run_git(
        &self,
        argv: &[String],
        script: CommandSpec,
        cancel: &CancellationToken,
    ) -> Result<CommandOutput, SandboxError> {
        let confinement = match self.access {
            CommandAccess::Reads => None,
            CommandAccess::Writes | CommandAccess::GitWrites => {
                self.jail.confinement_for(CommandAccess::GitWrites).await
            }
        };
        let program = confinement.as_ref().and_then(git_write::git_program);
        match (confinement, program, argv.split_first()) {
            (Some(confinement), Some(program), Some((_git, args))) => {
                let drivers = driver_overrides(&script.cwd, git_write::RequiredFilters::Keep).await;
                let spec = git_write::config_env_with(&drivers).into_iter().fold(
                    git_write::spec(&program, args, &script)
                        .with_filtered_env(self.jail.env.clone()),
                    |spec, (key, value)| spec.with_env(key, value),
                );
                run_confined(spec, &confinement, cancel).await
            }
            _ => self.run(script, cancel).await,
        }
    }
}

/// The repository's driver programs at `cwd`, switched off
/// ([`git_write::repository_driver_overrides`], on a blocking thread).
async fn driver_overrides(
    cwd: &std::path::Path,
    required: git_write::RequiredFilters,
) -> Vec<(String, String)> {
    let cwd = cwd.to_owned();
    tokio::task::spawn_blocking(move || git_write::repository_driver_overrides(&cwd, required))
        .await
        .unwrap_or_default()
}

/// Runs `spec` confined, then removes the protected paths it created (the
/// workspace's protected names and the read-only paths a mount could not
/// hold because they did not exist yet; whatever its outcome: nothing of
/// it runs any more) and says so on its stderr.
async fn run_confined(
    spec: CommandSpec,
    confinement: &Confinement,
    cancel: &CancellationToken,
) -> Result<CommandOutput, SandboxError> {
    let workspace = match confinement.protect_vcs {
        true => protected::guarded_paths(&confinement.workspace_roots, confinement.git_write),
        false => Vec::new(),
    };
    let sweep = protected::Sweep::before(workspace, &confinement.read_only);
    let result = process::run(&spec.confined(confinement), cancel).await;
    let removed = sweep.after();
    let mut output = result?;
    if !removed.is_empty() {
        output.stderr.append_note(&removed.join("\n"));
        if output.exit_code == Some(0) {
            output.exit_code = Some(1);
        }
    }
    Ok(output)
}
