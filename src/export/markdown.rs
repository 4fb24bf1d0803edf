//! A transcript as Markdown: a header with the session's facts, one
//! section per turn, the prompt quoted, answers as the model wrote them,
//! each tool call as a line with its outcome and its output in a fenced
//! block (a `diff` block for diffs), collapsed in `<details>` when long.
//!
//! Invariants: text the model, a tool or the user wrote never becomes
//! HTML or breaks out of its block: `<`, `>` and `&` are escaped in prose,
//! and a fence is longer than any run of backticks inside it.

use std::fmt::Write;

use super::{CallEntry, Entry, Transcript, is_long, looks_like_diff, says_more, when};
use crate::display::for_terminal;

/// The Markdown of `transcript`.
pub(super) fn render(transcript: &Transcript) -> String {
    let mut out = String::with_capacity(4096);
    let _ = writeln!(out, "# keel session {}\n", transcript.session_id);
    let _ =
        writeln!(out, "- model: {} ({})", prose(&transcript.model), prose(&transcript.provider));
    let _ = writeln!(out, "- folder: `{}`", transcript.cwd.replace('`', "'"));
    let _ = writeln!(out, "- started: {}", when(&transcript.started_at));
    let _ = writeln!(out, "- keel: {}", prose(&transcript.keel_version));
    if let Some(parent) = &transcript.parent_session {
        let _ = writeln!(out, "- started by session {}", prose(parent));
    }
    let usage = &transcript.usage;
    let _ = write!(
        out,
        "- tokens: {} in ({} cached), {} out",
        usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
    );
    match transcript.cost_usd {
        Some(cost) => {
            let _ = writeln!(out, ", ${cost:.4}");
        }
        None => out.push('\n'),
    }
    for turn in &transcript.turns {
        out.push('\n');
        if turn.number == 0 {
            let _ = writeln!(out, "## Before the first prompt\n");
        } else {
            let _ = writeln!(out, "## Turn {}\n", turn.number);
            for line in turn.prompt.lines() {
                let _ = writeln!(out, "> {}", prose(line));
            }
            out.push('\n');
        }
        for entry in &turn.entries {
            entry_md(&mut out, entry);
        }
        if let Some(outcome) = &turn.outcome {
            let _ = write!(out, "*turn {outcome}");
            if let Some(usage) = &turn.usage {
                let _ = write!(out, " · {} in, {} out", usage.input_tokens, usage.output_tokens);
            }
            out.push_str("*\n");
        }
    }
    out
}

fn entry_md(out: &mut String, entry: &Entry) {
    match entry {
        Entry::Answer { text } => {
            let _ = writeln!(out, "{}\n", prose(text));
        }
        Entry::Reasoning { text } => {
            let _ = writeln!(out, "<details><summary>reasoning</summary>\n");
            fenced(out, "text", text);
            out.push_str("</details>\n\n");
        }
        Entry::Note { what, text } => {
            let _ = writeln!(out, "*{what}: {}*\n", prose(text));
        }
        Entry::ToolCall(call) => call_md(out, call),
    }
}

fn call_md(out: &mut String, call: &CallEntry) {
    let (mark, status) = match &call.result {
        Some(result) if result.is_error => {
            ("✗", result.status.clone().unwrap_or_else(|| "error".into()))
        }
        Some(result) => ("✓", result.status.clone().unwrap_or_default()),
        None => ("…", "no result recorded".to_owned()),
    };
    let summary = call.summary.lines().next().unwrap_or_default();
    let _ = write!(out, "**{mark} {}** {}", prose(&call.name), code_span(summary));
    if !status.is_empty() {
        let _ = write!(out, " — {}", prose(&status));
    }
    out.push('\n');
    let mut facts = Vec::new();
    if let Some(decision) = &call.decision {
        facts.push(format!("policy: {decision}"));
    }
    if let Some(approval) = &call.approval {
        let answer = if approval.approved { "approved" } else { "declined" };
        facts.push(format!("{answer} ({})", approval.scope));
    }
    if !call.files_changed.is_empty() {
        facts.push(format!("changed {}", call.files_changed.join(", ")));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "<br>*{}*", prose(&facts.join(" · ")));
    }
    out.push('\n');
    let arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
    if says_more(call) {
        let _ = writeln!(out, "<details><summary>arguments</summary>\n");
        fenced(out, "json", &arguments);
        out.push_str("</details>\n\n");
    }
    let Some(result) = &call.result else { return };
    if result.output.is_empty() {
        return;
    }
    let output = for_terminal(&result.output);
    let lang = if looks_like_diff(&output) { "diff" } else { "text" };
    if is_long(&output) {
        let lines = output.lines().count();
        let _ = writeln!(out, "<details><summary>output ({lines} lines)</summary>\n");
        fenced(out, lang, &output);
        out.push_str("</details>\n\n");
    } else {
        fenced(out, lang, &output);
        out.push('\n');
    }
}

/// `text` in a fenced block whose fence no backtick run inside can close.
fn fenced(out: &mut String, lang: &str, text: &str) {
    let fence = "`".repeat(longest_backticks(text).max(2) + 1);
    let _ = writeln!(out, "{fence}{lang}\n{}\n{fence}", text.trim_end_matches('\n'));
}

/// One line as an inline code span.
fn code_span(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let ticks = "`".repeat(longest_backticks(text) + 1);
    format!("{ticks} {text} {ticks}")
}

fn longest_backticks(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

/// Untrusted text made inert in Markdown prose: no raw HTML.
fn prose(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
