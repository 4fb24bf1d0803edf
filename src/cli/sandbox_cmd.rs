//! `keel sandbox-exec` (hidden): the landlock launcher. Applies the
//! sandbox to itself, then `exec`s the command, which inherits it. Never
//! silent: a sandbox the kernel cannot enforce is said on stderr, and with
//! `--required` the command is refused (exit 126). `-- --probe` only
//! reports: exit 0 (enforced), 3 (partly), 126 (not at all).

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use clap::Args;

use crate::exec::ExitStatus;
use crate::sandbox::landlock::{
    self, Confinement, EXIT_UNENFORCEABLE, Enforcement, PROBE_PARTIAL, SandboxMode,
};

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
    let enforcement = match landlock::apply(&confinement) {
        Ok(enforcement) => enforcement,
        Err(error) => {
            say(&format!("keel: cannot set up the sandbox: {error}"));
            Enforcement::None
        }
    };
    if args.command.first().is_some_and(|c| c == "--probe") {
        std::process::exit(match enforcement {
            Enforcement::Full => 0,
            Enforcement::Partial => PROBE_PARTIAL,
            Enforcement::None => EXIT_UNENFORCEABLE,
        });
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

fn say(message: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{message}");
}
