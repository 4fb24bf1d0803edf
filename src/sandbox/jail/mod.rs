//! The jail around every command the model runs: `keel sandbox-exec`.
//!
//! Two stages, both the launcher binary (the crate forbids `unsafe`, so
//! no `fork` or `pre_exec`: each stage is a fresh `exec`); that binary is
//! the small `keel-jail` when it is installed beside keel, else keel
//! ([`launcher`]):
//!
//! 1. [`launch`], the launcher keel spawns: reads the host's unix sockets,
//!    enters the namespaces in one `unshare` ([`namespaces`]; with the
//!    network off or allowlist a private network namespace, whose
//!    loopback it brings up: [`loopback`]), builds the
//!    filesystem view ([`mounts`]), then spawns stage 2 (PID 1 of the new
//!    PID namespace) and relays its exit code. It dies with keel
//!    (`PR_SET_PDEATHSIG`).
//! 2. [`init`], the jail's init: dies with the launcher, mounts a fresh
//!    `/proc`, bounds the process count, drops capabilities
//!    ([`privileges`]), changes directory *again* (the working directory
//!    inherited from before the mounts would still point into the
//!    writable originals: a `workdir` of `.git` must land on the read-only
//!    bind), applies landlock and seccomp ([`seccomp`]), starts a new
//!    session (no controlling terminal), starts the `127.0.0.1` listeners
//!    of keel's network bridges ([`loopback`]: threads, which the
//!    launcher cannot have once it left its PID namespace for its
//!    children), runs the command and reaps every
//!    orphan until the command ends. Then it exits, and the kernel kills
//!    whatever the command left behind: no process outlives its call.
//!
//! With [`TERMINAL_FLAG`] (a background command started with `pty`: its
//! stdin, stdout and stderr are a pseudo-terminal, `sandbox::pty`), the
//! launcher first starts a session of its own (keel then starts it
//! outside any process group: it leads one, as usual), and whichever
//! process runs the command makes the terminal its controlling one as a
//! session leader: the init after its `setsid` (the command, its child,
//! is then in the terminal's foreground group), or the launcher itself
//! when it runs the command in place.
//!
//! Each layer the kernel refuses is recorded in [`layers::Layers`]: the
//! probe (`-- --probe`) prints it as JSON, and the serious gaps are said
//! on stderr for every command. Without a PID namespace the launcher
//! confines itself and `exec`s the command (the old single-stage path),
//! so keel's process-group kill still reaches everything.

pub mod launcher;
pub mod layers;
pub mod loopback;
pub mod mounts;
pub mod namespaces;
pub mod privileges;
pub mod seccomp;
pub mod shared_net;
pub mod sockets;

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use self::layers::Layers;
use self::mounts::MountPlan;
use super::confinement::{Confinement, EXIT_UNENFORCEABLE, Enforcement, SandboxMode, VcsGuard};
use super::landlock;

/// What the launcher was asked to run.
#[derive(Debug, Clone)]
pub struct Request {
    /// `launcher` is unused here.
    pub confinement: Confinement,
    pub command: Vec<OsString>,
    /// stdin is a terminal to make the command's controlling one.
    pub terminal: bool,
}

/// The launcher's flag: stdin is a terminal to make the command's
/// controlling one (see the module doc).
pub const TERMINAL_FLAG: &str = "--terminal";

/// `sandbox-exec`'s flag for an unconfined command on a terminal
/// (`sandbox::pty::stage`).
pub const TERMINAL_STAGE_FLAG: &str = "--terminal-stage";

/// What the launcher hands to the init (one JSON argument).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Handover {
    pub confinement: Confinement,
    /// The working directory, to enter again through the new mounts.
    pub cwd: PathBuf,
    pub layers: Layers,
    /// The tool call the command runs for (the network proxy's log).
    #[serde(default)]
    pub call_id: String,
    /// The launcher's PID (in keel's PID namespace; 0: unknown): the init
    /// checks that it is still its parent once its parent-death signal is
    /// set (a launcher killed before that would leave it running).
    #[serde(default)]
    pub launcher_pid: u32,
    /// stdin is a terminal the init makes the controlling one.
    #[serde(default)]
    pub terminal: bool,
}

/// Exit code for a command killed by signal `signal` (as shells say it).
fn signal_code(signal: i32) -> i32 {
    128 + signal
}

