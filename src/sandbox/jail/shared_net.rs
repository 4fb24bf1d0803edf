//! One private network namespace per session (issue 31): the keeper
//! process that holds it, and the launcher's way into it.
//!
//! With the network off or allowlist, a session's commands share one
//! network namespace, so a server started in the background by one call
//! is reached by `curl` from the next. The namespace is made once, lazily,
//! by a small keeper, `keel sandbox-exec --netns-keeper` ([`keep`]): it
//! unshares a network namespace (as root alone, else inside a user
//! namespace mapping the caller's ids to themselves), brings up its
//! loopback, listens there on each bridged host port
//! (`[sandbox] host_ports`: one listener per session, not per command,
//! so two commands never race for the port), prints where it lives
//! ([`SharedNetwork`]) and then only reads its stdin. keel holds the
//! other end of that pipe (`sandbox::session_net`): when the session
//! ends, or keel dies in any way (`kill -9` included: the kernel closes
//! its pipes), the keeper reads end-of-file and exits. No
//! `PR_SET_PDEATHSIG` here: that signal follows the spawning *thread*,
//! and keel starts the keeper from a short-lived one.
//!
//! Every jailed command of the session (background ones too) joins the
//! namespace in its launcher ([`join`], `setns(2)`: the keeper's user
//! namespace first when it made one, then its network namespace) before
//! it unshares the rest. The launcher checks the namespace files' inodes
//! against those the keeper printed, so a recycled keeper PID can never
//! lead a command into someone else's namespace; a failed join falls back
//! to a private namespace of the command's own (loopback only, as
//! before), said on its stderr.
//!
//! Invariants: the namespace has only `lo`, so the host's loopback stays
//! unreachable; the keeper runs no command and opens nothing but its
//! listeners, whose only peers are keel's unix sockets; in allowlist mode
//! the proxy (per command, in the jail's init) stays the only way out.

use std::io::{BufRead, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;

use rustix::thread::{LinkNameSpaceType, UnshareFlags};
use serde::{Deserialize, Serialize};

use crate::sandbox::netproxy::Bridges;

/// Where a session's network namespace lives: the keeper's PID and the
/// inodes of its namespace files (the user namespace's when it made one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharedNetwork {
    pub pid: u32,
    pub user: Option<u64>,
    pub net: u64,
}

