//! The session's [`Walls`]: what the model is told about the sandbox,
//! read from the [`Confinement`] its commands really run under (never from
//! the approval mode, which lifts none of it).
//!
//! Invariant: every field comes from the confinement value the launcher
//! gets, so the request cannot claim a wall the jail lacks or miss one it
//! has. When the confinement gains a setting (loopback, an allowlist, git
//! writes through recognised git commands), this is the one place that
//! maps it to the [`Walls`] field of the same name.

use std::path::Path;

use crate::prompts::{NetworkWalls, Walls, WriteWalls};
use crate::sandbox::landlock::{Confinement, NetworkMode, SandboxMode};
use crate::sandbox::protected;

/// The walls of `confinement`; paths under `home` are shown as `~/…`.
pub(super) fn walls_of(confinement: &Confinement, home: &Path) -> Walls {
    let writes = match confinement.mode {
        SandboxMode::ReadOnly => WriteWalls::Nowhere,
        SandboxMode::WorkspaceWrite => WriteWalls::Workspace,
        SandboxMode::FullAccess => WriteWalls::Anywhere,
    };
    // A closed network is a private namespace with `lo` up (the jail's
    // `loopback.rs`); the hosts of an allowlist are the settings' (the
    // confinement carries only the proxy's socket), filled by the caller.
    let network = match confinement.network {
        NetworkMode::On => NetworkWalls::On,
        NetworkMode::Off => NetworkWalls::Off { loopback: true },
        NetworkMode::Allowlist => NetworkWalls::Allowlist { hosts: Vec::new(), loopback: true },
    };
    let mut read_only_to_commands: Vec<String> = Vec::new();
    if confinement.protect_vcs && writes != WriteWalls::Nowhere {
        read_only_to_commands.extend(protected::names().map(str::to_owned));
    }
    for path in confinement.read_only.iter().map(|path| shown(path, home)) {
        // keel's home may be the home folder itself (both are carved out).
        if !read_only_to_commands.contains(&path) {
            read_only_to_commands.push(path);
        }
    }
    Walls {
        writes,
        extra_writable: confinement.extra_roots.iter().map(|path| shown(path, home)).collect(),
        network,
        read_only_to_commands,
        // A plain git command gets `.git` writable but its config and
        // hooks (`policy::git_write`, the jail's `--git-write`).
        git_through_git: confinement.protect_vcs && writes == WriteWalls::Workspace,
        credentials_hidden: !confinement.hidden.is_empty(),
    }
}

/// A path as the model reads it: `~/…` under `home`, else absolute.
fn shown(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rest) if home.as_os_str().is_empty() || rest.as_os_str().is_empty() => {
            if home.as_os_str().is_empty() {
                path.to_string_lossy().into_owned()
            } else {
                "~".to_owned()
            }
        }
        Ok(rest) => format!("~/{}", rest.to_string_lossy()),
        _ => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn confinement() -> Confinement {
        Confinement {
            launcher: PathBuf::from("/bin/keel"),
            mode: SandboxMode::WorkspaceWrite,
            workspace_roots: vec![PathBuf::from("/ws")],
            extra_roots: Vec::new(),
            read_only: vec![PathBuf::from("/home/u/.keel")],
            network: NetworkMode::Off,
            bridges: Default::default(),
            required: false,
            protect_vcs: true,
            max_pids: 512,
            shared_network: None,
            hidden: Vec::new(),
            git_write: false,
        }
    }

    #[test]
    fn the_default_confinement_is_network_off_with_loopback_and_git_through_git() {
        let walls = walls_of(&confinement(), Path::new("/home/u"));
        assert_eq!(walls.network, NetworkWalls::Off { loopback: true });
        assert_eq!(walls.writes, WriteWalls::Workspace);
        assert_eq!(
            walls.read_only_to_commands,
            [
                ".git",
                ".keel",
                ".claude",
                ".mcp.json",
                ".vscode",
                ".idea",
                ".husky",
                ".envrc",
                "~/.keel"
            ]
        );
        assert!(walls.git_through_git);
    }

    #[test]
    fn each_setting_shows_in_the_walls() {
        let on = walls_of(
            &Confinement { network: NetworkMode::On, ..confinement() },
            Path::new("/home/u"),
        );
        assert_eq!(on.network, NetworkWalls::On);
        let open = walls_of(
            &Confinement { protect_vcs: false, read_only: vec![], ..confinement() },
            Path::new("/home/u"),
        );
        assert!(open.read_only_to_commands.is_empty());
        let extra = walls_of(
            &Confinement { extra_roots: vec!["/data".into()], ..confinement() },
            Path::new("/home/u"),
        );
        assert_eq!(extra.extra_writable, ["/data"]);
        let read_only = walls_of(
            &Confinement { mode: SandboxMode::ReadOnly, ..confinement() },
            Path::new("/home/u"),
        );
        assert_eq!(read_only.writes, WriteWalls::Nowhere);
    }
}
