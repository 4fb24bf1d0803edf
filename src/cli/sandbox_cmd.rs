//! `keel sandbox-exec` (hidden): the jail's launcher (`sandbox::jail`).
//! Parses the confinement from flags and hands it to
//! `sandbox::jail::launch`; with `--init JSON` (the launcher's own
//! re-exec as PID 1 of the new namespace) it runs the jail's init
//! instead. `-- --probe` only reports the layers the kernel offered, as
//! JSON on stdout.
//!
//! The same command line is also the whole of `keel-jail`
//! ([`jail_main`], `src/jail_main.rs`): a small binary with only this
//! command, which keel runs as the launcher when it is installed beside
//! it (`sandbox::jail::launcher`), so that each sandboxed command pays two
//! `exec`s of a small binary rather than of all of keel.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use super::{CliError, ExitStatus};
use crate::sandbox::jail::shared_net::SharedNetwork;
use crate::sandbox::jail::{self, Handover, Request};
use crate::sandbox::landlock::{Confinement, NetworkMode, SandboxMode};
use crate::sandbox::netproxy::{Bridges, HostPort};

#[derive(Debug, Args)]
pub struct SandboxExecArgs {
    /// read-only, workspace-write or full-access.
    #[arg(long, default_value = "workspace-write")]
    pub mode: String,
    /// A workspace root: writable except its `.git`, `.keel` and `.claude`.
    #[arg(long = "workspace-root", value_name = "DIR")]
    pub workspace_roots: Vec<PathBuf>,
    /// Another writable folder.
    #[arg(long = "write-root", value_name = "DIR")]
    pub write_roots: Vec<PathBuf>,
    /// A path kept read-only even inside a writable folder.
    #[arg(long = "read-only", value_name = "PATH")]
    pub read_only: Vec<PathBuf>,
    /// A credential store the command cannot read (an empty read-only
    /// folder or an unopenable file in its place).
    #[arg(long = "hide", value_name = "PATH")]
    pub hidden: Vec<PathBuf>,
    /// off (loopback only), allowlist (loopback and keel's proxy) or on.
    #[arg(long, default_value = "off", value_name = "MODE")]
    pub network: String,
    /// The allowlist proxy's unix socket (keel's), bridged to 127.0.0.1.
    #[arg(long = "proxy-socket", value_name = "PATH")]
    pub proxy_socket: Option<PathBuf>,
    /// A host loopback port bridged in through keel's unix socket.
    #[arg(long = "host-port", value_name = "PORT=PATH")]
    pub host_ports: Vec<String>,
    /// Refuse to run when the sandbox cannot be enforced.
    #[arg(long)]
    pub required: bool,
    /// Keep `.git`, `.keel` and `.claude` read-only inside the workspace roots.
    #[arg(long)]
    pub protect_vcs: bool,
    /// With --protect-vcs: `.git` writable but for its config, hooks,
    /// `info/` and the like (a recognised git command).
    #[arg(long)]
    pub git_write: bool,
    /// The most processes and threads the command may have at once.
    #[arg(long, value_name = "N")]
    pub max_pids: Option<u32>,
    /// Internal: join the session's network namespace (`PID:USER:NET`,
    /// the keeper's PID and namespace inodes) instead of making one.
    #[arg(long, hide = true, value_name = "PID:USER:NET")]
    pub join_network: Option<String>,
    /// Internal: be the session's network namespace keeper (until stdin ends).
    #[arg(long, hide = true)]
    pub netns_keeper: bool,
    /// Internal: be a stdio MCP server's stage (`sandbox::server_stage`):
    /// run the command and end everything it starts when it or keel ends.
    #[arg(long, hide = true)]
    pub server_stage: bool,
    /// Internal: stdin is a terminal to make the command's controlling one.
    #[arg(long, hide = true)]
    pub terminal: bool,
    /// Internal: run an unconfined command with stdin, a terminal, as its
    /// controlling one (`sandbox::pty::stage`).
    #[arg(long, hide = true)]
    pub terminal_stage: bool,
    /// Internal: the launcher's hand-over to the jail's init.
    #[arg(long, hide = true, value_name = "JSON")]
    pub init: Option<String>,
    /// The command to run.
    #[arg(last = true, required_unless_present = "netns_keeper")]
    pub command: Vec<OsString>,
}

