//! What the jail's init gives up before it starts the command: the
//! capabilities a root command has no business with, the ambient
//! capability a user namespace lent it, and an unbounded process count.
//!
//! - Root keeps Docker's default set minus `CAP_MKNOD`, `CAP_NET_RAW` and
//!   `CAP_SETFCAP`: ownership, permission overrides (a checkout owned by
//!   another user stays writable), `setuid`/`setgid`, `kill` (of the
//!   jail's own processes), `chroot`, binding low ports. Gone: loading
//!   kernel modules, raw I/O, `CAP_SYS_ADMIN` (mounts, `setns`, TIOCSTI on
//!   any terminal), `CAP_DAC_READ_SEARCH` (`open_by_handle_at` walks past
//!   every path rule), `CAP_SYS_PTRACE`, `CAP_NET_ADMIN`, time, reboot,
//!   BPF, file capabilities. Dropped from the bounding set, so no `exec`
//!   gets them back.
//! - Processes: in a PID namespace on Linux 6.14+ the namespace's own
//!   `pid_max` bounds every process and thread of the call, root's too.
//!   Elsewhere `RLIMIT_NPROC` bounds a non-root user (counted per user
//!   namespace on Linux 5.14+); the kernel never applies it to root, so
//!   root on older kernels has no bound (said in the layer report).
//!   Writing `pid_max` outside a fresh PID namespace, or on a kernel where
//!   it is global, would change the host's limit: both are checked first.

use rustix::process::{Resource, Rlimit};
use rustix::thread::CapabilitySet;
use serde::{Deserialize, Serialize};

/// Root keeps these (Docker's default minus MKNOD, NET_RAW, SETFCAP).
const ROOT_KEEPS: CapabilitySet = CapabilitySet::CHOWN
    .union(CapabilitySet::DAC_OVERRIDE)
    .union(CapabilitySet::FOWNER)
    .union(CapabilitySet::FSETID)
    .union(CapabilitySet::KILL)
    .union(CapabilitySet::SETGID)
    .union(CapabilitySet::SETUID)
    .union(CapabilitySet::SETPCAP)
    .union(CapabilitySet::NET_BIND_SERVICE)
    .union(CapabilitySet::SYS_CHROOT)
    .union(CapabilitySet::AUDIT_WRITE);

/// How the number of processes is bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "max")]
pub enum PidLimit {
    /// The PID namespace's own `pid_max` (Linux 6.14+).
    Namespace(u32),
    /// `RLIMIT_NPROC` (not applied to root by the kernel).
    Rlimit(u32),
    #[default]
    None,
}

/// How the capabilities ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Capabilities {
    /// Root, with the dangerous ones dropped from every set.
    RootReduced,
    /// Not root: the command has none (the user namespace's are cleared).
    #[default]
    None,
    /// Root, and dropping failed: the command keeps every capability.
    RootFull,
}

/// The default bound: enough for a parallel build on a big machine
/// (threads count), small enough that a fork bomb stays a nuisance.
pub fn default_max_pids() -> u32 {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    u32::try_from(cpus.saturating_mul(128)).unwrap_or(u32::MAX).max(4096)
}

/// Bounds the processes of the call (see the module doc).
pub fn limit_processes(max: u32, fresh_pid_namespace: bool) -> PidLimit {
    let is_pid_1 = rustix::process::getpid().as_raw_nonzero().get() == 1;
    if fresh_pid_namespace && is_pid_1 && pid_max_is_per_namespace() {
        // Below ~300 the kernel refuses the value (it reserves low PIDs).
        let max = max.max(512);
        if std::fs::write("/proc/sys/kernel/pid_max", max.to_string()).is_ok() {
            return PidLimit::Namespace(max);
        }
    }
    if rustix::process::getuid().is_root() {
        return PidLimit::None;
    }
    let limit = Rlimit { current: Some(u64::from(max)), maximum: Some(u64::from(max)) };
    match rustix::process::setrlimit(Resource::Nproc, limit) {
        Ok(()) => PidLimit::Rlimit(max),
        Err(_) => PidLimit::None,
    }
}

/// Linux 6.14 made `kernel.pid_max` per PID namespace.
fn pid_max_is_per_namespace() -> bool {
    kernel_at_least((6, 14))
}

/// Whether the running kernel is at least `wanted` (`(major, minor)`).
pub fn kernel_at_least(wanted: (u32, u32)) -> bool {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|release| kernel_version(&release))
        .is_some_and(|version| version >= wanted)
}

/// `(major, minor)` of a release string such as `6.18.4-arch1`.
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut parts = release.trim().split(|c: char| !c.is_ascii_digit());
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// Gives up what the command must not have: the ambient capability of a
/// user namespace, and for root the capabilities outside [`ROOT_KEEPS`].
pub fn drop_capabilities() -> Capabilities {
    let _ = rustix::thread::clear_ambient_capability_set();
    if !rustix::process::geteuid().is_root() {
        // Whatever the user namespace lent us is not needed any more.
        let empty = rustix::thread::CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        };
        let _ = rustix::thread::set_capabilities(None, empty);
        return Capabilities::None;
    }
    match reduce_root() {
        Ok(()) => Capabilities::RootReduced,
        Err(_) => Capabilities::RootFull,
    }
}

fn reduce_root() -> rustix::io::Result<()> {
    for bit in 0..64 {
        let capability = CapabilitySet::from_bits_retain(1 << bit);
        if ROOT_KEEPS.contains(capability) {
            continue;
        }
        // EINVAL: a capability this kernel does not know.
        if rustix::thread::capability_is_in_bounding_set(capability).unwrap_or(false) {
            rustix::thread::remove_capability_from_bounding_set(capability)?;
        }
    }
    let mut sets = rustix::thread::capabilities(None)?;
    sets.effective &= ROOT_KEEPS;
    sets.permitted &= ROOT_KEEPS;
    sets.inheritable &= ROOT_KEEPS;
    rustix::thread::set_capabilities(None, sets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_are_read_from_release_strings() {
        assert_eq!(kernel_version("6.18.44-fc-v857\n"), Some((6, 18)));
        assert_eq!(kernel_version("6.1.0-28-amd64"), Some((6, 1)));
        assert_eq!(kernel_version("5.15"), Some((5, 15)));
        assert_eq!(kernel_version("garbage"), None);
        assert!(kernel_version("6.13.2").unwrap() < (6, 14));
    }

    #[test]
    fn the_default_bound_leaves_room_for_builds() {
        assert!(default_max_pids() >= 4096);
    }

    #[test]
    fn root_keeps_no_door_to_the_kernel() {
        for dangerous in [
            CapabilitySet::SYS_ADMIN,
            CapabilitySet::SYS_MODULE,
            CapabilitySet::MKNOD,
            CapabilitySet::DAC_READ_SEARCH,
            CapabilitySet::SYS_PTRACE,
            CapabilitySet::NET_ADMIN,
            CapabilitySet::SETFCAP,
        ] {
            assert!(!ROOT_KEEPS.contains(dangerous), "{dangerous:?}");
        }
    }
}