/// Stage 1 (see the module doc). Returns the exit code to leave with
/// (when the command could not be run in place).
pub fn launch(request: Request) -> i32 {
    // Dies with keel: nothing of the call outlives it.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if keel_died_before_us() {
        return signal_code(9);
    }
    if request.terminal {
        // keel started us in no group of our own: lead a session (and its
        // group, which keel's kill ladder ends).
        if let Err(error) = rustix::process::setsid() {
            say(&format!("keel: WARNING: cannot start a session for the terminal: {error}"));
        }
    }
    let confinement = &request.confinement;
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut layers = Layers { network: confinement.network, ..Layers::default() };
    if confinement.mode == SandboxMode::FullAccess && !confinement.network.is_closed() {
        layers.landlock = Enforcement::Full;
        return run_in_place(request, &cwd, layers);
    }
    let bridged: Vec<&Path> = confinement.bridges.sockets().collect();
    let mut sockets = sockets::host_socket_paths();
    sockets.retain(|socket| !bridged.contains(&socket.as_path()));
    let joined = confinement.network.is_closed().then(|| join_session_network(confinement));
    let joined_user = joined.flatten();
    layers.shared_network = joined_user.is_some();
    let private_network = confinement.network.is_closed() && !layers.shared_network;
    let namespace_error = match namespaces::enter(private_network) {
        Ok(entered) => {
            layers.namespaces = entered;
            None
        }
        Err(error) => Some(error.to_string()),
    };
    if layers.shared_network {
        // The keeper brought its loopback up.
        layers.namespaces.net = true;
        layers.loopback = true;
        if joined_user == Some(true) {
            layers.namespaces.user = true;
            namespaces::keep_sys_admin_for_child();
        }
    } else if layers.namespaces.net {
        bring_up_loopback(&mut layers);
    }
    let protect = confinement.protect_vcs && confinement.mode == SandboxMode::WorkspaceWrite;
    layers.vcs = if !protect { VcsGuard::NotRequested } else { VcsGuard::Off };
    if layers.namespaces.mount {
        match mounts::build(&mount_plan(confinement, sockets)) {
            Ok(report) => {
                layers.mounts = report;
                if protect {
                    layers.vcs = VcsGuard::Mounts;
                }
            }
            Err(error) => say(&format!("keel: WARNING: the jail's mounts failed: {error}")),
        }
    }
    if protect && layers.vcs == VcsGuard::Off {
        layers.vcs =
            vcs_fallback(confinement, namespace_error.as_deref().unwrap_or("mounts failed"));
    }
    if !layers.namespaces.pid {
        return run_in_place(request, &cwd, layers);
    }
    spawn_init(&request, cwd, layers)
}

/// Joins the session's network namespace ([`shared_net`]) when keel
/// made one: `Some(joined a user namespace)`, `None` when there is none
/// or the join failed (said; the command then gets a namespace of its own).
fn join_session_network(confinement: &Confinement) -> Option<bool> {
    let shared = confinement.shared_network.as_ref()?;
    match shared_net::join(shared) {
        Ok(user) => Some(user),
        Err(error) => {
            say(&format!(
                "keel: WARNING: {error}: this command gets a network namespace of its own \
                 (servers of other calls are not reachable from it)"
            ));
            None
        }
    }
}

/// Brings up the private network namespace's loopback ([`loopback`]);
/// a failure is said (the command then has no 127.0.0.1, nor bridges).
fn bring_up_loopback(layers: &mut Layers) {
    match loopback::bring_up() {
        Ok(()) => layers.loopback = true,
        Err(error) => {
            say(&format!("keel: WARNING: {error}: commands have no loopback (127.0.0.1)"))
        }
    }
}

/// The variable through which keel tells the launcher its own PID
/// ([`CommandSpec::confined`](crate::sandbox::CommandSpec::confined)).
pub const PARENT_VARIABLE: &str = "KEEL_LAUNCHER_PARENT";

/// Whether keel died before the parent-death signal was set (which then
/// never comes): the launcher's parent is no longer the keel that
/// started it, so it must not start the command.
fn keel_died_before_us() -> bool {
    let Some(keel) = std::env::var(PARENT_VARIABLE).ok().and_then(|pid| pid.parse::<i32>().ok())
    else {
        return false;
    };
    rustix::process::getppid().map(|pid| pid.as_raw_nonzero().get()) != Some(keel)
}

/// The variable through which keel tells the launcher which tool call it
/// runs (the proxy's log names it).
pub const CALL_ID_VARIABLE: &str = "KEEL_CALL_ID";

