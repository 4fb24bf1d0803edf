//! What an approval shows: every argument of a call that influences what
//! runs, in full, with nothing a terminal could act on or reorder.
//!
//! An approval covers exactly the text the user could read: so nothing is
//! picked out or cut here (front ends that page it say what is still
//! unseen, and do not take an answer before it was shown, see
//! `tui/overlay.rs`). A shell call is its command (after `$ `) and then
//! every other argument; any other call (MCP tools, `agent`, `apply_patch`,
//! …) is each argument on its own line (in the order sent), a one-line string JSON-quoted, a
//! string of several lines as an indented block after `key: |`, anything
//! else as pretty JSON. Arguments that are not a JSON object are shown raw.
//!
//! Invariants: pure (L0); every character of the arguments' values is
//! represented (controls, bidi overrides and invisible format characters
//! as `\u{…}` escapes, see [`escape_visibly`]); the result holds no
//! control character but `\n`.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::Value;

use crate::protocol::ToolCall;
use crate::protocol::tool_facts::names;

/// The full text of what `call` would do, for an approval (the module doc
/// has the layout).
pub fn approval_text(call: &ToolCall) -> String {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(&call.arguments) else {
        return escape_visibly(&call.arguments).into_owned();
    };
    let mut text = String::new();
    let command =
        (call.name == names::SHELL).then(|| args.get("command").and_then(Value::as_str)).flatten();
    if let Some(command) = command {
        text.push_str("$ ");
        text.push_str(&escape_visibly(command).replace('\n', "\n  "));
    }
    for (key, value) in &args {
        if command.is_some() && key == "command" {
            continue;
        }
        if !text.is_empty() {
            text.push('\n');
        }
        let key = escape_visibly(key);
        match value {
            Value::String(s) if s.contains('\n') => {
                let _ = write!(text, "{key}: |");
                for line in s.split('\n') {
                    let _ = write!(text, "\n  {}", escape_visibly(line));
                }
            }
            Value::String(_) => {
                let _ = write!(text, "{key}: {}", escape_visibly(&value.to_string()));
            }
            _ => {
                let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
                let _ = write!(text, "{key}: {}", escape_visibly(&pretty).replace('\n', "\n  "));
            }
        }
    }
    text
}

/// `text` with every character a terminal would act on, or that changes
/// how the rest of a line reads without showing itself (bidi overrides
/// and isolates, zero-width characters, the BOM), written as a visible
/// `\u{…}` escape; tabs and carriage returns as `\t` and `\r`. Line feeds
/// stay. Unlike [`super::for_terminal`], which drops control sequences
/// from output, nothing is removed: what is approved is what is shown.
pub fn escape_visibly(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Controls (but `\n`) and the invisible format characters that reorder
/// or hide text.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n')
        || matches!(
            c,
            '\u{61c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            call_id: "c".into(),
            name: name.into(),
            arguments: args.to_string(),
            item_id: None,
            provider_data: None,
        }
    }

    #[test]
    fn a_shell_call_is_its_whole_command_then_its_other_arguments() {
        let command: String = (1..=20).map(|i| format!("echo {i}\n")).collect();
        let text = approval_text(&call(
            names::SHELL,
            json!({"command": format!("{command}rm -rf ~"), "workdir": "sub", "timeout_ms": 5}),
        ));
        assert!(text.starts_with("$ echo 1\n  echo 2\n"), "{text}");
        assert!(text.contains("\n  echo 20\n  rm -rf ~\n"), "{text}");
        assert!(text.ends_with("  rm -rf ~\nworkdir: \"sub\"\ntimeout_ms: 5"), "{text}");
    }

    /// Issue 34 High 1: an MCP call showed its `path` alone, not the `sql`
    /// that was sent.
    #[test]
    fn every_argument_of_an_mcp_call_is_shown() {
        let text = approval_text(&call(
            "db__query",
            json!({"path": "app.db", "sql": "DROP TABLE users", "opts": {"force": true}}),
        ));
        assert_eq!(
            text,
            "path: \"app.db\"\nsql: \"DROP TABLE users\"\nopts: {\n    \"force\": true\n  }"
        );
        let patch = approval_text(&call(names::APPLY_PATCH, json!({"patch": "*** a\n+x"})));
        assert_eq!(patch, "patch: |\n  *** a\n  +x");
        let prompt = approval_text(&call(names::AGENT, json!({"prompt": "do x", "agent": "w"})));
        assert!(prompt.contains("prompt: \"do x\""), "{prompt}");
        let raw = ToolCall { arguments: "not json\u{1b}[2J".into(), ..call("x", json!({})) };
        assert_eq!(approval_text(&raw), "not json\\u{1b}[2J");
    }

    #[test]
    fn controls_and_bidi_overrides_are_escaped_not_dropped() {
        let text = approval_text(&call(
            names::SHELL,
            json!({"command": "echo ok\u{1b}[2K\r\u{202e}fr- mr\u{200b}\tx\u{9b}"}),
        ));
        assert_eq!(text, "$ echo ok\\u{1b}[2K\\r\\u{202e}fr- mr\\u{200b}\\tx\\u{9b}");
        let mcp = approval_text(&call("s__t", json!({"q": "a\u{202e}b"})));
        assert_eq!(mcp, "q: \"a\\u{202e}b\"");
        assert!(matches!(escape_visibly("plain\ntext"), Cow::Borrowed(_)));
    }
}
