//! The jail's seccomp filter: the few things no namespace, mount or
//! landlock rule can stop, each answered `EPERM` ("Operation not
//! permitted"):
//!
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: pushing keystrokes into a
//!   terminal (the user's shell, keel's approval prompt);
//! - `mknod`/`mknodat` of a character or block device (FIFOs and sockets
//!   stay allowed): as root a device node is a door to the kernel log or
//!   the root disk;
//! - with the network closed ([`Sockets`]): in the jail's private network
//!   namespace, `socket()` of any family but `AF_UNIX`, `AF_INET`,
//!   `AF_INET6` (which reach only its loopback) and `AF_NETLINK`; without
//!   one, of any but `AF_UNIX` and `AF_NETLINK` (TCP, UDP: DNS
//!   exfiltration, MPTCP, raw, packet, vsock). Netlink only as
//!   `NETLINK_ROUTE` (glibc's `getaddrinfo` asks it which address families
//!   exist; in the private namespace it shows only `lo`, and without
//!   `CAP_NET_ADMIN` changes nothing): audit, uevent, netfilter and the
//!   other netlink families are refused;
//! - `io_uring_*`: io_uring creates sockets and runs operations without the
//!   system calls this filter sees;
//! - `keyctl`, `add_key`, `request_key`: the user's kernel keyrings hold
//!   credentials.
//!
//! On x86_64 the x32 numbers of the same calls are denied too (the x32
//! ABI is a second syscall table under the same architecture check). A
//! process of another architecture (32-bit x86) is killed by the filter's
//! architecture check. Architectures seccompiler does not know get no
//! filter, and the layer report says so.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// Why the filter could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum SeccompError {
    #[error("no seccomp filter for this architecture ({0})")]
    Architecture(&'static str),
    #[error("cannot build the seccomp filter: {0}")]
    Build(#[from] seccompiler::Error),
    #[error("cannot build the seccomp filter: {0}")]
    Backend(#[from] seccompiler::BackendError),
}

/// The x32 ABI's flag on syscall numbers.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: i64 = 0x4000_0000;
/// x32's own `ioctl` number (not the x86_64 one with the flag).
#[cfg(target_arch = "x86_64")]
const X32_IOCTL: i64 = X32_SYSCALL_BIT + 514;

const S_IFMT: u64 = 0o170_000;
/// The terminal ioctls, as on every architecture seccompiler knows
/// (x86_64, aarch64, riscv64 share the generic numbers).
const TIOCSTI: u64 = 0x5412;
const TIOCLINUX: u64 = 0x541C;

/// Which sockets a command may open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sockets {
    /// The network is on: every family.
    Any,
    /// The network is closed and the command is in a private network
    /// namespace: unix, IPv4, IPv6 and route netlink.
    PrivateNetwork,
    /// The network is closed and no namespace holds it: unix and route
    /// netlink only.
    UnixOnly,
}

/// Whether this architecture gets a filter.
pub fn available() -> bool {
    TargetArch::try_from(std::env::consts::ARCH).is_ok()
}

/// Installs the filter on the calling thread (inherited by what it
/// spawns). Needs `no_new_privs` or `CAP_SYS_ADMIN`; seccompiler sets
/// `no_new_privs`.
pub fn install(sockets: Sockets) -> Result<(), SeccompError> {
    let program = program(sockets)?;
    seccompiler::apply_filter(&program)?;
    Ok(())
}

/// The compiled filter (pure; the tests read it).
pub fn program(sockets: Sockets) -> Result<BpfProgram, SeccompError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SeccompError::Architecture(std::env::consts::ARCH))?;
    let filter = SeccompFilter::new(
        rules(sockets)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

fn rules(sockets: Sockets) -> Result<BTreeMap<i64, Vec<SeccompRule>>, SeccompError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    let terminal_injection = vec![
        SeccompRule::new(vec![arg_eq(1, TIOCSTI)?])?,
        SeccompRule::new(vec![arg_eq(1, TIOCLINUX)?])?,
    ];
    rules.insert(libc::SYS_ioctl, terminal_injection.clone());
    #[cfg(target_arch = "x86_64")]
    rules.insert(X32_IOCTL, terminal_injection);
    #[cfg(target_arch = "x86_64")]
    rules.insert(libc::SYS_mknod, device_nodes(1)?);
    rules.insert(libc::SYS_mknodat, device_nodes(2)?);
    let allowed: &[i32] = match sockets {
        Sockets::Any => &[],
        Sockets::PrivateNetwork => {
            &[libc::AF_UNIX, libc::AF_NETLINK, libc::AF_INET, libc::AF_INET6]
        }
        Sockets::UnixOnly => &[libc::AF_UNIX, libc::AF_NETLINK],
    };
    if !allowed.is_empty() {
        let family_ne = |family: i32| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
        };
        let other_family =
            SeccompRule::new(allowed.iter().map(|f| family_ne(*f)).collect::<Result<_, _>>()?)?;
        let other_netlink = SeccompRule::new(vec![
            arg_eq(0, libc::AF_NETLINK as u64)?,
            SeccompCondition::new(
                2,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::NETLINK_ROUTE as u64,
            )?,
        ])?;
        rules.insert(libc::SYS_socket, vec![other_family, other_netlink]);
    }
    for always in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
        libc::SYS_keyctl,
        libc::SYS_add_key,
        libc::SYS_request_key,
    ] {
        rules.insert(always, Vec::new());
    }
    #[cfg(target_arch = "x86_64")]
    {
        let x32: Vec<(i64, Vec<SeccompRule>)> = rules
            .iter()
            .filter(|(number, _)| **number < X32_SYSCALL_BIT && **number != libc::SYS_ioctl)
            .map(|(number, chain)| (number | X32_SYSCALL_BIT, chain.clone()))
            .collect();
        rules.extend(x32);
    }
    Ok(rules)
}

fn arg_eq(index: u8, value: u64) -> Result<SeccompCondition, SeccompError> {
    Ok(SeccompCondition::new(index, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value)?)
}

/// `mknod`'s mode (argument `mode_index`) naming a character or block
/// device.
fn device_nodes(mode_index: u8) -> Result<Vec<SeccompRule>, SeccompError> {
    let kind = |file_type: u64| -> Result<SeccompRule, SeccompError> {
        Ok(SeccompRule::new(vec![SeccompCondition::new(
            mode_index,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(S_IFMT),
            file_type,
        )?])?)
    };
    Ok(vec![kind(libc::S_IFCHR as u64)?, kind(libc::S_IFBLK as u64)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_compiles_for_this_machine() {
        let off = program(Sockets::UnixOnly).unwrap();
        let private = program(Sockets::PrivateNetwork).unwrap();
        let on = program(Sockets::Any).unwrap();
        assert!(off.len() > on.len(), "the socket rule is only there with the network off");
        assert!(private.len() > on.len(), "a private network still refuses other families");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_numbers_are_covered() {
        let rules = rules(Sockets::UnixOnly).unwrap();
        for number in [libc::SYS_socket, libc::SYS_mknod, libc::SYS_io_uring_setup] {
            assert!(rules.contains_key(&(number | X32_SYSCALL_BIT)), "{number}");
        }
        assert!(rules.contains_key(&X32_IOCTL));
    }
}