/// Why the shared namespace could not be made or joined.
#[derive(Debug, thiserror::Error)]
pub enum SharedNetError {
    #[error("cannot create the session's network namespace: {0}")]
    Unshare(rustix::io::Errno),
    #[error(transparent)]
    IdMap(#[from] super::namespaces::NamespaceError),
    #[error(transparent)]
    Loopback(#[from] super::loopback::LoopbackError),
    #[error("cannot open the session's {kind} namespace: {source}")]
    Open { kind: &'static str, source: std::io::Error },
    #[error("the session's {kind} namespace is gone (its keeper ended)")]
    Gone { kind: &'static str },
    #[error("cannot join the session's {kind} namespace: {source}")]
    Join { kind: &'static str, source: rustix::io::Errno },
}

impl SharedNetwork {
    /// The launcher's `--join-network` argument.
    pub fn to_arg(&self) -> String {
        format!("{}:{}:{}", self.pid, self.user.unwrap_or(0), self.net)
    }

    /// The inverse of [`Self::to_arg`] (and of the keeper's ready line).
    pub fn parse(text: &str) -> Option<Self> {
        let mut fields = text.trim().splitn(3, ':').map(str::parse::<u64>);
        let (Some(Ok(pid)), Some(Ok(user)), Some(Ok(net))) =
            (fields.next(), fields.next(), fields.next())
        else {
            return None;
        };
        Some(Self { pid: u32::try_from(pid).ok()?, user: (user != 0).then_some(user), net })
    }
}

/// The keeper (see the module doc). Returns its exit code: 0 once its
/// stdin ended, 1 when the namespace could not be made (said on stdout,
/// where keel waits for the ready line).
pub fn keep(bridges: &Bridges) -> i32 {
    let (line, code) = match make(bridges) {
        Ok(shared) => (shared.to_arg(), 0),
        Err(error) => (format!("error: {error}"), 1),
    };
    let mut out = std::io::stdout().lock();
    if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() || code != 0 {
        return 1;
    }
    drop(out);
    // Lives until keel closes the pipe (the session ended, or keel died).
    let mut stdin = std::io::stdin().lock();
    loop {
        match stdin.fill_buf() {
            Ok([]) | Err(_) => return 0,
            Ok(bytes) => {
                let read = bytes.len();
                stdin.consume(read);
            }
        }
    }
}

/// Unshares the namespace, brings up `lo`, starts the host-port
/// listeners (threads: only after the single-threaded `unshare`).
fn make(bridges: &Bridges) -> Result<SharedNetwork, SharedNetError> {
    let user = match unshare(UnshareFlags::NEWNET) {
        Ok(()) => false,
        Err(_) => {
            unshare(UnshareFlags::NEWNET | UnshareFlags::NEWUSER)
                .map_err(SharedNetError::Unshare)?;
            super::namespaces::map_own_ids()?;
            true
        }
    };
    super::loopback::bring_up()?;
    let host_ports = Bridges { proxy: None, host_ports: bridges.host_ports.clone() };
    super::loopback::listen(&host_ports, "")?;
    let inode = |kind: &'static str| {
        std::fs::metadata(format!("/proc/self/ns/{kind}"))
            .map(|meta| meta.ino())
            .map_err(|source| SharedNetError::Open { kind, source })
    };
    Ok(SharedNetwork {
        pid: std::process::id(),
        user: if user { Some(inode("user")?) } else { None },
        net: inode("net")?,
    })
}

#[allow(deprecated)] // see `namespaces`: `unshare_unsafe` only for CLONE_FILES
fn unshare(flags: UnshareFlags) -> rustix::io::Result<()> {
    rustix::thread::unshare(flags)
}

/// Joins the session's namespaces (the launcher, single-threaded, before
/// its own `unshare`). `Ok(true)`: a user namespace was joined, whose
/// `CAP_SYS_ADMIN` the launcher then holds.
pub fn join(shared: &SharedNetwork) -> Result<bool, SharedNetError> {
    if let Some(inode) = shared.user {
        enter(shared.pid, "user", inode, LinkNameSpaceType::User)?;
    }
    enter(shared.pid, "net", shared.net, LinkNameSpaceType::Network)?;
    Ok(shared.user.is_some())
}

fn enter(
    pid: u32,
    kind: &'static str,
    inode: u64,
    space: LinkNameSpaceType,
) -> Result<(), SharedNetError> {
    let file = std::fs::File::open(format!("/proc/{pid}/ns/{kind}"))
        .map_err(|source| SharedNetError::Open { kind, source })?;
    let same = file.metadata().map(|meta| meta.ino() == inode).unwrap_or(false);
    if !same {
        return Err(SharedNetError::Gone { kind });
    }
    rustix::thread::move_into_link_name_space(file.as_fd(), Some(space))
        .map_err(|source| SharedNetError::Join { kind, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_argument_round_trips_with_and_without_a_user_namespace() {
        for shared in [
            SharedNetwork { pid: 42, user: Some(4_026_531_837), net: 4_026_532_000 },
            SharedNetwork { pid: 7, user: None, net: 9 },
        ] {
            assert_eq!(SharedNetwork::parse(&shared.to_arg()), Some(shared));
        }
        assert_eq!(SharedNetwork::parse("error: no namespace"), None);
        assert_eq!(SharedNetwork::parse("1:2"), None);
    }

    #[test]
    fn a_recycled_pid_is_refused() {
        let mine = std::fs::metadata("/proc/self/ns/net").unwrap().ino();
        let wrong = SharedNetwork { pid: std::process::id(), user: None, net: mine + 1 };
        assert!(matches!(join(&wrong), Err(SharedNetError::Gone { kind: "net" })));
    }
}