/// Starts the init (PID 1 of the new namespace) and relays its ending.
///
/// keel ends a command by SIGTERM to the launcher's process group (then
/// SIGKILL after a grace period). The init has left that group (its own
/// session), so on SIGTERM, SIGINT or SIGHUP the launcher SIGKILLs the
/// init and waits for it: the init is reaped only once the kernel has
/// killed every process of its namespace, so when the launcher is gone,
/// nothing of the call still runs.
fn spawn_init(request: &Request, cwd: PathBuf, layers: Layers) -> i32 {
    use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};
    let call_id = std::env::var(CALL_ID_VARIABLE).unwrap_or_default();
    let handover = Handover {
        confinement: request.confinement.clone(),
        cwd,
        layers,
        call_id,
        launcher_pid: std::process::id(),
        terminal: request.terminal,
    };
    let (exe, json) = match (std::env::current_exe(), serde_json::to_string(&handover)) {
        (Ok(exe), Ok(json)) => (exe, json),
        (Err(error), _) => return fail(&format!("cannot find the keel binary: {error}")),
        (_, Err(error)) => return fail(&format!("cannot hand over to the jail's init: {error}")),
    };
    // Registered before the init exists, so no ending is missed.
    let mut signals = match signal_hook::iterator::Signals::new([SIGCHLD, SIGTERM, SIGINT, SIGHUP])
    {
        Ok(signals) => signals,
        Err(error) => return fail(&format!("cannot watch signals: {error}")),
    };
    let spawned = std::process::Command::new(exe)
        .args(["sandbox-exec", "--init", &json, "--"])
        .args(&request.command)
        .env_remove(CALL_ID_VARIABLE)
        .env_remove(PARENT_VARIABLE)
        .spawn();
    let mut init = match spawned {
        Ok(init) => init,
        Err(error) => return fail(&format!("cannot start the jail's init: {error}")),
    };
    loop {
        match init.try_wait() {
            Ok(Some(status)) => return exit_code(status),
            Ok(None) => {}
            Err(error) => return fail(&format!("lost the jail's init: {error}")),
        }
        match signals.forever().next() {
            Some(SIGCHLD) => {}
            Some(signal) => {
                let _ = init.kill();
                let _ = init.wait();
                return signal_code(signal);
            }
            None => return init.wait().map_or(EXIT_UNENFORCEABLE, exit_code),
        }
    }
}

/// The exit code a shell would report for `status`.
fn exit_code(status: std::process::ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| signal_code(status.signal().unwrap_or(9)))
}

/// Stage 2, PID 1 of the jail. Returns the exit code to leave with.
pub fn init(handover: Handover, command: Vec<OsString>) -> i32 {
    let Handover { confinement, cwd, mut layers, call_id, launcher_pid, terminal } = handover;
    // Dies with the launcher (which dies with keel).
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if launcher_pid != 0 && host_parent() != Some(launcher_pid) {
        return signal_code(9);
    }
    layers.fresh_proc = mounts::mount_fresh_proc().is_ok();
    if let Err(code) = confine(&confinement, &cwd, &mut layers, true) {
        return code;
    }
    if terminal && layers.new_session {
        take_terminal();
    }
    if command.first().is_some_and(|c| c == "--probe") {
        return report_probe(&layers);
    }
    warn_per_command(&layers);
    // The bridges' listeners are threads of this init, started after it
    // confined itself: they hold no more than the command does.
    let mut bridges = confinement.bridges.clone();
    if layers.shared_network {
        // The session's keeper listens on the host ports.
        bridges.host_ports.clear();
    }
    let variables = if layers.loopback {
        loopback::listen(&bridges, &call_id).unwrap_or_else(|error| {
            say(&format!("keel: WARNING: {error}: the network bridges are missing"));
            Vec::new()
        })
    } else {
        Vec::new()
    };
    run_and_reap(&command, &cwd, &variables)
}

/// The init's parent as keel's PID namespace sees it, read from the
/// `/proc` the init inherited (before it mounts its own, where the parent
/// is invisible). `None` when it cannot be read.
fn host_parent() -> Option<u32> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // `pid (comm) state ppid …`: the name may hold spaces and parentheses.
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Without a PID namespace: confine this process and become the command
/// (keel's process-group kill then reaches all it starts).
fn run_in_place(request: Request, cwd: &Path, mut layers: Layers) -> i32 {
    if let Err(code) = confine(&request.confinement, cwd, &mut layers, false) {
        return code;
    }
    if request.command.first().is_some_and(|c| c == "--probe") {
        return report_probe(&layers);
    }
    warn_per_command(&layers);
    if request.terminal {
        // The session leader since `launch` began, and becomes the command.
        take_terminal();
    }
    let Some((program, rest)) = request.command.split_first() else {
        return fail("no command given after `--`");
    };
    let error = std::process::Command::new(program)
        .args(rest)
        .env_remove(CALL_ID_VARIABLE)
        .env_remove(PARENT_VARIABLE)
        .exec();
    fail(&format!("cannot run {}: {error}", program.to_string_lossy()))
}

