//! `keel attach ID`: this terminal on the session another keel runs
//! (`crate::attach`); when none runs it, the session is resumed here as
//! `keel resume ID` does (the session's lock still decides: a keel that
//! runs it without accepting attachers, `keel exec`, is said).

use std::io::Write;

use super::resume_cmd::{ResumeTarget, find_log};
use super::{AttachArgs, CliError, ErrorKind, ExitStatus, ModelArgs, ResumeArgs};
use crate::attach::Outcome;
use crate::config::Environment;

pub(super) async fn run(model: &ModelArgs, args: AttachArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let log = find_log(&env, &ResumeTarget::Id(args.id.clone()))?;
    let id = log.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or(args.id);
    let outcome = crate::attach::run(&env.keel_home, &id)
        .await
        .map_err(|error| CliError::new(ErrorKind::Runtime, error))?;
    let mut err = std::io::stderr().lock();
    match outcome {
        Outcome::Detached => {
            let _ = writeln!(err, "detached; the session goes on (keel attach {id})");
            Ok(ExitStatus::Done)
        }
        Outcome::Closed(reason) => {
            let _ = writeln!(err, "{reason}");
            Ok(ExitStatus::Done)
        }
        Outcome::NoOwner => {
            let _ = writeln!(err, "no keel runs session {id} now: resuming it here");
            drop(err);
            let resume = ResumeArgs { id: Some(id), last: false, mode: args.mode };
            super::tui_cmd::resume(model, &resume).await
        }
    }
}
