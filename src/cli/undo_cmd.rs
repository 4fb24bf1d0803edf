//! `keel undo [--turns N] [--session ID]`: puts the workspace back as it
//! was before the last N turns that changed files. Without `--session`,
//! the newest session of this folder that has a turn left to undo (a
//! later session that only answered a question changed nothing to undo).
//! Refused (exit 1) while another keel process holds the session.

use std::io::Write;

use super::{CliError, Context, ExitStatus, UndoArgs};
use crate::config::{CliOverrides, Environment, load_local};
use crate::runtime::{UndoError, undo};
use crate::session::{find_by_prefix, newest_first_in_folder, newest_in_folder, sessions_dir};

/// How far back a plain `keel undo` looks for a session with a turn left.
const OLDER_SESSIONS_LOOKED_AT: usize = 20;

pub(super) async fn run(args: &UndoArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let dir = sessions_dir(&env.keel_home);
    let newest = match &args.session {
        Some(prefix) => find_by_prefix(&dir, prefix),
        None => newest_in_folder(&dir, &env.cwd),
    }
    .context("cannot pick the session to undo")?;
    let settings = load_local(&env, &CliOverrides::default())?;
    let root = settings.workspace_root;
    let limits = settings.undo.into();
    // A live session (a turn may be changing files right now) is refused
    // before anything is restored: exit 1, as any failed undo; more turns
    // than were checkpointed is a usage error (see `CliError`'s kinds).
    let mut outcome = undo(&env.keel_home, &root, &newest, args.turns, limits).await;
    let mut undone = newest.clone();
    if args.session.is_none() && matches!(outcome, Err(UndoError::NotEnough { available: 0, .. })) {
        // Older sessions of this folder, while the newer ones have no turn
        // left to undo (nothing is restored before that is known).
        let older = newest_first_in_folder(&dir, &env.cwd).skip(1).take(OLDER_SESSIONS_LOOKED_AT);
        for log in older {
            match undo(&env.keel_home, &root, &log, args.turns, limits).await {
                Err(UndoError::NotEnough { available: 0, .. }) => {}
                other => {
                    (outcome, undone) = (other, log);
                    break;
                }
            }
        }
    }
    let report = outcome?;
    let mut err = std::io::stderr().lock();
    if undone != newest {
        let _ = writeln!(
            err,
            "(the newer sessions of this folder have no turn left to undo; undoing {})",
            undone.file_stem().map(|stem| stem.to_string_lossy()).unwrap_or_default()
        );
    }
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