/// Makes stdin, a terminal, the command's controlling terminal (said when
/// it cannot be: the command still has the terminal as its stdio).
fn take_terminal() {
    if let Err(error) = crate::sandbox::pty::take_controlling_terminal() {
        say(&format!("keel: WARNING: the terminal is not the command's controlling one: {error}"));
    }
}

/// The in-process layers, in order: process bound, capabilities, working
/// directory, landlock, seccomp, new session. `Err` holds the exit code
/// when the sandbox is required and landlock cannot be enforced.
fn confine(
    confinement: &Confinement,
    cwd: &Path,
    layers: &mut Layers,
    pid_1: bool,
) -> Result<(), i32> {
    layers.pid_limit = privileges::limit_processes(confinement.max_pids, pid_1);
    layers.capabilities = privileges::drop_capabilities();
    if let Err(error) = std::env::set_current_dir(cwd) {
        return Err(fail(&format!("cannot enter {}: {error}", cwd.display())));
    }
    let full_access =
        confinement.mode == SandboxMode::FullAccess && !confinement.network.is_closed();
    // In a private network namespace TCP only reaches the namespace's
    // own loopback (and keel's bridges): landlock leaves it alone there.
    let restrict_tcp = confinement.network.is_closed() && !layers.namespaces.net;
    if !full_access {
        let carve_out = match layers.vcs {
            VcsGuard::Landlock => landlock::vcs_carve_out(confinement),
            VcsGuard::NotRequested | VcsGuard::Mounts | VcsGuard::Off => Vec::new(),
        };
        match landlock::apply(confinement, &carve_out, restrict_tcp) {
            Ok(applied) => {
                layers.landlock = applied.enforcement;
                layers.landlock_scopes = applied.scopes;
            }
            Err(error) => say(&format!("keel: cannot set up the sandbox: {error}")),
        }
    }
    let sockets = match (confinement.network.is_closed(), layers.namespaces.net) {
        (false, _) => seccomp::Sockets::Any,
        (true, true) => seccomp::Sockets::PrivateNetwork,
        (true, false) => seccomp::Sockets::UnixOnly,
    };
    layers.seccomp = match seccomp::install(sockets) {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, "no seccomp filter");
            false
        }
    };
    if pid_1 {
        layers.new_session = rustix::process::setsid().is_ok();
    }
    if layers.landlock == Enforcement::None && confinement.required && !full_access {
        say(
            "keel: the sandbox cannot be enforced on this kernel and sandbox.required = true: refusing to run the command",
        );
        return Err(EXIT_UNENFORCEABLE);
    }
    Ok(())
}

/// Runs the command as PID 1's child and reaps every process until it
/// ends; its exit code (or 128 + signal) is the jail's.
fn run_and_reap(command: &[OsString], cwd: &Path, variables: &[(String, String)]) -> i32 {
    let Some((program, rest)) = command.split_first() else {
        return fail("no command given after `--`");
    };
    let spawned = std::process::Command::new(program)
        .args(rest)
        .current_dir(cwd)
        .envs(variables.iter().map(|(name, value)| (name, value)))
        .spawn();
    let child = match spawned {
        Ok(child) => child,
        Err(error) => return fail(&format!("cannot run {}: {error}", program.to_string_lossy())),
    };
    let main = child.id();
    loop {
        match rustix::process::wait(rustix::process::WaitOptions::empty()) {
            Ok(Some((pid, status))) if pid.as_raw_nonzero().get().unsigned_abs() == main => {
                return status
                    .exit_status()
                    .or_else(|| status.terminating_signal().map(signal_code))
                    .unwrap_or(1);
            }
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(error) => return fail(&format!("lost the command: {error}")),
        }
    }
}

