//! Landlock confinement for commands keel runs for the model.
//!
//! The crate forbids `unsafe`, so there is no `pre_exec` hook: a confined
//! command is run as `keel sandbox-exec --write-root A … [--network] --
//! bash -c SCRIPT`. That launcher ([`apply`], then `exec`) restricts itself
//! and the program it becomes inherits the restriction.
//!
//! What the ruleset allows (mode `workspace-write`):
//! - read and execute anywhere;
//! - full write access beneath the workspace roots, the temp folders and
//!   the extra roots; with `protect_vcs` (`sandbox.protect_vcs = true`),
//!   except beneath each workspace's `.git` and `.keel`.
//!   Landlock cannot subtract a folder from a grant, so a root holding a
//!   protected folder is granted child by child (recursing towards the
//!   protected folder), with write (not create/remove) on regular files
//!   directly in it. Limit: a sandboxed command cannot create, delete or
//!   rename entries directly in the workspace root or in a folder on the
//!   way to a protected one (sub-folders are fine), and the grant is
//!   computed when the command starts (a folder created later directly in
//!   the root is read-only for that command);
//! - `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty` and `/dev/pts` for
//!   writing.
//!
//! Network off (`--network` absent) handles TCP bind and connect (landlock
//! ABI 4, Linux 6.7+) with no port allowed: every TCP connection fails,
//! loopback included (landlock filters by port, not address). UDP (so DNS)
//! and Unix sockets are not covered. On older kernels the network is not
//! restricted and [`Enforcement::Partial`] says so.
//!
//! Invariant: an unenforceable sandbox is never silent: [`apply`] reports
//! [`Enforcement::None`]/[`Enforcement::Partial`] and the launcher prints
//! it; with `required` it refuses to run.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd,
    Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
};

/// The landlock ABI keel asks for (6.7+: filesystem, truncate, TCP).
const WANTED_ABI: ABI = ABI::V4;

/// Exit code of `keel sandbox-exec` when the sandbox is required but
/// cannot be enforced (126: "command cannot execute").
pub const EXIT_UNENFORCEABLE: i32 = 126;

/// How much the sandbox lets a command write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// The keel binary that launches confined commands.
    pub launcher: PathBuf,
    pub mode: SandboxMode,
    /// Workspace roots (`.git`/`.keel` inside stay read-only).
    pub workspace_roots: Vec<PathBuf>,
    /// Other folders writable as a whole (temp folders, configured roots).
    pub extra_roots: Vec<PathBuf>,
    pub network: bool,
    /// Refuse to run when the sandbox cannot be enforced.
    pub required: bool,
    /// Keep `.git` and `.keel` read-only inside the workspace roots. Off by
    /// default: landlock cannot subtract folders, so protecting them means
    /// no new entries directly in the workspace root (a fresh `cargo build`
    /// cannot create `target/`) and no `git commit`. Policy still asks
    /// before any command that names those folders.
    pub protect_vcs: bool,
}

impl Confinement {
    /// The launcher's arguments for running `program` confined.
    pub fn launcher_args(&self, program: &[OsString]) -> Vec<OsString> {
        let mut args: Vec<OsString> =
            vec!["sandbox-exec".into(), "--mode".into(), self.mode.as_str().into()];
        for root in &self.workspace_roots {
            args.push("--workspace-root".into());
            args.push(root.into());
        }
        for root in &self.extra_roots {
            args.push("--write-root".into());
            args.push(root.into());
        }
        if self.network {
            args.push("--network".into());
        }
        if self.required {
            args.push("--required".into());
        }
        if self.protect_vcs {
            args.push("--protect-vcs".into());
        }
        args.push("--".into());
        args.extend(program.iter().cloned());
        args
    }
}

/// How much of the sandbox the kernel enforces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    /// Some restrictions (e.g. network on kernels before 6.7) are missing.
    Partial,
    /// The kernel enforces nothing (landlock missing or disabled).
    None,
}

/// Why the sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("cannot build the landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot list workspace root {path}: {source}", path = path.display())]
    ListRoot { path: PathBuf, source: std::io::Error },
}

