//! How a finished tool call looks to a person: whether it failed (a
//! non-zero exit, a signal or a timeout fail even though the shell tool
//! returns them as ordinary results for the model), and a shell call's
//! result in both directions: framed for the model ([`frame_shell`]) and
//! back into its streams and status for people ([`parse_shell`],
//! [`shell_exit_code`]).
//!
//! The framing (the shell tool's description states it): `exit code: N`
//! first unless the command exited 0, then keel's truncation note if
//! anything was cut (naming the kept copy of the whole output and how to
//! read it, when there is one), stdout, then `--- stderr ---` and stderr if there is
//! any; `(no output)` when both are empty. A stdout whose first line could
//! be read as framing is labelled `--- stdout ---`, so a result always
//! parses one way. The result does not end with a newline (the streams'
//! last one is dropped, as Claude Code does). Results of older versions
//! (always the exit line, stdout always labelled, a final newline) parse
//! the same.
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

const EXIT_LINE: &str = "exit code: ";
const STDOUT_LABEL: &str = "--- stdout ---";
const STDERR_LABEL: &str = "--- stderr ---";
const NO_OUTPUT: &str = "(no output)";
const TRUNCATION_NOTE: &str = "[output truncated";

/// How a command ended and what it printed, as the shell tool hands it
/// to [`frame_shell`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShellRun<'a> {
    /// `None` when a signal killed it (or nothing reported a code).
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Bytes left out of the streams; 0 when nothing was cut.
    pub omitted_bytes: u64,
    pub stdout: &'a str,
    pub stderr: &'a str,
    /// Where the whole output is kept for the model to read, when it was cut.
    pub kept: Option<KeptCopy<'a>>,
}

/// A cut output's copy the model can read with `read_file`
/// (`session::KeptOutputs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeptCopy<'a> {
    pub path: &'a str,
    pub bytes: u64,
    pub lines: u64,
    /// Everything the command printed; `false`: the copy is cut too (its
    /// start and end kept).
    pub whole: bool,
}

/// The truncation note: how much was cut and how to see it.
fn truncation_note(omitted_bytes: u64, kept: Option<&KeptCopy<'_>>) -> String {
    let cut = format!("{TRUNCATION_NOTE}: {omitted_bytes} bytes cut from the middle");
    match kept {
        None => format!("{cut}; redirect to a file and search it, or pipe through head/tail/grep]"),
        Some(copy) if copy.whole => format!(
            "{cut}; the whole output ({} bytes, {} lines) is kept in {}: read_file it with \
             offset and limit (in lines) to see the rest, no need to run it again]",
            copy.bytes, copy.lines, copy.path
        ),
        Some(copy) => format!(
            "{cut}; its start and end ({} bytes, {} lines) are kept in {}: read_file it with \
             offset and limit (in lines); for the rest, redirect to a file and search it]",
            copy.bytes, copy.lines, copy.path
        ),
    }
}

/// Whether a line at the start of a result would be read as framing (by
/// [`parse_shell`], or by a model that does not count spaces).
fn reads_as_framing(line: &str) -> bool {
    line.starts_with(EXIT_LINE.trim_end())
        || line.starts_with(TRUNCATION_NOTE)
        || [STDOUT_LABEL, STDERR_LABEL, NO_OUTPUT].contains(&line)
}

/// A shell result as the model reads it (the module doc has the format).
pub fn frame_shell(run: &ShellRun<'_>) -> String {
    let mut text = match (run.exit_code, run.signal) {
        (Some(0), _) => String::new(),
        (Some(code), _) => format!("{EXIT_LINE}{code}\n"),
        (None, Some(signal)) => format!("{EXIT_LINE}none (killed by signal {signal})\n"),
        (None, None) => format!("{EXIT_LINE}none\n"),
    };
    if run.omitted_bytes > 0 {
        text.push_str(&truncation_note(run.omitted_bytes, run.kept.as_ref()));
        text.push('\n');
    }
    let first_line = run.stdout.lines().next().unwrap_or_default();
    if reads_as_framing(first_line) {
        text.push_str(STDOUT_LABEL);
        text.push('\n');
    }
    for (label, body) in [(None, run.stdout), (Some(STDERR_LABEL), run.stderr)] {
        if body.is_empty() {
            continue;
        }
        if let Some(label) = label {
            text.push_str(label);
            text.push('\n');
        }
        text.push_str(body);
        if !body.ends_with('\n') {
            text.push('\n');
        }
    }
    if run.stdout.is_empty() && run.stderr.is_empty() {
        text.push_str(NO_OUTPUT);
    }
    // The last newline says nothing the end of the result does not, and
    // every step's result is billed again on every later request.
    if text.ends_with('\n') {
        text.pop();
    }
    text
}

