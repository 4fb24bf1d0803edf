//! `keel fork ID [--at N]`: a new session copied from another's log
//! before its prompt N (or whole); prints the new id on stdout (the
//! parent, the point and the next step on stderr). The workspace is left
//! as it is (`runtime/history/fork.rs`).

use std::io::Write;

use super::{CliError, Context, ExitStatus, ForkArgs};
use crate::config::Environment;
use crate::runtime::fork;
use crate::session::{find_by_prefix, sessions_dir};

pub(super) fn run(args: &ForkArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let dir = sessions_dir(&env.keel_home);
    let parent = find_by_prefix(&dir, &args.id).context("cannot pick the session to fork")?;
    let forked = fork(&dir, &parent, args.at).context("cannot fork the session")?;
    let _ = writeln!(std::io::stdout().lock(), "{}", forked.session_id);
    let point = match args.at {
        Some(n) => format!("before its prompt {n}"),
        None => "with its whole conversation".to_owned(),
    };
    let _ = writeln!(
        std::io::stderr().lock(),
        "forked {} {point} ({} prompt(s) copied); go on with `keel resume {id}` or \
         `keel exec resume {id} \"…\"`",
        parent.file_stem().map(|stem| stem.to_string_lossy()).unwrap_or_default(),
        forked.prompts,
        id = forked.session_id,
    );
    Ok(ExitStatus::Done)
}