/// Restricts the calling thread (and what it execs) to `confinement`.
pub fn apply(confinement: &Confinement) -> Result<Enforcement, LandlockError> {
    if confinement.mode == SandboxMode::FullAccess && confinement.network {
        return Ok(Enforcement::Full);
    }
    let read = AccessFs::from_read(WANTED_ABI);
    let all = AccessFs::from_all(WANTED_ABI);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::BestEffort);
    if confinement.mode != SandboxMode::FullAccess {
        ruleset = ruleset.handle_access(all)?;
    }
    if !confinement.network {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    let mut created = ruleset.create()?;
    if confinement.mode != SandboxMode::FullAccess {
        created = add(created, Path::new("/"), read)?;
        for device in ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty"] {
            created = add(created, Path::new(device), AccessFs::from_file(WANTED_ABI))?;
        }
        created = add(created, Path::new("/dev/pts"), all)?;
    }
    if confinement.mode == SandboxMode::WorkspaceWrite {
        let protected: Vec<PathBuf> = confinement
            .workspace_roots
            .iter()
            .filter(|_| confinement.protect_vcs)
            .flat_map(|root| [root.join(".git"), root.join(".keel")])
            .collect();
        let roots = confinement.workspace_roots.iter().chain(&confinement.extra_roots);
        for root in roots.cloned().chain(temp_roots()) {
            for (path, is_dir) in grants_except(&root, &protected, 0)? {
                let access = if is_dir { all } else { AccessFs::from_file(WANTED_ABI) };
                created = add(created, &path, access)?;
            }
        }
    }
    let status = created.restrict_self()?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    })
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

fn temp_roots() -> Vec<PathBuf> {
    let mut roots =
        vec![PathBuf::from("/tmp"), PathBuf::from("/var/tmp"), PathBuf::from("/dev/shm")];
    if let Some(dir) = std::env::var_os("TMPDIR") {
        roots.push(PathBuf::from(dir));
    }
    roots
}

/// Asks the launcher whether the kernel enforces `confinement` (it applies
/// the ruleset to itself and exits: 0 full, 3 partial, 126 none).
pub fn probe(confinement: &Confinement) -> Enforcement {
    let mut probe = confinement.clone();
    probe.required = false;
    let args = probe.launcher_args(&["--probe".into()]);
    let status = std::process::Command::new(&confinement.launcher)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    match status.map(|s| s.code()) {
        Ok(Some(0)) => Enforcement::Full,
        Ok(Some(PROBE_PARTIAL)) => Enforcement::Partial,
        Ok(_) | Err(_) => Enforcement::None,
    }
}

/// Exit code of `keel sandbox-exec … -- --probe` when only part of the
/// sandbox is enforced.
pub const PROBE_PARTIAL: i32 = 3;

/// Whether a failed command's output looks like the sandbox stopped it:
/// a non-zero exit plus a permission error (EACCES/EPERM as tools print
/// them, or a refused TCP connection with the network off). Pure, so the
/// `shell` tool can call it on its captured output.
pub fn looks_like_violation(exit_code: Option<i32>, output: &str, network: bool) -> bool {
    const DENIED: [&str; 5] = [
        "Permission denied",
        "Operation not permitted",
        "EACCES",
        "EPERM",
        "Read-only file system",
    ];
    if exit_code == Some(0) {
        return false;
    }
    let denied = DENIED.iter().any(|pattern| output.contains(pattern));
    let network_refused = !network
        && [
            "Network is unreachable",
            "Couldn't connect",
            "Failed to connect",
            "connect: Permission denied",
        ]
        .iter()
        .any(|pattern| output.contains(pattern));
    denied || network_refused
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violation_needs_a_failure_and_a_permission_error() {
        assert!(looks_like_violation(
            Some(1),
            "touch: cannot touch '/x': Permission denied",
            false
        ));
        assert!(!looks_like_violation(Some(0), "Permission denied", false));
        assert!(!looks_like_violation(Some(2), "no such file", false));
        assert!(looks_like_violation(None, "Operation not permitted", true));
    }

    #[test]
    fn launcher_args_end_with_the_command() {
        let confinement = Confinement {
            launcher: "/bin/keel".into(),
            mode: SandboxMode::WorkspaceWrite,
            workspace_roots: vec!["/ws".into()],
            extra_roots: vec![],
            network: false,
            required: true,
            protect_vcs: true,
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
                "--required",
                "--protect-vcs",
                "--",
                "bash",
                "-c",
                "ls"
            ]
        );
    }
}