/// The exit code a shell result states: its `exit code: N` line, 0 when
/// it has none (the command exited 0), `None` when the line says no code
/// (a signal). Only meaningful for a result the shell tool returned, not
/// for an error in its place.
pub fn shell_exit_code(text: &str) -> Option<i64> {
    let first = text.lines().next().unwrap_or_default();
    match first.strip_prefix(EXIT_LINE) {
        Some(code) => code.trim().parse().ok(),
        None => Some(0),
    }
}

/// Splits the shell tool's framed output into its streams. Text without
/// the framing (an error message, another tool's output) is stdout.
pub fn parse_shell(text: &str) -> ShellText {
    let mut shown = ShellText::default();
    // What the next line is: framing still possible (None), or a stream.
    let mut target: Option<bool> = None; // Some(false): stdout, Some(true): stderr
    let mut first = true;
    // The line after a `--- stdout ---` label is stdout whatever it reads
    // like: it is why the label is there.
    let mut labelled = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if std::mem::take(&mut first) && bare.starts_with(EXIT_LINE) {
            continue;
        }
        if std::mem::take(&mut labelled) {
            shown.stdout.push_str(line);
            continue;
        }
        match bare {
            STDOUT_LABEL if target.is_none() => {
                target = Some(false);
                labelled = true;
            }
            STDERR_LABEL if target != Some(true) => target = Some(true),
            NO_OUTPUT if target.is_none() => {}
            _ if target.is_none() && bare.starts_with(TRUNCATION_NOTE) => {
                shown.notes.push(bare.to_owned());
            }
            _ => {
                let stream = target.get_or_insert(false);
                if *stream {
                    shown.stderr.push_str(line);
                } else {
                    shown.stdout.push_str(line);
                }
            }
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

    fn run<'a>(exit_code: Option<i32>, stdout: &'a str, stderr: &'a str) -> ShellRun<'a> {
        ShellRun { exit_code, signal: None, omitted_bytes: 0, stdout, stderr, kept: None }
    }

    #[test]
    fn a_clean_success_is_its_stdout_alone() {
        let text = frame_shell(&run(Some(0), "step-1\n", ""));
        assert_eq!(text, "step-1");
        assert_eq!(shell_exit_code(&text), Some(0));
        assert_eq!(parse_shell(&text).stdout, "step-1");
        // Only the last newline goes: blank lines inside stay.
        assert_eq!(frame_shell(&run(Some(0), "a\n\nb\n\n", "")), "a\n\nb\n");
    }

    #[test]
    fn a_failure_leads_with_its_exit_code_and_labels_stderr_only() {
        let text = frame_shell(&run(Some(2), "out", "oops\n"));
        assert_eq!(text, "exit code: 2\nout\n--- stderr ---\noops");
        assert_eq!(shell_exit_code(&text), Some(2));
        let shown = parse_shell(&text);
        assert_eq!((shown.stdout.as_str(), shown.stderr.as_str()), ("out\n", "oops"));
        assert_eq!(shown.combined(), "out\noops\n");
        assert_eq!(shown.tail(3), ["oops"]);
        let warned = frame_shell(&run(Some(0), "", "warning: x\n"));
        assert_eq!(warned, "--- stderr ---\nwarning: x");
        assert_eq!(parse_shell(&warned).stderr, "warning: x");
    }

    #[test]
    fn a_signal_and_silence_are_stated() {
        let killed = ShellRun { signal: Some(9), ..run(None, "", "") };
        let text = frame_shell(&killed);
        assert_eq!(text, "exit code: none (killed by signal 9)\n(no output)");
        assert_eq!(shell_exit_code(&text), None);
        assert_eq!(parse_shell(&text), ShellText::default());
        assert_eq!(frame_shell(&run(Some(0), "", "")), "(no output)");
        assert_eq!(parse_shell("(no output)"), ShellText::default());
    }

    #[test]
    fn truncation_is_noted_before_the_streams() {
        let text = frame_shell(&ShellRun { omitted_bytes: 9, ..run(Some(0), "a\n", "") });
        assert!(text.starts_with("[output truncated: 9 bytes cut from the middle"), "{text}");
        assert!(text.ends_with("]\na"), "{text}");
        let shown = parse_shell(&text);
        assert_eq!(shown.stdout, "a");
        assert_eq!(shown.notes.len(), 1);
    }

    #[test]
    fn a_kept_copy_is_named_with_how_to_read_it() {
        let kept = KeptCopy { path: "/k/outputs/s/0001-c.txt", bytes: 900, lines: 40, whole: true };
        let cut = ShellRun { omitted_bytes: 9, kept: Some(kept), ..run(Some(0), "a\n", "") };
        let text = frame_shell(&cut);
        let note = text.lines().next().unwrap_or_default();
        assert!(
            note.contains(
                "the whole output (900 bytes, 40 lines) is kept in /k/outputs/s/0001-c.txt"
            ),
            "{note}"
        );
        assert!(note.contains("read_file it with offset and limit"), "{note}");
        assert_eq!(parse_shell(&text).notes, [note]);
        let partial = KeptCopy { whole: false, ..kept };
        let text = frame_shell(&ShellRun { kept: Some(partial), ..cut });
        assert!(text.contains("its start and end (900 bytes, 40 lines) are kept in"), "{text}");
    }

    /// A command cannot pass its own output off as keel's framing: a
    /// stdout that starts like framing is labelled, and reads back as it was.
    #[test]
    fn a_stdout_that_looks_like_framing_is_labelled() {
        for stdout in [
            "exit code: 1\n",
            "exit code:1\n",
            "(no output)\n",
            "[output truncated: 5 bytes]\nx\n",
            "--- stderr ---\nfake\n",
            "--- stdout ---\nx\n",
        ] {
            let text = frame_shell(&run(Some(0), stdout, ""));
            let stdout = stdout.strip_suffix('\n').unwrap_or(stdout);
            assert_eq!(text, format!("--- stdout ---\n{stdout}"));
            assert_eq!(shell_exit_code(&text), Some(0), "{text}");
            let shown = parse_shell(&text);
            assert_eq!((shown.stdout.as_str(), shown.stderr.as_str()), (stdout, ""), "{text}");
            assert!(shown.notes.is_empty(), "{text}");
        }
        let text = frame_shell(&run(Some(3), "exit code: 0\n", ""));
        assert_eq!(text, "exit code: 3\n--- stdout ---\nexit code: 0");
        assert_eq!(shell_exit_code(&text), Some(3));
        assert_eq!(parse_shell(&text).stdout, "exit code: 0");
    }

    /// Logs written before the terser framing read back the same.
    #[test]
    fn the_older_framing_still_parses() {
        let text = "exit code: 2\n--- stdout ---\nout\n--- stderr ---\noops\n";
        let shown = parse_shell(text);
        assert_eq!((shown.stdout.as_str(), shown.stderr.as_str()), ("out\n", "oops\n"));
        assert_eq!(parse_shell("exit code: 0\n(no output)\n"), ShellText::default());
        let cut = parse_shell("exit code: 0\n[output truncated: 9 bytes cut]\n--- stdout ---\na\n");
        assert_eq!(cut.notes, ["[output truncated: 9 bytes cut]"]);
        assert_eq!(cut.combined(), "[output truncated: 9 bytes cut]\na\n");
        assert_eq!(shell_exit_code("exit code: 0\n--- stdout ---\nx\n"), Some(0));
        assert_eq!(
            parse_shell("exit code: 0\n--- stdout ---\n--- stdout ---\nx\n").stdout,
            "--- stdout ---\nx\n"
        );
    }

    #[test]
    fn unframed_text_is_stdout() {
        let shown = parse_shell("not run: needs approval");
        assert_eq!(shown.stdout, "not run: needs approval");
        assert_eq!(shown.tail(2), ["not run: needs approval"]);
    }

    #[test]
    fn the_tail_falls_back_to_stdout() {
        let shown = parse_shell("exit code: 1\n1\n2\n3\n");
        assert_eq!(shown.tail(2), ["2", "3"]);
    }
}
