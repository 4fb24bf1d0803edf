//! Which layers of the jail the kernel offered for a command: the
//! launcher fills a [`Layers`] as it goes, prints it as JSON for the
//! session-start probe (`keel sandbox-exec … -- --probe`), and names every
//! missing layer on stderr for each command ([`Layers::gaps`]).

use serde::{Deserialize, Serialize};

use super::mounts::MountReport;
use super::namespaces::Namespaces;
use super::privileges::{Capabilities, PidLimit};
use crate::policy::network::NetworkMode;
use crate::sandbox::landlock::{Enforcement, VcsGuard};

/// Everything the launcher set up (or could not).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layers {
    /// Landlock's filesystem (and with the network off, TCP) rules.
    pub landlock: Enforcement,
    /// Landlock's scopes (Linux 6.12+): no signals to, and no abstract
    /// unix sockets of, processes outside the jail.
    pub landlock_scopes: bool,
    pub namespaces: Namespaces,
    /// The init's own `/proc`: no other process is visible.
    pub fresh_proc: bool,
    pub mounts: MountReport,
    /// How `.git`, `.keel` and `.claude` are kept read-only.
    pub vcs: VcsGuard,
    pub seccomp: bool,
    pub pid_limit: PidLimit,
    pub capabilities: Capabilities,
    /// The command has no controlling terminal (a new session).
    pub new_session: bool,
    /// The network the command was given (the gaps differ).
    pub network: NetworkMode,
    /// The private network namespace's loopback is up.
    #[serde(default)]
    pub loopback: bool,
    /// The command joined the session's network namespace
    /// (`super::shared_net`) instead of a private one of its own.
    #[serde(default)]
    pub shared_network: bool,
}

impl Default for Layers {
    fn default() -> Self {
        Self {
            landlock: Enforcement::None,
            landlock_scopes: false,
            namespaces: Namespaces::default(),
            fresh_proc: false,
            mounts: MountReport::default(),
            vcs: VcsGuard::NotRequested,
            seccomp: false,
            pid_limit: PidLimit::None,
            capabilities: Capabilities::None,
            new_session: false,
            network: NetworkMode::Off,
            loopback: false,
            shared_network: false,
        }
    }
}

impl Layers {
    /// What is not contained, one phrase each (empty when the kernel
    /// offered every layer). The `.git` guard has its own message.
    pub fn gaps(&self) -> Vec<String> {
        let mut gaps = Vec::new();
        let mut gap = |missing: bool, text: &str| {
            if missing {
                gaps.push(text.to_owned());
            }
        };
        gap(self.landlock == Enforcement::None, "no landlock: writes are not confined");
        gap(
            self.landlock == Enforcement::Partial,
            "landlock partly enforced (TCP not restricted before Linux 6.7)",
        );
        gap(
            !self.namespaces.pid,
            "no PID namespace: background processes can outlive the command and it can signal other processes",
        );
        gap(
            self.namespaces.pid && !self.fresh_proc,
            "no fresh /proc: other processes' environments are readable",
        );
        gap(
            !self.namespaces.mount,
            "no mount namespace: metadata (chmod, chown, xattrs) outside the workspace, host unix sockets and terminals are reachable",
        );
        gap(
            self.namespaces.mount && !self.mounts.system_read_only,
            "some mounts stayed writable (chmod/chown outside the workspace possible there)",
        );
        gap(
            self.mounts.dev_failure.is_some(),
            "the host's /dev is visible (devices such as loop-control can be opened)",
        );
        gap(
            !self.mounts.carve_failures.is_empty(),
            "some read-only carve-outs failed (keel's state or nested .git may be writable)",
        );
        let closed = self.network.is_closed();
        gap(
            closed && !self.namespaces.net && !self.seccomp,
            "network off only for TCP: UDP, MPTCP and other sockets are open",
        );
        gap(
            closed && !self.namespaces.net,
            "no private network namespace: commands have no loopback (servers and tests that \
             bind 127.0.0.1 fail) and network = \"allowlist\" reaches nothing",
        );
        gap(
            closed && self.namespaces.net && !self.loopback,
            "the private network's loopback could not be brought up (no 127.0.0.1)",
        );
        gap(!self.seccomp, "no seccomp filter: TIOCSTI, device nodes and io_uring are not refused");
        gap(
            !self.landlock_scopes && !self.namespaces.net,
            "no landlock scopes: abstract unix sockets of the host are reachable",
        );
        gap(self.pid_limit == PidLimit::None, "no bound on the number of processes");
        gap(self.capabilities == Capabilities::RootFull, "running as root with every capability");
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::jail::mounts::MountReport;

    fn complete() -> Layers {
        Layers {
            landlock: Enforcement::Full,
            landlock_scopes: true,
            namespaces: Namespaces { user: false, mount: true, pid: true, net: true, ipc: true },
            fresh_proc: true,
            mounts: MountReport {
                system_read_only: true,
                private_devpts: true,
                minimal_dev: true,
                ..MountReport::default()
            },
            vcs: VcsGuard::Mounts,
            seccomp: true,
            pid_limit: PidLimit::Namespace(4096),
            capabilities: Capabilities::RootReduced,
            new_session: true,
            network: NetworkMode::Off,
            loopback: true,
            shared_network: false,
        }
    }

    #[test]
    fn a_complete_jail_has_no_gaps() {
        assert_eq!(complete().gaps(), Vec::<String>::new());
    }

    #[test]
    fn each_missing_layer_is_named() {
        let mut layers = complete();
        layers.namespaces.pid = false;
        layers.seccomp = false;
        let gaps = layers.gaps().join("; ");
        assert!(gaps.contains("no PID namespace"), "{gaps}");
        assert!(gaps.contains("no seccomp filter"), "{gaps}");
        assert_eq!(Layers::default().gaps().len(), 8, "{:?}", Layers::default().gaps());
    }

    #[test]
    fn a_closed_network_without_its_namespace_is_said() {
        let mut layers = complete();
        layers.namespaces.net = false;
        let gaps = layers.gaps().join("; ");
        assert!(gaps.contains("no private network namespace"), "{gaps}");
        layers.network = NetworkMode::On;
        assert!(!layers.gaps().join("; ").contains("network namespace"));
        let mut down = complete();
        down.loopback = false;
        assert!(down.gaps().join("; ").contains("loopback could not be brought up"));
    }

    #[test]
    fn layers_round_trip_through_json() {
        let layers = complete();
        let text = serde_json::to_string(&layers).unwrap();
        assert_eq!(serde_json::from_str::<Layers>(&text).unwrap(), layers);
    }
}