/// `keel-jail`'s command line: `keel-jail sandbox-exec …`, exactly the
/// arguments keel's own `sandbox-exec` takes (so the launcher's argument
/// builder, `Confinement::launcher_args`, serves both binaries).
#[derive(Debug, Parser)]
#[command(name = "keel-jail", version, about = "keel's sandbox launcher (internal)")]
struct JailCli {
    #[command(subcommand)]
    command: JailCommand,
}

#[derive(Debug, Subcommand)]
enum JailCommand {
    /// The jail's launcher (see `keel sandbox-exec`).
    SandboxExec(SandboxExecArgs),
}

/// The `keel-jail` binary: parses its command line and runs the jail's
/// stage it names; returns the exit code (every stage normally exits
/// from within).
pub fn jail_main() -> u8 {
    let JailCli { command: JailCommand::SandboxExec(args) } = JailCli::parse();
    match run(args) {
        Ok(status) => status.code(),
        Err(error) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{}", error.render());
            error.exit_status().code()
        }
    }
}

pub(super) fn run(args: SandboxExecArgs) -> Result<ExitStatus, CliError> {
    if let Some(json) = &args.init {
        let handover: Handover = serde_json::from_str(json).map_err(|error| {
            CliError::usage(format!("bad hand-over to the jail's init: {error}"))
        })?;
        std::process::exit(jail::init(handover, args.command));
    }
    if args.terminal_stage {
        let Some((program, rest)) = args.command.split_first() else {
            return Err(CliError::usage("--terminal-stage needs a command after --"));
        };
        std::process::exit(crate::sandbox::pty::stage(program, rest));
    }
    if args.server_stage {
        let Some((program, rest)) = args.command.split_first() else {
            return Err(CliError::usage("--server-stage needs a command after --"));
        };
        std::process::exit(crate::sandbox::server_stage::run(program, rest));
    }
    let mode = SandboxMode::parse(&args.mode)
        .ok_or_else(|| CliError::usage(format!("unknown sandbox mode `{}`", args.mode)))?;
    let network = NetworkMode::parse(&args.network)
        .ok_or_else(|| CliError::usage(format!("unknown network mode `{}`", args.network)))?;
    let host_ports = args
        .host_ports
        .iter()
        .map(|text| {
            let (port, socket) = text.split_once('=').unwrap_or((text, ""));
            match port.parse() {
                Ok(port) if !socket.is_empty() => Ok(HostPort { port, socket: socket.into() }),
                _ => Err(CliError::usage(format!("--host-port takes PORT=PATH, not `{text}`"))),
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    if args.netns_keeper {
        let bridges = Bridges { proxy: None, host_ports };
        std::process::exit(jail::shared_net::keep(&bridges));
    }
    let shared_network = match &args.join_network {
        Some(text) => Some(SharedNetwork::parse(text).ok_or_else(|| {
            CliError::usage(format!("--join-network takes PID:USER:NET, not `{text}`"))
        })?),
        None => None,
    };
    let confinement = Confinement {
        launcher: PathBuf::new(),
        mode,
        workspace_roots: args.workspace_roots,
        extra_roots: args.write_roots,
        read_only: args.read_only,
        network,
        bridges: Bridges { proxy: args.proxy_socket, host_ports },
        required: args.required,
        protect_vcs: args.protect_vcs,
        git_write: args.git_write,
        max_pids: args.max_pids.unwrap_or_else(jail::privileges::default_max_pids),
        shared_network,
        hidden: args.hidden,
    };
    std::process::exit(jail::launch(Request {
        confinement,
        command: args.command,
        terminal: args.terminal,
    }));
}
