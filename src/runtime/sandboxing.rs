//! The session's sandbox and policy setup: the compiled policy, the jail
//! of the model's commands (a [`CommandJail`] value the session hands to
//! every tool context: the landlock confinement, probed at start and
//! never silently dropped, and the `[shell]` environment filter), and how
//! a command blocked by it is reported.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::agent::LoopConfig;
use crate::config::{SandboxSettings, Settings};
use crate::policy::network::DomainPattern;
use crate::policy::{PathContext, Policy};
use crate::prompts::{NetworkWalls, Walls};
use crate::protocol::{ResultKind, ToolMeta, ToolResult};
use crate::sandbox::{self, CommandJail, EnvFilter, jail, landlock};

use super::undo::first_walk::OfferedWatch;
use super::{SandboxState, SessionOptions};
use crate::protocol::tool_facts::names;

/// The compiled policy for a session.
pub(super) fn build_policy(settings: &Settings, options: &SessionOptions) -> Policy {
    let paths = PathContext::new(
        settings.home.clone(),
        settings.workspace_root.clone(),
        options.cwd.clone(),
    );
    let paths = PathContext { secrets: settings.secret_places.clone(), ..paths };
    let mut policy = Policy::new(settings.rules.clone(), options.approval, paths);
    policy.project_trusted = settings.project_trusted;
    policy.egress = crate::policy::egress::Egress {
        taint: settings.taint,
        network: settings.sandbox.network.mode,
    };
    policy
}

/// What the session's commands run under: its jail, shared by the
/// calls (and subagents) of the session, and the undo watcher its nested
/// `.git` search sets up ([`super::undo::first_walk`]).
pub(super) struct SessionSandbox {
    pub(super) jail: Arc<CommandJail>,
    pub(super) offered_watch: Option<OfferedWatch>,
}

impl SessionSandbox {
    /// A subagent's: its parent's jail (the same confinement, the same
    /// nested search), no watcher (its parent's checkpoints cover it).
    pub(super) fn shared(jail: Arc<CommandJail>) -> Self {
        Self { jail, offered_watch: None }
    }
}

/// The jail every command the model runs gets (landlock through `keel
/// sandbox-exec`, the environment filter of `[shell]`), and records in
/// the policy whether it confines; hides keel's own environment from
/// other processes. Returns a warning when the sandbox is weaker than
/// configured.
pub(super) fn setup_sandbox(
    settings: &Settings,
    config: &mut LoopConfig,
) -> (SessionSandbox, Option<String>) {
    sandbox::protect_own_environ();
    let keel_home = Some(settings.keel_home.as_path());
    let (confined, offered_watch) =
        confine(&settings.sandbox, &settings.env_filter, &settings.workspace_root, keel_home);
    config.policy.sandboxed = confined.sandboxed;
    // What the model is told about the walls comes from the jail itself.
    config.walls = confined
        .jail
        .confinement()
        .map(|confinement| super::walls::walls_of(confinement, &settings.home))
        .unwrap_or_else(Walls::default);
    if let NetworkWalls::Allowlist { hosts, .. } = &mut config.walls.network {
        let allowed = settings.sandbox.network.project.as_ref();
        *hosts = allowed
            .unwrap_or(&settings.sandbox.network.user)
            .iter()
            .map(DomainPattern::text)
            .collect();
    }
    (SessionSandbox { jail: Arc::new(confined.jail), offered_watch }, confined.warning)
}

/// The jail of the model's commands built from the `[sandbox]` settings.
pub struct Confined {
    pub jail: CommandJail,
    /// Whether commands are confined (what `Policy::sandboxed` must say).
    pub sandboxed: bool,
    /// Every layer the kernel did not offer, or why nothing is confined.
    pub warning: Option<String>,
}

/// The jail of the model's commands from the `[sandbox]` settings, their
/// environment filtered by `env` (shared by sessions and `keel tool`).
pub fn confine_commands(
    config: &SandboxSettings,
    env: &EnvFilter,
    workspace_root: &Path,
) -> Confined {
    confine(config, env, workspace_root, None).0
}

