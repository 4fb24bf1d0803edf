//! How a finished tool call looks to a person: whether it failed (a
//! non-zero exit, a signal or a timeout fail even though the shell tool
//! returns them as ordinary results for the model), and a shell call's
//! output without the framing the model reads (`exit code: N`,
//! `--- stdout ---`, `--- stderr ---`, `(no output)`).
//!
//! Invariants: pure (L0); parsing never fails (text that is not framed is
//! shown as it is); nothing here sanitizes (the printers do, once).

use crate::protocol::ToolMeta;

/// The most telling argument of a call, as front ends name it: the
/// command, path or pattern; else the raw arguments.
pub fn call_summary(call: &crate::protocol::ToolCall) -> String {
    let args: serde_json::Value = serde_json::from_str(&call.arguments).unwrap_or_default();
    let text = |key: &str| args.get(key).and_then(|v| v.as_str());
    // A subagent: its type and what it does (the prompt is long).
    if let (Some(agent), Some(description)) = (text("agent"), text("description")) {
        return format!("{agent} · {description}");
    }
    ["command", "path", "pattern"]
        .iter()
        .find_map(|key| args.get(key).and_then(|v| v.as_str()).map(str::to_owned))
        .unwrap_or_else(|| call.arguments.clone())
}

/// The facts a front end shows for one finished call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallOutcome {
    pub failed: bool,
    /// `exit 1`, `killed by signal 9`, `timed out after 5000 ms`; `None`
    /// for calls that are not commands, or a command that exited 0.
    pub status: Option<String>,
}

/// Judges a finished call from its result flag and meta (`exit_code`,
/// `signal`, `timed_out`, `timeout_ms` as the shell tool writes them).
pub fn outcome(is_error: bool, meta: &ToolMeta) -> CallOutcome {
    let exit_code = meta.exit_code();
    let signal = meta.signal();
    let timed_out = meta.timed_out();
    let status = if timed_out {
        Some(match meta.timeout_ms() {
            Some(ms) => format!("timed out after {ms} ms"),
            None => "timed out".to_owned(),
        })
    } else if let Some(signal) = signal.filter(|_| exit_code.is_none()) {
        Some(format!("killed by signal {signal}"))
    } else {
        exit_code.filter(|code| *code != 0).map(|code| format!("exit {code}"))
    };
    CallOutcome { failed: is_error || status.is_some(), status }
}

/// A shell result's streams, as the user would have seen them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShellText {
    pub stdout: String,
    pub stderr: String,
    /// "[output truncated: …]" and similar notes keel added.
    pub notes: Vec<String>,
}

impl ShellText {
    /// stdout then stderr, for a cell that shows everything in order.
    pub fn combined(&self) -> String {
        let mut text = String::new();
        for part in self.notes.iter().map(String::as_str).chain([&*self.stdout, &*self.stderr]) {
            if part.is_empty() {
                continue;
            }
            text.push_str(part);
            if !part.ends_with('\n') {
                text.push('\n');
            }
        }
        text
    }

    /// The last `n` lines worth showing after a failure: stderr's, or
    /// stdout's when stderr is empty.
    pub fn tail(&self, n: usize) -> Vec<&str> {
        let source = if self.stderr.trim().is_empty() { &self.stdout } else { &self.stderr };
        let lines: Vec<&str> = source.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..].to_vec()
    }
}

/// Splits the shell tool's framed output into its streams. Text without
/// the framing (an error message, another tool's output) is stdout.
pub fn parse_shell(text: &str) -> ShellText {
    let mut shown = ShellText::default();
    let mut target: Option<bool> = None; // Some(false): stdout, Some(true): stderr
    let mut framed = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if !framed && target.is_none() && bare.starts_with("exit code: ") {
            framed = true;
            continue;
        }
        match bare {
            "--- stdout ---" if framed && target.is_none() => target = Some(false),
            "--- stderr ---" if framed && target != Some(true) => target = Some(true),
            "(no output)" if framed && target.is_none() => {}
            _ if framed && target.is_none() && bare.starts_with('[') => {
                shown.notes.push(bare.to_owned());
            }
            _ => match target {
                Some(true) => shown.stderr.push_str(line),
                Some(false) | None => shown.stdout.push_str(line),
            },
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_non_zero_exit_fails_though_the_tool_succeeded() {
        let failed = outcome(false, &ToolMeta::details(json!({"exit_code": 1, "signal": null})));
        assert_eq!(failed, CallOutcome { failed: true, status: Some("exit 1".into()) });
        let ok = outcome(false, &ToolMeta::details(json!({"exit_code": 0})));
        assert_eq!(ok, CallOutcome { failed: false, status: None });
    }

    #[test]
    fn kills_and_timeouts_fail() {
        let killed = outcome(false, &ToolMeta::details(json!({"exit_code": null, "signal": 9})));
        assert_eq!(killed.status.as_deref(), Some("killed by signal 9"));
        assert!(killed.failed);
        let timed =
            outcome(true, &ToolMeta::details(json!({"timed_out": true, "timeout_ms": 300})));
        assert_eq!(timed.status.as_deref(), Some("timed out after 300 ms"));
    }

    #[test]
    fn tools_without_meta_follow_their_error_flag() {
        assert!(outcome(true, &ToolMeta::details(json!({}))).failed);
        assert!(!outcome(false, &ToolMeta::new()).failed);
    }

    #[test]
    fn framing_is_removed() {
        let text = "exit code: 2\n--- stdout ---\nout\n--- stderr ---\noops\n";
        let shown = parse_shell(text);
        assert_eq!(shown.stdout, "out\n");
        assert_eq!(shown.stderr, "oops\n");
        assert_eq!(shown.combined(), "out\noops\n");
        assert_eq!(shown.tail(3), ["oops"]);
    }

    #[test]
    fn no_output_is_empty() {
        let shown = parse_shell("exit code: 0\n(no output)\n");
        assert_eq!(shown, ShellText::default());
    }

    #[test]
    fn truncation_notes_are_kept() {
        let text = "exit code: 0\n[output truncated: 9 bytes cut]\n--- stdout ---\na\n";
        let shown = parse_shell(text);
        assert_eq!(shown.notes, ["[output truncated: 9 bytes cut]"]);
        assert_eq!(shown.combined(), "[output truncated: 9 bytes cut]\na\n");
    }

    #[test]
    fn a_stdout_that_prints_the_labels_is_not_confused_before_stderr() {
        let text = "exit code: 0\n--- stdout ---\n--- stdout ---\nx\n";
        assert_eq!(parse_shell(text).stdout, "--- stdout ---\nx\n");
    }

    #[test]
    fn unframed_text_is_stdout() {
        let shown = parse_shell("not run: needs approval");
        assert_eq!(shown.stdout, "not run: needs approval");
        assert_eq!(shown.tail(2), ["not run: needs approval"]);
    }

    #[test]
    fn the_tail_falls_back_to_stdout() {
        let shown = parse_shell("exit code: 1\n--- stdout ---\n1\n2\n3\n");
        assert_eq!(shown.tail(2), ["2", "3"]);
    }
}
