//! `keel stats [--since DATE] [--json]`: usage across sessions — sessions,
//! turns, tokens, cost, cache hit rate, tool calls and failures — in all,
//! per model and per project. The figures of each log come from the
//! stats index (`session::stats_index`): a log is read once, again only
//! when it changed; the sums are `context::stats::Report`.

use std::io::Write;

use super::{CliError, ExitStatus, StatsArgs};
use crate::config::Environment;
use crate::context::stats::{Report, Totals, is_day};
use crate::display::for_terminal;
use crate::session::session_stats;

pub(super) fn run(args: &StatsArgs) -> Result<ExitStatus, CliError> {
    if let Some(day) = args.since.as_deref().filter(|day| !is_day(day)) {
        return Err(CliError::usage(format!("--since takes a day as YYYY-MM-DD, not `{day}`")));
    }
    let env = Environment::from_process()?;
    let indexed = session_stats(&env.keel_home);
    let mut stderr = std::io::stderr().lock();
    for warning in &indexed.warnings {
        let _ = writeln!(stderr, "warning: {}", for_terminal(warning));
    }
    let report = Report::of(&indexed.sessions, args.since.as_deref());
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_value(&report)?)?;
        return Ok(ExitStatus::Done);
    }
    let since = args.since.as_deref().map_or(String::new(), |day| format!(" since {day}"));
    writeln!(out, "all sessions{since}: {}", totals_line(&report.total))?;
    writeln!(out, "by model:")?;
    for (model, totals) in &report.by_model {
        writeln!(out, "  {}: {}", for_terminal(model), totals_line(totals))?;
    }
    writeln!(out, "by project:")?;
    for (project, totals) in &report.by_project {
        writeln!(out, "  {}: {}", for_terminal(project), totals_line(totals))?;
    }
    Ok(ExitStatus::Done)
}

fn totals_line(totals: &Totals) -> String {
    let spend = &totals.spend;
    let cache = totals
        .cache_hit_rate
        .map_or(String::new(), |rate| format!(" ({:.0}% cached)", rate * 100.0));
    let unpriced = match spend.unpriced_requests {
        0 => String::new(),
        count => format!(" + {count} unpriced request(s)"),
    };
    format!(
        "{} session(s) + {} subagent(s), {} turn(s) ({} failed), {} request(s), \
         {} tokens in{cache}, {} out, ${:.4}{unpriced}, {} tool call(s) ({} failed)",
        totals.sessions,
        totals.subagent_sessions,
        totals.turns,
        totals.failed_turns,
        spend.requests,
        spend.usage.input_tokens,
        spend.usage.output_tokens,
        spend.cost_usd,
        totals.tool_calls,
        totals.tool_failures,
    )
}
