//! `keel cost ID [--json]`: what a session's spend went on, by part and
//! by request, its subagents' included (`context::ledger` computes it;
//! the attribution rule is in `context/ledger/split.rs` and README).
//!
//! The logs are read by `session::ledger_of` (children by session id).

use std::io::Write;

use super::{CliError, Context, CostArgs, ExitStatus};
use crate::config::Environment;
use crate::context::ledger::Ledger;
use crate::display::for_terminal;
use crate::session::{find_by_prefix, ledger_of, sessions_dir};

pub(super) fn run(args: &CostArgs) -> Result<ExitStatus, CliError> {
    let env = Environment::from_process()?;
    let dir = sessions_dir(&env.keel_home);
    let log = find_by_prefix(&dir, &args.id).context("cannot find the session")?;
    let ledger = ledger_of(&dir, &log)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_value(&ledger)?)?;
        return Ok(ExitStatus::Done);
    }
    print(&mut out, &ledger, 0)?;
    Ok(ExitStatus::Done)
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
