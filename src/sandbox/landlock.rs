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
//!   the extra roots;
//! - `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/tty` and `/dev/pts` for
//!   writing.
//!
//! `.git` and `.keel` of each workspace root (`protect_vcs`, on by
//! default) are kept read-only by the launcher before landlock, with a
//! private mount namespace ([`super::vcs_mounts`]): landlock cannot
//! subtract a folder from a grant, so the workspace root is granted whole
//! and the mounts do the subtraction. When the namespace cannot be created
//! (unprivileged user namespaces disabled, seccomp, …) the launcher
//! ([`VcsGuard`]) either
//! - runs the command with `.git`/`.keel` writable and says so on stderr
//!   (the default: builds keep working, nothing is claimed that does not
//!   hold), or
//! - with `sandbox.required = true`, subtracts them with landlock itself
//!   ([`apply`]'s `carve_out`): a root holding a protected folder is
//!   granted child by child (recursing towards the protected folder), with
//!   write (not create/remove) on regular files directly in it. Limit: a
//!   sandboxed command then cannot create, delete or rename entries
//!   directly in the workspace root or in a folder on the way to a
//!   protected one (a fresh `cargo build` cannot create `target/`), and
//!   the grant is computed when the command starts.
//!
//! Network off (`--network` absent) handles TCP bind and connect (landlock
//! ABI 4, Linux 6.7+) with no port allowed: every TCP connection fails,
//! loopback included (landlock filters by port, not address). UDP (so DNS)
//! and Unix sockets are not covered. On older kernels the network is not
//! restricted and [`Enforcement::Partial`] says so.
//!
//! Invariant: an unenforceable sandbox is never silent: [`apply`] reports
//! [`Enforcement::None`]/[`Enforcement::Partial`] and the launcher prints
//! it; with `required` it refuses to run. The probe ([`probe`]) reports
//! the [`VcsGuard`] too, so a session says when `.git` is not protected.

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
    /// Keep `.git` and `.keel` read-only inside the workspace roots (on by
    /// default; see the module doc for how, and the fallback). A `git
    /// commit` run by the model fails then; policy asks before any command
    /// that names those folders either way.
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

/// How `.git` and `.keel` are kept read-only for a confined command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VcsGuard {
    /// Not asked for (`protect_vcs = false`), or not needed (read-only and
    /// full-access modes).
    NotRequested,
    /// Read-only mounts in a private mount namespace (nothing to mount when
    /// neither folder exists).
    Mounts,
    /// Landlock's child-by-child grant (the fallback with `required`): no
    /// new entries directly in the workspace root.
    Landlock,
    /// Asked for but not enforced: the namespace could not be created.
    Off,
}

/// Why the sandbox could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LandlockError {
    #[error("cannot build the landlock ruleset: {0}")]
    Ruleset(#[from] landlock::RulesetError),
    #[error("cannot list workspace root {path}: {source}", path = path.display())]
    ListRoot { path: PathBuf, source: std::io::Error },
}

/// Restricts the calling thread (and what it execs) to `confinement`. In
/// mode `workspace-write`, the `carve_out` folders (inside the workspace
/// roots) stay read-only by granting their roots child by child (the
/// fallback of [`VcsGuard::Landlock`]); empty, every root is granted whole.
pub fn apply(
    confinement: &Confinement,
    carve_out: &[PathBuf],
) -> Result<Enforcement, LandlockError> {
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
        let roots = confinement.workspace_roots.iter().chain(&confinement.extra_roots);
        for root in roots.cloned().chain(temp_roots()) {
            for (path, is_dir) in grants_except(&root, carve_out, 0)? {
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

/// The folders landlock itself must keep read-only for the fallback
/// [`VcsGuard::Landlock`]: `.git` and `.keel` of each workspace root,
/// existing or not.
pub fn vcs_carve_out(confinement: &Confinement) -> Vec<PathBuf> {
    confinement
        .workspace_roots
        .iter()
        .flat_map(|root| [root.join(".git"), root.join(".keel")])
        .collect()
}

/// What the launcher's probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    pub enforcement: Enforcement,
    pub vcs: VcsGuard,
}

/// The probe's exit code: 126 when nothing is enforced, else 0 (full) or
/// [`PROBE_PARTIAL`], plus 16 for [`VcsGuard::Landlock`] and 32 for
/// [`VcsGuard::Off`].
pub fn probe_exit_code(enforcement: &Enforcement, vcs: VcsGuard) -> i32 {
    let base = match enforcement {
        Enforcement::Full => 0,
        Enforcement::Partial => PROBE_PARTIAL,
        Enforcement::None => return EXIT_UNENFORCEABLE,
    };
    base + match vcs {
        VcsGuard::NotRequested | VcsGuard::Mounts => 0,
        VcsGuard::Landlock => 16,
        VcsGuard::Off => 32,
    }
}

/// Reads a probe exit code back ([`probe_exit_code`]); anything else
/// means nothing is enforced. `protect_vcs` tells `Mounts` from
/// `NotRequested`.
pub fn decode_probe(code: Option<i32>, protect_vcs: bool) -> ProbeReport {
    let none = ProbeReport { enforcement: Enforcement::None, vcs: VcsGuard::Off };
    let Some(code) = code else { return none };
    let enforcement = match code % 16 {
        0 => Enforcement::Full,
        PROBE_PARTIAL => Enforcement::Partial,
        _ => return none,
    };
    let vcs = match code / 16 {
        0 if protect_vcs => VcsGuard::Mounts,
        0 => VcsGuard::NotRequested,
        1 => VcsGuard::Landlock,
        2 => VcsGuard::Off,
        _ => return none,
    };
    ProbeReport { enforcement, vcs }
}

/// Asks the launcher whether the kernel enforces `confinement` (it sets up
/// the sandbox for itself and exits with [`probe_exit_code`]).
pub fn probe(confinement: &Confinement) -> ProbeReport {
    let args = confinement.launcher_args(&["--probe".into()]);
    let status = std::process::Command::new(&confinement.launcher)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    let protect_vcs = confinement.protect_vcs && confinement.mode == SandboxMode::WorkspaceWrite;
    match status {
        Ok(status) => decode_probe(status.code(), protect_vcs),
        Err(_) => decode_probe(None, protect_vcs),
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
    fn probe_codes_round_trip() {
        for enforcement in [Enforcement::Full, Enforcement::Partial] {
            for vcs in [VcsGuard::Mounts, VcsGuard::Landlock, VcsGuard::Off] {
                let code = probe_exit_code(&enforcement, vcs);
                assert_eq!(
                    decode_probe(Some(code), true),
                    ProbeReport { enforcement: enforcement.clone(), vcs }
                );
            }
        }
        assert_eq!(decode_probe(Some(0), false).vcs, VcsGuard::NotRequested);
        assert_eq!(decode_probe(Some(EXIT_UNENFORCEABLE), true).enforcement, Enforcement::None);
        assert_eq!(decode_probe(None, true).enforcement, Enforcement::None);
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
