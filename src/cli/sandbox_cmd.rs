//! `keel sandbox-exec` (hidden): the sandbox launcher. With
//! `--protect-vcs` (mode workspace-write) it first makes `.git` and `.keel`
//! read-only in a private mount namespace (`sandbox::vcs_mounts`), then
//! applies landlock to itself, then `exec`s the command, which inherits
//! both. Never silent: a sandbox the kernel cannot enforce is said on
//! stderr, and with `--required` the command is refused (exit 126); when
//! the namespace cannot be created, `.git` stays writable with a warning
//! on stderr, or with `--required` landlock protects it child by child
//! (see `sandbox::landlock`). `-- --probe` only reports, through
//! `landlock::probe_exit_code`.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use clap::Args;

use crate::exec::ExitStatus;
use crate::sandbox::landlock::{
    self, Confinement, EXIT_UNENFORCEABLE, Enforcement, SandboxMode, VcsGuard,
};
use crate::sandbox::vcs_mounts;

#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// read-only, workspace-write or full-access.
    #[arg(long, default_value = "workspace-write")]
    pub mode: String,
    /// A workspace root: writable except its `.git` and `.keel`.
    #[arg(long = "workspace-root", value_name = "DIR")]
    pub workspace_roots: Vec<PathBuf>,
    /// Another writable folder.
    #[arg(long = "write-root", value_name = "DIR")]
    pub write_roots: Vec<PathBuf>,
    /// Allow TCP connections.
    #[arg(long)]
    pub network: bool,
    /// Refuse to run when the sandbox cannot be enforced.
    #[arg(long)]
    pub required: bool,
    /// Keep `.git` and `.keel` read-only inside the workspace roots.
    #[arg(long)]
    pub protect_vcs: bool,
    /// The command to run.
    #[arg(last = true, required = true)]
    pub command: Vec<OsString>,
}

pub(super) fn run(args: SandboxExecArgs) -> anyhow::Result<ExitStatus> {
    let mode = SandboxMode::parse(&args.mode)
        .ok_or_else(|| anyhow::anyhow!("unknown sandbox mode `{}`", args.mode))?;
    let confinement = Confinement {
        launcher: PathBuf::new(),
        mode,
        workspace_roots: args.workspace_roots,
        extra_roots: args.write_roots,
        network: args.network,
        required: args.required,
        protect_vcs: args.protect_vcs,
    };
    let vcs = guard_vcs(&confinement);
    let carve_out = match vcs {
        VcsGuard::Landlock => landlock::vcs_carve_out(&confinement),
        VcsGuard::NotRequested | VcsGuard::Mounts | VcsGuard::Off => Vec::new(),
    };
    let enforcement = match landlock::apply(&confinement, &carve_out) {
        Ok(enforcement) => enforcement,
        Err(error) => {
            say(&format!("keel: cannot set up the sandbox: {error}"));
            Enforcement::None
        }
    };
    if args.command.first().is_some_and(|c| c == "--probe") {
        std::process::exit(landlock::probe_exit_code(&enforcement, vcs));
    }
    match enforcement {
        Enforcement::Full | Enforcement::Partial => {}
        Enforcement::None if args.required => {
            say(
                "keel: the sandbox cannot be enforced on this kernel and sandbox.required = true: refusing to run the command",
            );
            std::process::exit(EXIT_UNENFORCEABLE);
        }
        Enforcement::None => {
            say("keel: WARNING: the sandbox is not enforced on this kernel; running unconfined")
        }
    }
    let Some((program, rest)) = args.command.split_first() else {
        anyhow::bail!("no command given after `--`");
    };
    let error = std::process::Command::new(program).args(rest).exec();
    Err(anyhow::anyhow!("cannot run {}: {error}", program.to_string_lossy()))
}

/// Keeps `.git`/`.keel` read-only with mounts when asked (mode
/// workspace-write), else picks the fallback: landlock's child-by-child
/// grant with `required`, otherwise none, said on stderr either way.
fn guard_vcs(confinement: &Confinement) -> VcsGuard {
    if !confinement.protect_vcs || confinement.mode != SandboxMode::WorkspaceWrite {
        return VcsGuard::NotRequested;
    }
    let paths = vcs_mounts::protected_paths(&confinement.workspace_roots);
    if paths.is_empty() {
        return VcsGuard::Mounts;
    }
    let Err(error) = vcs_mounts::make_read_only(&paths) else {
        return VcsGuard::Mounts;
    };
    if confinement.required {
        say(&format!(
            "keel: .git and .keel kept read-only by landlock instead ({error}); \
             new files or folders directly in the workspace root cannot be created"
        ));
        VcsGuard::Landlock
    } else {
        say(&format!(
            "keel: WARNING: .git and .keel are NOT read-only for this command: {error} \
             (sandbox.required = true protects them with landlock instead, at the cost of \
             new top-level entries in the workspace)"
        ));
        VcsGuard::Off
    }
}

fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}
