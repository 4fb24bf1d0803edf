//! `keel undo [--turns N] [--session ID]`: puts the workspace back as it
//! was before the last N turns that changed files. Refused (exit 1) while
//! another keel process holds the session.

use std::io::Write;

use super::{CliError, Context, ExitStatus, UndoArgs};
use crate::config::{CliOverrides, Environment, load_local};
use crate::runtime::undo;
use crate::session::{find_by_prefix, newest_in_folder, sessions_dir};

pub(super) async fn run(args: &UndoArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let dir = sessions_dir(&env.keel_home);
    let log = match &args.session {
        Some(prefix) => find_by_prefix(&dir, prefix),
        None => newest_in_folder(&dir, &env.cwd),
    }
    .context("cannot pick the session to undo")?;
    let settings = load_local(&env, &CliOverrides::default())?;
    let root = settings.workspace_root;
    // A live session (a turn may be changing files right now) is refused
    // before anything is restored: exit 1, as any failed undo; more turns
    // than were checkpointed is a usage error (see `CliError`'s kinds).
    let report = undo(&env.keel_home, &root, &log, args.turns, settings.undo.into()).await?;
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{}", report.summary());
    let _ = writeln!(
        err,
        "(in {}, checkpoint {}; the state before this undo is saved as {})",
        root.display(),
        report.commit.get(..12).unwrap_or(&report.commit),
        report.saved_as.get(..12).unwrap_or(&report.saved_as),
    );
    Ok(ExitStatus::Done)
}
