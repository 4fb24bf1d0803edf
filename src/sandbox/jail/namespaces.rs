//! Entering the jail's namespaces: one `unshare` of mount, PID, IPC and
//! (network off or allowlist) network namespaces, as a user with
//! `CAP_SYS_ADMIN`
//! (root) or else inside a new user namespace that maps the caller's own
//! uid and gid to themselves (`setgroups` denied).
//!
//! Invariants: the calling process must be single-threaded (a user
//! namespace requires it; the launcher is). The PID namespace applies to
//! the launcher's *children*: the next process it spawns is PID 1 there.
//! In a user namespace the launcher's capabilities do not survive the
//! `exec` of that child (its uid is not 0 there), so `CAP_SYS_ADMIN` is
//! raised into the ambient set for it alone; the jail's init clears it
//! before it starts the command.
//!
//! Cost (measured on Linux 6.18, issue 31): the network namespace adds
//! about 0.8 ms of CPU per command in the launcher plus the kernel's
//! asynchronous teardown; it buys loopback for the command's own servers
//! and tests, and the allowlist's single way out.
//!
//! `unshare` is rustix's deprecated safe `unshare`: its replacement
//! `unshare_unsafe` is `unsafe` only because of `CLONE_FILES`, which is
//! never passed here, and the crate forbids `unsafe`.

use rustix::thread::{CapabilitySet, UnshareFlags};
use serde::{Deserialize, Serialize};

/// Which namespaces the launcher entered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespaces {
    /// A user namespace was needed (no `CAP_SYS_ADMIN`).
    pub user: bool,
    pub mount: bool,
    pub pid: bool,
    /// A private network with only a loopback device (brought up by
    /// `super::loopback`).
    pub net: bool,
    pub ipc: bool,
}

/// Why the namespaces could not be entered.
#[derive(Debug, thiserror::Error)]
pub enum NamespaceError {
    #[error(
        "cannot create private namespaces (unprivileged user namespaces disabled, or a seccomp \
         profile forbids them): {0}"
    )]
    Unshare(rustix::io::Errno),
    #[error("cannot write {path} in the new user namespace: {source}")]
    IdMap { path: &'static str, source: std::io::Error },
}

/// Enters the strongest set of namespaces the kernel grants: all of them
/// first, then without the network namespace, then a mount namespace
/// alone; each with `CAP_SYS_ADMIN`, then through a user namespace.
pub fn enter(private_network: bool) -> Result<Namespaces, NamespaceError> {
    let full = UnshareFlags::NEWNS | UnshareFlags::NEWPID | UnshareFlags::NEWIPC;
    let mut attempts = Vec::new();
    if private_network {
        attempts.push(full | UnshareFlags::NEWNET);
    }
    attempts.extend([full, UnshareFlags::NEWNS]);
    let mut last = rustix::io::Errno::PERM;
    for flags in &attempts {
        match unshare(*flags) {
            Ok(()) => return Ok(Namespaces::from_flags(*flags, false)),
            Err(error) => last = error,
        }
    }
    for flags in &attempts {
        if unshare(*flags | UnshareFlags::NEWUSER).is_ok() {
            map_own_ids()?;
            keep_sys_admin_for_child();
            return Ok(Namespaces::from_flags(*flags, true));
        }
    }
    Err(NamespaceError::Unshare(last))
}

impl Namespaces {
    fn from_flags(flags: UnshareFlags, user: bool) -> Self {
        Self {
            user,
            mount: flags.contains(UnshareFlags::NEWNS),
            pid: flags.contains(UnshareFlags::NEWPID),
            net: flags.contains(UnshareFlags::NEWNET),
            ipc: flags.contains(UnshareFlags::NEWIPC),
        }
    }
}

#[allow(deprecated)] // see the module doc: `unshare_unsafe` only for CLONE_FILES
fn unshare(flags: UnshareFlags) -> rustix::io::Result<()> {
    rustix::thread::unshare(flags)
}

/// Maps the caller's uid and gid to themselves, so files keep their
/// owners and the command runs as the user it is.
pub(super) fn map_own_ids() -> Result<(), NamespaceError> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    write_proc("/proc/self/setgroups", "deny")?;
    write_proc("/proc/self/uid_map", &format!("{uid} {uid} 1\n"))?;
    write_proc("/proc/self/gid_map", &format!("{gid} {gid} 1\n"))
}

fn write_proc(path: &'static str, text: &str) -> Result<(), NamespaceError> {
    std::fs::write(path, text).map_err(|source| NamespaceError::IdMap { path, source })
}

/// Raises `CAP_SYS_ADMIN` (held in the new user namespace) into the
/// ambient set, so the jail's init keeps it across its `exec` to mount
/// `/proc` and bound the PID count. Best effort: without it the init
/// reports those layers missing.
pub(super) fn keep_sys_admin_for_child() {
    let Ok(mut sets) = rustix::thread::capabilities(None) else { return };
    sets.inheritable |= CapabilitySet::SYS_ADMIN;
    if rustix::thread::set_capabilities(None, sets).is_ok() {
        let _ = rustix::thread::configure_capability_in_ambient_set(CapabilitySet::SYS_ADMIN, true);
    }
}
