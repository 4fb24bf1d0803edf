//! What a confined command may do ([`Confinement`]), how it is handed to
//! the launcher (`keel sandbox-exec` arguments), the session-start probe
//! that asks the launcher which layers this kernel offers, and how a
//! blocked command's output is recognised.
//!
//! The crate forbids `unsafe`, so there is no `pre_exec` hook: a confined
//! command is run as `keel sandbox-exec --workspace-root W … -- bash -c
//! SCRIPT`, and the launcher builds the jail ([`super::jail`]) around it.

use std::ffi::OsString;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use crate::policy::network::NetworkMode;

use super::jail::layers::Layers;
pub use super::jail::shared_net::SharedNetwork;
pub use super::netproxy::Bridges;

/// Exit code of `keel sandbox-exec` when the sandbox is required but
/// cannot be enforced (126: "command cannot execute").
pub const EXIT_UNENFORCEABLE: i32 = 126;

/// How much the sandbox lets a command write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    #[default]
    WorkspaceWrite,
    FullAccess,
}

impl SandboxMode {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "read-only" => Some(SandboxMode::ReadOnly),
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "full-access" => Some(SandboxMode::FullAccess),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "full-access",
        }
    }
}

/// What a confined command may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confinement {
    /// The keel binary that launches confined commands.
    pub launcher: PathBuf,
    pub mode: SandboxMode,
    /// Workspace roots (`.git`/`.keel`/`.claude` inside stay read-only).
    pub workspace_roots: Vec<PathBuf>,
    /// Other folders writable as a whole (configured roots; the temp
    /// folders are added by the launcher).
    pub extra_roots: Vec<PathBuf>,
    /// Paths kept read-only even inside a writable root: keel's own state
    /// (`KEEL_HOME`), a home folder under a temp folder, nested `.git`
    /// folders of the workspace.
    pub read_only: Vec<PathBuf>,
    /// Network off (loopback only), allowlist (loopback and keel's proxy)
    /// or on.
    pub network: NetworkMode,
    /// The unix sockets keel listens on for the jail's network: the
    /// allowlist proxy, the bridged host ports (empty with the network on).
    pub bridges: Bridges,
    /// Refuse to run when the sandbox cannot be enforced.
    pub required: bool,
    /// Keep `.git`, `.keel` and `.claude` read-only inside the workspace
    /// roots (on by default; see `jail` for how, and the fallback);
    /// policy asks before any command that names those folders either way.
    pub protect_vcs: bool,
    /// With `protect_vcs`: the workspace roots' `.git` is writable except
    /// [`super::protected::GIT_DIR_GUARDED`] (config, hooks, `info/`, …),
    /// for one recognised git command (`super::git_write`). Only with a
    /// mount namespace; the landlock fallback keeps `.git` read-only.
    #[serde(default)]
    pub git_write: bool,
    /// The most processes and threads the command may have at once.
    pub max_pids: u32,
    /// The session's network namespace, which the command joins (network
    /// off or allowlist; `None`: a private one of its own). Set per
    /// command by `CommandJail`, which starts its keeper.
    #[serde(default)]
    pub shared_network: Option<SharedNetwork>,
    /// Credential stores (`~/.ssh`, `~/.aws`, the user's `[secrets]
    /// paths`) the command cannot read: an empty read-only folder, or an
    /// unopenable file, in their place; kept for reads too.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
}

impl Confinement {
    /// The jail for a command judged read-only, which runs alongside
    /// other reads: nothing writable at all (no workspace, no temp folder:
    /// parallel reads cannot see each other's files, and a command that
    /// writes after all fails instead of racing a write). Carve-outs and
    /// the `.git` guard are moot when nothing is writable.
    pub fn for_reads(&self) -> Confinement {
        Confinement {
            mode: SandboxMode::ReadOnly,
            extra_roots: Vec::new(),
            read_only: Vec::new(),
            protect_vcs: false,
            git_write: false,
            ..self.clone()
        }
    }

    /// The launcher's arguments for running `program` confined.
    pub fn launcher_args(&self, program: &[OsString]) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec!["sandbox-exec".into(), "--mode".into(), self.mode.as_str().into()];
        let flagged = [
            ("--workspace-root", &self.workspace_roots),
            ("--write-root", &self.extra_roots),
            ("--read-only", &self.read_only),
            ("--hide", &self.hidden),
        ];
        for (flag, paths) in flagged {
            for path in paths {
                args.push(flag.into());
                args.push(path.into());
            }
        }
        args.push("--network".into());
        args.push(self.network.as_str().into());
        if let Some(proxy) = &self.bridges.proxy {
            args.push("--proxy-socket".into());
            args.push(proxy.into());
        }
        for bridge in &self.bridges.host_ports {
            args.push("--host-port".into());
            args.push(format!("{}={}", bridge.port, bridge.socket.display()).into());
        }
        for (flag, on) in [
            ("--required", self.required),
            ("--protect-vcs", self.protect_vcs),
            ("--git-write", self.git_write),
        ] {
            if on {
                args.push(flag.into());
            }
        }
        if let Some(shared) = &self.shared_network {
            args.push("--join-network".into());
            args.push(shared.to_arg().into());
        }
        args.push("--max-pids".into());
        args.push(self.max_pids.to_string().into());
        args.push("--".into());
        args.extend(program.iter().cloned());
        args
    }
}

/// How much of landlock the kernel enforces.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    Full,
    /// Some restrictions (e.g. TCP on kernels before 6.7) are missing.
    Partial,
    /// The kernel enforces nothing (landlock missing or disabled).
    None,
}

