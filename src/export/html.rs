//! A transcript as one self-contained HTML page: inline CSS (light and
//! dark), no script, no external resource; the session's facts on top,
//! one section per turn with the prompt, the answers, each tool call as a
//! card (name, summary, outcome, policy and approval, files changed) and
//! its output in `<pre>`, folded in `<details>` when long; diffs coloured
//! by line.
//!
//! Invariants: every piece of text is escaped ([`escape`]: `& < > " '`)
//! before it is written, the session's own words included, so nothing in
//! a log can add markup, a link or a script; the page declares a
//! Content-Security-Policy that allows no script and no fetch besides
//! its inline style.

use std::fmt::Write;

use super::{CallEntry, Entry, Transcript, is_long, looks_like_diff, says_more, when};
use crate::display::for_terminal;

const STYLE: &str = r#"
:root{--bg:#fbfbfa;--fg:#1f2328;--mute:#656d76;--card:#fff;--line:#d8dee4;--ok:#1a7f37;--bad:#cf222e;--add:#e6ffec;--del:#ffebe9;--accent:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mute:#8d96a0;--card:#161b22;--line:#30363d;--ok:#3fb950;--bad:#f85149;--add:#12261e;--del:#25171c;--accent:#4493f8}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:920px;margin:0 auto;padding:24px 20px 64px}
h1{font-size:1.4em;margin:0 0 4px}
.facts{color:var(--mute);font-size:.9em;margin:0 0 24px;padding:0;list-style:none;display:flex;flex-wrap:wrap;gap:4px 18px}
.facts b{color:var(--fg);font-weight:600}
section.turn{border-top:1px solid var(--line);padding-top:14px;margin-top:22px}
h2{font-size:1.05em;color:var(--mute);margin:0 0 8px;font-weight:600}
.prompt{background:var(--card);border-left:4px solid var(--accent);padding:10px 14px;border-radius:6px;white-space:pre-wrap;margin:0 0 12px}
.answer{white-space:pre-wrap;margin:10px 0}
.note{color:var(--mute);font-style:italic;margin:8px 0}
.call{background:var(--card);border:1px solid var(--line);border-radius:8px;margin:10px 0;padding:8px 12px}
.call .head{display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.call .mark{font-weight:700}
.call.ok .mark{color:var(--ok)} .call.bad .mark{color:var(--bad)}
.call .name{font-weight:600}
.call code{font:13px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
.call .status{color:var(--bad);font-size:.9em}
.call .meta{color:var(--mute);font-size:.85em;margin-top:2px}
pre{font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,monospace;background:var(--bg);border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:6px 0 2px;overflow-x:auto;white-space:pre-wrap;word-break:break-word}
pre .add{background:var(--add);display:block} pre .del{background:var(--del);display:block} pre .hunk{color:var(--accent);display:block}
details>summary{cursor:pointer;color:var(--mute);font-size:.88em;margin-top:4px}
.outcome{color:var(--mute);font-size:.85em;margin-top:10px}
"#;

/// The HTML page of `transcript`.
pub(super) fn render(transcript: &Transcript) -> String {
    let mut out = String::with_capacity(8192);
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    let _ = writeln!(out, "<title>keel session {}</title>", escape(&transcript.session_id));
    let _ = writeln!(out, "<style>{STYLE}</style>\n</head>\n<body>\n<main>");
    header(&mut out, transcript);
    for turn in &transcript.turns {
        out.push_str("<section class=\"turn\">\n");
        if turn.number == 0 {
            out.push_str("<h2>Before the first prompt</h2>\n");
        } else {
            let _ = writeln!(
                out,
                "<h2>Turn {} <small>{}</small></h2>",
                turn.number,
                escape(&when(&turn.started_at))
            );
            let _ = writeln!(out, "<div class=\"prompt\">{}</div>", escape(&turn.prompt));
        }
        for entry in &turn.entries {
            entry_html(&mut out, entry);
        }
        if let Some(outcome) = &turn.outcome {
            let _ = write!(out, "<div class=\"outcome\">turn {}", escape(outcome));
            if let Some(usage) = &turn.usage {
                let _ =
                    write!(out, " · {} tokens in, {} out", usage.input_tokens, usage.output_tokens);
            }
            out.push_str("</div>\n");
        }
        out.push_str("</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

fn header(out: &mut String, transcript: &Transcript) {
    let _ = writeln!(out, "<h1>keel session <code>{}</code></h1>", escape(&transcript.session_id));
    out.push_str("<ul class=\"facts\">");
    let mut fact = |name: &str, value: &str| {
        let _ = write!(out, "<li>{name} <b>{}</b></li>", escape(value));
    };
    fact("model", &format!("{} ({})", transcript.model, transcript.provider));
    fact("folder", &transcript.cwd);
    fact("started", &when(&transcript.started_at));
    fact("keel", &transcript.keel_version);
    if let Some(parent) = &transcript.parent_session {
        fact("started by", parent);
    }
    let usage = &transcript.usage;
    fact(
        "tokens",
        &format!(
            "{} in ({} cached), {} out",
            usage.input_tokens, usage.cached_input_tokens, usage.output_tokens
        ),
    );
    if let Some(cost) = transcript.cost_usd {
        fact("cost", &format!("${cost:.4}"));
    }
    out.push_str("</ul>\n");
}

fn entry_html(out: &mut String, entry: &Entry) {
    match entry {
        Entry::Answer { text } => {
            let _ = writeln!(out, "<div class=\"answer\">{}</div>", escape(text));
        }
        Entry::Reasoning { text } => {
            let _ = writeln!(
                out,
                "<details><summary>reasoning</summary><pre>{}</pre></details>",
                escape(text)
            );
        }
        Entry::Note { what, text } => {
            let _ = writeln!(out, "<div class=\"note\">{}: {}</div>", escape(what), escape(text));
        }
        Entry::ToolCall(call) => call_html(out, call),
    }
}

fn call_html(out: &mut String, call: &CallEntry) {
    let (class, mark) = match &call.result {
        Some(result) if result.is_error => ("bad", "✗"),
        Some(_) => ("ok", "✓"),
        None => ("", "…"),
    };
    let _ = write!(
        out,
        "<div class=\"call {class}\"><div class=\"head\"><span class=\"mark\">{mark}</span>"
    );
    let _ = write!(
        out,
        "<span class=\"name\">{}</span><code>{}</code>",
        escape(&call.name),
        escape(&call.summary)
    );
    match &call.result {
        Some(result) => {
            if let Some(status) = &result.status {
                let _ = write!(out, "<span class=\"status\">{}</span>", escape(status));
            }
        }
        None => out.push_str("<span class=\"status\">no result recorded</span>"),
    }
    out.push_str("</div>\n");
    let mut facts = Vec::new();
    if let Some(decision) = &call.decision {
        facts.push(format!("policy: {decision}"));
    }
    if let Some(reason) = &call.reason {
        facts.push(reason.clone());
    }
    if let Some(approval) = &call.approval {
        let answer = if approval.approved { "approved" } else { "declined" };
        facts.push(format!("{answer} ({})", approval.scope));
    }
    if !call.files_changed.is_empty() {
        facts.push(format!("changed {}", call.files_changed.join(", ")));
    }
    if !facts.is_empty() {
        let _ = writeln!(out, "<div class=\"meta\">{}</div>", escape(&facts.join(" · ")));
    }
    let arguments = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
    if says_more(call) {
        let _ = writeln!(
            out,
            "<details><summary>arguments</summary><pre>{}</pre></details>",
            escape(&arguments)
        );
    }
    if let Some(result) = call.result.as_ref().filter(|result| !result.output.is_empty()) {
        let output = for_terminal(&result.output);
        let body = if looks_like_diff(&output) { diff(&output) } else { escape(&output) };
        if is_long(&result.output) {
            let lines = result.output.lines().count();
            let _ = writeln!(
                out,
                "<details><summary>output ({lines} lines)</summary><pre>{body}</pre></details>"
            );
        } else {
            let _ = writeln!(out, "<pre>{body}</pre>");
        }
    }
    out.push_str("</div>\n");
}

/// A diff's lines, escaped, added and removed ones marked.
fn diff(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for line in text.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            None
        } else if line.starts_with('+') {
            Some("add")
        } else if line.starts_with('-') {
            Some("del")
        } else if line.starts_with("@@") {
            Some("hunk")
        } else {
            None
        };
        match class {
            Some(class) => {
                let _ = write!(out, "<span class=\"{class}\">{}</span>", escape(line));
            }
            None => {
                out.push_str(&escape(line));
                out.push('\n');
            }
        }
    }
    out
}

/// `text` safe inside an element or an attribute.
pub(super) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