/// The folders the jail binds: writable roots (mode workspace-write) and
/// carve-outs (the protected names of each workspace root, or for a
/// recognised git command what `.git` guards inside it; the configured
/// read-only paths), plus the host's sockets.
fn mount_plan(confinement: &Confinement, sockets: Vec<PathBuf>) -> MountPlan {
    let writable_mode = confinement.mode == SandboxMode::WorkspaceWrite;
    let writable: Vec<PathBuf> = if writable_mode {
        confinement
            .workspace_roots
            .iter()
            .chain(&confinement.extra_roots)
            .cloned()
            .chain(landlock::temp_roots())
            .collect()
    } else {
        Vec::new()
    };
    let mut read_only = confinement.read_only.clone();
    let writable =
        writable.iter().cloned().chain(pinned_ancestors(&writable, &read_only)).collect();
    // keel's bridge sockets: reachable, never replaceable.
    read_only.extend(confinement.bridges.folder().map(Path::to_path_buf));
    if confinement.protect_vcs && writable_mode {
        for root in &confinement.workspace_roots {
            // A recognised git command's `.git` (a folder: a `.git` file
            // points elsewhere, outside every writable root) is writable
            // but for what makes git run programs.
            let git_dir = root.join(".git");
            let git_write = confinement.git_write && git_dir.is_dir();
            let names = super::protected::names();
            read_only
                .extend(names.filter(|name| !git_write || *name != ".git").map(|n| root.join(n)));
            if git_write {
                read_only.extend(super::protected::GIT_DIR_GUARDED.map(|name| git_dir.join(name)));
            }
        }
    }
    MountPlan {
        writable,
        read_only,
        read_only_system: confinement.mode != SandboxMode::FullAccess,
        minimal_dev: confinement.mode != SandboxMode::FullAccess,
        sockets,
        hidden: confinement.hidden.clone(),
    }
}

/// The folders between a writable root and a configured read-only path
/// inside it (keel's home under `/tmp`, say). The read-only path is a
/// mount point, which cannot be renamed or removed, but a folder above it
/// could be, taking it along, and a fresh one made in its place (`mv
/// /tmp/a /tmp/b && mkdir -p /tmp/a/keel`): the next session would read a
/// planted config and hooks. Each is bound onto itself (still writable),
/// which makes it a mount point too. Nested `.git` folders are left out:
/// pinning every folder above them would stop `mv vendor …` for little.
fn pinned_ancestors(writable: &[PathBuf], read_only: &[PathBuf]) -> Vec<PathBuf> {
    let mut pinned: Vec<PathBuf> = Vec::new();
    for path in read_only.iter().filter(|path| path.file_name() != Some(".git".as_ref())) {
        for root in writable.iter().filter(|root| path.starts_with(root) && *root != path) {
            let between = path.ancestors().skip(1).take_while(|dir| *dir != root.as_path());
            pinned.extend(between.map(Path::to_path_buf).filter(|dir| dir.starts_with(root)));
        }
    }
    pinned.sort();
    pinned.dedup();
    pinned
}

/// `.git`/`.keel`/`.claude` without a mount namespace: landlock's
/// child-by-child grant with `required`, else nothing, said either way.
fn vcs_fallback(confinement: &Confinement, why: &str) -> VcsGuard {
    if confinement.required {
        say(&format!(
            "keel: {} kept read-only by landlock instead ({why}); \
             new files or folders directly in the workspace root cannot be created",
            super::protected::names_in_words()
        ));
        VcsGuard::Landlock
    } else {
        say(&format!(
            "keel: WARNING: {} are NOT read-only for this command: {why} \
             (sandbox.required = true protects them with landlock instead, at the cost of \
             new top-level entries in the workspace)",
            super::protected::names_in_words()
        ));
        VcsGuard::Off
    }
}

/// The probe's answer: the layers as JSON on stdout; exit 126 when
/// landlock enforces nothing.
fn report_probe(layers: &Layers) -> i32 {
    let json = serde_json::to_string(layers).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{json}");
    let _ = out.flush();
    match layers.landlock {
        Enforcement::None => EXIT_UNENFORCEABLE,
        Enforcement::Full | Enforcement::Partial => 0,
    }
}

/// Said on every command: the gaps that leave writes or the host open.
/// The rest is said once, at session start.
fn warn_per_command(layers: &Layers) {
    if layers.landlock == Enforcement::None {
        say("keel: WARNING: the sandbox is not enforced on this kernel; running unconfined");
    }
}

fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}

fn fail(message: &str) -> i32 {
    say(&format!("keel: {message}"));
    EXIT_UNENFORCEABLE
}
