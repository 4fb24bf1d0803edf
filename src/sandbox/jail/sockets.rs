//! The host's unix sockets bound to a path (ssh-agent, `docker.sock`, the
//! session bus, X11, …), read from `/proc/net/unix` before the launcher
//! leaves the host's network namespace (the list is per namespace). The
//! jail covers each with `/dev/null` ([`super::mounts`]): landlock cannot
//! stop a `connect(2)` to a path before Linux 7.1, and a read-only mount
//! does not stop it either.
//!
//! Abstract sockets (`@name`) are not files: a private network namespace
//! hides them, and landlock's socket scope (Linux 6.12+) refuses them too.

use std::path::PathBuf;

/// Paths of the sockets in `/proc/net/unix` text: bound ones with an
/// absolute path, listening or datagram alike.
pub fn bound_paths(proc_net_unix: &str) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = proc_net_unix
        .lines()
        .skip(1)
        .filter_map(path_field)
        .filter(|path| path.starts_with('/'))
        .map(PathBuf::from)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

/// The eighth field: after seven whitespace-separated ones (the inode is
/// padded with spaces), up to the end of the line (a path may hold spaces).
fn path_field(line: &str) -> Option<&str> {
    let mut rest = line;
    for _ in 0..7 {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace)?;
        rest = &rest[end..];
    }
    Some(rest.trim())
}

/// The host's bound socket paths now (empty when `/proc/net/unix` cannot
/// be read).
pub fn host_socket_paths() -> Vec<PathBuf> {
    std::fs::read_to_string("/proc/net/unix").map(|text| bound_paths(&text)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_paths_are_kept() {
        let text = "Num       RefCount Protocol Flags    Type St Inode Path\n\
            0000: 00000002 00000000 00010000 0001 01  1001 /run/docker.sock\n\
            0000: 00000002 00000000 00010000 0001 01 1002 @/tmp/.X11-unix/X0\n\
            0000: 00000003 00000000 00000000 0001 03 1003\n\
            0000: 00000002 00000000 00000000 0002 01 1004 /dev/log\n\
            0000: 00000002 00000000 00010000 0001 01 1005 /tmp/with space/agent\n\
            0000: 00000002 00000000 00010000 0001 01 1001 /run/docker.sock\n";
        assert_eq!(
            bound_paths(text),
            ["/dev/log", "/run/docker.sock", "/tmp/with space/agent"].map(PathBuf::from)
        );
    }
}
