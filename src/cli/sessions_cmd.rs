//! `keel sessions [--json]`: every recorded session, newest first.

use std::io::Write;

use super::SessionsArgs;
use crate::config::Environment;
use crate::exec::ExitStatus;
use crate::session::{SessionSummary, list_sessions, sessions_dir};

pub(super) fn run(args: &SessionsArgs) -> anyhow::Result<ExitStatus> {
    let env = Environment::from_process()?;
    let (sessions, warnings) = list_sessions(&sessions_dir(&env.keel_home));
    let mut stderr = std::io::stderr().lock();
    for warning in &warnings {
        let _ = writeln!(stderr, "warning: {warning}");
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = serde_json::to_value(&sessions)?;
        writeln!(out, "{value}")?;
    } else {
        for session in &sessions {
            writeln!(out, "{}", row(session))?;
        }
        if sessions.is_empty() {
            let _ = writeln!(stderr, "no sessions yet");
        }
    }
    Ok(ExitStatus::Done)
}

/// One table row: id, started, last activity, status, folder, first prompt.
fn row(session: &SessionSummary) -> String {
    let prompt = session.first_prompt.as_deref().unwrap_or("").replace('\n', " ");
    let prompt: String = prompt.chars().take(60).collect();
    format!(
        "{}  {}  {}  {:<18}  {}  {}",
        session.id,
        session.started.get(..19).unwrap_or(&session.started),
        session.last_activity.get(..19).unwrap_or(&session.last_activity),
        session.status,
        session.folder,
        prompt
    )
}