/// [`confine_commands`]; with a session's `keel_home`, the nested `.git`
/// search also sets up the undo watcher ([`super::undo::first_walk`]).
fn confine(
    config: &SandboxSettings,
    env: &EnvFilter,
    workspace_root: &Path,
    keel_home: Option<&Path>,
) -> (Confined, Option<OfferedWatch>) {
    let unconfined = |warning: String| Confined {
        jail: CommandJail::unconfined(env.clone()),
        sandboxed: false,
        warning: Some(warning),
    };
    let keel = match std::env::current_exe() {
        Ok(path) => path,
        Err(error) => {
            return (
                unconfined(format!(
                    "SANDBOX OFF: cannot find the keel binary to launch sandboxed commands: {error}"
                )),
                None,
            );
        }
    };
    let network = config.network.mode;
    if config.mode == landlock::SandboxMode::FullAccess && !network.is_closed() {
        return (
            unconfined(
                "SANDBOX OFF by configuration (full-access with network): commands run unconfined"
                    .to_owned(),
            ),
            None,
        );
    }
    let net_log = sandbox::netproxy::NetLog::default();
    let proxy = sandbox::netproxy::NetProxy::start(
        &sandbox::netproxy::NetConfig {
            allowlist: config.network.clone(),
            hosts: config.hosts.clone(),
            host_ports: config.host_ports.clone(),
        },
        &net_log,
    );
    let (proxy, bridge_warning) = match proxy {
        Ok(proxy) => (Some(proxy), None),
        Err(error) => (None, Some(format!("the sandbox's network bridges are missing: {error}"))),
    };
    let bridges = proxy.as_ref().map(|proxy| proxy.bridges().clone()).unwrap_or_default();
    let mut confinement = landlock::Confinement {
        launcher: keel.clone(),
        mode: config.mode,
        workspace_roots: vec![workspace_root.to_path_buf()],
        extra_roots: config.writable_roots.clone(),
        read_only: read_only_paths(config, workspace_root),
        network,
        bridges,
        required: config.required,
        protect_vcs: config.protect_vcs,
        git_write: false,
        max_pids: jail::privileges::default_max_pids(),
        shared_network: None,
        hidden: config.hidden.clone(),
    };
    // The small launcher beside keel when it answers (`jail::launcher`).
    let layers = jail::launcher::probe_first(&mut confinement, &keel).unwrap_or_default();
    if !layers.namespaces.mount {
        // Only a mount namespace covers them: the walls must not claim it.
        confinement.hidden.clear();
    }
    let (confine, sandboxed, warning) = match layers.landlock {
        landlock::Enforcement::Full | landlock::Enforcement::Partial => (true, true, None),
        landlock::Enforcement::None if config.required => (
            true,
            false,
            Some("SANDBOX UNAVAILABLE and sandbox.required = true: commands will be refused".to_owned()),
        ),
        landlock::Enforcement::None => (
            false,
            false,
            Some("SANDBOX OFF: this kernel cannot enforce landlock; commands run unconfined and auto mode asks for unknown commands".to_owned()),
        ),
    };
    let gaps = if sandboxed { layers.gaps() } else { Vec::new() };
    let gaps = (!gaps.is_empty())
        .then(|| format!("sandbox layers missing on this kernel: {}", gaps.join("; ")));
    let warning = [warning, vcs_warning(sandboxed, layers.vcs), gaps, bridge_warning]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    let mut jail = CommandJail::new(confine.then_some(confinement), env.clone())
        .with_network(proxy.filter(|_| confine), net_log);
    let mut offered_watch = None;
    if confine && config.protect_vcs {
        let (search, offered) = nested_git_search(workspace_root, keel_home);
        jail = jail.with_nested_search(search);
        offered_watch = offered;
    }
    let warning = (!warning.is_empty()).then(|| warning.join("; "));
    (Confined { jail, sandboxed, warning }, offered_watch)
}

/// What stays read-only even inside a writable root: keel's own state
/// (trust records, rules, config: a command must not run `keel trust` or
/// add rules) and the home folder when it lies in a writable root (a temp
/// folder: shell rc files run outside the jail). The workspace's nested
/// `.git` folders (hooks and `core.fsmonitor` run by the user's git) are
/// added once a command may write ([`nested_git_search`]).
fn read_only_paths(config: &SandboxSettings, workspace_root: &Path) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let keel_home = std::env::var_os("KEEL_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|home| home.join(".keel")));
    let writable: Vec<PathBuf> = config
        .writable_roots
        .iter()
        .cloned()
        .chain(landlock::temp_roots())
        .chain(std::iter::once(workspace_root.to_path_buf()))
        .collect();
    carved_out(&writable, workspace_root, home.as_deref(), keel_home)
}

/// [`read_only_paths`] for the writable roots `writable`: keel's home; a
/// home inside a writable root whole, or, when it holds the workspace
/// (the workspace bind comes first and binds are recursive, so the home
/// itself would cover it), its start-up files, git config and key
/// folders one by one (`protected::HOME_GUARDED`).
fn carved_out(
    writable: &[PathBuf],
    workspace_root: &Path,
    home: Option<&Path>,
    keel_home: Option<PathBuf>,
) -> Vec<PathBuf> {
    let inside_writable = |path: &Path| writable.iter().any(|root| path.starts_with(root));
    let mut paths: Vec<PathBuf> = keel_home.into_iter().collect();
    match home.filter(|home| inside_writable(home)) {
        Some(home) if workspace_root.starts_with(home) => {
            let names =
                crate::policy::paths::RC_FILES.iter().chain(&sandbox::protected::HOME_GUARDED);
            paths.extend(names.map(|name| home.join(name)));
        }
        Some(home) => paths.push(home.to_path_buf()),
        None => {}
    }
    paths
}

