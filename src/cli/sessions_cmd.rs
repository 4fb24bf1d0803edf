//! `keel sessions [--json] [--all]`: recorded sessions, newest first.
//! The table has a header and leaves out empty sessions (opened and left
//! without a prompt) unless `--all`; a subagent's session is listed right
//! under the session that started it (`└ TYPE`), oldest child first.
//! `--json` lists every session, each subagent's with `parent` and `agent`.

use std::io::Write;

use super::{CliError, ExitStatus, SessionsArgs};
use crate::config::Environment;
use crate::session::{SessionSummary, list_sessions, sessions_dir};

pub(super) fn run(args: &SessionsArgs) -> Result<ExitStatus, CliError> {
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
        return Ok(ExitStatus::Done);
    }
    let (shown, empty): (Vec<&SessionSummary>, Vec<&SessionSummary>) =
        sessions.iter().partition(|session| args.all || !is_empty(session));
    if shown.is_empty() {
        let _ = writeln!(stderr, "no sessions yet");
    } else {
        writeln!(out, "{}", header())?;
        for session in grouped(&shown) {
            writeln!(out, "{}", row(session))?;
        }
    }
    if !empty.is_empty() {
        let _ = writeln!(stderr, "({} empty session(s) hidden; --all shows them)", empty.len());
    }
    Ok(ExitStatus::Done)
}

/// `sessions` (newest first) with each subagent's session moved right
/// after its parent's, oldest child first; a child whose parent is not
/// listed stays where it is.
fn grouped<'a>(sessions: &[&'a SessionSummary]) -> Vec<&'a SessionSummary> {
    let listed = |id: &str| sessions.iter().any(|session| session.id == id);
    let mut out = Vec::with_capacity(sessions.len());
    for session in sessions {
        if session.parent.as_deref().is_some_and(listed) {
            continue;
        }
        push_with_children(session, sessions, &mut out);
    }
    out
}

fn push_with_children<'a>(
    session: &'a SessionSummary,
    sessions: &[&'a SessionSummary],
    out: &mut Vec<&'a SessionSummary>,
) {
    out.push(session);
    for child in sessions.iter().rev() {
        if child.parent.as_deref() == Some(session.id.as_str()) {
            push_with_children(child, sessions, out);
        }
    }
}

/// Opened and left without a prompt.
pub(super) fn is_empty(session: &SessionSummary) -> bool {
    session.first_prompt.is_none()
}

const ID_WIDTH: usize = 36;
const TIME_WIDTH: usize = 19;
const STATUS_WIDTH: usize = 11;
const LIVE_WIDTH: usize = 30;

fn header() -> String {
    format!(
        "{:<ID_WIDTH$}  {:<TIME_WIDTH$}  {:<TIME_WIDTH$}  {:<STATUS_WIDTH$}  {:<LIVE_WIDTH$}  {}  {}",
        "ID", "STARTED", "LAST ACTIVITY", "STATUS", "LIVE", "FOLDER", "FIRST PROMPT"
    )
}

/// One table row: id, started, last activity, status, the keel process
/// holding the session if one is, folder, first prompt.
fn row(session: &SessionSummary) -> String {
    let prompt = session.first_prompt.as_deref().unwrap_or("").replace('\n', " ");
    let prompt: String = prompt.chars().take(60).collect();
    let prompt = crate::display::for_terminal(&prompt).into_owned();
    let live = session.live.as_ref().map_or_else(String::new, ToString::to_string);
    let prompt = match &session.agent {
        Some(agent) => format!("└ {agent} · {prompt}"),
        None => prompt,
    };
    format!(
        "{:<ID_WIDTH$}  {:<TIME_WIDTH$}  {:<TIME_WIDTH$}  {:<STATUS_WIDTH$}  {:<LIVE_WIDTH$}  {}  {}",
        session.id,
        session.started.get(..19).unwrap_or(&session.started).replace('T', " "),
        session.last_activity.get(..19).unwrap_or(&session.last_activity).replace('T', " "),
        session.status,
        live,
        session.folder,
        prompt
    )
}
