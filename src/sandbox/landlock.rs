//! Landlock rules for commands keel runs for the model (the jail's last
//! filesystem layer, applied by its init after the mounts).
//!
//! What the ruleset allows (mode `workspace-write`):
//! - read and execute anywhere;
//! - full write access beneath the workspace roots, the temp folders and
//!   the extra roots;
//! - `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty`, `/dev/ptmx` and
//!   `/dev/pts` for writing (new pseudo-terminals come from the jail's
//!   private `/dev/pts` instance).
//!
//! Landlock cannot subtract a folder from a grant, so the workspace root
//! is granted whole and the jail's read-only mounts subtract `.git`,
//! `.keel` and `.claude` (`jail::mounts`). When no mount namespace can be
//! created, `sandbox.required = true` makes landlock subtract them itself
//! ([`apply`]'s `carve_out`): a root holding a protected folder is granted
//! child by child (recursing towards the protected folder), with write
//! (not create/remove) on regular files directly in it. Limit: a command
//! then cannot create, delete or rename entries directly in the workspace
//! root or in a folder on the way to a protected one (a fresh `cargo
//! build` cannot create `target/`).
//!
//! With the network closed and no private network namespace (the kernel
//! refused it), TCP bind and connect are handled (landlock ABI 4, Linux
//! 6.7+) with no port allowed: every TCP connection fails, loopback
//! included. In the namespace TCP reaches only its own loopback and is
//! left alone. Other socket families are the seccomp filter's job. Scopes (ABI 6, Linux 6.12+): no signal to, and no
//! abstract unix socket of, a process outside the jail.
//!
//! Invariant: an unenforceable ruleset is never silent: [`apply`] reports
//! [`Enforcement::None`]/[`Enforcement::Partial`] and the launcher prints
//! it; with `required` it refuses to run.

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

pub use super::confinement::{
    Confinement, EXIT_UNENFORCEABLE, Enforcement, NetworkMode, SandboxMode, VcsGuard,
    looks_like_violation, network_blocked, network_hint, probe,
};

/// The landlock ABI keel asks for (6.7+: filesystem, truncate, TCP); the
/// scopes are asked for separately (6.12+) so that an older kernel still
/// counts as fully enforcing the rest.
const WANTED_ABI: ABI = ABI::V4;
const SCOPES_ABI: ABI = ABI::V6;

/// Why the sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("cannot build the landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot list workspace root {path}: {source}", path = path.display())]
    ListRoot { path: PathBuf, source: std::io::Error },
}

/// What [`apply`] achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub enforcement: Enforcement,
    /// Signals and abstract unix sockets are scoped to the jail.
    pub scopes: bool,
}

/// Restricts the calling thread (and what it execs) to `confinement`. In
/// mode `workspace-write`, the `carve_out` folders (inside the workspace
/// roots) stay read-only by granting their roots child by child (the
/// fallback of [`VcsGuard::Landlock`]); empty, every root is granted whole.
/// `restrict_tcp`: refuse every TCP bind and connect (network closed
/// without a private network namespace).
pub fn apply(
    confinement: &Confinement,
    carve_out: &[PathBuf],
    restrict_tcp: bool,
) -> Result<Applied, LandlockError> {
    let read = AccessFs::from_read(WANTED_ABI);
    let all = AccessFs::from_all(WANTED_ABI);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if confinement.mode != SandboxMode::FullAccess {
        ruleset = ruleset.handle_access(all)?;
    }
    if restrict_tcp {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    ruleset = ruleset.scope(Scope::from_all(SCOPES_ABI))?;
    let mut created = ruleset.create()?;
    if confinement.mode != SandboxMode::FullAccess {
        created = add(created, Path::new("/"), read)?;
        for device in ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/ptmx"] {
            created = add(created, Path::new(device), AccessFs::from_file(WANTED_ABI))?;
        }
        created = add(created, Path::new("/dev/pts"), all)?;
    }
    if confinement.mode == SandboxMode::WorkspaceWrite {
        let roots = confinement.workspace_roots.iter().chain(&confinement.extra_roots);
        for root in roots.cloned().chain(temp_roots()) {
            for (path, is_dir) in grants_except(&root, carve_out, 0)? {
                let access = if is_dir { all } else { AccessFs::from_file(WANTED_ABI) };
                created = add(created, &path, access)?;
            }
        }
    }
    let status = created.restrict_self()?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        LandlockStatus::NotEnabled | LandlockStatus::NotImplemented => ABI::Unsupported,
    };
    let enforcement = match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        // Only the scopes missing: the rest is whole.
        RulesetStatus::PartiallyEnforced if abi >= WANTED_ABI => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    };
    let scopes = enforcement != Enforcement::None && abi >= SCOPES_ABI;
    Ok(Applied { enforcement, scopes })
}

/// Adds a rule for `path`; a path that does not exist is skipped.
fn add(
    created: landlock::RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, LandlockError> {
    match PathFd::new(path) {
        Ok(fd) => Ok(created.add_rule(PathBeneath::new(fd, access))?),
        Err(_) => Ok(created),
    }
}

/// The paths to grant so that everything beneath `root` is writable except
/// the `protected` folders: `root` itself when no protected folder lies
/// inside it, else its children (recursing along the way to each
/// protected folder). Landlock cannot subtract, hence this. Each entry says
/// whether it is a folder (symlinks are followed when opened).
fn grants_except(
    root: &Path,
    protected: &[PathBuf],
    depth: usize,
) -> Result<Vec<(PathBuf, bool)>, LandlockError> {
    let inside: Vec<&PathBuf> = protected.iter().filter(|p| p.starts_with(root)).collect();
    if inside.is_empty() {
        return Ok(vec![(root.to_owned(), root.is_dir())]);
    }
    if inside.iter().any(|p| *p == root) || depth > 64 {
        return Ok(Vec::new());
    }
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(LandlockError::ListRoot { path: root.to_owned(), source }),
    };
    let mut grants = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        grants.extend(grants_except(&entry.path(), protected, depth + 1)?);
    }
    Ok(grants)
}

pub fn temp_roots() -> Vec<PathBuf> {
    let mut roots =
        vec![PathBuf::from("/tmp"), PathBuf::from("/var/tmp"), PathBuf::from("/dev/shm")];
    if let Some(dir) = std::env::var_os("TMPDIR") {
        roots.push(PathBuf::from(dir));
    }
    roots
}

/// The folders landlock itself must keep read-only for the fallback
/// [`VcsGuard::Landlock`]: the protected names of each workspace root,
/// existing or not.
pub fn vcs_carve_out(confinement: &Confinement) -> Vec<PathBuf> {
    confinement
        .workspace_roots
        .iter()
        .flat_map(|root| super::protected::names().map(|name| root.join(name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_without_protected_folders_is_granted_whole() {
        let dir = tempfile::tempdir().unwrap();
        let grants = grants_except(dir.path(), &[], 0).unwrap();
        assert_eq!(grants, [(dir.path().to_owned(), true)]);
    }

    #[test]
    fn a_protected_folder_is_left_out_of_its_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("README"), "x").unwrap();
        let mut grants = grants_except(dir.path(), &[dir.path().join(".git")], 0).unwrap();
        grants.sort();
        assert_eq!(grants, [(dir.path().join("README"), false), (dir.path().join("src"), true)]);
    }
}