/// How `.git`, `.keel` and `.claude` are kept read-only for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VcsGuard {
    /// Not asked for (`protect_vcs = false`), or not needed (read-only and
    /// full-access modes).
    NotRequested,
    /// Read-only mounts in the jail's mount namespace (those that exist;
    /// ones created by the command are removed after it).
    Mounts,
    /// Landlock's child-by-child grant (the fallback with `required`): no
    /// new entries directly in the workspace root.
    Landlock,
    /// Asked for but not enforced: no mount namespace could be created.
    Off,
}

/// Asks the launcher which layers the kernel offers for `confinement`
/// (it builds the whole jail for itself, prints [`Layers`] as JSON and
/// exits). `None` when the launcher could not run or said nothing.
pub fn probe(confinement: &Confinement) -> Option<Layers> {
    let args = confinement.launcher_args(&["--probe".into()]);
    let output = std::process::Command::new(&confinement.launcher)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    serde_json::from_slice(&output.stdout).ok()
}

/// Whether a failed command's output looks like the sandbox stopped it:
/// a non-zero exit plus a permission error (EACCES/EPERM/EROFS as tools
/// print them), or, with the network closed (off or allowlist), a
/// resolver or connect failure ([`network_blocked`]). Pure, so the `shell`
/// tool can call it on its captured output.
pub fn looks_like_violation(exit_code: Option<i32>, output: &str, network: NetworkMode) -> bool {
    const DENIED: [&str; 6] = [
        "Permission denied",
        "Operation not permitted",
        "EACCES",
        "EPERM",
        "Read-only file system",
        "keel: removed",
    ];
    if exit_code == Some(0) {
        return false;
    }
    DENIED.iter().any(|pattern| output.contains(pattern)) || network_blocked(output, network)
}

/// What resolvers, connects and HTTP clients print when the closed
/// network stopped them (curl, wget, Python, pip, npm, git, Go, Rust),
/// and the words of keel's own proxy refusal.
const NETWORK_FAILURES: [&str; 17] = [
    "Could not resolve host",
    "Couldn't resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No address associated with hostname",
    "getaddrinfo",
    "EAI_AGAIN",
    "ENOTFOUND",
    "Network is unreachable",
    "ENETUNREACH",
    "Couldn't connect",
    "Failed to connect",
    "Connection refused",
    "connect: Permission denied",
    "response 403",
    "403 Forbidden by keel",
    "denied by keel's network allowlist",
];

/// Whether `output` shows a network failure that the closed network
/// (`network` off or allowlist) explains.
pub fn network_blocked(output: &str, network: NetworkMode) -> bool {
    network.is_closed() && NETWORK_FAILURES.iter().any(|pattern| output.contains(pattern))
}

/// The sentence telling the model which setting would let a command
/// reach the network, for a failure [`network_blocked`] recognised.
pub fn network_hint(network: NetworkMode) -> &'static str {
    match network {
        NetworkMode::Off => {
            "the network is off for commands (loopback 127.0.0.1/::1 works; nothing leaves it): \
             the user can allow hosts with `[sandbox] network = \"allowlist\"` and \
             `allowed_domains`"
        }
        NetworkMode::Allowlist => {
            "commands reach the network only through keel's proxy, by host name, for hosts in \
             `[sandbox] allowed_domains` (no IP addresses, no other resolver, no UDP): the user \
             can add the host there"
        }
        NetworkMode::On => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violation_needs_a_failure_and_a_permission_error() {
        assert!(looks_like_violation(
            Some(1),
            "touch: cannot touch '/x': Permission denied",
            NetworkMode::Off
        ));
        assert!(!looks_like_violation(Some(0), "Permission denied", NetworkMode::Off));
        assert!(!looks_like_violation(Some(2), "no such file", NetworkMode::Off));
        assert!(looks_like_violation(None, "Operation not permitted", NetworkMode::On));
    }

    #[test]
    fn resolver_failures_are_the_sandbox_s_only_with_the_network_closed() {
        let curl = "curl: (6) Could not resolve host: pkgs.example.test";
        let python = "socket.gaierror: [Errno -3] Temporary failure in name resolution";
        let pip = "ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: \
                   403 Forbidden by keel'))";
        for output in [curl, python, pip, "connect: Network is unreachable"] {
            assert!(looks_like_violation(Some(1), output, NetworkMode::Off), "{output}");
            assert!(looks_like_violation(Some(1), output, NetworkMode::Allowlist), "{output}");
            assert!(!looks_like_violation(Some(1), output, NetworkMode::On), "{output}");
        }
        assert!(network_hint(NetworkMode::Off).contains("[sandbox] network"));
        assert!(network_hint(NetworkMode::Allowlist).contains("allowed_domains"));
    }

    #[test]
    fn launcher_args_end_with_the_command() {
        let confinement = Confinement {
            launcher: "/bin/keel".into(),
            mode: SandboxMode::WorkspaceWrite,
            workspace_roots: vec!["/ws".into()],
            extra_roots: vec![],
            read_only: vec!["/home/u/.keel".into()],
            network: NetworkMode::Off,
            bridges: Bridges::default(),
            required: true,
            protect_vcs: true,
            git_write: false,
            max_pids: 4096,
            shared_network: None,
            hidden: Vec::new(),
        };
        let args = confinement.launcher_args(&["bash".into(), "-c".into(), "ls".into()]);
        let text: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            text,
            [
                "sandbox-exec",
                "--mode",
                "workspace-write",
                "--workspace-root",
                "/ws",
                "--read-only",
                "/home/u/.keel",
                "--network",
                "off",
                "--required",
                "--protect-vcs",
                "--max-pids",
                "4096",
                "--",
                "bash",
                "-c",
                "ls"
            ]
        );
    }
}
