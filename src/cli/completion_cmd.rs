//! `keel completion SHELL`: the shell's completion script on stdout,
//! generated from the same clap definition the parser uses (so it never
//! drifts from the real flags).

use std::io::Write;

use clap::CommandFactory;

use super::{Cli, CliError, ExitStatus};

pub(super) fn run(shell: clap_complete::Shell) -> Result<ExitStatus, CliError> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "keel", &mut script);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&script)?;
    stdout.flush()?;
    Ok(ExitStatus::Done)
}
