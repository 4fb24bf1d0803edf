//! The ledger as text: part labels and the summary lines `keel cost` and
//! the TUI's `/cost` print (plain text; the caller makes it terminal-safe
//! and styles it).

use super::split::Priced;
use super::{Ledger, Part, RequestKind, Source};

/// A part's display name.
pub(super) fn label(source: &Source) -> String {
    match source {
        Source::Prefix => "prefix (instructions, tools)".to_owned(),
        Source::Context => "context notes".to_owned(),
        Source::History => "history".to_owned(),
        Source::Tool { name } => format!("tool {name}"),
        Source::Mcp { server } => format!("mcp {server}"),
        Source::Output => "output".to_owned(),
        Source::Compaction => "compaction".to_owned(),
        Source::Subagent { session_id, agent } => {
            let short: String = session_id.chars().take(8).collect();
            format!("subagent {agent} ({short})")
        }
    }
}

impl Ledger {
    /// The session's spend in a few lines: the total, then each part,
    /// most expensive first, then what is estimated.
    pub fn summary_lines(&self) -> Vec<String> {
        let total = self.total();
        let mut lines = vec![format!(
            "{} · {} in ({} cached, {} written) · {} out · {} request(s), {} subagent(s)",
            dollars(self.cost_usd),
            tokens(self.usage.input_tokens),
            tokens(self.usage.cached_input_tokens),
            tokens(self.usage.cache_write_tokens),
            tokens(self.usage.output_tokens),
            self.requests.len(),
            self.children.len(),
        )];
        let width = self.parts.iter().map(|part| part.label.chars().count()).max().unwrap_or(0);
        for part in &self.parts {
            lines.push(part_line(part, total.cost_usd, total.tokens(), width));
        }
        if self.estimated_tokens > 0 {
            lines.push(format!(
                "estimated (responses without usage, not in the parts): {} tokens, ${:.4}",
                tokens(self.estimated_tokens),
                self.estimated_cost_usd
            ));
        }
        if self.requests.iter().any(|request| request.priced == Priced::ByTokens) {
            lines.push(
                "prices unknown to keel for some model: its logged cost is split by tokens"
                    .to_owned(),
            );
        }
        lines.push(
            "parts are estimated shares of each request's reported usage (`keel cost --json`)"
                .to_owned(),
        );
        lines
    }

    /// One line per request: seq, turn and step, usage and cost.
    pub fn request_lines(&self) -> Vec<String> {
        let rows = self.requests.iter().map(|request| {
            let kind = match request.kind {
                RequestKind::Response => format!("turn {} step {}", request.turn, request.step),
                RequestKind::Compaction => format!("turn {} compaction", request.turn),
            };
            let top = request
                .parts
                .iter()
                .filter(|part| part.source != Source::Output)
                .max_by(|a, b| a.share.cost_usd.total_cmp(&b.share.cost_usd))
                .map_or(String::new(), |part| format!(" · most: {}", part.label));
            let estimated = match request.estimated_tokens {
                Some(estimate) => format!(" · estimated {} tokens", tokens(estimate)),
                None => String::new(),
            };
            format!(
                "#{:<5} {kind:<22} {} in ({} read, {} written) {} out  {}{top}{estimated}",
                request.seq,
                tokens(request.usage.input_tokens),
                tokens(request.usage.cached_input_tokens),
                tokens(request.usage.cache_write_tokens),
                tokens(request.usage.output_tokens),
                dollars(request.cost_usd),
            )
        });
        rows.collect()
    }
}

fn part_line(part: &Part, total_cost: f64, total_tokens: u64, width: usize) -> String {
    let share = if total_cost > 0.0 {
        part.share.cost_usd * 100.0 / total_cost
    } else if total_tokens > 0 {
        part.share.tokens() as f64 * 100.0 / total_tokens as f64
    } else {
        0.0
    };
    format!(
        "  {:<width$}  ${:>9.4}  {share:>5.1}%  {} in ({} cached) {} out",
        part.label,
        part.share.cost_usd,
        tokens(part.share.input_tokens),
        tokens(part.share.cached_input_tokens),
        tokens(part.share.output_tokens),
    )
}

fn dollars(cost: Option<f64>) -> String {
    cost.map_or_else(|| "cost unknown".to_owned(), |cost| format!("${cost:.4}"))
}

/// `1234` → `1.2k`, `2_500_000` → `2.5M`.
fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..1_000_000 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}
