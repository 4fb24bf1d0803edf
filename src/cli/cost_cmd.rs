//! `keel cost ID [--json]`: what a session's spend went on, by part and
//! by request, its subagents' included (`context::ledger` computes it;
//! the attribution rule is in `context/ledger/split.rs` and README).
//!
//! A child's log is looked up by its session id in the sessions folder
//! (never at a path the log names), at most [`MAX_DEPTH`] levels down;
//! a child whose log cannot be read keeps the figures its parent's
//! `subagent_finished` line carries, without a breakdown.

use std::io::Write;
use std::path::Path;

use super::{CliError, Context, CostArgs, ExitStatus};
use crate::config::Environment;
use crate::context::ledger::Ledger;
use crate::display::for_terminal;
use crate::session::{SessionLog, find_by_prefix, read_log, sessions_dir};

/// How deep `keel cost` follows subagents' logs.
pub const MAX_DEPTH: u32 = 8;

pub(super) fn run(args: &CostArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let dir = sessions_dir(&env.keel_home);
    let log = find_by_prefix(&dir, &args.id).context("cannot find the session")?;
    let ledger = ledger_of(&dir, &log, 0)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_value(&ledger)?)?;
        return Ok(ExitStatus::Done);
    }
    print(&mut out, &ledger, 0)?;
    Ok(ExitStatus::Done)
}

/// The ledger of the log at `path`, with its children's from their logs.
fn ledger_of(dir: &Path, path: &Path, depth: u32) -> Result<Ledger, CliError> {
    let contents = read_log(path)?;
    let mut ledger = Ledger::from_records(&contents.records);
    if depth >= MAX_DEPTH {
        return Ok(ledger);
    }
    for (session_id, _) in ledger.child_logs() {
        if !is_plain_id(&session_id) {
            continue;
        }
        let child_path = SessionLog::path_in(dir, &session_id);
        if let Ok(child) = ledger_of(dir, &child_path, depth + 1) {
            ledger.attach_child(&session_id, child);
        }
    }
    Ok(ledger)
}

/// A session id that names a file in the sessions folder and nothing else.
fn is_plain_id(id: &str) -> bool {
    !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
}

fn print(out: &mut impl Write, ledger: &Ledger, depth: usize) -> std::io::Result<()> {
    let indent = "  ".repeat(depth * 2);
    let line = |text: &str| format!("{indent}{}", for_terminal(text));
    if depth == 0 {
        writeln!(out, "{}", line(&format!("session {}", ledger.session_id)))?;
    }
    for text in ledger.summary_lines() {
        writeln!(out, "{}", line(&text))?;
    }
    writeln!(out, "{}", line("requests:"))?;
    for text in ledger.request_lines() {
        writeln!(out, "{}", line(&format!("  {text}")))?;
    }
    for price in &ledger.prices {
        let known = |price: Option<f64>| price.map_or("?".to_owned(), |price| format!("${price}"));
        writeln!(
            out,
            "{}",
            line(&format!(
                "prices {} per million: input {}, cache read {}, cache write {}, output {}",
                price.model,
                known(price.input),
                known(price.cached_input),
                known(price.cache_write),
                known(price.output)
            ))
        )?;
    }
    for child in &ledger.children {
        let Some(child_ledger) = &child.ledger else { continue };
        writeln!(out, "{}", line(&format!("subagent {} ({}):", child.agent, child.session_id)))?;
        print(out, child_ledger, depth + 1)?;
    }
    Ok(())
}