/// The workspace's nested `.git` folders are looked for only once a
/// command may write (the search reads every folder: a start must not
/// pay for it, issue 21); see [`CommandJail::with_nested_search`].
/// A session's search (given its `keel_home`) is also the undo
/// watcher's walk, offered to its checkpoints.
fn nested_git_search(
    workspace_root: &Path,
    keel_home: Option<&Path>,
) -> (Box<dyn FnOnce() -> Vec<PathBuf> + Send>, Option<OfferedWatch>) {
    let root = workspace_root.to_owned();
    match keel_home {
        Some(keel_home) => {
            let (search, offered) =
                super::undo::first_walk::search_and_watch(root, keel_home.to_owned());
            (Box::new(search), Some(offered))
        }
        None => (Box::new(move || sandbox::protected::nested_git_dirs(&root)), None),
    }
}

/// What a session says when `.git`/`.keel`/`.claude` protection is weaker
/// than asked.
fn vcs_warning(sandboxed: bool, vcs: landlock::VcsGuard) -> Option<String> {
    match vcs {
        landlock::VcsGuard::NotRequested | landlock::VcsGuard::Mounts => None,
        // Nothing is confined: the sandbox warning already says it.
        landlock::VcsGuard::Landlock | landlock::VcsGuard::Off if !sandboxed => None,
        landlock::VcsGuard::Landlock => Some(format!(
            "{} are kept read-only by landlock (no private mount namespace here): commands \
             cannot create files or folders directly in the workspace root",
            sandbox::protected::names_in_words()
        )),
        landlock::VcsGuard::Off => Some(format!(
            "{} are NOT protected from commands: no private mount namespace here (unprivileged \
             user namespaces disabled?); sandbox.required = true protects them with landlock \
             instead, at the cost of new top-level entries",
            sandbox::protected::names_in_words()
        )),
    }
}

/// What the status line shows, after [`setup_sandbox`] set the policy.
pub(super) fn sandbox_state(settings: &Settings, policy: &Policy) -> SandboxState {
    let config = &settings.sandbox;
    if policy.sandboxed {
        SandboxState::On
    } else if config.mode == landlock::SandboxMode::FullAccess && !config.network.mode.is_closed() {
        SandboxState::Off
    } else {
        SandboxState::Unavailable
    }
}

