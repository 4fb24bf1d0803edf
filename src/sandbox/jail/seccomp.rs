//! The jail's seccomp filter: the few things no namespace, mount or
//! landlock rule can stop, each answered `EPERM` ("Operation not
//! permitted"):
//!
//! - `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)`: pushing keystrokes into a
//!   terminal (the user's shell, keel's approval prompt);
//! - `mknod`/`mknodat` of a character or block device (FIFOs and sockets
//!   stay allowed): as root a device node is a door to the kernel log or
//!   the root disk;
//! - with the network off, `socket()` of any family but `AF_UNIX` and
//!   `AF_NETLINK`: TCP, UDP (DNS exfiltration), MPTCP, raw, packet and
//!   vsock sockets, whether or not a network namespace was available;
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

/// Whether this architecture gets a filter.
pub fn available() -> bool {
    TargetArch::try_from(std::env::consts::ARCH).is_ok()
}

/// Installs the filter on the calling thread (inherited by what it
/// spawns). Needs `no_new_privs` or `CAP_SYS_ADMIN`; seccompiler sets
/// `no_new_privs`.
pub fn install(network: bool) -> Result<(), SeccompError> {
    let program = program(network)?;
    seccompiler::apply_filter(&program)?;
    Ok(())
}

/// The compiled filter (pure; the tests read it).
pub fn program(network: bool) -> Result<BpfProgram, SeccompError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|_| SeccompError::Architecture(std::env::consts::ARCH))?;
    let filter = SeccompFilter::new(
        rules(network)?,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    Ok(filter.try_into()?)
}

fn rules(network: bool) -> Result<BTreeMap<i64, Vec<SeccompRule>>, SeccompError> {
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
    if !network {
        let other_family = SeccompRule::new(vec![
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )?,
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_NETLINK as u64,
            )?,
        ])?;
        rules.insert(libc::SYS_socket, vec![other_family]);
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
        let off = program(false).unwrap();
        let on = program(true).unwrap();
        assert!(off.len() > on.len(), "the socket rule is only there with the network off");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn x32_numbers_are_covered() {
        let rules = rules(false).unwrap();
        for number in [libc::SYS_socket, libc::SYS_mknod, libc::SYS_io_uring_setup] {
            assert!(rules.contains_key(&(number | X32_SYSCALL_BIT)), "{number}");
        }
        assert!(rules.contains_key(&X32_IOCTL));
    }
}
