//! `keel undo [--turns N] [--session ID]`: puts the workspace back as it
//! was before the last N turns that changed files. Refused (exit 1) while
//! another keel process holds the session.

use std::io::Write;

use anyhow::Context;

use super::UndoArgs;
use crate::config::{CliOverrides, Environment, load_local};
use crate::exec::ExitStatus;
use crate::runtime::{UndoError, undo};
use crate::session::{SessionError, find_by_prefix, newest_in_folder, sessions_dir};

pub(super) async fn run(args: &UndoArgs) -> anyhow::Result<ExitStatus> {
    let env = Environment::from_process()?;
    let dir = sessions_dir(&env.keel_home);
    let log = match &args.session {
        Some(prefix) => find_by_prefix(&dir, prefix),
        None => newest_in_folder(&dir, &env.cwd),
    }
    .context("cannot pick the session to undo")?;
    let settings = load_local(&env, &CliOverrides::default())?;
    let root = settings.workspace_root;
    let report = match undo(&env.keel_home, &root, &log, args.turns, settings.undo.into()).await {
        Ok(report) => report,
        // A live session (a turn may be changing files right now): refused
        // before anything is restored.
        Err(error @ UndoError::Log(SessionError::Locked { .. })) => {
            let _ = writeln!(std::io::stderr(), "error: {error}");
            return Ok(ExitStatus::Failed);
        }
        Err(error) => return Err(error.into()),
    };
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