/// Tells the model when a failed command looks blocked by the sandbox:
/// `kind: sandbox_violation` in the metadata and a line in the output.
/// Returns whether it did.
/// `jail` is the one the command ran under.
pub fn mark_sandbox_violation(
    tool: &str,
    result: &mut ToolResult,
    meta: &mut ToolMeta,
    jail: &CommandJail,
) -> bool {
    let confinement = jail.confinement();
    let exit_code = meta.exit_code();
    let failed = exit_code.is_some_and(|code| code != 0);
    let network = confinement.map_or(landlock::NetworkMode::On, |c| c.network);
    // A timeout with the network closed is no violation; the shell's own
    // timeout text says what a closed network means (`tools::shell`).
    let timed_out = meta.kind() == Some(ResultKind::named("timeout"));
    if timed_out && confinement.is_some() && network.is_closed() {
        return false;
    }
    let vcs = confinement.is_some_and(|c| c.protect_vcs);
    if tool != names::SHELL || !failed {
        return false;
    }
    let denied = jail.net_log().denials(&result.call_id);
    if let Some(first) = denied.first() {
        meta.set_kind(ResultKind::SandboxViolation);
        result.output.push_str(&format!(
            "\n[keel] sandbox violation: keel's network proxy refused {}:{} ({}){}. Do not retry \
             or change the code for it; the user can add the host to `[sandbox] \
             allowed_domains`.\n",
            first.host,
            first.port,
            first.reason,
            if denied.len() > 1 {
                format!(" and {} more", denied.len() - 1)
            } else {
                String::new()
            },
        ));
        return true;
    }
    let code = exit_code.and_then(|c| i32::try_from(c).ok());
    if !landlock::looks_like_violation(code, &result.output, network) {
        return false;
    }
    meta.set_kind(ResultKind::SandboxViolation);
    if landlock::network_blocked(&result.output, network) {
        result.output.push_str(&format!(
            "\n[keel] sandbox violation: this looks like the network failure of keel's sandbox: {}. \
             Do not retry or change the code for it; if the task needs that host, say so in your \
             answer (the user can allow it; nobody can in a headless run).\n",
            landlock::network_hint(network)
        ));
        return true;
    }
    let network = match network {
        landlock::NetworkMode::On => "",
        landlock::NetworkMode::Off => ", network off",
        landlock::NetworkMode::Allowlist => ", network by allowlist only",
    };
    if meta.read_only() {
        result.output.push_str(&format!(
            "\n[keel] sandbox violation: keel judged this command read-only, so it ran alongside \
             the response's other reads in a sandbox where nothing is writable (not the workspace, \
             not the temp folders{network}); it looks like it tried to write. Nothing it wrote \
             landed.\n"
        ));
        return true;
    }
    let vcs = if vcs {
        ", .git read-only except to a plain git command such as `git commit -am msg` (its \
         config and hooks always), .keel, .claude, .mcp.json and editor tasks read-only"
    } else {
        ""
    };
    result.output.push_str(&format!(
        "\n[keel] sandbox violation: this command looks blocked by keel's sandbox (writes only inside \
         the workspace and temp folders{vcs}{network}). Work inside those limits, or tell the user \
         what to run outside it.\n"
    ));
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::landlock::VcsGuard;

    #[test]
    fn a_writable_home_holding_the_workspace_keeps_its_rc_files_and_keys_read_only() {
        let writable = [PathBuf::from("/tmp"), PathBuf::from("/tmp/home/ws")];
        let home = Path::new("/tmp/home");
        let paths = carved_out(&writable, Path::new("/tmp/home/ws"), Some(home), None);
        for name in [".bashrc", ".profile", ".gitconfig", ".ssh", ".gnupg", ".config/git"] {
            assert!(paths.contains(&home.join(name)), "{name}: {paths:?}");
        }
        assert!(!paths.contains(&home.to_path_buf()), "the home itself would cover the workspace");
        // A home the workspace does not lie in is carved out whole; one
        // outside every writable root needs nothing.
        let whole = carved_out(&writable, Path::new("/srv/ws"), Some(home), None);
        assert_eq!(whole, [home.to_path_buf()]);
        assert!(
            carved_out(&writable, Path::new("/srv/ws"), Some(Path::new("/home/u")), None)
                .is_empty()
        );
    }

    /// A failed shell command's result and metadata under `network`.
    fn violation_text(network: landlock::NetworkMode, output: &str) -> String {
        let confinement = landlock::Confinement {
            launcher: "/bin/keel".into(),
            mode: landlock::SandboxMode::WorkspaceWrite,
            workspace_roots: vec![PathBuf::from("/ws")],
            extra_roots: Vec::new(),
            read_only: Vec::new(),
            network,
            bridges: Default::default(),
            required: true,
            protect_vcs: false,
            git_write: false,
            max_pids: 64,
            shared_network: None,
            hidden: Vec::new(),
        };
        let jail = CommandJail::new(Some(confinement), EnvFilter::default());
        let mut result = ToolResult::ok("c1", output);
        let mut meta = ToolMeta::command(Some(1), None);
        assert!(mark_sandbox_violation(names::SHELL, &mut result, &mut meta, &jail));
        result.output
    }

    // Issue 32.9: the sandbox's hints never tell the model to ask the user,
    // whom a headless run has not: they say what to tell the user instead.
    #[test]
    fn sandbox_hints_do_not_ask_the_user() {
        let network = violation_text(
            landlock::NetworkMode::Off,
            "curl: (6) Could not resolve host: pkgs.example.test",
        );
        assert!(network.contains("network is off for commands"), "{network}");
        assert!(
            network.contains("if the task needs that host, say so in your answer"),
            "{network}"
        );
        let write = violation_text(landlock::NetworkMode::Off, "touch: Permission denied");
        assert!(write.contains("tell the user what to run outside it"), "{write}");
        for text in [network, write] {
            assert!(!text.contains("ask the user"), "{text}");
        }
    }

    #[test]
    fn a_session_says_when_git_is_not_protected() {
        assert_eq!(vcs_warning(true, VcsGuard::Mounts), None);
        assert_eq!(vcs_warning(true, VcsGuard::NotRequested), None);
        let off = vcs_warning(true, VcsGuard::Off).unwrap();
        assert!(
            off.contains(
                ".git, .keel, .claude, .mcp.json, .vscode, .idea, .husky, .envrc are NOT protected"
            ),
            "{off}"
        );
        let landlock = vcs_warning(true, VcsGuard::Landlock).unwrap();
        assert!(landlock.contains("cannot create files or folders"), "{landlock}");
        // With no sandbox at all, the sandbox warning says everything.
        assert_eq!(vcs_warning(false, VcsGuard::Off), None);
    }
}
